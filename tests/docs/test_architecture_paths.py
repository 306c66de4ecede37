"""The "Where is X" table of docs/architecture.md names folders that exist, and holds at
least 25 behaviours, so a newcomer who follows a row lands somewhere real."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def where_is_rows(text: str) -> list[tuple[str, str]]:
    """(behaviour, folder) for each row of the table under "## Where is X"."""
    start = text.index("\n## Where is X")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end >= 0 else len(text)]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= {"-", " "} or cells[0] == "Where is …":
            continue
        folders = re.findall(r"`([^`]+)`", cells[1])
        assert len(folders) == 1, f"name exactly one folder: {line}"
        rows.append((cells[0], folders[0]))
    return rows


def test_where_is_x_has_at_least_25_behaviours():
    rows = where_is_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(rows) >= 25
    assert len({behaviour for behaviour, _ in rows}) == len(rows)


def test_every_folder_named_in_where_is_x_exists():
    rows = where_is_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    missing = sorted({folder for _, folder in rows if not (ROOT / folder).is_dir()})
    assert not missing, (
        f"folders named in docs/architecture.md that do not exist: {missing}"
    )


def test_the_table_parser_reads_folders_and_refuses_rows_without_one():
    text = (
        "# A\n\n## Where is X\n\n| Where is … | Folder | Look for |\n| --- | --- | --- |\n"
        "| the override? | `evalsite/evals/results/` | `verdicts.py` |\n\n## Next\n"
        "| later? | `elsewhere/` | |\n"
    )
    assert where_is_rows(text) == [("the override?", "evalsite/evals/results/")]
    try:
        where_is_rows(text.replace("`evalsite/evals/results/`", "results"))
    except AssertionError:
        pass
    else:
        raise AssertionError("a row without a folder was accepted")
