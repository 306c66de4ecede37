"""Imported grades: a grade another tool recorded (a promptfoo assertion, a LangSmith
feedback score). Never computed here; the tool decided pass, so the threshold is not
used (``scoring.formulas.passes``)."""

from __future__ import annotations

from typing import Any

from scoring.kinds.base import AnalysisModel, CommonOptions, KindDef, Ratio

NAME = "imported"


class ImportedAnalysis(AnalysisModel):
    """Another tool's grade as it recorded it: pass, score (0-1) and reason."""

    passed: bool
    score: Ratio
    reason: str = ""


def score(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """The other tool's score x scale, not rounded."""
    return float(analysis["score"] * options["scale"])


KIND = KindDef(
    name=NAME,
    entry={
        "label": "Imported grade",
        "description": (
            "A grade another tool recorded (a promptfoo assertion, a LangSmith "
            "feedback score): its pass, score (0-1) and reason, as the tool gave them "
            "(LangSmith gives no pass: 0.5 or more passes). Never computed here; a "
            "reviewer flips its pass or overrides its score."
        ),
        "needs_judge": False,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": (),
        "overridable": {"passed": [True, False]},
        "value_labels": {"passed": {"true": "pass", "false": "fail"}},
        "runnable": False,
    },
    options=CommonOptions,
    analysis=ImportedAnalysis,
    score=score,
)
