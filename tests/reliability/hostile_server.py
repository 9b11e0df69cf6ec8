#!/usr/bin/env python3
"""A hostile HTTP server for envfix's reliability tests (stdlib only, 127.0.0.1, bounded lifetime).

Prints "PORT <n>" once listening; appends "METHOD PATH RANGE" per request to --log.
  /endless/<x>          200, Transfer-Encoding: chunked, never ends (64 KiB chunks until the client
                        goes away or --lifetime); text/html when <x> ends in '/', else a wheel type
  /mutate/<file>        HEAD and Range requests get <root>/<file>; a plain GET gets <root>/<file>.other
                        (same length): the bytes change between metadata reads and the download
  /redirect-file/<x>    302 to file:///etc/passwd
  /redirect-scheme/<x>  302 to javascript:alert(1)
  /private-fresh/<path> the file, only with "Authorization: Basic" of envfix:s3cret-pw (else 401),
                        with Cache-Control: max-age=600 (a page a cache would call fresh)
  /slowloris/<x>        200 with a Content-Length of 1 GB, then one body byte every 0.3 s, forever
  /slow-headers/<x>     a status line, then one header line every 0.3 s, forever
  /redirect-chain/<n>/<p>  302 to /redirect-chain/<n-1>/<p>; /redirect-chain/0/<p> is the file <p>
  /redirect-loop/<x>    302 to itself
  /huge-header/<x>      200 with one 1 MiB header line
  /many-headers/<x>     200 with 100,000 header lines
  /gzip-json/<n>/<x>    a PEP 691 page of n tiny `files` entries, sent gzip'd (Content-Encoding: gzip)
  /<path>               the file under --root
"""
import argparse
import base64
import gzip
import http.server
import os
import socketserver
import sys
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def log_line(self):
        with self.server.lock, open(self.server.log_path, "a") as f:
            f.write(f"{self.command} {self.path} {self.headers.get('Range', '-')}\n")

    def do_HEAD(self):
        self.handle_any(True)

    def do_GET(self):
        self.handle_any(False)

    def send_simple(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def trickle(self, body):
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            if body:
                self.wfile.write(b"Content-Type: application/octet-stream\r\nContent-Length: 1000000000\r\n\r\n")
            self.wfile.flush()
            i = 0
            while True:
                time.sleep(0.3)
                self.wfile.write(b"x" if body else b"X-Slow-%d: v\r\n" % i)
                self.wfile.flush()
                i += 1
        except OSError:
            self.close_connection = True

    def send_file(self, path, head, rng, extra=()):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return self.send_simple(404, b"not found\n")
        status, start, end = 200, 0, len(data) - 1
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            start = int(a) if a else max(len(data) - int(b), 0)
            end = min(int(b), len(data) - 1) if (a and b) else len(data) - 1
            status = 206
        body = data[start:end + 1]
        self.send_response(status)
        self.send_header("Content-Type", "text/html" if path.endswith(".html") else "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def handle_any(self, head):
        self.log_line()
        path = self.path.split("?", 1)[0]
        root = self.server.root
        rng = self.headers.get("Range")
        if path.startswith("/endless/"):
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if path.endswith("/") else "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if head:
                return
            chunk = (b"<a href='x'>junk</a>\n" * 3200)[:65536]
            try:
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                self.close_connection = True
            return
        if path.startswith("/mutate/"):
            real = os.path.join(root, path[len("/mutate/"):])
            if head or rng:
                return self.send_file(real, head, rng)
            return self.send_file(real + ".other", head, None)
        if path.startswith("/private-fresh/"):
            want = "Basic " + base64.b64encode(b"envfix:s3cret-pw").decode()
            if self.headers.get("Authorization") != want:
                return self.send_simple(401, b"credentials needed\n", [("WWW-Authenticate", 'Basic realm="envfix"')])
            full = os.path.join(root, path[len("/private-fresh/"):])
            if os.path.isdir(full):
                full = os.path.join(full, "index.html")
            return self.send_file(full, head, rng, [("Cache-Control", "max-age=600")])
        if path.startswith("/slowloris/") or path.startswith("/slow-headers/"):
            return self.trickle(path.startswith("/slowloris/"))
        if path.startswith("/redirect-chain/"):
            n, _, rest = path[len("/redirect-chain/"):].partition("/")
            if int(n) > 0:
                return self.send_simple(302, b"", [("Location", f"/redirect-chain/{int(n) - 1}/{rest}")])
            full = os.path.join(root, rest)
            return self.send_file(os.path.join(full, "index.html") if os.path.isdir(full) else full, head, rng)
        if path.startswith("/redirect-loop/"):
            return self.send_simple(302, b"", [("Location", path)])
        if path.startswith("/huge-header/") or path.startswith("/many-headers/"):
            if path.startswith("/huge-header/"):
                extra = [("X-Huge", "a" * (1 << 20))]
            else:
                extra = [(f"X-Many-{i}", "v") for i in range(100000)]
            try:
                return self.send_simple(200, b"<html></html>\n", [("Content-Type", "text/html")] + extra)
            except OSError:
                self.close_connection = True
                return
        if path.startswith("/gzip-json/"):
            n = int(path[len("/gzip-json/"):].split("/")[0])
            body = gzip.compress(b'{"meta":{"api-version":"1.1"},"files":[' + b'{"url":"a"},' * n + b'{"url":"a"}]}', 9)
            return self.send_simple(200, body, [("Content-Type", "application/vnd.pypi.simple.v1+json"),
                                                ("Content-Encoding", "gzip")])
        if path.startswith("/redirect-file/"):
            return self.send_simple(302, b"", [("Location", "file:///etc/passwd")])
        if path.startswith("/redirect-scheme/"):
            return self.send_simple(302, b"", [("Location", "javascript:alert(1)")])
        full = os.path.realpath(os.path.join(root, path.lstrip("/")))
        if not full.startswith(root + os.sep):
            return self.send_simple(403, b"forbidden\n")
        if os.path.isdir(full):
            full = os.path.join(full, "index.html")
        return self.send_file(full, head, rng)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--lifetime", type=float, default=120)
    ap.add_argument("--log", default=os.devnull)
    args = ap.parse_args()
    srv = Server(("127.0.0.1", 0), Handler)
    srv.root = os.path.realpath(args.root)
    srv.log_path = args.log
    srv.lock = threading.Lock()
    threading.Timer(args.lifetime, lambda: os._exit(0)).start()
    print(f"PORT {srv.server_address[1]}", flush=True)
    srv.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    sys.exit(main())
