from __future__ import annotations

import json
import os
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.accounts.models import Project
from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.datasets import services, uploads
from evalsite.datasets.agentdata import AGENT_FIELDS
from evalsite.datasets.forms import MappingForm, PageForm, UploadForm
from evalsite.datasets.parsing.limits import Problem
from evalsite.datasets.parsing.mapping import mapping_carry_over
from evalsite.datasets.parsing.rows import Preview
from evalsite.datasets.selectors import (
    dataset_get_for_user,
    dataset_latest_version,
    dataset_list,
    item_list,
)
from evalsite.datasets.templatetags import bounded
from evalsite.lib.htmx import partial, vary_on_htmx

ITEMS_PER_PAGE = 25
_SESSION_KEY = "dataset_uploads"


def _list_context(
    project: Project, archived: bool = False, **extra: Any
) -> dict[str, Any]:
    return {
        "project": project,
        "archived": archived,
        "datasets": dataset_list(project=project, archived=archived).select_related(
            "created_by"
        ),
        "can_upload": project.membership.can_review,
        **extra,
    }


@require_GET
def dataset_list_view(
    request: AuthenticatedHttpRequest, project_id: int
) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    archived = request.GET.get("archived") == "1"
    return render(
        request,
        "datasets/list.html",
        _list_context(project, archived=archived, form=UploadForm()),
    )


def _problems_of(exc: ApplicationError) -> list[Problem]:
    problems = getattr(exc, "problems", None)
    if problems:
        return list(problems)
    return [Problem(msg, column=field) for field, msg in exc.field_errors.items()]


@require_POST
def dataset_upload(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    """Step 1: keep the file on disk, check it can be read, go to the mapping step."""
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    form = UploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(
            request, "datasets/list.html", _list_context(project, form=form), status=400
        )
    upload = form.cleaned_data["file"]
    file_format = form.cleaned_data["file_format"] or None
    try:
        # Size first, so an oversized file is refused before it is copied anywhere.
        services.dataset_check_upload(file=upload)
        preview = services.dataset_preview(file=upload, file_format=file_format)
        token = uploads.upload_store(file=upload)
    except ApplicationError as exc:
        return render(
            request,
            "datasets/list.html",
            _list_context(
                project, form=form, error=exc.message, problems=_problems_of(exc)
            ),
            status=400,
        )
    name = form.cleaned_data["name"] or os.path.splitext(upload.name or "dataset")[0]
    # Abandoned uploads are forgotten here; uploads_cleanup sweeps their files.
    uploads.upload_remember(
        request.session,
        key=_SESSION_KEY,
        token=token,
        info={
            "project_id": project.pk,
            "user_id": request.user.pk,
            "filename": os.path.basename(upload.name or ""),
            "name": name[:200],
            "file_format": preview.file_format,
        },
    )
    return redirect("datasets:map", project_id=project.pk, token=token)


def _preview_table(preview: Preview) -> list[list[str]]:
    """The first rows, cut to the columns the page shows (bounded.COLUMNS)."""
    shown = preview.columns[: bounded.COLUMNS]
    return [[_cell(row.get(c)) for c in shown] for row in preview.rows]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _form_ctx(form: MappingForm) -> dict[str, Any]:
    return {
        "form": form,
        "mapping_fields": [
            form[n] for n in ("input", "output", "context", "reference")
        ],
        "agent_fields": [form[n] for n in AGENT_FIELDS],
        # Folded away unless a column is already mapped (or wrong) there.
        "agent_open": any(form[n].value() or form[n].errors for n in AGENT_FIELDS),
    }


@require_http_methods(["GET", "POST"])
def dataset_map(
    request: AuthenticatedHttpRequest, project_id: int, token: str
) -> HttpResponse:
    """Step 2: show the first rows, map the columns, create the dataset."""
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    info, file = uploads.upload_recall(
        request.session,
        key=_SESSION_KEY,
        token=token,
        project_id=project.pk,
        user_id=request.user.pk,
        expired="This upload has expired; upload the file again.",
    )
    with file:
        try:
            preview = services.dataset_preview(
                file=file, file_format=info["file_format"]
            )
        except ApplicationError as exc:
            uploads.upload_forget(request.session, key=_SESSION_KEY, token=token)
            messages.error(request, exc.message)
            return redirect("datasets:list", project_id=project.pk)
        context: dict[str, Any] = {
            "project": project,
            "info": info,
            "token": token,
            "preview": preview,
            "preview_table": _preview_table(preview),
            "preview_columns": bounded.bound(preview.columns, bounded.COLUMNS),
        }
        if request.method == "GET":
            mapping = preview.mapping
            previous = dataset_latest_version(project=project, name=info["name"])
            if previous is not None and isinstance(previous.mapping, dict):
                mapping = mapping_carry_over(
                    previous.mapping,
                    list(previous.columns or []),
                    preview.columns,
                    preview.mapping,
                )
                context["previous"] = previous
            form = MappingForm(
                columns=preview.columns,
                initial=MappingForm.initial_from(mapping, info["name"]),
            )
            return render(request, "datasets/map.html", {**context, **_form_ctx(form)})
        form = MappingForm(request.POST, columns=preview.columns)
        if not form.is_valid():
            return render(
                request,
                "datasets/map.html",
                {**context, **_form_ctx(form)},
                status=400,
            )
        try:
            dataset = services.dataset_create(
                project=project,
                user=request.user,
                file=file,
                name=form.cleaned_data["name"],
                mapping=form.mapping(),
                file_format=info["file_format"],
            )
        except ApplicationError as exc:
            return render(
                request,
                "datasets/map.html",
                {
                    **context,
                    **_form_ctx(form),
                    "error": exc.message,
                    "problems": _problems_of(exc),
                },
                status=400,
            )
    uploads.upload_forget(request.session, key=_SESSION_KEY, token=token)
    messages.success(
        request,
        f"Imported {dataset.item_count} items as “{dataset.name}” v{dataset.version}.",
    )
    return redirect("datasets:detail", project_id=project.pk, dataset_id=dataset.pk)


@require_GET
@vary_on_htmx
def dataset_detail(
    request: AuthenticatedHttpRequest, project_id: int, dataset_id: int
) -> HttpResponse:
    dataset = dataset_get_for_user(
        user=request.user, pk=dataset_id, project_id=project_id
    )
    page_form = PageForm(request.GET)
    if not page_form.is_valid():
        return HttpResponse("Invalid page number.", status=400)
    paginator = Paginator(item_list(dataset=dataset), ITEMS_PER_PAGE)
    # item_count is exact (datasets are immutable), so skip the COUNT(*) query.
    paginator.count = dataset.item_count
    page = paginator.get_page(page_form.cleaned_data["page"] or 1)
    template = partial(request, "datasets/detail.html", "items")
    return render(
        request,
        template,
        {
            "project": dataset.project,
            "dataset": dataset,
            "page": page,
            "metadata_columns": bounded.bound(
                [
                    c
                    for c in dataset.columns
                    if c not in set((dataset.mapping or {}).values())
                ],
                bounded.COLUMNS,
            ),
            "agent_mapping": [
                (name, dataset.mapping[name]) for name in dataset.agent_fields
            ],
        },
    )
