"""A profiling backend stand-in for the push benchmark: answers every POST with 200 (as
Pyroscope's /ingest does) and writes one tab-separated line per request to the log: time, path,
body bytes, and the `name` query parameter.

usage: python3 sink.py PORT LOG   (prints "listening PORT" once ready)
"""

import http.server
import sys
import time
import urllib.parse


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        url = urllib.parse.urlsplit(self.path)
        name = urllib.parse.parse_qs(url.query).get("name", [""])[0]
        with open(sys.argv[2], "a") as log:
            log.write(f"{time.time():.3f}\t{url.path}\t{n}\t{name}\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink)
print("listening", server.server_address[1], flush=True)
server.serve_forever()
