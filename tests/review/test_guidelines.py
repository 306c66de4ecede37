"""Review guidelines: safe markdown, versions, who edits, pages and API (issue 17 part 4)."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest

from evalsite.lib.markdown import ALLOWED_TAGS, markdown_to_html

# ------------------------------------------------------------------ safe markdown

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](  javascript:alert(1))",
    "[x](java&#x09;script:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](file:///etc/passwd)",
    "<javascript:alert(1)>",
    '[x](https://example.com "a" onmouseover="alert(1)")',
    "![x](https://tracker.example/pixel.png)",
    "<iframe src=https://example.com></iframe>",
    "<style>body{display:none}</style>",
    '<div style="position:fixed">x</div>',
    "<!-- <script>alert(1)</script> -->",
    "<svg onload=alert(1)>",
    "<form action=/logout method=post><button>x</button></form>",
]


class _Elements(HTMLParser):
    """Every element and attribute the browser would build from the HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def _elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.elements


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_to_html_leaves_no_script_handler_or_foreign_element(text):
    html = str(markdown_to_html(text))
    for tag, attrs in _elements(html):
        assert tag in ALLOWED_TAGS, (text, html)
        assert set(attrs) <= {"href", "title", "rel", "start"}, (text, html)
        # What the browser would open: its scheme, or none for a relative link.
        scheme = urlsplit(attrs.get("href") or "").scheme.lower()
        assert scheme in {"", "http", "https", "mailto"}, (text, html)
        if tag == "a":
            assert attrs["rel"] == "noopener nofollow"


def test_markdown_to_html_shows_raw_html_as_text():
    html = str(markdown_to_html("Use <b>bold</b> & <script>x</script>"))
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "&lt;script&gt;" in html
    assert "&amp;" in html


def test_markdown_to_html_links_get_noopener_nofollow():
    html = str(
        markdown_to_html(
            "[docs](https://example.com/guide) [mail](mailto:a@example.com) "
            "[here](/projects/1/) <https://example.org>"
        )
    )
    assert html.count('rel="noopener nofollow"') == 4
    assert 'href="https://example.com/guide"' in html
    assert 'href="mailto:a@example.com"' in html
    assert 'href="/projects/1/"' in html


def test_markdown_to_html_keeps_the_markdown_people_write():
    html = str(
        markdown_to_html(
            "# Rules\n\n**Fail** an answer that _invents_ numbers.\n\n"
            "1. read\n2. decide\n\n- a\n- b\n\n> quote\n\n`code` ~~old~~\n\n"
            "| label | meaning |\n|:--|--:|\n| yes | supported |\n"
        )
    )
    for tag in ("<h1>", "<strong>", "<em>", "<ol>", "<ul>", "<blockquote>", "<code>"):
        assert tag in html
    assert "<s>old</s>" in html or "<del>old</del>" in html
    assert "<table>" in html and "<td>supported</td>" in html
