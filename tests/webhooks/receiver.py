"""A real HTTP receiver on 127.0.0.1 for webhooks to point at: it records each request
(raw body and lower-cased headers) and answers with the statuses a test scripts."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, statuses: list[int] | None = None) -> None:
        self.requests: list[dict] = []
        # One status per request in turn; the last one repeats.
        self.statuses = list(statuses or [200])
        self.location = ""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                receiver.requests.append(
                    {
                        "path": self.path,
                        "body": body,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                    }
                )
                status = (
                    receiver.statuses.pop(0)
                    if len(receiver.statuses) > 1
                    else receiver.statuses[0]
                )
                self.send_response(status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                reply = b"receiver says no" if status >= 400 else b"ok"
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
