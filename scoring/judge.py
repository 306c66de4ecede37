"""``judge_case``: run a kind's judge steps for one case and score the analysis.

The case is validated before any call; each step goes through ``StepRunner`` (structured
output with fallbacks, retries, one repair, cache); the analysis is assembled in the
SCORERS.md shape, validated and scored with the pure formulas; a final reason step
explains the computed score.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import httpx2
import openai

from scoring.analysis import validate_analysis
from scoring.cache import AsyncJudgeCache, JudgeCache
from scoring.client import (
    AsyncLimiter,
    AsyncStepRunner,
    Limiter,
    Plan,
    RetryPolicy,
    StepFailed,
    StepRecord,
    StepRunner,
    StepSettings,
    anote_reply,
    note_reply,
    step_plan,
)
from scoring.egress import (
    AddressGuard,
    guarded_async_http_client,
    guarded_http_client,
    shared_ssl_context,
    url_problem,
)
from scoring.errors import AnalysisError, CaseError, JudgeError, JudgeURLError
from scoring.formulas import compute_score, passes
from scoring.judge_options import apply_judge_prompt, check_repeat, effective_judge
from scoring.kinds.agent import (
    AGENT_STEPS,
    agent_first_messages,
    validate_agent_case,
)
from scoring.kinds.rag import RAG_KINDS, check_case
from scoring.options import validate_options
from scoring.prompts import (
    STEPS,
    Messages,
    Reply,
    first_step_messages,
    get_step,
    reason_messages,
    sentences_for_estimate,
    verdict_messages,
)
from scoring.registry import ANALYSERS, KINDS

__all__ = [
    "JudgeResult",
    "ajudge_case",
    "estimate_tokens",
    "judge_case",
    "make_async_client",
    "make_client",
    "preview_prompts",
    "validate_case",
]

# Kinds whose every step is a judge call; context_relevance without chunks is scored
# locally (1 x scale, SCORERS.md), so it does not require context.
_CONTEXT_KINDS = ("faithfulness", "hallucination", "context_precision")
_FIELDS = ("input", "output", "reference", "baseline_output", "system_prompt")


@dataclass
class JudgeResult:
    """One case scored by one kind: the analysis (SCORERS.md shape), the judge's score
    and pass, the generated reason and the record of every judge step."""

    kind: str
    analysis: dict[str, Any]
    score: float
    passed: bool
    reason: str
    steps: list[StepRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return data


def make_client(
    base_url: str,
    api_key: str | None = None,
    timeout: float = 60.0,
    *,
    address_guard: AddressGuard | None = None,
) -> openai.OpenAI:
    """An ``openai.OpenAI`` client for a judge endpoint. Its own retries are off
    (``max_retries=0``): ``judge_case`` retries itself and honours Retry-After.

    Redirects are never followed (the SDK's default client follows them, and a redirect
    would carry the key to another address). With ``address_guard``, every connection's
    resolved addresses are checked by it first (see ``scoring.egress``). A URL no
    client can use raises ``JudgeURLError``.
    """
    _check_base_url(base_url)
    http_client = (
        guarded_http_client(address_guard, timeout)
        if address_guard is not None
        else httpx2.Client(
            timeout=timeout,
            follow_redirects=False,
            limits=_LIMITS,
            verify=shared_ssl_context(trust_env=True),
        )
    )
    # The judge's own time, when its replies say it (scoring.client.reported_seconds).
    http_client.event_hooks = {"request": [], "response": [note_reply]}
    return openai.OpenAI(
        http_client=http_client, **_client_args(base_url, api_key, timeout)
    )


def make_async_client(
    base_url: str,
    api_key: str | None = None,
    timeout: float = 60.0,
    *,
    address_guard: AddressGuard | None = None,
) -> openai.AsyncOpenAI:
    """``make_client`` for ``ajudge_case``: an ``openai.AsyncOpenAI`` client, same
    redirect and address rules."""
    _check_base_url(base_url)
    http_client = (
        guarded_async_http_client(address_guard, timeout)
        if address_guard is not None
        else httpx2.AsyncClient(
            timeout=timeout,
            follow_redirects=False,
            limits=_LIMITS,
            verify=shared_ssl_context(trust_env=True),
        )
    )
    http_client.event_hooks = {"request": [], "response": [anote_reply]}
    return openai.AsyncOpenAI(
        http_client=http_client, **_client_args(base_url, api_key, timeout)
    )


def _check_base_url(base_url: str) -> None:
    problem = url_problem(base_url)
    if problem is not None:
        raise JudgeURLError(f"The judge's base URL cannot be used: {problem}.")


def _client_args(base_url: str, api_key: str | None, timeout: float) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "api_key": api_key or "not-needed",
        "timeout": timeout,
        "max_retries": 0,
    }


_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=1000)


# --------------------------------------------------------------------------- case checks


def validate_case(
    kind: str, case: Mapping[str, Any], *, max_field_chars: int = 100_000
) -> None:
    """Raise CaseError (naming the field) when the case cannot be judged for ``kind``:
    a field of the wrong type, not valid Unicode text, longer than ``max_field_chars``,
    or a required field missing or empty."""
    if not isinstance(case, Mapping):
        raise CaseError("the case must be a mapping of fields", field="")
    for name in _FIELDS:
        value = case.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise CaseError(
                f"{name} must be text, not {type(value).__name__}", field=name
            )
        _check_text(name, value, max_field_chars)
    context = case.get("context")
    if context is not None:
        if not isinstance(context, list | tuple):
            raise CaseError(
                f"context must be a list of text chunks, not {type(context).__name__}",
                field="context",
            )
        total = 0
        for i, chunk in enumerate(context):
            if not isinstance(chunk, str):
                raise CaseError(
                    f"context[{i}] must be text, not {type(chunk).__name__}",
                    field=f"context[{i}]",
                )
            _check_text(f"context[{i}]", chunk, max_field_chars)
            total += len(chunk)
        if total > max_field_chars:
            raise CaseError(
                f"context has {total} characters in all, more than the limit of {max_field_chars}",
                field="context",
            )
    metadata = case.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise CaseError("metadata must be a mapping", field="metadata")

    spec = KINDS[kind]
    required = set(spec.required_fields)
    if kind in _CONTEXT_KINDS:
        required.add("context")
    for name in _FIELDS:
        if name in required and not (case.get(name) or "").strip():
            what = "missing" if case.get(name) is None else "empty"
            raise CaseError(
                f"{kind} needs a non-empty {name}, but it is {what}", field=name
            )
    if "context" in required:
        chunks = [c for c in (context or []) if c.strip()]
        if not chunks:
            raise CaseError(
                f"{kind} needs at least one non-empty context chunk, but the context is "
                + ("missing" if context is None else "empty"),
                field="context",
            )
    if kind in AGENT_STEPS:
        validate_agent_case(kind, case)


def _check_text(name: str, value: str, limit: int) -> None:
    if len(value) > limit:
        raise CaseError(
            f"{name} has {len(value)} characters, more than the limit of {limit}",
            field=name,
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CaseError(
            f"{name} is not valid Unicode text (undecodable bytes at position {exc.start})",
            field=name,
        ) from exc


# --------------------------------------------------------------------------- pipelines


class _Run:
    """The steps of one case, collecting their records (a plan, see scoring.client)."""

    def __init__(
        self,
        kind: str,
        settings: StepSettings,
        rng: random.Random,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self.settings = settings
        self.rng = rng
        self.options: Mapping[str, Any] = options or {}
        self.steps: list[StepRecord] = []

    def step(self, name: str, messages: Messages) -> Plan[Reply]:
        step = (
            AGENT_STEPS[self.kind][0]
            if self.kind in AGENT_STEPS
            else get_step(self.kind, name)
        )
        if name != "reason":
            # The reason step explains a computed score: the rubric and examples are
            # for the steps that judge.
            messages = apply_judge_prompt(messages, self.options)
        try:
            reply, record = yield from step_plan(
                step, messages, self.settings, self.rng
            )
        except StepFailed as exc:
            self.steps.append(exc.record)
            raise JudgeError(
                f"{self.kind}: {exc}", raw=exc.raw, steps=self.steps
            ) from exc
        self.steps.append(record)
        return reply


def _analyse(
    run: _Run, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Plan[dict[str, Any]]:
    """The kind's steps before the reason (in its module under scoring.kinds)."""
    return (yield from ANALYSERS[run.kind](run, case, options))


def _local_reason(kind: str, analysis: Mapping[str, Any], score: float) -> str | None:
    """A reason without a judge call where there is nothing to explain."""
    if kind == "context_relevance" and analysis.get("context_count") == 0:
        return f"The item has no context chunks, so there is nothing irrelevant: the score is {score:g}."
    if "verdicts" in analysis and not analysis["verdicts"]:
        what = {
            "faithfulness": "claims",
            "hallucination": "claims",
            "answer_relevancy": "statements",
            "bias": "opinions",
            "toxicity": "statements",
            "context_precision": "chunk verdicts",
            "context_recall": "claims in the reference",
        }.get(kind, "items")
        return f"The judge found no {what} to assess, so the score is {score:g}."
    return None


class _Prepared(NamedTuple):
    opts: dict[str, Any]
    result: JudgeResult | None  # set for a text kind: scored locally, no judge


def _prepare(
    kind: str,
    case: Mapping[str, Any],
    options: Mapping[str, Any] | None,
    max_field_chars: int,
    has_client: bool,
) -> _Prepared:
    opts = validate_options(kind, dict(options) if options else None)
    validate_case(kind, case, max_field_chars=max_field_chars)
    if kind in RAG_KINDS:
        check_case(kind, case, opts)
    if not KINDS[kind].needs_judge:
        from scoring.textkinds import analyze_text

        analysis = analyze_text(kind, dict(case), opts)  # type: ignore[arg-type]
        score = compute_score(kind, analysis, opts)
        passed = passes(kind, score, opts)
        reason = _text_reason(kind, analysis, score)
        return _Prepared(opts, JudgeResult(kind, analysis, score, passed, reason, []))
    if not has_client:
        raise JudgeError(f"{kind} needs a judge: pass an openai.OpenAI client")
    return _Prepared(opts, None)


def _judge_plan(
    run: _Run, case: Mapping[str, Any], opts: dict[str, Any]
) -> Plan[JudgeResult]:
    kind = run.kind
    raw_analysis = yield from _analyse(run, case, opts)
    try:
        analysis = validate_analysis(kind, raw_analysis)
    except AnalysisError as exc:
        raw = run.steps[-1].raw if run.steps else None
        raise JudgeError(
            f"{kind}: the judge's analysis is invalid: {exc}", raw=raw, steps=run.steps
        ) from exc
    score = compute_score(kind, analysis, opts)
    passed = passes(kind, score, opts)
    if "reason" in KINDS[kind].steps:
        reason = _local_reason(kind, analysis, score)
        if reason is None:
            reply = yield from run.step(
                "reason",
                reason_messages(
                    kind, case, analysis, score, float(opts["scale"]), passed
                ),
            )
            reason = str(reply.model_dump()["reason"])
    else:
        reason = str(analysis.get("reason", ""))
    return JudgeResult(kind, analysis, score, passed, reason, run.steps)


def judge_case(
    kind: str,
    case: Mapping[str, Any],
    options: Mapping[str, Any] | None,
    client: openai.OpenAI | None,
    *,
    model: str,
    temperature: float = 0.0,
    cache: JudgeCache | None = None,
    limiter: Limiter | None = None,
    max_retries: int = 4,
    max_field_chars: int = 100_000,
    base_url: str | None = None,
    retry_base_delay: float = 0.5,
    retry_max_delay: float = 30.0,
    sample: int | None = None,
) -> JudgeResult:
    """Judge one case for ``kind`` and score it.

    Raises UnknownKindError / OptionsError for bad kind or options, CaseError (before any
    call) for a case the kind cannot judge, and JudgeError (with ``raw`` and ``steps``)
    when a judge step cannot be completed after retries and one repair attempt.

    ``sample`` numbers one of several answers to the same case (the ``repeat`` option):
    it is sent as the requests' ``seed``, so each answer is its own call and cache entry.
    The options' ``judge_model`` and ``judge_temperature`` replace ``model`` and
    ``temperature`` when set.
    """
    prepared = _prepare(kind, case, options, max_field_chars, client is not None)
    if prepared.result is not None:
        return prepared.result
    assert client is not None
    check_repeat(kind, prepared.opts, temperature)
    model, temperature = effective_judge(prepared.opts, model, temperature)
    runner = StepRunner(
        client,
        model=model,
        base_url=base_url,
        temperature=temperature,
        cache=cache,
        limiter=limiter,
        retry=RetryPolicy(
            max_retries=max_retries,
            base_delay=retry_base_delay,
            max_delay=retry_max_delay,
        ),
    )
    if sample is not None:
        runner.settings = dataclasses.replace(runner.settings, seed=sample)
    run = _Run(kind, runner.settings, runner.rng, prepared.opts)
    return runner.drive(_judge_plan(run, case, prepared.opts))


async def ajudge_case(
    kind: str,
    case: Mapping[str, Any],
    options: Mapping[str, Any] | None,
    client: openai.AsyncOpenAI | None,
    *,
    model: str,
    temperature: float = 0.0,
    cache: AsyncJudgeCache | None = None,
    limiter: AsyncLimiter | None = None,
    max_retries: int = 4,
    max_field_chars: int = 100_000,
    base_url: str | None = None,
    retry: RetryPolicy | None = None,
    on_request: Callable[[float], None] | None = None,
    sample: int | None = None,
) -> JudgeResult:
    """``judge_case`` on asyncio: the same steps and errors, with an AsyncOpenAI
    client, an async cache and an async limiter (``retry.sleep`` is not used: the
    waits are ``asyncio.sleep``). ``on_request`` is told each request's judge seconds
    (``StepRecord.latency_ms``'s parts) as it ends."""
    prepared = _prepare(kind, case, options, max_field_chars, client is not None)
    if prepared.result is not None:
        return prepared.result
    assert client is not None
    check_repeat(kind, prepared.opts, temperature)
    model, temperature = effective_judge(prepared.opts, model, temperature)
    runner = AsyncStepRunner(
        client,
        model=model,
        base_url=base_url,
        temperature=temperature,
        cache=cache,
        limiter=limiter,
        retry=retry or RetryPolicy(max_retries=max_retries),
        on_request=on_request,
    )
    if sample is not None:
        runner.settings = dataclasses.replace(runner.settings, seed=sample)
    run = _Run(kind, runner.settings, runner.rng, prepared.opts)
    return await runner.drive(_judge_plan(run, case, prepared.opts))


def _text_reason(kind: str, analysis: Mapping[str, Any], score: float) -> str:
    details = ", ".join(
        f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
        for k, v in analysis.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    )
    dimensions = analysis.get("dimensions")
    if isinstance(dimensions, Mapping) and dimensions:  # trajectory's weighted parts
        details += "; " + ", ".join(
            f"{name.replace('_', ' ')} {value:g}" for name, value in dimensions.items()
        )
        blacklist = analysis.get("blacklist") or {}
        forbidden = list(blacklist.get("violated_tools") or []) + [
            " → ".join(seq) for seq in blacklist.get("violated_sequences") or []
        ]
        if forbidden:
            details += "; forbidden: " + ", ".join(forbidden)
    return f"{KINDS[kind].label}: score {score:g} ({details})."


# --------------------------------------------------------------------------- previews


def preview_prompts(
    kind: str, case: Mapping[str, Any], options: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One entry per judge step, ``{"step", "messages"}``: the first step's messages fully
    rendered; later steps (which depend on earlier replies) with ``messages`` None.
    Empty for non-LLM kinds. No call is made (and the case is not validated)."""
    spec = KINDS[kind]
    if not spec.needs_judge:
        return []
    opts = validate_options(kind, dict(options) if options else None)
    if kind in AGENT_STEPS:
        return [
            {
                "step": AGENT_STEPS[kind][0].name,
                "messages": apply_judge_prompt(
                    agent_first_messages(kind, case, opts), opts
                ),
            }
        ]
    names = [s.name for s in STEPS[kind]]
    out: list[dict[str, Any]] = [
        {
            "step": names[0],
            "messages": apply_judge_prompt(first_step_messages(kind, case, opts), opts),
        }
    ]
    out.extend({"step": name, "messages": None} for name in names[1:])
    return out


def _chars(messages: Messages) -> int:
    return sum(len(m["content"]) for m in messages)


def estimate_tokens(
    kind: str, case: Mapping[str, Any], options: Mapping[str, Any] | None = None
) -> dict[str, int]:
    """A rough cost of judging one case: ``{calls, prompt_tokens, completion_tokens}``
    (tokens ~ characters / 4). Later steps are rendered with a stand-in for the earlier
    replies (one item per sentence of the output). A judge asked ``repeat`` times costs
    that many times as much."""
    spec = KINDS[kind]
    if not spec.needs_judge:
        return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    opts = validate_options(kind, dict(options) if options else None)
    once = _estimate_once(kind, case, opts)
    repeat = int(opts.get("repeat") or 1)
    return {key: value * repeat for key, value in once.items()}


def _estimate_once(
    kind: str, case: Mapping[str, Any], opts: dict[str, Any]
) -> dict[str, int]:
    spec = KINDS[kind]
    context = list(case.get("context") or [])
    if kind == "context_relevance" and not context:
        return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    output = str(case.get("output") or "")
    if kind in AGENT_STEPS:
        entries = len(case.get("tool_calls") or []) + len(opts.get("criteria") or [])
        prompt_chars = _chars(
            apply_judge_prompt(agent_first_messages(kind, case, opts), opts)
        )
        return {
            "calls": 1,
            "prompt_tokens": math.ceil(prompt_chars / 4),
            "completion_tokens": math.ceil((entries * 90 + 200) / 4),
        }
    items = sentences_for_estimate(output)
    verdict_chars = 90
    calls = 0
    prompt = 0
    completion = 0
    first = apply_judge_prompt(first_step_messages(kind, case, opts), opts)
    calls += 1
    prompt += _chars(first)
    if kind in ("faithfulness", "hallucination", "answer_relevancy", "bias"):
        completion += len(output) + 20
        if items:
            calls += 1
            prompt += _chars(
                apply_judge_prompt(verdict_messages(kind, case, items), opts)
            )
            completion += sum(len(i) + verdict_chars for i in items)
    elif kind in ("context_relevance", "context_precision"):
        completion += len(context) * verdict_chars + 20
    elif kind == "toxicity":
        completion += len(items) * verdict_chars + 20
    elif kind in RAG_KINDS and len(STEPS[kind]) == 3:
        # scoring.kinds.rag's second step (matches, verdicts, coverage) on about one
        # unit, claim or question per sentence, shown about as much text again
        completion += len(output) + len(items) * verdict_chars + 20
        calls += 1
        prompt += _chars(first) + sum(len(i) + 40 for i in items)
        completion += len(items) * verdict_chars + 20
    else:
        completion += 200
    if "reason" in spec.steps:
        fake = {
            "verdicts": [
                {"claim": i, "verdict": "yes", "reason": "x" * 60} for i in items
            ]
        }
        calls += 1
        prompt += _chars(
            reason_messages(kind, case, fake, 1.0, float(opts["scale"]), True)
        )
        completion += 400
    return {
        "calls": calls,
        "prompt_tokens": math.ceil(prompt / 4),
        "completion_tokens": math.ceil(completion / 4),
    }
