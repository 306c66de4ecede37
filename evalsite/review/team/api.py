"""Review API: overlap answers, adjudication, and agreement between humans."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from ninja import Router, Status
from ninja.pagination import paginate

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.evals.models import Result
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.runs.selectors import result_get_for_user, run_get_for_user
from evalsite.review.models import QueueEntry, Review, ReviewQueue
from evalsite.review.queues.api import review_queue_get
from evalsite.review.selectors.blind import blind_result_ids
from evalsite.review.team.schemas import (
    AdjudicationEntryOut,
    AnswerIn,
    EntryReviewsOut,
    HumanAgreementOut,
)
from evalsite.review.team.selectors import (
    adjudication_entries,
    agreement_report,
    answer_target,
    answers_visible,
    entry_answers,
    queue_pass_agreement,
    review_state,
)
from evalsite.review.team.services import review_adjudicate, review_answer

router = Router(tags=["review"])


def _entry(queue: ReviewQueue, position: int) -> QueueEntry:
    entry = QueueEntry.objects.filter(queue=queue, position=position).first()
    if entry is None:
        raise Http404("No such queue entry.")
    return entry


def _aggregates(result: Result) -> list[dict[str, Any]]:
    return [
        a.as_dict()
        for a in run_aggregates(
            run_id=result.run_id, run_scorer_id=result.run_scorer_id
        )
    ]


def review_out(review: Review) -> dict[str, Any]:
    return {
        "id": review.pk,
        "kind": review.kind,
        "reviewer": review.reviewer.get_username() if review.reviewer else None,
        "passed": review.passed,
        "flips": review.flips,
        "score": review.score,
        "note": review.note,
        "guideline_version": review.guideline.version if review.guideline else None,
        "seconds": review.seconds,
        "created_at": review.created_at,
        "updated_at": review.updated_at,
    }


def entry_reviews_out(
    queue: ReviewQueue,
    entry: QueueEntry,
    user: Any,
    reviews: list[Review] | None = None,
) -> dict[str, Any]:
    """The entry's answers as the user may see them; `reviews` when the caller has
    them already (an answer's outcome), else read."""
    if reviews is None:
        reviews = entry_answers(queue=queue, result_id=entry.result_id)
    visible = answers_visible(entry=entry, answers=reviews, user=user)
    if visible and blind_result_ids(
        user=user,
        project_id=queue.project_id,
        result_ids=[entry.result_id],
        project=queue.project,
    ):
        # Answered here, but the result still waits for this user's answer in a
        # blind queue: the answers here would tell that queue's verdict too.
        visible = False
    shown = reviews if visible else [r for r in reviews if r.reviewer_id == user.pk]
    return {
        "queue_id": queue.pk,
        "position": entry.position,
        "result_id": entry.result_id,
        "state": entry.state,
        "answers": entry.answers,
        "overlap": queue.overlap,
        "final_rule": queue.final_rule,
        # The decision names the final answer, which gives the others' away.
        "decision": entry.decision if visible else {},
        "visible": visible,
        "reviews": [review_out(r) for r in shown],
        "queue_agreement": queue_pass_agreement(queue_id=queue.pk),
    }


@router.get("/queues/{queue_id}/entries/{position}/reviews", response=EntryReviewsOut)
def entry_reviews_api(
    request: AuthenticatedHttpRequest, queue_id: int, position: int
) -> dict[str, Any]:
    """The answers on one queue entry. Blind: until you have answered (or the entry
    is decided or waiting for adjudication) only your own answer is listed."""
    queue = review_queue_get(request=request, queue_id=queue_id)
    return entry_reviews_out(queue, _entry(queue, position), request.user)


@router.post(
    "/queues/{queue_id}/entries/{position}/reviews",
    response={201: EntryReviewsOut},
)
def entry_answer_api(
    request: AuthenticatedHttpRequest, queue_id: int, position: int, payload: AnswerIn
) -> Status[dict[str, Any]]:
    """Your answer on a result of an overlap queue (sending it again replaces it
    while the entry still takes answers). The last answer needed applies the queue's
    rule; the response carries the entry's state and the queue's agreement."""
    queue = review_queue_get(request=request, queue_id=queue_id, write=True)
    # The entry, its result's run and item and the guidelines in one read, checked
    # against the queue's project (whose membership review_queue_get checked).
    target = answer_target(queue=queue, position=position)
    if target is None:
        raise Http404("No such queue entry.")
    result = target.entry.result
    outcome = review_answer(
        target=target,
        queue=queue,
        result=result,
        user=request.user,
        passed=payload.passed,
        flips=payload.flips,
        score=payload.score,
        note=payload.note,
        seconds=payload.seconds,
    )
    body = entry_reviews_out(queue, outcome.entry, request.user, outcome.reviews)
    body["aggregates"] = _aggregates(result)
    return Status(201, body)


@router.post(
    "/queues/{queue_id}/entries/{position}/adjudication", response=EntryReviewsOut
)
def entry_adjudicate_api(
    request: AuthenticatedHttpRequest, queue_id: int, position: int, payload: AnswerIn
) -> dict[str, Any]:
    """An owner's or adjudicator's decision on a result whose reviewers disagreed."""
    queue = review_queue_get(request=request, queue_id=queue_id, write=True)
    entry = _entry(queue, position)
    result = result_get_for_user(user=request.user, pk=entry.result_id, write=True)
    entry = review_adjudicate(
        queue=queue,
        result=result,
        user=request.user,
        passed=payload.passed,
        flips=payload.flips,
        score=payload.score,
        note=payload.note,
    )
    body = entry_reviews_out(queue, entry, request.user)
    body["aggregates"] = _aggregates(result)
    return body


@router.get("/projects/{project_id}/adjudication", response=list[AdjudicationEntryOut])
@paginate(LimitOffsetPagination)
def adjudication_list_api(
    request: AuthenticatedHttpRequest, project_id: int
) -> QuerySet[QueueEntry]:
    """Results waiting for an adjudicator, across the project's queues."""
    project = project_get_for_user(user=request.user, pk=project_id)
    return adjudication_entries(project_id=project.pk)


@router.get("/queues/{queue_id}/agreement", response=HumanAgreementOut)
def queue_agreement_api(
    request: AuthenticatedHttpRequest, queue_id: int
) -> dict[str, Any]:
    """Agreement between the queue's reviewers, each figure with its items and a 95 %
    bootstrap interval, and per-reviewer figures."""
    queue = review_queue_get(request=request, queue_id=queue_id)
    report = agreement_report(queue=queue).as_dict()
    return {"scope": "queue", "scope_id": queue.pk, "name": queue.name, **report}


@router.get("/runs/{run_id}/agreement", response=list[HumanAgreementOut])
def run_agreement_api(
    request: AuthenticatedHttpRequest, run_id: int
) -> list[dict[str, Any]]:
    """Agreement between reviewers per scorer of a run, over every queue's answers."""
    run = run_get_for_user(user=request.user, pk=run_id)
    state = review_state(run_id=run.pk)
    return [
        {
            "scope": "scorer",
            "scope_id": rs.pk,
            "name": rs.name,
            **agreement_report(run_scorer=rs, state=state).as_dict(),
        }
        for rs in run.run_scorers.all()
    ]
