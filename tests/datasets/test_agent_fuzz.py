"""Fuzz the agent columns: whatever JSON (or text) a file puts in them, the upload
imports whole or is refused with a message naming the row and column, and what it
imports is what the scoring library reads without a shape error."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.agentdata import JSON_FIELDS, agent_value
from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.services import dataset_create
from evalsite.lib.text import unstorable_in
from scoring.toolcalls import tool_names
from tests.datasets.conftest import upload

pytestmark = pytest.mark.django_db

FUZZ = hsettings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MAX_NESTING = 8

TEXT = st.one_of(
    st.sampled_from(["", "search", "user", "assistant", " ", "a\x00b", "\ud800"]),
    *[st.text(alphabet='ab ,"[{é', max_size=6)] * 3,
    st.text(max_size=6),
)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), TEXT)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(
                ["name", "arguments", "result", "role", "content", "id", "success", "x"]
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
# Values near the expected shapes, so that many rows import.
CALL = st.fixed_dictionaries(
    {"name": st.sampled_from(["search", "book", "lookup", "search", ""])},
    optional={"arguments": JSON, "result": JSON, "success": st.booleans()},
)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"])},
    optional={"content": st.one_of(st.none(), TEXT)},
)
STEPS = st.lists(st.one_of(CALL, st.sampled_from(["search", "book"])), max_size=3)
# Mostly the right shapes, so that whole files import too; sometimes anything.
AGENT_VALUE = {
    "conversation": st.one_of(*[st.lists(MESSAGE, max_size=3)] * 4, JSON),
    "tool_calls": st.one_of(*[st.lists(CALL, max_size=3)] * 4, JSON),
    "expected_tool_calls": st.one_of(*[STEPS] * 4, JSON),
    "expected_trajectory": st.one_of(*[STEPS] * 4, JSON),
    "system_prompt": st.one_of(*[TEXT] * 4, JSON),
    "baseline_output": st.one_of(*[TEXT] * 4, JSON),
}


@pytest.fixture(autouse=True)
def _small_limits(settings):
    settings.DATASET_MAX_NESTING = MAX_NESTING


@st.composite
def agent_rows(draw):
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        row = {"input": "q", "output": "a"}
        for field in draw(
            st.lists(st.sampled_from(sorted(AGENT_VALUE)), max_size=6, unique=True)
        ):
            value = draw(AGENT_VALUE[field])
            # Sometimes the JSON as text, as a CSV cell or a double-encoded field is.
            if field in JSON_FIELDS and draw(st.integers(0, 3)) == 0:
                value = json.dumps(value)
            row[field] = value
        rows.append(row)
    return rows


@FUZZ
@given(rows=agent_rows(), as_csv=st.booleans())
def test_agent_columns_import_whole_or_are_refused_by_row_and_column(
    project, owner, rows, as_csv
):
    columns = ["input", "output", *sorted(AGENT_VALUE)]
    if as_csv:
        import csv
        import io

        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(columns)
        for row in rows:
            writer.writerow(
                [
                    ""
                    if row.get(c) is None
                    else row[c]
                    if isinstance(row[c], str)
                    else json.dumps(row[c])
                    for c in columns
                ]
            )
        name, data = "x.csv", out.getvalue().encode("utf-8", "surrogatepass")
    else:
        name = "x.jsonl"
        data = "".join(json.dumps(r) + "\n" for r in rows).encode(
            "utf-8", "surrogatepass"
        )
    # A JSONL file's mapping names the agent fields some row has (others are no column).
    present = {key for row in rows for key in row}
    mapping = {c: c for c in columns if as_csv or c in present}
    before = (Dataset.objects.count(), Item.objects.count())
    try:
        dataset = dataset_create(
            project=project,
            user=owner,
            file=upload(name, data),
            name="fuzz",
            mapping=mapping,
        )
    except ApplicationError as exc:
        assert exc.message.strip()
        assert "Refused by the database" not in exc.message, exc.message
        assert (Dataset.objects.count(), Item.objects.count()) == before
        return
    for item in Item.objects.filter(dataset=dataset):
        case = item.as_case()
        assert unstorable_in(case) is None
        for field in JSON_FIELDS:
            if field in case:
                assert agent_value(field, case[field]) == case[field]
        for field in ("tool_calls", "expected_tool_calls", "expected_trajectory"):
            if field in case:
                assert tool_names(case, field, required=True) is not None
