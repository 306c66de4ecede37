"""Errors raised by the scoring library.

Every error is a ``ValueError`` subclass so that callers that only care about
"bad input" can catch one type; the attributes name the offending field or path
so the web app can point at it.
"""

from __future__ import annotations

from typing import Any


class ScoringError(ValueError):
    """Base class of every error raised by ``scoring``."""


class UnknownKindError(ScoringError):
    """The scorer kind is not one of ``scoring.KINDS``."""

    def __init__(self, kind: object, known: list[str] | tuple[str, ...] = ()) -> None:
        self.kind = kind
        known_text = f"; known kinds: {', '.join(known)}" if known else ""
        super().__init__(f"unknown scorer kind {kind!r}{known_text}")


class OptionsError(ScoringError):
    """An option is unknown, missing or out of range.

    ``field`` is the dotted option name, e.g. ``"penalties.unused_high_relevance"``.
    """

    def __init__(self, message: str, *, field: str) -> None:
        self.field = field
        super().__init__(message)


class AnalysisError(ScoringError):
    """An analysis does not match the kind's shape, or an override is not allowed.

    ``path`` locates the problem, e.g. ``"verdicts[2].verdict"`` (``""`` for the
    analysis as a whole).
    """

    def __init__(self, message: str, *, path: str) -> None:
        self.path = path
        super().__init__(message)


class CaseError(ScoringError):
    """The item (case) cannot be scored: a required field is missing, empty or too long.

    ``field`` is the case field, e.g. ``"reference"`` or ``"output"``.
    """

    def __init__(self, message: str, *, field: str) -> None:
        self.field = field
        super().__init__(message)


class JudgeError(ScoringError):
    """A judge step could not be completed (after retries and one repair attempt).

    ``raw`` is the judge's last raw reply, if any; ``steps`` the step records
    (``scoring.StepRecord``) done so far, including the failed one.
    """

    def __init__(
        self, message: str, *, raw: str | None = None, steps: list[Any] | None = None
    ) -> None:
        self.raw = raw
        self.steps = list(steps) if steps is not None else []
        super().__init__(message)


class JudgeURLError(ScoringError):
    """A judge's base URL that no HTTP client can use (e.g. a host that is not valid
    IDNA); the message says why and is safe to show the user who typed the URL."""
