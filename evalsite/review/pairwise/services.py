"""Writes for pairwise review: a queue of matched items of two runs,
and each reviewer's preference on a pair, audited in the same transaction.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Q
from django.template.defaultfilters import pluralize

from evalsite.accounts.models import MAX_OVERLAP
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.datasets.matching.selectors import normalise_input
from evalsite.datasets.models import Item
from evalsite.evals.models import Run
from evalsite.lib.text import text_check_storable
from evalsite.review.guidelines.selectors import guideline_current
from evalsite.review.models import PairwiseItem, Preference, ReviewQueue
from evalsite.review.pairwise.selectors import MATCH_VALUE_MAX, pairwise_match
from evalsite.review.queues.services import QUEUE_MAX
from evalsite.review.timing import clean_seconds

REASON_MAX_LENGTH = 5000
SEED_MAX = 2**31 - 1
# Matched items read per query while looking for pairs whose outputs differ.
PAIR_CHUNK = 2000


def _clean_overlap(run: Run, overlap: int | None) -> int:
    if overlap is None:
        return int(run.project.default_overlap)
    if isinstance(overlap, bool) or not 1 <= overlap <= MAX_OVERLAP:
        raise ApplicationError(
            f"Reviewers per pair must be between 1 and {MAX_OVERLAP}.",
            field_errors={"overlap": f"between 1 and {MAX_OVERLAP}"},
        )
    return overlap


@transaction.atomic(durable=True)
def pairwise_queue_create(
    *,
    run_a: Run,
    run_b: Run,
    user: User,
    match: str = "input",
    key: str = "",
    name: str = "",
    overlap: int | None = None,
    seed: int | None = None,
) -> ReviewQueue:
    """A pairwise queue comparing run A's outputs with run B's on matched items.

    1. Check the runs: two different runs of one project.
    2. Match their items (selectors.pairwise.pairwise_match: a metadata key or
       identical input); pairs whose two outputs are the same text are left out (a
       reviewer could only answer "tie"), and counted.
    3. Draw, from `seed` (random when not given, and recorded), which output each
       pair shows on the left; create the queue and its pairs; audit it.
    """
    if run_a.pk == run_b.pk:
        raise ApplicationError(
            "Choose two different runs to compare.",
            field_errors={"run_b": "must differ from run A"},
        )
    if run_a.project_id != run_b.project_id:
        raise ApplicationError(
            "Both runs must belong to this project.",
            field_errors={"run_b": "not a run of this project"},
        )
    if run_a.deleting or run_b.deleting:
        raise ConflictError("One of the runs is being deleted.")
    text_check_storable(name, field="name")
    overlap = _clean_overlap(run_a, overlap)
    if seed is None:
        seed = random.SystemRandom().randrange(SEED_MAX)
    elif isinstance(seed, bool) or not 0 <= seed <= SEED_MAX:
        raise ApplicationError(
            f"The seed must be a whole number between 0 and {SEED_MAX}.",
            field_errors={"seed": f"between 0 and {SEED_MAX}"},
        )
    matched = pairwise_match(run_a=run_a, run_b=run_b, mode=match, key=key)
    pairs, identical = _differing_pairs(matched.pairs)
    if not pairs:
        reason = (
            "both runs score the same dataset, so their outputs are the same"
            if matched.same_dataset
            else f"{identical} matched item{pluralize(identical)} have the same "
            "output in both runs"
            if identical
            else "no item of run A matches an item of run B by "
            + ("identical input" if match == "input" else f"metadata key “{key}”")
        )
        raise ApplicationError(f"Nothing to compare: {reason}.")
    truncated = len(pairs) > QUEUE_MAX
    pairs = pairs[:QUEUE_MAX]
    rng = random.Random(seed)
    pairing = {
        "match": match,
        "key": key if match == "key" else "",
        "seed": seed,
        "matched": len(matched.pairs),
        "identical": identical,
        "unmatched_a": matched.unmatched_a,
        "unmatched_b": matched.unmatched_b,
        "no_key": matched.no_key,
    }
    queue = ReviewQueue.objects.create(
        project=run_a.project,
        run=run_a,
        run_b=run_b,
        kind=ReviewQueue.Kind.PAIRWISE,
        name=name.strip()
        or f"{run_a} vs {run_b} · {len(pairs)} pair{pluralize(len(pairs))}",
        overlap=overlap,
        pairing=pairing,
        size=len(pairs),
        truncated=truncated,
        created_by=user,
    )
    PairwiseItem.objects.bulk_create(
        PairwiseItem(
            queue=queue,
            position=position,
            item_a=item_a,
            item_b=item_b,
            a_left=rng.random() < 0.5,
            match_value=_match_value(item_a, match, key),
        )
        for position, (item_a, item_b) in enumerate(pairs, 1)
    )
    audit_event(
        project=run_a.project,
        actor=user,
        action="pairwise.create",
        summary=f"created pairwise queue “{queue.name}” ({len(pairs)} pair{pluralize(len(pairs))})",
        after={
            "queue_id": queue.pk,
            "run_a": run_a.pk,
            "run_b": run_b.pk,
            "overlap": overlap,
            "size": len(pairs),
            "truncated": truncated,
            **pairing,
        },
        run=run_a,
    )
    return queue


def _differing_pairs(
    matched: list[tuple[int, int]],
) -> tuple[list[tuple[Item, Item]], int]:
    """The matched pairs whose outputs differ, in order, up to QUEUE_MAX + 1 (the one
    past the limit says the queue is truncated), and how many of the pairs read on
    the way had the same output. Items are read a chunk at a time, without the
    context and reference the queue does not keep, so two 100k-item datasets are
    never in memory at once."""
    pairs: list[tuple[Item, Item]] = []
    identical = 0
    for start in range(0, len(matched), PAIR_CHUNK):
        chunk = matched[start : start + PAIR_CHUNK]
        items = Item.objects.only("id", "input", "output", "metadata").in_bulk(
            {i for pair in chunk for i in pair}
        )
        for id_a, id_b in chunk:
            item_a, item_b = items[id_a], items[id_b]
            if item_a.output == item_b.output:
                identical += 1
            else:
                pairs.append((item_a, item_b))
        if len(pairs) > QUEUE_MAX:
            break
    return pairs, identical


def _match_value(item: Item, match: str, key: str) -> str:
    if match == "key":
        value = (item.metadata or {}).get(key)
        text = "" if value is None else str(value)
    else:
        text = normalise_input(item.input)
    return text[:MATCH_VALUE_MAX]


@dataclass
class PreferenceOutcome:
    preference: Preference
    pair: PairwiseItem
    replaced: bool


def _clean_choice(
    pair: PairwiseItem, choice: str | None, side: str | None
) -> tuple[str, str]:
    """(choice, side) from either: the run preferred (a, b, tie) or the side clicked
    (left, right, tie), mapped through the pair's recorded order."""
    if (choice is None) == (side is None):
        raise ApplicationError(
            "Say which output is better: choice a, b or tie, or side left, right or tie.",
            field_errors={"choice": "give choice or side, not both"},
        )
    left, right = ("a", "b") if pair.a_left else ("b", "a")
    if side is not None:
        if side not in Preference.Side.values:
            raise ApplicationError(
                "The side must be left, right or tie.",
                field_errors={"side": "left, right or tie"},
            )
        picked = {"left": left, "right": right, "tie": "tie"}[side]
        return picked, side
    if choice not in Preference.Choice.values:
        raise ApplicationError(
            "The choice must be a, b or tie.", field_errors={"choice": "a, b or tie"}
        )
    shown = {left: "left", right: "right", "tie": "tie"}[choice]
    return str(choice), shown


def _recount(pair: PairwiseItem) -> None:
    counts = Preference.objects.filter(pair=pair).aggregate(
        n=Count("id"),
        a=Count("id", filter=Q(choice=Preference.Choice.A)),
        b=Count("id", filter=Q(choice=Preference.Choice.B)),
        tie=Count("id", filter=Q(choice=Preference.Choice.TIE)),
    )
    pair.answers = counts["n"]
    pair.answers_a = counts["a"]
    pair.answers_b = counts["b"]
    pair.answers_tie = counts["tie"]
    pair.save(update_fields=["answers", "answers_a", "answers_b", "answers_tie"])


def _describe(queue: ReviewQueue, choice: str) -> str:
    if choice == Preference.Choice.TIE:
        return "a tie"
    run = queue.run if choice == Preference.Choice.A else queue.run_b
    return f"run {choice.upper()} (“{run}”)"


@transaction.atomic(durable=True)
def pairwise_answer(
    *,
    queue: ReviewQueue,
    position: int,
    user: User,
    choice: str | None = None,
    side: str | None = None,
    reason: str = "",
    seconds: Any = None,
) -> PreferenceOutcome:
    """Record `user`'s preference on the pair at `position`.

    1. Lock the pair (concurrent answers count one at a time) and map the answer to
       the real run through the pair's recorded order.
    2. Refuse an answer past the pair's overlap, and a changed answer once the pair
       has every answer (the others' answers were visible by then) unless the queue
       takes one answer per pair.
    3. Store it (replacing the reviewer's earlier one), recount the pair, audit
       (see _audit_answer for what the log shows while the pair is blind).
    """
    if not queue.is_pairwise:
        raise ApplicationError("This queue is not a pairwise queue.")
    pair = (
        PairwiseItem.objects.select_for_update()
        .filter(queue=queue, position=position)
        .first()
    )
    if pair is None:
        raise ApplicationError(
            f"This queue has no pair {position}.", field_errors={"position": "unknown"}
        )
    picked, shown = _clean_choice(pair, choice, side)
    reason = (reason or "").strip()
    if len(reason) > REASON_MAX_LENGTH:
        raise ApplicationError(
            f"The reason is longer than {REASON_MAX_LENGTH} characters.",
            field_errors={"reason": f"at most {REASON_MAX_LENGTH} characters"},
        )
    text_check_storable(reason, field="reason")
    existing = Preference.objects.filter(pair=pair, reviewer=user).first()
    complete = pair.answers >= queue.overlap
    if existing is None and complete:
        raise ConflictError(
            f"This pair already has its {queue.overlap} answer{pluralize(queue.overlap)}."
        )
    if existing is not None and complete and queue.overlap > 1:
        raise ConflictError(
            "Every reviewer has answered this pair: answers can no longer change."
        )
    before = (
        {"choice": existing.choice, "side": existing.side, "reason": existing.reason}
        if existing
        else None
    )
    guideline = guideline_current(project_id=queue.project_id, queue_id=queue.pk)
    values = {
        "queue": queue,
        "choice": picked,
        "side": shown,
        "a_left": pair.a_left,
        "reason": reason,
        "guideline": guideline,
        "seconds": clean_seconds(seconds),
    }
    if existing is None:
        preference = Preference.objects.create(pair=pair, reviewer=user, **values)
    else:
        for name, value in values.items():
            setattr(existing, name, value)
        existing.save()
        preference = existing
    _recount(pair)
    _audit_answer(
        queue=queue,
        pair=pair,
        user=user,
        preference=preference,
        before=before,
        changed=existing is not None,
    )
    return PreferenceOutcome(
        preference=preference, pair=pair, replaced=existing is not None
    )


def _answer_json(preference: Preference) -> dict[str, Any]:
    return {
        "reviewer": preference.reviewer.get_username() if preference.reviewer else None,
        "choice": preference.choice,
        "side": preference.side,
        "a_left": preference.a_left,
        "reason": preference.reason,
        "guideline_version": preference.guideline.version
        if preference.guideline
        else None,
    }


def _audit_answer(
    *,
    queue: ReviewQueue,
    pair: PairwiseItem,
    user: User,
    preference: Preference,
    before: dict[str, Any] | None,
    changed: bool,
) -> None:
    """Audit an answer. Every member reads the run's audit log, so while the pair
    still takes answers the event says who answered, not what (the answers are blind
    till then, as the team review's are); the answer that completes the pair logs
    every answer on it, and an answer on a complete pair (one reviewer per pair) logs
    itself."""
    where = f"pair {pair.position} of “{queue.name}”"
    base = {
        "queue_id": queue.pk,
        "position": pair.position,
        "item_a": pair.item_a_id,
        "item_b": pair.item_b_id,
        "preference_id": preference.pk,
    }
    action = "pairwise.answer_change" if changed else "pairwise.answer"
    if pair.answers < queue.overlap:
        audit_event(
            project=queue.project,
            actor=user,
            action=action,
            summary=(
                f"{user.get_username()} answered on {where} "
                f"({pair.answers} of {queue.overlap})"
            ),
            after=base,
            run=queue.run,
        )
        return
    reason = preference.reason
    audit_event(
        project=queue.project,
        actor=user,
        action=action,
        summary=(
            f"{'changed the preference to' if changed else 'preferred'} "
            f"{_describe(queue, preference.choice)} on {where}"
        )
        + (f": {reason}" if reason else ""),
        # Before is shown only now: it is this reviewer's earlier answer, blind too.
        before=before,
        after={**base, **_answer_json(preference)},
        run=queue.run,
    )
    if queue.overlap > 1 and not changed:
        answers = list(
            Preference.objects.filter(pair=pair)
            .select_related("reviewer", "guideline")
            .order_by("created_at", "id")
        )
        counts = f"A {pair.answers_a}, B {pair.answers_b}, tie {pair.answers_tie}"
        audit_event(
            project=queue.project,
            actor=user,
            action="pairwise.pair_complete",
            summary=f"{where} has its {queue.overlap} answers: {counts}",
            after={**base, "answers": [_answer_json(a) for a in answers]},
            run=queue.run,
        )
