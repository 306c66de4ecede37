"""The offline judge: an OpenAI-compatible server answering every judge step with a
deterministic heuristic, for the demo, the tests and the benchmarks (no key, no network).

Its results are heuristics, not an LLM's: the UI labels them "offline heuristic judge".
"""

from __future__ import annotations

from scoring.offline_judge.server import MODEL_NAME, OfflineJudgeServer, start_server

__all__ = ["MODEL_NAME", "OfflineJudgeServer", "start_server"]
