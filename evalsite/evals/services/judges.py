"""Judge connections: create, edit, test; API keys are write-only."""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urlparse

import openai
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from evalsite.accounts.models import Project
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.crypto import secret_decrypt, secret_encrypt
from evalsite.evals.models import JudgeConnection
from scoring import make_client, preview_prompts

logger = logging.getLogger(__name__)

OFFLINE_JUDGE_NAME = "Offline heuristic judge"
OFFLINE_JUDGE_MODEL = "offline-judge"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# The fields an owner may set; the key has its own write-only path.
EDITABLE_FIELDS = (
    "name",
    "base_url",
    "model",
    "temperature",
    "timeout_seconds",
    "max_concurrency",
    "requests_per_minute",
    "price_per_1k_input",
    "price_per_1k_output",
)


def judge_create_offline(project: Project) -> JudgeConnection:
    """The built-in offline heuristic judge of a project (a project-created hook)."""
    judge, _ = JudgeConnection.objects.get_or_create(
        project=project,
        is_offline=True,
        defaults={
            "name": OFFLINE_JUDGE_NAME,
            "base_url": settings.OFFLINE_JUDGE_URL,
            "model": OFFLINE_JUDGE_MODEL,
            "max_concurrency": 16,
            "requests_per_minute": 0,
            "timeout_seconds": 30.0,
        },
    )
    return judge


def _check(fields: dict[str, Any]) -> dict[str, Any]:
    """Normalise and validate judge settings; ApplicationError names each bad field."""
    errors: dict[str, str] = {}
    out = dict(fields)
    if "name" in out:
        out["name"] = str(out["name"] or "").strip()
        if not out["name"]:
            errors["name"] = "Required."
        elif len(out["name"]) > 200:
            errors["name"] = "At most 200 characters."
    if "base_url" in out:
        out["base_url"] = str(out["base_url"] or "").strip().rstrip("/")
        parsed = urlparse(out["base_url"])
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            errors["base_url"] = "Enter an http(s) URL, e.g. https://api.openai.com/v1."
    if "model" in out:
        out["model"] = str(out["model"] or "").strip()
        if not out["model"]:
            errors["model"] = "Required."
    ranges = {
        "temperature": (0.0, 2.0),
        "timeout_seconds": (0.1, 600.0),
        "max_concurrency": (1, 1000),
        "requests_per_minute": (0, 1_000_000),
    }
    for name, (low, high) in ranges.items():
        if name in out and out[name] is not None:
            try:
                value = float(out[name])
            except (TypeError, ValueError):
                errors[name] = "Must be a number."
                continue
            if not low <= value <= high:
                errors[name] = f"Must be between {low:g} and {high:g}."
            elif name in ("max_concurrency", "requests_per_minute"):
                if value != int(value):
                    errors[name] = "Must be a whole number."
                out[name] = int(value)
            else:
                out[name] = value
    for name in ("price_per_1k_input", "price_per_1k_output"):
        if name in out and out[name] not in (None, ""):
            try:
                price = Decimal(str(out[name]))
            except ArithmeticError:
                errors[name] = "Must be a number."
                continue
            if not price.is_finite() or price < 0 or price >= 10_000:
                errors[name] = "Must be between 0 and 10000."
            out[name] = price
        elif name in out:
            out[name] = None
    if errors:
        first = next(iter(errors.items()))
        raise ApplicationError(f"{first[0]}: {first[1]}", field_errors=errors)
    return out


def _key_fields(
    api_key: str | None, api_key_env: str | None, clear: bool
) -> dict[str, str]:
    """The stored key fields for a key given as plain text or as an env var name."""
    if clear:
        return {"api_key_encrypted": "", "api_key_env": ""}
    if api_key:
        return {"api_key_encrypted": secret_encrypt(api_key), "api_key_env": ""}
    if api_key_env:
        if not _ENV_NAME.match(api_key_env):
            raise ApplicationError(
                "api_key_env must be an environment variable name.",
                field_errors={
                    "api_key_env": "Letters, digits and underscores, e.g. OPENAI_API_KEY."
                },
            )
        return {"api_key_encrypted": "", "api_key_env": api_key_env}
    return {}


def _save(judge: JudgeConnection) -> None:
    try:
        with transaction.atomic():
            judge.save()
    except IntegrityError as exc:
        raise ApplicationError(
            "A judge connection with this name already exists in the project.",
            field_errors={"name": "Already used in this project."},
        ) from exc


def judge_create(
    *,
    project: Project,
    user: AbstractBaseUser | None,
    name: str,
    base_url: str,
    model: str,
    api_key: str | None = None,
    api_key_env: str | None = None,
    temperature: float = 0.0,
    timeout_seconds: float = 60.0,
    max_concurrency: int = 8,
    requests_per_minute: int = 600,
    price_per_1k_input: Decimal | float | None = None,
    price_per_1k_output: Decimal | float | None = None,
) -> JudgeConnection:
    fields = _check(
        {
            "name": name,
            "base_url": base_url,
            "model": model,
            "temperature": temperature,
            "timeout_seconds": timeout_seconds,
            "max_concurrency": max_concurrency,
            "requests_per_minute": requests_per_minute,
            "price_per_1k_input": price_per_1k_input,
            "price_per_1k_output": price_per_1k_output,
        }
    )
    judge = JudgeConnection(
        project=project, **fields, **_key_fields(api_key, api_key_env, False)
    )
    _save(judge)
    logger.info("judge %s created in project %s", judge.pk, project.pk)
    return judge


def judge_update(
    *,
    judge: JudgeConnection,
    user: AbstractBaseUser | None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    clear_api_key: bool = False,
    **changes: Any,
) -> JudgeConnection:
    """Change settings; a key is replaced only when a new one (or clear) is given."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise ApplicationError(f"Unknown judge fields: {', '.join(sorted(unknown))}.")
    fields = _check(changes)
    for name, value in fields.items():
        setattr(judge, name, value)
    for name, value in _key_fields(api_key, api_key_env, clear_api_key).items():
        setattr(judge, name, value)
    _save(judge)
    return judge


def judge_api_key(*, judge: JudgeConnection) -> str | None:
    """The plain key for a call (never for display): env var or decrypted."""
    if judge.api_key_encrypted:
        return secret_decrypt(judge.api_key_encrypted)
    if judge.api_key_env:
        value = os.environ.get(judge.api_key_env)
        if not value:
            raise ApplicationError(
                f"The environment variable {judge.api_key_env} is not set on this server."
            )
        return value
    return None


@dataclass(frozen=True)
class JudgeTestResult:
    ok: bool
    latency_ms: float
    message: str


def judge_test(*, judge: JudgeConnection) -> JudgeTestResult:
    """One real, tiny judge call (a factuality step on "2 + 2"): latency or the error.

    A judge prompt rather than "say OK" so the test also proves the endpoint handles
    the system prompts our scorers send (the offline judge only answers those).
    """
    try:
        key = judge_api_key(judge=judge)
    except ApplicationError as exc:
        return JudgeTestResult(False, 0.0, exc.message)
    client = make_client(judge.base_url, key, min(judge.timeout_seconds, 30.0))
    messages = preview_prompts(
        "factuality",
        {"input": "What is 2 + 2?", "output": "4", "reference": "2 + 2 = 4"},
        None,
    )[0]["messages"]
    started = time.perf_counter()
    try:
        reply = client.chat.completions.create(
            model=judge.model,
            messages=messages,
            temperature=judge.temperature,
            max_tokens=60,
        )
    except openai.APIStatusError as exc:
        return JudgeTestResult(
            False,
            (time.perf_counter() - started) * 1000,
            f"HTTP {exc.status_code}: {_error_text(exc)}",
        )
    except openai.APIError as exc:
        return JudgeTestResult(False, (time.perf_counter() - started) * 1000, str(exc))
    latency = (time.perf_counter() - started) * 1000
    content = (reply.choices[0].message.content or "").strip() if reply.choices else ""
    return JudgeTestResult(
        True,
        latency,
        f"{reply.model or judge.model} answered in {latency:.0f} ms: {content[:120]!r}",
    )


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
    return str(exc.message)[:500]
