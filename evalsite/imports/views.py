"""The Import page: a file from promptfoo, Langfuse or LangSmith, previewed, then
imported as a dataset (and a finished run of its judge verdicts).

Here rather than in the datasets views because the run it makes is the evals app's
and datasets sits below evals in the app layers. The file is uploaded once and kept on
disk between the two steps, as the dataset upload does (datasets.uploads).
"""

from __future__ import annotations

import os
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from evalsite.accounts.models import Project
from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.datasets import uploads
from evalsite.datasets.parsing.limits import Problem
from evalsite.datasets.readers.base import TOOL_LABELS, Grade, ImportedRow
from evalsite.datasets.readers.forms import ConfirmForm, ImportForm, PreviewOptionsForm
from evalsite.datasets.readers.services import (
    ImportPreview,
    import_detect,
    import_preview,
)
from evalsite.datasets.services import dataset_check_upload
from evalsite.imports.services import ImportOutcome, import_create

_SESSION_KEY = "dataset_imports"


def _problems_of(exc: ApplicationError) -> list[Problem]:
    problems = getattr(exc, "problems", None)
    if problems:
        return list(problems)
    return [Problem(msg, column=field) for field, msg in exc.field_errors.items()]


@require_http_methods(["GET", "POST"])
def import_start(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    """Step 1: the file and (optionally) its tool; kept on disk for the preview."""
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    if request.method == "GET":
        return render(
            request, "imports/import.html", {"project": project, "form": ImportForm()}
        )
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(
            request,
            "imports/import.html",
            {"project": project, "form": form},
            status=400,
        )
    upload = form.cleaned_data["file"]
    tool = form.cleaned_data["tool"] or None
    try:
        # Size first, so an oversized file is refused before it is copied anywhere;
        # then whether it is a format we import at all.
        dataset_check_upload(file=upload)
        import_detect(file=upload, tool=tool)
        token = uploads.upload_store(file=upload)
    except ApplicationError as exc:
        return render(
            request,
            "imports/import.html",
            {
                "project": project,
                "form": form,
                "error": exc.message,
                "problems": _problems_of(exc),
            },
            status=400,
        )
    uploads.upload_remember(
        request.session,
        key=_SESSION_KEY,
        token=token,
        info={
            "project_id": project.pk,
            "user_id": request.user.pk,
            "filename": os.path.basename(upload.name or ""),
            "name": form.cleaned_data["name"],
            "tool": tool or "",
        },
    )
    return redirect("imports:preview", project_id=project.pk, token=token)


def _grade_text(grade: Grade) -> str:
    analysis = grade.analysis
    if analysis is None:
        return f"{grade.scorer}: error"
    if grade.kind == "factuality":
        text = f"{grade.scorer}: {analysis['category']}"
        return text + (" (category not in the file)" if grade.inferred else "")
    return f"{grade.scorer}: {'pass' if analysis['passed'] else 'fail'} {analysis['score']:g}"


def _row_cells(row: ImportedRow) -> dict[str, Any]:
    # The row's run has its own column when the file has several.
    return {"row": row, "verdict": " · ".join(_grade_text(g) for g in row.grades)}


@require_http_methods(["GET", "POST"])
def import_preview_view(
    request: AuthenticatedHttpRequest, project_id: int, token: str
) -> HttpResponse:
    """Step 2: what will be imported (counts, warnings, first items); then import it.

    A confirmed import reads the file once more (import_create reads it all anyway);
    the preview is worked out only for a page to show.
    """
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    info, file = uploads.upload_recall(
        request.session,
        key=_SESSION_KEY,
        token=token,
        project_id=project.pk,
        user_id=request.user.pk,
        expired="This import has expired; choose the file again.",
    )
    source = request.POST if request.method == "POST" else request.GET
    options = PreviewOptionsForm(
        source
        if ("tool" in source or "input_var" in source)
        else {"tool": info.get("tool", "")}
    )
    if not options.is_valid():
        return HttpResponse("Invalid format or input choice.", status=400)
    tool = options.cleaned_data["tool"] or None
    input_var = options.cleaned_data["input_var"] or None
    context: dict[str, Any] = {
        "project": project,
        "info": info,
        "token": token,
        "options": options,
    }
    status = 200
    with file:
        if request.method == "POST":
            form = ConfirmForm(request.POST)
            status = 400
            if form.is_valid():
                try:
                    outcome = import_create(
                        project=project,
                        user=request.user,
                        file=file,
                        name=form.cleaned_data["name"],
                        tool=tool,
                        input_var=input_var,
                        run_name=form.cleaned_data["run_name"],
                    )
                except ApplicationError as exc:
                    context.update(error=exc.message, problems=_problems_of(exc))
                else:
                    return _imported(request, token, project, outcome)
        try:
            preview: ImportPreview | None = import_preview(
                file=file, tool=tool, input_var=input_var
            )
        except ApplicationError as exc:
            preview = None
            context.setdefault("error", exc.message)
            context.setdefault("problems", _problems_of(exc))
    if preview is not None:
        context.update(
            preview=preview,
            tool_label=TOOL_LABELS.get(preview.tool, preview.tool),
            summary=preview.summary,
            # Plain dicts: a template looks `items` up in a Counter as a key.
            counts=preview.summary.as_dict(),
            rows=[_row_cells(r) for r in preview.rows],
        )
    if request.method == "GET":
        form = ConfirmForm(
            initial={
                "name": info.get("name") or (preview.name if preview else ""),
                "tool": tool or "",
                "input_var": input_var or "",
            }
        )
    context["form"] = form
    return render(request, "imports/import_preview.html", context, status=status)


def _imported(
    request: AuthenticatedHttpRequest,
    token: str,
    project: Project,
    outcome: ImportOutcome,
) -> HttpResponse:
    uploads.upload_forget(request.session, key=_SESSION_KEY, token=token)
    dataset, run, runs = outcome.dataset, outcome.run, outcome.runs
    versions = ", ".join(f"v{d.version}" for d in outcome.datasets)
    items = sum(d.item_count for d in outcome.datasets)
    text = f"Imported {items} items as “{dataset.name}” {versions}"
    if len(runs) > 1:
        messages.success(
            request,
            f"{text}, and their grades as {len(runs)} runs, one per prompt × "
            "provider: tick two and compare them.",
        )
        return redirect("evals:runs", project_id=project.pk)
    if run is not None:
        messages.success(
            request,
            f"{text}, and {run.total} grades ({outcome.summary.scorer}) as run “{run}”.",
        )
        return redirect("evals:run_detail", project_id=project.pk, pk=run.pk)
    messages.success(request, f"{text}.")
    return redirect("datasets:detail", project_id=project.pk, dataset_id=dataset.pk)
