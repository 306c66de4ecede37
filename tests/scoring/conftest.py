"""Fixtures for the judge tests: the offline judge on a loopback port, and a real
``openai`` client pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from scoring.client import forget_formats
from scoring.judge import make_client
from scoring.offline_judge import OfflineJudgeServer, start_server
from scoring.offline_judge.imperfect import Imperfection

# The imperfect-LLM knobs all off (scoring.offline_judge.imperfect).
HONEST = Imperfection().to_dict()


class JudgeControl:
    """Talks to the offline judge's test hooks."""

    def __init__(self, server: OfflineJudgeServer) -> None:
        self.server = server
        self.root = server.base_url.removesuffix("/v1")

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def script(self, *actions: str) -> None:
        httpx.post(
            f"{self.root}/_control", json={"script": list(actions)}
        ).raise_for_status()

    def control(self, **data: Any) -> None:
        httpx.post(f"{self.root}/_control", json=data).raise_for_status()

    def reset(self) -> None:
        httpx.post(f"{self.root}/_reset", json={}).raise_for_status()

    def stats(self) -> dict[str, Any]:
        response = httpx.get(f"{self.root}/_stats")
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def chat_requests(self) -> int:
        return int(self.stats()["chat_completions"])


@pytest.fixture(scope="session")
def offline_server() -> Iterator[OfflineJudgeServer]:
    server = start_server("127.0.0.1", 0, enable_control=True)
    yield server
    server.stop()


@pytest.fixture
def judge(offline_server: OfflineJudgeServer) -> Iterator[JudgeControl]:
    """The session's offline judge, with its script, knobs and counters reset."""
    control = JudgeControl(offline_server)
    control.reset()
    control.control(
        latency_ms=0, error_rate=0, malformed_rate=0, retry_after=0.1, **HONEST
    )
    forget_formats()
    yield control
    control.reset()
    control.control(**HONEST)
    forget_formats()


@pytest.fixture
def client(judge: JudgeControl) -> openai.OpenAI:
    return make_client(judge.base_url, "test-key", timeout=10.0)


@pytest.fixture
def own_judge() -> Iterator[JudgeControl]:
    """A private offline judge (its own base URL), for tests that change what the
    endpoint accepts."""
    server = start_server("127.0.0.1", 0, enable_control=True)
    forget_formats()
    yield JudgeControl(server)
    server.stop()
    forget_formats()
