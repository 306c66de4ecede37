"""The one streaming JSON scanner: walk a JSON document read in chunks without holding it.

Uploads and imports both read with it: a .json dataset is one top-level array whose
elements are rows (`array_elements`), and another tool's export is one object whose
members a reader names by path (`members`; promptfoo's `eval -o results.json`). Only
brackets and the ends of strings are looked at while a value streams by, so nesting
is counted without building anything; at most one kept value (bounded by
`Limits.max_row_chars`, the row limit) plus one read chunk is in memory, and a skipped
value, however large or deep, costs a counter. A kept value past the row limit or
nested deeper than `Limits.max_nesting` stops the file where it is, before the rest is
read. Kept text is decoded by the caller (jsonfile's checked decoder).

Each of the two walks words what stopped it for its own file: a row and a column for a
dataset, a member path (`results.results[3]`) for a tool's document.

No Django in here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Literal, NoReturn

from evalsite.datasets.parsing.limits import (
    MAX_COLUMN_NAME_CHARS,
    Limits,
    ParseError,
    Problem,
    row_too_large,
    too_deep,
    value_too_large,
)
from evalsite.datasets.parsing.text import printable

Path = tuple[str, ...]
Event = tuple[Literal["value"], Path, str] | tuple[Literal["element"], Path, int, str]

# Outside any string: skip text and whole strings, then capture the next bracket or the
# quote of a string that does not end in the text. Possessive, and always used with
# .match(), so no failed match is ever retried from a later start: a long run without
# structure costs one linear pass. Commas are skipped too: inside a value only its
# brackets matter, so a row costs one match per bracket, not one per member.
_STRUCT = re.compile(r'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+([\[\]{}"])', re.S)
# The rest of a string's body from inside it: stops at its closing quote, at the end of
# the text, or before a backslash that ends the text (its escape is in the next chunk).
# Like _SPACE it matches the empty string: .match() never gives None (the type: ignores
# where they are used say so to mypy without a check in the reading loop).
_STRING_REST = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+', re.S)
_SPACE = re.compile(r"[ \t\r\n]*+")
_SCALAR = re.compile(r"[^,\]}\s]*+")
# Every token of JSON text, for finding a key in a row already found faulty.
_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[\[\]{}:,"]|[^"\[\]{}:,]++', re.S)
_COLON = re.compile(r"[ \t\r\n]*:")
_COLUMN_SEARCH_TOKENS = 200_000
# Whole strings, and everything but brackets: what is left of JSON text is its nesting.
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
# A member name longer than this is refused: the tools' names are short identifiers.
MAX_KEY_CHARS = 1000


class _Stop(Exception):
    """Why the scanner stopped, for the walk to word: the value at `path` is nested too
    deep ("deep"), over the row limit ("large"), or not JSON ("malformed", where
    `expected` was not found). `text` is what was kept of the value and `at` the place
    in it (for naming the column); `eof` whether the file ended there."""

    def __init__(
        self,
        kind: Literal["deep", "large", "malformed"],
        path: Path,
        *,
        expected: str = "",
        text: str = "",
        at: int | None = None,
        eof: bool = False,
    ) -> None:
        super().__init__(kind)
        self.kind = kind
        self.path = path
        self.expected = expected
        self.text = text
        self.at = len(text) if at is None else at
        self.eof = eof


class _Buffer:
    """Text read from the chunks, with a position; text before `keep` may be dropped."""

    def __init__(self, chunks: Iterable[str]) -> None:
        self._chunks = iter(chunks)
        self.text = ""
        self.pos = 0
        self.eof = False

    def more(self, keep: int) -> bool:
        """Append the next chunk, dropping text before `keep` (positions shift); False at
        the end of the file."""
        if self.eof:
            return False
        chunk = next(self._chunks, None)
        if chunk is None:
            self.eof = True
            return False
        self.text = self.text[keep:] + chunk
        self.pos -= keep
        return True

    def peek(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more(self.pos):
                return ""


class _Scanner:
    """Values, member names and punctuation, read one at a time from the chunks."""

    def __init__(self, chunks: Iterable[str], limits: Limits) -> None:
        self.buf = _Buffer(chunks)
        self.limits = limits

    def peek(self) -> str:
        return self.buf.peek()

    def take(self) -> None:
        """Move past the character peek() gave."""
        self.buf.pos += 1

    def malformed(self, path: Path, expected: str) -> NoReturn:
        raise _Stop("malformed", path, expected=expected, eof=self.buf.eof)

    def key(self, path: Path) -> str:
        text = self._string(path, keep=True, limit=MAX_KEY_CHARS + 2)
        try:
            key: object = json.loads(text)
        except ValueError:
            self.malformed(path, "a member name")
        if not isinstance(key, str):  # pragma: no cover - a JSON string decodes to str
            self.malformed(path, "a member name")
        return key

    def value(self, path: Path, *, keep: bool) -> str:
        """Consume one value; its text when `keep` (else "")."""
        char = self.peek()
        if char == "":
            self.malformed(path, "a value")
        limit = self.limits.max_row_chars
        if char == '"':
            return self._string(path, keep=keep, limit=limit)
        if char in "[{":
            return self._container(path, keep=keep, limit=limit)
        return self._scalar(path, limit)

    def _string(self, path: Path, *, keep: bool, limit: int) -> str:
        buf = self.buf
        start = self._through_string(path, buf.pos if keep else None, limit)
        return buf.text[start : buf.pos] if keep else ""

    def _through_string(self, path: Path, kept_from: int | None, limit: int) -> int:
        """Move past the string whose quote is at the position, reading more as needed.

        The text from `kept_from` on is kept (its new position is returned, 0 once
        chunks were dropped before it); with None, only what is left to read is kept.
        """
        buf = self.buf
        buf.pos += 1
        while True:
            end = _STRING_REST.match(buf.text, buf.pos).end()  # type: ignore[union-attr]
            if end < len(buf.text) and buf.text[end] == '"':
                buf.pos = end + 1
                return kept_from if kept_from is not None else buf.pos
            buf.pos = end
            if kept_from is not None and end - kept_from > limit:
                raise _Stop("large", path, text=buf.text[kept_from:end])
            drop = kept_from if kept_from is not None else buf.pos
            if not buf.more(drop):
                self.malformed(path, "the end of a string")
            if kept_from is not None:
                kept_from -= drop

    def _scalar(self, path: Path, limit: int) -> str:
        """A number, true, false or null (checked when decoded)."""
        buf = self.buf
        start = buf.pos
        while True:
            end = _SCALAR.match(buf.text, start).end()  # type: ignore[union-attr]
            if end - start > limit:
                raise _Stop("large", path, text=buf.text[start:end])
            if end < len(buf.text) or not buf.more(start):
                break
            start = 0  # more() dropped the text before it
        text = buf.text[start:end]
        buf.pos = end
        if not text:
            self.malformed(path, "a value")
        return text

    def _container(self, path: Path, *, keep: bool, limit: int) -> str:
        buf = self.buf
        kept_from: int | None = buf.pos if keep else None
        depth = 0
        max_depth = self.limits.max_nesting
        while True:
            m = _STRUCT.match(buf.text, buf.pos)
            if m is not None:
                char = m.group(1)
                if char == '"':
                    # A string that does not end in the text: read on through it.
                    buf.pos = m.start(1)
                    got = self._through_string(path, kept_from, limit)
                    kept_from = got if keep else None
                    continue
                buf.pos = m.end()
                if char in "[{":
                    depth += 1
                    if kept_from is not None and depth > max_depth:
                        text = buf.text[kept_from : buf.pos]
                        raise _Stop("deep", path, text=text, at=len(text) - 1)
                else:
                    depth -= 1
                    if depth == 0:
                        if kept_from is None:
                            return ""
                        if buf.pos - kept_from > limit:
                            raise _Stop(
                                "large", path, text=buf.text[kept_from : buf.pos]
                            )
                        return buf.text[kept_from : buf.pos]
                if kept_from is not None and buf.pos - kept_from > limit:
                    raise _Stop("large", path, text=buf.text[kept_from : buf.pos])
                continue
            # No bracket and no open string up to the end of the text.
            buf.pos = len(buf.text)
            if kept_from is not None and buf.pos - kept_from > limit:
                raise _Stop("large", path, text=buf.text[kept_from : buf.pos])
            drop = kept_from if kept_from is not None else buf.pos
            if not buf.more(drop):
                self.malformed(path, "the end of a value")
            if kept_from is not None:
                kept_from -= drop


# ---------------------------------------------------------------- a dataset's array


def array_elements(chunks: Iterable[str], limits: Limits) -> Iterator[tuple[int, str]]:
    """(row, text) for each element of a top-level JSON array, one at a time.

    An element past the row limit or the nesting limit stops the file at that point
    (ParseError naming its row and column): skipping to its end would cost a pass over
    however much of the file it takes. Each element's text is checked and decoded by
    the caller.
    """
    scanner = _Scanner(chunks, limits)
    first = scanner.peek()
    if first == "":
        raise ParseError("The file is empty: no JSON array found.")
    if first != "[":
        raise ParseError(
            "A .json dataset must be one JSON array of objects, like "
            '[{"input": ..., "output": ...}, ...]. For one object per line, '
            "use the JSON Lines format (.jsonl)."
        )
    scanner.take()
    n = 0
    try:
        if scanner.peek() != "]":
            while True:
                n += 1
                yield n, scanner.value((f"[{n}]",), keep=True)
                char = scanner.peek()
                if char == ",":
                    scanner.take()
                    continue
                if char == "]":
                    break
                if char == "}":
                    raise ParseError(
                        f"The JSON is malformed after element {n} of the array: the "
                        'array is closed with "}".',
                        [Problem("Malformed JSON.", row=n + 1)],
                    )
                scanner.malformed((), f'"," or "]" after element {n}')
        scanner.take()
    except _Stop as stop:
        _refuse_element(stop, n, limits)
    if scanner.peek() != "":
        raise ParseError(
            f"The JSON array ends after element {n}, but the file goes on. A .json "
            "dataset must be one JSON array.",
            [Problem("Text after the end of the JSON array.")],
        )


def _refuse_element(stop: _Stop, n: int, limits: Limits) -> NoReturn:
    """Word a stop inside the array: at element `n` (0 before the first)."""
    if stop.kind == "malformed":
        # Inside element n the path names it, so n - 1 are done; between elements, n.
        done = n - 1 if stop.path else n
        if stop.eof:
            raise ParseError(
                f"The JSON is malformed after element {done} of the array: "
                "the file ends before the array is closed.",
                [Problem("Malformed JSON: the array is not closed.", row=done + 1)],
            )
        raise ParseError(
            f"The JSON is malformed after element {done} of the array: expected "
            f"{stop.expected}.",
            [Problem("Malformed JSON.", row=done + 1)],
        )
    message = too_deep(limits) if stop.kind == "deep" else row_too_large(limits)
    problem = Problem(message, row=n, column=column_at(stop.text, stop.at))
    raise ParseError(f"Nothing was imported. {problem.field}: {message}", [problem])


# ---------------------------------------------------------------- a tool's document


def members(
    chunks: Iterable[str],
    *,
    limits: Limits,
    descend: set[Path],
    split: set[Path],
    keep: set[Path],
) -> Iterator[Event]:
    """Yield the parts of a JSON object document that `descend` and `keep` name.

    `descend` lists the containers to walk into (by path of member names; () is the
    document). Inside them every member is visited: a member whose path is in `descend`
    is walked into as well, an array in `split` has each element yielded on its own as
    ("element", path, n, text), a member in `keep` is yielded whole as ("value", path,
    text), and anything else is skipped. A kept value or element longer than the row
    limit, or nested deeper than `limits.max_nesting`, stops the file with a ParseError
    naming where it is.
    """
    scanner = _Scanner(chunks, limits)
    first = scanner.peek()
    if first == "":
        raise ParseError("The file is empty.")
    if first != "{":
        raise ParseError(
            "The file is not one JSON object (it starts with "
            f"{first!r}); promptfoo's `eval -o results.json` writes one."
        )
    try:
        yield from _object(scanner, (), descend, split, keep)
    except _Stop as stop:
        if stop.kind == "deep":
            message = too_deep(limits)
        elif stop.kind == "large":
            message = value_too_large(limits)
        else:
            message = f"The JSON is malformed here: expected {stop.expected}."
        where = _where(stop.path)
        raise ParseError(
            f"Nothing was imported. {where}: {message}",
            [Problem(message, column=where)],
        ) from None
    if scanner.peek() != "":
        raise ParseError(
            "The JSON document ends before the file does: there is text after it.",
            [Problem("Text after the end of the JSON document.")],
        )


def _object(
    scanner: _Scanner,
    path: Path,
    descend: set[Path],
    split: set[Path],
    keep: set[Path],
) -> Iterator[Event]:
    scanner.take()  # the "{"
    if scanner.peek() == "}":
        scanner.take()
        return
    while True:
        if scanner.peek() != '"':
            scanner.malformed(path, "a member name")
        member = path + (scanner.key(path),)
        if scanner.peek() != ":":
            scanner.malformed(path, '":" after a member name')
        scanner.take()
        char = scanner.peek()
        if member in descend and char == "{":
            yield from _object(scanner, member, descend, split, keep)
        elif member in split and char == "[":
            yield from _array(scanner, member)
        elif member in keep:
            yield ("value", member, scanner.value(member, keep=True))
        else:
            scanner.value(member, keep=False)
        char = scanner.peek()
        if char == ",":
            scanner.take()
            continue
        if char == "}":
            scanner.take()
            return
        scanner.malformed(path, '"," or "}"')


def _array(scanner: _Scanner, path: Path) -> Iterator[Event]:
    scanner.take()  # the "["
    if scanner.peek() == "]":
        scanner.take()
        return
    n = 0
    while True:
        n += 1
        yield ("element", path, n, scanner.value(path + (f"[{n}]",), keep=True))
        char = scanner.peek()
        if char == ",":
            scanner.take()
            continue
        if char == "]":
            scanner.take()
            return
        scanner.malformed(path, f'"," or "]" after element {n}')


def _where(path: Path) -> str:
    """`results.results[3]` for a path."""
    out = ""
    for part in path:
        out += part if part.startswith("[") or not out else f".{part}"
    return out or "the document"


# ---------------------------------------------------------------- JSON text


def nesting_overflow(text: str, max_nesting: int) -> int | None:
    """Where JSON `text` first nests deeper than `max_nesting` levels, or None.

    Counted on the text, skipping strings, before anything recurses over it: first on
    its brackets alone (built at C speed), and only for a row found too deep, token by
    token to the place (for the message).
    """
    if text.count("[") + text.count("{") <= max_nesting:
        return None
    skeleton = _STRING.sub("", text)
    quote = skeleton.find('"')  # a string never closed: json.loads names that error
    brackets = _NOT_BRACKET.sub("", skeleton if quote < 0 else skeleton[:quote])
    depth = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            if depth > max_nesting:
                break
        else:
            depth -= 1
    else:
        return None
    depth, pos = 0, 0
    while (m := _STRUCT.match(text, pos)) is not None:
        char = m.group(1)
        if char in "[{":
            depth += 1
            if depth > max_nesting:
                return m.start(1)
        elif char in "]}":
            depth -= 1
        pos = m.end()
    return len(text)  # not reached: the skeleton went over


def column_at(text: str, pos: int) -> str | None:
    """The top-level key of JSON object text whose value (or name) holds `pos`.

    For a message only: gives up (None) past _COLUMN_SEARCH_TOKENS tokens, so that a
    hostile row costs little more to describe than to refuse.
    """
    depth = 0
    last = key = None
    for count, m in enumerate(_TOKEN.finditer(text)):
        if m.start() > pos:
            break
        if count == _COLUMN_SEARCH_TOKENS:
            return None
        token = m.group()
        if token == '"':
            break  # a string never closed
        if token[0] == '"':
            if depth == 1:
                last = token
                if m.end() > pos:  # within this string: the key itself, if a name
                    if _COLON.match(text, m.end()):
                        key = token
                    break
        elif token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
        elif depth == 1 and token == ":":
            key = last
        elif depth == 1 and token == ",":
            key = None
    if key is None:
        return None
    try:
        name = json.loads(key, strict=False)
    except ValueError:
        return None
    return printable(name)[: MAX_COLUMN_NAME_CHARS + 1]
