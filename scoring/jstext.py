"""Text folding as the JavaScript reference scorers do it: ``String.prototype.trim`` and
``toLowerCase`` on Node 22.23 (ICU 78, Unicode 17), the same on every Python version.

``js_strip`` removes JavaScript's whitespace (``\\s``: U+FEFF is whitespace there, U+001C
to U+001F and U+0085 are not, unlike ``str.strip``). ``js_lower`` is ``str.lower`` (full
case mappings, final sigma, ``İ`` -> ``i̇``), plus the case pairs Unicode added in 16.0
and 17.0, which the Unicode databases of Python 3.11 to 3.13 do not have: Garay, Beria
Erfe, Cyrillic Tje and eight Latin letters are lower-cased, and they count as cased
letters when a capital sigma's final form is chosen.
"""

from __future__ import annotations

import functools
import re

__all__ = ["JS_WHITESPACE", "js_lower", "js_strip"]

# JavaScript's \s: WhiteSpace and LineTerminator of ECMA-262 (Unicode Zs included).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_TRIM = re.compile(f"^[{JS_WHITESPACE}]+|[{JS_WHITESPACE}]+$")


def js_strip(text: str) -> str:
    """``text.trim()`` in JavaScript."""
    return _JS_TRIM.sub("", text)


# Capital -> small letter, for the pairs added in Unicode 16.0 and 17.0 (UnicodeData.txt).
_NEWER_LOWER: dict[int, int] = {
    0x1C89: 0x1C8A,  # Cyrillic Tje
    0xA7CB: 0x0264,  # Latin ram's horn
    0xA7CC: 0xA7CD,  # Latin s with diagonal stroke
    0xA7CE: 0xA7CF,
    0xA7D2: 0xA7D3,
    0xA7D4: 0xA7D5,
    0xA7DA: 0xA7DB,  # Latin lambda
    0xA7DC: 0x019B,  # Latin lambda with stroke
    **{0x10D50 + i: 0x10D70 + i for i in range(22)},  # Garay
    **{0x16EA0 + i: 0x16EBB + i for i in range(25)},  # Beria Erfe
}
_NEWER_CASED = frozenset(chr(c) for pair in _NEWER_LOWER.items() for c in pair)
_NEWER = re.compile("[" + "".join(sorted(_NEWER_CASED)) + "]")


@functools.cache
def _sigma_context(ch: str) -> str:
    """How Python's final-sigma rule sees ``ch``: "ignorable" (skipped), "cased", or
    "other" (found by probing ``str.lower`` itself, so it is this Python's own rule)."""
    if ch in _NEWER_CASED:
        return "cased"
    if ("AΣ" + ch + " ").lower()[1] == "σ":
        return "cased"
    return "ignorable" if ("AΣ" + ch + "A").lower()[1] == "σ" else "other"


def _neighbour(text: str, start: int, step: int) -> str:
    at = start
    while 0 <= at < len(text):
        context = _sigma_context(text[at])
        if context != "ignorable":
            return context
        at += step
    return "none"


def _final_sigmas(text: str, lowered: str) -> str:
    """``lowered`` with each capital sigma's form chosen again, counting the newer letters
    as cased (``str.lower`` kept them in the same places: they have no case mapping)."""
    out = list(lowered)
    offset = 0  # lowered may be longer (İ -> i + U+0307): walk both texts together
    for index, ch in enumerate(text):
        if ch == "Σ":
            final = _neighbour(text, index - 1, -1) == "cased" and _neighbour(
                text, index + 1, 1
            ) in ("other", "none")
            out[index + offset] = "ς" if final else "σ"
        offset += len(ch.lower()) - 1
    return "".join(out)


def js_lower(text: str) -> str:
    """``text.toLowerCase()`` in JavaScript (Node 22.23, Unicode 17)."""
    lowered = text.lower()
    if text.isascii() or _NEWER.search(text) is None:
        return lowered
    if "Σ" in text:
        lowered = _final_sigmas(text, lowered)
    return lowered.translate(_NEWER_LOWER)
