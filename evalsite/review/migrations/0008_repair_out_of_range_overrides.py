"""Undo the overrides the review services refuse today, so the aggregates recount cleanly.

Before the checks, a score override could be any finite number (1e308 was stored, broke
the histogram and every later rescore), a string, or outside [0, scale]; a pass override
could be a string. Each such active override is reverted (kept, with reverted_at set,
as an undo by nobody would be) and an audit event says why; its result's final fields
are recomputed from the analysis and the overrides still active, exactly as the review
services do; and the result's version and its run scorer's review version are bumped,
so open pages see the change and the cached review-side aggregates are recounted.

Self-contained on purpose: it uses the historical models and the pure scoring library,
never evalsite's services, which may change after this migration is written.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import migrations
from django.db.models import F
from django.utils import timezone

from scoring import KINDS, ScoringError, apply_override, compute_score, passes
from scoring.options import MAX_SCALE

ACTION = "override.repair"
CHUNK = 2000


def _scale(options: Any) -> float:
    """The scale an override is checked against: the stored one when sane, else 1."""
    raw = (options or {}).get("scale", 1.0) if isinstance(options, dict) else 1.0
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return 1.0
    try:
        scale = float(raw)
    except OverflowError:
        return 1.0
    if not math.isfinite(scale) or scale <= 0:
        return 1.0
    return min(scale, MAX_SCALE)


def _pattern(path: str) -> str:
    return ".".join("*" if part.isdigit() else part for part in path.split("."))


def override_problem(
    *,
    kind: str,
    scorer_kind: str,
    path: str,
    value: Any,
    scale: float,
    analysis: Any = None,
) -> str:
    """Why the review services would refuse this override today ("" when they accept
    it). A verdict override is also checked against the judge analysis it edits."""
    if kind == "score":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "score is not a number"
        try:
            number = float(value)
        except OverflowError:
            return "score is not finite"
        if not math.isfinite(number):
            return "score is not finite"
        if not 0 <= number <= scale:
            return f"score outside [0, {scale:g}]"
        return ""
    if kind == "pass":
        return "" if isinstance(value, bool) else "pass/fail is not a boolean"
    if kind == "verdict":
        spec = KINDS.get(scorer_kind)
        allowed = spec.overridable.get(_pattern(path or "")) if spec else None
        if allowed is None:
            return "path is not overridable"
        if not any(type(value) is type(a) and value == a for a in allowed):
            return "value is not allowed"
        if isinstance(analysis, dict):
            try:
                apply_override(scorer_kind, analysis, path, value)
            except ScoringError:
                return "path is not in the analysis"
        return ""
    return "unknown override kind"


def _judge_value(analysis: dict[str, Any], path: str) -> Any:
    node: Any = analysis
    for part in path.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    if isinstance(node, str):
        return node.strip().upper() if path == "category" else node.strip().lower()
    return node


def _value_at(analysis: dict[str, Any], path: str) -> Any:
    node: Any = analysis
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _final_fields(
    result: Any, scorer: Any, active: list[Any]
) -> tuple[dict[str, Any], set[int]]:
    """The final fields of one result from its analysis and active overrides, like
    evalsite.review.services.compute_final; returns them and the flipping override ids."""
    fields: dict[str, Any] = {
        "overridden": bool(active),
        "active_override_count": len(active),
    }
    analysis = result.analysis if result.status == "ok" else None
    if analysis is None:
        fields.update(
            final_analysis=None,
            final_score=result.judge_score,
            final_passed=result.judge_passed,
            score_overridden=False,
            pass_overridden=False,
            verdict_flip_count=0,
        )
        return fields, set()
    final_analysis = analysis
    last_by_path: dict[str, Any] = {}
    for o in active:
        if o.kind == "verdict":
            try:
                final_analysis = apply_override(
                    scorer.kind, final_analysis, o.path, o.new_value
                )
            except ScoringError:
                continue  # the path no longer exists in this analysis: leave it out
            last_by_path[o.path] = o
    flips = {
        o.pk
        for path, o in last_by_path.items()
        if _value_at(final_analysis, path) != _judge_value(analysis, path)
    }
    score_ov = [o for o in active if o.kind == "score"]
    pass_ov = [o for o in active if o.kind == "pass"]
    options = scorer.options or {}
    try:
        final_score = (
            float(score_ov[-1].new_value)
            if score_ov
            else compute_score(scorer.kind, final_analysis, options)
        )
        final_passed = (
            bool(pass_ov[-1].new_value)
            if pass_ov
            else passes(scorer.kind, final_score, options)
        )
    except ScoringError:
        # The run scorer's own options are out of range (the review pages say how to
        # fix them); keep the judge's numbers until they are.
        final_score = float(score_ov[-1].new_value) if score_ov else result.judge_score
        final_passed = bool(pass_ov[-1].new_value) if pass_ov else result.judge_passed
    fields.update(
        final_analysis=copy.deepcopy(final_analysis),
        final_score=final_score,
        final_passed=final_passed,
        score_overridden=bool(score_ov),
        pass_overridden=bool(pass_ov),
        verdict_flip_count=len(flips),
    )
    return fields, flips


def _chunks(ids: Iterable[int]) -> Iterable[list[int]]:
    batch: list[int] = []
    for pk in ids:
        batch.append(pk)
        if len(batch) == CHUNK:
            yield batch
            batch = []
    if batch:
        yield batch


def repair_out_of_range_overrides(
    apps: Any, *, now: datetime | None = None
) -> list[int]:
    """Revert every active override the review services would refuse; returns their ids.

    1. Scan the active overrides in id order, a chunk at a time, and check each against
       its run scorer (kind, scale): score a finite number in [0, scale], pass a
       boolean, verdict a value the kind allows at an overridable path.
    2. Revert the refused ones (reverted_at = now, no user) with an audit event each.
    3. Recompute the touched results' final fields and override counts from what is
       still active; bump their versions and their run scorers' review versions.
    """
    Override = apps.get_model("review", "Override")
    AuditEvent = apps.get_model("review", "AuditEvent")
    ReviewVersion = apps.get_model("review", "ReviewVersion")
    Result = apps.get_model("evals", "Result")
    RunScorer = apps.get_model("evals", "RunScorer")
    now = now or timezone.now()
    scorers: dict[int, Any] = {}
    reverted: list[int] = []
    touched: set[int] = set()

    scorer_ids: set[int] = set()
    last = 0
    while True:
        rows = list(
            Override.objects.filter(reverted_at__isnull=True, pk__gt=last)
            .order_by("pk")
            .values_list(
                "pk", "result_id", "kind", "path", "new_value", "result__run_scorer_id"
            )[:CHUNK]
        )
        if not rows:
            break
        last = rows[-1][0]
        analyses = dict(
            Result.objects.filter(
                pk__in={row[1] for row in rows if row[2] == "verdict"}
            ).values_list("pk", "analysis")
        )
        for pk, result_id, kind, path, value, scorer_id in rows:
            if scorer_id not in scorers:
                scorers[scorer_id] = RunScorer.objects.get(pk=scorer_id)
            scorer = scorers[scorer_id]
            problem = override_problem(
                kind=kind,
                scorer_kind=scorer.kind,
                path=path,
                value=value,
                scale=_scale(scorer.options),
                analysis=analyses.get(result_id),
            )
            if not problem:
                continue
            Override.objects.filter(pk=pk).update(
                reverted_at=now, reverted_by=None, counts_as_flip=False
            )
            result = Result.objects.select_related("run", "item").get(pk=result_id)
            AuditEvent.objects.create(
                project_id=result.run.project_id,
                run_id=result.run_id,
                result_id=result_id,
                actor=None,
                action=ACTION,
                summary=(
                    f"reverted an out-of-range {kind} override ({problem}) on item "
                    f"{result.item.index} · {scorer.name}"
                )[:500],
                # repr: the value may be NaN or a 400-digit int, which JSON cannot hold.
                before={
                    "override_id": pk,
                    "value": repr(value)[:100],
                    "problem": problem,
                },
                after={"override_id": pk, "reverted": True},
            )
            reverted.append(pk)
            touched.add(result_id)
            scorer_ids.add(scorer_id)

    for batch in _chunks(sorted(touched)):
        for result in Result.objects.filter(pk__in=batch).order_by("pk"):
            scorer = scorers[result.run_scorer_id]
            active = list(
                Override.objects.filter(
                    result_id=result.pk, reverted_at__isnull=True
                ).order_by("created_at", "id")
            )
            fields, flips = _final_fields(result, scorer, active)
            for name, value in fields.items():
                setattr(result, name, value)
            result.version += 1
            result.save(update_fields=[*fields, "version", "updated_at"])
            for flag in (True, False):
                changed = [
                    o.pk
                    for o in active
                    if o.kind == "verdict"
                    and (o.pk in flips) == flag
                    and o.counts_as_flip != flag
                ]
                if changed:
                    Override.objects.filter(pk__in=changed).update(counts_as_flip=flag)
    for scorer_id in sorted(scorer_ids):
        _, created = ReviewVersion.objects.get_or_create(
            run_scorer_id=scorer_id, defaults={"version": 1}
        )
        if not created:
            ReviewVersion.objects.filter(run_scorer_id=scorer_id).update(
                version=F("version") + 1
            )
    return reverted


def repair(apps: Any, schema_editor: Any) -> None:
    repair_out_of_range_overrides(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0003_result_override_counts"),
        ("review", "0007_result_overridden_index"),
    ]

    operations = [migrations.RunPython(repair, migrations.RunPython.noop)]
