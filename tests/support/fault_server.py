#!/usr/bin/env python3
"""Fault-injecting HTTP server for envfix tests (stdlib only, 127.0.0.1 only, bounded lifetime).

Serves files under --root. Prints "PORT <n>" on stdout once listening. Exits after --lifetime seconds.

Plain paths  /<path>               the file, with Range support (206 + Content-Range), ETag,
                                   Last-Modified, Accept-Ranges: bytes.
Fault paths  /fault/<spec>/<path>  the same file with faults; <spec> is comma-separated:
  drop=N         send the headers (full Content-Length) and N body bytes, then close
  stall=S        send half the body, then sleep S seconds before the rest
  status=CODE    answer CODE (500, 503, 429, ...) instead of the file
  retry-after=S  add "Retry-After: S" to status answers
  cl=+D | cl=-D  Content-Length wrong by D bytes (the real body is sent; the connection closes)
  wrong          flip bytes in the body (a corrupted mirror)
  trickle=BPS    send at about BPS bytes per second in small chunks
  norange        ignore Range (always 200 with the whole file)
  badrange       answer a Range request with 206 and the bytes from offset 0
  together=K     hold each request until K requests of this spec are in flight at once (5 s at most,
                 then 504): a client that sends a batch one request at a time fails
  times=K        apply the transient faults (drop, stall, status, cl) to the first K requests of this
                 spec+path only (default 1); times=0 means always.
Every request is appended to --log as "METHOD PATH STATUS RANGE".
"""
import argparse
import email.utils
import hashlib
import http.server
import os
import socketserver
import sys
import threading
import time
import urllib.parse

COUNTS = {}
LOCK = threading.Lock()
ARRIVED = {}  # together=K: requests of a spec seen so far
TOGETHER = threading.Condition()


def parse_spec(spec):
    out = {}
    for part in spec.split(","):
        if not part:
            continue
        k, _, v = part.partition("=")
        out[k] = v
    return out


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "envfix-fault/1"

    def log_message(self, fmt, *args):  # quiet stderr
        pass

    def log_line(self, status):
        with LOCK, open(self.server.log_path, "a") as f:
            f.write(f"{self.command} {self.path} {status} {self.headers.get('Range', '-')}\n")

    def do_HEAD(self):
        self.handle_any(head=True)

    def do_GET(self):
        self.handle_any(head=False)

    def handle_any(self, head):
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        faults = {}
        if path.startswith("/fault/"):
            rest = path[len("/fault/"):]
            spec, _, path = rest.partition("/")
            path = "/" + path
            faults = parse_spec(spec)
            key = (spec, path)
            with LOCK:
                COUNTS[key] = COUNTS.get(key, 0) + 1
                n = COUNTS[key]
            times = int(faults.get("times", "1"))
            transient_active = times == 0 or n <= times
        else:
            transient_active = False
        if "together" in faults:
            k = int(faults["together"])
            with TOGETHER:
                ARRIVED[spec] = ARRIVED.get(spec, 0) + 1
                TOGETHER.notify_all()
                # Generous: the client sends them at once; a loaded machine may start its threads late.
                if not TOGETHER.wait_for(lambda: ARRIVED[spec] >= k, timeout=60):
                    return self.simple(504, b"the requests of this batch did not arrive together\n")
        root = self.server.root
        full = os.path.realpath(os.path.join(root, path.lstrip("/")))
        if not full.startswith(root + os.sep) and full != root:
            return self.simple(403, b"forbidden\n")
        if os.path.isdir(full):
            full = os.path.join(full, "index.html")
        if transient_active and "status" in faults:
            extra = {}
            if "retry-after" in faults:
                extra["Retry-After"] = faults["retry-after"]
            return self.simple(int(faults["status"]), b"injected failure\n", extra)
        if not os.path.isfile(full):
            return self.simple(404, b"not found\n")
        with open(full, "rb") as f:
            data = f.read()
        if "wrong" in faults and data:
            data = bytes(b ^ 0x5A for b in data[:64]) + data[64:]
        st = os.stat(full)
        etag = '"%s"' % hashlib.sha256(data).hexdigest()[:16]
        start, end, status = 0, len(data) - 1, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and "norange" not in faults and data:
            a, _, b = rng[6:].partition("-")
            try:
                start = int(a) if a else max(len(data) - int(b), 0)
                end = int(b) if (a and b) else len(data) - 1
            except ValueError:
                return self.simple(416, b"bad range\n")
            end = min(end, len(data) - 1)
            if start > end:
                return self.simple(416, b"unsatisfiable\n", {"Content-Range": f"bytes */{len(data)}"})
            status = 206
            if "badrange" in faults:
                end = end - start
                start = 0
        body = data[start:end + 1]
        length = len(body)
        close = False
        if transient_active and "cl" in faults:
            length = max(len(body) + int(faults["cl"]), 0)
            close = True
        self.send_response(status)
        ctype = "text/html" if full.endswith(".html") else (
            "application/vnd.pypi.simple.v1+json" if full.endswith(".json") else "application/octet-stream")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "none" if "norange" in faults else "bytes")
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.log_line(status)
        if head:
            return
        try:
            if transient_active and "drop" in faults:
                self.wfile.write(body[:int(faults["drop"])])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if transient_active and "stall" in faults:
                half = len(body) // 2
                self.wfile.write(body[:half])
                self.wfile.flush()
                time.sleep(float(faults["stall"]))
                self.wfile.write(body[half:])
                return
            if "trickle" in faults:
                bps = max(int(faults["trickle"]), 1)
                chunk = max(bps // 10, 1)
                for i in range(0, len(body), chunk):
                    self.wfile.write(body[i:i + chunk])
                    self.wfile.flush()
                    time.sleep(chunk / bps)
                return
            if close and length < len(body):
                self.wfile.write(body[:length])
            else:
                self.wfile.write(body)
            if close:
                self.wfile.flush()
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def simple(self, code, body, extra=None):
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.log_line(code)
        if self.command != "HEAD":
            self.wfile.write(body)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the default 5 drops SYNs of a client's parallel connections


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=300)
    ap.add_argument("--log", default=os.devnull)
    args = ap.parse_args()
    srv = Server(("127.0.0.1", args.port), Handler)
    srv.root = os.path.realpath(args.root)
    srv.log_path = args.log
    threading.Timer(args.lifetime, lambda: os._exit(0)).start()
    print(f"PORT {srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
