"""A real HTTP listener on 127.0.0.1 for judge connections to point at: it records every
request (path and lower-cased headers) and answers what a test tells it to."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMPLETION = {
    "id": "x",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": '{"verdict": "yes"}'},
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


class Listener:
    """An HTTP server that records each request and answers what it is told to."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.reply: tuple[int, dict[str, str], bytes] = (
            200,
            {"Content-Type": "application/json"},
            json.dumps(COMPLETION).encode(),
        )
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                listener.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                    }
                )
                status, headers, body = listener.reply
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seen(self, secret: str) -> bool:
        return any(secret in json.dumps(r) for r in self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
