"""Dataset writes: preview an upload, create a dataset version from a file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File
from django.db import DataError, transaction
from django.db.models import Max

from evalsite.accounts.models import Project
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.agentdata import AGENT_FIELDS
from evalsite.datasets.matching.services import DATASET_VERSIONS_MATCH_TASK
from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.parsing.limits import Limits, ParseError, Problem
from evalsite.datasets.parsing.mapping import (
    Mapping,
    ParsedRow,
    mapping_carry_over,
)
from evalsite.datasets.parsing.rows import (
    FileFormat,
    Preview,
    detect_format,
    parse_rows,
    preview_rows,
)
from evalsite.datasets.selectors import dataset_latest_version
from evalsite.lib.db import insert_rows
from evalsite.lib.tasks import task_send_on_commit
from evalsite.lib.text import text_check_storable, unstorable_char
from scoring.injection import case_injections

BATCH_SIZE = 2000
# A batch is also inserted once its rows hold this many characters of the file: decoded,
# rows of tiny JSON values take ~27 bytes per character (16 M characters held 400 MB).
# Ordinary batches stay far below it (the ingest benchmark's: 1.1 M).
BATCH_MAX_CHARS = 2_000_000
MAX_PROBLEMS = 20


class UploadFile(Protocol):
    """What the services need from an upload: Django's UploadedFile or File both fit."""

    name: str | None

    def read(self, size: int = ..., /) -> bytes: ...
    def seek(self, offset: int, whence: int = ..., /) -> int: ...


class DatasetUploadError(ApplicationError):
    """A bad upload. `problems` lists the first few (row, column, message); nothing was
    imported. The API shows them as field errors named like "row 3, column context"."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        self.problems = list(problems or [Problem(message)])[:MAX_PROBLEMS]
        field_errors: dict[str, str] = {}
        for problem in self.problems:
            key = problem.field
            n = 2
            while key in field_errors:
                key = f"{problem.field} ({n})"
                n += 1
            field_errors[key] = problem.message
        super().__init__(message, field_errors=field_errors)


def _file_size(file: UploadFile) -> int | None:
    size = getattr(file, "size", None)
    return size if isinstance(size, int) else None


def _check_size(file: UploadFile) -> None:
    """Refuse oversized and empty files before reading a byte of them."""
    size = _file_size(file)
    limit = settings.DATASET_MAX_UPLOAD_BYTES
    if size is not None and size > limit:
        raise DatasetUploadError(
            f"The file is {human_bytes(size)}, over the upload limit of "
            f"{human_bytes(limit)}. Split it into smaller files.",
            [Problem(f"File too large ({human_bytes(size)} > {human_bytes(limit)}).")],
        )
    if size == 0:
        raise DatasetUploadError("The file is empty (0 bytes).")


def dataset_check_upload(*, file: UploadFile) -> None:
    """Raise DatasetUploadError for a file over the size limit or empty, unread."""
    _check_size(file)


def _limits() -> Limits:
    return Limits(
        max_nesting=settings.DATASET_MAX_NESTING,
        max_cell_chars=settings.DATASET_MAX_CELL_CHARS,
    )


def human_bytes(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} bytes"


def _binary(file: UploadFile) -> BinaryIO:
    file.seek(0)
    return file  # type: ignore[return-value]


def _format_of(file: UploadFile, file_format: str | None) -> FileFormat:
    binary = _binary(file)
    head = binary.read(64)
    try:
        return detect_format(os.path.basename(file.name or ""), file_format, head)
    except ParseError as exc:
        raise DatasetUploadError(exc.message, exc.problems) from None


def dataset_preview(*, file: UploadFile, file_format: str | None = None) -> Preview:
    """The columns, first rows and a suggested mapping of an uploaded file."""
    _check_size(file)
    fmt = _format_of(file, file_format)
    try:
        preview = preview_rows(
            _binary(file),
            file_format=fmt,
            limits=_limits(),
        )
    except ParseError as exc:
        raise DatasetUploadError(exc.message, exc.problems) from None
    if not preview.rows and preview.problems:
        # Nothing readable to map: say why now rather than at the mapping step.
        raise DatasetUploadError(_summary(preview.problems), preview.problems)
    return preview


def _resolve_mapping(
    file: UploadFile,
    fmt: str,
    mapping: dict[str, Any] | None,
    previous: Dataset | None = None,
) -> Mapping:
    if mapping is None:
        preview = dataset_preview(file=file, file_format=fmt)
        mapping = preview.mapping
        if previous is not None and isinstance(previous.mapping, dict):
            # A new version maps its columns as the previous version did.
            mapping = mapping_carry_over(
                previous.mapping,
                list(previous.columns or []),
                preview.columns,
                preview.mapping,
            )
        missing = [k for k in ("input", "output") if not mapping.get(k)]
        if missing:
            raise DatasetUploadError(
                f"No column is named {' or '.join(missing)}, so the columns must be "
                f"mapped. Columns found: {', '.join(preview.columns) or 'none'}.",
                [
                    Problem(f"Choose the column that holds the {k}.", column=k)
                    for k in missing
                ],
            )
    try:
        return Mapping.from_dict(mapping)
    except ParseError as exc:
        raise DatasetUploadError(
            f"The column mapping is invalid: {exc.message}", exc.problems
        ) from None


def _summary(problems: list[Problem]) -> str:
    first = problems[0]
    where = f"{first.field}: " if first.field != "file" else ""
    if len(problems) == 1:
        return f"Nothing was imported. {where}{first.message}"
    count = f"{len(problems)}" if len(problems) < MAX_PROBLEMS else f"{MAX_PROBLEMS}+"
    return (
        f"Nothing was imported: {count} problems, the first at {where}{first.message}"
    )


_ITEM_FIELDS = (
    "dataset",
    "index",
    "input",
    "output",
    "context",
    "reference",
    "metadata",
    *AGENT_FIELDS,
    "judge_instructions",
)


def _json_or_null(value: Any) -> str | None:
    """A nullable JSON column's value for COPY / executemany: None is SQL NULL (what
    Django stores for a nullable JSONField's None), not the JSON text "null"."""
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _insert_items(dataset: Dataset, rows: list[ParsedRow]) -> None:
    """Insert one batch of items.

    Not bulk_create: on Postgres, Django quotes every value of a batch into one huge
    query on the client (seconds per 100k rows), so batches go through COPY; on SQLite a
    plain executemany (lib.db.insert_rows). Both skip building 100k model instances.
    """
    dumps = json.dumps
    insert_rows(
        Item,
        _ITEM_FIELDS,
        (
            (
                dataset.pk,
                r.index,
                r.input,
                r.output,
                dumps(r.context, ensure_ascii=False),
                r.reference,
                dumps(r.metadata, ensure_ascii=False),
                r.system_prompt,
                _json_or_null(r.conversation),
                _json_or_null(r.tool_calls),
                _json_or_null(r.expected_tool_calls),
                _json_or_null(r.expected_trajectory),
                r.baseline_output,
                dumps(_judge_instructions(r), ensure_ascii=False),
            )
            for r in rows
        ),
    )


def _judge_instructions(row: ParsedRow) -> list[dict[str, str]]:
    """The row's passages aimed at the judge, as Item.judge_instructions stores them."""
    case = {
        "input": row.input,
        "output": row.output,
        "context": row.context,
        "reference": row.reference,
        "system_prompt": row.system_prompt,
        "baseline_output": row.baseline_output,
        "conversation": row.conversation,
        "tool_calls": row.tool_calls,
        "expected_tool_calls": row.expected_tool_calls,
        "expected_trajectory": row.expected_trajectory,
    }
    return [m.as_dict() for m in case_injections(case)]


DATASET_ITEMS_ANALYZE_TASK = "datasets.items_analyze"


def _items_analyze_on_commit() -> None:
    """Refresh the items table's statistics once the upload commits (see
    lib.db.table_analyze), in the background: 0.9 s on a table of 200k items. Robust:
    without it the statistics wait for autovacuum."""
    task_send_on_commit(DATASET_ITEMS_ANALYZE_TASK, robust=True)


def _versions_match_on_commit(dataset_id: int) -> None:
    """Match a new version's items with the previous version's in the background,
    once the upload commits, so that the first compare of runs on the two finds the
    matching stored. The upload stands whether or not the message goes out (robust:
    a broker down is logged); compare then matches the versions itself."""
    task_send_on_commit(DATASET_VERSIONS_MATCH_TASK, dataset_id, robust=True)


def dataset_create(
    *,
    project: Project,
    user: User | None,
    file: UploadFile,
    name: str,
    mapping: dict[str, Any] | None = None,
    file_format: str | None = None,
) -> Dataset:
    """Import a file as a new version of the dataset `name` in one transaction.

    1. Check the size (before parsing), the format and the mapping (defaults from the
       column names when `mapping` is None).
    2. Stream the rows, inserting them in batches of BATCH_SIZE.
    3. On any problem keep scanning to list up to MAX_PROBLEMS of them, insert nothing
       more, and raise DatasetUploadError: the transaction rolls back every batch.
    """
    name = (name or "").strip()
    if not name:
        raise ApplicationError(
            "A dataset needs a name.", field_errors={"name": "Required."}
        )
    if len(name) > 200:
        raise ApplicationError(
            "The dataset name is too long.",
            field_errors={"name": "At most 200 characters."},
        )
    text_check_storable(name, field="name")
    _check_size(file)
    source_filename = os.path.basename(file.name or "")[:255]
    found = unstorable_char(source_filename)
    if found:
        raise DatasetUploadError(
            f"The file name contains {found}, which cannot be stored; rename the file "
            "and upload it again.",
            [Problem(f"Contains {found}.", column="file name")],
        )
    fmt = _format_of(file, file_format)
    previous = dataset_latest_version(project=project, name=name)
    resolved = _resolve_mapping(file, fmt, mapping, previous)
    limits = _limits()

    with transaction.atomic():
        # Serialise uploads per project so two uploads of one name get distinct versions.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        latest = Dataset.objects.filter(project=project, name=name).aggregate(
            v=Max("version")
        )["v"]
        columns: list[str] = []
        dataset = Dataset.objects.create(
            project=project,
            name=name,
            version=(latest or 0) + 1,
            source_filename=source_filename,
            file_format=fmt,
            mapping=resolved.as_dict(),
            created_by=user,
        )
        problems: list[Problem] = []
        batch: list[ParsedRow] = []
        batch_chars = 0
        count = 0
        try:
            for out in parse_rows(
                _binary(file),
                file_format=fmt,
                mapping=resolved,
                columns=columns,
                limits=limits,
            ):
                if isinstance(out, Problem):
                    problems.append(out)
                    if len(problems) >= MAX_PROBLEMS:
                        break
                    continue
                if problems:
                    continue  # nothing more gets inserted; just look for more problems
                batch.append(out)
                batch_chars += out.chars
                count += 1
                if len(batch) >= BATCH_SIZE or batch_chars >= BATCH_MAX_CHARS:
                    _insert_items(dataset, batch)
                    batch.clear()
                    batch_chars = 0
            if batch and not problems:
                _insert_items(dataset, batch)
        except DataError as exc:
            # A backstop: the parser refuses what Postgres would (lib.text's rule), so
            # this names a gap in that rule rather than an expected outcome.
            first, last = batch[0].index + 1, batch[-1].index + 1
            raise DatasetUploadError(
                f"Nothing was imported: the database refused a row between rows {first} "
                f"and {last}: {str(exc).splitlines()[0]}",
                [
                    Problem(
                        f"Refused by the database: {str(exc).splitlines()[0]}",
                        row=first,
                    )
                ],
            ) from None
        except ParseError as exc:
            all_problems = (problems + exc.problems)[:MAX_PROBLEMS]
            message = exc.message if not problems else _summary(all_problems)
            raise DatasetUploadError(message, all_problems) from None
        if problems:
            raise DatasetUploadError(_summary(problems), problems)
        if count == 0:
            raise DatasetUploadError("The file has no rows to import.")
        dataset.item_count = count
        dataset.columns = columns
        dataset.save(update_fields=["item_count", "columns"])
        who = user.get_username() if user is not None else "system"
        upload = "uploaded" if dataset.version == 1 else "uploaded a new version of"
        audit_event(
            project=project,
            actor=user,
            action="dataset.upload" if dataset.version == 1 else "dataset.version",
            summary=(
                f"{who} {upload} dataset “{dataset}” "
                f"({count} items from {source_filename or 'a file'})"
            ),
            object_type="dataset",
            object_id=dataset.pk,
            object_label=str(dataset),
            after={
                "version": dataset.version,
                "items": count,
                "file": source_filename,
                "format": fmt,
            },
        )
        _items_analyze_on_commit()
        if dataset.version > 1:
            _versions_match_on_commit(dataset.pk)
    return dataset


def dataset_create_from_path(
    *,
    project: Project,
    user: User | None,
    path: str | Path,
    name: str,
    mapping: dict[str, Any] | None = None,
) -> Dataset:
    """Import a file on disk (the demo loader, management commands)."""
    with open(path, "rb") as fh:
        return dataset_create(
            project=project,
            user=user,
            file=File(fh, name=os.path.basename(str(path))),
            name=name,
            mapping=mapping,
        )


def dataset_set_archived(
    *, dataset: Dataset, user: User | None, archived: bool
) -> Dataset:
    """Archive (hide from the dataset list and the run form) or unarchive one version
    of a dataset, audited. Runs on it keep it; a new upload under its name still
    follows its versions."""
    with transaction.atomic(durable=True):
        locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
        if locked.archived != archived:
            locked.archived = archived
            locked.save(update_fields=["archived"])
            who = user.get_username() if user is not None else "system"
            verb = "archived" if archived else "unarchived"
            audit_event(
                project=dataset.project,
                actor=user,
                action="dataset.archive" if archived else "dataset.unarchive",
                summary=f"{who} {verb} dataset “{locked}”",
                object_type="dataset",
                object_id=locked.pk,
                object_label=str(locked),
                before={"archived": not archived},
                after={"archived": archived},
            )
    dataset.archived = archived
    return dataset
