"""Walk one large JSON document without holding it: the members an importer asks for are
yielded as text, one at a time; everything else streams by.

promptfoo writes its results as one JSON object (`{"evalId", "results": {"version",
"results": [row, ...]}, "config", ...}`), so the row-at-a-time readers of
datasets.parsing (JSON Lines, a top-level array) cannot read it. This scanner keeps at
most one kept value (bounded by `Limits.max_row_chars`, the upload's row bound) plus one
read chunk in memory; skipped values, however large or deep, cost a counter. Nesting of
the kept values is counted on their text before anything is decoded (the caller decodes
them with datasets.parsing's checked decoder).

No Django in here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Literal, NoReturn

from evalsite.datasets.parsing import Limits, ParseError, Problem

Path = tuple[str, ...]
Event = tuple[Literal["value"], Path, str] | tuple[Literal["element"], Path, int, str]

# Outside any string: skip text and whole strings, then capture the next bracket or the
# quote of a string that does not end in the buffer. Possessive and used with .match(),
# so a long run without structure costs one linear pass (as datasets.parsing's scanner).
_STRUCT = re.compile(r'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+([\[\]{}"])', re.S)
# The rest of a string's body from inside it: stops at its closing quote, at the end of
# the buffer, or before a backslash that ends the buffer.
_STRING_REST = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+', re.S)
_SPACE = re.compile(r"[ \t\r\n]*+")
_SCALAR = re.compile(r"[^,\]}\s]*+")
# A member name longer than this is refused: promptfoo's are short identifiers.
MAX_KEY_CHARS = 1000
_MAX_SCALAR_CHARS = 1000


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


class JsonStream:
    """Yield the parts of a JSON document that `descend` and `keep` name.

    `descend` lists the containers to walk into (by path of member names; () is the
    document). Inside them every member is visited: a member whose path is in `descend`
    is walked into as well, an array in `split` has each element yielded on its own as
    ("element", path, n, text), a member in `keep` is yielded whole as ("value", path,
    text), and anything else is skipped. A kept value or element longer than the row
    limit, or nested deeper than `limits.max_nesting`, stops the file with a ParseError
    naming where it is.
    """

    def __init__(
        self,
        chunks: Iterable[str],
        *,
        limits: Limits,
        descend: set[Path],
        split: set[Path],
        keep: set[Path],
    ) -> None:
        self._buf = _Buffer(chunks)
        self._limits = limits
        self._descend = descend
        self._split = split
        self._keep = keep

    # ------------------------------------------------------------------ walking

    def events(self) -> Iterator[Event]:
        first = self._buf.peek()
        if first == "":
            raise ParseError("The file is empty.")
        if first != "{":
            raise ParseError(
                "The file is not one JSON object (it starts with "
                f"{first!r}); promptfoo's `eval -o results.json` writes one."
            )
        yield from self._object(())
        if self._buf.peek() != "":
            raise ParseError(
                "The JSON document ends before the file does: there is text after it.",
                [Problem("Text after the end of the JSON document.")],
            )

    def _object(self, path: Path) -> Iterator[Event]:
        buf = self._buf
        buf.pos += 1  # the "{"
        if buf.peek() == "}":
            buf.pos += 1
            return
        while True:
            if buf.peek() != '"':
                self._malformed(path, "a member name")
            key = self._key(path)
            if buf.peek() != ":":
                self._malformed(path, '":" after a member name')
            buf.pos += 1
            yield from self._member(path + (key,))
            char = buf.peek()
            if char == ",":
                buf.pos += 1
                continue
            if char == "}":
                buf.pos += 1
                return
            self._malformed(path, '"," or "}"')

    def _member(self, path: Path) -> Iterator[Event]:
        char = self._buf.peek()
        if path in self._descend and char == "{":
            yield from self._object(path)
        elif path in self._split and char == "[":
            yield from self._array(path)
        elif path in self._keep:
            yield ("value", path, self._value(path, keep=True))
        else:
            self._value(path, keep=False)

    def _array(self, path: Path) -> Iterator[Event]:
        buf = self._buf
        buf.pos += 1  # the "["
        if buf.peek() == "]":
            buf.pos += 1
            return
        n = 0
        while True:
            n += 1
            yield ("element", path, n, self._value(path + (f"[{n}]",), keep=True))
            char = buf.peek()
            if char == ",":
                buf.pos += 1
                continue
            if char == "]":
                buf.pos += 1
                return
            self._malformed(path, f'"," or "]" after element {n}')

    # ------------------------------------------------------------------ values

    def _key(self, path: Path) -> str:
        text = self._string(path, keep=True, limit=MAX_KEY_CHARS + 2)
        try:
            key: object = json.loads(text)
        except ValueError:
            self._malformed(path, "a member name")
        if not isinstance(key, str):  # pragma: no cover - a JSON string decodes to str
            self._malformed(path, "a member name")
        return key

    def _value(self, path: Path, *, keep: bool) -> str:
        """Consume one value; its text when `keep` (else "")."""
        char = self._buf.peek()
        if char == "":
            self._malformed(path, "a value")
        limit = self._limits.max_row_chars
        if char == '"':
            return self._string(path, keep=keep, limit=limit)
        if char in "[{":
            return self._container(path, keep=keep, limit=limit)
        return self._scalar(path)

    def _string(self, path: Path, *, keep: bool, limit: int) -> str:
        buf = self._buf
        start = buf.pos
        start = self._through_string(path, start if keep else None, limit)
        return buf.text[start : buf.pos] if keep else ""

    def _through_string(self, path: Path, kept_from: int | None, limit: int) -> int:
        """Move past the string whose quote is at the position, reading more as needed.

        The text from `kept_from` on is kept (its new position is returned, 0 once
        chunks were dropped before it); with None, only what is left to read is kept.
        """
        buf = self._buf
        buf.pos += 1
        while True:
            end = _STRING_REST.match(buf.text, buf.pos).end()  # type: ignore[union-attr]
            if end < len(buf.text) and buf.text[end] == '"':
                buf.pos = end + 1
                return kept_from if kept_from is not None else buf.pos
            buf.pos = end
            if kept_from is not None and end - kept_from > limit:
                self._too_large(path)
            drop = kept_from if kept_from is not None else buf.pos
            if not buf.more(drop):
                self._malformed(path, "the end of a string")
            if kept_from is not None:
                kept_from -= drop

    def _scalar(self, path: Path) -> str:
        """A number, true, false or null (checked when decoded)."""
        buf = self._buf
        start = buf.pos
        while True:
            end = _SCALAR.match(buf.text, start).end()  # type: ignore[union-attr]
            if end - start > _MAX_SCALAR_CHARS:
                self._malformed(path, "a value")
            if end < len(buf.text) or not buf.more(start):
                break
            start = 0  # more() dropped the text before it
        text = buf.text[start:end]
        buf.pos = end
        if not text:
            self._malformed(path, "a value")
        return text

    def _container(self, path: Path, *, keep: bool, limit: int) -> str:
        buf = self._buf
        kept_from: int | None = buf.pos if keep else None
        depth = 0
        max_depth = self._limits.max_nesting
        while True:
            m = _STRUCT.match(buf.text, buf.pos)
            if m is not None:
                char = m.group(1)
                if char == '"':
                    # A string that does not end in the buffer: read on through it.
                    buf.pos = m.start(1)
                    got = self._through_string(path, kept_from, limit)
                    kept_from = got if keep else None
                    continue
                buf.pos = m.end()
                if char in "[{":
                    depth += 1
                    if keep and depth > max_depth:
                        raise self._error(
                            path,
                            f"This value is nested more than {max_depth} levels deep "
                            "(counting the row itself); flatten it, or store it as a "
                            "JSON string.",
                        )
                else:
                    depth -= 1
                    if depth == 0:
                        if kept_from is None:
                            return ""
                        if buf.pos - kept_from > limit:
                            self._too_large(path)
                        return buf.text[kept_from : buf.pos]
                if kept_from is not None and buf.pos - kept_from > limit:
                    self._too_large(path)
                continue
            # No bracket and no open string up to the end of the buffer.
            buf.pos = len(buf.text)
            if kept_from is not None and buf.pos - kept_from > limit:
                self._too_large(path)
            drop = kept_from if kept_from is not None else buf.pos
            if not buf.more(drop):
                self._malformed(path, "the end of a value")
            if kept_from is not None:
                kept_from -= drop

    # ------------------------------------------------------------------ errors

    def _error(self, path: Path, message: str) -> ParseError:
        where = _where(path)
        return ParseError(
            f"Nothing was imported. {where}: {message}",
            [Problem(message, column=where)],
        )

    def _too_large(self, path: Path) -> NoReturn:
        raise self._error(
            path,
            f"This value is over {self._limits.max_row_chars:,} characters long; a "
            f"cell may hold at most {self._limits.max_cell_chars:,}.",
        )

    def _malformed(self, path: Path, expected: str) -> NoReturn:
        raise self._error(path, f"The JSON is malformed here: expected {expected}.")


def _where(path: Path) -> str:
    """`results.results[3]` for a path."""
    out = ""
    for part in path:
        out += part if part.startswith("[") or not out else f".{part}"
    return out or "the document"
