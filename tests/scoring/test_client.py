"""Retries, Retry-After, repair, fallbacks and reply parsing, scripted on the offline
judge (``/_control``) and observed through ``/_stats``, all through the real openai client."""

from __future__ import annotations

import random
import socket
import time
from typing import Any

import httpx
import openai
import pytest

from scoring.client import RetryPolicy, StepRunner, parse_retry_after, remembered_format
from scoring.errors import JudgeError
from scoring.judge import judge_case, make_client
from scoring.kinds.factuality import parse_factuality
from scoring.prompts import ClaimsReply, get_step, parse_model, strict_schema

CASE = {
    "input": "Where is the Eiffel Tower?",
    "output": "The Eiffel Tower is in Paris.",
    "context": ["The Eiffel Tower is in Paris."],
    "reference": "The Eiffel Tower is in Paris.",
}


def run(
    kind: str, client: Any, case: dict[str, Any] | None = None, **kwargs: Any
) -> Any:
    kwargs.setdefault("retry_base_delay", 0.001)
    return judge_case(
        kind,
        case or CASE,
        kwargs.pop("options", None),
        client,
        model="offline-judge",
        **kwargs,
    )


# --------------------------------------------------------------------------- retries


def test_429_then_success(client, judge) -> None:
    judge.script("429:0", "ok")
    result = run("factuality", client)
    assert result.analysis["category"] == "C"
    assert result.steps[0].attempts == 2
    assert judge.stats()["by_status"] == {"429": 1, "200": 1}


def test_retry_after_is_honoured(client, judge) -> None:
    judge.script("429:0.4", "ok")
    start = time.perf_counter()
    result = run("factuality", client, retry_base_delay=0.001)
    elapsed = time.perf_counter() - start
    assert result.steps[0].attempts == 2
    assert elapsed >= 0.4


def test_backoff_without_retry_after_is_exponential_with_jitter() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, max_retry_after=2.0)
    rng = random.Random(1)
    waits = [policy.backoff(n, None, rng) for n in range(5)]
    for n, wait in enumerate(waits):
        nominal = min(2**n, 5.0)
        assert nominal * 0.5 <= wait <= nominal
    assert policy.backoff(0, 30.0, rng) == 2.0  # Retry-After capped
    assert policy.backoff(3, 0.25, rng) == 0.25  # Retry-After wins over backoff


def test_parse_retry_after_forms(frozen_clock) -> None:
    assert parse_retry_after(httpx.Headers({"retry-after": "3"})) == 3.0
    assert parse_retry_after(httpx.Headers({"retry-after": "0.5"})) == 0.5
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert parse_retry_after(httpx.Headers({})) is None
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    # An HTTP date counts from now: on a frozen clock (at a whole second), exactly.
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert parse_retry_after(httpx.Headers({"retry-after": future})) == 30.0
    past = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() - 30))
    assert parse_retry_after(httpx.Headers({"retry-after": past})) == 0.0


def test_500_until_retries_run_out(client, judge) -> None:
    judge.script("500", "503", "500")
    with pytest.raises(JudgeError) as info:
        run("faithfulness", client, max_retries=2)
    error = info.value
    assert "gave up after 3 attempts" in str(error) and "HTTP 500" in str(error)
    assert [s.name for s in error.steps] == ["claims"]
    assert error.steps[0].attempts == 3 and error.steps[0].error
    assert error.raw is None
    assert judge.chat_requests() == 3


def test_a_failure_in_a_later_step_keeps_the_earlier_steps(client, judge) -> None:
    judge.script("ok", "500", "500")
    with pytest.raises(JudgeError) as info:
        run("faithfulness", client, max_retries=1)
    assert [s.name for s in info.value.steps] == ["claims", "verdicts"]
    assert info.value.steps[0].error is None and info.value.steps[0].raw


def test_timeout_is_retried(judge) -> None:
    client = make_client(judge.base_url, "k", timeout=0.3)
    judge.script("sleep:1", "ok")
    result = run("factuality", client)
    assert result.steps[0].attempts == 2


def test_connection_error_is_retried_then_a_judge_error() -> None:
    client = make_client("http://127.0.0.1:9/v1", "k", timeout=1)
    with pytest.raises(JudgeError) as info:
        run("factuality", client, max_retries=1)
    assert "connection error" in str(info.value)
    assert info.value.steps[0].attempts == 2


def test_a_plain_400_is_not_retried(client, judge) -> None:
    judge.script("400")
    with pytest.raises(JudgeError) as info:
        run("factuality", client)
    assert "HTTP 400" in str(info.value)
    assert judge.chat_requests() == 1


# --------------------------------------------------------------------------- repair


def test_malformed_json_is_repaired(client, judge) -> None:
    judge.script("malformed", "ok")
    result = run("faithfulness", client)
    claims = result.steps[0]
    assert claims.attempts == 2
    assert result.analysis["claims"] == ["The Eiffel Tower is in Paris."]
    # the repair conversation: original messages, the bad reply, the validation error
    assert [m["role"] for m in claims.messages] == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    assert claims.messages[2]["content"].startswith('{"claims": ')
    assert "not valid JSON" in claims.messages[3]["content"]
    assert claims.usage["total_tokens"] > 0


def test_malformed_twice_is_a_judge_error_with_the_raw_reply(client, judge) -> None:
    judge.script("malformed", "malformed")
    with pytest.raises(JudgeError) as info:
        run("faithfulness", client)
    error = info.value
    assert error.raw is not None and error.raw.startswith('{"claims": ["The Eif')
    assert "after one repair attempt" in str(error)
    assert error.steps[0].raw == error.raw and error.steps[0].error
    assert judge.chat_requests() == 2


def test_prose_reply_is_an_error(client, judge) -> None:
    judge.script("prose", "prose")
    with pytest.raises(JudgeError) as info:
        run("toxicity", client)
    assert info.value.raw == "I think the answer looks fine overall."


def test_wrong_enum_is_repaired_and_enums_are_normalised(client, judge) -> None:
    judge.script(
        'reply:{"verdicts": [{"verdict": "maybe", "reason": "r"}]}',
        'reply:{"verdicts": [{"verdict": " YES ", "reason": "r"}]}',
    )
    result = run("toxicity", client)
    assert result.analysis["verdicts"] == [{"verdict": "yes", "reason": "r"}]
    assert "verdicts[0].verdict" in result.steps[0].messages[3]["content"]


def test_rubric_score_out_of_range_is_an_error(client, judge) -> None:
    judge.script(
        'reply:{"score": 7, "reason": "great"}',
        'reply:{"score": 1.5, "reason": "great"}',
    )
    with pytest.raises(JudgeError) as info:
        run("custom_rubric", client)
    assert (
        "score" in str(info.value)
        and info.value.raw == '{"score": 1.5, "reason": "great"}'
    )


def test_out_of_range_context_index_is_an_error(client, judge) -> None:
    judge.script(
        'reply:{"verdicts": [{"context_index": 3, "verdict": "yes", "reason": "r"}]}'
    )
    with pytest.raises(JudgeError) as info:
        run("context_precision", client)
    assert "context_index 3 is out of range" in str(info.value)


def test_code_fenced_json_is_accepted(client, judge) -> None:
    judge.script('reply:```json\n{"category": "b", "reason": "more"}\n```')
    result = run("factuality", client)
    assert result.analysis == {"category": "B", "reason": "more"}


# --------------------------------------------------------------------------- factuality parsing


@pytest.mark.parametrize(
    ("reply", "category", "reason"),
    [
        ('{"category": " c ", "reason": "same facts"}', "C", "same facts"),
        ("(C) because both say Paris", "C", "because both say Paris"),
        ("C", "C", ""),
        ("c) same", "C", "same"),
        ("  (a)", "A", ""),
        ("E. differs in style only", "E", "differs in style only"),
        # JSON after a sentence, as promptfoo reads it
        ('Verdict: {"category": "d", "reason": "dates differ"}', "D", "dates differ"),
    ],
)
def test_factuality_reply_forms(client, judge, reply, category, reason) -> None:
    judge.script(f"reply:{reply}")
    result = run("factuality", client)
    assert result.analysis["category"] == category
    assert result.analysis["reason"] == reason
    assert judge.chat_requests() == 1


@pytest.mark.parametrize(
    "reply",
    [
        "F",
        '{"category": "(A)", "reason": "x"}',
        '"(A)"',
        "The answer is (C).",
        "I cannot decide (see above).",
        '{"category": "F"}',
        "",
    ],
)
def test_factuality_unparseable_replies_are_errors(client, judge, reply) -> None:
    judge.script(f"reply:{reply}", f"reply:{reply}")
    with pytest.raises(JudgeError) as info:
        run("factuality", client)
    assert info.value.raw == reply
    assert judge.chat_requests() == 2  # one repair attempt


def test_parse_factuality_directly() -> None:
    assert parse_factuality("(D) they disagree").category == "D"
    with pytest.raises(ValueError):
        parse_factuality("(AB) nope")


# --------------------------------------------------------------------------- fallbacks


def test_json_schema_rejected_falls_back_to_json_object(own_judge) -> None:
    own_judge.control(reject_formats=["json_schema"])
    client = make_client(own_judge.base_url, "k")
    result = run("faithfulness", client)
    assert [s.response_format for s in result.steps] == ["json_object"] * 3
    assert result.score == 1
    # the schema travels in the prompt when the endpoint cannot enforce it
    assert '"claims"' in result.steps[0].messages[0]["content"].split("JSON Schema:")[1]
    stats = own_judge.stats()
    # one rejected json_schema request, then json_object for every step (remembered)
    assert stats["by_format"] == {"json_schema": 1, "json_object": 3}
    assert stats["by_status"] == {"400": 1, "200": 3}
    assert remembered_format(own_judge.base_url, "offline-judge") == "json_object"


def test_both_structured_formats_rejected_falls_back_to_text(own_judge) -> None:
    own_judge.control(reject_formats=["json_schema", "json_object"])
    client = make_client(own_judge.base_url, "k")
    result = run("factuality", client)
    assert result.steps[0].response_format == "text"
    # in text mode the offline judge answers factuality with a letter: "(C) ..."
    assert result.steps[0].raw is not None and result.steps[0].raw.startswith("(C) ")
    assert result.analysis["category"] == "C"
    faith = run("faithfulness", client)
    assert [s.response_format for s in faith.steps] == ["text"] * 3
    assert faith.score == 1


def test_strict_schema_closes_every_object() -> None:
    schema = get_step("faithfulness", "verdicts").json_schema()
    verdict = schema["$defs"]["ClaimVerdict"]
    assert verdict["additionalProperties"] is False
    assert verdict["required"] == ["claim", "verdict", "reason"]
    assert verdict["properties"]["verdict"]["enum"] == ["yes", "no", "unsure"]
    assert schema["additionalProperties"] is False
    assert strict_schema(ClaimsReply)["required"] == ["claims"]


def test_parse_model_messages_name_the_path() -> None:
    with pytest.raises(ValueError, match=r"verdicts\[1\]\.verdict"):
        parse_model(
            '{"verdicts": [{"verdict": "yes", "reason": ""}, {"verdict": "nah", "reason": ""}]}',
            get_step("toxicity", "verdicts").reply_model,
        )


# --------------------------------------------------------------------------- runner details


def test_step_runner_sleeps_between_retries_with_an_injected_sleep(
    client, judge
) -> None:
    waits: list[float] = []
    runner = StepRunner(
        client,
        model="offline-judge",
        retry=RetryPolicy(max_retries=3, base_delay=0.01, sleep=waits.append),
    )
    judge.script("429:0.2", "500", "ok")
    step = get_step("factuality", "category")
    from scoring.prompts import first_step_messages

    reply, record = runner.run(step, first_step_messages("factuality", CASE, {}))
    assert record.attempts == 3
    assert waits[0] == 0.2 and 0.01 <= waits[1] <= 0.02
    assert reply.model_dump()["category"] == "C"


def test_make_client_turns_off_openai_retries() -> None:
    client = make_client("http://127.0.0.1:1/v1", None, 5)
    assert isinstance(client, openai.OpenAI)
    assert client.max_retries == 0
    assert str(client.base_url).startswith("http://127.0.0.1:1/v1")


# --------------------------------------------------------------------------- judge outages


class _FakeTime:
    """A clock that a retry's sleep moves on (no real waiting)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def _outage_runner(client: Any, fake: _FakeTime, outage: float) -> StepRunner:
    return StepRunner(
        client,
        model="offline-judge",
        retry=RetryPolicy(
            max_retries=2,
            base_delay=0.5,
            outage_seconds=outage,
            max_outage_delay=4.0,
            sleep=fake.sleep,
            clock=fake.clock,
        ),
    )


def test_an_unreachable_judge_is_retried_until_the_outage_limit_not_max_retries(
    client, judge
) -> None:
    # Eight gateway errors, far more than max_retries=2 allows for other errors.
    judge.script("503", "502", "503", "503", "503", "502", "503", "503", "ok")
    fake = _FakeTime()
    step = get_step("factuality", "category")
    from scoring.prompts import first_step_messages

    reply, record = _outage_runner(client, fake, outage=60).run(
        step, first_step_messages("factuality", CASE, {})
    )
    assert reply.model_dump()["category"] == "C"
    assert record.attempts == 9
    # The waits grow and are capped.
    assert max(fake.waits) <= 4.0 and fake.waits[-1] > fake.waits[0]


def test_a_judge_unreachable_longer_than_the_limit_fails_the_step_saying_so() -> None:
    from scoring.client import StepFailed
    from scoring.prompts import first_step_messages

    with socket.socket() as s:  # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = make_client(f"http://127.0.0.1:{port}/v1", None, 5)
    fake = _FakeTime()
    with pytest.raises(
        StepFailed, match=r"judge unreachable for 1\d s, longer than the 10 s allowed"
    ):
        _outage_runner(client, fake, outage=10).run(
            get_step("factuality", "category"),
            first_step_messages("factuality", CASE, {}),
        )
    assert len(fake.waits) > 3  # more attempts than max_retries=2 would allow
    assert 10 <= fake.now < 15


def test_without_an_outage_limit_connection_errors_count_as_retries() -> None:
    from scoring.client import StepFailed
    from scoring.prompts import first_step_messages

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = make_client(f"http://127.0.0.1:{port}/v1", None, 5)
    fake = _FakeTime()
    with pytest.raises(StepFailed, match="gave up after 3 attempts"):
        _outage_runner(client, fake, outage=0).run(
            get_step("factuality", "category"),
            first_step_messages("factuality", CASE, {}),
        )


def test_judge_clients_verify_tls_through_one_shared_context() -> None:
    """Every judge client of a process verifies certificates and host names with the
    same context: building one per client cost a 512-in-flight dispatcher seconds of
    its event loop before its first call."""
    import ssl

    from scoring import make_async_client, make_client
    from scoring.egress import shared_ssl_context

    def allow(host: str, port: int, addresses: Any) -> None:
        return None

    clients = [
        make_async_client("https://judge.example/v1", "k", address_guard=allow),
        make_async_client("https://judge.example/v1", "k", address_guard=allow),
        make_client("https://judge.example/v1", "k", address_guard=allow),
    ]
    contexts = {id(c._client._transport._pool._ssl_context) for c in clients}
    assert contexts == {id(shared_ssl_context())}
    unguarded = make_async_client("https://judge.example/v1", "k")
    context = unguarded._client._transport._pool._ssl_context
    assert context is shared_ssl_context(trust_env=True)
    for ctx in (shared_ssl_context(), context):
        assert ctx.verify_mode == ssl.CERT_REQUIRED
        assert ctx.check_hostname
