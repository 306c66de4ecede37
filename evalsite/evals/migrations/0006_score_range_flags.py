"""Flag what was saved outside the range every score now keeps to.

Factuality category scores were accepted from -10 to 10, so runs hold scores of -1 on a
0-1 scale, which overrides, aggregates and the histogram do not hold. Category scores
are now 0-1 (scoring/options.py) and every score stays within 0-scale. Nothing saved is
rewritten: scorer configs and run scorers whose category scores are outside 0-1 get a
`range_problem` the scorer and run pages show ("reconfigure and rescore"), and results
whose judge or final score is outside 0-scale get `score_out_of_range`. A what-if
rescore with corrected options recomputes the scores and clears both; an edit of the
scorer config clears its note.

Self-contained on purpose: historical models and plain Python only, so the check stays
what it was when this was written whatever the services become.
"""

from __future__ import annotations

import math
from typing import Any

from django.db import migrations, models
from django.db.models import Q

CATEGORY_KEYS = ("subset", "superset", "agree", "disagree", "differ_but_factual")
_EPSILON = 2.220446049250313e-16


def _scale(options: Any) -> float | None:
    """The stored scale when it is a positive finite number, else None (a scale
    refused by the options check is flagged by the services, not here)."""
    raw = options.get("scale", 1.0) if isinstance(options, dict) else 1.0
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    try:
        scale = float(raw)
    except OverflowError:
        return None
    return scale if math.isfinite(scale) and scale > 0 else None


def score_top(scale: float) -> float:
    """The highest score a scorer of `scale` holds: the scale, or the scale rounded
    half up to 2 decimals when higher (scoring.ranges.score_bounds when written)."""
    return max(scale, math.floor((scale + _EPSILON) * 100 + 0.5) / 100)


def category_problem(kind: str, options: Any) -> str:
    """What is wrong with a factuality config's category scores, or ""."""
    if kind != "factuality" or not isinstance(options, dict):
        return ""
    scores = options.get("category_scores")
    if not isinstance(scores, dict):
        return ""
    bad = []
    for key in CATEGORY_KEYS:
        value = scores.get(key)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0 <= value <= 1
        ):
            bad.append(f"{key} {value!r}")
    if not bad:
        return ""
    return f"category scores outside 0-1 ({', '.join(bad)})"


def flag_out_of_range(apps: Any, schema_editor: Any = None) -> dict[str, int]:
    """Set range_problem / score_out_of_range; returns how many of each were flagged.

    1. Scorer configs whose category scores are outside 0-1.
    2. Run scorers: the same, plus how many of their results hold a judge or final
       score outside 0-scale (those results are flagged, one UPDATE per run scorer).
    """
    ScorerConfig = apps.get_model("evals", "ScorerConfig")
    RunScorer = apps.get_model("evals", "RunScorer")
    Result = apps.get_model("evals", "Result")
    counts = {"scorer_configs": 0, "run_scorers": 0, "results": 0}

    for config in ScorerConfig.objects.filter(kind="factuality").iterator():
        problem = category_problem(config.kind, config.options)
        if problem:
            config.range_problem = f"Saved with {problem}."
            config.save(update_fields=["range_problem"])
            counts["scorer_configs"] += 1

    for rs in RunScorer.objects.only("pk", "kind", "options").iterator():
        scale = _scale(rs.options)
        problems = []
        options_problem = category_problem(rs.kind, rs.options)
        if options_problem:
            problems.append(f"Run with {options_problem}.")
        if scale is not None:
            top = score_top(scale)
            outside = Q()
            for name in ("judge_score", "final_score"):
                outside |= Q(**{f"{name}__lt": 0}) | Q(**{f"{name}__gt": top})
            flagged = Result.objects.filter(run_scorer_id=rs.pk).filter(outside)
            n = flagged.update(score_out_of_range=True)
            if n:
                counts["results"] += n
                problems.append(
                    f"{n} result{'s' if n != 1 else ''} hold{'s' if n == 1 else ''} "
                    f"a score outside 0-{scale:g}."
                )
        if problems:
            RunScorer.objects.filter(pk=rs.pk).update(range_problem=" ".join(problems))
            counts["run_scorers"] += 1
    return counts


def noop(apps: Any, schema_editor: Any) -> None:
    """Going back drops the flag columns (the AddFields' reversal): nothing to undo."""


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0005_judge_latency_and_wait"),
    ]

    operations = [
        migrations.AddField(
            model_name="scorerconfig",
            name="range_problem",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="runscorer",
            name="range_problem",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="result",
            name="score_out_of_range",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RunPython(flag_out_of_range, noop, elidable=False),
    ]
