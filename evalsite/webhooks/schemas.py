from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema
from pydantic import ConfigDict, Field, SecretStr

from evalsite.webhooks.events import Event


class WebhookIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    url: str
    # SecretStr: a repr (a log line, a traceback's locals) shows "**********".
    secret: SecretStr = Field(
        description="whsec_ + base64 of 24–64 random bytes; stored encrypted, write-only."
    )
    events: list[Event]
    active: bool = True
    baseline_run_id: int | None = None
    margin: float = 0.0


class WebhookPatch(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    url: str | None = None
    secret: SecretStr | None = None
    events: list[Event] | None = None
    active: bool | None = None
    baseline_run_id: int | None = None
    margin: float | None = None


class WebhookOut(Schema):
    id: int
    project_id: int
    name: str
    url: str
    events: list[str]
    active: bool
    has_secret: bool
    baseline_run_id: int | None
    margin: float
    created_at: datetime
    updated_at: datetime


class DeliveryOut(Schema):
    id: int
    webhook_id: int
    event: str
    message_id: str
    payload: dict[str, Any]
    status: str
    attempts: int
    response_code: int | None
    error: str
    created_at: datetime
    last_attempt_at: datetime | None
    delivered_at: datetime | None
