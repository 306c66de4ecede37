"""The shared display filters: JSON as a bounded, escaped tree; costs in dollars."""

from __future__ import annotations

import re

from django.template import Context, Template

from evalsite.core.templatetags import display


def _render(text, **context):
    return Template("{% load display %}" + text).render(Context(context))


def test_json_tree_renders_nested_values_as_lists_not_a_python_repr():
    html = _render(
        "{{ v|json_tree }}",
        v={
            "source": "wiki",
            "tags": ["a", "b"],
            "meta": {"ok": True, "n": 3, "x": None},
        },
    )
    assert "{'" not in html and "True" not in html and "None" not in html
    assert '<dl class="json-tree">' in html
    assert '<dt>source</dt><dd><span class="json-str">wiki</span></dd>' in html
    assert '<ol class="json-tree"><li><span class="json-str">a</span></li>' in html
    assert '<span class="json-bool">true</span>' in html
    assert '<span class="json-null">null</span>' in html
    assert "<summary" in html and "3 keys" in html  # the nested object folds


def test_json_tree_escapes_keys_and_strings():
    html = _render("{{ v|json_tree }}", v={"<b>k</b>": "<script>alert(1)</script>"})
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;k&lt;/b&gt;" in html


def test_json_tree_parses_a_string_holding_json_and_keeps_cut_json_as_text():
    assert '<dl class="json-tree">' in _render("{{ v|json_tree }}", v='{"a": 1}')
    html = _render("{{ v|json_tree }}", v='{\n  "a": "cut sh')
    assert '<pre class="prompt json-text">' in html and "cut sh" in html


def test_json_tree_is_bounded_in_depth_entries_and_size():
    deep = current = {}
    for _ in range(display.MAX_DEPTH + 5):
        current["next"] = {}
        current = current["next"]
    current["leaf"] = "bottom"
    html = _render("{{ v|json_tree }}", v=deep)
    assert "bottom" not in html and "nested too deep to show" in html

    wide = {f"k{i}": i for i in range(display.MAX_ENTRIES + 7)}
    html = _render("{{ v|json_tree }}", v=wide)
    assert html.count("<dt>") == display.MAX_ENTRIES and "and 7 more not shown" in html

    huge = [[[i, i] for i in range(40)] for _ in range(40)]  # 3,200 leaves
    html = _render("{{ v|json_tree }}", v=huge)
    assert html.count("<li>") <= display.MAX_NODES

    html = _render("{{ v|json_tree }}", v="x" * (display.MAX_STRING + 10))
    assert "(10 more characters)" in html


def test_json_inline_is_json_for_a_cell():
    assert _render("{{ v|json_inline }}", v={"a": True}) == "{&quot;a&quot;: true}"
    assert _render("{{ v|json_inline }}", v="plain") == "plain"


def test_usd_carries_the_currency():
    assert display.usd(0.0123) == "$0.0123"
    assert display.usd("1234.5") == "$1,234.5000"
    assert display.usd(0) == "$0.0000"
    assert display.usd(0.00001) == "< $0.0001"
    assert display.usd(None) == "" and display.usd("n/a") == ""
    assert re.fullmatch(r"\$\d\.\d{4}", display.usd(2))
