"""`judge_case` throughput against the offline judge (section "scoring").

The offline judge (its own process) answers every request after 50 ms; 16 threads share
one openai client.
The ideal bound is 16 requests in flight / 0.05 s per request / steps per case (cases/s);
the measured figure shows what the client, the openai SDK and the HTTP server cost on top.
Run alone with `python bench/bench_scoring_judge.py`; `make bench` imports `run()`.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import start_offline_judge, stop_process  # noqa: E402
from scoring.cache import InMemoryCache  # noqa: E402
from scoring.judge import judge_case, make_client  # noqa: E402

LATENCY_S = 0.05
THREADS = 16
CONTEXT = [
    "The Eiffel Tower is in Paris. It was completed in 1889 and is 330 metres tall.",
    "Paris is the capital of France and its largest city.",
]


def _case(i: int) -> dict[str, Any]:
    return {
        "input": f"Question {i}: where is the Eiffel Tower and when was it completed?",
        "output": f"The Eiffel Tower is in Paris. It was completed in 1889. Visitor {i} liked it.",
        "context": CONTEXT,
        "reference": "The Eiffel Tower is in Paris and was completed in 1889.",
    }


def _throughput(
    kind: str, n_cases: int, client: Any, cache: InMemoryCache | None = None
) -> tuple[float, int]:
    cases = [_case(i) for i in range(n_cases)]

    def one(case: dict[str, Any]) -> int:
        result = judge_case(
            kind,
            case,
            None,
            client,
            model="offline-judge",
            cache=cache,
            retry_base_delay=0.01,
        )
        return len(result.steps)

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        list(pool.map(one, cases[:THREADS]))  # warm up connections
        start = time.perf_counter()
        steps = list(pool.map(one, cases))
        elapsed = time.perf_counter() - start
    return n_cases / elapsed, max(steps)


def run() -> list[dict[str, Any]]:
    process, base_url = start_offline_judge(LATENCY_S * 1000)
    rows: list[dict[str, Any]] = []
    try:
        client = make_client(base_url, "bench", timeout=30)
        for kind, n_cases in (("faithfulness", 320), ("factuality", 640)):
            rate, steps = _throughput(kind, n_cases, client)
            ideal = THREADS / LATENCY_S / steps
            label = f"judge_case {kind} ({steps} steps), {THREADS} threads, 50 ms judge"
            rows.append(
                {
                    "section": "scoring",
                    "name": label,
                    "value": round(rate, 1),
                    "unit": "cases/s",
                    "target": round(ideal, 1),
                }
            )
            rows.append(
                {
                    "section": "scoring",
                    "name": f"{label}: share of the ideal bound",
                    "value": round(100 * rate / ideal, 1),
                    "unit": "%",
                    "target": 100,
                }
            )
        cache = InMemoryCache()
        _throughput("faithfulness", 320, client, cache)
        rate, _ = _throughput("faithfulness", 320, client, cache)
        rows.append(
            {
                "section": "scoring",
                "name": "judge_case faithfulness, every step a cache hit, 16 threads",
                "value": round(rate, 1),
                "unit": "cases/s",
                "target": None,
            }
        )
    finally:
        stop_process(process)
    return rows


if __name__ == "__main__":
    for row in run():
        target = (
            "" if row["target"] is None else f"(ideal {row['target']} {row['unit']})"
        )
        print(f"{row['name']:<75} {row['value']:>9} {row['unit']:<8} {target}")
