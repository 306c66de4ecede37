"""A file as text: decoded in chunks, cut into lines, and a value written as item text.

Text the database cannot store (NUL, unpaired surrogates: the rule in evalsite.lib.text)
is refused with its row and column, never cleaned. Bytes that are not UTF-8 are decoded
with "surrogateescape", so each one reaches its cell as a lone surrogate and is reported
there, with its row and column, as not UTF-8. No Django in here.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from evalsite.datasets.parsing.limits import ParseError, Problem, not_utf8, unstorable
from evalsite.lib.text import unstorable_char

CHUNK_BYTES = 1 << 20

# Bytes that are not UTF-8 decode to these with "surrogateescape"; valid UTF-8 never does.
UNDECODABLE = re.compile("[\udc80-\udcff]")


def undecodable(text: str) -> re.Match[str] | None:
    """The first byte of `text` that was not UTF-8, if any."""
    # ASCII text holds no byte that failed to decode (those became U+DC80..U+DCFF).
    return None if text.isascii() else UNDECODABLE.search(text)


def printable(name: str) -> str:
    """A column name fit for a message: characters that do not print are escaped."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def text_problem(text: str) -> str | None:
    """Why a CSV cell or a column name cannot be stored, or None.

    lib.text's rule decides; a lone surrogate in raw text can only be a byte that was
    not UTF-8 (see text_chunks), so that one is named as such.
    """
    found = unstorable_char(text)
    if found is None:
        return None
    bad = UNDECODABLE.search(text)
    return not_utf8(bad.group()) if bad else unstorable(found)


def as_text(value: Any) -> str:
    """A value as item text: strings as they are, anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def json_type(value: Any) -> str:
    """A decoded JSON value's type as JSON names it, for messages."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


class LongLine:
    """In place of a line over the row limit: only its first `max_chars` are kept."""

    __slots__ = ("head",)

    def __init__(self, head: str) -> None:
        self.head = head


def _refuse_utf16_or_binary(head: bytes) -> None:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ParseError(
            "The file is UTF-16 or UTF-32 (it starts with that byte order mark). Save it "
            "as UTF-8 and upload it again."
        )
    sample = head[:4096]
    nuls = sample.count(b"\x00")
    # UTF-16 text is half NUL bytes; one stray NUL in a cell is reported in its cell.
    if nuls and nuls * 8 >= len(sample):
        line = sample[: sample.index(b"\x00")].count(b"\n") + 1
        raise ParseError(
            f"The file contains NUL bytes (line {line}): it looks like UTF-16 or a "
            "binary file. Save it as UTF-8 text and upload it again.",
            [Problem("NUL bytes: not UTF-8 text.", line=line)],
        )


def text_chunks(binary: BinaryIO) -> Iterator[str]:
    """The file as text chunks, without a leading UTF-8 BOM.

    Decoded with "surrogateescape": a byte that is not UTF-8 becomes a lone surrogate
    (U+DC80..U+DCFF) in its cell, where lib.text's rule refuses it with the row and
    column, rather than stopping the whole file at a byte offset.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    first = True
    while True:
        chunk = binary.read(CHUNK_BYTES)
        if first:
            first = False
            _refuse_utf16_or_binary(chunk)
            # A BOM split across reads is not worth handling: reads are >= 3 bytes here.
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8) :]
        text = decoder.decode(chunk, not chunk)
        if text:
            yield text
        if not chunk:
            return


def lines(texts: Iterable[str], max_chars: int) -> Iterator[str | LongLine]:
    """Lines with their line ends kept (csv needs them for quoted newlines).

    Only "\\n" ends a line ("\\r\\n" keeps its "\\r", which csv and json both accept);
    str.splitlines would also split on form feeds and Unicode separators inside fields.
    A line longer than `max_chars` is dropped as it is read and yielded as a LongLine.
    """
    pending: list[str] = []  # the start of a line that runs past the current chunk
    pending_chars = 0
    dropping = False
    for text in texts:
        parts = text.split("\n")
        tail = parts.pop()
        for part in parts:
            if pending or dropping:
                if dropping or pending_chars + len(part) > max_chars:
                    yield LongLine("".join(pending))
                else:
                    pending.append(part)
                    yield "".join(pending) + "\n"
                pending, pending_chars, dropping = [], 0, False
            elif len(part) > max_chars:
                yield LongLine(part[:max_chars])
            else:
                yield part + "\n"
        if tail and not dropping:
            if pending_chars + len(tail) > max_chars:
                pending.append(tail[: max_chars - pending_chars])
                dropping = True
            else:
                pending.append(tail)
                pending_chars += len(tail)
    if dropping:
        yield LongLine("".join(pending))
    elif pending:
        yield "".join(pending)
