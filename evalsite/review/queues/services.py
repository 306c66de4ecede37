"""Writes for review queues, assignments and the queue's review keys.

Overrides, accepts and undo go through the override services; this module only
decides *which* override a queue key means, and audits its own changes with
`audit_event` in the same transaction.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.template.defaultfilters import pluralize
from django.utils import timezone

from evalsite.accounts.models import MAX_OVERLAP, Role
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.evals.models import Override, Result, Run
from evalsite.evals.results.batch import results_assign
from evalsite.evals.results.verdicts import (
    override_create,
)
from evalsite.lib.text import text_check_storable
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import results_filter
from evalsite.review.models import (
    FinalRule,
    PairwiseItem,
    QueueEntry,
    QueueFlag,
    ReviewQueue,
)
from evalsite.review.queues.selectors import flip_fields, stratified_sample_size
from evalsite.review.team.services import review_override_revert, review_retract

# A queue is a unit of human work; past this many results people build a narrower
# one (or a stratified sample). It also bounds the per-result audit events written.
QUEUE_MAX = 5000

# The explorer's "Review failing cases": a FILTERS queue of the final fails, unless the
# query already names a final verdict.
SOURCE_FAILING = "failing"
# A FILTERS queue of the results whose item holds instructions aimed at the judge.
SOURCE_FLAGGED = "flagged"


def _default_name(source: str, run: Run, count: int) -> str:
    label = dict(ReviewQueue.Source.choices).get(source, "Queue")
    return f"{label} · {run} · {count} result{pluralize(count)}"


def _clean_overlap(
    run: Run, overlap: int | None, final_rule: str | None
) -> tuple[int, str]:
    """How many reviewers answer each result (default: the project's) and the rule
    that makes their answers final: one reviewer means the single review; more need
    majority or unanimous-or-adjudicate (default)."""
    if overlap is None:
        overlap = run.project.default_overlap
    if isinstance(overlap, bool) or not 1 <= overlap <= MAX_OVERLAP:
        raise ApplicationError(
            f"Reviewers per result must be between 1 and {MAX_OVERLAP}.",
            field_errors={"overlap": f"between 1 and {MAX_OVERLAP}"},
        )
    if overlap == 1:
        if final_rule not in (None, "", FinalRule.SINGLE):
            raise ApplicationError(
                "With one reviewer per result the final verdict is the single review.",
                field_errors={"final_rule": "must be 'single' when overlap is 1"},
            )
        return 1, FinalRule.SINGLE
    if final_rule in (None, ""):
        return overlap, FinalRule.UNANIMOUS
    if final_rule not in (FinalRule.MAJORITY, FinalRule.UNANIMOUS):
        raise ApplicationError(
            "With several reviewers per result the rule is majority or "
            "unanimous-or-adjudicate.",
            field_errors={"final_rule": "must be 'majority' or 'unanimous'"},
        )
    return overlap, final_rule


@transaction.atomic(durable=True)
def queue_create(
    *,
    run: Run,
    user: User,
    query: ResultQuery,
    source: str = ReviewQueue.Source.FILTERS,
    name: str = "",
    blind: bool = False,
    pass_share: float | None = None,
    seed: int = 0,
    assign_round_robin: bool = False,
    overlap: int | None = None,
    final_rule: str | None = None,
    result_ids: Collection[int] | None = None,
) -> ReviewQueue:
    """Freeze the results matching `query` into an ordered queue.

    1. Apply the source's rule: "failing" is a FILTERS queue of final fails (unless
       the query names a final verdict); "disagreement" adds the disagreement filter;
       "stratified" keeps every ok result the judge failed plus a seeded sample of
       `pass_share` (0–1] of those it passed, shuffled with the same seed so the order
       does not give the stratum away.
    2. Create the queue and its entries (positions 1..n), audit it.
    3. Optionally assign the entries round-robin to the project's reviewers.

    `result_ids` (each checked to be the run's: explorer.results_selected) narrows a
    FILTERS queue to those results: the explorer's "add the selected to a queue".
    """
    if run.deleting:
        raise ConflictError("This run is being deleted.")
    text_check_storable(name, field="name")
    overlap, final_rule = _clean_overlap(run, overlap, final_rule)
    if source == SOURCE_FAILING:
        source = ReviewQueue.Source.FILTERS
        if query.passed is None:
            query = query.model_copy(update={"passed": False})
    if source == ReviewQueue.Source.DISAGREEMENT:
        query = query.model_copy(update={"disagree": True})
    default_name = ""
    if source == SOURCE_FLAGGED:
        source = ReviewQueue.Source.FILTERS
        query = query.model_copy(update={"judge_instructions": True})
        default_name = "Instructions aimed at the judge"
    stratified: dict[str, Any] = {}
    strata: dict[int, str] = {}
    truncated = False
    if source == ReviewQueue.Source.STRATIFIED:
        if pass_share is None or not 0 < pass_share <= 1:
            raise ApplicationError(
                "The share of passing results must be between 0 and 100 %.",
                field_errors={"pass_share": "Must be between 0 and 100 %."},
            )
        query = query.model_copy(
            update={"judge_passed": None, "status": Result.Status.OK, "sort": "item"}
        )
        qs = results_filter(run=run, query=query, user=user)
        fail_ids = list(qs.filter(judge_passed=False).values_list("id", flat=True))
        pass_ids = list(qs.filter(judge_passed=True).values_list("id", flat=True))
        rng = random.Random(seed)
        if len(fail_ids) > QUEUE_MAX:
            fail_ids = rng.sample(fail_ids, QUEUE_MAX)
            truncated = True
        k = stratified_sample_size(population=len(pass_ids), share=pass_share)
        sampled_pass = rng.sample(pass_ids, k)
        ids = fail_ids + sampled_pass
        strata = dict.fromkeys(fail_ids, QueueEntry.Stratum.FAIL)
        strata.update(dict.fromkeys(sampled_pass, QueueEntry.Stratum.PASS))
        rng.shuffle(ids)
        population = {
            "fail": qs.filter(judge_passed=False).count(),
            "pass": len(pass_ids),
        }
        stratified = {
            "pass_share": pass_share,
            "seed": seed,
            "population": population,
            "sampled": {"fail": len(fail_ids), "pass": len(sampled_pass)},
        }
    else:
        matching = results_filter(run=run, query=query, user=user)
        if result_ids is not None:
            matching = matching.filter(pk__in=result_ids)
        ids = list(matching.values_list("id", flat=True)[: QUEUE_MAX + 1])
        truncated = len(ids) > QUEUE_MAX
        ids = ids[:QUEUE_MAX]
    if not ids:
        if query.judge_instructions:
            raise ApplicationError(
                "No result of these filters has instructions aimed at the judge: "
                "nothing to review."
            )
        raise ApplicationError("No results match these filters: nothing to review.")
    queue = ReviewQueue.objects.create(
        project=run.project,
        run=run,
        name=name.strip()
        or (
            f"{default_name} · {run} · {len(ids)} result{pluralize(len(ids))}"
            if default_name
            else _default_name(source, run, len(ids))
        ),
        source=source,
        filters=query.to_json(),
        blind=blind,
        overlap=overlap,
        final_rule=final_rule,
        stratified=stratified,
        size=len(ids),
        truncated=truncated,
        created_by=user,
    )
    QueueEntry.objects.bulk_create(
        QueueEntry(
            queue=queue, result_id=rid, position=pos, stratum=strata.get(rid, "")
        )
        for pos, rid in enumerate(ids, 1)
    )
    audit_event(
        project=run.project,
        actor=user,
        action="queue.create",
        summary=f"created queue “{queue.name}” ({len(ids)} result{pluralize(len(ids))})",
        after={
            "queue_id": queue.pk,
            "source": source,
            "filters": queue.filters,
            "blind": blind,
            "overlap": overlap,
            "final_rule": final_rule,
            "stratified": stratified or None,
            "size": len(ids),
        },
        run=run,
    )
    if assign_round_robin:
        _assign_round_robin(queue=queue, user=user)
    return queue


def project_reviewers(*, project_id: int) -> list[User]:
    """Who gets round-robin work: members with the reviewer role, else every owner."""
    user_model = get_user_model()
    for roles in ([Role.REVIEWER], [Role.OWNER]):
        users = list(
            user_model.objects.filter(
                memberships__project_id=project_id, memberships__role__in=roles
            ).order_by("username", "id")
        )
        if users:
            return users
    return []


def _assign_round_robin(*, queue: ReviewQueue, user: User) -> dict[str, int]:
    reviewers = project_reviewers(project_id=queue.project_id)
    if not reviewers:
        raise ApplicationError("This project has no reviewers to assign to.")
    entries = list(
        QueueEntry.objects.filter(queue=queue)
        .order_by("position")
        .values_list("result_id", "result__assignee_id", "result__assignee__username")
    )
    counts: dict[str, int] = {}
    now = timezone.now()
    for offset, reviewer in enumerate(reviewers):
        share = entries[offset :: len(reviewers)]
        if not share:
            continue
        # One UPDATE per reviewer; it bumps the rows' versions.
        results_assign(
            result_ids=[rid for rid, _, _ in share], assignee=reviewer, now=now
        )
        for rid, before_id, before_name in share:
            if before_id == reviewer.pk:
                continue
            audit_event(
                project=queue.project,
                actor=user,
                action="result.assign",
                summary=f"assigned to {reviewer.get_username()} (queue “{queue.name}”)",
                before={"assignee": before_name},
                after={"assignee": reviewer.get_username(), "queue_id": queue.pk},
                run=queue.run,
                result=Result(pk=rid, run_id=queue.run_id),
            )
        counts[reviewer.get_username()] = len(share)
    return counts


@transaction.atomic(durable=True)
def queue_assign_round_robin(*, queue: ReviewQueue, user: User) -> dict[str, int]:
    """Assign every entry of the queue to the project's reviewers in turn (audited)."""
    return _assign_round_robin(queue=queue, user=user)


def result_flip_field(
    *,
    result: Result,
    user: User,
    number: int,
    note: str = "",
    expected_version: int | None = None,
) -> Override:
    """Key 1–9: flip the `number`th verdict of the result's final analysis (numbered
    like the item page's analysis rows; see selectors.queues.flip_fields)."""
    fields = flip_fields(
        kind=result.run_scorer.kind,
        analysis=result.final_analysis or result.analysis,
        limit=max(number, 1),
    )
    if not 1 <= number <= len(fields):
        raise ApplicationError(
            f"There is no verdict {number} to flip (this result has {len(fields)}).",
            field_errors={"n": f"Must be between 1 and {len(fields)}."},
        )
    field = fields[number - 1]
    return override_create(
        result=result,
        user=user,
        kind=Override.Kind.VERDICT,
        value=field.new_value,
        path=field.path,
        note=note,
        expected_version=expected_version,
    )


def result_undo_last(
    *, result: Result, user: User, expected_version: int | None = None
) -> Result:
    """Key u: undo the user's own last change on the result, never another
    reviewer's (one they may not have seen): their newest active override, or, with
    none, the answer by which they reviewed it (an accept, or a pass/fail that agreed
    with the verdict), so no answer outlives its undo."""
    override = (
        Override.objects.filter(result=result, reverted_at__isnull=True, user=user)
        .order_by("-created_at", "-id")
        .first()
    )
    if override is not None:
        return review_override_revert(
            override=override, user=user, expected_version=expected_version
        )
    others = Override.objects.filter(result=result, reverted_at__isnull=True).exists()
    if result.reviewed and result.reviewed_by_id == user.pk and not others:
        return review_retract(
            result=result, user=user, expected_version=expected_version
        )
    raise ConflictError(
        "Nothing of yours to undo on this result"
        + (
            " (the changes on it are another reviewer's)."
            if others or result.reviewed
            else "."
        )
    )


def queue_set_archived(
    *, queue: ReviewQueue, user: User | None, archived: bool
) -> ReviewQueue:
    """Close (archive: hidden from the queue lists and the reviewers' counts) or
    reopen a queue, audited. A closed queue no longer keeps its runs from deletion;
    its answers stay applied."""
    with transaction.atomic(durable=True):
        locked = ReviewQueue.objects.select_for_update().get(pk=queue.pk)
        if locked.archived != archived:
            locked.archived = archived
            locked.save(update_fields=["archived"])
            who = user.get_username() if user is not None else "system"
            verb = "archived" if archived else "unarchived"
            audit_event(
                project=queue.project,
                actor=user,
                action="queue.archive" if archived else "queue.unarchive",
                summary=f"{who} {verb} review queue “{locked.name}”",
                run=locked.run,
                object_type="queue",
                object_id=locked.pk,
                object_label=locked.name,
                before={"archived": not archived},
                after={"archived": archived},
            )
    queue.archived = archived
    return queue


FLAG_REASON_MAX = 2000


def queue_item_flag(
    *, queue: ReviewQueue, user: User, position: int, reason: str
) -> QueueFlag:
    """Flag the item at `position` of the queue (its result's entry, or its pair in
    a pairwise queue) with a reason: it leaves every reviewer's waiting count and
    goes on the project's flagged list until an owner resolves it. Audited."""
    reason = reason.strip()
    if not reason:
        raise ApplicationError(
            "Say why you flag this item.", field_errors={"reason": "Required."}
        )
    if len(reason) > FLAG_REASON_MAX:
        raise ApplicationError(
            f"The reason is too long (at most {FLAG_REASON_MAX} characters).",
            field_errors={"reason": f"At most {FLAG_REASON_MAX} characters."},
        )
    text_check_storable(reason, field="reason")
    entry: QueueEntry | None = None
    pair: PairwiseItem | None = None
    if queue.is_pairwise:
        pair = PairwiseItem.objects.filter(queue=queue, position=position).first()
    else:
        entry = (
            QueueEntry.objects.select_related("result__item")
            .filter(queue=queue, position=position)
            .first()
        )
    if entry is None and pair is None:
        raise ApplicationError(f"The queue has no item {position}.")
    label = f"item {position} of queue “{queue.name}”"
    try:
        with transaction.atomic(durable=True):
            flag = QueueFlag.objects.create(
                project_id=queue.project_id,
                queue=queue,
                entry=entry,
                pair=pair,
                reason=reason,
                flagged_by=user,
            )
            audit_event(
                project=queue.project,
                actor=user,
                action="queue.flag",
                summary=f"flagged {label}: {reason}",
                after={"reason": reason, "position": position},
                run=queue.run,
                result=entry.result if entry is not None else None,
                object_type="queue",
                object_id=queue.pk,
                object_label=queue.name,
            )
    except IntegrityError:
        raise ConflictError(
            f"{label[0].upper()}{label[1:]} is already flagged; an owner resolves it."
        ) from None
    return flag


def queue_flag_resolve(*, flag: QueueFlag, user: User, note: str = "") -> QueueFlag:
    """Resolve (unflag) an open flag: the item waits for its reviewers again. The
    row is kept, with who resolved it and when, so the list keeps its history."""
    note = note.strip()[:FLAG_REASON_MAX]
    text_check_storable(note, field="note")
    with transaction.atomic(durable=True):
        locked = (
            QueueFlag.objects.select_for_update(of=("self",))
            .select_related("queue__run", "entry__result", "pair")
            .get(pk=flag.pk)
        )
        if locked.resolved_at is not None:
            raise ConflictError("This flag is already resolved.")
        locked.resolved_at = timezone.now()
        locked.resolved_by = user
        locked.resolution = note
        locked.save(update_fields=["resolved_at", "resolved_by", "resolution"])
        audit_event(
            project=flag.project,
            actor=user,
            action="queue.unflag",
            summary=f"resolved the flag on item {locked.position} of queue "
            f"“{locked.queue.name}”" + (f": {note}" if note else ""),
            before={"reason": locked.reason},
            after={"resolution": note},
            run=locked.queue.run,
            result=locked.entry.result if locked.entry is not None else None,
            object_type="queue",
            object_id=locked.queue_id,
            object_label=locked.queue.name,
        )
    return locked
