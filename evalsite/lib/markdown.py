"""Markdown that people type (review guidelines) as HTML that is safe to show.

Two layers, so that neither has to be perfect alone:

1. markdown-it-py in CommonMark mode with raw HTML off: ``<script>`` in the source is
   shown as text, and its link check already refuses ``javascript:``, ``vbscript:``,
   ``file:`` and ``data:`` targets. Images are off: a guideline must not make every
   reviewer's browser fetch a third party's pixel (the CSP would block it anyway).
2. nh3 (the Ammonia sanitiser) keeps only the tags and attributes markdown produces,
   only http, https and mailto links (relative ones too), and sets
   ``rel="noopener nofollow"`` on every link.
"""

from __future__ import annotations

from functools import cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

ALLOWED_TAGS = frozenset(
    {
        "a",
        "blockquote",
        "br",
        "code",
        "del",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "li",
        "ol",
        "p",
        "pre",
        "s",
        "strong",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
# No style attributes: the CSP (style-src 'self') would refuse them anyway, so table
# column alignment is lost and nothing else is.
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener nofollow"


@cache
def _parser() -> MarkdownIt:
    return (
        MarkdownIt("commonmark", {"html": False, "linkify": False})
        .enable(["table", "strikethrough"])
        .disable("image")
    )


def markdown_to_html(text: str) -> SafeString:
    """`text` (markdown) as sanitised HTML, safe to put in a template unescaped."""
    html = _parser().render(text or "")
    clean = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        clean_content_tags={"script", "style"},
        attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel=LINK_REL,
        strip_comments=True,
    )
    return mark_safe(clean)  # sanitised by nh3 just above
