"""API schemas of judge connections."""

from __future__ import annotations

from datetime import datetime

from ninja import Schema
from pydantic import ConfigDict, Field, SecretStr

from evalsite.evals.models import JudgeConnection


class JudgeIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    base_url: str
    model: str
    # SecretStr: a repr (a log line, a traceback's locals) shows "**********".
    api_key: SecretStr | None = Field(
        default=None, description="Stored encrypted; write-only."
    )
    api_key_env: str | None = Field(
        default=None,
        description=(
            "Or: the name of an environment variable holding the key, one the server "
            "allows for this base URL's host (JUDGE_KEY_ENV_ALLOWED)."
        ),
    )
    temperature: float = 0.0
    timeout_seconds: float = 60.0
    max_concurrency: int = 8
    rpm: int | None = Field(
        default=None, description="Requests per minute (0 = no limit)."
    )
    requests_per_minute: int | None = Field(default=None, description="Same as rpm.")
    price_per_1k_input: float | None = None
    price_per_1k_output: float | None = None


class JudgePatch(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    api_key_env: str | None = None
    clear_api_key: bool = False
    temperature: float | None = None
    timeout_seconds: float | None = None
    max_concurrency: int | None = None
    rpm: int | None = None
    requests_per_minute: int | None = None
    price_per_1k_input: float | None = None
    price_per_1k_output: float | None = None


class JudgeOut(Schema):
    """Read from the connection field by field: the key (and where it comes from) never
    leaves the server."""

    id: int
    project_id: int
    name: str
    base_url: str
    model: str
    temperature: float
    timeout_seconds: float
    max_concurrency: int
    rpm: int
    requests_per_minute: int
    price_per_1k_input: float | None
    price_per_1k_output: float | None
    is_offline: bool
    label: str
    has_api_key: bool
    archived: bool
    created_at: datetime

    @staticmethod
    def resolve_rpm(judge: JudgeConnection) -> int:
        return judge.requests_per_minute

    @staticmethod
    def resolve_label(judge: JudgeConnection) -> str:
        return "offline heuristic judge" if judge.is_offline else "LLM judge"


class JudgeTestOut(Schema):
    ok: bool
    latency_ms: float
    message: str


class RateBoundOut(Schema):
    judge_id: int
    judge_name: str
    max_concurrency: int
    requests_per_minute: int
    latency_ms: float | None = Field(
        description="The judge's own mean latency used (ms), without waits."
    )
    latency_source: str
    concurrency_rate: float | None = Field(
        description="max_concurrency / latency, calls/s (null without a latency)."
    )
    rpm_rate: float | None = Field(description="requests_per_minute / 60, calls/s.")
    rate: float | None = Field(description="The bound: the lower of the two.")
    binding: str = Field(
        description='"concurrency", "requests_per_minute", or "" (unknown/unlimited).'
    )


class JudgeVersionOut(Schema):
    """A judge version (evals.judges.versions): v1, v2, ... per project and kind."""

    id: int
    kind: str
    number: int
    label: str = Field(description='e.g. "faithfulness v3 · gpt-4o-mini · 2 examples"')
    digest: str = Field(
        description="sha256 of the judge's spec (scoring.judge_version)."
    )
