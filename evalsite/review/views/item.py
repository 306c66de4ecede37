"""The item page: one result (or every scorer's result for one item) and its judge calls.

Views are adapters: look up with a `*_get_for_user` helper (404 for outsiders, 403 for
viewers on writes), call one service, render the page or, for htmx, its partial.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import JudgeCall, Override, Result
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.results.item import AnalysisView, analysis_view
from evalsite.evals.runs.selectors import result_get_for_user, run_get_for_user
from evalsite.lib.htmx import vary_on_htmx, wants_partial
from evalsite.review.forms import CommentForm
from evalsite.review.selectors.audit import audit_list_for_result
from evalsite.review.selectors.blind import (
    BlindEntry,
    audit_mask_blind,
    blind_entry_for,
)
from evalsite.review.views.common import user_can_write
from evalsite.review.views.flow import reference_context
from scoring import KINDS, KindSpec


@dataclass(frozen=True)
class FieldError:
    """A refused override: which control ("score" or "pass"), what the reviewer typed
    there, and why it was refused."""

    control: str
    typed: str
    message: str

    @property
    def score(self) -> bool:
        return self.control == "score"

    @property
    def passfail(self) -> bool:
        return self.control == "pass"


@dataclass
class Panel:
    r: Result
    spec: KindSpec | None
    view: AnalysisView
    can_write: bool
    hide_judge: bool
    overrides: list[Override] = field(default_factory=list)
    calls: list[JudgeCall] = field(default_factory=list)
    error: str = ""
    notice: str = ""
    # A refused override, shown at its own control with what was typed there.
    field_error: FieldError | None = None
    offline: bool = False
    # Set while the result waits for this user's answer in a blind queue: the panel
    # then shows none of the judge, the final fields, the overrides or the calls.
    blind: BlindEntry | None = None

    @property
    def tokens(self) -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.calls)

    @property
    def latency_ms(self) -> float:
        return sum(c.latency_ms for c in self.calls)

    @property
    def wait_ms(self) -> float:
        return sum(c.wait_ms for c in self.calls)


def _hide_until_reviewed(request: HttpRequest, project: Any, result: Result) -> bool:
    """Blind review (the page's ?blind=1 or the project setting): hide the judge until
    reviewed."""
    blind = request.GET.get("blind") == "1" or getattr(project, "blind_review", False)
    return bool(blind) and not result.reviewed


def _hide_judge(request: HttpRequest, project: Any, result: Result) -> bool:
    """`_hide_until_reviewed`, and always while the result is blind to the user."""
    if _hide_until_reviewed(request, project, result):
        return True
    return blind_entry_for(user=request.user, result=result) is not None


def result_panel(
    request: HttpRequest,
    result: Result,
    *,
    can_write: bool,
    error: str = "",
    notice: str = "",
    field_error: FieldError | None = None,
) -> Panel:
    project = result.run.project
    blind = blind_entry_for(user=request.user, result=result)
    if blind is not None:
        return Panel(
            r=result,
            spec=KINDS.get(result.run_scorer.kind),
            view=analysis_view(
                kind=result.run_scorer.kind, analysis={}, final_analysis={}, context=[]
            ),
            can_write=can_write,
            hide_judge=True,
            error=error,
            notice=notice,
            field_error=field_error,
            blind=blind,
        )
    return Panel(
        r=result,
        spec=KINDS.get(result.run_scorer.kind),
        view=analysis_view(
            kind=result.run_scorer.kind,
            analysis=result.analysis,
            final_analysis=result.final_analysis,
            context=result.item.context or [],
        ),
        can_write=can_write,
        # Not blind to the user (just read): only the blind-review setting hides it.
        hide_judge=_hide_until_reviewed(request, project, result),
        overrides=list(
            result.overrides.select_related("user", "reverted_by").order_by(
                "created_at", "id"
            )
        ),
        # The prompts and raw replies (kilobytes per call) load when opened: see
        # judge_call. Every review write re-renders the panel without them.
        calls=list(result.calls.defer("messages", "raw_response", "error_body")),
        error=error,
        notice=notice,
        field_error=field_error,
        offline=bool((result.run_scorer.judge_snapshot or {}).get("is_offline")),
    )


@require_GET
def judge_call(
    request: HttpRequest, project_id: int, result_id: int, call_id: int
) -> HttpResponse:
    """One judge call's prompt and raw reply (the item panel loads it when opened)."""
    result = result_get_for_user(user=request.user, pk=result_id, project_id=project_id)
    if _hide_judge(request, result.project, result):
        raise PermissionDenied("Blind review: the judge's calls show once you answer.")
    call = JudgeCall.objects.filter(pk=call_id, result_id=result.pk).first()
    if call is None:
        raise Http404("No such judge call.")
    # The judge's whole reply to a failed call is for owners: a judge may answer with
    # anything, the request's headers too; others read the short reason.
    show_body = result.project.membership.can_manage
    return render(
        request, "review/_judge_call.html", {"call": call, "show_error_body": show_body}
    )


@require_GET
@vary_on_htmx
def item(
    request: AuthenticatedHttpRequest, project_id: int, result_id: int
) -> HttpResponse:
    result = result_get_for_user(user=request.user, pk=result_id, project_id=project_id)
    panel = result_panel(request, result, can_write=user_can_write(result.project))
    return item_page(request, result, panel)


def item_page(
    request: AuthenticatedHttpRequest,
    result: Result,
    panel: Panel,
    *,
    status: int = 200,
) -> HttpResponse:
    """The item page (or, for htmx, its result panel) of `result` showing `panel`: also
    the answer to a refused override posted without JavaScript, so the page comes
    back with the error at its control and the value typed there."""
    project = result.run.project
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
        "aggregates": run_aggregates(
            run_id=result.run_id, run_scorer_id=result.run_scorer_id
        ),
    }
    if wants_partial(request):
        return render(
            request,
            "review/item.html#result-panel",
            {**context, "panel": panel},
            status=status,
        )
    context.update(
        result=result,
        comments=[] if panel.blind else result.comments.select_related("user"),
        comment_form=CommentForm(),
        can_write=user_can_write(project),
        blind=panel.blind,
        events=audit_mask_blind(
            audit_list_for_result(result=result)[:50],
            user=request.user,
            project_id=project.pk,
            project=project,
        ),
        **reference_context(result),
    )
    return render(request, "review/item.html", context, status=status)


@require_GET
def run_item(
    request: HttpRequest, project_id: int, run_id: int, item_id: int
) -> HttpResponse:
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    results = list(
        Result.objects.filter(run=run, item_id=item_id)
        .select_related("run", "run__project", "run_scorer", "item", "reviewed_by")
        .order_by("run_scorer__position", "run_scorer_id")
    )
    if not results:
        raise Http404("No such item in this run.")
    for r in results:
        r.run.project = run.project
    can_write = user_can_write(run.project)
    return render(
        request,
        "review/item.html",
        {
            "project": run.project,
            "run": run,
            "item": results[0].item,
            "panels": [result_panel(request, r, can_write=can_write) for r in results],
            "siblings": [],
            "single": False,
            "aggregates": run_aggregates(run_id=run.pk),
            **reference_context(
                results[0],
                kinds=[r.run_scorer.kind for r in results],
            ),
        },
    )
