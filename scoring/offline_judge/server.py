"""An OpenAI-compatible HTTP server answering judge steps with ``heuristics``.

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /_stats``, and
test hooks that change how it answers everyone, so they exist only when the server is
started with ``enable_control=True`` (``--enable-control``; the tests and benchmarks):
``POST /_control`` (``{"script": [...], "reject_formats": [...], "latency_ms": n}``),
``POST /_reset``. ``/_control`` also sets the imperfect-LLM knobs of
``scoring.offline_judge.imperfect`` (``{"yes_bias": 0.3, "noise": 0.1, ...}``).

Script items are consumed in order, one per chat request: ``ok``, ``429`` or
``429:<seconds>`` (with Retry-After), ``500``/``502``/``503``, ``malformed`` (broken
JSON), ``prose`` (a sentence instead of JSON), ``sleep:<seconds>`` (answer late),
``400`` (a plain bad request), ``reply:<text>`` (answer exactly ``<text>``). Random failures (``error_rate``, ``malformed_rate``) only
apply when the script is empty.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from scoring.offline_judge import heuristics, imperfect
from scoring.offline_judge.imperfect import Imperfection

MODEL_NAME = "offline-judge"


class JudgeState:
    """Knobs, the failure script and counters, shared by the handler threads."""

    def __init__(
        self,
        *,
        latency_ms: float = 0.0,
        error_rate: float = 0.0,
        malformed_rate: float = 0.0,
        seed: int = 0,
        retry_after: float = 0.1,
        imperfection: Imperfection | None = None,
    ) -> None:
        self.lock = threading.Lock()
        self.imperfection = imperfection or Imperfection()
        # Identical requests at temperature > 0 without a seed, counted so that
        # repeating one can get another answer (imperfect.request_key).
        self.repeats: Counter[str] = Counter()
        self.latency_ms = latency_ms
        self.error_rate = error_rate
        self.malformed_rate = malformed_rate
        self.retry_after = retry_after
        self.seed = seed
        self.rng = random.Random(seed)
        self.script: deque[str] = deque()
        self.reject_formats: set[str] = set()
        self.stats: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        # Seconds of chat requests here (arrival to reply), summed: over an interval,
        # its growth divided by the interval is the mean number of requests here.
        self.busy_seconds = 0.0
        self.completions = 0
        self.replies = 0
        # How often each distinct request (its messages) was answered: a request
        # answered twice was paid twice (the fault tests check that none is).
        self.answered: Counter[str] = Counter()

    def reset(self) -> None:
        with self.lock:
            self.script.clear()
            self.reject_formats.clear()
            self.stats.clear()
            self.rng = random.Random(self.seed)
            self.max_in_flight = 0
            self.busy_seconds = 0.0
            self.completions = 0
            self.replies = 0
            self.answered.clear()
            self.repeats.clear()

    def control(self, data: dict[str, Any]) -> None:
        with self.lock:
            if "script" in data:
                self.script.extend(str(item) for item in data["script"])
            if "reject_formats" in data:
                self.reject_formats = {str(f) for f in data["reject_formats"]}
            for knob in ("latency_ms", "error_rate", "malformed_rate", "retry_after"):
                if knob in data:
                    setattr(self, knob, float(data[knob]))
            self.imperfection = self.imperfection.updated(data)

    def imperfect_key(self, body: dict[str, Any]) -> str:
        """The request's key for the imperfect knobs' rolls."""
        counter: int | None = None
        temperature = body.get("temperature")
        if (
            isinstance(temperature, int | float)
            and temperature > 0
            and body.get("seed") is None
        ):
            asked = json.dumps(body.get("messages"), sort_keys=True)
            with self.lock:
                counter = self.repeats[asked]
                self.repeats[asked] += 1
        return imperfect.request_key(body, counter)

    def next_action(self) -> str:
        with self.lock:
            if self.script:
                return self.script.popleft()
            roll = self.rng.random()
            if roll < self.error_rate:
                return "429" if self.rng.random() < 0.5 else "500"
            if roll < self.error_rate + self.malformed_rate:
                return "malformed"
            return "ok"

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            data: dict[str, Any] = {
                "imperfection": self.imperfection.to_dict(),
                "requests": self.stats["requests"],
                "chat_completions": self.stats["chat"],
                "completed": self.completions,
                "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight,
                "busy_seconds": round(self.busy_seconds, 6),
                "script_left": len(self.script),
                "answered_twice": sum(n > 1 for n in self.answered.values()),
            }
            for prefix in ("status", "step", "format", "action"):
                data[f"by_{prefix}"] = {
                    k.split(":", 1)[1]: v
                    for k, v in self.stats.items()
                    if k.startswith(prefix + ":")
                }
            return data


def _tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _error_body(
    status: int,
    message: str,
    *,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any], dict[str, str] | None]:
    """(status, body, headers) of an error in OpenAI's shape."""
    kind = {
        400: "invalid_request_error",
        404: "not_found_error",
        429: "rate_limit_error",
    }.get(status, "server_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return status, body, headers


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: OfflineJudgeServer
    _is_chat = False  # counters by status cover chat completions only

    def parse_request(self) -> bool:
        # A request's latency runs from its arrival (its request line has just been
        # read), so reading the headers and body counts towards it.
        self.arrived = time.monotonic()
        return super().parse_request()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)

    # -- plumbing ----------------------------------------------------------------------

    def _leave_in_flight(self) -> float | None:
        """Seconds this request was in flight, the first time it leaves; else None."""
        if not getattr(self, "_in_flight", False):
            return None
        self._in_flight = False
        # From the request's arrival, as its latency runs (parse_request).
        elapsed = time.monotonic() - self.arrived
        with self.server.state.lock:
            self.server.state.in_flight -= 1
            self.server.state.busy_seconds += elapsed
        return elapsed

    def _send_json(
        self, status: int, data: Any, headers: dict[str, str] | None = None
    ) -> None:
        self._send_prepared(self._prepare_json(status, data, headers), status)

    def _prepare_json(
        self, status: int, data: Any, headers: dict[str, str] | None = None
    ) -> bytes:
        """Buffer the status line and headers; the body to send with them."""
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        return body

    def _send_prepared(self, body: bytes, status: int) -> None:
        # Leave the in-flight count before the reply goes out: once the client has it, it
        # may send its next request, which must not find this one still counted.
        elapsed = self._leave_in_flight()
        if elapsed is not None:
            # Our own time, as OpenAI's API reports its own: a client whose event loop
            # is busy reads the reply late, and must not count that as the judge's.
            self.send_header("openai-processing-ms", f"{elapsed * 1000:.3f}")
        self.end_headers()
        self.wfile.write(body)
        if self._is_chat:
            with self.server.state.lock:
                self.server.state.stats[f"status:{status}"] += 1

    def _error(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._send_json(*_error_body(status, message, param=param, headers=headers))

    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw.decode("utf-8")) if raw else {}

    # -- routes ------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._is_chat = False
        state = self.server.state
        with state.lock:
            state.stats["requests"] += 1
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": MODEL_NAME,
                            "object": "model",
                            "created": 0,
                            "owned_by": "evalsite",
                        }
                    ],
                },
            )
        elif path == "/_stats":
            self._send_json(200, state.snapshot())
        elif path in ("", "/health"):
            self._send_json(200, {"status": "ok", "model": MODEL_NAME})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        self._is_chat = False
        state = self.server.state
        with state.lock:
            state.stats["requests"] += 1
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = self._read_json()
        except (ValueError, UnicodeDecodeError):
            self._error(400, "the request body is not valid JSON")
            return
        if path in ("/_control", "/_reset") and not self.server.enable_control:
            self._error(
                404,
                f"no route {self.path} (test hooks are off: start with --enable-control)",
            )
        elif path == "/_control":
            try:
                state.control(body if isinstance(body, dict) else {})
            except (TypeError, ValueError) as exc:
                self._error(400, f"bad control value: {exc}")
                return
            self._send_json(200, {"ok": True})
        elif path == "/_reset":
            state.reset()
            self._send_json(200, {"ok": True})
        elif path in ("/v1/chat/completions", "/chat/completions"):
            self._is_chat = True
            with state.lock:
                state.stats["chat"] += 1
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            self._in_flight = True
            try:
                self._chat(body if isinstance(body, dict) else {})
            finally:
                self._leave_in_flight()
        else:
            self._error(404, f"no route {self.path}")

    def _chat(self, body: dict[str, Any]) -> None:
        state = self.server.state
        fmt = body.get("response_format") or {}
        fmt_type = fmt.get("type", "text") if isinstance(fmt, dict) else "text"
        step = heuristics.find_step(body)
        with state.lock:
            state.stats[f"format:{fmt_type}"] += 1
            state.stats[f"step:{step}"] += 1
        if fmt_type in state.reject_formats:
            self._error(
                400,
                f"response_format of type '{fmt_type}' is not supported with this model",
                param="response_format",
            )
            return
        action = state.next_action()
        with state.lock:
            state.stats[f"action:{action.split(':')[0]}"] += 1
        delay = state.latency_ms / 1000
        if action.startswith("sleep:"):
            delay += float(action.split(":", 1)[1])
        status, data, headers = self._chat_reply(step, fmt_type, action, body)
        if status == 200:
            with state.lock:
                state.replies += 1
                data["id"] = f"chatcmpl-offline-{state.replies}"
        # Everything but the write happens before the wait, so the reply leaves on time.
        prepared = self._prepare_json(status, data, headers)
        # The latency is the whole time a request spends here, as a hosted model's would
        # be: the heuristics run inside it, not on top of it.
        remaining = self.arrived + delay - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        if status == 200:
            asked = json.dumps(body.get("messages"), sort_keys=True)
            with state.lock:
                state.completions += 1
                state.answered[asked] += 1
        self._send_prepared(prepared, status)

    def _chat_reply(
        self, step: str | None, fmt_type: str, action: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str] | None]:
        """(status, body, headers) of the answer to one chat request."""
        if action.startswith("429"):
            wait = (
                action.split(":", 1)[1]
                if ":" in action
                else f"{self.server.state.retry_after:g}"
            )
            return _error_body(
                429, "Rate limit reached (offline judge)", headers={"Retry-After": wait}
            )
        if action in ("500", "502", "503"):
            return _error_body(int(action), "The offline judge had an internal error")
        if action == "400":
            return _error_body(400, "Bad request (scripted)")
        if step is None:
            return _error_body(
                400,
                "the offline judge cannot tell which judge step this is (no json_schema name, no 'Task id:' line)",
            )
        try:
            reply = heuristics.answer(step, body)
        except KeyError:
            return _error_body(
                400, f"the offline judge does not know the step {step!r}"
            )
        state = self.server.state
        knobs = state.imperfection
        if knobs.active and imperfect.deciding_step(step):
            reply = imperfect.apply(
                knobs, state.seed, step, body, reply, state.imperfect_key(body)
            )
        if action.startswith("reply:"):
            content = action.split(":", 1)[1]
        elif action == "malformed":
            content = json.dumps(reply, ensure_ascii=False)[
                : max(1, len(json.dumps(reply)) // 2)
            ]
        elif action == "prose":
            content = "I think the answer looks fine overall."
        elif fmt_type == "text":
            content = heuristics.text_reply(step, reply)
        else:
            content = json.dumps(reply, ensure_ascii=False)
        prompt_chars = sum(
            len(heuristics._content_text(m.get("content")))
            for m in body.get("messages") or []
        )
        prompt_tokens = max(1, prompt_chars // 4)
        completion_tokens = _tokens(content)
        data = {
            "id": "",  # numbered by the caller
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or MODEL_NAME),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return 200, data, None


class OfflineJudgeServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer (daemon threads) serving in a background thread."""

    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(
        self,
        host: str,
        port: int,
        state: JudgeState,
        *,
        verbose: bool = False,
        enable_control: bool = False,
    ) -> None:
        super().__init__((host, port), Handler)
        self.state = state
        self.verbose = verbose
        self.enable_control = enable_control
        self._thread: threading.Thread | None = None
        # The connections open now: stop() closes them too, as a stopped process
        # would (kept-alive connections otherwise went on being answered).
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._stopping = False

    def get_request(self) -> tuple[socket.socket, Any]:
        request, address = super().get_request()
        with self._open_lock:
            self._open.add(request)
        return request, address

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not self._stopping:
            super().handle_error(request, client_address)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        if isinstance(host, bytes):
            host = host.decode()
        return f"http://{host}:{port}/v1"

    def start(self) -> OfflineJudgeServer:
        self._thread = threading.Thread(
            target=self.serve_forever, name="offline-judge", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        self.shutdown()
        self.server_close()
        with self._open_lock:
            open_now, self._open = list(self._open), set()
        for request in open_now:
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OfflineJudgeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    latency_ms: float = 0,
    error_rate: float = 0.0,
    malformed_rate: float = 0.0,
    seed: int = 0,
    retry_after: float = 0.1,
    verbose: bool = False,
    enable_control: bool = False,
    imperfection: Imperfection | None = None,
) -> OfflineJudgeServer:
    """Start the offline judge in a background thread; ``.base_url`` and ``.stop()``.

    ``enable_control`` turns on the ``/_control`` and ``/_reset`` test hooks;
    ``imperfection`` sets the imperfect-LLM knobs (``imperfect.Imperfection``)."""
    state = JudgeState(
        latency_ms=latency_ms,
        error_rate=error_rate,
        malformed_rate=malformed_rate,
        seed=seed,
        retry_after=retry_after,
        imperfection=imperfection,
    )
    return OfflineJudgeServer(
        host, port, state, verbose=verbose, enable_control=enable_control
    ).start()
