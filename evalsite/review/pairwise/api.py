"""Review API: pairwise review. A queue from two runs' matched items,
each reviewer's preference (A, B or tie) on a pair, win rates with Wilson intervals and
agreement between reviewers on their preferences.

Schemas live here: they serve these endpoints only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet
from django.http import Http404
from django.urls import reverse
from ninja import Field, Router, Schema, Status
from ninja.pagination import paginate
from pydantic import ConfigDict

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.datasets.matching.selectors import KEY_MAX_LENGTH
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.review.models import PairwiseItem, Preference, ReviewQueue
from evalsite.review.pairwise.selectors import (
    pair_at,
    pair_complete,
    pair_preferences,
    pairwise_figures,
    pairwise_get_for_user,
    pairwise_list_for_project,
    pairwise_list_for_run,
    pairwise_progress,
    pairwise_quick_agreement,
    preferences_visible,
    preferences_visible_to,
    rates_visible,
)
from evalsite.review.pairwise.services import (
    REASON_MAX_LENGTH,
    SEED_MAX,
    pairwise_answer,
    pairwise_queue_create,
)

router = Router(tags=["review"])


# ------------------------------------------------------------------ schemas


class PairwiseQueueIn(Schema):
    model_config = ConfigDict(extra="forbid")
    run_b_id: int = Field(description="The run compared with this one (run A).")
    match: Literal["input", "key"] = Field(
        default="input",
        description="Match items by identical input (whitespace normalised) or by "
        "a metadata key.",
    )
    key: str = Field(default="", max_length=KEY_MAX_LENGTH)
    name: str = Field(default="", max_length=200)
    overlap: int | None = Field(
        default=None,
        ge=1,
        le=10,
        description="Reviewers per pair; default: the project's.",
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        le=SEED_MAX,
        description="Seed of the per-pair left/right order; random (and recorded) "
        "when left out.",
    )


class WinRateOut(Schema):
    wins: int
    losses: int
    ties: int
    answers: int
    win_rate: float | None = Field(description="wins / (wins + losses), ties left out")
    ci_low: float | None
    ci_high: float | None
    win_rate_ties_half: float | None
    tie_share: float | None
    ci_pairs_low: float | None = Field(
        description="95 % bootstrap interval with pairs resampled (for overlap)"
    )
    ci_pairs_high: float | None


class LeftRightOut(Schema):
    left: int
    right: int
    left_share: float | None
    ci_low: float | None
    ci_high: float | None


class FigureOut(Schema):
    value: float | None
    items: int
    ci_low: float | None
    ci_high: float | None


class KappaPairOut(FigureOut):
    reviewers: list[str]


class PreferenceAgreementOut(Schema):
    reviewers: int
    percent_agreement: FigureOut
    alpha: FigureOut
    kappa_pairs: list[KappaPairOut]


class PairwiseFiguresOut(Schema):
    method: str
    a: WinRateOut | None = Field(
        description="Run A's record; null while you still have pairs to answer."
    )
    b: WinRateOut | None
    pairs_answered: int
    left_right: LeftRightOut | None
    agreement: PreferenceAgreementOut
    per_reviewer: list[dict[str, Any]]


class PairwiseQueueOut(Schema):
    id: int
    project_id: int
    run_a_id: int
    run_b_id: int
    name: str
    overlap: int
    size: int
    truncated: bool
    pairing: dict[str, Any]
    total: int
    complete: int
    mine: int
    url: str
    created_at: datetime
    figures: PairwiseFiguresOut

    @staticmethod
    def resolve_run_a_id(queue: ReviewQueue) -> int:
        return queue.run_id

    @staticmethod
    def resolve_total(queue: ReviewQueue, context: dict[str, Any]) -> int:
        return pairwise_progress(queue=queue, user=context["request"].user)["total"]

    @staticmethod
    def resolve_complete(queue: ReviewQueue, context: dict[str, Any]) -> int:
        return pairwise_progress(queue=queue, user=context["request"].user)["complete"]

    @staticmethod
    def resolve_mine(queue: ReviewQueue, context: dict[str, Any]) -> int:
        return pairwise_progress(queue=queue, user=context["request"].user)["mine"]

    @staticmethod
    def resolve_url(queue: ReviewQueue) -> str:
        return reverse("review:pairwise", args=[queue.project_id, queue.pk])

    @staticmethod
    def resolve_figures(queue: ReviewQueue, context: dict[str, Any]) -> dict[str, Any]:
        return _figures_out(queue, context["request"].user)


class PairwiseQueueRowOut(Schema):
    id: int
    run_a_id: int
    run_b_id: int
    name: str
    overlap: int
    size: int
    created_at: datetime

    @staticmethod
    def resolve_run_a_id(obj: ReviewQueue) -> int:
        return obj.run_id


class PairRowOut(Schema):
    position: int
    item_a_id: int
    item_b_id: int
    match_value: str
    answers: int
    complete: bool


class PreferenceOut(Schema):
    reviewer: str | None
    choice: str = Field(description="a, b or tie: the run preferred")
    side: str = Field(description="left, right or tie: as the reviewer saw it")
    a_left: bool
    reason: str
    guideline_version: int | None
    seconds: float | None
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_reviewer(obj: Preference) -> str | None:
        return obj.reviewer.get_username() if obj.reviewer else None

    @staticmethod
    def resolve_guideline_version(obj: Preference) -> int | None:
        return obj.guideline.version if obj.guideline else None


class PairOut(Schema):
    queue_id: int
    position: int
    input: str
    left_output: str
    right_output: str
    answers: int
    overlap: int
    complete: bool
    visible: bool = Field(
        description="Whether the others' answers and the run behind each side are "
        "shown: once you have answered, or once the pair is complete."
    )
    a_left: bool | None = Field(description="Run A on the left; null until visible.")
    item_a_id: int | None
    item_b_id: int | None
    preferences: list[PreferenceOut]
    queue_agreement: dict[str, Any]

    # Read from a pair prepared by _pair_shown: `visible` and `shown_preferences`
    # are set on it for the caller, and `queue` is the caller's queue.

    @staticmethod
    def resolve_input(pair: PairwiseItem) -> str:
        return pair.item_a.input

    @staticmethod
    def resolve_left_output(pair: PairwiseItem) -> str:
        return (pair.item_a if pair.a_left else pair.item_b).output

    @staticmethod
    def resolve_right_output(pair: PairwiseItem) -> str:
        return (pair.item_b if pair.a_left else pair.item_a).output

    @staticmethod
    def resolve_overlap(pair: PairwiseItem) -> int:
        return pair.queue.overlap

    @staticmethod
    def resolve_complete(pair: PairwiseItem) -> bool:
        return pair_complete(queue=pair.queue, pair=pair)

    @staticmethod
    def resolve_a_left(pair: PairwiseItem) -> bool | None:
        return pair.a_left if pair.visible else None  # type: ignore[attr-defined]

    @staticmethod
    def resolve_item_a_id(pair: PairwiseItem) -> int | None:
        return pair.item_a_id if pair.visible else None  # type: ignore[attr-defined]

    @staticmethod
    def resolve_item_b_id(pair: PairwiseItem) -> int | None:
        return pair.item_b_id if pair.visible else None  # type: ignore[attr-defined]

    @staticmethod
    def resolve_preferences(pair: PairwiseItem) -> list[Preference]:
        return pair.shown_preferences  # type: ignore[attr-defined,no-any-return]

    @staticmethod
    def resolve_queue_agreement(pair: PairwiseItem) -> dict[str, Any]:
        return pairwise_quick_agreement(queue_id=pair.queue_id)


class PreferenceRowOut(PreferenceOut):
    position: int
    item_a_id: int
    item_b_id: int

    @staticmethod
    def resolve_position(obj: Preference) -> int:
        return obj.pair.position

    @staticmethod
    def resolve_item_a_id(obj: Preference) -> int:
        return obj.pair.item_a_id

    @staticmethod
    def resolve_item_b_id(obj: Preference) -> int:
        return obj.pair.item_b_id


class PreferenceIn(Schema):
    """Which output is better: `side` as shown (left, right, tie), or `choice` by run
    (a, b, tie). Exactly one of them."""

    model_config = ConfigDict(extra="forbid")
    side: Literal["left", "right", "tie"] | None = None
    choice: Literal["a", "b", "tie"] | None = None
    reason: str = Field(default="", max_length=REASON_MAX_LENGTH)
    seconds: float | None = Field(default=None, ge=0)


# ------------------------------------------------------------------ helpers


def _figures_out(queue: ReviewQueue, user: Any) -> dict[str, Any]:
    figures = pairwise_figures(queue=queue).as_dict()
    if not rates_visible(queue=queue, user=user):
        figures.update(a=None, b=None, left_right=None, per_reviewer=[])
    return figures


def _pair(queue: ReviewQueue, position: int) -> PairwiseItem:
    pair = pair_at(queue=queue, position=position)
    if pair is None:
        raise Http404("No such pair.")
    return pair


def _pair_shown(queue: ReviewQueue, pair: PairwiseItem, user: Any) -> PairwiseItem:
    """The pair as PairOut reads it for `user`: whether the others' answers and the
    sides are visible yet, and the answers shown (only the user's own until then)."""
    preferences = pair_preferences(pair=pair)
    visible = preferences_visible(
        queue=queue, pair=pair, preferences=preferences, user=user
    )
    pair.queue = queue
    pair.visible = visible  # type: ignore[attr-defined]
    pair.shown_preferences = (  # type: ignore[attr-defined]
        preferences if visible else [p for p in preferences if p.reviewer_id == user.pk]
    )
    return pair


# ------------------------------------------------------------------ endpoints


@router.post("/runs/{run_id}/pairwise", response={201: PairwiseQueueOut})
def pairwise_create_api(
    request: AuthenticatedHttpRequest, run_id: int, payload: PairwiseQueueIn
) -> Status[ReviewQueue]:
    """A pairwise queue comparing this run's outputs (A) with run B's on matched
    items; each pair's left/right order is drawn from the (recorded) seed."""
    run_a = run_get_for_user(user=request.user, pk=run_id, write=True)
    run_b = run_get_for_user(
        user=request.user, pk=payload.run_b_id, project_id=run_a.project_id
    )
    queue = pairwise_queue_create(
        run_a=run_a,
        run_b=run_b,
        user=request.user,
        match=payload.match,
        key=payload.key.strip(),
        name=payload.name,
        overlap=payload.overlap,
        seed=payload.seed,
    )
    queue.project = run_a.project
    queue.run_b = run_b
    return Status(201, queue)


@router.get("/projects/{project_id}/pairwise", response=list[PairwiseQueueRowOut])
@paginate(LimitOffsetPagination)
def pairwise_list_api(
    request: AuthenticatedHttpRequest, project_id: int
) -> QuerySet[ReviewQueue]:
    """The project's pairwise queues, newest first (read one for its figures)."""
    project = project_get_for_user(user=request.user, pk=project_id)
    return pairwise_list_for_project(project_id=project.pk)


@router.get("/pairwise/{pairwise_id}", response=PairwiseQueueOut)
def pairwise_detail_api(
    request: AuthenticatedHttpRequest, pairwise_id: int
) -> ReviewQueue:
    """A pairwise queue with its progress and figures (win rates are null while you
    still have pairs to answer, unless you are an owner or adjudicator)."""
    return pairwise_get_for_user(user=request.user, pk=pairwise_id)


@router.get("/pairwise/{pairwise_id}/pairs", response=list[PairRowOut])
@paginate(LimitOffsetPagination)
def pairwise_pairs_api(
    request: AuthenticatedHttpRequest, pairwise_id: int
) -> QuerySet[PairwiseItem]:
    """The queue's pairs in order (no answers: read one pair for those)."""
    queue = pairwise_get_for_user(user=request.user, pk=pairwise_id)
    return (
        PairwiseItem.objects.filter(queue=queue)
        .annotate(
            complete=ExpressionWrapper(
                Q(answers__gte=queue.overlap), output_field=BooleanField()
            )
        )
        .order_by("position")
    )


@router.get("/pairwise/{pairwise_id}/pairs/{position}", response=PairOut)
def pairwise_pair_api(
    request: AuthenticatedHttpRequest, pairwise_id: int, position: int
) -> PairwiseItem:
    """One pair as a reviewer sees it: the input and the two outputs (left, right).
    Blind: until you have answered (or the pair is complete) only your own answer is
    listed and which run wrote which side is not given."""
    queue = pairwise_get_for_user(user=request.user, pk=pairwise_id)
    return _pair_shown(queue, _pair(queue, position), request.user)


@router.post(
    "/pairwise/{pairwise_id}/pairs/{position}/preferences", response={201: PairOut}
)
def pairwise_answer_api(
    request: AuthenticatedHttpRequest,
    pairwise_id: int,
    position: int,
    payload: PreferenceIn,
) -> Status[PairwiseItem]:
    """Your preference on a pair (sending it again replaces it while the pair takes
    answers). Audited; the response carries the pair and the queue's agreement."""
    queue = pairwise_get_for_user(user=request.user, pk=pairwise_id, write=True)
    _pair(queue, position)
    outcome = pairwise_answer(
        queue=queue,
        position=position,
        user=request.user,
        choice=payload.choice,
        side=payload.side,
        reason=payload.reason,
        seconds=payload.seconds,
    )
    pair = _pair(queue, outcome.pair.position)
    return Status(201, _pair_shown(queue, pair, request.user))


@router.get("/pairwise/{pairwise_id}/preferences", response=list[PreferenceRowOut])
@paginate(LimitOffsetPagination)
def pairwise_preferences_api(
    request: AuthenticatedHttpRequest, pairwise_id: int
) -> QuerySet[Preference]:
    """Every answer you may see (on pairs you answered, on complete pairs), in pair
    order, with the order shown and the side chosen: the data behind the figures,
    for a left/right or per-reviewer analysis of your own."""
    queue = pairwise_get_for_user(user=request.user, pk=pairwise_id)
    return preferences_visible_to(queue=queue, user=request.user)


@router.get("/pairwise/{pairwise_id}/agreement", response=PairwiseFiguresOut)
def pairwise_agreement_api(
    request: AuthenticatedHttpRequest, pairwise_id: int
) -> dict[str, Any]:
    """Win rates (Wilson 95 % on decisive answers, ties beside) and agreement between
    reviewers on preferences (percent, Krippendorff's alpha nominal, Cohen's kappa per
    reviewer pair; 95 % bootstrap intervals over pairs)."""
    queue = pairwise_get_for_user(user=request.user, pk=pairwise_id)
    return _figures_out(queue, request.user)


@router.get("/runs/{run_id}/pairwise/agreement", response=list[PairwiseQueueOut])
def run_pairwise_agreement_api(
    request: AuthenticatedHttpRequest, run_id: int
) -> list[ReviewQueue]:
    """The pairwise queues the run takes part in (as A or B), with their figures
    (the newest 20)."""
    run = run_get_for_user(user=request.user, pk=run_id)
    queues = list(pairwise_list_for_run(run=run)[:20])
    for queue in queues:
        queue.project = run.project
    return queues
