"""Overlap review: each reviewer's own answer, the queue's rule that turns answers
into a final verdict, and adjudication when the rule cannot decide.

A queue with overlap 1 keeps the single-review keys (accept, pass, fail, flip, undo
apply at once through the override services) and records each pass/fail answer here
too, for the per-reviewer figures. A queue with overlap n ≥ 2 stores answers only;
when the n-th arrives, its rule decides, and the decision is applied through the same
override services as a reviewer's own change, so aggregates, exports and the API use
the final verdict exactly as before (verdict overrides → compute_score).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from evalsite.accounts.models import ADJUDICATE_ROLES, Membership
from evalsite.accounts.services.audit import audit_event, audit_events_save
from evalsite.core.exceptions import (
    ApplicationError,
    ConflictError,
    PermissionDeniedError,
)
from evalsite.evals.models import Override, Result, RunScorer
from evalsite.evals.results.verdicts import (
    _copy_back,
    _judge_value,
    check_text,
    human_pass_locked,
    override_create_locked,
    override_revert,
    result_review_retract,
    result_reviewing,
    result_where,
    review_version_touch,
    score_value,
    scoring_options,
)
from evalsite.lib.tasks import task_send_on_commit
from evalsite.review.models import FinalRule, Guideline, QueueEntry, Review, ReviewQueue
from evalsite.review.team.selectors import (
    AnswerTarget,
    entry_answers,
    guideline_in_force,
)
from evalsite.review.timing import clean_seconds
from scoring import AnalysisError, apply_override, get_path

# The webhooks app's task that sends queue.completed when a queue is done.
WEBHOOKS_QUEUE_EVENT_TASK = "webhooks.queue_event"


@dataclass(frozen=True)
class Answer:
    """What one reviewer said about a result: pass/fail, the verdicts they set
    differently from the judge (path → value), and optionally a score."""

    passed: bool | None
    flips: dict[str, Any] = field(default_factory=dict)
    score: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "flips": self.flips, "score": self.score}


@dataclass(frozen=True)
class Decision:
    """The rule's outcome: the answer to apply, or None when it goes to adjudication,
    with the fields the reviewers disagreed on."""

    answer: Answer | None
    disagreements: tuple[str, ...] = ()


def _majority(values: Sequence[Any], *, strict_all: bool) -> tuple[bool, Any]:
    """(decided, value): with strict_all every value must be equal; otherwise one
    value must be held by more than half."""
    value, count = Counter(values).most_common(1)[0]
    if strict_all:
        return count == len(values), value
    return count * 2 > len(values), value


def decide_final(
    answers: Sequence[Answer], *, rule: str, judge_values: dict[str, Any]
) -> Decision:
    """The final answer under `rule`, field by field.

    A verdict a reviewer did not touch counts as the judge's value (`judge_values`,
    path → value). Pass/fail and every verdict need a strict majority ("majority") or
    all answers equal ("unanimous"); scores, being interval data, need more than half
    of the answers to give one ("majority", then the median is final) or all to give
    the same one, or none ("unanimous"). Otherwise nothing is decided and the result
    goes to adjudication. "single" takes the one answer there is.
    """
    if not answers:
        raise ValueError("decide_final needs at least one answer")
    if rule == FinalRule.SINGLE:
        if len(answers) != 1:
            raise ValueError("the single-review rule takes exactly one answer")
        return Decision(answers[0])
    unanimous = rule == FinalRule.UNANIMOUS
    disagreements = []
    decided, passed = _majority([a.passed for a in answers], strict_all=unanimous)
    if not decided:
        disagreements.append("pass/fail")
    flips = {}
    paths = sorted({p for a in answers for p in a.flips})
    for path in paths:
        values = [a.flips.get(path, judge_values.get(path)) for a in answers]
        decided, value = _majority(values, strict_all=unanimous)
        if not decided:
            disagreements.append(path)
        elif value != judge_values.get(path):
            flips[path] = value
    scores = [a.score for a in answers if a.score is not None]
    score = None
    if unanimous:
        if scores and (len(scores) != len(answers) or len(set(scores)) > 1):
            disagreements.append("score")
        elif scores:
            score = scores[0]
    elif len(scores) * 2 > len(answers):
        score = float(statistics.median(scores))
    if disagreements:
        return Decision(None, tuple(disagreements))
    return Decision(Answer(passed=passed, flips=flips, score=score))


def _put_review(
    reviews: list[Review],
    *,
    queue: ReviewQueue,
    result: Result,
    user: User,
    kind: str,
    answer: Answer,
    guideline: Guideline | None,
    note: str = "",
    seconds: Any = None,
) -> tuple[Review, bool]:
    """Create or replace `user`'s review of `kind` on the result, with the guidelines
    the queue page shows (`guideline_in_force`) as the version it was made under;
    `reviews` (the entry's,
    read under the caller's lock, in `entry_answers` order) is kept in step.

    The caller holds the lock every writer of these reviews takes first (the
    result's in an overlap queue, the entry's in a single-review one), so no one
    else writes them meanwhile: the list read once serves the lookup, the counts and
    the response, where update_or_create cost two savepoints and their releases, a
    locking read and a second read of the list (6 of the answer's 30 queries)."""
    values = {
        "passed": answer.passed,
        "flips": answer.flips,
        "score": answer.score,
        "note": note,
        "guideline": guideline,
        "seconds": clean_seconds(seconds),
    }
    mine = next(
        (r for r in reviews if r.reviewer_id == user.pk and r.kind == kind), None
    )
    if mine is not None:
        for name, value in values.items():
            setattr(mine, name, value)
        mine.save(update_fields=[*values, "updated_at"])
        return mine, False
    review = Review.objects.create(
        queue=queue, result=result, reviewer=user, kind=kind, **values
    )
    # The newest of its kind: after the others of that kind (ordered by kind first).
    at = sum(1 for r in reviews if r.kind <= kind)
    reviews.insert(at, review)
    return review, True


def _clean_answer(
    *,
    result: Result,
    run_scorer: RunScorer,
    passed: Any,
    flips: Any,
    score: Any,
) -> Answer:
    if passed is not None and not isinstance(passed, bool):
        raise ApplicationError(
            "Pass/fail must be true or false.",
            field_errors={"passed": "must be true, false or null"},
        )
    if not isinstance(flips, dict):
        raise ApplicationError(
            "Verdicts must be an object of path → value.",
            field_errors={"flips": "must be an object"},
        )
    if len(flips) > 200:
        raise ApplicationError(
            "Too many verdicts in one answer.", field_errors={"flips": "at most 200"}
        )
    analysis = result.analysis or {}
    clean: dict[str, Any] = {}
    for path, value in flips.items():
        check_text(path=str(path))
        try:
            updated = apply_override(run_scorer.kind, analysis, str(path), value)
        except AnalysisError as exc:
            raise ApplicationError(
                f"{path}: {exc}", field_errors={"flips": f"{path}: {exc}"}
            ) from exc
        new = get_path(updated, str(path))
        if new != _judge_value(analysis, str(path)):
            clean[str(path)] = new
    clean_score = None
    if score is not None:
        try:
            clean_score = score_value(score, scale=scoring_options(run_scorer)["scale"])
        except ApplicationError as exc:
            raise ApplicationError(
                exc.message, field_errors={"score": exc.message}
            ) from exc
    if passed is None and not clean and clean_score is None:
        raise ApplicationError(
            "Answer pass or fail (or set a verdict or a score).",
            field_errors={"passed": "required"},
        )
    return Answer(passed=passed, flips=clean, score=clean_score)


def _answer_of(review: Review) -> Answer:
    return Answer(passed=review.passed, flips=dict(review.flips), score=review.score)


def _answers_json(reviews: Sequence[Review]) -> list[dict[str, Any]]:
    return [
        {
            "reviewer": r.reviewer.get_username() if r.reviewer else None,
            **_answer_of(r).as_json(),
        }
        for r in reviews
    ]


def _judge_values(result: Result, answers: Sequence[Answer]) -> dict[str, Any]:
    analysis = result.analysis or {}
    return {p: _judge_value(analysis, p) for a in answers for p in a.flips}


def _describe_answer(answer: Answer) -> str:
    parts = []
    if answer.passed is not None:
        parts.append("pass" if answer.passed else "fail")
    if answer.flips:
        n = len(answer.flips)
        parts.append(f"{n} verdict{'s' if n != 1 else ''} changed")
    if answer.score is not None:
        parts.append(f"score {answer.score:g}")
    return ", ".join(parts) or "no change"


def _only_answers(reviews: Sequence[Review]) -> list[Review]:
    return [r for r in reviews if r.kind == Review.Kind.ANSWER]


def _lock_entry(queue: ReviewQueue, result: Result) -> QueueEntry:
    entry = (
        QueueEntry.objects.select_for_update()
        .filter(queue=queue, result_id=result.pk)
        .first()
    )
    if entry is None:
        raise ApplicationError(
            "This result is not in the queue.", field_errors={"result": "not queued"}
        )
    return entry


def _apply_final(
    *,
    locked: Result,
    run_scorer: RunScorer,
    user: User,
    answer: Answer,
    note: str,
) -> None:
    """Make `answer` the result's final verdict through the override services (the
    result is locked inside the caller's transaction)."""
    current = locked.final_analysis or locked.analysis or {}
    for path, value in sorted(answer.flips.items()):
        if _judge_value(current, path) != value:
            override_create_locked(
                result=locked,
                run_scorer=run_scorer,
                user=user,
                kind=Override.Kind.VERDICT,
                value=value,
                path=path,
                note=note,
            )
            current = locked.final_analysis or {}
    if answer.score is not None and answer.score != locked.final_score:
        override_create_locked(
            result=locked,
            run_scorer=run_scorer,
            user=user,
            kind=Override.Kind.SCORE,
            value=answer.score,
            path="",
            note=note,
        )
    passed = locked.final_passed if answer.passed is None else answer.passed
    human_pass_locked(
        locked,
        run_scorer,
        user,
        passed=passed,
        note=note,
        agrees_summary=f"{note}: {'pass' if passed else 'fail'} on {result_where(locked)}",
    )


@dataclass(frozen=True)
class AnswerOutcome:
    """What an answer did. `reviews` are the entry's reviews as committed, in
    `entry_answers` order (the response lists them without reading them again)."""

    review: Review
    entry: QueueEntry
    decided: bool
    adjudicate: bool
    reviews: list[Review] = field(default_factory=list)


def review_answer(
    *,
    queue: ReviewQueue,
    result: Result,
    user: User,
    passed: Any = None,
    flips: Any = None,
    score: Any = None,
    note: str = "",
    seconds: Any = None,
    target: AnswerTarget | None = None,
) -> AnswerOutcome:
    """Record (or replace) `user`'s answer on a result of an overlap queue; when it is
    the n-th answer, apply the queue's rule: the decided answer becomes the final
    verdict, or the result waits for an adjudicator.

    `result` is refreshed with what was committed. `target` (selectors.reviews.
    answer_target, read before the call) spares the reads of the entry, the
    guidelines and the result's run and item."""
    if queue.overlap < 2:
        raise ApplicationError(
            "This queue has one reviewer per result: use accept, pass, fail or the "
            "verdict keys.",
            field_errors={"queue": "overlap is 1"},
        )
    check_text(note=note)
    note = (note or "").strip()
    with (
        transaction.atomic(),
        result_reviewing(result, touched=True) as (locked, run_scorer),
    ):
        if locked.status != Result.Status.OK:
            raise ApplicationError(
                f"Only scored results can be reviewed; this one is {locked.status}.",
                field_errors={"result": f"status is {locked.status}"},
            )
        if target is not None and target.entry.state == QueueEntry.State.OPEN:
            if (target.entry.queue_id, target.entry.result_id) != (queue.pk, locked.pk):
                raise ValueError("the target is another entry")
            # Read before the result's lock, so possibly decided since: the write
            # at the end takes effect only while the entry still takes answers
            # (_save_open_entry), else all of this is rolled back. Every other
            # writer of an overlap entry holds the result's lock, so the answers
            # read below are current. The locking read it spares was 1 of the 18
            # queries the API answer had left, about 3 ms each on a busy machine.
            entry, guideline = target.entry, target.guideline
        else:
            entry = _lock_entry(queue, locked)
            guideline = guideline_in_force(
                project_id=queue.project_id, queue_id=queue.pk
            )
        if entry.state != QueueEntry.State.OPEN:
            raise _closed(entry.state)
        answer = _clean_answer(
            result=locked,
            run_scorer=run_scorer,
            passed=passed,
            flips=flips if flips is not None else {},
            score=score,
        )
        reviews = entry_answers(queue=queue, result_id=locked.pk)
        review, created = _put_review(
            reviews,
            queue=queue,
            result=locked,
            user=user,
            kind=Review.Kind.ANSWER,
            answer=answer,
            guideline=guideline,
            note=note,
            seconds=seconds,
        )
        answered = _only_answers(reviews)
        count_answers(entry, answered)
        events = [
            audit_event(
                project=queue.project,
                actor=user,
                action="review.answer" if created else "review.answer_change",
                # What they answered stays out of the log (which every member reads)
                # until the entry is decided or adjudicated: the answers are blind
                # till then.
                summary=(
                    f"{user.get_username()} answered on {result_where(locked)} in queue "
                    f"“{queue.name}” ({entry.answers} of {queue.overlap})"
                ),
                after={"queue_id": queue.pk, "review_id": review.pk},
                run=locked.run,
                result=locked,
                save=False,
            )
        ]
        decided = adjudicate = False
        final: tuple[Answer, str] | None = None
        if entry.answers >= queue.overlap:
            answers = [_answer_of(r) for r in answered]
            decision = decide_final(
                answers,
                rule=queue.final_rule,
                judge_values=_judge_values(locked, answers),
            )
            if decision.answer is not None:
                how = (
                    "unanimous"
                    if queue.final_rule == FinalRule.UNANIMOUS
                    else "majority"
                )
                final = (
                    decision.answer,
                    f"final verdict, {how} of {len(answers)} reviews",
                )
                _locked_decide(entry, decision.answer, how=queue.final_rule, user=None)
                decided = True
                events.append(
                    audit_event(
                        project=queue.project,
                        actor=user,
                        action="review.decide",
                        summary=(
                            f"final verdict on {result_where(locked)} by {how} of "
                            f"{len(answers)} reviews: "
                            f"{_describe_answer(decision.answer)}"
                        ),
                        before={"answers": _answers_json(answered)},
                        after={"queue_id": queue.pk, **decision.answer.as_json()},
                        run=locked.run,
                        result=locked,
                        save=False,
                    )
                )
            else:
                entry.state = QueueEntry.State.ADJUDICATE
                entry.decision = {"disagreements": list(decision.disagreements)}
                adjudicate = True
                events.append(
                    audit_event(
                        project=queue.project,
                        actor=user,
                        action="review.to_adjudication",
                        summary=(
                            f"{len(answers)} reviewers disagree on "
                            f"{', '.join(decision.disagreements)} of "
                            f"{result_where(locked)}: sent to adjudication"
                        ),
                        before={"answers": _answers_json(answered)},
                        run=locked.run,
                        result=locked,
                        save=False,
                    )
                )
        # The answer and what the rule made of it in one INSERT (one each were 2 of
        # the answer's 30 queries), logged before the overrides that apply it.
        audit_events_save(events)
        if final is not None:
            _apply_final(
                locked=locked,
                run_scorer=run_scorer,
                user=user,
                answer=final[0],
                note=final[1],
            )
            queue_reviewed(queue.pk)
        _save_open_entry(entry)
    _copy_back(result, locked)
    # The reviewer who decided is at hand: the card names them without a read.
    result.reviewed_by = locked.reviewed_by
    return AnswerOutcome(review, entry, decided, adjudicate, reviews)


def queue_reviewed(queue_id: int) -> None:
    """A result of the queue got its verdict: the webhooks app checks, after the
    commit, whether that completed the queue (queue.completed). Robust: a broker that
    is down must not fail the answer."""
    task_send_on_commit(WEBHOOKS_QUEUE_EVENT_TASK, queue_id, robust=True)


def _closed(state: str | None) -> ApplicationError:
    if state is None:
        return ApplicationError(
            "This result is not in the queue.", field_errors={"result": "not queued"}
        )
    return ConflictError(
        "This result is already "
        + (
            "decided."
            if state == QueueEntry.State.DECIDED
            else "waiting for an adjudicator."
        )
    )


def _save_open_entry(entry: QueueEntry) -> None:
    """Write an answer's counts and outcome to its entry, on condition that the
    entry still takes answers: an entry read before the result's lock may have been
    decided meanwhile, and then the answer is refused (ConflictError, rolling back
    the caller's transaction) as if the state had been read under the lock."""
    fields = ["answers", "answers_pass", "answers_fail"]
    if entry.state != QueueEntry.State.OPEN:
        fields += ["state", "decision", "decided_by", "decided_at"]
    written = QueueEntry.objects.filter(
        pk=entry.pk, state=QueueEntry.State.OPEN
    ).update(**{name: getattr(entry, name) for name in fields})
    if not written:
        raise _closed(
            QueueEntry.objects.filter(pk=entry.pk)
            .values_list("state", flat=True)
            .first()
        )


def _locked_decide(
    entry: QueueEntry, answer: Answer, *, how: str, user: User | None
) -> None:
    entry.state = QueueEntry.State.DECIDED
    entry.decision = {**answer.as_json(), "how": how}
    entry.decided_by = user
    entry.decided_at = timezone.now()


def review_adjudicate(
    *,
    queue: ReviewQueue,
    result: Result,
    user: User,
    passed: Any = None,
    flips: Any = None,
    score: Any = None,
    note: str = "",
) -> QueueEntry:
    """An adjudicator's decision on a result whose reviewers disagreed: recorded as
    their own review, applied as the final verdict, every answer kept in the audit."""
    may_adjudicate = Membership.objects.filter(
        project_id=queue.project_id, user=user, role__in=ADJUDICATE_ROLES
    ).exists()
    if not may_adjudicate:
        raise PermissionDeniedError(
            "Only owners and adjudicators decide disagreements."
        )
    check_text(note=note)
    note = (note or "").strip()
    with (
        transaction.atomic(),
        result_reviewing(result, touched=True) as (locked, run_scorer),
    ):
        entry = _lock_entry(queue, locked)
        if entry.state != QueueEntry.State.ADJUDICATE:
            raise ConflictError(
                "This result does not wait for adjudication"
                + (" (already decided)." if entry.state == entry.State.DECIDED else ".")
            )
        answer = _clean_answer(
            result=locked,
            run_scorer=run_scorer,
            passed=passed,
            flips=flips if flips is not None else {},
            score=score,
        )
        reviews = entry_answers(queue=queue, result_id=locked.pk)
        answered = _only_answers(reviews)
        _put_review(
            reviews,
            queue=queue,
            result=locked,
            user=user,
            kind=Review.Kind.ADJUDICATION,
            answer=answer,
            guideline=guideline_in_force(
                project_id=queue.project_id, queue_id=queue.pk
            ),
            note=note,
        )
        _apply_final(
            locked=locked,
            run_scorer=run_scorer,
            user=user,
            answer=answer,
            note=f"adjudicated by {user.get_username()}"
            + (f" ({note})" if note else ""),
        )
        _locked_decide(entry, answer, how="adjudicated", user=user)
        entry.save(update_fields=["state", "decision", "decided_by", "decided_at"])
        queue_reviewed(queue.pk)
        audit_event(
            project=queue.project,
            actor=user,
            action="review.adjudicate",
            summary=(
                f"{user.get_username()} adjudicated {result_where(locked)}: "
                f"{_describe_answer(answer)}"
            ),
            before={"answers": _answers_json(answered)},
            after={"queue_id": queue.pk, **answer.as_json()},
            run=locked.run,
            result=locked,
        )
    _copy_back(result, locked)
    return entry


def review_record_single(
    *, queue: ReviewQueue, result: Result, user: User, seconds: Any = None
) -> None:
    """In a single-review queue, keep the reviewer's pass/fail as their answer too
    (after the key was applied), for the per-reviewer figures."""
    with transaction.atomic():
        # The answer is read by the agreement figures, cached by the version. Bumped
        # before the entry is locked: an undo takes the version, then the entries.
        review_version_touch(run_scorer=result.run_scorer)
        entry = _lock_entry(queue, result)
        reviews = entry_answers(queue=queue, result_id=result.pk)
        _put_review(
            reviews,
            queue=queue,
            result=result,
            user=user,
            kind=Review.Kind.ANSWER,
            answer=Answer(passed=result.human_passed),
            guideline=guideline_in_force(
                project_id=queue.project_id, queue_id=queue.pk
            ),
            seconds=seconds,
        )
        count_answers(entry, _only_answers(reviews))
        entry.save(update_fields=["answers", "answers_pass", "answers_fail"])
        queue_reviewed(queue.pk)


# Undo through the verdict, with the single-review queue answers following it: every
# page and endpoint undoes through these two, never through evals' own.


def review_override_revert(
    *, override: Override, user: User, expected_version: int | None = None
) -> Result:
    """evals' override_revert, and the single-review answers it undoes follow it, in
    one transaction (the result stays locked until it commits)."""
    with transaction.atomic():
        locked = override_revert(
            override=override, user=user, expected_version=expected_version
        )
        _single_answers_follow(locked, undone=override)
    return locked


def review_retract(
    *, result: Result, user: User, expected_version: int | None = None
) -> Result:
    """evals' result_review_retract, and the single-review answers it recorded are
    retracted with it, in one transaction."""
    with transaction.atomic():
        locked = result_review_retract(
            result=result, user=user, expected_version=expected_version
        )
        _single_answers_follow(locked)
    return locked


def _single_answers_follow(locked: Result, *, undone: Override | None = None) -> None:
    """After an undo on a locked result, keep the answers single-review queues
    recorded for it true (the export's answer columns, the entries' counts and the
    agreement figures read them):

    - the result is no longer reviewed: every such answer is retracted;
    - a pass/fail answer (a pass override) was undone: its author's answer is
      retracted, or, when the review state that came back is that author's own
      earlier answer, set back to it.

    Overlap queues keep their answers: an undo there is not a retraction."""
    answers = Review.objects.filter(
        result=locked, kind=Review.Kind.ANSWER, queue__overlap=1
    )
    if locked.reviewed:
        if undone is None or undone.user_id is None:
            return
        answers = answers.filter(reviewer_id=undone.user_id)
        if locked.reviewed_by_id == undone.user_id and locked.human_passed is not None:
            answers = answers.exclude(passed=locked.human_passed)
            queue_ids = list(answers.values_list("queue_id", flat=True))
            if queue_ids:
                review_version_touch(run_scorer=locked.run_scorer)
            answers.update(passed=locked.human_passed, updated_at=timezone.now())
            _recount_entries(locked, queue_ids)
            return
        if undone.kind != Override.Kind.PASS:
            return
        answers = answers.filter(passed=undone.new_value)
    queue_ids = list(answers.values_list("queue_id", flat=True))
    if queue_ids:
        review_version_touch(run_scorer=locked.run_scorer)
        answers.delete()
        _recount_entries(locked, queue_ids)


def count_answers(entry: QueueEntry, answers: Sequence[Review]) -> None:
    """An entry's answer counts (all, pass, fail) from its answers."""
    entry.answers = len(answers)
    entry.answers_pass = sum(r.passed is True for r in answers)
    entry.answers_fail = sum(r.passed is False for r in answers)


def _recount_entries(locked: Result, queue_ids: list[int]) -> None:
    """The answer counts of the result's entries in these queues, from their answers."""
    for entry in QueueEntry.objects.select_for_update().filter(
        result=locked, queue_id__in=queue_ids
    ):
        left = Review.objects.filter(
            queue_id=entry.queue_id, result=locked, kind=Review.Kind.ANSWER
        )
        count_answers(entry, list(left))
        entry.save(update_fields=["answers", "answers_pass", "answers_fail"])


def review_answer_withdraw(
    *, queue: ReviewQueue, result: Result, user: User
) -> QueueEntry:
    """Withdraw `user`'s answer on a result of an overlap queue while the result
    still takes answers (key u, also after the card moved on): the result waits for
    them again. Once every answer is in (decided, or sent to adjudication) the
    answers were seen and the rule applied, so the answer stays."""
    if queue.overlap < 2:
        raise ApplicationError(
            "This queue has one reviewer per result: undo the answer instead.",
            field_errors={"queue": "overlap is 1"},
        )
    with (
        transaction.atomic(),
        result_reviewing(result, touched=True) as (locked, _),
    ):
        entry = _lock_entry(queue, locked)
        if entry.state != QueueEntry.State.OPEN:
            raise _closed(entry.state)
        mine = Review.objects.filter(
            queue=queue, result=locked, reviewer=user, kind=Review.Kind.ANSWER
        ).first()
        if mine is None:
            raise ConflictError("You have no answer on this result to withdraw.")
        review_id = mine.pk
        mine.delete()
        count_answers(
            entry, _only_answers(entry_answers(queue=queue, result_id=locked.pk))
        )
        entry.save(update_fields=["answers", "answers_pass", "answers_fail"])
        audit_event(
            project=queue.project,
            actor=user,
            action="review.answer_withdraw",
            summary=(
                f"{user.get_username()} withdrew their answer on "
                f"{result_where(locked)} in queue “{queue.name}” "
                f"({entry.answers} of {queue.overlap} left)"
            ),
            before={"queue_id": queue.pk, "review_id": review_id},
            run=locked.run,
            result=locked,
        )
    return entry
