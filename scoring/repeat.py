"""A judge asked k times (the ``repeat`` option): one verdict and its uncertainty.

- The verdict is the majority of the k pass/fail answers; a tie (k even, split evenly)
  is a fail: a judge that cannot make up its mind has not shown the item passes.
- The result kept is the first answer that agrees with the majority: its analysis,
  score and reason, so that reviewers' verdict flips recompute from a real analysis
  with the kind's formula. The mean score of all answers is reported beside it.
- The uncertainty is the share of answers that disagree with the majority: 0 when all
  agree, at most 0.5 (a tie).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scoring.client import StepRecord

__all__ = ["Answer", "Combined", "combine_answers", "uncertainty_of"]


@dataclass(frozen=True)
class Answer:
    score: float
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "passed": self.passed}


@dataclass
class Combined:
    """The majority verdict of k answers (see the module docstring)."""

    passed: bool
    chosen: int  # index of the answer kept as the result
    answers: list[Answer]
    uncertainty: float
    mean_score: float
    steps: list[StepRecord] = field(default_factory=list)


def uncertainty_of(passes: Sequence[bool]) -> float:
    """Share of ``passes`` that disagree with their majority (ties count as fail)."""
    if not passes:
        raise ValueError("no answers")
    yes = sum(1 for p in passes if p)
    majority = yes * 2 > len(passes)
    disagree = len(passes) - yes if majority else yes
    return disagree / len(passes)


def combine_answers(
    answers: Sequence[tuple[float, bool]],
    steps: Sequence[Sequence[StepRecord]] = (),
) -> Combined:
    """Combine k answers ``(score, passed)``; ``steps`` (one list per answer) are
    concatenated in answer order."""
    if not answers:
        raise ValueError("no answers")
    passes = [bool(p) for _, p in answers]
    yes = sum(passes)
    passed = yes * 2 > len(passes)
    chosen = next(i for i, p in enumerate(passes) if p == passed)
    return Combined(
        passed=passed,
        chosen=chosen,
        answers=[Answer(float(s), bool(p)) for s, p in answers],
        uncertainty=uncertainty_of(passes),
        mean_score=sum(float(s) for s, _ in answers) / len(answers),
        steps=[record for answer_steps in steps for record in answer_steps],
    )
