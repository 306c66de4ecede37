"""The one spreadsheet-safety rule of the CSV exports (evalsite.lib.csvsafe)."""

from __future__ import annotations

import enum
import sys
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from evalsite.lib.csvsafe import is_formula_like, safe_cell
from tests.exports.test_export import FORMULA_PAYLOADS


def _reference(text: str) -> bool:
    """The rule written plainly, to check the fast path against."""
    if text[:1] in ("\t", "\r"):
        return True
    rest = text.lstrip()
    return bool(rest) and unicodedata.normalize("NFKC", rest[0]) in {"=", "+", "-", "@"}


@pytest.mark.parametrize("payload", FORMULA_PAYLOADS)
def test_formula_text_gets_a_leading_quote(payload):
    assert safe_cell(payload) == "'" + payload
    assert is_formula_like(payload)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain",
        "Paris, 2.1 million",
        " hello",
        "\nhello",
        "a=1",
        "'quoted",
        "日本語のテキスト",
        "ｈｅｌｌｏ",  # full-width letters are letters
        "\u3000text",
        "é=1",
        "   ",
        "[1, 2]",
    ],
)
def test_plain_text_is_left_exactly_as_it_is(text):
    assert safe_cell(text) == text


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        (0, "0"),
        (-3, "-3"),
        (0.5, "0.5"),
        (-0.25, "-0.25"),
        (-1e-9, "-1e-09"),
        (10**20, "100000000000000000000"),
        (True, "true"),
        (False, "false"),
        (None, ""),
        (["=a"], '["=a"]'),
        ({"k": "=v"}, '{"k": "=v"}'),
    ],
)
def test_numbers_stay_numbers_and_other_values_are_json_or_text(value, cell):
    assert safe_cell(value) == cell


class _Level(enum.IntEnum):
    LOW = -1


class _Text(str):
    pass


def test_subclasses_follow_their_base_type():
    assert safe_cell(_Level.LOW) == "-1"  # an int: a number, not a formula
    assert safe_cell(_Text("=1+1")) == "'=1+1"
    assert safe_cell(_Text(" =1+1")) == "' =1+1"
    assert safe_cell(_Text("ok")) == "ok"


def test_every_first_character_is_decided_like_the_plain_rule():
    """All of Unicode as the first character (and after a space): the fast path
    skips the full check only where the full check would not quote."""
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        for text in (chr(code) + "1", " " + chr(code) + "1"):
            expected = "'" + text if _reference(text) else text
            assert safe_cell(text) == expected, hex(code)


@given(st.text())
@example(" =1+1")
@example("\n=cmd")
@example("\u3000＋1")
@example("-")
@example("\t")
def test_any_text_is_decided_like_the_plain_rule(text):
    assert safe_cell(text) == ("'" + text if text and _reference(text) else text)
