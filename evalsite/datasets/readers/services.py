"""Read another tool's file for import: detect it, preview it, spill it to disk, and
create the datasets from it. The runs that hold its grades are created a layer up, in
evalsite.review.services.imports (datasets may not import evals), in the same
transaction as the datasets.

1. Detect the tool (promptfoo results, Langfuse dataset items, LangSmith examples)
   unless the user chose it, and read the file row by row with the upload's bounds
   (size, nesting, cell size, storable text: datasets.parsing's Limits and checks).
2. Write each group's rows (promptfoo: one group per prompt x provider; the other
   tools: one) to a JSON Lines file on disk (memory stays bounded by one row) and its
   grades to another; any row problem stops here, before anything is written.
3. (review.services.imports) In one transaction, per group: datasets.services.
   dataset_create reads its JSON Lines file as an ordinary upload (a new version of
   the one dataset name; batching, the same checks), then its grades become a
   finished run, one scorer per check, whose results reviewers override like any
   judge's. A failure anywhere rolls everything back.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TextIO

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File

from evalsite.accounts.models import Project
from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.models import Dataset
from evalsite.datasets.parsing.limits import (
    MAX_COLUMNS,
    Limits,
    ParseError,
    Problem,
    RawRow,
    too_many_keys,
)
from evalsite.datasets.parsing.rows import FileFormat, detect_format, iter_raw_rows
from evalsite.datasets.parsing.text import text_chunks
from evalsite.datasets.readers import langfuse, langsmith, promptfoo
from evalsite.datasets.readers.base import (
    PREVIEW_ROWS,
    TOOLS,
    Grade,
    ImportedRow,
    ImportFailed,
    ImportSummary,
)
from evalsite.datasets.services import (
    MAX_PROBLEMS,
    DatasetUploadError,
    UploadFile,
    _limits,
    _summary,
    dataset_check_upload,
    dataset_create,
    human_bytes,
)

_HEAD_BYTES = 64 * 1024
# How many rows auto-detection reads looking for the first readable one.
_DETECT_ROWS = 20


@dataclass
class ImportPreview:
    tool: str
    summary: ImportSummary
    rows: list[ImportedRow] = field(default_factory=list)
    name: str = ""

    @property
    def makes_run(self) -> bool:
        return self.summary.verdict_total > 0


class _Reader(Protocol):
    summary: ImportSummary
    grader: str

    def rows(self) -> Iterator[ImportedRow | Problem]: ...


class _TableReader:
    """Langfuse or LangSmith rows from CSV, JSON Lines or a JSON array."""

    def __init__(
        self, binary: BinaryIO, *, tool: str, file_format: FileFormat, limits: Limits
    ) -> None:
        self._binary = binary
        self._module = langfuse if tool == "langfuse" else langsmith
        self._format = file_format
        self._limits = limits
        self.summary = ImportSummary(tool=tool, file_format=file_format)
        self.grader = ""

    def rows(self) -> Iterator[ImportedRow | Problem]:
        columns: list[str] = []
        index = 0
        for raw in iter_raw_rows(self._binary, self._format, columns, self._limits):
            if isinstance(raw, Problem):
                yield raw
                continue
            out = self._module.row(
                raw,
                index=index,
                file_format=self._format,
                limits=self._limits,
                summary=self.summary,
            )
            if out is None:  # left out (a Langfuse archived item), counted
                continue
            if isinstance(out, ImportedRow):
                index += 1
            yield out
        self._module.finish(self.summary)


def _binary(file: UploadFile) -> BinaryIO:
    file.seek(0)
    return file  # type: ignore[return-value]


def _error(exc: ParseError | ImportFailed) -> DatasetUploadError:
    return DatasetUploadError(exc.message, exc.problems)


def _first_columns(
    file: UploadFile, file_format: FileFormat, limits: Limits
) -> list[str]:
    """The columns of the file's first readable row (its header, for CSV)."""
    columns: list[str] = []
    for n, raw in enumerate(iter_raw_rows(_binary(file), file_format, columns, limits)):
        if isinstance(raw, RawRow):
            return list(raw.values)
        if n >= _DETECT_ROWS:
            break
    return columns


def import_detect(
    *, file: UploadFile, tool: str | None = None
) -> tuple[str, FileFormat]:
    """(tool, file format) of a file: the user's choice of tool, else detected.

    Raises DatasetUploadError naming what was found when no tool's format fits.
    """
    if tool and tool not in TOOLS:
        raise ApplicationError(
            f"Unknown tool {tool!r}; choose one of {', '.join(TOOLS)} (or leave it "
            "empty to detect it).",
            field_errors={"tool": "Unknown tool."},
        )
    head = _binary(file).read(_HEAD_BYTES)
    filename = os.path.basename(file.name or "")
    form = promptfoo.sniff(head.decode("utf-8", "replace"))
    if form == "csv" and tool in (None, "", "promptfoo"):
        raise DatasetUploadError(
            promptfoo.CSV_REFUSED,
            [Problem("promptfoo's CSV output is not imported.", column="format")],
        )
    if tool == "promptfoo" or (not tool and form is not None):
        return "promptfoo", "jsonl" if form == "jsonl" else "json"
    limits = _limits()
    try:
        file_format = detect_format(filename, None, head)
        if tool:
            return tool, file_format
        columns = _first_columns(file, file_format, limits)
    except ParseError as exc:
        raise _error(exc) from None
    if langfuse.looks_like(columns):
        return "langfuse", file_format
    if langsmith.looks_like(columns):
        return "langsmith", file_format
    shown = ", ".join(columns[:20]) or "none"
    raise DatasetUploadError(
        "This file is not one evalsite can import from another tool: expected "
        f"promptfoo results ({promptfoo.SUPPORTED_FORMS}), Langfuse dataset items "
        "(columns input, expectedOutput, ...) or LangSmith examples (inputs, outputs, "
        f"or inputs.<key> columns). Columns found: {shown}. A plain CSV or JSON Lines "
        "file is a dataset upload instead; or choose the tool if you know it.",
        [Problem(f"Unrecognised format; columns found: {shown}.", column="format")],
    )


def _reader(
    file: UploadFile,
    *,
    tool: str,
    file_format: FileFormat,
    input_var: str | None,
    limits: Limits,
) -> _Reader:
    if tool == "promptfoo" and file_format == "jsonl":
        return promptfoo.PromptfooReader(
            limits=limits, input_var=input_var, jsonl=_binary(file)
        )
    if tool == "promptfoo":
        return promptfoo.PromptfooReader(
            text_chunks(_binary(file)), limits=limits, input_var=input_var
        )
    return _TableReader(
        _binary(file), tool=tool, file_format=file_format, limits=limits
    )


def _scan(reader: _Reader, on_row: Any) -> None:
    """Read every row, calling on_row(row); raise DatasetUploadError listing the first
    problems when any row cannot be imported (nothing is imported then)."""
    problems: list[Problem] = []
    count = 0
    seen = 0  # rows read, refused ones included: the row number in a message
    try:
        for out in reader.rows():
            seen += 1
            if isinstance(out, Problem):
                problems.append(out)
                if len(problems) >= MAX_PROBLEMS:
                    break
                continue
            count += 1
            if len(out.metadata) > MAX_COLUMNS:
                # A tool's own metadata (vars, a metadata object) is bounded like an
                # upload's: the dataset and review pages list every key.
                message = too_many_keys(seen, len(out.metadata), "metadata keys")
                problems.append(Problem(message, row=seen, column="metadata"))
                if len(problems) >= MAX_PROBLEMS:
                    break
                continue
            if not problems:
                on_row(out)
    except (ParseError, ImportFailed) as exc:
        if problems:
            all_problems = (problems + exc.problems)[:MAX_PROBLEMS]
            raise DatasetUploadError(_summary(all_problems), all_problems) from None
        raise _error(exc) from None
    if problems:
        raise DatasetUploadError(_summary(problems), problems)
    if count == 0:
        raise DatasetUploadError("The file has no rows to import.")


def _default_name(file: UploadFile) -> str:
    stem = os.path.splitext(os.path.basename(file.name or ""))[0]
    return (stem or "imported")[:200]


def import_preview(
    *,
    file: UploadFile,
    tool: str | None = None,
    input_var: str | None = None,
) -> ImportPreview:
    """What importing `file` would create: the first items, counts and warnings.

    Reads the whole file (the counts are of every row) with the upload's bounds; raises
    DatasetUploadError for what import_create would refuse.
    """
    dataset_check_upload(file=file)
    tool, file_format = import_detect(file=file, tool=tool)
    reader = _reader(
        file,
        tool=tool,
        file_format=file_format,
        input_var=input_var,
        limits=_limits(),
    )
    rows: list[ImportedRow] = []

    def keep(row: ImportedRow) -> None:
        if len(rows) < PREVIEW_ROWS:
            rows.append(row)

    _scan(reader, keep)
    summary = reader.summary
    summary.scorer = ", ".join(_scorer_names(rows)) if summary.verdict_total else ""
    return ImportPreview(
        tool=tool, summary=summary, rows=rows, name=_default_name(file)
    )


def _scorer_names(rows: list[ImportedRow]) -> list[str]:
    names: list[str] = []
    for row in rows:
        for grade in row.grades:
            if grade.scorer not in names:
                names.append(grade.scorer)
    return names


@dataclass
class GroupSpill:
    """One group's items and grades on disk (promptfoo: one prompt x provider)."""

    label: str
    items_path: Path
    grades_path: Path
    items: int = 0
    # Scorer name -> (kind, options), in the order first met.
    scorers: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)

    def grades(self) -> Iterator[tuple[int, str, dict[str, Any] | None, str, str]]:
        """(item index, scorer name, analysis or None, reason, error) of each grade."""
        with open(self.grades_path, encoding="utf-8") as lines:
            for line in lines:
                index, scorer, analysis, reason, error = json.loads(line)
                yield index, scorer, analysis, reason, error


@dataclass
class ImportSpill:
    """A file read into JSON Lines on disk, group by group."""

    tool: str
    summary: ImportSummary
    directory: Path
    filename: str
    default_name: str
    groups: dict[str, GroupSpill] = field(default_factory=dict)
    # Agent fields some row has (mapped only then: a mapped column in no row is refused).
    agent_fields: set[str] = field(default_factory=set)
    grader: str = ""

    def group(self, label: str) -> GroupSpill:
        if label not in self.groups:
            n = len(self.groups)
            self.groups[label] = GroupSpill(
                label=label,
                items_path=self.directory / f"items-{n}.jsonl",
                grades_path=self.directory / f"grades-{n}.jsonl",
            )
        return self.groups[label]


def _grade_line(index: int, grade: Grade) -> str:
    return json.dumps(
        [index, grade.scorer, grade.analysis, grade.reason, grade.error],
        ensure_ascii=False,
    )


@contextmanager
def import_spill(
    *,
    file: UploadFile,
    tool: str | None = None,
    input_var: str | None = None,
) -> Iterator[ImportSpill]:
    """Read `file` (detected or of `tool`) row by row onto disk, for as long as the
    context lasts. Raises DatasetUploadError, listing the first problems, when any row
    cannot be imported: nothing is written anywhere but a temporary directory."""
    dataset_check_upload(file=file)
    tool, file_format = import_detect(file=file, tool=tool)
    reader = _reader(
        file,
        tool=tool,
        file_format=file_format,
        input_var=input_var,
        limits=_limits(),
    )
    with (
        tempfile.TemporaryDirectory(prefix="evalsite-import-") as tmp,
        ExitStack() as files,
    ):
        spill = ImportSpill(
            tool=tool,
            summary=reader.summary,
            directory=Path(tmp),
            filename=os.path.basename(file.name or "")[:255] or "import.jsonl",
            default_name=_default_name(file),
        )
        handles: dict[str, tuple[TextIO, TextIO]] = {}

        def write(row: ImportedRow) -> None:
            group = spill.group(row.group)
            if row.group not in handles:
                handles[row.group] = (
                    files.enter_context(open(group.items_path, "w", encoding="utf-8")),
                    files.enter_context(open(group.grades_path, "w", encoding="utf-8")),
                )
            items, grades = handles[row.group]
            record = row.as_item()
            spill.agent_fields.update(
                k for k in ("system_prompt", "conversation") if k in record
            )
            items.write(json.dumps(record, ensure_ascii=False) + "\n")
            group.items += 1
            for grade in row.grades:
                group.scorers.setdefault(grade.scorer, (grade.kind, grade.options))
                grades.write(_grade_line(row.index, grade) + "\n")

        _scan(reader, write)
        files.close()
        spill.grader = reader.grader
        yield spill


def import_dataset_create(
    *,
    project: Project,
    user: User | None,
    spill: ImportSpill,
    group: GroupSpill,
    name: str = "",
) -> Dataset:
    """One group's items as a new version of dataset `name` (default: the file's name),
    through datasets.services.dataset_create. Runs in the caller's transaction when
    there is one, so the caller can add the run to the same all-or-nothing write."""
    mapping: dict[str, Any] = {
        "input": "input",
        "output": "output",
        "context": "context",
        "reference": "reference",
        **{k: k for k in sorted(spill.agent_fields)},
    }
    # dataset_create checks the size of the file it is given: say that it is the items
    # read from the file (JSON Lines can be larger than a CSV) that are too large.
    size = group.items_path.stat().st_size
    limit = settings.DATASET_MAX_UPLOAD_BYTES
    if size > limit:
        raise DatasetUploadError(
            f"The items read from this file take {human_bytes(size)} as JSON Lines, "
            f"over the upload limit of {human_bytes(limit)}. Split the file into "
            "smaller ones.",
            [Problem(f"Items too large ({human_bytes(size)} > {human_bytes(limit)}).")],
        )
    with open(group.items_path, "rb") as spilled:
        return dataset_create(
            project=project,
            user=user,
            file=File(spilled, name=spill.filename),
            name=(name or "").strip() or spill.default_name,
            mapping=mapping,
            file_format="jsonl",
        )
