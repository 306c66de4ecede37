"""Item page, overrides and undo (htmx), what-if rescore and run comparison pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.accounts.selectors import project_get_for_user, require_rescore_save
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import JudgeCall, Result, RunScorer
from evalsite.review import selectors, services
from evalsite.review.forms import CompareForm, OverrideForm, RescoreForm
from evalsite.review.forms_queue import CommentForm
from evalsite.review.models import Override
from scoring import KINDS, KindSpec


@dataclass
class Panel:
    r: Result
    spec: KindSpec | None
    view: selectors.AnalysisView
    can_write: bool
    hide_judge: bool
    overrides: list[Override] = field(default_factory=list)
    calls: list[JudgeCall] = field(default_factory=list)
    error: str = ""
    notice: str = ""
    offline: bool = False

    @property
    def tokens(self) -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.calls)

    @property
    def latency_ms(self) -> float:
        return sum(c.latency_ms for c in self.calls)


def _hide_judge(request: HttpRequest, project: Any, result: Result) -> bool:
    """Blind-review hook (D2 owns the blind flow): hide the judge until reviewed."""
    blind = request.GET.get("blind") == "1" or getattr(project, "blind_review", False)
    return bool(blind and not result.reviewed)


def _panel(
    request: HttpRequest,
    result: Result,
    *,
    can_write: bool,
    error: str = "",
    notice: str = "",
) -> Panel:
    project = result.run.project
    return Panel(
        r=result,
        spec=KINDS.get(result.run_scorer.kind),
        view=selectors.analysis_view(
            kind=result.run_scorer.kind,
            analysis=result.analysis,
            final_analysis=result.final_analysis,
            context=result.item.context or [],
        ),
        can_write=can_write,
        hide_judge=_hide_judge(request, project, result),
        overrides=list(
            result.overrides.select_related("user", "reverted_by").order_by(
                "created_at", "id"
            )
        ),
        # The prompts and raw replies (kilobytes per call) load when opened: see
        # judge_call. Every review write re-renders the panel without them.
        calls=list(result.calls.defer("messages", "raw_response")),
        error=error,
        notice=notice,
        offline=bool((result.run_scorer.judge_snapshot or {}).get("is_offline")),
    )


@require_GET
def judge_call(
    request: HttpRequest, project_id: int, result_id: int, call_id: int
) -> HttpResponse:
    """One judge call's prompt and raw reply (the item panel loads it when opened)."""
    result = selectors.result_get_for_user(
        user=request.user, pk=result_id, project_id=project_id
    )
    if _hide_judge(request, result.project, result):  # type: ignore[attr-defined]
        raise PermissionDenied("Blind review: the judge's calls show once you answer.")
    call = JudgeCall.objects.filter(pk=call_id, result_id=result.pk).first()
    if call is None:
        raise Http404("No such judge call.")
    return render(request, "review/_judge_call.html", {"call": call})


def _can_write(project: Any) -> bool:
    return bool(project.membership.can_review)


@require_GET
def item(request: HttpRequest, project_id: int, result_id: int) -> HttpResponse:
    result = selectors.result_get_for_user(
        user=request.user, pk=result_id, project_id=project_id
    )
    project = result.project  # type: ignore[attr-defined]
    panel = _panel(request, result, can_write=_can_write(project))
    siblings = (
        Result.objects.filter(run_id=result.run_id, item_id=result.item_id)
        .exclude(pk=result.pk)
        .select_related("run_scorer")
        .order_by("run_scorer__position", "run_scorer_id")
    )
    context = {
        "project": project,
        "run": result.run,
        "item": result.item,
        "panels": [panel],
        "siblings": siblings,
        "single": True,
        "aggregates": selectors.run_aggregates(
            run_id=result.run_id, run_scorer_id=result.run_scorer_id
        ),
    }
    if request.htmx:  # type: ignore[attr-defined]
        return render(
            request, "review/item.html#result-panel", {**context, "panel": panel}
        )
    context.update(
        result=result,
        comments=result.comments.select_related("user"),
        comment_form=CommentForm(),
        can_write=_can_write(project),
        events=result.audit_events.select_related("actor")[:50],
    )
    return render(request, "review/item.html", context)


@require_GET
def run_item(
    request: HttpRequest, project_id: int, run_id: int, item_id: int
) -> HttpResponse:
    run = selectors.run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id
    )
    results = list(
        Result.objects.filter(run=run, item_id=item_id)
        .select_related("run", "run__project", "run_scorer", "item", "reviewed_by")
        .order_by("run_scorer__position", "run_scorer_id")
    )
    if not results:
        raise Http404("No such item in this run.")
    for r in results:
        r.run.project = run.project
    can_write = _can_write(run.project)
    return render(
        request,
        "review/item.html",
        {
            "project": run.project,
            "run": run,
            "item": results[0].item,
            "panels": [_panel(request, r, can_write=can_write) for r in results],
            "siblings": [],
            "single": False,
            "aggregates": selectors.run_aggregates(run_id=run.pk),
        },
    )


def _panel_response(
    request: HttpRequest, result: Result, *, error: str = "", notice: str = ""
) -> HttpResponse:
    """The updated result panel + the scorer's aggregates card (hx-swap-oob) at once."""
    project = result.run.project
    # The review services copy the committed row back onto `result`; its run, scorer
    # and item are the ones loaded for the permission check.
    if result.reviewed_by_id is not None and result.reviewed_by_id == request.user.pk:
        result.reviewed_by = request.user  # type: ignore[assignment]
    panel = _panel(request, result, can_write=True, error=error, notice=notice)
    agg = selectors.run_aggregates(
        run_id=result.run_id, run_scorer_id=result.run_scorer_id
    )
    return render(
        request,
        "review/_override_response.html",
        {
            "panel": panel,
            "project": project,
            "run": result.run,
            "agg": agg[0] if agg else None,
            "oob": True,
        },
    )


def _after_write(
    request: HttpRequest, result: Result, *, error: str = "", notice: str = ""
) -> HttpResponse:
    if request.htmx:  # type: ignore[attr-defined]
        return _panel_response(request, result, error=error, notice=notice)
    if error:
        messages.error(request, error)
    elif notice:
        messages.warning(request, notice)
    return redirect(
        reverse("review:item", args=[result.run.project_id, result.pk])
        + f"#result-panel-{result.pk}"
    )


@require_POST
def override_create(
    request: HttpRequest, project_id: int, result_id: int
) -> HttpResponse:
    result = selectors.result_get_for_user(
        user=request.user, pk=result_id, project_id=project_id, write=True
    )
    form = OverrideForm(request.POST, scorer_kind=result.run_scorer.kind)
    if not form.is_valid():
        errors = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
        return _after_write(request, result, error=f"Not saved: {errors}")
    data = form.cleaned_data
    notice = ""
    if data.get("version") is not None and data["version"] != result.version:
        # The UI applies the change anyway (no lost update) and says what happened.
        notice = "Someone else changed this result since you opened it; showing the newest state."
    try:
        services.override_create(
            result=result,
            user=request.user,  # type: ignore[arg-type]
            kind=data["kind"],
            path=data.get("path") or "",
            value=data["value"],
            note=data.get("note") or "",
        )
    except ApplicationError as exc:
        return _after_write(request, result, error=exc.message)
    return _after_write(request, result, notice=notice)


@require_POST
def override_revert(
    request: HttpRequest, project_id: int, override_id: int
) -> HttpResponse:
    override = Override.objects.filter(pk=override_id).only("id", "result_id").first()
    if override is None:
        raise Http404("No such override.")
    result = selectors.result_get_for_user(
        user=request.user, pk=override.result_id, project_id=project_id, write=True
    )
    override = Override.objects.get(pk=override_id)
    override.result = result
    try:
        services.override_revert(override=override, user=request.user)  # type: ignore[arg-type]
    except ApplicationError as exc:
        return _after_write(request, result, error=exc.message)
    return _after_write(request, result)


@require_POST
def accept(request: HttpRequest, project_id: int, result_id: int) -> HttpResponse:
    result = selectors.result_get_for_user(
        user=request.user, pk=result_id, project_id=project_id, write=True
    )
    try:
        services.result_accept(result=result, user=request.user)  # type: ignore[arg-type]
    except ApplicationError as exc:
        return _after_write(request, result, error=exc.message)
    return _after_write(request, result)


# -------------------------------------------------------------------------- rescore


@require_http_methods(["GET", "POST"])
def rescore(request: HttpRequest, project_id: int, run_id: int) -> HttpResponse:
    """What-if: GET shows the form; POST action=preview shows before → after;
    POST action=save saves a new scorer version (owners, or reviewers the owner
    allowed) once confirmed: without `confirm=yes` it previews and asks (hx-confirm
    sends it with htmx); discard is a link back."""
    write = request.method == "POST"
    run = selectors.run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id, write=write
    )
    scorers = list(RunScorer.objects.filter(run=run).order_by("position", "id"))
    if not scorers:
        raise Http404("This run has no scorers.")
    raw_id = request.POST.get("scorer") or request.GET.get("scorer")
    run_scorer = scorers[0]
    if raw_id:
        run_scorer = next((s for s in scorers if str(s.pk) == raw_id), None)  # type: ignore[assignment]
        if run_scorer is None:
            raise Http404("No such scorer in this run.")
    form = RescoreForm(
        request.POST if write else None,
        kind=run_scorer.kind,
        current=run_scorer.options or {},
    )
    preview = None
    error = ""
    confirm_save = False
    if write and request.POST.get("action") == "save":
        require_rescore_save(membership=run.project.membership)  # type: ignore[attr-defined]
    if write and not form.is_valid():
        # htmx swaps only the result region, so the reason goes there too.
        error = "Not computed: " + "; ".join(
            f"{form.fields[name].label if name in form.fields else name}: {' '.join(msgs)}"
            for name, msgs in form.errors.items()
        )
    elif write:
        save = request.POST.get("action") == "save"
        if save and request.POST.get("confirm") != "yes":
            # It rewrites the scorer's final scores for everyone: show what changes
            # and ask first.
            save, confirm_save = False, True
        try:
            preview = services.run_rescore(
                run=run,
                run_scorer=run_scorer,
                options=form.options(),
                user=request.user,  # type: ignore[arg-type]
                save=save,
            )
        except ApplicationError as exc:
            error = exc.message
            for name, msg in exc.field_errors.items():
                field_name = name.removeprefix("options.").replace(".", "__")
                if field_name in form.fields:
                    form.add_error(field_name, msg)
        else:
            if save and not request.htmx:  # type: ignore[attr-defined]
                messages.success(
                    request,
                    f"Saved as a new version of {run_scorer.name}; "
                    f"{preview.changed_scores} scores changed.",
                )
                return redirect(
                    reverse("review:rescore", args=[project_id, run.pk])
                    + f"?scorer={run_scorer.pk}"
                )
    context = {
        "project": run.project,
        "run": run,
        "scorers": scorers,
        "run_scorer": run_scorer,
        "form": form,
        "preview": preview,
        "error": error,
        "can_write": _can_write(run.project),
        "can_save": run.project.membership.can_save_rescore,  # type: ignore[attr-defined]
        "confirm_save": confirm_save and preview is not None,
        "finished": run.is_finished,
    }
    template = "review/rescore.html"
    if request.htmx and write:  # type: ignore[attr-defined]
        template += "#rescore-result"
    return render(request, template, context)


# -------------------------------------------------------------------------- compare


@require_GET
def compare(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    form = CompareForm(request.GET or None, project=project)
    context: dict[str, Any] = {"project": project, "form": form}
    status = 200
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        comparison = selectors.runs_compare(run_a=data["a"], run_b=data["b"])
        pair = comparison.pair_for(data.get("scorer"))
        context.update(
            comparison=comparison,
            pair=pair,
            page=comparison.page(
                number=data.get("page") or 1,
                per_page=data.get("per_page") or 50,
                only=data.get("only") or "",
                scorer=pair.a.pk if pair else None,
            ),
        )
    elif form.is_bound:
        status = 400
    template = "review/compare.html"
    if request.htmx:  # type: ignore[attr-defined]
        template += "#compare-body"
    return render(request, template, context, status=status)
