from __future__ import annotations

import httpx
import openai
import pytest

from scoring.client import _describe, _error_body
from scoring.redact import REDACTED, body_reason, redact_secrets, short_reason


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Authorization: Bearer abc.def-ghi", "Authorization: Bearer"),
        ('{"authorization": "Bearer zz123"}', '{"authorization": "Bearer'),
        ("key sk-proj-ABCDEFGH12345678 refused", "key "),
        ("token evs_0123456789abcdef here", "token "),
        ('{"api_key": "hunter22222"}', '{"api_key": "'),
        ("x-api-key: whatever-it-is", "x-api-key: "),
        ("https://h/v1?apikey=abcdef&x=1", "https://h/v1?apikey="),
    ],
)
def test_redact_secrets_removes_key_like_tokens(text, kept):
    out = redact_secrets(text)
    assert REDACTED in out
    assert out.startswith(kept)
    for secret in (
        "abc.def-ghi",
        "zz123",
        "ABCDEFGH",
        "0123456789",
        "hunter",
        "whatever",
        "abcdef&",
    ):
        assert secret not in out


def test_redact_secrets_removes_the_given_key_whatever_it_looks_like():
    key = "plainwords42"
    assert (
        redact_secrets(f"you sent {key}.", secrets=[key, None])
        == f"you sent {REDACTED}."
    )
    # Too short to search for by value: it would redact ordinary words.
    assert redact_secrets("a key", secrets=["key"]) == "a key"


def test_redact_secrets_leaves_ordinary_text_alone():
    text = "the claim is not supported; skip-level reasoning; risk-free"
    assert redact_secrets(text) == text


def test_short_reason_is_one_bounded_line():
    assert short_reason("\n  first line \nsecond") == "first line"
    long = short_reason("x" * 500, limit=50)
    assert len(long) == 50 and long.endswith("…")


def test_body_reason_reads_the_usual_shapes():
    assert body_reason({"error": {"message": "bad key"}}) == "bad key"
    assert body_reason({"message": "m"}) == "m"
    assert body_reason({"detail": "d"}) == "d"
    assert body_reason({"headers": {}}) is None
    assert body_reason("text") is None


def _status_error(status: int, body: str) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://judge/v1/chat/completions")
    response = httpx.Response(status, text=body, request=request)
    return openai.APIStatusError(
        f"Error code: {status} - {body}", response=response, body=None
    )


def test_describe_gives_the_status_and_a_short_redacted_reason():
    key = "plain-KEY-value-123"
    body = f'{{"headers": {{"authorization": "Bearer {key}"}}}}\n' + "more\n" * 1000
    exc = _status_error(500, body)
    reason = _describe(exc, (key,))
    assert reason.startswith("HTTP 500 from the judge: ")
    assert key not in reason and "\n" not in reason and len(reason) < 260
    full = _error_body(exc, (key,))
    assert full is not None and key not in full and "more" in full
