"""Fallback HTTPS index server for machines without nginx (bench/run.py --server python).

  serve.py ROOT CERT KEY   prints "PORT n" then serves ROOT over HTTPS (HTTP/1.1, keep-alive, threads).
Directories under */simple/ answer index.json to `Accept: application/vnd.pypi.simple.v1+json`, else
index.html (like the nginx conf). Slower than nginx (Python TLS, no sendfile): the report says which ran.
"""
import http.server
import os
import socketserver
import ssl
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path) and "/simple/" in self.path:
            accept = self.headers.get("Accept", "")
            name = "index.json" if "application/vnd.pypi.simple.v1+json" in accept else "index.html"
            ctype = "application/vnd.pypi.simple.v1+json" if name == "index.json" else "text/html"
            f = open(os.path.join(path, name), "rb")
            size = os.fstat(f.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            return f
        return super().send_head()

    def copyfile(self, source, outputfile):
        while chunk := source.read(1 << 20):
            outputfile.write(chunk)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 128


def main():
    root, cert, key = sys.argv[1:4]
    os.chdir(root)
    srv = Server(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print(f"PORT {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
