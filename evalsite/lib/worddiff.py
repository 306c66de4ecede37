"""A word-level diff of an item's output against its reference, for reviewers' eyes."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Literal

from django.core.cache import cache

# Past this many words in either text no diff is computed (difflib's matching can
# take seconds on long texts); the page says so instead.
WORD_DIFF_MAX_WORDS = 20_000

_TOKEN = re.compile(r"\S+\s*")

Op = Literal["equal", "delete", "insert"]


@dataclass(frozen=True)
class Segment:
    op: Op  # "delete": only in the reference; "insert": only in the output
    text: str


@dataclass(frozen=True)
class WordDiff:
    segments: list[Segment] = field(default_factory=list)
    too_long: bool = False
    words: int = 0  # the longer text's word count
    changed: int = 0  # words only in one of the two texts

    @property
    def identical(self) -> bool:
        return not self.too_long and self.changed == 0


def _tokens(text: str) -> list[str]:
    """Words with the whitespace after them, so the segments rebuild the text."""
    return _TOKEN.findall(text or "")


def word_diff(reference: str, output: str) -> WordDiff:
    """Reference → output, word by word: equal runs, words only in the reference
    ("delete") and words only in the output ("insert"). Words compare without the
    whitespace around them, so a re-wrapped line is not a change."""
    ref, out = _tokens(reference), _tokens(output)
    words = max(len(ref), len(out))
    if words > WORD_DIFF_MAX_WORDS:
        return WordDiff(too_long=True, words=words)
    matcher = SequenceMatcher(
        None, [t.rstrip() for t in ref], [t.rstrip() for t in out], autojunk=True
    )
    segments: list[Segment] = []
    changed = 0

    def add(op: Op, text: str) -> None:
        if not text:
            return
        if segments and segments[-1].op == op:
            segments[-1] = Segment(op, segments[-1].text + text)
        else:
            segments.append(Segment(op, text))

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add("equal", "".join(out[j1:j2]))
            continue
        if tag in ("delete", "replace"):
            add("delete", "".join(ref[i1:i2]))
            changed += i2 - i1
        if tag in ("insert", "replace"):
            add("insert", "".join(out[j1:j2]))
            changed += j2 - j1
    return WordDiff(segments=segments, words=words, changed=changed)


_CACHE_KEY = "review:word-diff:v1:{digest}"
_CACHE_TTL = 24 * 3600


def word_diff_cached(reference: str, output: str) -> WordDiff:
    """word_diff, cached by the two texts (a long diff costs up to a second)."""
    digest = hashlib.sha256(
        f"{len(reference)}:{reference}\x00{output}".encode("utf-8", "surrogatepass")
    ).hexdigest()
    key = _CACHE_KEY.format(digest=digest)
    found: WordDiff | None = cache.get(key)
    if found is None:
        found = word_diff(reference, output)
        cache.set(key, found, _CACHE_TTL)
    return found
