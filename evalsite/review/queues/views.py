"""Review queues: create from the explorer, work through one, and the assigned-work page."""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import Result
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.results.item import analysis_view
from evalsite.evals.results.selectors import comment_list
from evalsite.evals.results.verdicts import result_accept, result_set_human_pass
from evalsite.evals.runs.selectors import result_get_for_user, run_get_for_user
from evalsite.lib.htmx import partial, redirect_htmx, vary_on_htmx, wants_partial
from evalsite.review.explorer.schemas import ResultQuery, ResultQueryError
from evalsite.review.forms import CommentForm
from evalsite.review.models import PairwiseItem, QueueEntry, Review, ReviewQueue
from evalsite.review.pairwise import views as pairwise_views
from evalsite.review.queues import services as queues
from evalsite.review.queues.forms import QueueCreateForm
from evalsite.review.queues.selectors import (
    FLAG_STATES,
    assigned_results,
    assigned_runs_summary,
    flag_get_for_user,
    flag_list_for_project,
    flip_fields,
    queue_entry_at,
    queue_estimate,
    queue_get_for_user,
    queue_list_for_project,
    queue_next_unreviewed,
    queue_progress,
)
from evalsite.review.queues.services import result_flip_field, result_undo_last
from evalsite.review.queues.waiting import queue_next_waiting, waiting_for
from evalsite.review.selectors.blind import blind_entry_for
from evalsite.review.team.selectors import (
    answers_visible,
    describe_flips,
    entry_answers,
    overlap_counts,
    overlap_next_for,
)
from evalsite.review.team.services import review_record_single
from evalsite.review.views.common import item_url, user_can_write
from evalsite.review.views.flow import (
    flow_context,
    position_refused,
    queue_position,
    skip_flag_context,
)
from scoring import KINDS

ASSIGNED_PAGE_SIZE = 50


# Where a queue that cannot be built sends the user back to, with the filter kept:
# the page whose "Create queue" control was used.
QUEUE_BACK = {
    "explorer": "review:explorer",
    "matrix": "review:matrix",
    "run": "evals:run_detail",
}


@require_POST
@vary_on_htmx
def queue_create(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    run = run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id, write=True
    )
    form = QueueCreateForm(request.POST)
    errors = {} if form.is_valid() else {k: " ".join(v) for k, v in form.errors.items()}  # type: ignore[arg-type]  # ErrorList iterates as str
    try:
        result_query = ResultQuery.from_querydict(
            request.POST, run_scorers=run.run_scorers.all()
        )
    except ResultQueryError as exc:
        errors = {**exc.field_errors, **errors}
    if errors:
        return HttpResponse(
            "Invalid queue request: "
            + "; ".join(f"{k}: {v}" for k, v in errors.items()),
            status=400,
            content_type="text/plain",
        )
    pass_share = form.cleaned_data.get("pass_share")
    try:
        queue = queues.queue_create(
            run=run,
            user=request.user,
            query=result_query,
            source=form.cleaned_data["source"],
            name=form.cleaned_data.get("name") or "",
            blind=form.cleaned_data.get("blind") or False,
            pass_share=pass_share / 100 if pass_share is not None else None,
            seed=form.cleaned_data.get("seed") or 0,
            assign_round_robin=form.cleaned_data.get("assign_round_robin") or False,
            overlap=form.cleaned_data.get("overlap"),
            # One reviewer per result has one rule; the select only matters above 1.
            final_rule=form.cleaned_data.get("final_rule")
            if (form.cleaned_data.get("overlap") or 1) > 1
            else None,
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
        back = reverse(
            QUEUE_BACK.get(request.POST.get("back", ""), "review:explorer"),
            args=[project_id, run_id],
        )
        query = urlencode(result_query.to_querydict())
        url = f"{back}?{query}" if query else back
        return redirect_htmx(request, url)
    messages.success(
        request,
        f"Queue “{queue.name}” created ({queue.size} result{pluralize(queue.size)}).",
    )
    url = reverse("review:queue", args=[project_id, queue.pk])
    return redirect_htmx(request, url)


def _queue_url(queue: ReviewQueue, position: int | None) -> str:
    url = reverse("review:queue", args=[queue.project_id, queue.pk])
    return f"{url}?pos={position}" if position else url


def _queue_card_context(
    request: HttpRequest,
    queue: ReviewQueue,
    position: int,
    error: str = "",
    *,
    entry: QueueEntry | None = None,
    reviews: list[Review] | None = None,
    flag_error: str = "",
) -> dict[str, Any]:
    if entry is None:
        entry = queue_entry_at(queue=queue, position=position)
    result = entry.result if entry else None
    blind = queue.blind or queue.project.blind_review
    answered = bool(result and (result.human_passed is not None or result.reviewed))
    overlap = (
        overlap_context(request, queue, entry, reviews=reviews)
        if queue.overlap > 1
        else None
    )
    if overlap is not None:
        # Each reviewer answers blind to the judge (when the queue is blind) until
        # their own answer is in; the result's own review fields say nothing here.
        # Progress is the entries decided, counted on the queue's own rows (the
        # reviewed-results join costs 86 ms at 5,000 entries; this, 3 ms).
        answered = overlap["visible"]
        progress = {**overlap["progress"], "reviewed": overlap["progress"]["decided"]}
    else:
        progress = queue_progress(queue=queue)
    hidden = blind and not answered
    # The same result may wait for this user's answer in another blind queue: this
    # card (of any queue) then shows neither the judge nor anyone's answer either.
    elsewhere = (
        blind_entry_for(user=request.user, result=result, project=queue.project)
        if result is not None and not hidden
        else None
    )
    if elsewhere is not None:
        hidden = True
        if overlap is not None:
            overlap["visible"] = False
            overlap["reviews"] = []
    fields = []
    view = None
    kind_spec = None
    aggregates = []
    comments = []
    if result is not None:
        kind_spec = KINDS.get(result.run_scorer.kind)
        fields = flip_fields(
            kind=result.run_scorer.kind,
            analysis=result.final_analysis or result.analysis,
        )
        view = analysis_view(
            kind=result.run_scorer.kind,
            analysis=result.analysis,
            final_analysis=result.final_analysis,
            context=list(result.item.context or []),
        )
        aggregates = run_aggregates(
            run_id=queue.run_id, run_scorer_id=result.run_scorer_id
        )
        comments = list(comment_list(result=result))
    can_write = user_can_write(queue.project)
    following: int | None = None
    if isinstance(request.user, User):
        # The badge and Skip in one read (see waiting_for), kept on the request for
        # the badge (review.context_processors.waiting).
        waiting = waiting_for(
            project_id=queue.project_id, user=request.user, around=(queue.pk, position)
        )
        request._waiting_cache = waiting  # type: ignore[attr-defined]  # per request
        following = waiting.following
    return {
        "project": queue.project,
        "queue": queue,
        "run": queue.run,
        "entry": entry,
        "result": result,
        "position": position,
        "progress": progress,
        "prev_url": _queue_url(queue, position - 1) if position > 1 else None,
        "next_url": _queue_url(queue, position + 1)
        if position < progress["total"]
        else None,
        "blind": blind,
        "hidden": hidden,
        "blind_elsewhere": elsewhere,
        "flip_fields": fields,
        "analysis": view,
        "kind_spec": kind_spec,
        "aggregates": aggregates,
        "estimate": queue_estimate(queue=queue),
        "comments": comments,
        "comment_form": CommentForm(),
        "can_write": can_write,
        "item_url": item_url(queue.project_id, result.pk) if result else None,
        "has_undo": bool(result and (result.overridden or result.reviewed)),
        "error": error,
        "overlap": overlap,
        **flow_context(request, queue, result),
        **skip_flag_context(
            request,
            queue,
            position,
            url=_queue_url,
            flag_error=flag_error,
            following=following,
        ),
        "card_url": _queue_url(queue, position),
        "action_base": reverse(
            "review:queue_action", args=[queue.project_id, queue.pk, position, "x"]
        )[:-2],
    }


@require_GET
@vary_on_htmx
def queue_detail(
    request: AuthenticatedHttpRequest, project_id: int, queue_id: int
) -> HttpResponse:
    queue = queue_get_for_user(user=request.user, pk=queue_id, project_id=project_id)
    if queue.is_pairwise:
        # Queue lists link every queue here; a pairwise one has its own page.
        return HttpResponseRedirect(
            reverse("review:pairwise", args=[project_id, queue.pk])
        )

    def default() -> int | None:
        # The first item waiting for this reviewer (not flagged, not a teammate's),
        # else as before: the first the queue still needs.
        waiting = queue_next_waiting(queue=queue, user=request.user, after=0)
        if waiting is not None:
            return waiting
        if queue.overlap > 1:
            return overlap_next_for(queue=queue, user=request.user)
        return queue_next_unreviewed(queue=queue)

    position = queue_position(request, size=queue.size, default=default)
    if position is None:
        return position_refused(queue.size)
    context = _queue_card_context(request, queue, position)
    template = partial(request, "review/queues/queue.html", "queue-card")
    return render(request, template, context)


QUEUE_ACTIONS = ("accept", "pass", "fail", "flip", "undo")


@require_POST
@vary_on_htmx
def queue_action(
    request: AuthenticatedHttpRequest,
    project_id: int,
    queue_id: int,
    position: int,
    action: str,
) -> HttpResponse:
    """One review key on the current entry: accept, pass, fail, flip (n), undo."""
    queue = queue_get_for_user(
        user=request.user, pk=queue_id, project_id=project_id, write=True
    )
    entry = QueueEntry.objects.filter(queue=queue, position=position).first()
    if entry is None or action not in QUEUE_ACTIONS:
        return HttpResponse("No such queue entry or action.", status=404)
    result = result_get_for_user(
        user=request.user, pk=entry.result_id, write=True, project_id=project_id
    )
    error = ""
    try:
        if queue.overlap > 1:
            raise ApplicationError(
                "Each reviewer answers this queue on their own: use the answer form."
            )
        _apply_action(request, result, action)
        if action in ("accept", "pass", "fail"):
            review_record_single(
                queue=queue,
                result=result,
                user=request.user,
                seconds=request.POST.get("seconds"),
            )
    except ApplicationError as exc:
        error = exc.message
    return queue_card_response(request, queue, position, error=error)


def queue_card_response(
    request: AuthenticatedHttpRequest,
    queue: ReviewQueue,
    position: int,
    *,
    error: str = "",
    entry: QueueEntry | None = None,
    reviews: list[Review] | None = None,
) -> HttpResponse:
    """After a write on the card: the card again (htmx) or a redirect to it. A
    caller that holds the entry (with its whole result) and its reviews as they now
    are passes them, and they are not read again."""
    if not wants_partial(request):
        if error:
            messages.error(request, error)
        return HttpResponseRedirect(_queue_url(queue, position))
    context = _queue_card_context(
        request, queue, position, error=error, entry=entry, reviews=reviews
    )
    # htmx does not swap 4xx bodies by default; the card carries the error message
    # inside it, so it is sent with a 200 and the reviewer sees why nothing changed.
    response = render(request, "review/queues/queue.html#queue-card", context)
    if request.POST.get("back"):
        # Key u after the card moved on: the reviewer is taken back to this item.
        push_url(response, _queue_url(queue, position))
    return response


def overlap_context(
    request: HttpRequest,
    queue: ReviewQueue,
    entry: QueueEntry | None,
    reviews: list[Review] | None = None,
) -> dict[str, Any]:
    """What the card of an overlap queue shows: the answers so far (only once you
    have answered), your own answer, the entry's state and the queue's agreement."""
    user = cast(User, request.user)
    if reviews is None:
        reviews = entry_answers(queue=queue, result_id=entry.result_id) if entry else []
    progress, agreement = overlap_counts(queue_id=queue.pk)
    visible = bool(entry and answers_visible(entry=entry, answers=reviews, user=user))
    mine = next(
        (r for r in reviews if r.reviewer_id == user.pk and r.kind == "answer"), None
    )
    if entry is not None:
        for review in reviews:
            review.changes = describe_flips(  # type: ignore[attr-defined]  # display only
                kind=entry.result.run_scorer.kind,
                analysis=entry.result.analysis,
                flips=review.flips,
            )
    membership = queue.project.membership
    return {
        "state": entry.state if entry else None,
        "entry": entry,
        "reviews": reviews if visible else [],
        "visible": visible,
        "mine": mine,
        "mine_flips": set((mine.flips if mine else {}).keys()),
        "progress": progress,
        "agreement": agreement,
        "can_adjudicate": membership.can_adjudicate,
        "answer_url": reverse(
            "review:queue_answer",
            args=[queue.project_id, queue.pk, entry.position if entry else 1],
        ),
        "adjudicate_url": reverse(
            "review:adjudicate",
            args=[queue.project_id, queue.pk, entry.position if entry else 1],
        ),
        "withdraw_url": reverse(
            "review:queue_answer_withdraw",
            args=[queue.project_id, queue.pk, entry.position if entry else 1],
        ),
    }


def _shown_version(request: HttpRequest) -> int | None:
    """The result version the card showed (its forms send it), so a write on a card
    another reviewer changed meanwhile is refused and the card shows the newest state;
    None when a client sends none (scripts posting keys)."""
    raw = request.POST.get("version", "")
    return int(raw) if raw.isdigit() else None


def _apply_action(
    request: AuthenticatedHttpRequest, result: Result, action: str
) -> None:
    user = request.user
    version = _shown_version(request)
    if action == "accept":
        result_accept(result=result, user=user, expected_version=version)
    elif action in ("pass", "fail"):
        result_set_human_pass(
            result=result,
            user=user,
            passed=action == "pass",
            note=request.POST.get("note", ""),
            expected_version=version,
        )
    elif action == "flip":
        raw = request.POST.get("n", "")
        if not raw.isdigit():
            raise ApplicationError(
                "Say which verdict to flip (1–9).", field_errors={"n": "A number."}
            )
        result_flip_field(
            result=result,
            user=user,
            number=int(raw),
            note=request.POST.get("note", ""),
            expected_version=version,
        )
    elif action == "undo":
        result_undo_last(result=result, user=user, expected_version=version)


@require_GET
@vary_on_htmx
def assigned(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    results = Paginator(
        assigned_results(project_id=project_id, user=request.user), ASSIGNED_PAGE_SIZE
    )
    raw_page = request.GET.get("page", "1")
    if not raw_page.isdigit():
        return HttpResponse("page must be a number.", status=400)
    page_obj = results.get_page(int(raw_page))
    rows = [{"result": r, "item_url": item_url(project_id, r.pk)} for r in page_obj]
    archived = request.GET.get("archived") == "1"
    waiting = waiting_for(project_id=project_id, user=request.user)
    # The navigation's badge reads the same figures (one read per request).
    request._waiting_cache = waiting  # type: ignore[attr-defined]
    queue_list = list(
        queue_list_for_project(project_id=project_id, archived=archived)[:20]
    )
    for q in queue_list:
        q.waiting = waiting.by_queue.get(q.pk, 0)  # type: ignore[attr-defined]
    waiting_queues = list(
        ReviewQueue.objects.filter(pk__in=list(waiting.by_queue))
        .select_related("run")
        .order_by("-created_at", "-id")
    )
    for q in waiting_queues:
        q.waiting = waiting.by_queue[q.pk]  # type: ignore[attr-defined]
    context = {
        "project": project,
        "archived": archived,
        "runs": assigned_runs_summary(project_id=project_id, user=request.user),
        "waiting": waiting,
        "waiting_queues": waiting_queues,
        "queues": queue_list,
        "page_obj": page_obj,
        "rows": rows,
        "can_write": user_can_write(project),
    }
    template = partial(request, "review/queues/assigned.html", "assigned-results")
    return render(request, template, context)


@require_POST
@vary_on_htmx
def queue_flag(
    request: AuthenticatedHttpRequest, project_id: int, queue_id: int, position: int
) -> HttpResponse:
    """Flag the item at `position` with a reason (any queue kind); the card moves on
    to the next item waiting for the reviewer, or stays and says why not."""
    queue = queue_get_for_user(
        user=request.user, pk=queue_id, project_id=project_id, write=True
    )
    items = PairwiseItem.objects if queue.is_pairwise else QueueEntry.objects
    if not items.filter(queue=queue, position=position).exists():
        return HttpResponse("No such queue item.", status=404)
    flag_error = ""
    following = position
    try:
        queues.queue_item_flag(
            queue=queue,
            user=request.user,
            position=position,
            reason=request.POST.get("reason", ""),
        )
    except ApplicationError as exc:
        flag_error = exc.message
    else:
        messages.success(
            request,
            f"Flagged item {position}: it is on the project's flagged list until "
            "an owner resolves it.",
        )
        following = (
            queue_next_waiting(queue=queue, user=request.user, after=position)
            or position
        )
    if queue.is_pairwise:
        return pairwise_views.pairwise_card_response(
            request, queue, following, flag_error=flag_error
        )
    if not wants_partial(request):
        if flag_error:
            messages.error(request, flag_error)
        return HttpResponseRedirect(_queue_url(queue, following))
    context = _queue_card_context(request, queue, following, flag_error=flag_error)
    response = render(request, "review/queues/queue.html#queue-card", context)
    if following != position:
        push_url(response, _queue_url(queue, following))
    return response


@require_GET
@vary_on_htmx
def flag_list(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    """The project's flagged queue items: who flagged what and why; owners resolve."""
    project = project_get_for_user(user=request.user, pk=project_id)
    state = request.GET.get("state", "open")
    if state not in FLAG_STATES:
        return HttpResponse(
            "state must be one of: " + ", ".join(FLAG_STATES) + ".", status=400
        )
    flags = Paginator(flag_list_for_project(project_id=project.pk, state=state), 50)
    raw_page = request.GET.get("page", "1")
    if not raw_page.isdigit():
        return HttpResponse("page must be a number.", status=400)
    return render(
        request,
        "review/queues/flagged.html",
        {
            "project": project,
            "state": state,
            "states": FLAG_STATES,
            "page_obj": flags.get_page(int(raw_page)),
            "can_manage": project.membership.can_manage,
        },
    )


@require_POST
@vary_on_htmx
def flag_resolve(
    request: AuthenticatedHttpRequest, project_id: int, flag_id: int
) -> HttpResponse:
    """Resolve (unflag) one flag: owners only; the item waits again."""
    flag = flag_get_for_user(
        user=request.user, pk=flag_id, project_id=project_id, manage=True
    )
    try:
        queues.queue_flag_resolve(
            flag=flag, user=request.user, note=request.POST.get("note", "")
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Resolved the flag on item {flag.position} of “{flag.queue.name}”: "
            "it waits for its reviewers again.",
        )
    return redirect_htmx(request, reverse("review:flagged", args=[project_id]))
