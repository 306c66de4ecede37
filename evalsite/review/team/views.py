"""Overlap answers on the queue card, the adjudication queue, and the agreement page."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.results.item import analysis_view
from evalsite.evals.runs.selectors import result_get_for_user, run_get_for_user
from evalsite.lib.htmx import partial, redirect_htmx, vary_on_htmx, wants_partial
from evalsite.review.estimates.annotators import DEFAULT_EPSILON
from evalsite.review.estimates.forms import AlternativeTestForm
from evalsite.review.models import QueueEntry, ReviewQueue
from evalsite.review.queues.selectors import flip_fields, queue_get_for_user
from evalsite.review.queues.views import queue_card_response
from evalsite.review.selectors.blind import blind_entry_for, blind_message
from evalsite.review.team.agreement import (
    agreement_page_figures,
    agreement_recount_send,
)
from evalsite.review.team.selectors import (
    adjudication_entries,
    answer_target,
    entry_answers,
)
from evalsite.review.team.services import (
    review_adjudicate,
    review_answer,
    review_answer_withdraw,
)
from scoring import KINDS


def answer_from_post(
    request: AuthenticatedHttpRequest, *, kind: str, analysis: dict[str, Any] | None
) -> dict[str, Any]:
    """The answer an HTML form sends: `passed` (pass / fail / judge), the numbers of
    the verdicts to flip (`flip` = 1–n, as on the card), an optional `score`, `note`
    and `seconds`."""
    fields = flip_fields(kind=kind, analysis=analysis, limit=10_000)
    flips: dict[str, Any] = {}
    for raw in request.POST.getlist("flip"):
        if not raw.isdigit() or not 1 <= int(raw) <= len(fields):
            raise ApplicationError(
                f"There is no verdict {raw} to change.",
                field_errors={"flip": f"between 1 and {len(fields)}"},
            )
        field = fields[int(raw) - 1]
        flips[field.path] = field.new_value
    raw_passed = request.POST.get("passed", "")
    passed = {"pass": True, "fail": False}.get(raw_passed)
    if raw_passed not in ("pass", "fail", ""):
        raise ApplicationError(
            "Answer pass or fail.", field_errors={"passed": "pass or fail"}
        )
    raw_score = request.POST.get("score", "").strip()
    score: Any = None
    if raw_score:
        try:
            score = float(raw_score)
        except ValueError:
            raise ApplicationError(
                "The score must be a number.", field_errors={"score": "a number"}
            ) from None
    return {
        "passed": passed,
        "flips": flips,
        "score": score,
        "note": request.POST.get("note", ""),
        "seconds": request.POST.get("seconds") or None,
    }


@require_POST
@vary_on_htmx
def queue_answer(
    request: AuthenticatedHttpRequest, project_id: int, queue_id: int, position: int
) -> HttpResponse:
    """Submit (or change) your answer on the card of an overlap queue."""
    queue = queue_get_for_user(
        user=request.user, pk=queue_id, project_id=project_id, write=True
    )
    # The entry with the whole result, its run, run scorer and item, and the
    # guidelines, in one read checked against the queue's project: the card after
    # the answer is drawn from it and from what the answer committed instead of
    # reading them again (35 queries before, 18 after, on the bench database).
    target = answer_target(queue=queue, position=position, full=True)
    if target is None:
        return HttpResponse("No such queue entry.", status=404)
    result = target.entry.result
    error = ""
    entry = reviews = None
    try:
        answer = answer_from_post(
            request, kind=result.run_scorer.kind, analysis=result.analysis
        )
        outcome = review_answer(
            queue=queue, result=result, user=request.user, target=target, **answer
        )
    except ApplicationError as exc:
        error = exc.message
    else:
        # Drawn from what the answer committed; after a refusal the card reads the
        # entry again (the answer's own copy may hold what was rolled back).
        entry, reviews = outcome.entry, outcome.reviews
        entry.result = result
        if outcome.decided:
            messages.success(request, "Every answer is in: the final verdict is set.")
        elif outcome.adjudicate:
            messages.warning(
                request, "The reviewers disagree: this result goes to adjudication."
            )
    return queue_card_response(
        request, queue, position, error=error, entry=entry, reviews=reviews
    )


@require_POST
@vary_on_htmx
def queue_answer_withdraw(
    request: AuthenticatedHttpRequest, project_id: int, queue_id: int, position: int
) -> HttpResponse:
    """Withdraw your answer on the card of an overlap queue (key u) while the
    result still takes answers."""
    queue = queue_get_for_user(
        user=request.user, pk=queue_id, project_id=project_id, write=True
    )
    entry = QueueEntry.objects.filter(queue=queue, position=position).first()
    if entry is None:
        return HttpResponse("No such queue entry.", status=404)
    result = result_get_for_user(
        user=request.user, pk=entry.result_id, write=True, project_id=project_id
    )
    error = ""
    try:
        review_answer_withdraw(queue=queue, result=result, user=request.user)
    except ApplicationError as exc:
        error = exc.message
    else:
        messages.success(request, "Your answer is withdrawn: the result waits for it.")
    return queue_card_response(request, queue, position, error=error)


@require_GET
@vary_on_htmx
def adjudication_list(
    request: AuthenticatedHttpRequest, project_id: int
) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    entries = list(adjudication_entries(project_id=project.pk)[:500])
    return render(
        request,
        "review/team/adjudication.html",
        {
            "project": project,
            "entries": entries,
            "can_adjudicate": project.membership.can_adjudicate,
        },
    )


def _adjudicate_context(
    queue: ReviewQueue, entry: QueueEntry, user: Any, error: str = ""
) -> dict[str, Any]:
    result = result_get_for_user(
        user=user, pk=entry.result_id, project_id=queue.project_id
    )
    blind = blind_entry_for(user=user, result=result)
    if blind is not None:
        # Every answer and the judge side by side: nothing of it before your own.
        raise PermissionDenied(blind_message(blind))
    reviews = entry_answers(queue=queue, result_id=entry.result_id)
    fields = flip_fields(
        kind=result.run_scorer.kind, analysis=result.analysis, limit=10_000
    )
    rows = []
    for f in fields:
        values = [r.flips.get(f.path, f.value) for r in reviews]
        rows.append(
            {
                "field": f,
                "values": values,
                "split": len({str(v).strip().lower() for v in values}) > 1,
            }
        )
    return {
        "project": queue.project,
        "queue": queue,
        "run": queue.run,
        "entry": entry,
        "result": result,
        "reviews": reviews,
        "answers": [r for r in reviews if r.kind == "answer"],
        "verdict_rows": rows,
        "flip_fields": fields,
        "kind_spec": KINDS.get(result.run_scorer.kind),
        "analysis": analysis_view(
            kind=result.run_scorer.kind,
            analysis=result.analysis,
            final_analysis=result.final_analysis,
            context=list(result.item.context or []),
        ),
        "can_adjudicate": queue.project.membership.can_adjudicate,
        "error": error,
    }


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def adjudicate(
    request: AuthenticatedHttpRequest, project_id: int, queue_id: int, position: int
) -> HttpResponse:
    """Every answer side by side, the judge's, and the adjudicator's decision."""
    queue = queue_get_for_user(
        user=request.user,
        pk=queue_id,
        project_id=project_id,
        write=request.method == "POST",
    )
    entry = QueueEntry.objects.filter(queue=queue, position=position).first()
    if entry is None:
        return HttpResponse("No such queue entry.", status=404)
    error = ""
    if request.method == "POST":
        result = result_get_for_user(
            user=request.user, pk=entry.result_id, write=True, project_id=project_id
        )
        try:
            answer = answer_from_post(
                request, kind=result.run_scorer.kind, analysis=result.analysis
            )
            answer.pop("seconds")
            entry = review_adjudicate(
                queue=queue, result=result, user=request.user, **answer
            )
        except ApplicationError as exc:
            error = exc.message
            if exc.status_code == 403:
                return HttpResponse(exc.message, status=403)
        else:
            messages.success(request, "Decided: the final verdict is set.")
            following = adjudication_entries(project_id=project_id).first()
            url = reverse("review:adjudication", args=[project_id])
            if following is not None:
                url = reverse(
                    "review:adjudicate",
                    args=[project_id, following.queue_id, following.position],
                )
            return redirect_htmx(request, url)
    context = _adjudicate_context(queue, entry, request.user, error)
    template = partial(request, "review/team/adjudicate.html", "adjudicate-card")
    return render(request, template, context)


def _agreement_render(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int, *, region: bool
) -> HttpResponse:
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    alt_form = AlternativeTestForm(request.GET)
    if not alt_form.is_valid():
        return HttpResponse("Invalid ε: between 0 and 1.", status=400)
    epsilon = alt_form.cleaned_data.get("epsilon")
    epsilon = DEFAULT_EPSILON if epsilon is None else epsilon
    # Figures of the current state when cached (or never counted: counted now);
    # else the latest ones, marked, while a task recounts them and the region polls.
    # After an answer on bench_million's 150k answers: 3.5 s recounting in the
    # request before, 74 ms p50 (79 max) now, the recount 3.2 s in the background
    # (load average 2.8).
    page = agreement_page_figures(run=run, epsilon=epsilon, allow_stale=True)
    if page.as_of is not None:
        agreement_recount_send(run_id=run.pk, epsilon=epsilon, state=page.state)
    poll_url = reverse("review:agreement_figures", args=[project_id, run.pk])
    if epsilon != DEFAULT_EPSILON:
        poll_url += f"?epsilon={epsilon}"
    context = {
        "project": run.project,
        "run": run,
        "scorers": page.scorers,
        "queues": page.queues,
        "as_of": page.as_of,
        "poll_url": poll_url,
        "epsilon": epsilon,
    }
    if not region:
        return render(request, "review/team/agreement.html", context)
    response = render(request, "review/team/agreement.html#agreement-figures", context)
    return (
        response
        if page.as_of is not None
        else HttpResponseStopPolling(response.content)
    )


@require_GET
@vary_on_htmx
def agreement(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """Agreement between humans on a run: per scorer (every queue's answers) and per
    queue, with per-reviewer figures."""
    return _agreement_render(request, project_id, run_id, region=False)


@require_GET
@vary_on_htmx
def agreement_figures(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """The page's #agreement-figures region, polled by htmx while it shows figures
    of an earlier state; stops the polling once they are recounted."""
    # Another project's run is a 404 before anything else, the redirect included.
    run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    if not wants_partial(request):
        url = reverse("review:agreement", args=[project_id, run_id])
        query = request.GET.urlencode()
        return redirect(f"{url}?{query}" if query else url)
    return _agreement_render(request, project_id, run_id, region=True)
