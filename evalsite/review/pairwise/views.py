"""Pairwise review pages: create a queue from two runs, answer which
output is better pair by pair with the keyboard, and the figures (win rates with
intervals, agreement on preferences) for a queue and for a run."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import push_url

from evalsite.accounts.models import MAX_OVERLAP, Project
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.datasets.matching.selectors import (
    DEFAULT_KEY,
    KEY_MAX_LENGTH,
    normalise_input,
)
from evalsite.evals.models import Run
from evalsite.evals.runs.selectors import run_get_for_user, runs_listed
from evalsite.lib.htmx import partial, redirect_htmx, vary_on_htmx, wants_partial
from evalsite.lib.worddiff import WORD_DIFF_MAX_WORDS, word_diff_cached
from evalsite.review.models import PairwiseItem, ReviewQueue
from evalsite.review.pairwise.selectors import (
    WIN_RATE_METHOD,
    pair_at,
    pair_complete,
    pair_preferences,
    pairwise_figures,
    pairwise_get_for_user,
    pairwise_list_for_run,
    pairwise_next_for,
    pairwise_progress,
    pairwise_quick_agreement,
    preferences_visible,
    rates_visible,
)
from evalsite.review.pairwise.services import (
    REASON_MAX_LENGTH,
    SEED_MAX,
    pairwise_answer,
    pairwise_queue_create,
)
from evalsite.review.selectors.preferences import reviewer_preferences
from evalsite.review.views.common import user_can_write
from evalsite.review.views.flow import (
    QueueFlow,
    position_refused,
    queue_position,
    skip_flag_context,
)


class PairwiseCreateForm(forms.Form):
    """Run B, how items match, reviewers per pair, a name and an optional seed (the
    run A is the page's)."""

    b = forms.TypedChoiceField(coerce=int, label="Run B")
    match = forms.ChoiceField(
        choices=[
            ("input", "Identical input"),
            ("key", "A metadata key"),
        ],
        initial="input",
        label="Match items by",
    )
    key = forms.CharField(
        required=False, max_length=KEY_MAX_LENGTH, initial=DEFAULT_KEY, label="Key"
    )
    overlap = forms.IntegerField(
        min_value=1, max_value=MAX_OVERLAP, label="Reviewers per pair"
    )
    name = forms.CharField(required=False, max_length=200)
    seed = forms.IntegerField(required=False, min_value=0, max_value=SEED_MAX)

    def __init__(self, *args: Any, run: Run, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.runs = list(
            runs_listed(project_id=project.pk)
            .filter(archived=False)
            .exclude(pk=run.pk)
            .select_related("dataset")
            .order_by("-created_at", "-id")[:200]
        )
        self.fields["b"].choices = [  # type: ignore[attr-defined]  # a TypedChoiceField
            (r.pk, f"#{r.pk} {r} · {r.dataset}") for r in self.runs
        ]
        self.fields["overlap"].initial = project.default_overlap


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def pairwise_create(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """The form (GET, ?b= preselects run B) and the queue it creates (POST)."""
    run = run_get_for_user(
        user=request.user,
        pk=run_id,
        project_id=project_id,
        write=request.method == "POST",
    )
    project = run.project
    status = 200
    if request.method == "POST":
        form = PairwiseCreateForm(request.POST, run=run, project=project)
        if form.is_valid():
            data = form.cleaned_data
            run_b = run_get_for_user(
                user=request.user, pk=data["b"], project_id=project_id
            )
            try:
                queue = pairwise_queue_create(
                    run_a=run,
                    run_b=run_b,
                    user=request.user,
                    match=data["match"],
                    key=(data.get("key") or "").strip(),
                    name=data.get("name") or "",
                    overlap=data["overlap"],
                    seed=data.get("seed"),
                )
            except ApplicationError as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(
                    request,
                    f"Pairwise queue “{queue.name}” created ({queue.size} "
                    f"pair{pluralize(queue.size)}).",
                )
                return redirect_htmx(
                    request, reverse("review:pairwise", args=[project_id, queue.pk])
                )
        status = 400
    else:
        # The compare page links here with its runs and its matching rule.
        initial = {
            name: request.GET[name]
            for name in ("b", "match", "key")
            if request.GET.get(name)
        }
        form = PairwiseCreateForm(initial=initial, run=run, project=project)
    return render(
        request,
        "review/pairwise/pairwise_create.html",
        {
            "project": project,
            "run": run,
            "form": form,
            "can_write": user_can_write(project),
            "queues": pairwise_list_for_run(run=run)[:20],
        },
        status=status,
    )


def _pairwise_url(queue: ReviewQueue, position: int | None) -> str:
    url = reverse("review:pairwise", args=[queue.project_id, queue.pk])
    return f"{url}?pos={position}" if position else url


def _card_context(
    request: AuthenticatedHttpRequest,
    queue: ReviewQueue,
    position: int,
    error: str = "",
    *,
    flag_error: str = "",
) -> dict[str, Any]:
    user = request.user
    pair = pair_at(queue=queue, position=position)
    preferences = pair_preferences(pair=pair) if pair else []
    visible = bool(
        pair
        and preferences_visible(
            queue=queue, pair=pair, preferences=preferences, user=user
        )
    )
    mine = next((p for p in preferences if p.reviewer_id == user.pk), None)
    progress = pairwise_progress(queue=queue, user=user)
    left = right = None
    input_b = ""
    diff = None
    if pair is not None:
        left, right = (
            (pair.item_a, pair.item_b) if pair.a_left else (pair.item_b, pair.item_a)
        )
        if normalise_input(pair.item_a.input) != normalise_input(pair.item_b.input):
            input_b = pair.item_b.input
        diff = word_diff_cached(left.output or "", right.output or "")
    can_write = user_can_write(queue.project)
    complete = bool(pair and pair_complete(queue=queue, pair=pair))
    show_rates = rates_visible(queue=queue, user=user)
    return {
        "project": queue.project,
        "queue": queue,
        "run_a": queue.run,
        "run_b": queue.run_b,
        "pair": pair,
        "position": position,
        "progress": progress,
        "prev_url": _pairwise_url(queue, position - 1) if position > 1 else None,
        "next_url": _pairwise_url(queue, position + 1)
        if position < progress["total"]
        else None,
        "left": left,
        "right": right,
        "left_run": (queue.run if pair.a_left else queue.run_b) if pair else None,
        "right_run": (queue.run_b if pair.a_left else queue.run) if pair else None,
        "input_b": input_b,
        "preferences": preferences if visible else [],
        "visible": visible,
        "mine": mine,
        "complete": complete,
        # Open pairs take answers (and changes); with one reviewer per pair nobody
        # else's answer was seen, so the reviewer may still change theirs.
        "can_answer": can_write
        and pair is not None
        and (not complete or (mine is not None and queue.overlap == 1)),
        "can_write": can_write,
        "quick": pairwise_quick_agreement(queue_id=queue.pk),
        # The full figures (bootstrap intervals) only where they are shown.
        "figures": pairwise_figures(queue=queue) if show_rates else None,
        "show_rates": show_rates,
        "method": WIN_RATE_METHOD,
        "answer_url": reverse(
            "review:pairwise_answer", args=[queue.project_id, queue.pk, position]
        ),
        "error": error,
        "flow": QueueFlow(queue, user),
        "reason_max": REASON_MAX_LENGTH,
        "diff": diff,
        "diff_limit": WORD_DIFF_MAX_WORDS,
        "card_url": _pairwise_url(queue, position),
        **skip_flag_context(
            request, queue, position, url=_pairwise_url, flag_error=flag_error
        ),
    }


def pairwise_card_response(
    request: AuthenticatedHttpRequest,
    queue: ReviewQueue,
    position: int,
    *,
    flag_error: str = "",
) -> HttpResponse:
    """After a flag on a pair: the card at `position` (htmx, with its URL pushed)
    or a redirect to it."""
    if not wants_partial(request):
        if flag_error:
            messages.error(request, flag_error)
        return HttpResponseRedirect(_pairwise_url(queue, position))
    context = _card_context(request, queue, position, flag_error=flag_error)
    response = render(request, "review/pairwise/pairwise.html#queue-card", context)
    push_url(response, _pairwise_url(queue, position))
    return response


@require_GET
@vary_on_htmx
def pairwise_detail(
    request: AuthenticatedHttpRequest, project_id: int, pairwise_id: int
) -> HttpResponse:
    """The queue page at ?pos= (default: your next pair to answer)."""
    queue = pairwise_get_for_user(
        user=request.user, pk=pairwise_id, project_id=project_id
    )
    position = queue_position(
        request,
        size=queue.size,
        default=lambda: pairwise_next_for(queue=queue, user=request.user),
    )
    if position is None:
        return position_refused(queue.size)
    context = _card_context(request, queue, position)
    template = partial(request, "review/pairwise/pairwise.html", "queue-card")
    return render(request, template, context)


@require_POST
@vary_on_htmx
def pairwise_answer_view(
    request: AuthenticatedHttpRequest,
    project_id: int,
    pairwise_id: int,
    position: int,
) -> HttpResponse:
    """Your preference on one pair: side = left, right or tie (as shown), reason."""
    queue = pairwise_get_for_user(
        user=request.user, pk=pairwise_id, project_id=project_id, write=True
    )
    if not PairwiseItem.objects.filter(queue=queue, position=position).exists():
        return HttpResponse("No such pair.", status=404)
    error = ""
    try:
        outcome = pairwise_answer(
            queue=queue,
            position=position,
            user=request.user,
            side=request.POST.get("side"),
            reason=request.POST.get("reason", ""),
            seconds=request.POST.get("seconds"),
        )
    except ApplicationError as exc:
        error = exc.message
    if not wants_partial(request):
        if error:
            messages.error(request, error)
            return HttpResponseRedirect(_pairwise_url(queue, position))
        following = None
        if reviewer_preferences(request.user).advance_after_answer:
            following = pairwise_next_for(
                queue=queue, user=request.user, after=outcome.pair.position
            )
        return HttpResponseRedirect(_pairwise_url(queue, following or position))
    # htmx swaps no 4xx body by default; the card carries the error (as the review
    # queue's card does), so it comes back with a 200.
    context = _card_context(request, queue, position, error=error)
    return render(request, "review/pairwise/pairwise.html#queue-card", context)


@require_GET
@vary_on_htmx
def pairwise_run_agreement(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """Every pairwise queue the run takes part in, with its win rates and agreement
    on preferences (the agreement page loads this section)."""
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    queues = [
        {"queue": q, "figures": pairwise_figures(queue=q)}
        for q in pairwise_list_for_run(run=run)[:20]
    ]
    template = partial(
        request, "review/pairwise/pairwise_agreement.html", "pairwise-agreement"
    )
    return render(
        request,
        template,
        {
            "project": run.project,
            "run": run,
            "queues": queues,
            "method": WIN_RATE_METHOD,
        },
    )
