"""`compute_score` throughput per kind on 10k generated analyses (section "scoring").

Also times `analyze_text` for the non-LLM kinds on generated texts. Run alone with
`python bench/bench_scoring_formulas.py`; `make bench` imports `run()`.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scoring import KINDS, TEXT_KINDS, analyze_text, compute_score  # noqa: E402

N_ANALYSES = 10_000
N_TEXT_CASES = 2_000

_TEXT = (
    "the capital of france is paris and its population grew by two percent in 2023 "
    "while tourism recovered strongly after a difficult period for hotels and museums "
    "visitors loved the river cruises but hated the long queues at the tower"
)
_WORDS = _TEXT.split()


def _verdicts(
    rng: random.Random, values: list[str], key: str | None
) -> list[dict[str, Any]]:
    out = []
    for i in range(rng.randint(0, 12)):
        item: dict[str, Any] = {"verdict": rng.choice(values), "reason": "because"}
        if key == "context_index":
            item["context_index"] = i
        elif key:
            item[key] = f"{key} number {i}"
        out.append(item)
    return out


def make_analysis(kind: str, rng: random.Random) -> dict[str, Any]:
    """A random, valid analysis of ``kind``."""
    if kind == "faithfulness":
        verdicts = _verdicts(rng, ["yes", "no", "unsure"], "claim")
        return {"claims": [v["claim"] for v in verdicts], "verdicts": verdicts}
    if kind == "hallucination":
        verdicts = _verdicts(rng, ["yes", "no"], "claim")
        return {"claims": [v["claim"] for v in verdicts], "verdicts": verdicts}
    if kind == "context_relevance":
        evaluations = [
            {
                "context_index": i,
                "relevance": rng.choice(["high", "medium", "low", "none"]),
                "used": rng.random() < 0.5,
                "reason": "because",
            }
            for i in range(rng.randint(0, 8))
        ]
        missing = [f"fact {i}" for i in range(rng.randint(0, 4))]
        return {
            "evaluations": evaluations,
            "missing_context": missing,
            "context_count": len(evaluations),
        }
    if kind == "context_precision":
        return {"verdicts": _verdicts(rng, ["yes", "no"], "context_index")}
    if kind == "answer_relevancy":
        verdicts = _verdicts(rng, ["yes", "no", "unsure"], "statement")
        return {"statements": [v["statement"] for v in verdicts], "verdicts": verdicts}
    if kind == "bias":
        verdicts = _verdicts(rng, ["yes", "no"], "opinion")
        return {"opinions": [v["opinion"] for v in verdicts], "verdicts": verdicts}
    if kind == "toxicity":
        return {"verdicts": _verdicts(rng, ["yes", "no"], None)}
    if kind == "factuality":
        return {"category": rng.choice("ABCDE"), "reason": "because"}
    if kind == "custom_rubric":
        return {"score": rng.random(), "reason": "because"}
    return {"ratio": rng.random(), "compared_with": "reference"}


def _sentence(rng: random.Random) -> str:
    return " ".join(
        rng.choices(_WORDS, k=rng.randint(4, 14))
    ).capitalize() + rng.choice(".!?")


def make_case(rng: random.Random) -> dict[str, Any]:
    return {
        "input": _sentence(rng),
        "output": " ".join(_sentence(rng) for _ in range(rng.randint(1, 4))),
        "reference": " ".join(_sentence(rng) for _ in range(rng.randint(1, 3))),
    }


_OPTIONS: dict[str, dict[str, Any]] = {
    "context_relevance": {"penalties": {"unused_high_relevance": 0.2}, "scale": 10},
    "answer_relevancy": {"uncertainty_weight": 0.5},
    "factuality": {"category_scores": {"disagree": 0.25}},
}


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def run() -> list[dict[str, Any]]:
    rng = random.Random(20240601)
    rows: list[dict[str, Any]] = []
    for kind in KINDS:
        analyses = [make_analysis(kind, rng) for _ in range(N_ANALYSES)]
        options = _OPTIONS.get(kind)
        started = time.perf_counter()
        for analysis in analyses:
            compute_score(kind, analysis, options)
        elapsed = time.perf_counter() - started
        rows.append(
            {
                "section": "scoring",
                "name": f"compute_score {kind}",
                "value": _rate(N_ANALYSES, elapsed),
                "unit": "ops/s",
                "target": None,
            }
        )
    cases = [make_case(rng) for _ in range(N_TEXT_CASES)]
    for kind in TEXT_KINDS:
        started = time.perf_counter()
        for case in cases:
            analyze_text(kind, case)
        elapsed = time.perf_counter() - started
        rows.append(
            {
                "section": "scoring",
                "name": f"analyze_text {kind}",
                "value": _rate(N_TEXT_CASES, elapsed),
                "unit": "ops/s",
                "target": None,
            }
        )
    return rows


def main() -> None:
    rows = run()
    width = max(len(row["name"]) for row in rows)
    print(f"{'name'.ljust(width)}  {'value':>12}  unit")
    print(f"{'-' * width}  {'-' * 12}  -----")
    for row in rows:
        print(f"{row['name'].ljust(width)}  {row['value']:>12,.0f}  {row['unit']}")


if __name__ == "__main__":
    main()
