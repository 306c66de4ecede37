"""Fuzz every dataset format through `dataset_create`, the service the views and the API
call, and through the upload pages and the API themselves.

Whatever the bytes, an upload either imports its rows or is refused with the app's own
error (ApplicationError, with a message), and a refused file leaves no dataset version and
no item behind. The files mix what broke the parsers before: deep nesting, cells over the
size limit, NUL, lone surrogates, bytes that are not UTF-8, ragged rows and stray quotes.
The limits are set small so that "huge" and "deep" stay cheap to generate.
"""

from __future__ import annotations

import json
import tracemalloc

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.services import dataset_create
from evalsite.lib.text import unstorable_in
from tests.datasets.conftest import upload

pytestmark = pytest.mark.django_db

MAX_NESTING = 6
MAX_CELL_CHARS = 40

FUZZ = hsettings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same files on every run: a failure here always reproduces
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(autouse=True)
def _small_limits(settings):
    settings.DATASET_MAX_NESTING = MAX_NESTING
    settings.DATASET_MAX_CELL_CHARS = MAX_CELL_CHARS


# What cells are built from: mostly ordinary text, so that many files import and the
# "imports whole" branch is exercised too, with hostile pieces mixed in.
ORDINARY = st.text(alphabet="abc xyz,;'.é\u4e2d\U0001f600", max_size=8)
HOSTILE = st.one_of(
    st.sampled_from(
        ["\x00", '"', '""', "\t", "\r", "\n", "\r\n", "\ufeff", "[", "{", "\\"]
    ),
    st.text(max_size=4),  # any code point but surrogates: controls, separators, ...
    st.integers(MAX_CELL_CHARS - 2, 3 * MAX_CELL_CHARS).map(lambda n: "x" * n),
)
CELL = st.lists(
    st.one_of(ORDINARY, ORDINARY, ORDINARY, ORDINARY, HOSTILE), max_size=3
).map("".join)
# Raw JSON values: strings, nesting on both sides of the limit, escapes the database
# refuses, numbers JSON cannot hold.
STRINGS = st.one_of(
    CELL.map(lambda s: json.dumps(s, ensure_ascii=False)), CELL.map(json.dumps)
)
RAW_JSON = st.one_of(
    STRINGS,
    STRINGS,
    STRINGS,
    st.integers(0, MAX_NESTING + 2).map(lambda d: "[" * d + "]" * d),
    st.integers(0, MAX_NESTING + 2).map(lambda d: '{"k":' * d + "1" + "}" * d),
    st.sampled_from(
        [
            '"\\u0000"',
            '"\\ud800"',
            '"\\udfff x"',
            '"\\ud83d\\ude00"',
            '"a\\\\u0000"',
            "NaN",
            "-Infinity",
            "1e400",
            "1" * 5000,
            "-0.5e-3",
            "null",
            "true",
            '["c1", "c2"]',
            '"[\\"c1\\"]"',
            "[1, 2]",
        ]
    ),
)
NAMES = st.one_of(
    st.sampled_from(["context", "reference", "n", "m"]),
    st.sampled_from(["input", "k\x00", "", "a\tb"]),
)
PLAIN_NAMES = st.sampled_from(["context", "reference", "n", "m"])
# Bytes spliced into the encoded file: not UTF-8, an encoded surrogate, a BOM, NUL.
BAD_BYTES = st.sampled_from(
    [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00", b'"', b"\n", b"]"]
)


# Half the files are ordinary, so that the "imports whole" branch is exercised too.
ORDINARY_JSON = st.one_of(
    ORDINARY.map(json.dumps),
    st.integers(0, MAX_NESTING - 1).map(lambda d: "[" * d + "]" * d),
    st.sampled_from(["null", "-0.5e-3", "12", '["c1", "c2"]', '{"a": [1, true]}']),
)


@st.composite
def csv_file(draw, hostile):
    cell, names = (CELL, NAMES) if hostile else (ORDINARY, PLAIN_NAMES)
    styles = ["plain", "quoted", "quoted", "open-quote"] if hostile else ["quoted"]
    header = ["input", "output", *draw(st.lists(names, max_size=2, unique=True))]
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    widths = st.just(len(header)) if not hostile else st.integers(0, 5)
    lines = []
    for cells in [
        header,
        *draw(
            st.lists(
                widths.flatmap(lambda n: st.lists(cell, min_size=n, max_size=n)),
                max_size=5,
            )
        ),
    ]:
        out = []
        for value in cells:
            style = draw(st.sampled_from(styles))
            if style == "quoted":
                value = '"' + value.replace('"', '""') + '"'
            elif style == "open-quote":
                value = '"' + value
            out.append(value)
        lines.append(delimiter.join(out))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return "x.csv", newline.join(lines) + draw(st.sampled_from(["", newline]))


@st.composite
def json_rows(draw, hostile):
    value, names = (RAW_JSON, NAMES) if hostile else (ORDINARY_JSON, PLAIN_NAMES)
    rows = []
    for _ in range(draw(st.integers(0 if hostile else 1, 5))):
        keys = ["input", "output", *draw(st.lists(names, max_size=2, unique=True))]
        pairs = [f"{json.dumps(k)}: {draw(value)}" for k in keys]
        rows.append("{" + ", ".join(draw(st.permutations(pairs))) + "}")
    if hostile and not draw(st.integers(0, 4)):
        rows.append(draw(RAW_JSON))  # a row that is not an object
    return rows


@st.composite
def hostile_file(draw):
    hostile = draw(st.booleans())
    fmt = draw(st.sampled_from(["csv", "jsonl", "json"]))
    if fmt == "csv":
        name, text = draw(csv_file(hostile))
    elif fmt == "jsonl":
        name, text = "x.jsonl", "\n".join(draw(json_rows(hostile))) + "\n"
    else:
        name, text = "x.json", "[" + ",\n".join(draw(json_rows(hostile))) + "]"
    data = text.encode("utf-8", "surrogatepass")
    if hostile:
        for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(BAD_BYTES) + data[at:]
    if not draw(st.integers(0, 3)):
        data = b"\xef\xbb\xbf" + data
    return name, data


def _assert_imports_all_or_nothing(project, owner, name, data, mapping=None):
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
        # The parsers refuse what the database would; its refusal is only a backstop.
        assert "Refused by the database" not in exc.message, exc.message
        assert (Dataset.objects.count(), Item.objects.count()) == before
        return None
    items = list(Item.objects.filter(dataset=dataset))
    assert dataset.item_count == len(items) > 0
    for item in items:
        case = [item.input, item.output, item.reference, item.context, item.metadata]
        assert unstorable_in(case) is None, case
    return dataset


@FUZZ
@given(upload_file=hostile_file(), explicit=st.booleans())
def test_any_file_imports_whole_or_is_refused_with_a_message(
    project, owner, upload_file, explicit
):
    name, data = upload_file
    mapping = {"input": "input", "output": "output"} if explicit else None
    _assert_imports_all_or_nothing(project, owner, name, data, mapping)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("x.json", '[{"input": "q", "output": "a", "m": ' + "[" * 100_000),
        ("x.json", '[{"input": "q", "output": "a", "m": ' + "{" * 100_000),
        (
            "x.jsonl",
            '{"input": "q", "output": "a", "m": '
            + "[" * 100_000
            + "]" * 100_000
            + "}\n",
        ),
        ("x.csv", 'input,output\nq,"' + "x" * 20_000_000 + '"\n'),
        ("x.jsonl", '{"input": "q", "output": "' + "x" * 20_000_000 + '"}\n'),
    ],
    ids=[
        "json-open-arrays",
        "json-open-objects",
        "jsonl-deep",
        "csv-20mb",
        "jsonl-20mb",
    ],
)
def test_refused_file_takes_bounded_memory(project, owner, settings, name, data):
    settings.DATASET_MAX_NESTING = 32
    settings.DATASET_MAX_CELL_CHARS = 1_000_000
    data = data.encode()
    tracemalloc.start()
    try:
        dataset = _assert_imports_all_or_nothing(project, owner, name, data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert dataset is None
    # The ingest benchmark's bound is 300 MB of growth; a refusal stays far below it.
    assert peak < 40 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"


# The same files through HTTP, as a browser and an API client send them: the page's two
# steps (upload, then the mapping page and its form) and the API's one. Whatever the
# file, the answer is never a server error, and a refused file leaves nothing behind.
HTTP_FUZZ = hsettings(FUZZ, max_examples=40)


@HTTP_FUZZ
@given(
    upload_file=hostile_file(),
    file_format=st.sampled_from(["", "csv", "jsonl", "json"]),
    prefix=st.sampled_from(["", "a\x00b", "\u202ee\u0301", ".."]),
)
def test_any_file_through_the_pages_is_never_a_server_error(
    client, project, owner, settings, tmp_path, upload_file, file_format, prefix
):
    settings.VAR_DIR = tmp_path
    client.force_login(owner)
    name, data = upload_file
    before = (Dataset.objects.count(), Item.objects.count())
    step1 = client.post(
        reverse("datasets:upload", args=[project.pk]),
        {
            "file": upload(prefix + name, data),
            "name": "",
            "file_format": file_format,
        },
    )
    assert step1.status_code in (302, 400), step1.content[:300]
    if step1.status_code == 302:
        mapping_page = step1["Location"]
        step2 = client.get(mapping_page)
        assert step2.status_code in (200, 302), step2.content[:300]
        if step2.status_code == 200:
            mapped = client.post(
                mapping_page,
                {
                    "name": "fuzz",
                    "input": "input",
                    "output": "output",
                    "context": "",
                    "reference": "",
                    "context_format": "json",
                    "context_delimiter": "",
                },
            )
            assert mapped.status_code in (302, 400), mapped.content[:300]
            if mapped.status_code == 302:
                return
    assert (Dataset.objects.count(), Item.objects.count()) == before


@HTTP_FUZZ
@given(upload_file=hostile_file(), explicit=st.booleans())
def test_any_file_through_the_api_is_never_a_server_error(
    client, project, owner, bearer, upload_file, explicit
):
    name, data = upload_file
    body: dict[str, object] = {"file": upload(name, data), "name": "fuzz"}
    if explicit:
        body["mapping"] = json.dumps({"input": "input", "output": "output"})
    before = (Dataset.objects.count(), Item.objects.count())
    response = client.post(
        f"/api/projects/{project.pk}/datasets", body, **bearer(owner)
    )
    assert response.status_code in (201, 400), response.content[:300]
    if response.status_code == 400:
        assert set(response.json()) == {"detail", "errors"}
        assert (Dataset.objects.count(), Item.objects.count()) == before
