"""The what-if rescore page."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import reswap, retarget

from evalsite.accounts.selectors import require_rescore_save
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import RunScorer
from evalsite.evals.results.rescore import run_rescore
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.lib.forms import form_add_application_error
from evalsite.lib.htmx import vary_on_htmx, wants_partial
from evalsite.review.forms import RescoreForm
from evalsite.review.views.common import user_can_write


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def rescore(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """What-if: GET shows the form; POST action=preview shows before → after;
    POST action=save saves a new scorer version (owners, or reviewers the owner
    allowed) once confirmed: without `confirm=yes` it previews and asks (hx-confirm
    sends it with htmx); discard is a link back."""
    write = request.method == "POST"
    run = run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id, write=write
    )
    scorers = list(RunScorer.objects.filter(run=run).order_by("position", "id"))
    if not scorers:
        raise Http404("This run has no scorers.")
    # run_scorer is a RunScorer id; "scorer" is its name before the run scorer rename (bookmarks).
    raw_id = (
        request.POST.get("run_scorer")
        or request.GET.get("run_scorer")
        or request.GET.get("scorer")
    )
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
        require_rescore_save(membership=run.project.membership)
    if write and not form.is_valid():
        # htmx swaps only the result region, so the reason goes there too.
        error = "Not computed: " + "; ".join(
            f"{form.fields[name].label if name in form.fields else name}: {' '.join(msgs)}"  # type: ignore[arg-type]  # ErrorList iterates as str
            for name, msgs in form.errors.items()
        )
    elif write:
        save = request.POST.get("action") == "save"
        if save and request.POST.get("confirm") != "yes":
            # It rewrites the scorer's final scores for everyone: show what changes
            # and ask first.
            save, confirm_save = False, True
        try:
            preview = run_rescore(
                run=run,
                run_scorer=run_scorer,
                options=form.options(),
                user=request.user,
                save=save,
            )
        except ApplicationError as exc:
            # The message goes to the result region (htmx swaps only that).
            error = exc.message
            form_add_application_error(
                form,
                exc,
                field_for=lambda name: name.removeprefix("options.").replace(".", "__"),
                message=False,
            )
        else:
            if save and not wants_partial(request):
                messages.success(
                    request,
                    f"Saved as a new version of {run_scorer.name}; "
                    f"{preview.changed_scores} scores changed.",
                )
                return redirect(
                    reverse("review:rescore", args=[project_id, run.pk])
                    + f"?run_scorer={run_scorer.pk}"
                )
    context = {
        "project": run.project,
        "run": run,
        "scorers": scorers,
        "run_scorer": run_scorer,
        "form": form,
        "preview": preview,
        "error": error,
        "can_write": user_can_write(run.project),
        "can_save": run.project.membership.can_save_rescore,
        "confirm_save": confirm_save and preview is not None,
        "finished": run.is_finished,
    }
    template = "review/rescore.html"
    if write and wants_partial(request) and form.errors:
        # A refused value: the form comes back (it posted to the result region) with
        # each error at its field and the values as typed.
        response = render(request, template + "#rescore-form", context)
        return reswap(retarget(response, "#rescore-form"), "outerHTML")
    if write and wants_partial(request):
        template += "#rescore-result"
    return render(request, template, context)
