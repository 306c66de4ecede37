"""What-if rescoring of a run scorer with new options: preview, or save as a new scorer version."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result, Run, RunScorer
from evalsite.evals.results.aggregates import (
    ScorerAggregate,
    aggregate_rows,
    run_aggregates,
)
from evalsite.evals.scorers.services import scorer_version_create_from_run
from scoring import (
    OptionsError,
    ScoringError,
    compute_score,
    passes,
    score_in_range,
    validate_options,
)

RESCORE_CHUNK = 2000


# Options that only change how a stored analysis is scored: what-if can change them.
# The others (rubric prompts, ignore_case, reference_tone…) change the analysis itself
# and need a new run.
RESCORABLE_OPTIONS = frozenset(
    {"scale", "threshold", "penalties", "uncertainty_weight", "category_scores"}
)


@dataclass
class RescorePreview:
    run_scorer_id: int
    options: dict[str, Any]
    before: ScorerAggregate
    after: ScorerAggregate
    changed_scores: int
    changed_passes: int
    saved: bool = False
    scorer_config_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_scorer_id": self.run_scorer_id,
            "options": self.options,
            "before": self.before.as_dict(),
            "after": self.after.as_dict(),
            "changed_scores": self.changed_scores,
            "changed_passes": self.changed_passes,
            "saved": self.saved,
            "scorer_config_id": self.scorer_config_id,
        }


_RESCORE_COLUMNS = (
    "id",
    "status",
    "error",
    "analysis",
    "judge_score",
    "judge_passed",
    "final_score",
    "final_passed",
    "score_overridden",
    "pass_overridden",
    "reviewed",
    "overridden",
    "overridable_count",
    "active_override_count",
    "verdict_flip_count",
)


def _rescore_row(
    kind: str, row: dict[str, Any], options: dict[str, Any]
) -> dict[str, Any]:
    """New judge and final numbers of one result under `options` (ok rows only).

    Without an active override the final numbers are the judge's, so the score is
    computed once; otherwise from the final analysis (fetched for those rows only),
    keeping score/pass overrides.
    """
    new = dict(row)
    if row["status"] != Result.Status.OK or row["analysis"] is None:
        return new
    new["judge_score"] = compute_score(kind, row["analysis"], options)
    new["judge_passed"] = passes(
        kind, new["judge_score"], options, analysis=row["analysis"]
    )
    if not row["overridden"]:
        new["final_score"], new["final_passed"] = (
            new["judge_score"],
            new["judge_passed"],
        )
    else:
        if not row["score_overridden"]:
            final_analysis = row.get("final_analysis") or row["analysis"]
            new["final_score"] = compute_score(kind, final_analysis, options)
        if not row["pass_overridden"]:
            new["final_passed"] = passes(
                kind,
                new["final_score"],
                options,
                analysis=row.get("final_analysis") or row["analysis"],
            )
    return new


def _iter_chunks(qs: Any, *, lock: bool) -> Iterable[list[dict[str, Any]]]:
    """Rows of `qs` in id order, RESCORE_CHUNK at a time (keyset pagination); the
    final analysis is read only for rows with active overrides."""
    last = 0
    while True:
        page = qs.filter(pk__gt=last).order_by("pk")
        if lock:
            page = page.select_for_update()
        rows = list(page.values(*_RESCORE_COLUMNS)[:RESCORE_CHUNK])
        if not rows:
            return
        overridden = [r["id"] for r in rows if r["overridden"]]
        if overridden:
            finals = dict(
                Result.objects.filter(pk__in=overridden).values_list(
                    "id", "final_analysis"
                )
            )
            for r in rows:
                if r["overridden"]:
                    r["final_analysis"] = finals.get(r["id"])
        yield rows
        last = rows[-1]["id"]


def run_rescore(
    *,
    run: Run,
    run_scorer: RunScorer,
    options: dict[str, Any] | None,
    user: User,
    save: bool,
) -> RescorePreview:
    """What-if: re-score every result of one run scorer under new options, no judge call.

    Preview (save=False) writes nothing and returns before → after aggregates computed
    in memory. save=True, in one transaction: creates a new ScorerConfig version (parent =
    the run's config), sets RunScorer.options, rewrites judge_score/judge_passed (the
    judge-only numbers under the new options) and final_* of every result (score/pass
    overrides are kept), bulk_update in chunks, and writes an audit event.
    """
    if run_scorer.run_id != run.pk:
        raise ApplicationError(
            "That scorer is not part of this run.",
            field_errors={"scorer_id": "not in this run"},
        )
    if not run.is_finished:
        raise ApplicationError(
            "Only a finished run can be re-scored.",
            field_errors={"run": f"status is {run.status}"},
        )
    try:
        validated = validate_options(run_scorer.kind, options or {})
    except OptionsError as exc:
        raise ApplicationError(
            str(exc), field_errors={f"options.{exc.field}": str(exc)}
        ) from exc
    except ScoringError as exc:
        raise ApplicationError(str(exc), field_errors={"options": str(exc)}) from exc

    try:
        current = validate_options(run_scorer.kind, run_scorer.options or {})
    except ScoringError:
        current = validated
    for key in validated:
        if key not in RESCORABLE_OPTIONS and validated[key] != current.get(key):
            raise ApplicationError(
                f"Changing {key} changes the analysis itself: start a new run instead.",
                field_errors={f"options.{key}": "needs a new run, not a rescore"},
            )

    before = run_aggregates(run_id=run.pk, run_scorer_id=run_scorer.pk)[0]
    qs = Result.objects.filter(run_id=run.pk, run_scorer_id=run_scorer.pk)
    kind = run_scorer.kind
    new_rows: list[dict[str, Any]] = []
    changed_scores = changed_passes = 0

    kept_outside: list[float] = []

    def process(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
        nonlocal changed_scores, changed_passes
        out = []
        for row in chunk:
            new = _rescore_row(kind, row, validated)
            changed_scores += new["final_score"] != row["final_score"]
            changed_passes += new["final_passed"] != row["final_passed"]
            # compute_score keeps the judge's scores within 0-scale; a reviewer's
            # score override is kept as it is, so a smaller scale can leave it out.
            if (
                new["status"] == Result.Status.OK
                and new["final_score"] is not None
                and not score_in_range(new["final_score"], validated["scale"])
            ):
                kept_outside.append(new["final_score"])
            out.append(new)
        return out

    def refuse_kept_outside() -> None:
        if kept_outside:
            n, top = len(kept_outside), max(kept_outside)
            message = (
                f"{n} score override{'s' if n != 1 else ''} (up to {top:g}) would be "
                f"outside 0-{validated['scale']:g} at this scale: choose a scale of at "
                "least that, or undo those overrides first."
            )
            raise ApplicationError(message, field_errors={"options.scale": message})

    if not save:
        for chunk in _iter_chunks(qs, lock=False):
            new_rows.extend(process(chunk))
        refuse_kept_outside()
        after = aggregate_rows(run_scorer=run_scorer, rows=new_rows, options=validated)
        return RescorePreview(
            run_scorer_id=run_scorer.pk,
            options=validated,
            before=before,
            after=after,
            changed_scores=changed_scores,
            changed_passes=changed_passes,
        )

    with transaction.atomic():
        rs = RunScorer.objects.select_for_update().get(pk=run_scorer.pk)
        old_options = rs.options
        for chunk in _iter_chunks(qs, lock=True):
            objs = []
            for new in process(chunk):
                if new["status"] != Result.Status.OK:
                    continue
                objs.append(
                    Result(
                        pk=new["id"],
                        judge_score=new["judge_score"],
                        judge_passed=new["judge_passed"],
                        final_score=new["final_score"],
                        final_passed=new["final_passed"],
                        # Both scores are recomputed within 0-scale (or refused
                        # below): a flag of evals 0006 no longer holds.
                        score_out_of_range=False,
                    )
                )
            refuse_kept_outside()
            Result.objects.bulk_update(
                objs,
                [
                    "judge_score",
                    "judge_passed",
                    "final_score",
                    "final_passed",
                    "score_out_of_range",
                ],
            )
        config = scorer_version_create_from_run(
            run_scorer=rs, options=validated, user=user
        )
        rs.options = validated
        rs.scorer = config
        rs.range_problem = ""  # options within the ranges, every score recomputed
        rs.save(update_fields=["options", "scorer", "range_problem"])
        after = run_aggregates(run_id=run.pk, run_scorer_id=rs.pk)[0]
        audit_event(
            project=run.project,
            actor=user,
            action="run.rescore",
            summary=(
                f"{user.get_username()} re-scored {rs.name} (saved as {config}): pass rate "
                f"{_fmt_rate(before.final_pass_rate)} → {_fmt_rate(after.final_pass_rate)}, "
                f"{changed_scores} scores changed"
            ),
            before={"options": old_options, "aggregates": _agg_brief(before)},
            after={
                "options": validated,
                "scorer_config_id": config.pk,
                "aggregates": _agg_brief(after),
            },
            run=run,
        )
    run_scorer.options = validated
    run_scorer.scorer = config
    run_scorer.range_problem = ""
    return RescorePreview(
        run_scorer_id=run_scorer.pk,
        options=validated,
        before=before,
        after=after,
        changed_scores=changed_scores,
        changed_passes=changed_passes,
        saved=True,
        scorer_config_id=config.pk,
    )


def _fmt_rate(rate: float | None) -> str:
    return "–" if rate is None else f"{rate * 100:.0f} %"


def _agg_brief(agg: ScorerAggregate) -> dict[str, Any]:
    return {
        "judge_mean": agg.judge_mean,
        "final_mean": agg.final_mean,
        "judge_pass_rate": agg.judge_pass_rate,
        "final_pass_rate": agg.final_pass_rate,
    }
