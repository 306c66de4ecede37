"""A scripted OpenAI-compatible judge on loopback for the differential suite.

Both sides (the released Mastra scorers and promptfoo's factuality through Node, and
``scoring.judge_case`` in this process) call it; every request names its case and side in
headers (``x-conformance-case``, ``x-conformance-side``), and the judge answers each step
with that case's scripted verdicts, shaped as that side's step expects. So both sides
score the same analysis, whatever their prompts say.

Steps are told apart by the response schema: our steps name it ``<kind>__<step>``;
Mastra's carry the step's properties (``claims``, ``verdicts``, ``results``,
``evaluations``...); a request without a schema is Mastra's reason step or promptfoo's
factuality prompt. Every prompt is recorded per (case, side) for the rows that are about
what the judge is shown rather than about the number.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from conformance.kinds_agent import AGENT_KINDS
from conformance.kinds_agent import answer as agent_answer
from conformance.kinds_rag import RAG_KINDS
from conformance.kinds_rag import answer as rag_answer

__all__ = ["ScriptedJudge", "scripted_judge"]


def _reason(index: int) -> str:
    return f"scripted reason {index}"


class ScriptedJudge:
    """The scripts (case id -> script) and the prompts received (case id -> side -> texts)."""

    def __init__(self, scripts: dict[str, dict[str, Any]]) -> None:
        self.scripts = scripts
        self.prompts: dict[str, dict[str, list[str]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.calls: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self.unanswered: list[str] = []

    # ------------------------------------------------------------------ answers

    def answer(self, side: str, case_id: str, body: dict[str, Any]) -> str:
        reply = self._answer(side, case_id, body)
        # Some scripts wrap every JSON reply in text (``"wrap"``: "<json>" marks where),
        # on both sides: a judge that writes a sentence before its object or its
        # reasoning after it.
        wrap = self.scripts[case_id].get("wrap")
        if wrap and reply.startswith("{"):
            return str(wrap).replace("<json>", reply)
        return reply

    def _answer(self, side: str, case_id: str, body: dict[str, Any]) -> str:
        script = self.scripts[case_id]
        text = "\n".join(_content(m.get("content")) for m in body.get("messages", []))
        with self._lock:
            self.prompts[case_id][side].append(text)
            self.calls[side] += 1
        response_format = body.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema") or _schema_in(
            text
        )
        name = (response_format.get("json_schema") or {}).get("name", "")
        if script["kind"] in AGENT_KINDS:  # conformance/kinds_agent.py
            step = name.partition("__")[2] if "__" in name else _task_step(text)
            properties = set((schema.get("properties") or {}).keys())
            return agent_answer(side, script, step, properties)
        if script["kind"] in RAG_KINDS:  # conformance/kinds_rag.py
            step = name.partition("__")[2] if "__" in name else _task_step(text)
            properties = set((schema.get("properties") or {}).keys())
            return rag_answer(side, script, step, properties)
        if side == "promptfoo" or script["kind"] == "factuality":
            return str(script["reply"])
        if side == "ours":
            step = name.partition("__")[2] if "__" in name else _task_step(text)
            return json.dumps(self._ours(script, step))
        return self._mastra(script, set((schema.get("properties") or {}).keys()))

    def _ours(self, script: dict[str, Any], step: str) -> dict[str, Any]:
        kind = script["kind"]
        if step == "reason":
            return {"reason": "scripted explanation"}
        if step in ("claims", "statements", "opinions"):
            return {step: list(script["items"])}
        if step == "verdicts" and kind in (
            "faithfulness",
            "hallucination",
            "answer_relevancy",
            "bias",
        ):
            key = {"answer_relevancy": "statement", "bias": "opinion"}.get(
                kind, "claim"
            )
            items = script["items"]
            return {
                "verdicts": [
                    {
                        key: items[i] if i < len(items) else "",
                        "verdict": verdict,
                        "reason": _reason(i),
                    }
                    for i, verdict in enumerate(script["verdicts"])
                ]
            }
        if step == "verdicts" and kind == "toxicity":
            return {
                "verdicts": [
                    {"verdict": verdict, "reason": _reason(i)}
                    for i, verdict in enumerate(script["verdicts"])
                ]
            }
        if step == "verdicts" and kind == "context_precision":
            return {
                "verdicts": [
                    {"context_index": index, "verdict": verdict, "reason": _reason(i)}
                    for i, (index, verdict) in enumerate(script["verdicts"])
                ]
            }
        if step == "evaluations":
            return {
                "evaluations": [
                    {
                        "context_index": e["context_index"],
                        "relevance": e["relevance"],
                        "used": e["used"],
                        "reason": _reason(i),
                    }
                    for i, e in enumerate(script["evaluations"])
                ],
                "missing_context": list(script["missing"]),
            }
        raise KeyError(f"{kind}: no scripted answer for our step {step!r}")

    def _mastra(self, script: dict[str, Any], properties: set[str]) -> str:
        kind = script["kind"]
        if not properties:
            return "Scripted explanation of the score."
        if properties & {"claims", "statements", "opinions"}:
            (key,) = properties & {"claims", "statements", "opinions"}
            return json.dumps({key: list(script["items"])})
        if "results" in properties:  # answer relevancy, bias
            return json.dumps(
                {
                    "results": [
                        {"result": verdict, "reason": _reason(i)}
                        for i, verdict in enumerate(script["verdicts"])
                    ]
                }
            )
        if "evaluations" in properties:
            return json.dumps(
                {
                    "evaluations": [
                        {
                            "context_index": e["context_index"],
                            "contextPiece": f"chunk {e['context_index']}",
                            "relevanceLevel": e["relevance"],
                            "wasUsed": e["used"],
                            "reasoning": _reason(i),
                        }
                        for i, e in enumerate(script["evaluations"])
                    ],
                    "missingContext": list(script["missing"]),
                    "overallAssessment": "scripted",
                }
            )
        if "verdicts" in properties:
            if kind == "context_precision":
                verdicts = [
                    {"context_index": index, "verdict": verdict, "reason": _reason(i)}
                    for i, (index, verdict) in enumerate(script["verdicts"])
                ]
            else:
                verdicts = [
                    {
                        "statement": f"claim {i}",
                        "verdict": verdict,
                        "reason": _reason(i),
                    }
                    if kind == "hallucination"
                    else {"verdict": verdict, "reason": _reason(i)}
                    for i, verdict in enumerate(script["verdicts"])
                ]
            return json.dumps({"verdicts": verdicts})
        raise KeyError(f"{kind}: no scripted answer for Mastra's step {properties}")


def _content(content: Any) -> str:
    if isinstance(content, list):  # parts
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        )
    return str(content or "")


_SCHEMA_MARK = "matching this schema:\n\n"


def _schema_in(text: str) -> dict[str, Any]:
    """The schema a model without structured output is shown in the prompt (Mastra)."""
    at = text.rfind(_SCHEMA_MARK)
    if at < 0:
        return {}
    line = text[at + len(_SCHEMA_MARK) :].split("\n", 1)[0]
    try:
        schema = json.loads(line)
    except ValueError:
        return {}
    return schema if isinstance(schema, dict) else {}


def _task_step(text: str) -> str:
    marker = "Task id: "
    at = text.find(marker)
    if at < 0:
        return "category"
    line = text[at + len(marker) :].split("\n", 1)[0].strip()
    return line.partition("__")[2]


def _handler(judge: ScriptedJudge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            side = self.headers.get("x-conformance-side", "")
            case_id = self.headers.get("x-conformance-case", "")
            try:
                content = judge.answer(side, case_id, body)
            except Exception as exc:  # a bug in the suite: answer 500, note it
                judge.unanswered.append(f"{side} {case_id}: {exc!r}")
                self._send(500, "application/json", json.dumps({"error": str(exc)}))
                return
            usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            if body.get("stream"):
                chunks: list[dict[str, Any]] = [
                    {"delta": {"role": "assistant", "content": content}},
                    {"delta": {}, "finish_reason": "stop"},
                ]
                events = "".join(
                    "data: "
                    + json.dumps(
                        {
                            "id": "scripted",
                            "object": "chat.completion.chunk",
                            "created": 0,
                            "model": body.get("model", "judge"),
                            "choices": [{"index": 0, "finish_reason": None, **chunk}],
                            **({"usage": usage} if "finish_reason" in chunk else {}),
                        }
                    )
                    + "\n\n"
                    for chunk in chunks
                )
                self._send(200, "text/event-stream", events + "data: [DONE]\n\n")
                return
            reply = {
                "id": "scripted",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "judge"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
            self._send(200, "application/json", json.dumps(reply))

        def _send(self, status: int, content_type: str, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def scripted_judge(judge: ScriptedJudge) -> Iterator[str]:
    """Serve ``judge`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(judge))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
