"""The run comparison page (2–4 runs) and its side-by-side view of one matched item."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseStopPolling

from evalsite.accounts.models import Project
from evalsite.accounts.selectors import project_get_for_user
from evalsite.compare import selectors
from evalsite.compare.figures import compare_figures_send
from evalsite.compare.forms import CompareForm
from evalsite.compare.selectors import (
    ONLY_CHOICES,
    SIDE_LABELS,
    STATS_METHODS,
    Candidate,
    Comparison,
    ScorerDelta,
    Unmatched,
    compare_rows_mask,
)
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.datasets.matching.selectors import MatchSpec, normalise_input
from evalsite.lib.htmx import partial, vary_on_htmx, wants_partial
from evalsite.lib.worddiff import WORD_DIFF_MAX_WORDS, word_diff_cached
from evalsite.review.estimates.compare import DEFAULT_DETECT, corrected_difference
from evalsite.review.estimates.forms import DetectForm
from evalsite.review.selectors.blind import results_mask

TEMPLATE = "compare/compare.html"
# What run A's regressions are once B is the baseline.
_SWAPPED_ONLY = {"regressions": "improvements", "improvements": "regressions"}
_SWAPPED_UNMATCHED = {"removed": "added", "added": "removed"}


def _swap_query(
    query: QueryDict,
    *,
    comparison: Comparison,
    candidate: Candidate,
    delta: ScorerDelta | None,
) -> str:
    """The query of the same view with runs A and B swapped (B the baseline).

    The listed items stay the same items: the filter and the unmatched side turn
    over with the direction, and the scorer becomes run B's one of the pair. Against
    C or D the listed run stays, with run B's first scorer (its pair is unknown).
    """
    swapped = query.copy()
    run_a, run_b = comparison.run_a.pk, comparison.candidates[0].run.pk
    swapped["a"], swapped["b"] = str(run_b), str(run_a)
    for name in ("page", "after", "before", "a_item", "b_item", "run_scorer"):
        swapped.pop(name, None)
    if candidate.run.pk == run_b:
        swapped.pop("against", None)
        if delta is not None:
            swapped["run_scorer"] = str(delta.b.pk)
        only, unmatched = swapped.get("only", ""), swapped.get("unmatched", "")
        if isinstance(only, str) and only in _SWAPPED_ONLY:
            swapped["only"] = _SWAPPED_ONLY[only]
        if isinstance(unmatched, str) and unmatched in _SWAPPED_UNMATCHED:
            swapped["unmatched"] = _SWAPPED_UNMATCHED[unmatched]
    return str(swapped.urlencode())


def _detect(request: AuthenticatedHttpRequest) -> float:
    """The difference (share) to plan labels for: ?detect= in points, else 5."""
    form = DetectForm(request.GET)
    points = form.cleaned_data.get("detect") if form.is_valid() else None
    return (points or DEFAULT_DETECT * 100) / 100


def _compare_context(
    request: AuthenticatedHttpRequest,
    project: Project,
    *,
    with_item: bool,
    with_rows: bool = True,
) -> tuple[dict[str, Any], int]:
    """Parse the form, compare, and (with_item) load the chosen matched item.

    Steps: the form (400 when invalid, 404 for another project's run); the
    comparison (400 with the reason on a duplicate key or bad match rule), its
    figures not cached sent to a worker when they are many (the page polls
    compare_figures for them); the page of rows of the chosen run and scorer
    (with_rows); the side-by-side item.
    """
    form = CompareForm(request.GET or None, project=project)
    context: dict[str, Any] = {
        "project": project,
        "form": form,
        "side_labels": SIDE_LABELS,
        "methods": STATS_METHODS,
        # In the context, not {% url as %} in the page: the htmx partials need them.
        "compare_url": reverse("compare:compare", args=[project.pk]),
        "item_url": reverse("compare:compare_item", args=[project.pk]),
    }
    if not form.is_bound:
        return context, 200
    if len(form.raw_runs) == 1 and not with_item:
        # From a run page's "Compare with other runs": run A chosen, B still to pick.
        context["compare_prompt"] = "Choose a run B (and optionally C and D)."
        return context, 200
    if not form.is_valid():
        if form.foreign_run:
            raise Http404("No such run in this project.")
        return context, 400
    data = form.cleaned_data
    try:
        spec = MatchSpec(mode=data["match"], key=data["key"])
        # Large comparisons' figures are counted by a worker while the page polls:
        # counted here, the cold first page of bench_million's 2 × 1M results took
        # 2.6–5.3 s; without them (and with the leaner rows query) 0.33–0.67 s but
        # one outlier, alternated at the same load (8–11 on 2 cores).
        comparison = selectors.runs_compare(
            runs=data["runs"],
            spec=spec,
            count_max=settings.COMPARE_FIGURES_IN_REQUEST_MAX,
        )
    except ApplicationError as exc:
        context["compare_error"] = exc.message
        return context, 400
    if comparison.uncounted:
        compare_figures_send(comparison=comparison)
        figures_url = reverse("compare:compare_figures", args=[project.pk])
        context.update(
            figures_counting=len(comparison.uncounted),
            figures_url=f"{figures_url}?{request.GET.urlencode()}",
        )
    candidate = comparison.candidate_for(data.get("against"))
    delta = candidate.delta_for(data.get("run_scorer"))
    if delta is None and candidate.deltas:
        delta = candidate.deltas[0]
    # The side-by-side links of the rows share this query (one urlencode, not two
    # {% querystring %} per row).
    query = request.GET.copy()
    for name in ("a_item", "b_item"):
        query.pop(name, None)
    context.update(
        comparison=comparison,
        candidate=candidate,
        delta=delta,
        corrected=corrected_difference(
            run_scorer_a=delta.a,
            run_scorer_b=delta.b,
            same_dataset=candidate.match.same_dataset,
            match_id=candidate.match.match_id,
            detect=_detect(request),
            judge_cells=delta.judge_cells,
        )
        if delta is not None and delta.counted
        else None,
        side_query=query.urlencode(),
        swap_query=_swap_query(
            request.GET, comparison=comparison, candidate=candidate, delta=delta
        ),
    )
    unmatched: Unmatched | None = data.get("unmatched") or None
    paging = {"number": data.get("page") or 1, "per_page": data.get("per_page") or 50}
    if delta is not None and not unmatched:
        only = data.get("only") or ""
        # Counts None while the pair is being counted.
        context["filters"] = [
            (
                value,
                label,
                delta.rows_by_only.get(value, 0) if delta.counted else None,
                value == only,
            )
            for value, label in ONLY_CHOICES
        ]
    if not with_rows:
        return context, 200
    try:
        if unmatched:
            context["unmatched"] = unmatched
            context["unmatched_page"] = selectors.compare_unmatched(
                comparison=comparison,
                candidate=candidate,
                side=unmatched,
                delta=delta,
                **paging,
            )
        elif delta is not None:
            context["page"] = selectors.compare_rows(
                comparison=comparison,
                candidate=candidate,
                delta=delta,
                only=data.get("only") or "",
                after=data.get("after"),
                before=data.get("before"),
                **paging,
            )
            context["page_number"] = context["page"].number
            context["page_count"] = context["page"].num_pages
            compare_rows_mask(
                context["page"].rows,
                user=request.user,
                project_id=project.pk,
                project=project,
            )
    except ApplicationError as exc:
        context["compare_error"] = exc.message
        return context, 400
    if with_item:
        if not (data.get("a_item") and data.get("b_item")):
            context["compare_error"] = "Choose an item of the list (a_item and b_item)."
            return context, 400
        side = selectors.compare_item(
            comparison=comparison,
            candidate=candidate,
            a_item_id=data["a_item"],
            b_item_id=data["b_item"],
        )
        results_mask(
            [r for _, ra, rb in side.results for r in (ra, rb)],
            user=request.user,
            project_id=project.pk,
            project=project,
        )
        context.update(
            side=side,
            diff=word_diff_cached(side.a_item.output or "", side.b_item.output or ""),
            same_input=normalise_input(side.a_item.input)
            == normalise_input(side.b_item.input),
            diff_limit=WORD_DIFF_MAX_WORDS,
        )
    return context, 200


@require_GET
@vary_on_htmx
def compare(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    canonical = CompareForm(request.GET, project=project).canonical_query()
    if canonical is not None:
        # The runs list's ?runs=…&order=oldest, resolved once into ?a=&b=.
        return redirect(f"{reverse('compare:compare', args=[project.pk])}?{canonical}")
    context, status = _compare_context(request, project, with_item=False)
    template = partial(request, TEMPLATE, "compare-body")
    return render(request, template, context, status=status)


@require_GET
@vary_on_htmx
def compare_item(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    """One matched item of run A and another run side by side: inputs, outputs with a
    word diff of the outputs, every paired scorer's results."""
    project = project_get_for_user(user=request.user, pk=project_id)
    context, status = _compare_context(request, project, with_item=True)
    template = partial(request, TEMPLATE, "compare-side-by-side")
    return render(request, template, context, status=status)


@require_GET
@vary_on_htmx
def compare_figures(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    """The page's #compare-figures region, polled by htmx while a worker counts the
    figures; once they are in, it stops the polling and swaps in the row counts of
    the filters and the pager too (out of band)."""
    # Another project's run is a 404 before anything else, the redirect included.
    project = project_get_for_user(user=request.user, pk=project_id)
    context, status = _compare_context(
        request, project, with_item=False, with_rows=False
    )
    if not wants_partial(request):
        url = reverse("compare:compare", args=[project.pk])
        query = request.GET.urlencode()
        return redirect(f"{url}?{query}" if query else url)
    if status != 200 or "comparison" not in context:
        return render(request, f"{TEMPLATE}#compare-body", context, status=status)
    response = render(request, f"{TEMPLATE}#compare-figures", context)
    if context.get("figures_counting"):
        return response
    delta = context["delta"]
    if delta is not None and "filters" in context:
        data = context["form"].cleaned_data
        count = delta.rows_by_only.get(data.get("only") or "", 0)
        per_page = data.get("per_page") or 50
        context.update(
            oob=True,
            page_number=max(1, data.get("page") or 1),
            page_count=max(1, math.ceil(count / per_page)),
        )
        response.content += render_to_string(
            f"{TEMPLATE}#compare-filters", context, request
        ).encode()
        response.content += render_to_string(
            f"{TEMPLATE}#compare-page-count", context, request
        ).encode()
    return HttpResponseStopPolling(response.content)
