"""Runs: start (snapshot + result rows + fan-out), preview, cancel, retry, finish, recover."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from evalsite.accounts.models import Project
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.datasets.models import Dataset, Item
from evalsite.evals import conf
from evalsite.evals.judges.versions import judge_version_for
from evalsite.evals.models import JudgeCall, Result, Run, RunScorer, ScorerConfig
from evalsite.evals.scorers.services import scorer_fields_missing
from evalsite.lib.tasks import task_send, task_send_on_commit
from evalsite.lib.text import text_check_storable
from evalsite.queues import CeleryQueue
from scoring import (
    KINDS,
    ScoringError,
    estimate_tokens,
    preview_prompts,
    validate_options,
)
from scoring.judge_options import check_repeat

logger = logging.getLogger(__name__)

ACTIVE = (Run.Status.QUEUED, Run.Status.RUNNING)
# Refresh only these so callers keep what they attached to the run (e.g. its project).
_STATE_FIELDS = ["status", "started_at", "finished_at", "error", "total"]
# Items whose estimate is computed exactly; the rest of the run is extrapolated.
_ESTIMATE_SAMPLE = 50
# The evals tasks (evalsite/evals/tasks.py), sent by name (evalsite/lib/tasks.py).
RUN_FANOUT_TASK = "evals.run_fanout"
RUN_DISPATCH_TASK = "evals.run_dispatch"
# The webhooks app's task for a run that just finished (run.finished, run.failed,
# compare.regression).
WEBHOOKS_RUN_EVENT_TASK = "webhooks.run_event"


def _judge_snapshot(scorer: ScorerConfig) -> dict[str, Any]:
    judge = scorer.judge
    if judge is None:
        return {}
    return {
        "id": judge.pk,
        "name": judge.name,
        "base_url": judge.base_url,
        "model": judge.model,
        "temperature": judge.temperature,
        "is_offline": judge.is_offline,
        # The price this run is charged at (exports' cost), however the connection's
        # price changes later; as text, the Decimal's exact digits (None: no price).
        "price_per_1k_input": _price(judge.price_per_1k_input),
        "price_per_1k_output": _price(judge.price_per_1k_output),
    }


def _price(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _check_run_inputs(
    *, project: Project, dataset: Dataset, scorers: list[ScorerConfig]
) -> None:
    errors: dict[str, str] = {}
    if dataset.project_id != project.pk:
        errors["dataset_id"] = "Not in this project."
    elif dataset.deleting:
        errors["dataset_id"] = "The dataset is being deleted."
    elif dataset.item_count == 0 and not dataset.items.exists():
        errors["dataset_id"] = "The dataset has no items."
    if not scorers:
        errors["scorer_ids"] = "Choose at least one scorer."
    for scorer in scorers:
        if scorer.project_id != project.pk:
            errors["scorer_ids"] = f"Scorer {scorer.pk} is not in this project."
        elif scorer.archived:
            errors["scorer_ids"] = (
                f"{scorer} is an old version; use its newest version."
            )
        elif KINDS[scorer.kind].needs_judge and scorer.judge_id is None:
            errors["scorer_ids"] = f"{scorer} has no judge connection."
        elif problem := _options_problem(scorer):
            # Saved before a range was checked (evals 0006 flags them): every result
            # would end in the same options error.
            errors["scorer_ids"] = (
                f"{scorer}'s saved options are out of range ({problem}): edit the "
                "scorer, then start the run."
            )
    if len({s.pk for s in scorers}) != len(scorers):
        errors["scorer_ids"] = "A scorer is listed twice."
    if not errors:
        # The run form says the same per scorer; the API and any other caller get it
        # here, before a run whose every result would end in "the item has no ...".
        missing = scorer_fields_missing(
            dataset=dataset, kinds={s.kind for s in scorers}
        )
        for scorer in scorers:
            if scorer.kind in missing:
                errors["scorer_ids"] = (
                    f"{scorer} ({KINDS[scorer.kind].label}) needs "
                    f"{' and '.join(missing[scorer.kind])}, which no item of "
                    f"{dataset} has."
                )
    if errors:
        first = next(iter(errors.items()))
        raise ApplicationError(f"{first[0]}: {first[1]}", field_errors=errors)


def _scorer_options(
    scorers: list[ScorerConfig],
    overrides: Mapping[int, Mapping[str, Any]] | None,
) -> dict[int, dict[str, Any]]:
    """Each scorer's options for the run: its own, or the validated ``overrides``."""
    out: dict[int, dict[str, Any]] = {}
    for scorer in scorers:
        if overrides is not None and scorer.pk in overrides:
            try:
                out[scorer.pk] = validate_options(
                    scorer.kind, dict(overrides[scorer.pk])
                )
            except ScoringError as exc:
                raise ApplicationError(
                    f"options: {exc}", field_errors={"options": str(exc)}
                ) from None
        else:
            out[scorer.pk] = scorer.options
        if KINDS[scorer.kind].needs_judge and scorer.judge is not None:
            try:
                check_repeat(scorer.kind, out[scorer.pk], scorer.judge.temperature)
            except ScoringError as exc:
                raise ApplicationError(
                    f"scorer_ids: {scorer}: {exc}",
                    field_errors={"scorer_ids": f"{scorer}: {exc}"},
                ) from None
    return out


def _options_problem(scorer: ScorerConfig) -> str:
    """Why the scorer's saved options fail today's checks, or ""."""
    try:
        validate_options(scorer.kind, scorer.options or {})
    except ScoringError as exc:
        return str(exc)
    return ""


def _insert_results(
    *,
    run: Run,
    run_scorer: RunScorer,
    dataset: Dataset,
    item_ids: Sequence[int] | None = None,
) -> int:
    """One pending result per item (of ``item_ids`` only, when given), in one
    INSERT … SELECT: a 100k-item dataset takes one statement instead of 100k round
    trips, so the run starts at once."""
    now = timezone.now()
    result_table = connection.ops.quote_name(Result._meta.db_table)
    item_table = connection.ops.quote_name(Item._meta.db_table)
    sql = (
        f"INSERT INTO {result_table} (run_id, item_id, run_scorer_id, status, error, "
        "attempts, claimed_by, reason, score_overridden, pass_overridden, reviewed, "
        "overridden, version, created_at, updated_at) "
        f"SELECT %s, i.id, %s, %s, '', 0, '', '', %s, %s, %s, %s, 0, %s, %s "
        f"FROM {item_table} i WHERE i.dataset_id = %s"
        + (
            f" AND i.id IN ({', '.join(['%s'] * len(item_ids))})"
            if item_ids is not None
            else ""
        )
        + " ORDER BY i.id"
    )
    extra: list[Any] = list(item_ids) if item_ids is not None else []
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                run.pk,
                run_scorer.pk,
                Result.Status.PENDING,
                False,
                False,
                False,
                False,
                now,
                now,
                dataset.pk,
                *extra,
            ],
        )
        inserted: int = cursor.rowcount
        return inserted


def run_start(
    *,
    project: Project,
    user: User | None,
    dataset: Dataset,
    scorers: list[ScorerConfig],
    name: str = "",
    enqueue: bool = True,
    purpose: str = Run.Purpose.RUN,
    rejudge_of: Run | None = None,
    item_ids: Sequence[int] | None = None,
    scorer_options: Mapping[int, Mapping[str, Any]] | None = None,
) -> Run:
    """Start a run of `scorers` over `dataset`.

    1. Snapshot each scorer config (options + judge settings) as a RunScorer, with
       its judge version (evals.judges.versions).
    2. Create every (item, scorer) result as pending, in bulk.
    3. After commit, enqueue the fan-out task (unless `enqueue` is False: the demo
       executes the results in-process).

    ``purpose`` "lab" or "audit" makes a run that no list of runs shows (judge lab
    replays, bias audits); ``item_ids`` limits it to those items of the dataset;
    ``scorer_options`` (scorer pk -> options) judges with other options than the
    scorer's saved ones (validated here; a lab candidate).
    """
    if purpose not in Run.Purpose.values:
        raise ApplicationError(f"Unknown run purpose {purpose!r}.")
    _check_run_inputs(project=project, dataset=dataset, scorers=scorers)
    text_check_storable(name, field="name")
    options_by_scorer = _scorer_options(scorers, scorer_options)
    if item_ids is not None:
        item_ids = sorted({int(i) for i in item_ids})
        if not item_ids:
            raise ApplicationError(
                "item_ids: Choose at least one item.",
                field_errors={"item_ids": "Choose at least one item."},
            )
    with transaction.atomic(durable=True):
        run = Run.objects.create(
            project=project,
            dataset=dataset,
            name=name.strip()[:200],
            purpose=purpose,
            rejudge_of=rejudge_of,
            created_by=user if user and user.is_authenticated else None,
        )
        total = 0
        for position, scorer in enumerate(scorers):
            run_scorer = RunScorer.objects.create(
                run=run,
                scorer=scorer,
                name=str(scorer),
                kind=scorer.kind,
                options=options_by_scorer[scorer.pk],
                judge=scorer.judge,
                judge_snapshot=_judge_snapshot(scorer),
                position=position,
            )
            judge_version_for(run_scorer, user=user)
            total += _insert_results(
                run=run, run_scorer=run_scorer, dataset=dataset, item_ids=item_ids
            )
        run.total = total
        run.save(update_fields=["total"])
        versions = {
            rs.name: rs.judge_version.label
            for rs in run.run_scorers.select_related("judge_version")
            if rs.judge_version is not None
        }
        _audit(
            run,
            user,
            "run.rejudge" if rejudge_of is not None else "run.start",
            (
                f"re-judged {_named(rejudge_of)} as {_named(run)} with "
                if rejudge_of is not None
                else f"started {_named(run)} on dataset “{dataset}” with "
            )
            + f"{', '.join(str(s) for s in scorers)} ({total} results)",
            after={
                "dataset_id": dataset.pk,
                "scorer_ids": [s.pk for s in scorers],
                "total": total,
                "purpose": purpose,
                "rejudge_of": rejudge_of.pk if rejudge_of is not None else None,
                "judge_versions": versions,
            },
        )
        if enqueue:
            task_send_on_commit(RUN_FANOUT_TASK, run.pk)
    logger.info("run %s started: %s results", run.pk, total)
    return run


# --------------------------------------------------------------------------- re-judge


def scorer_current(scorer: ScorerConfig) -> ScorerConfig:
    """The newest version of a scorer config (an edit after a run makes a new version
    and archives the old one)."""
    current = scorer
    seen = {current.pk}
    while True:
        newer = (
            ScorerConfig.objects.filter(parent=current)
            .select_related("judge")
            .order_by("-version", "-pk")
            .first()
        )
        if newer is None or newer.pk in seen:
            return current
        seen.add(newer.pk)
        current = newer


def run_rejudge(*, run: Run, user: User | None, enqueue: bool = True) -> Run:
    """Judge the run's items again, as a new run, with each scorer's current version
    (and so its current judge version): "<run> (re-judged)", linked to the run by
    ``rejudge_of``. The old run and its results are never touched."""
    if run.purpose != Run.Purpose.RUN:
        raise ApplicationError(
            "Only a run can be re-judged, not a lab replay or audit."
        )
    if not run.is_finished:
        raise ConflictError(
            "Wait until the run has finished, or cancel it, to re-judge it."
        )
    if run.deleting:
        raise ConflictError("This run is being deleted.")
    scorers: list[ScorerConfig] = []
    for run_scorer in run.run_scorers.select_related("scorer", "scorer__judge"):
        if run_scorer.scorer is None:
            raise ApplicationError(
                f"The scorer “{run_scorer.name}” was deleted: it cannot judge again.",
                field_errors={"scorer_ids": f"{run_scorer.name} was deleted."},
            )
        scorers.append(scorer_current(run_scorer.scorer))
    return run_start(
        project=run.project,
        user=user,
        dataset=run.dataset,
        scorers=scorers,
        name=f"{run} (re-judged)"[:200],
        rejudge_of=run,
        enqueue=enqueue,
    )


# --------------------------------------------------------------------------- preview


@dataclass
class ScorerPreview:
    scorer: ScorerConfig
    prompts: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: Decimal | None = None
    error: str = ""

    @property
    def is_offline(self) -> bool:
        return bool(self.scorer.judge and self.scorer.judge.is_offline)


@dataclass
class RunPreview:
    item_count: int
    scorers: list[ScorerPreview]

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.scorers)

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens for s in self.scorers)

    @property
    def completion_tokens(self) -> int:
        return sum(s.completion_tokens for s in self.scorers)

    @property
    def cost(self) -> Decimal | None:
        costs = [s.cost for s in self.scorers if s.cost is not None]
        return sum(costs, Decimal(0)) if costs else None

    @property
    def results(self) -> int:
        return self.item_count * len(self.scorers)


def run_preview(*, dataset: Dataset, scorers: list[ScorerConfig]) -> RunPreview:
    """Before spending money: the first item's first-step prompts per scorer, and the
    calls / tokens / cost for the whole run (exact over the first items, extrapolated)."""
    sample = list(dataset.items.order_by("index")[:_ESTIMATE_SAMPLE])
    count = dataset.items.count()
    previews = []
    for scorer in scorers:
        preview = ScorerPreview(scorer=scorer)
        previews.append(preview)
        if not sample:
            continue
        try:
            preview.prompts = preview_prompts(
                scorer.kind, sample[0].as_case(), scorer.options
            )
            totals = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
            for item in sample:
                est = estimate_tokens(scorer.kind, item.as_case(), scorer.options)
                for key in totals:
                    totals[key] += int(est.get(key, 0))
        except ScoringError as exc:
            preview.error = str(exc)
            continue
        factor = count / len(sample)
        preview.calls = math.ceil(totals["calls"] * factor)
        preview.prompt_tokens = math.ceil(totals["prompt_tokens"] * factor)
        preview.completion_tokens = math.ceil(totals["completion_tokens"] * factor)
        judge = scorer.judge
        if judge is not None and (
            judge.price_per_1k_input is not None
            or judge.price_per_1k_output is not None
        ):
            preview.cost = (judge.price_per_1k_input or Decimal(0)) * Decimal(
                preview.prompt_tokens
            ) / 1000 + (judge.price_per_1k_output or Decimal(0)) * Decimal(
                preview.completion_tokens
            ) / 1000
    return RunPreview(item_count=count, scorers=previews)


# --------------------------------------------------------------------------- control


def run_cancel(*, run: Run, user: User | None) -> Run:
    """Cancel: the run and its pending results become cancelled. Workers check the run
    before every judge request and drop work whose result is no longer pending."""
    with transaction.atomic(durable=True):
        updated = Run.objects.filter(pk=run.pk, status__in=ACTIVE).update(
            status=Run.Status.CANCELLED, finished_at=timezone.now()
        )
        if not updated:
            raise ConflictError("Only a queued or running run can be cancelled.")
        cancelled = Result.objects.filter(run=run, status=Result.Status.PENDING).update(
            status=Result.Status.CANCELLED, claimed_at=None, claimed_by=""
        )
        _audit(
            run,
            user,
            "run.cancel",
            f"cancelled {_named(run)} ({cancelled} results not judged)",
            before={"status": run.status},
            after={"status": Run.Status.CANCELLED, "cancelled": cancelled},
        )
    run.refresh_from_db(fields=_STATE_FIELDS)
    return run


def run_retry_failed(*, run: Run, user: User | None) -> int:
    """Put only the errored results back to pending (their failed calls are dropped)
    and re-queue them. Returns how many."""
    with transaction.atomic(durable=True):
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.status == Run.Status.CANCELLED:
            raise ConflictError("A cancelled run cannot be retried.")
        if locked.deleting:
            raise ConflictError("This run is being deleted.")
        failed = Result.objects.filter(run=locked, status=Result.Status.ERROR)
        ids = list(failed.values_list("pk", flat=True))
        if not ids:
            raise ApplicationError("This run has no failed results to retry.")
        JudgeCall.objects.filter(result_id__in=ids).delete()
        Result.objects.filter(pk__in=ids, status=Result.Status.ERROR).update(
            status=Result.Status.PENDING,
            error="",
            claimed_at=None,
            claimed_by="",
            updated_at=timezone.now(),
        )
        locked.status = Run.Status.RUNNING
        locked.finished_at = None
        locked.error = ""
        locked.save(update_fields=["status", "finished_at", "error"])
        _audit(
            locked,
            user,
            "run.retry",
            f"retried the {len(ids)} failed results of {_named(locked)}",
            after={"retried": len(ids)},
        )
        task_send_on_commit(RUN_FANOUT_TASK, locked.pk)
    run.refresh_from_db(fields=_STATE_FIELDS)
    return len(ids)


def run_delete(*, run: Run, user: User | None) -> None:
    """Delete a run that is not queued or running, with its results, and record it:
    the event keeps the run's id and name, so the log still says what was deleted.
    Not durable: the admin deletes inside its own transaction."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().filter(pk=run.pk).first()
        if locked is None:
            return  # already deleted
        if locked.status in ACTIVE:
            raise ConflictError("Cancel the run before deleting it.")
        _audit(
            locked,
            user,
            "run.delete",
            f"deleted {_named(locked)} ({locked.total} results)",
            before={
                "status": locked.status,
                "dataset_id": locked.dataset_id,
                "total": locked.total,
            },
        )
        locked.delete()


def _named(run: Run) -> str:
    return f"run “{run}” (#{run.pk})"


def _audit(
    run: Run, user: User | None, action: str, summary: str, **changes: Any
) -> None:
    """The project's audit event for a change to `run`, in the change's transaction."""
    who = (
        user.get_username() if user is not None and user.is_authenticated else "system"
    )
    audit_event(
        project=run.project,
        actor=user,
        action=action,
        summary=f"{who} {summary}",
        run=run,
        object_type="run",
        object_id=run.pk,
        object_label=str(run),
        **changes,
    )


def run_fanout(*, run_id: int) -> int:
    """Mark the run running and send its dispatch tasks (conf.dispatchers_per_run();
    each judges many results at once, see evals/engine/dispatch.py). Returns how many."""
    if not run_mark_running(run_id=run_id):
        return 0
    if not Result.objects.filter(run_id=run_id, status=Result.Status.PENDING).exists():
        run_finish_if_complete(run_id=run_id)
        return 0
    count = conf.dispatchers_per_run()
    for _ in range(count):
        task_send_dispatch(run_id)
    return count


def run_mark_running(*, run_id: int) -> bool:
    """A queued run becomes running (once); whether the run is running now."""
    Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
        status=Run.Status.RUNNING, started_at=timezone.now()
    )
    return Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).exists()


def task_send_dispatch(run_id: int) -> None:
    """Send one dispatch task of the run to the scoring queue."""
    task_send(RUN_DISPATCH_TASK, run_id, queue=CeleryQueue.SCORING)


def run_finish_if_complete(*, run_id: int) -> bool:
    """Finish the run when nothing is pending: done, or done_with_errors.

    Called after every result is written (after its commit), so the last writer always
    sees every other result; the conditional UPDATE makes the transition happen once.
    """
    if Result.objects.filter(run_id=run_id, status=Result.Status.PENDING).exists():
        return False
    errors = Result.objects.filter(run_id=run_id, status=Result.Status.ERROR).exists()
    finished = bool(
        Run.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=Run.Status.DONE_WITH_ERRORS if errors else Run.Status.DONE,
            finished_at=timezone.now(),
        )
    )
    if finished and Run.objects.filter(pk=run_id, purpose=Run.Purpose.RUN).exists():
        # Robust: a broker that is down must not fail the result that finished the run.
        # Lab replays and audits are nobody's run: no webhook hears of them.
        task_send_on_commit(WEBHOOKS_RUN_EVENT_TASK, run_id, robust=True)
    return finished


def run_recover(*, run_id: int, force: bool = False) -> int | None:
    """The watchdog tick of a running run: re-queue work lost with a dead worker.

    1. Take the tick (conditional UPDATE of monitor_at) so concurrent watchdogs of the
       same run do the work once per interval; None when another one just ticked.
    2. Results claimed by a worker whose lease expired (it died mid-judge): clear the
       claim and send a dispatcher to judge them again.
    3. When no result is claimed and nothing finished for two leases, the queued
       dispatch messages themselves were lost (e.g. the filesystem transport drops what
       a killed worker had fetched): send a dispatcher.
    An extra dispatcher is always safe: it judges only results it can claim, and stops
    when there are none. Returns the number of stale claims taken back.
    """
    now = timezone.now()
    interval = timedelta(seconds=conf.monitor_interval())
    lease = timedelta(seconds=conf.lease_seconds())
    tick = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING)
    if not force:
        tick = tick.filter(
            Q(monitor_at__isnull=True) | Q(monitor_at__lt=now - interval / 2)
        )
    if not tick.update(monitor_at=now):
        return None
    pending = Result.objects.filter(run_id=run_id, status=Result.Status.PENDING)
    stale = list(
        pending.filter(claimed_at__lt=now - lease).values_list("pk", flat=True)[:5000]
    )
    if stale:
        Result.objects.filter(pk__in=stale, claimed_at__lt=now - lease).update(
            claimed_at=None, claimed_by=""
        )
    lost = bool(stale)
    if not lost and not pending.filter(claimed_at__gte=now - lease).exists():
        run = Run.objects.get(pk=run_id)
        last = (
            Result.objects.filter(run_id=run_id)
            .exclude(status=Result.Status.PENDING)
            .aggregate(t=Max("updated_at"))["t"]
        )
        since = max(filter(None, [last, run.started_at, run.created_at]))
        lost = now - since > 2 * lease and pending.exists()
    if lost:
        task_send_dispatch(run_id)
        logger.warning(
            "run %s: %s results lost with a worker; sent a dispatcher",
            run_id,
            len(stale) or "unclaimed",
        )
    run_finish_if_complete(run_id=run_id)
    return len(stale)


def runs_active_ids() -> list[int]:
    return list(
        Run.objects.filter(status=Run.Status.RUNNING).values_list("pk", flat=True)
    )


def run_set_archived(*, run: Run, user: User | None, archived: bool) -> Run:
    """Archive (hide from the run lists and pickers) or unarchive a run, audited.
    A queued or running run stays in sight until it finishes or is cancelled."""
    with transaction.atomic(durable=True):
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.archived == archived:
            return locked
        if archived and locked.status in ACTIVE:
            raise ConflictError(
                "A queued or running run cannot be archived: cancel it or let it finish."
            )
        locked.archived = archived
        locked.save(update_fields=["archived"])
        verb = "archived" if archived else "unarchived"
        _audit(
            locked,
            user,
            "run.archive" if archived else "run.unarchive",
            f"{verb} {_named(locked)}",
            before={"archived": not archived},
            after={"archived": archived},
        )
    run.archived = archived
    return run
