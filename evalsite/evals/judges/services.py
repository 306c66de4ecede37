"""Judge connections: create, edit, test; API keys are write-only."""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import openai
from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.views.decorators.debug import sensitive_variables

from evalsite.accounts.models import Project
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.crypto import secret_decrypt, secret_encrypt
from evalsite.evals.judges.egress import (
    judge_address_guard,
    judge_key_env_problem,
    judge_url_problem,
)
from evalsite.evals.judges.messages import judge_failure_message, judge_host_port
from evalsite.evals.models import JudgeConnection
from evalsite.lib.text import unstorable_char
from scoring import make_client, preview_prompts
from scoring.egress import AddressGuard
from scoring.errors import JudgeURLError

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


def _audit_value(value: Any) -> Any:
    """A setting as the audit log's JSON holds it (prices are Decimals)."""
    return str(value) if isinstance(value, Decimal) else value


def _key_change(key_fields: dict[str, str]) -> str:
    """What a change did to the key, in words: never the key, nor its env var."""
    if not key_fields:
        return ""
    if key_fields["api_key_encrypted"] or key_fields["api_key_env"]:
        return "changed"
    return "removed"


def _audit(
    judge: JudgeConnection,
    user: User | None,
    action: str,
    summary: str,
    **changes: Any,
) -> None:
    who = (
        user.get_username() if user is not None and user.is_authenticated else "system"
    )
    audit_event(
        project=judge.project,
        actor=user,
        action=action,
        summary=f"{who} {summary}",
        object_type="judge",
        object_id=judge.pk,
        object_label=judge.name,
        **changes,
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


def _text_problem(text: str, longest: int) -> str | None:
    """Why a text field cannot be stored (too long, or characters the database
    refuses), or None."""
    if len(text) > longest:
        return f"At most {longest} characters."
    found = unstorable_char(text)
    return f"Contains {found}, which cannot be stored." if found else None


def _check(fields: dict[str, Any]) -> dict[str, Any]:
    """Normalise and validate judge settings; ApplicationError names each bad field."""
    errors: dict[str, str] = {}
    out = dict(fields)
    if "name" in out:
        out["name"] = str(out["name"] or "").strip()
        problem = "Required." if not out["name"] else _text_problem(out["name"], 200)
        if problem:
            errors["name"] = problem
    if "base_url" in out:
        out["base_url"] = str(out["base_url"] or "").strip().rstrip("/")
        # The address policy last: it resolves the host.
        problem = _text_problem(out["base_url"], 500) or judge_url_problem(
            out["base_url"]
        )
        if problem:
            errors["base_url"] = problem
    if "model" in out:
        out["model"] = str(out["model"] or "").strip()
        problem = "Required." if not out["model"] else _text_problem(out["model"], 200)
        if problem:
            errors["model"] = problem
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


def _check_key_env(api_key_env: str, base_url: str) -> None:
    if not _ENV_NAME.match(api_key_env):
        raise ApplicationError(
            "api_key_env must be an environment variable name.",
            field_errors={
                "api_key_env": "Letters, digits and underscores, e.g. OPENAI_API_KEY."
            },
        )
    message = judge_key_env_problem(api_key_env, base_url)
    if message:
        raise ApplicationError(
            f"api_key_env: {message}", field_errors={"api_key_env": message}
        )


@sensitive_variables("api_key")
def _key_fields(
    api_key: str | None, api_key_env: str | None, clear: bool, base_url: str
) -> dict[str, str]:
    """The stored key fields for a key given as plain text or as an env var name,
    bound to the URL it is entered for."""
    if clear:
        return {"api_key_encrypted": "", "api_key_env": "", "api_key_url": ""}
    if api_key:
        # Not printable covers NUL, lone surrogates and line breaks alike.
        if not api_key.isprintable():
            raise ApplicationError(
                "api_key: The key contains characters an HTTP header cannot carry.",
                field_errors={
                    "api_key": "Contains characters an HTTP header cannot carry."
                },
            )
        return {
            "api_key_encrypted": secret_encrypt(api_key),
            "api_key_env": "",
            "api_key_url": base_url,
        }
    if api_key_env:
        _check_key_env(api_key_env, base_url)
        return {
            "api_key_encrypted": "",
            "api_key_env": api_key_env,
            "api_key_url": base_url,
        }
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


@sensitive_variables("api_key")
def judge_create(
    *,
    project: Project,
    user: User | None,
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
    key_fields = _key_fields(api_key, api_key_env, False, fields["base_url"])
    judge = JudgeConnection(project=project, **fields, **key_fields)
    with transaction.atomic():
        _save(judge)
        after = {name: _audit_value(value) for name, value in fields.items()}
        if _key_change(key_fields):
            after["api_key"] = "set"
        _audit(
            judge, user, "judge.create", f"created judge “{judge.name}”", after=after
        )
    logger.info("judge %s created in project %s", judge.pk, project.pk)
    return judge


@sensitive_variables("api_key")
def judge_update(
    *,
    judge: JudgeConnection,
    user: User | None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    clear_api_key: bool = False,
    **changes: Any,
) -> JudgeConnection:
    """Change settings; a key is replaced only when a new one (or clear) is given.

    A key is only ever sent to the URL it was entered for, so a new URL for a judge that
    has a key needs the key again (or its removal) in the same change.
    """
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise ApplicationError(f"Unknown judge fields: {', '.join(sorted(unknown))}.")
    fields = _check(changes)
    url_changes = "base_url" in fields and fields["base_url"] != judge.base_url
    if url_changes and judge.is_offline:
        # The server sets it (OFFLINE_JUDGE_URL); repointed, the "free" built-in judge
        # would spend a paid endpoint's money where only owners may (reviewers may
        # start runs on the offline judge).
        message = "The built-in offline judge's URL is set by the server; add a new judge connection for another endpoint."
        raise ApplicationError(
            f"base_url: {message}", field_errors={"base_url": message}
        )
    if (
        url_changes
        and judge.has_api_key
        and not (api_key or api_key_env or clear_api_key)
    ):
        message = (
            "Enter the API key again (or remove it): a key is only sent to the URL it "
            "was entered for."
        )
        raise ApplicationError(f"api_key: {message}", field_errors={"api_key": message})
    changed = [name for name, value in fields.items() if getattr(judge, name) != value]
    before = {name: _audit_value(getattr(judge, name)) for name in changed}
    for name, value in fields.items():
        setattr(judge, name, value)
    key_fields = _key_fields(api_key, api_key_env, clear_api_key, judge.base_url)
    for name, value in key_fields.items():
        setattr(judge, name, value)
    after = {name: _audit_value(getattr(judge, name)) for name in changed}
    # Only that the key changed: its text, its env var and its cipher stay out.
    key_change = _key_change(key_fields)
    if key_change:
        changed.append("api_key")
        after["api_key"] = key_change
    with transaction.atomic():
        _save(judge)
        if changed:
            words = [
                f"api_key {key_change}" if name == "api_key" else name
                for name in changed
            ]
            _audit(
                judge,
                user,
                "judge.change",
                f"changed judge “{judge.name}”: {', '.join(words)}",
                before=before,
                after=after,
            )
    return judge


@sensitive_variables("value")
def judge_api_key(*, judge: JudgeConnection) -> str | None:
    """The plain key for a call to the judge's URL (never for display): env var or
    decrypted. Refused when the key was entered for another URL, or its env var is not
    (or no longer) one the operator allows."""
    if not judge.has_api_key:
        return None
    if judge.api_key_url != judge.base_url:
        raise ApplicationError(
            "The API key was entered for another URL; enter it again for this one."
        )
    if judge.api_key_encrypted:
        return secret_decrypt(judge.api_key_encrypted)
    if judge.api_key_env:
        # The operator binds each variable to hosts; checked again at every use, as
        # the setting or the row may have changed since the key was saved.
        problem = judge_key_env_problem(judge.api_key_env, judge.base_url)
        if problem:
            raise ApplicationError(problem)
        value = os.environ.get(judge.api_key_env)
        if not value:
            raise ApplicationError(
                f"The environment variable {judge.api_key_env} is not set on this server."
            )
        return value
    return None


def judge_guard(judge: JudgeConnection) -> AddressGuard:
    """The address guard of a client for the judge's own URL: with a key from the
    environment, each connection's host and port must also be one the operator bound
    that variable to."""
    from_env = judge.api_key_env if not judge.api_key_encrypted else None
    return judge_address_guard((), key_env=from_env or None)


@dataclass(frozen=True)
class JudgeTestResult:
    ok: bool
    latency_ms: float
    message: str


def judge_test(*, judge: JudgeConnection, user: User | None = None) -> JudgeTestResult:
    """`_judge_test`, recorded in the audit log (whether it answered, how fast, or
    the failure in words; never the key)."""
    outcome = _judge_test(judge=judge)
    _audit(
        judge,
        user,
        "judge.test",
        f"tested judge “{judge.name}”: {'ok' if outcome.ok else 'failed'}",
        after={
            "ok": outcome.ok,
            "latency_ms": round(outcome.latency_ms),
            "message": outcome.message,
        },
    )
    return outcome


@sensitive_variables("key", "client")
def _judge_test(*, judge: JudgeConnection) -> JudgeTestResult:
    """One real, tiny judge call (a factuality step on "2 + 2"): latency or the error.

    A judge prompt rather than "say OK" so the test also proves the endpoint handles
    the system prompts our scorers send (the offline judge only answers those). Every
    failure is a message naming what failed (host, port, status) and never echoes what
    the remote answered: a judge URL may point anywhere, and its reply is not ours to
    show.
    """
    where = judge_host_port(judge.base_url)
    try:
        key = judge_api_key(judge=judge)
    except ApplicationError as exc:
        return JudgeTestResult(False, 0.0, exc.message)
    try:
        client = make_client(
            judge.base_url,
            key,
            min(judge.timeout_seconds, 30.0),
            address_guard=judge_guard(judge),
        )
    except JudgeURLError as exc:  # a URL stored before hosts were checked at save
        return JudgeTestResult(False, 0.0, f"{exc} Edit the judge's URL.")
    messages = preview_prompts(
        "factuality",
        {"input": "What is 2 + 2?", "output": "4", "reference": "2 + 2 = 4"},
        None,
    )[0]["messages"]
    started = time.perf_counter()

    def failed(message: str) -> JudgeTestResult:
        return JudgeTestResult(False, (time.perf_counter() - started) * 1000, message)

    try:
        reply = client.chat.completions.create(
            model=judge.model,
            messages=messages,
            temperature=judge.temperature,
            max_tokens=60,
        )
        content = reply.choices[0].message.content if reply.choices else None
        if not isinstance(content, str):
            raise TypeError("no message content")
    except (openai.APIStatusError, openai.APIConnectionError) as exc:
        message = judge_failure_message(
            exc,
            base_url=judge.base_url,
            timeout_seconds=min(judge.timeout_seconds, 30.0),
        )
        return failed(message or f"Could not reach {where}.")
    except Exception:  # noqa: BLE001 - any other reply (HTML, not JSON, wrong shape) is the judge's fault, reported as such
        logger.info("judge %s test: reply was not a chat completion", judge.pk)
        return failed(
            f"{where} answered, but not with an OpenAI-compatible chat completion. "
            "Check that the base URL ends at the API (e.g. …/v1)."
        )
    finally:
        client.close()
    latency = (time.perf_counter() - started) * 1000
    return JudgeTestResult(
        True,
        latency,
        f"{judge.model} at {where} answered a judge prompt in {latency:.0f} ms.",
    )


def judge_set_archived(
    *, judge: JudgeConnection, user: User | None, archived: bool
) -> JudgeConnection:
    """Archive (hide from the judge list and the scorer form's picker) or unarchive a
    judge connection, audited. Scorers and runs that use it keep using it."""
    with transaction.atomic(durable=True):
        locked = JudgeConnection.objects.select_for_update().get(pk=judge.pk)
        if locked.archived != archived:
            locked.archived = archived
            locked.save(update_fields=["archived"])
            locked.project = judge.project
            verb = "archived" if archived else "unarchived"
            _audit(
                locked,
                user,
                "judge.archive" if archived else "judge.unarchive",
                f"{verb} judge connection “{locked.name}”",
                before={"archived": not archived},
                after={"archived": archived},
            )
    judge.archived = archived
    return judge
