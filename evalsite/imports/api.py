"""Import API: another tool's file as a dataset (and its verdicts as a finished run).

Mounted by evalsite/api.py. Here, not in the datasets API, because the run it makes is
the evals app's and datasets sits below evals in the app layers.
"""

from __future__ import annotations

from typing import Any

from ninja import File, Form, Router, Schema, Status
from ninja.files import UploadedFile

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.schemas import ErrorOut
from evalsite.datasets.readers.base import ImportedRow, ImportSummary
from evalsite.datasets.readers.services import import_preview
from evalsite.datasets.schemas import DatasetOut
from evalsite.imports.services import import_create

router = Router(tags=["imports"])

_ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


class ImportSummaryOut(Schema):
    tool: str
    file_format: str
    rows: int
    details: dict[str, Any]
    input_source: str
    input_choices: list[str]
    scorer: str
    groups: list[str]
    verdicts: dict[str, int]
    categories: dict[str, int]
    other_assertions: dict[str, int]
    warnings: list[str]


class ImportedItemOut(Schema):
    index: int
    input: str
    output: str
    reference: str
    system_prompt: str
    conversation: list[dict[str, Any]] | None
    metadata: dict[str, Any]
    group: str
    grades: list[dict[str, Any]]


class ImportPreviewOut(Schema):
    tool: str
    makes_run: bool
    summary: ImportSummaryOut
    items: list[ImportedItemOut]


class ImportOut(Schema):
    dataset: DatasetOut
    run_id: int | None
    # One dataset version and run per promptfoo prompt x provider.
    dataset_ids: list[int]
    run_ids: list[int]
    summary: ImportSummaryOut


def _item(row: ImportedRow) -> dict[str, Any]:
    return {
        "index": row.index,
        "input": row.input,
        "output": row.output,
        "reference": row.reference,
        "system_prompt": row.system_prompt,
        "conversation": row.conversation,
        "metadata": row.metadata,
        "group": row.group,
        "grades": [
            {
                "scorer": g.scorer,
                "kind": g.kind,
                "analysis": g.analysis,
                "error": g.error,
                "category_inferred": g.inferred,
            }
            for g in row.grades
        ],
    }


def _summary(summary: ImportSummary) -> dict[str, Any]:
    return summary.as_dict()


def _tool(tool: str | None) -> str | None:
    return None if tool in (None, "", "auto") else tool


@router.post(
    "/projects/{project_id}/imports",
    response={200: ImportPreviewOut, 201: ImportOut, **_ERRORS},
    summary="Import a promptfoo, Langfuse or LangSmith file",
    description=(
        "Multipart form: `file`; optional `tool` (auto|promptfoo|langfuse|langsmith, "
        "default auto: detected from the file), `name` (the dataset; default the file "
        "name; an existing name gets a new version), `input_var` (promptfoo: the var "
        "that is the input, or `(rendered prompt)`; default a var named like "
        "query/question/input, else the rendered prompt), `run_name`, and `dry_run` "
        "(true: answer 200 with what would be imported, creating nothing). A promptfoo "
        "file (-o results.json or results.jsonl; CSV is refused) makes one dataset "
        "version and one finished run per prompt x provider, with a scorer per "
        "assertion type (promptfoo's pass, score and reason) and one for each test's "
        "own result; the answer lists `dataset_ids` and `run_ids`. A LangSmith "
        "experiment's `feedback.<key>` scores make one finished run, a scorer per key. "
        "A file that "
        "cannot be imported answers 400 with its first problems and creates nothing."
    ),
)
def import_file(
    request: AuthenticatedHttpRequest,
    project_id: int,
    file: File[UploadedFile],
    tool: Form[str | None] = None,
    name: Form[str | None] = None,
    input_var: Form[str | None] = None,
    run_name: Form[str | None] = None,
    dry_run: Form[bool] = False,
) -> Status[dict[str, Any]]:
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    if name is not None and len(name.strip()) > 200:
        raise ApplicationError(
            "The dataset name is too long.",
            field_errors={"name": "At most 200 characters."},
        )
    if dry_run:
        preview = import_preview(
            file=file, tool=_tool(tool), input_var=input_var or None
        )
        return Status(
            200,
            {
                "tool": preview.tool,
                "makes_run": preview.makes_run,
                "summary": _summary(preview.summary),
                "items": [_item(r) for r in preview.rows],
            },
        )
    outcome = import_create(
        project=project,
        user=request.user,
        file=file,
        name=name or "",
        tool=_tool(tool),
        input_var=input_var or None,
        run_name=run_name or "",
    )
    return Status(
        201,
        {
            "dataset": outcome.dataset,
            "run_id": outcome.run.pk if outcome.run else None,
            "dataset_ids": [d.pk for d in outcome.datasets],
            "run_ids": [r.pk for r in outcome.runs],
            "summary": _summary(outcome.summary),
        },
    )
