"""The judge lab page of a scorer: its human labels, candidates, replays and the
versions side by side. Every member may look; only owners change candidates, replay
(it costs judge calls) and promote."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import Run, ScorerConfig
from evalsite.lib.htmx import partial, redirect_htmx, vary_on_htmx
from evalsite.review.lab.forms import (
    CandidateForm,
    ExampleForm,
    ProposedForm,
    RemoveForm,
)
from evalsite.review.lab.selectors import (
    comparison,
    current_scorer,
    lab_candidate_get_for_user,
    lab_candidates,
    lab_replays,
    lab_scorer_get_for_user,
    labels,
    proposed_examples,
    with_texts,
)
from evalsite.review.lab.services import (
    lab_candidate_create,
    lab_candidate_promote,
    lab_candidate_update,
    lab_example_add,
    lab_example_remove,
    lab_examples_add_proposed,
    lab_replay_cancel,
    lab_replay_preview,
    lab_replay_start,
)
from evalsite.review.models import LabCandidate, LabReplay

LABELS_PER_PAGE = 50


def _lab_url(scorer: ScorerConfig, candidate: LabCandidate | None = None) -> str:
    url = reverse("review:lab", args=[scorer.project_id, scorer.pk])
    return f"{url}?candidate={candidate.pk}" if candidate is not None else url


def _replay_state(replay: LabReplay) -> dict[str, Any]:
    runs = [*replay.current_runs.all(), *replay.candidate_runs.all()]
    active = [r for r in runs if r.status in (Run.Status.QUEUED, Run.Status.RUNNING)]
    return {"replay": replay, "runs": runs, "active": bool(active)}


def _context(
    request: AuthenticatedHttpRequest,
    scorer: ScorerConfig,
    candidate: LabCandidate | None = None,
    **extra: Any,
) -> dict[str, Any]:
    label_list = labels(project_id=scorer.project_id, kind=scorer.kind)
    candidates = lab_candidates(scorer=scorer)
    if candidate is None and candidates:
        wanted = request.GET.get("candidate")
        candidate = next((c for c in candidates if str(c.pk) == wanted), candidates[0])
    replays = lab_replays(scorer=scorer)
    proposed = []
    if candidate is not None:
        taken = [i for i in candidate.example_items or [] if i is not None]
        proposed = proposed_examples(label_list=label_list, exclude=taken)
    page = Paginator(label_list, LABELS_PER_PAGE).get_page(request.GET.get("page") or 1)
    page.object_list = with_texts(list(page.object_list))
    states = [_replay_state(r) for r in replays[:5]]
    compared = comparison(scorer=scorer, label_list=label_list)
    examples = (
        list((candidate.options or {}).get("examples") or []) if candidate else []
    )
    items = list(candidate.example_items or []) if candidate else []
    return {
        "project": scorer.project,
        "scorer": scorer,
        "current": current_scorer(scorer=scorer),
        "labels": page,
        "label_count": len(label_list),
        "corrections": sum(1 for label in label_list if label.corrected),
        "candidates": candidates,
        "candidate": candidate,
        "examples": [
            (position, example, items[position - 1] if position <= len(items) else None)
            for position, example in enumerate(examples, start=1)
        ],
        "proposed": proposed,
        "form": CandidateForm(
            initial={
                "name": candidate.name,
                "rubric": (candidate.options or {}).get("rubric", ""),
                "judge_model": (candidate.options or {}).get("judge_model", ""),
                "judge_temperature": (candidate.options or {}).get("judge_temperature"),
            }
        )
        if candidate
        else None,
        "example_form": ExampleForm(),
        "replays": states,
        "replay_active": any(state["active"] for state in states),
        "comparison": compared,
        "can_manage": scorer.project.membership.can_manage,
        "lab_url": _lab_url(scorer, candidate),
        **extra,
    }


@require_GET
@vary_on_htmx
def lab(
    request: AuthenticatedHttpRequest, project_id: int, scorer_id: int
) -> HttpResponse:
    """The lab. htmx asks for the labels' pages (#lab-labels) and, while a replay
    runs, for the versions side by side (#lab-versions)."""
    scorer = lab_scorer_get_for_user(
        user=request.user, project_id=project_id, scorer_id=scorer_id
    )
    region = request.GET.get("region")
    template = "review/lab/lab.html"
    if region in ("lab-labels", "lab-versions"):
        template = partial(request, template, region)
    return render(request, template, _context(request, scorer))


def _manage(
    request: AuthenticatedHttpRequest,
    project_id: int,
    scorer_id: int,
    candidate_id: int,
) -> LabCandidate:
    return lab_candidate_get_for_user(
        user=request.user,
        project_id=project_id,
        scorer_id=scorer_id,
        pk=candidate_id,
        manage=True,
    )


def _form_errors(form: forms.Form) -> str:
    return "; ".join(
        f"{name}: {' '.join(str(e) for e in errors)}"
        for name, errors in form.errors.items()
    )


def _fail(
    request: AuthenticatedHttpRequest,
    scorer: ScorerConfig,
    candidate: LabCandidate | None,
    message: str,
    **extra: Any,
) -> HttpResponse:
    """The lab again with the error on top, status 400, nothing saved."""
    context = _context(request, scorer, candidate, error=message, **extra)
    return render(request, "review/lab/lab.html", context, status=400)


@require_POST
def candidate_create(
    request: AuthenticatedHttpRequest, project_id: int, scorer_id: int
) -> HttpResponse:
    scorer = lab_scorer_get_for_user(
        user=request.user, project_id=project_id, scorer_id=scorer_id, manage=True
    )
    try:
        candidate = lab_candidate_create(
            scorer=scorer, user=request.user, name=request.POST.get("name", "")
        )
    except ApplicationError as exc:
        return _fail(request, scorer, None, exc.message)
    messages.success(request, f"Candidate “{candidate.name}” drafted.")
    return redirect_htmx(request, _lab_url(scorer, candidate))


@require_POST
def candidate_update(
    request: AuthenticatedHttpRequest,
    project_id: int,
    scorer_id: int,
    candidate_id: int,
) -> HttpResponse:
    candidate = _manage(request, project_id, scorer_id, candidate_id)
    scorer = candidate.scorer
    scorer.project = candidate.project
    form = CandidateForm(request.POST)
    if not form.is_valid():
        return _fail(request, scorer, candidate, _form_errors(form))
    data = form.cleaned_data
    try:
        lab_candidate_update(
            candidate=candidate,
            user=request.user,
            name=data["name"],
            rubric=data.get("rubric") or "",
            judge_model=data.get("judge_model") or "",
            judge_temperature=data.get("judge_temperature"),
        )
    except ApplicationError as exc:
        candidate.refresh_from_db()
        return _fail(request, scorer, candidate, exc.message)
    messages.success(request, f"Candidate “{candidate.name}” saved.")
    return redirect_htmx(request, _lab_url(scorer, candidate))


@require_POST
def example_add(
    request: AuthenticatedHttpRequest,
    project_id: int,
    scorer_id: int,
    candidate_id: int,
) -> HttpResponse:
    """A hand-written example."""
    candidate = _manage(request, project_id, scorer_id, candidate_id)
    scorer = candidate.scorer
    scorer.project = candidate.project
    form = ExampleForm(request.POST)
    if not form.is_valid():
        return _fail(request, scorer, candidate, _form_errors(form))
    data = form.cleaned_data
    try:
        lab_example_add(
            candidate=candidate,
            user=request.user,
            input=data.get("input") or "",
            output=data.get("output") or "",
            context=form.context_chunks(),
            verdict=data["verdict"],
            explanation=data.get("explanation") or "",
        )
    except ApplicationError as exc:
        candidate.refresh_from_db()
        return _fail(request, scorer, candidate, exc.message)
    return redirect_htmx(request, _lab_url(scorer, candidate))


@require_POST
def example_add_proposed(
    request: AuthenticatedHttpRequest,
    project_id: int,
    scorer_id: int,
    candidate_id: int,
) -> HttpResponse:
    """One click: every proposed example, or the one of `item`."""
    candidate = _manage(request, project_id, scorer_id, candidate_id)
    scorer = candidate.scorer
    scorer.project = candidate.project
    form = ProposedForm(request.POST)
    if not form.is_valid():
        return _fail(request, scorer, candidate, "Choose a proposed example.")
    try:
        added = lab_examples_add_proposed(
            candidate=candidate,
            user=request.user,
            label_list=labels(project_id=scorer.project_id, kind=scorer.kind),
            only=form.cleaned_data.get("item"),
        )
    except ApplicationError as exc:
        candidate.refresh_from_db()
        return _fail(request, scorer, candidate, exc.message)
    messages.success(
        request, f"{len(added)} example(s) added; their items are held out."
    )
    return redirect_htmx(request, _lab_url(scorer, candidate))


@require_POST
def example_remove(
    request: AuthenticatedHttpRequest,
    project_id: int,
    scorer_id: int,
    candidate_id: int,
) -> HttpResponse:
    candidate = _manage(request, project_id, scorer_id, candidate_id)
    scorer = candidate.scorer
    scorer.project = candidate.project
    form = RemoveForm(request.POST)
    if not form.is_valid():
        return _fail(request, scorer, candidate, "Which example? No position given.")
    try:
        lab_example_remove(
            candidate=candidate,
            user=request.user,
            position=form.cleaned_data["position"],
        )
    except ApplicationError as exc:
        candidate.refresh_from_db()
        return _fail(request, scorer, candidate, exc.message)
    return redirect_htmx(request, _lab_url(scorer, candidate))


@require_GET
def replay_preview(
    request: AuthenticatedHttpRequest,
    project_id: int,
    scorer_id: int,
    candidate_id: int,
) -> HttpResponse:
    """Calls and cost of a replay, with the button that starts it."""
    candidate = _manage(request, project_id, scorer_id, candidate_id)
    scorer = candidate.scorer
    label_list = labels(project_id=scorer.project_id, kind=scorer.kind)
    preview = lab_replay_preview(candidate=candidate, label_list=label_list)
    context = {
        "project": candidate.project,
        "scorer": scorer,
        "candidate": candidate,
        "preview": preview,
        "held_out": len({i for i in candidate.example_items or [] if i is not None}),
    }
    return render(request, "review/lab/_replay_preview.html", context)


@require_POST
def replay_start(
    request: AuthenticatedHttpRequest,
    project_id: int,
    scorer_id: int,
    candidate_id: int,
) -> HttpResponse:
    candidate = _manage(request, project_id, scorer_id, candidate_id)
    scorer = candidate.scorer
    scorer.project = candidate.project
    try:
        replay = lab_replay_start(
            candidate=candidate,
            user=request.user,
            label_list=labels(project_id=scorer.project_id, kind=scorer.kind),
        )
    except ApplicationError as exc:
        return _fail(request, scorer, candidate, exc.message)
    messages.success(
        request,
        f"Replay started on {replay.items} labelled item(s); "
        f"{len(replay.held_out)} held out.",
    )
    return redirect_htmx(request, _lab_url(scorer, candidate))


@require_POST
def replay_cancel(
    request: AuthenticatedHttpRequest, project_id: int, scorer_id: int, replay_id: int
) -> HttpResponse:
    scorer = lab_scorer_get_for_user(
        user=request.user, project_id=project_id, scorer_id=scorer_id, manage=True
    )
    replay = (
        LabReplay.objects.filter(
            pk=replay_id, project_id=project_id, candidate__scorer__name=scorer.name
        )
        .select_related("project")
        .first()
    )
    if replay is None:
        raise Http404("No such replay.")
    try:
        cancelled = lab_replay_cancel(replay=replay, user=request.user)
    except ApplicationError as exc:
        return _fail(request, scorer, None, exc.message)
    messages.success(request, f"Replay cancelled ({cancelled} run(s) stopped).")
    return redirect_htmx(request, _lab_url(scorer))


@require_POST
def candidate_promote(
    request: AuthenticatedHttpRequest,
    project_id: int,
    scorer_id: int,
    candidate_id: int,
) -> HttpResponse:
    candidate = _manage(request, project_id, scorer_id, candidate_id)
    scorer = candidate.scorer
    scorer.project = candidate.project
    try:
        new = lab_candidate_promote(candidate=candidate, user=request.user)
    except ApplicationError as exc:
        return _fail(request, scorer, candidate, exc.message)
    messages.success(
        request,
        f"“{candidate.name}” is now {new.name} v{new.version}: the next run judges with it.",
    )
    return redirect_htmx(request, reverse("review:lab", args=[project_id, new.pk]))
