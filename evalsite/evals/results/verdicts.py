"""Overrides, accepts and human verdicts, and the final fields they recompute.

Every write locks the result, recomputes its final fields from the judge's output
plus the active overrides, and records an audit event in the same transaction.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from evalsite.accounts.models import AuditEvent
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.evals.models import Override, Result, ReviewVersion, RunScorer
from evalsite.evals.results.aggregate_updates import review_groups_advance
from evalsite.evals.results.aggregates import review_row
from evalsite.evals.results.labels import override_change
from evalsite.lib.db import compiled_once
from evalsite.lib.text import text_check_storable
from scoring import (
    AnalysisError,
    ScoringError,
    apply_override,
    compute_score,
    get_path,
    passes,
    score_bounds,
    score_in_range,
    validate_options,
)


@dataclass
class FinalFields:
    final_analysis: dict[str, Any] | None
    final_score: float | None
    final_passed: bool | None
    score_overridden: bool
    pass_overridden: bool
    overridden: bool
    flip_ids: set[int] = field(default_factory=set)


def compute_final(
    *,
    kind: str,
    analysis: dict[str, Any] | None,
    options: dict[str, Any],
    overrides: Sequence[Override],
    judge_score: float | None = None,
    judge_passed: bool | None = None,
) -> FinalFields:
    """Final fields of one result from the judge analysis and its ACTIVE overrides (in order).

    final analysis = analysis + verdict overrides applied in order; final score =
    compute_score(final analysis) unless a score override is active (the latest wins);
    final pass = passes(final score) unless a pass override is active (the latest wins).
    Without an analysis (error / pending results) the judge fields are kept.
    """
    active = [o for o in overrides if o.reverted_at is None]
    if analysis is None:
        return FinalFields(
            final_analysis=None,
            final_score=judge_score,
            final_passed=judge_passed,
            score_overridden=False,
            pass_overridden=False,
            overridden=bool(active),
        )
    final_analysis = analysis
    last_by_path: dict[str, Override] = {}
    for o in active:
        if o.kind == Override.Kind.VERDICT:
            final_analysis = apply_override(kind, final_analysis, o.path, o.new_value)
            last_by_path[o.path] = o
    flip_ids = {
        o.pk
        for path, o in last_by_path.items()
        if get_path(final_analysis, path) != _judge_value(analysis, path)
    }
    score_ov = [o for o in active if o.kind == Override.Kind.SCORE]
    pass_ov = [o for o in active if o.kind == Override.Kind.PASS]
    if score_ov:
        final_score = float(cast(Any, score_ov[-1].new_value))
    else:
        final_score = compute_score(kind, final_analysis, options)
    if pass_ov:
        final_passed = bool(pass_ov[-1].new_value)
    else:
        final_passed = passes(kind, final_score, options, analysis=final_analysis)
    return FinalFields(
        final_analysis=final_analysis,
        final_score=final_score,
        final_passed=final_passed,
        score_overridden=bool(score_ov),
        pass_overridden=bool(pass_ov),
        overridden=bool(active),
        flip_ids=flip_ids,
    )


def _judge_value(analysis: dict[str, Any], path: str) -> Any:
    try:
        value = get_path(analysis, path)
    except AnalysisError:
        return None
    # The judge's stored value may be un-normalised ("Yes "); compare like apply_override.
    if isinstance(value, str):
        return value.strip().upper() if path == "category" else value.strip().lower()
    return value


# What compute_final returns, then the override counts kept beside them.
_COMPUTED_FIELDS = (
    "final_analysis",
    "final_score",
    "final_passed",
    "score_overridden",
    "pass_overridden",
    "overridden",
)


_FINAL_FIELDS = (*_COMPUTED_FIELDS, "active_override_count", "verdict_flip_count")


def _recompute_locked(result: Result, run_scorer: RunScorer) -> set[int]:
    """Set the final fields on `result` (row already locked); returns active flip ids."""
    overrides = list(
        result.overrides.filter(reverted_at__isnull=True).order_by("created_at", "id")
    )
    fields = compute_final(
        kind=run_scorer.kind,
        analysis=result.analysis if result.status == Result.Status.OK else None,
        options=scoring_options(run_scorer),
        overrides=overrides,
        judge_score=result.judge_score,
        judge_passed=result.judge_passed,
    )
    for name in _COMPUTED_FIELDS:
        setattr(result, name, getattr(fields, name))
    result.active_override_count = len(overrides)
    result.verdict_flip_count = len(fields.flip_ids)
    # Keep the flip flags in step: write only the overrides whose flag changes (the
    # result row is locked, so no one else is changing them).
    for flag in (True, False):
        changed = [
            o.pk
            for o in overrides
            if o.kind == Override.Kind.VERDICT
            and (o.pk in fields.flip_ids) == flag
            and o.counts_as_flip != flag
        ]
        if changed:
            Override.objects.filter(pk__in=changed).update(counts_as_flip=flag)
    return fields.flip_ids


def _lock(
    result: Result, *, expected_version: int | None = None
) -> tuple[Result, RunScorer]:
    """Lock the result row, then read the run scorer fresh (after the lock, so a
    concurrent rescore's committed options are seen)."""
    # The run, project and item never change under a result: reuse the caller's copies
    # when it has them, so the locking read is one narrow row.
    have_related = Result.run.is_cached(result) and Result.item.is_cached(result)

    def build(v: Mapping[str, int]) -> QuerySet[Result]:
        query = Result.objects.select_for_update().filter(pk=v["result"])
        if not have_related:
            query = query.select_related("run", "run__project", "item")
        return query

    # Compiled once: 1-2 ms of CPU of every review write (a result's ~30 columns,
    # or those of its run, project and item too; bench_million's 3rd answer).
    found = compiled_once(("result_lock", have_related), build, {"result": result.pk})
    if not found:
        raise Result.DoesNotExist("Result matching query does not exist.")
    locked = found[0]
    if have_related:
        locked.run, locked.item = result.run, result.item
    if expected_version is not None and locked.version != expected_version:
        raise ConflictError(
            f"This result changed since you loaded it (version {expected_version}, now "
            f"{locked.version}); reload to see the newest state.",
            field_errors={"expected_version": f"current version is {locked.version}"},
        )
    run_scorer = RunScorer.objects.get(pk=locked.run_scorer_id)
    locked.run_scorer = run_scorer
    return locked, run_scorer


@contextmanager
def result_reviewing(
    result: Result, *, expected_version: int | None = None, touched: bool = False
) -> Iterator[tuple[Result, RunScorer]]:
    """Lock a result for a review write (inside the caller's transaction); when the
    write is done, bump the run scorer's review version with it and, once committed,
    carry the cached review-side aggregates to that version by this one change.

    `touched`: the caller writes something of the result's review the aggregates do
    not count (a team-review answer) but other readers cached by the version do (the
    agreement figures): the version moves even when the review row did not."""
    locked, run_scorer = _lock(result, expected_version=expected_version)
    before = review_row(locked)
    yield locked, run_scorer
    after = review_row(locked)
    if before == after:
        if not touched:
            return  # nothing the aggregates count changed (e.g. a comment-only path)
        before = after = None  # the aggregates are carried as they are
    version = review_version_bump(run_scorer.pk)
    options = run_scorer.options
    transaction.on_commit(
        lambda: review_groups_advance(
            run_scorer_id=run_scorer.pk,
            options=options,
            version=version,
            before=before,
            after=after,
        )
    )


def review_version_touch(*, run_scorer: RunScorer) -> None:
    """+1 on the run scorer's review version for a review write the aggregates do not
    count (answers recorded beside a verdict, or taken back with it), inside the
    caller's transaction; once committed, the cached review-side aggregates are
    carried to the new version as they are. Readers cached by the version (the
    agreement figures) see the write."""
    version = review_version_bump(run_scorer.pk)
    options = run_scorer.options
    transaction.on_commit(
        lambda: review_groups_advance(
            run_scorer_id=run_scorer.pk,
            options=options,
            version=version,
            before=None,
            after=None,
        )
    )


def review_version_bump(run_scorer_id: int) -> int:
    """+1 on the run scorer's review version (created at 1), in one statement."""
    table = connection.ops.quote_name(ReviewVersion._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (run_scorer_id, version) VALUES (%s, 1) "
            f"ON CONFLICT (run_scorer_id) DO UPDATE SET version = {table}.version + 1 "
            "RETURNING version",
            [run_scorer_id],
        )
        return int(cursor.fetchone()[0])


def _save_result(result: Result, *extra: str) -> None:
    result.version += 1
    result.save(update_fields=[*_FINAL_FIELDS, "version", "updated_at", *extra])


def _copy_back(target: Result, source: Result) -> None:
    """Refresh the caller's instance so views render what was committed."""
    for f in Result._meta.concrete_fields:
        setattr(target, f.attname, getattr(source, f.attname))


def result_recompute(*, result: Result) -> Result:
    """Recompute a result's final fields from its analysis, overrides and run options."""
    with transaction.atomic(), result_reviewing(result) as (locked, run_scorer):
        _recompute_locked(locked, run_scorer)
        _save_result(locked)
    _copy_back(result, locked)
    return locked


def _review_state(result: Result) -> dict[str, Any]:
    return {
        "reviewed": result.reviewed,
        "human_passed": result.human_passed,
        "reviewed_by_id": result.reviewed_by_id,
        "reviewed_at": result.reviewed_at.isoformat() if result.reviewed_at else None,
    }


def _snapshot(result: Result) -> dict[str, Any]:
    return {
        "final_score": result.final_score,
        "final_passed": result.final_passed,
        "reviewed": result.reviewed,
    }


def _mark_reviewed(result: Result, user: User) -> None:
    result.reviewed = True
    result.reviewed_by = user
    result.reviewed_at = timezone.now()


_REVIEW_FIELDS = ("reviewed", "reviewed_by", "reviewed_at", "human_passed")


def result_where(result: Result) -> str:
    return f"item {result.item.number} · {result.run_scorer.name}"


def _require_ok(result: Result) -> None:
    if result.status != Result.Status.OK:
        raise ApplicationError(
            f"Only scored results can be reviewed; this one is {result.status}.",
            field_errors={"result": f"status is {result.status}"},
        )


def _clean_value(
    *, result: Result, run_scorer: RunScorer, kind: str, path: str, value: Any
) -> tuple[str, Any, Any]:
    """Validate an override; returns (path, old value, new value)."""
    if kind == Override.Kind.VERDICT:
        if not path:
            raise ApplicationError(
                "A verdict override needs a path such as 'verdicts.2.verdict'.",
                field_errors={"path": "required for kind 'verdict'"},
            )
        current: Any = result.final_analysis or result.analysis
        try:
            updated = apply_override(run_scorer.kind, current, path, value)
        except AnalysisError as exc:
            field_name = "value" if "not allowed" in str(exc) else "path"
            raise ApplicationError(
                str(exc), field_errors={field_name: str(exc)}
            ) from exc
        old, new = get_path(current, path), get_path(updated, path)
        if old == new:
            raise ApplicationError(
                f"{path} is already {new!r}.",
                field_errors={"value": f"already {new!r}"},
            )
        return path, old, new
    if path:
        raise ApplicationError(
            f"A {kind} override has no path.",
            field_errors={"path": f"not allowed for kind '{kind}'"},
        )
    if kind == Override.Kind.SCORE:
        scale = scoring_options(run_scorer)["scale"]
        return "", result.final_score, score_value(value, scale=scale)
    if kind == Override.Kind.PASS:
        # Booleans only: the HTML form turns its own "pass"/"fail" into one; "yes",
        # 1 or "true" sent to the API are refused rather than guessed at.
        if not isinstance(value, bool):
            raise ApplicationError(
                "Pass/fail must be true or false.",
                field_errors={"value": "must be true or false (a JSON boolean)"},
            )
        return "", result.final_passed, value
    raise ApplicationError(
        f"Unknown override kind {kind!r}; use verdict, score or pass.",
        field_errors={"kind": "must be verdict, score or pass"},
    )


def score_value(value: Any, *, scale: float) -> float:
    """A score override as a float in [0, scale], else ApplicationError on "value".

    Only numbers: the HTML form parses its text itself. JSON can carry NaN, 1e999 (inf)
    and 10**400 (an int no float holds); each is refused here, as is anything outside
    the scorer's scale (scoring.score_in_range: the one rule every score keeps to), so
    the aggregates and every later rescore only see sane scores.
    -0.0 is stored as 0.0.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ApplicationError(
            "The score must be a number.",
            field_errors={"value": "must be a number"},
        )
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ApplicationError(
            "The score must be a finite number.",
            field_errors={"value": "must be finite"},
        )
    if not score_in_range(number, scale):
        low, high = score_bounds(scale)
        raise ApplicationError(
            f"The score must be between {low:g} and {high:g} (this scorer's scale).",
            field_errors={"value": f"must be between {low:g} and {high:g}"},
        )
    return number + 0.0


def scoring_options(run_scorer: RunScorer) -> dict[str, Any]:
    """The run scorer's stored options, validated with the kind's defaults.

    Options saved before their ranges were checked (a scale of 1e308, say) are refused
    with a message saying how to fix them, instead of failing inside the scoring.
    """
    try:
        return validate_options(run_scorer.kind, run_scorer.options or {})
    except ScoringError as exc:
        raise ApplicationError(
            f"The saved options of {run_scorer.name} are out of range ({exc}); save "
            "corrected options with a what-if rescore, then try again.",
            field_errors={"options": str(exc)},
        ) from exc


def check_text(**fields: str | None) -> None:
    """Refuse text the database cannot store (NUL, lone surrogates) with a field error,
    before anything is locked or written: notes and paths end up in rows and audit
    summaries."""
    for name, text in fields.items():
        if text:
            text_check_storable(text, field=name)


def override_create_locked(
    *,
    result: Result,
    run_scorer: RunScorer,
    user: User,
    kind: str,
    value: Any,
    path: str,
    note: str,
) -> Override:
    _require_ok(result)
    path, old, new = _clean_value(
        result=result, run_scorer=run_scorer, kind=kind, path=path, value=value
    )
    before = _snapshot(result)
    override = Override.objects.create(
        result=result,
        kind=kind,
        path=path,
        old_value=old,
        new_value=new,
        note=note,
        user=user,
        prior_review=_review_state(result),
        # Usually right already (the newest override of a path flips iff it differs
        # from the judge), which spares the recompute an UPDATE; it corrects it if not.
        counts_as_flip=kind == Override.Kind.VERDICT
        and new != _judge_value(result.analysis or {}, path),
    )
    flip_ids = _recompute_locked(result, run_scorer)
    _mark_reviewed(result, user)
    if kind == Override.Kind.PASS:
        result.human_passed = new
    _save_result(result, *_REVIEW_FIELDS)
    change = override_change(
        kind=run_scorer.kind, override_kind=kind, path=path, old=old, new=new
    )
    audit_event(
        project=result.run.project,
        actor=user,
        action="override.create",
        summary=(
            f"{user.get_username()} set {change} on {result_where(result)}"
            + (f" ({note})" if note else "")
        ),
        before={**before, "value": old},
        after={**_snapshot(result), "value": new, "override_id": override.pk},
        run=result.run,
        result=result,
    )
    override.counts_as_flip = override.pk in flip_ids
    override.result = result
    return override


def override_create(
    *,
    result: Result,
    user: User,
    kind: str,
    value: Any,
    path: str = "",
    note: str = "",
    expected_version: int | None = None,
) -> Override:
    """Record a verdict / score / pass override and recompute the result's final fields.

    Raises ApplicationError (400, naming the field/path) for invalid input and
    ConflictError (409) when `expected_version` is given and stale. `override.result`
    is the updated result (also copied onto the passed instance).
    """
    check_text(path=path, note=note)
    with (
        transaction.atomic(),
        result_reviewing(result, expected_version=expected_version) as (
            locked,
            run_scorer,
        ),
    ):
        override = override_create_locked(
            result=locked,
            run_scorer=run_scorer,
            user=user,
            kind=kind,
            value=value,
            path=path.strip(),
            note=(note or "").strip(),
        )
    _copy_back(result, locked)
    override.result = result
    return override


def override_revert(
    *, override: Override, user: User, expected_version: int | None = None
) -> Result:
    """Undo one override: the final fields are recomputed without it; undoing the
    latest active change also restores the review state it replaced."""
    with (
        transaction.atomic(),
        result_reviewing(override.result, expected_version=expected_version) as (
            locked,
            run_scorer,
        ),
    ):
        current = Override.objects.select_for_update().get(pk=override.pk)
        if current.reverted_at is not None:
            raise ApplicationError(
                "This override was already undone.",
                field_errors={"override": "already undone"},
            )
        before = _snapshot(locked)
        newer_active = Override.objects.filter(
            result=locked, reverted_at__isnull=True, pk__gt=current.pk
        ).exists()
        current.reverted_at = timezone.now()
        current.reverted_by = user
        current.counts_as_flip = False
        current.save(update_fields=["reverted_at", "reverted_by", "counts_as_flip"])
        _recompute_locked(locked, run_scorer)
        restore = _review_state_to_restore(locked, current, newer_active=newer_active)
        if restore:
            locked.reviewed = restore.get("reviewed", locked.reviewed)
            locked.human_passed = restore.get("human_passed")
            locked.reviewed_by_id = restore.get("reviewed_by_id")
            reviewed_at = restore.get("reviewed_at")
            locked.reviewed_at = (
                datetime.fromisoformat(reviewed_at) if reviewed_at else None
            )
        elif current.kind == Override.Kind.PASS:
            latest_pass = (
                Override.objects.filter(
                    result=locked, kind=Override.Kind.PASS, reverted_at__isnull=True
                )
                .order_by("-created_at", "-id")
                .first()
            )
            if latest_pass is not None:
                locked.human_passed = latest_pass.new_value
        _save_result(locked, *_REVIEW_FIELDS)
        change = override_change(
            kind=run_scorer.kind,
            override_kind=current.kind,
            path=current.path,
            old=current.old_value,
            new=current.new_value,
        )
        audit_event(
            project=locked.run.project,
            actor=user,
            action="override.revert",
            summary=f"{user.get_username()} undid {change} on {result_where(locked)}",
            before={**before, "value": current.new_value, "override_id": current.pk},
            after={**_snapshot(locked), "value": current.old_value},
            run=locked.run,
            result=locked,
        )
    override.reverted_at = current.reverted_at
    override.reverted_by = current.reverted_by
    _copy_back(override.result, locked)
    return locked


def result_review_retract(
    *, result: Result, user: User, expected_version: int | None = None
) -> Result:
    """Undo an answer that changed no verdict (an accept, or a pass/fail that agreed
    with the final verdict): the result is unreviewed again. Overrides are undone with
    `override_revert` instead. Pages and endpoints call review's `review_retract`,
    which also retracts the queue answers it recorded, in the same transaction."""
    with (
        transaction.atomic(),
        result_reviewing(result, expected_version=expected_version) as (locked, _),
    ):
        if Override.objects.filter(result=locked, reverted_at__isnull=True).exists():
            raise ConflictError(
                "This result has active overrides: undo those first.",
                field_errors={"result": "has active overrides"},
            )
        if not locked.reviewed:
            raise ConflictError("Nothing to undo: this result is not reviewed.")
        before = {**_snapshot(locked), "human_passed": locked.human_passed}
        locked.reviewed = False
        locked.human_passed = None
        locked.reviewed_by = None
        locked.reviewed_at = None
        locked.version += 1
        locked.save(update_fields=[*_REVIEW_FIELDS, "version", "updated_at"])
        audit_event(
            project=locked.run.project,
            actor=user,
            action="result.retract",
            summary=f"{user.get_username()} undid the review of {result_where(locked)}",
            before=before,
            after={**_snapshot(locked), "human_passed": None},
            run=locked.run,
            result=locked,
        )
    _copy_back(result, locked)
    return locked


def _review_state_to_restore(
    result: Result, undone: Override, *, newer_active: bool
) -> dict[str, Any]:
    """The review state an undo goes back to ({} = leave it).

    Undoing the latest active override restores the state it replaced. When no active
    override remains, the state before the first override since the last accept /
    pass-fail answer comes back, so "flip, flip, undo, undo" ends unreviewed again.
    """
    if newer_active:
        return {}
    still_active = Override.objects.filter(
        result=result, reverted_at__isnull=True
    ).exists()
    if still_active:
        return cast("dict[str, Any]", undone.prior_review)
    last_answer = (
        AuditEvent.objects.filter(
            result_id=result.pk, action__in=("result.accept", "result.human_pass")
        )
        .order_by("-created_at", "-id")
        .first()
    )
    overrides = Override.objects.filter(result=result)
    if last_answer is not None:
        overrides = overrides.filter(created_at__gt=last_answer.created_at)
    first = overrides.order_by("created_at", "id").first() or undone
    return cast("dict[str, Any]", first.prior_review)


def result_accept(
    *, result: Result, user: User, expected_version: int | None = None
) -> Result:
    """Mark reviewed with the human agreeing with the current verdict (the judge's when
    there are no overrides; active overrides are kept: undo them separately)."""
    with (
        transaction.atomic(),
        result_reviewing(result, expected_version=expected_version) as (locked, _),
    ):
        _require_ok(locked)
        _record_human_verdict(
            locked,
            user,
            passed=locked.final_passed,
            action="result.accept",
            summary=(
                f"{user.get_username()} accepted "
                f"{'pass' if locked.final_passed else 'fail'} on {result_where(locked)}"
            ),
        )
    _copy_back(result, locked)
    return locked


def _record_human_verdict(
    locked: Result,
    user: User,
    *,
    passed: bool | None,
    action: str,
    summary: str,
) -> None:
    """Mark a locked result reviewed with the human's pass/fail, and audit it."""
    before = {**_snapshot(locked), "human_passed": locked.human_passed}
    _mark_reviewed(locked, user)
    locked.human_passed = passed
    locked.version += 1
    locked.save(update_fields=[*_REVIEW_FIELDS, "version", "updated_at"])
    audit_event(
        project=locked.run.project,
        actor=user,
        action=action,
        summary=summary,
        before=before,
        after={**_snapshot(locked), "human_passed": locked.human_passed},
        run=locked.run,
        result=locked,
    )


def result_set_human_pass(
    *,
    result: Result,
    user: User,
    passed: bool,
    note: str = "",
    expected_version: int | None = None,
) -> Result:
    """The reviewer's own pass/fail (blind answer, p/f keys): records human_passed and,
    when it differs from the current final pass, a pass override."""
    check_text(note=note)
    with (
        transaction.atomic(),
        result_reviewing(result, expected_version=expected_version) as (
            locked,
            run_scorer,
        ),
    ):
        _require_ok(locked)
        human_pass_locked(
            locked,
            run_scorer,
            user,
            passed=passed,
            note=(note or "").strip(),
            agrees_summary=(
                f"{user.get_username()} answered {'pass' if passed else 'fail'} "
                f"(agrees) on {result_where(locked)}" + (f" ({note})" if note else "")
            ),
        )
    _copy_back(result, locked)
    return locked


def human_pass_locked(
    locked: Result,
    run_scorer: RunScorer,
    user: User,
    *,
    passed: bool | None,
    note: str,
    agrees_summary: str,
) -> None:
    """Record a human pass/fail on a locked result: a pass override when it differs
    from the final pass, else the answer alone, audited with `agrees_summary`."""
    if locked.final_passed != passed:
        override_create_locked(
            result=locked,
            run_scorer=run_scorer,
            user=user,
            kind=Override.Kind.PASS,
            value=bool(passed),
            path="",
            note=note,
        )
    else:
        _record_human_verdict(
            locked,
            user,
            passed=passed,
            action="result.human_pass",
            summary=agrees_summary,
        )
