"""ajudge_case runs the same plan as judge_case on asyncio: the same analysis, score,
steps, retries and errors, with many calls of one event loop in flight at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from scoring.errors import JudgeError
from scoring.judge import ajudge_case, judge_case, make_async_client, make_client
from scoring.registry import LLM_KINDS

CASE = {
    "input": "When was the Eiffel Tower built?",
    "output": "The Eiffel Tower was built in 1889. It is in Berlin.",
    "context": ["The Eiffel Tower was completed in 1889 in Paris."],
    "reference": "It was completed in 1889.",
    # Agent data, for the kinds that judge an agent (scoring.kinds.agent).
    "conversation": [{"role": "user", "content": "When was the Eiffel Tower built?"}],
    "tool_calls": [{"name": "search", "arguments": {"q": "Eiffel Tower built"}}],
    # scoring.kinds.rag: noise sensitivity's answer without noise
    "baseline_output": "The Eiffel Tower was built in 1889.",
}


class _AsyncCache:
    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        return self.data.get(key)

    async def set(self, key: str, value: dict[str, Any]) -> None:
        self.data[key] = value


@pytest.mark.parametrize("kind", sorted(LLM_KINDS))
def test_async_and_blocking_judges_agree_on_every_llm_kind(judge, kind) -> None:
    blocking = judge_case(kind, CASE, None, make_client(judge.base_url), model="m")

    async def main() -> Any:
        client = make_async_client(judge.base_url)
        try:
            return await ajudge_case(kind, CASE, None, client, model="m")
        finally:
            await client.close()

    judged = asyncio.run(main())
    assert judged.analysis == blocking.analysis
    assert (judged.score, judged.passed, judged.reason) == (
        blocking.score,
        blocking.passed,
        blocking.reason,
    )
    assert [s.name for s in judged.steps] == [s.name for s in blocking.steps]


def test_one_event_loop_holds_many_calls_in_flight_within_its_limiter(judge) -> None:
    judge.control(latency_ms=150)
    in_flight = peak = 0

    async def main() -> list[Any]:
        nonlocal in_flight, peak
        gate = asyncio.Semaphore(12)

        @asynccontextmanager
        async def limiter() -> AsyncIterator[None]:
            nonlocal in_flight, peak
            async with gate:
                in_flight += 1
                peak = max(peak, in_flight)
                try:
                    yield
                finally:
                    in_flight -= 1

        client = make_async_client(judge.base_url)
        cases = [{**CASE, "output": f"{CASE['output']} ({i})"} for i in range(30)]
        try:
            return await asyncio.gather(
                *(
                    ajudge_case(
                        "faithfulness", c, None, client, model="m", limiter=limiter
                    )
                    for c in cases
                )
            )
        finally:
            await client.close()

    started = time.monotonic()
    results = asyncio.run(main())
    assert len(results) == 30 and all(r.steps for r in results)
    assert peak == 12  # the limiter, not the loop, capped the calls in flight
    assert judge.stats()["max_in_flight"] == 12
    assert time.monotonic() - started < 30 * 3 * 0.15  # not one call at a time


def test_async_judge_retries_a_429_then_succeeds_and_caches(judge) -> None:
    judge.control(script=["429", "500"])
    cache = _AsyncCache()

    async def main() -> Any:
        client = make_async_client(judge.base_url)
        try:
            first = await ajudge_case(
                "factuality", CASE, None, client, model="m", cache=cache
            )
            calls = judge.chat_requests()
            again = await ajudge_case(
                "factuality", CASE, None, client, model="m", cache=cache
            )
            return first, calls, again
        finally:
            await client.close()

    first, calls, again = asyncio.run(main())
    assert first.steps[0].attempts == 3
    assert judge.chat_requests() == calls  # the second case came from the cache
    assert again.steps[0].cached and again.analysis == first.analysis


def test_async_judge_fails_with_the_steps_made_when_the_judge_refuses(judge) -> None:
    judge.control(script=["400"])

    async def main() -> None:
        client = make_async_client(judge.base_url)
        try:
            await ajudge_case("factuality", CASE, None, client, model="m")
        finally:
            await client.close()

    with pytest.raises(JudgeError) as caught:
        asyncio.run(main())
    assert caught.value.steps and "HTTP 400" in str(caught.value)
