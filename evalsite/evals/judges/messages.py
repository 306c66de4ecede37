"""What failed when a judge was called, in words naming its host and port.

One builder for *Test connection* and for the error a judged result stores, so a
reviewer reading a result's error learns what the judge's owner would from the test:
which address, and whether it answered an HTTP error, timed out or could not be
reached. The remote's own reply is never echoed here (a judge URL may point anywhere).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import openai

from scoring.egress import refused_cause

_REDIRECT_HINT = (
    "a redirect, which judge calls never follow: enter the URL it redirects to"
)
_STATUS_HINTS = {
    **dict.fromkeys((301, 302, 307, 308), _REDIRECT_HINT),
    400: "the request was refused; check the model name",
    401: "the API key was refused",
    403: "the API key may not use this model",
    404: "no such model or path; check the base URL and the model",
    429: "rate limited; try again later",
}


def status_hint(status: int) -> str:
    """ " (what it usually means)" for an HTTP status, or "" when nothing useful."""
    hint = _STATUS_HINTS.get(status) or ("the server failed" if status >= 500 else None)
    return f" ({hint})" if hint else ""


def judge_host_port(url: str) -> str:
    """``host:port`` of a judge URL (the scheme's port when none is written)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # "http://[::1/v1": a URL stored before it was checked
        return "the judge's URL"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    return f"{parts.hostname}:{port}" if port else str(parts.hostname)


def judge_failure_message(
    exc: BaseException, *, base_url: str, timeout_seconds: float
) -> str | None:
    """The failure of a request to the judge at ``base_url`` in words, or None when
    ``exc`` (or what caused it) is not a failed request.

    The cause chain is followed, so a scoring error raised *from* the client's error
    (a step that gave up after its retries) is described by the request that failed."""
    where = judge_host_port(base_url)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, openai.APIStatusError):
            return f"{where} answered HTTP {current.status_code}{status_hint(current.status_code)}."
        if isinstance(current, openai.APITimeoutError):
            return f"{where} did not answer within {timeout_seconds:g} s."
        if isinstance(current, openai.APIConnectionError):
            refused = refused_cause(current)
            if refused is not None:
                return f"Not connected: {refused}"
            return (
                f"Could not connect to {where} (refused, unreachable or unknown host)."
            )
        current = current.__cause__ or current.__context__
    return None
