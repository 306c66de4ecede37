"""datasets.parsing is plain Python: no database here."""

from __future__ import annotations

import io
import json

import pytest

from evalsite.datasets.parsing import text
from evalsite.datasets.parsing.limits import Limits, ParseError, Problem
from evalsite.datasets.parsing.mapping import Mapping, ParsedRow, suggest_mapping
from evalsite.datasets.parsing.rows import detect_format, parse_rows, preview_rows

DEFAULT = Mapping(input="input", output="output", context="context")


def rows(
    data: bytes, fmt: str, mapping: Mapping = DEFAULT
) -> list[ParsedRow | Problem]:
    return list(parse_rows(io.BytesIO(data), file_format=fmt, mapping=mapping))


def test_csv_rows_map_fields_and_keep_other_columns_as_metadata():
    mapping = Mapping(
        input="input", output="output", context="context", reference="reference"
    )
    data = (
        b"input,output,context,reference,topic\n"
        b'"What is 2+2?",4,"[""two plus two is four""]",four,math\n'
    )
    [row] = rows(data, "csv", mapping)
    assert row == ParsedRow(
        index=0,
        input="What is 2+2?",
        output="4",
        context=["two plus two is four"],
        reference="four",
        metadata={"topic": "math"},
    )


def test_csv_with_bom_reads_first_column_name_without_it():
    data = "\ufeffinput,output\nq,a\n".encode()
    columns: list[str] = []
    [row] = list(
        parse_rows(
            io.BytesIO(data),
            file_format="csv",
            mapping=Mapping(input="input", output="output"),
            columns=columns,
        )
    )
    assert columns == ["input", "output"]
    assert (row.input, row.output) == ("q", "a")


@pytest.mark.parametrize("delimiter", [";", "\t", "|", ","])
def test_csv_delimiter_is_sniffed(delimiter):
    lines = [
        delimiter.join(["input", "output", "note"]),
        delimiter.join(
            [
                "Where is Paris?",
                "France, Europe" if delimiter != "," else '"France, Europe"',
                "x",
            ]
        ),
        delimiter.join(["How far?", "3 km", "y"]),
    ]
    data = ("\n".join(lines) + "\n").encode()
    parsed = rows(data, "csv", Mapping(input="input", output="output"))
    assert [r.output for r in parsed] == ["France, Europe", "3 km"]
    assert parsed[0].metadata == {"note": "x"}


def test_csv_quoted_newlines_and_crlf_line_ends():
    data = b'input,output\r\n"line one\r\nline two",answer\r\nq2,a2\r\n'
    parsed = rows(data, "csv", Mapping(input="input", output="output"))
    assert [r.input for r in parsed] == ["line one\r\nline two", "q2"]
    assert [r.output for r in parsed] == ["answer", "a2"]


def test_csv_allows_huge_fields():
    big = "x" * 1_000_000
    data = f"input,output\n{big},ok\n".encode()
    [row] = rows(data, "csv", Mapping(input="input", output="output"))
    assert len(row.input) == 1_000_000


def test_csv_delimited_context_is_split_and_trimmed():
    data = b'input,output,context\nq,a,"first chunk || second chunk ||  "\n'
    mapping = Mapping(
        input="input",
        output="output",
        context="context",
        context_format="delimited",
        context_delimiter="||",
    )
    [row] = rows(data, "csv", mapping)
    assert row.context == ["first chunk", "second chunk"]


def test_csv_blank_context_is_an_empty_list():
    [row] = rows(b"input,output,context\nq,a,\n", "csv")
    assert row.context == []


def test_jsonl_context_may_already_be_a_list_and_metadata_object_is_merged():
    lines = [
        {
            "input": "q",
            "output": "a",
            "context": ["c1", "c2"],
            "metadata": {"topic": "sync"},
            "extra": 1,
        },
    ]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    [row] = rows(data, "jsonl")
    assert row.context == ["c1", "c2"]
    assert row.metadata == {"topic": "sync", "extra": 1}
    assert row.reference == ""


def test_jsonl_non_string_values_become_text():
    data = b'{"input": 12, "output": {"a": 1}, "reference": null}\n'
    [row] = rows(
        data, "jsonl", Mapping(input="input", output="output", reference="reference")
    )
    assert (row.input, row.output, row.reference) == ("12", '{"a": 1}', "")


def test_jsonl_malformed_line_names_its_line_number():
    data = b'{"input": "q", "output": "a"}\n\n{"input": "q2", "output": \n{"input":"q3","output":"a3"}\n'
    out = rows(data, "jsonl", Mapping(input="input", output="output"))
    problems = [p for p in out if isinstance(p, Problem)]
    assert len(problems) == 1
    assert problems[0].line == 3
    assert "Line 3 is not valid JSON" in problems[0].message
    assert [r.input for r in out if isinstance(r, ParsedRow)] == ["q", "q3"]


def test_json_array_is_streamed_element_by_element(monkeypatch):
    monkeypatch.setattr(text, "CHUNK_BYTES", 7)  # elements straddle many reads
    data = json.dumps(
        [
            {"input": f"q{i}", "output": f"a{i}", "context": ["é", "ü"], "score": 0.5}
            for i in range(50)
        ]
    ).encode()
    out = rows(data, "json")
    assert [r.input for r in out] == [f"q{i}" for i in range(50)]
    assert out[0].metadata == {"score": 0.5}
    assert out[0].context == ["é", "ü"]


def test_json_array_non_object_element_is_a_problem():
    out = rows(
        b'[{"input":"q","output":"a"}, 3, "x"]',
        "json",
        Mapping(input="input", output="output"),
    )
    problems = [p for p in out if isinstance(p, Problem)]
    assert [(p.row, p.message) for p in problems] == [
        (2, "Element 2 of the array is a JSON number, not an object."),
        (3, "Element 3 of the array is a JSON string, not an object."),
    ]


def test_json_that_is_not_an_array_is_refused():
    with pytest.raises(ParseError, match="must be one JSON array"):
        rows(b'{"input": "q"}', "json")


def test_json_syntax_error_stops_with_a_message():
    with pytest.raises(ParseError, match="malformed after element 1"):
        rows(
            b'[{"input":"q","output":"a"}, {"input": }]',
            "json",
            Mapping(input="input", output="output"),
        )


ROW = b'{"input":"q","output":"a"}'


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
@pytest.mark.parametrize(
    ("data", "message", "problem"),
    [
        (
            b"[" + ROW + b"}",
            'The JSON is malformed after element 1 of the array: the array is closed with "}".',
            (2, "Malformed JSON."),
        ),
        (
            b"[" + ROW,
            "The JSON is malformed after element 1 of the array: the file ends before "
            "the array is closed.",
            (2, "Malformed JSON: the array is not closed."),
        ),
        (
            b'[{"input":"q","output":"a',
            "The JSON is malformed after element 0 of the array: the file ends before "
            "the array is closed.",
            (1, "Malformed JSON: the array is not closed."),
        ),
        (
            b"[" + ROW + b"] x",
            "The JSON array ends after element 1, but the file goes on. A .json dataset "
            "must be one JSON array.",
            (None, "Text after the end of the JSON array."),
        ),
        (
            b"[" + ROW + b" " + ROW + b"]",
            'The JSON is malformed after element 1 of the array: expected "," or "]" '
            "after element 1.",
            (2, "Malformed JSON."),
        ),
        (
            b"[" + ROW + b", ]",
            "The JSON is malformed after element 1 of the array: expected a value.",
            (2, "Malformed JSON."),
        ),
        (b" \n", "The file is empty: no JSON array found.", (None, None)),
        (b"[ ]", "The file is empty: the JSON array has no rows.", (None, None)),
    ],
)
def test_json_array_structure_errors_stop_the_file_whatever_the_reads(
    monkeypatch, chunk, data, message, problem
):
    monkeypatch.setattr(text, "CHUNK_BYTES", chunk)
    with pytest.raises(ParseError) as exc:
        rows(data, "json", Mapping(input="input", output="output"))
    assert exc.value.message == message
    [found] = exc.value.problems
    row, detail = problem
    assert (found.row, found.message) == (row, detail or message)


def test_not_utf8_names_its_row_column_and_line():
    data = "input,output\nq,café\n".encode("latin-1")
    problem = only_problem(rows(data, "csv", Mapping(input="input", output="output")))
    assert (problem.row, problem.column, problem.line) == (1, "output", 2)
    assert problem.message.startswith("Byte 0xE9 is not UTF-8")


def test_not_utf8_is_exact_across_chunk_boundaries(monkeypatch):
    monkeypatch.setattr(text, "CHUNK_BYTES", 5)
    data = "input,output\nq,é\n".encode() + b"\nq2,\xff\n"
    out = rows(data, "csv", Mapping(input="input", output="output"))
    assert out[0].output == "é"  # split between two reads, still one character
    problem = out[1]
    assert (problem.row, problem.column, problem.line) == (2, "output", 4)
    assert problem.message.startswith("Byte 0xFF is not UTF-8")


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json"])
@pytest.mark.parametrize("data", [b"", b"\n\n  \n", b"\xef\xbb\xbf"])
def test_empty_file_is_refused(fmt, data):
    with pytest.raises(ParseError, match="empty"):
        rows(data, fmt)


def test_csv_header_only_is_refused():
    with pytest.raises(ParseError, match="header but no rows"):
        rows(b"input,output\n", "csv", Mapping(input="input", output="output"))


def test_csv_missing_mapped_column_is_named():
    with pytest.raises(ParseError) as exc:
        rows(
            b"question,answer\nq,a\n",
            "csv",
            Mapping(input="question", output="response"),
        )
    assert exc.value.message == "The CSV has no column 'response' (mapped to output)."
    assert exc.value.problems[0].column == "response"


def test_jsonl_mapped_column_in_no_row_is_named():
    with pytest.raises(ParseError, match="no column 'refs'"):
        rows(
            b'{"input":"q","output":"a"}\n',
            "jsonl",
            Mapping(input="input", output="output", reference="refs"),
        )


def test_jsonl_row_without_input_is_a_problem():
    out = rows(
        b'{"input":"q","output":"a"}\n{"output":"b"}\n',
        "jsonl",
        Mapping(input="input", output="output"),
    )
    assert out[1] == Problem(
        "The input column 'input' is missing from this row.",
        row=2,
        column="input",
        line=2,
    )


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ('"""not json"""', "Context is a JSON string, not a list of strings."),
        ('"{""a"": 1}"', "Context is a JSON object, not a list of strings."),
        ('"[1, 2]"', "Context element 1 is a JSON number, not a string."),
        ("plain text", "Context is not valid JSON"),
    ],
)
def test_json_context_must_be_a_list_of_strings(cell, message):
    data = f"input,output,context\nq,a,[]\nq,a,{cell}\n".encode()
    out = rows(data, "csv")
    problem = out[1]
    assert isinstance(problem, Problem)
    assert (problem.row, problem.column) == (2, "context")
    assert problem.message.startswith(message)
    assert problem.field == "row 2, column context"


def test_csv_row_with_too_many_fields_is_a_problem():
    out = rows(
        b"input,output\nq,a,extra\n", "csv", Mapping(input="input", output="output")
    )
    assert isinstance(out[0], Problem)
    assert "3 fields but the header has 2" in out[0].message


def test_csv_header_with_too_many_columns_is_refused():
    header = ",".join(["input", "output"] + [f"c{i}" for i in range(499)])
    with pytest.raises(ParseError, match="501 columns; a dataset may have at most 500"):
        rows(f"{header}\n{',' * 500}\n".encode(), "csv", IO)


def test_csv_duplicate_header_is_refused():
    with pytest.raises(ParseError, match="appears twice"):
        rows(
            b"input,input,output\n1,2,3\n",
            "csv",
            Mapping(input="input", output="output"),
        )


@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        ("a.csv", b"", "csv"),
        ("a.TSV", b"", "csv"),
        ("a.jsonl", b"", "jsonl"),
        ("a.ndjson", b"", "jsonl"),
        ("a.json", b"", "json"),
        ("upload", b"  [{", "json"),
        ("upload", b'{"a"', "jsonl"),
        ("upload", b"a,b", "csv"),
    ],
)
def test_detect_format(name, head, expected):
    assert detect_format(name, None, head) == expected


def test_detect_format_override_wins_and_is_validated():
    assert detect_format("a.csv", "jsonl") == "jsonl"
    with pytest.raises(ParseError, match="Unknown format"):
        detect_format("a.csv", "xlsx")


def test_suggest_mapping_uses_names_and_synonyms_and_guesses_context_format():
    mapping = suggest_mapping(
        ["Question", "answer", "contexts", "ground_truth", "id"],
        [{"contexts": "a || b"}, {"contexts": "c || d"}],
    )
    assert mapping == {
        "input": "Question",
        "output": "answer",
        "context": "contexts",
        "reference": "ground_truth",
        "context_format": "delimited",
        "context_delimiter": "||",
        "system_prompt": None,
        "conversation": None,
        "tool_calls": None,
        "expected_tool_calls": None,
        "expected_trajectory": None,
        "baseline_output": None,
    }
    assert (
        suggest_mapping(["context"], [{"context": '["x"]'}])["context_format"] == "json"
    )


def test_preview_returns_first_ten_rows_and_columns():
    data = "input,output\n" + "".join(f"q{i},a{i}\n" for i in range(30))
    preview = preview_rows(io.BytesIO(data.encode()), file_format="csv")
    assert preview.columns == ["input", "output"]
    assert len(preview.rows) == 10
    assert preview.rows[0] == {"input": "q0", "output": "a0"}
    assert preview.mapping["input"] == "input"


def test_mapping_from_dict_validates_keys_and_required_fields():
    with pytest.raises(ParseError) as exc:
        Mapping.from_dict({"input": "q", "colour": "x", "context_format": "xml"})
    messages = [p.message for p in exc.value.problems]
    assert any("Unknown mapping key 'colour'" in m for m in messages)
    assert any("holds the output" in m for m in messages)
    assert any("context_format" in m for m in messages)
    mapping = Mapping.from_dict(
        {
            "input": "q",
            "output": "a",
            "context_format": "delimited",
            "context_delimiter": "\\n",
        }
    )
    assert mapping.context_delimiter == "\n"


def test_nul_bytes_are_refused_as_not_utf8_text():
    data = "input,output\nq,a\n".encode("utf-16-le")  # no BOM: every other byte is NUL
    with pytest.raises(ParseError, match=r"NUL bytes \(line 1\): it looks like UTF-16"):
        rows(data, "csv", Mapping(input="input", output="output"))


def test_utf16_with_a_byte_order_mark_is_refused_as_not_utf8():
    data = "input,output\nq,a\n".encode("utf-16")
    with pytest.raises(ParseError, match="UTF-16"):
        rows(data, "csv", Mapping(input="input", output="output"))


# ---------------------------------------------------------------- hostile input

IO = Mapping(input="input", output="output")


def only_problem(out):
    assert len(out) == 1 and isinstance(out[0], Problem), out
    return out[0]


def first_problem(data: bytes, fmt: str) -> Problem:
    """The first problem: a row's (reading goes on), or the one that stopped the file.

    A CSV cannot be resynchronised after a runaway row, nor a JSON array past an
    element too deep or too large: reading stops there, with that row's problem.
    """
    try:
        out = rows(data, fmt, IO)
    except ParseError as exc:
        return exc.problems[0]
    return next(o for o in out if isinstance(o, Problem))


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_jsonl_nesting_deeper_than_the_limit_is_a_problem_naming_row_and_column():
    data = (
        '{"input": "q", "output": "a"}\n'
        f'{{"input": "q", "output": "a", "meta": {nested(1000)}}}\n'
    ).encode()
    out = rows(data, "jsonl", IO)
    problem = out[1]
    assert isinstance(problem, Problem)
    assert (problem.row, problem.line, problem.column) == (2, 2, "meta")
    assert "nested more than 32 levels" in problem.message


def test_json_array_element_nested_too_deep_stops_the_file_at_its_row_and_column():
    data = (
        '[{"input": "q", "output": "a"},'
        f'{{"input": "q", "output": "a", "meta": {{"deep": {nested(5000)}}}}},'
        '{"input": "q3", "output": "a3"}]'
    ).encode()
    with pytest.raises(ParseError) as exc:
        rows(data, "json", IO)
    [problem] = exc.value.problems
    assert (problem.row, problem.column) == (2, "meta")
    assert "nested more than 32 levels" in problem.message
    assert exc.value.message.startswith("Nothing was imported. row 2, column meta:")


def test_nesting_up_to_the_limit_is_imported():
    value = json.loads(nested(31))  # the row object is level 1
    data = json.dumps({"input": "q", "output": "a", "meta": value}).encode()
    [row] = rows(data + b"\n", "jsonl", IO)
    assert row.metadata == {"meta": value}
    [row] = rows(b"[" + data + b"]", "json", IO)
    assert row.metadata == {"meta": value}


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_deeply_nested_file_is_refused_in_bounded_memory(fmt):
    """A 200 KB file nested 100,000 deep once took the web process to 23 GB."""
    import tracemalloc

    row = f'{{"input": "q", "output": "a", "meta": {nested(100_000)}}}'
    data = (row + "\n" if fmt == "jsonl" else f"[{row}]").encode()
    tracemalloc.start()
    try:
        problem = first_problem(data, fmt)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (problem.row, problem.column) == (1, "meta")
    assert "nested more than 32 levels" in problem.message
    assert peak < 20 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"


class CountingReader(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.bytes_read += len(chunk)
        return chunk


def test_json_array_too_deep_is_refused_without_reading_the_rest():
    """60 MB of '{"k": ': the file stops at level 33, not after a pass over the rest."""
    data = b'[{"input": "q", "output": "a", "m": ' + b'{"k": ' * 10_000_000
    reader = CountingReader(data)
    with pytest.raises(ParseError, match="nested more than 32 levels"):
        list(parse_rows(reader, file_format="json", mapping=IO))
    assert reader.bytes_read <= 2 * text.CHUNK_BYTES


def test_csv_json_context_nested_too_deep_is_a_problem():
    data = f"input,output,context\nq,a,{nested(5000)}\n".encode()
    problem = only_problem(rows(data, "csv"))
    assert (problem.row, problem.column) == (1, "context")
    assert "nested more than 32 levels" in problem.message


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json"])
def test_cell_over_the_limit_is_a_problem_naming_row_and_column(fmt):
    big = "x" * (Limits().max_cell_chars + 1)
    if fmt == "csv":
        data = f"input,output\nq,a\nq,{big}\n"
    else:
        lines = [json.dumps({"input": "q", "output": o}) for o in ("a", big)]
        data = "\n".join(lines) if fmt == "jsonl" else "[" + ",".join(lines) + "]"
    out = rows(data.encode(), fmt, IO)
    problem = out[1]
    assert isinstance(problem, Problem)
    assert (problem.row, problem.column) == (2, "output")
    assert "1,000,001 characters" in problem.message


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json"])
def test_row_far_over_the_limit_is_refused_in_bounded_memory(fmt):
    """A 50 MB cell: refused while it is read, never held whole."""
    import tracemalloc

    big = "x" * 50_000_000
    if fmt == "csv":
        data = f'input,output\nq,"{big}"\nq2,a2\n'.encode()
    else:
        row = '{"input": "q", "output": "' + big + '"}'
        data = (row + "\n" if fmt == "jsonl" else "[" + row + "]").encode()
    del big
    tracemalloc.start()
    try:
        problem = first_problem(data, fmt)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert problem.row == 1
    if fmt != "csv":
        assert problem.column == "output"
    assert f"over {Limits().max_row_chars:,} characters" in problem.message
    assert peak < 40 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"


def test_csv_unterminated_quote_is_a_problem_with_its_row():
    data = b'input,output\nq1,a1\nq2,"a2\nq3,a3\nq4,a4\n'
    out = rows(data, "csv", IO)
    assert out[0].input == "q1"
    problem = out[1]
    assert isinstance(problem, Problem)
    assert (problem.row, problem.column) == (2, "output")
    assert "never closed" in problem.message
    assert len(out) == 2


def test_csv_unterminated_quote_in_the_header_is_refused():
    with pytest.raises(ParseError, match="never closed"):
        rows(b'"input,output\nq,a\n', "csv", IO)


def test_csv_row_with_too_few_fields_is_a_problem():
    out = rows(b"input,output,note\nq,a,n\nq2,a2\n", "csv", IO)
    assert out[0].metadata == {"note": "n"}
    problem = out[1]
    assert isinstance(problem, Problem) and problem.row == 2
    assert "2 fields but the header has 3" in problem.message


@pytest.mark.parametrize(
    ("fmt", "data"),
    [
        ("jsonl", b'{"input": "a\\u0000b", "output": "x"}\n'),
        ("json", b'[{"input": "a\\u0000b", "output": "x"}]'),
        ("jsonl", b'{"input": "a\x00b", "output": "x"}\n'),
        ("csv", b"output,input\nx,a\x00b\n"),
    ],
)
def test_nul_in_a_cell_is_a_problem_naming_row_and_column(fmt, data):
    problem = only_problem(rows(data, fmt, IO))
    assert (problem.row, problem.column) == (1, "input")
    assert "NUL character (U+0000)" in problem.message


@pytest.mark.parametrize(
    ("fmt", "data"),
    [
        ("jsonl", b'{"input": "q", "output": "\\ud800"}\n'),
        ("json", b'[{"input": "q", "output": "x\\udfffy"}]'),
        ("jsonl", b'{"input": "q", "output": {"k": ["\\udc00"]}}\n'),
    ],
)
def test_lone_surrogate_escape_is_a_problem_not_silently_replaced(fmt, data):
    problem = only_problem(rows(data, fmt, IO))
    assert (problem.row, problem.column) == (1, "output")
    assert "unpaired surrogate" in problem.message


def test_surrogate_pair_escape_is_one_character():
    [row] = rows(b'[{"input": "\\ud83d\\ude00", "output": "a"}]', "json", IO)
    assert row.input == "\U0001f600"


def test_json_key_with_nul_is_a_problem():
    problem = only_problem(
        rows(b'{"input": "q", "output": "a", "k\\u0000": 1}\n', "jsonl", IO)
    )
    assert problem.row == 1 and "NUL" in problem.message


def test_escaped_backslash_before_u0000_is_plain_text():
    [row] = rows(b'{"input": "a\\\\u0000b", "output": "x"}\n', "jsonl", IO)
    assert row.input == "a\\u0000b"


def test_csv_context_json_with_nul_escape_is_a_problem():
    data = b'input,output,context\nq,a,"[""x\\u0000""]"\n'
    problem = only_problem(rows(data, "csv"))
    assert (problem.row, problem.column) == (1, "context")
    assert "NUL" in problem.message


@pytest.mark.parametrize(
    ("fmt", "data"),
    [
        ("csv", "input,output\nq,a\nq,café\n".encode("latin-1")),
        (
            "jsonl",
            '{"input":"q","output":"a"}\n{"input":"q","output":"é"}\n'.encode(
                "latin-1"
            ),
        ),
        (
            "json",
            '[{"input":"q","output":"a"},{"input":"q","output":"é"}]'.encode("latin-1"),
        ),
    ],
)
def test_not_utf8_names_the_row_and_column(fmt, data):
    out = rows(data, fmt, IO)
    problem = out[1]
    assert isinstance(problem, Problem)
    assert (problem.row, problem.column) == (2, "output")
    assert "0xE9 is not UTF-8" in problem.message


def test_nul_in_a_header_name_is_refused_naming_the_column():
    with pytest.raises(ParseError) as exc:
        rows(b"input,out\x00put\nq,a\n", "csv", IO)
    assert exc.value.problems[0].column == "out\\x00put"
    assert "NUL character" in exc.value.message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1" * 5000, "5,000 digits"),
        ("NaN", "NaN"),
        ("-Infinity", "-Infinity"),
        ("1e400", "1e400"),
    ],
)
@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_numbers_json_cannot_store_are_a_problem(fmt, value, message):
    row = f'{{"input": "q", "output": "a", "n": {value}}}'
    data = (row + "\n" if fmt == "jsonl" else f"[{row}]").encode()
    problem = only_problem(rows(data, fmt, IO))
    assert problem.row == 1
    assert message in problem.message


@pytest.mark.parametrize(
    "row",
    [
        '{"input": "q", "output": "first", "output": "second"}',
        '{"input": "q", "output": "a", "meta": {"k": 1, "k": 2}}',
    ],
)
@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_a_name_repeated_in_one_json_object_is_a_problem_not_a_silent_choice(fmt, row):
    data = (row + "\n" if fmt == "jsonl" else f"[{row}]").encode()
    problem = only_problem(rows(data, fmt, IO))
    assert problem.row == 1
    assert "appears twice" in problem.message


def test_csv_with_lone_carriage_returns_says_so():
    with pytest.raises(ParseError) as exc:
        rows(b"input,output\nq,a\rb\n", "csv", IO)
    assert "carriage return" in exc.value.message
    assert exc.value.problems[0].row == 1


def test_csv_with_bom_crlf_and_quotes_reads_cleanly():
    data = '\ufeffinput,output\r\n"say ""hi""","a,b"\r\n"x\r\ny",z\r\n'.encode()
    out = rows(data, "csv", IO)
    assert [(r.input, r.output) for r in out] == [('say "hi"', "a,b"), ("x\r\ny", "z")]
