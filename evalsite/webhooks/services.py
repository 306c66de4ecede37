"""Webhooks: their configuration, the deliveries an event makes, and one attempt to
send a delivery.

An event becomes one Delivery row per subscribed webhook, in the transaction of the
event's task, and each row is sent by the ``webhooks.delivery_send`` task (tasks.py:
retries with backoff). A delivery is signed per Standard Webhooks (the
``standardwebhooks`` package) and goes out through the judges' egress policy: every
connection's address is checked (no private, loopback or link-local address unless the
operator allowed it in JUDGE_ALLOWED_PRIVATE_HOSTS) and redirects are never followed.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx2
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables
from standardwebhooks import Webhook as Signer

from evalsite.accounts.models import Project
from evalsite.accounts.services.audit import audit_event
from evalsite.compare.selectors import ScorerDelta, runs_compare
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.crypto import secret_decrypt, secret_encrypt
from evalsite.evals.judges.egress import judge_address_guard, judge_url_problem
from evalsite.evals.models import Run
from evalsite.evals.runs.selectors import runs_listed
from evalsite.lib.tasks import task_send_on_commit
from evalsite.lib.text import unstorable_char
from evalsite.review.models import ReviewQueue
from evalsite.review.queues.selectors import queue_progress
from evalsite.webhooks import conf
from evalsite.webhooks.events import Event
from evalsite.webhooks.models import Delivery, Webhook
from scoring.egress import guarded_http_client, refused_cause

logger = logging.getLogger(__name__)

DELIVERY_SEND_TASK = "webhooks.delivery_send"
SECRET_PREFIX = "whsec_"
SECRET_HELP = (
    "A Standard Webhooks secret: whsec_ followed by 24 to 64 random bytes in base64. "
    'Make one with: python -c "import base64,secrets; '
    "print('whsec_' + base64.b64encode(secrets.token_bytes(32)).decode())\""
)
# What the log keeps of a receiver's error body.
ERROR_CHARS = 500
# The model's column sizes.
NAME_MAX = 200
URL_MAX = 2000


# ------------------------------------------------------------------ configuration


@sensitive_variables("secret", "raw")
def secret_problem(secret: str) -> str | None:
    """Why `secret` cannot sign deliveries (a message for its field), or None."""
    raw = secret.strip().removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return SECRET_HELP
    return None if 24 <= len(key) <= 64 else SECRET_HELP


def _clean(
    *,
    project: Project,
    name: str,
    url: str,
    events: Iterable[str],
    baseline_run_id: int | None,
    margin: float,
) -> dict[str, Any]:
    errors: dict[str, str] = {}
    name = name.strip()
    url = url.strip()
    for field, text in (("name", name), ("url", url)):
        found = unstorable_char(text)
        if found:
            errors[field] = f"Contains {found}, which cannot be stored."
    if not name:
        errors["name"] = "Enter a name."
    elif len(name) > NAME_MAX:
        errors["name"] = f"Enter at most {NAME_MAX} characters."
    if len(url) > URL_MAX:
        errors["url"] = f"Enter a URL of at most {URL_MAX} characters."
    elif "url" not in errors:
        problem = judge_url_problem(url)
        if problem is not None:
            errors["url"] = problem
    chosen = list(dict.fromkeys(events))
    unknown = [e for e in chosen if e not in Event.values]
    if unknown:
        errors["events"] = f"Unknown event: {', '.join(unknown)}."
    elif not chosen:
        errors["events"] = "Choose at least one event."
    baseline: Run | None = None
    if baseline_run_id is not None:
        baseline = Run.objects.filter(pk=baseline_run_id, project=project).first()
        if baseline is None:
            errors["baseline_run"] = "No such run in this project."
    if Event.COMPARE_REGRESSION in chosen and baseline is None:
        errors.setdefault(
            "baseline_run",
            "Choose the baseline run that regressions are measured from.",
        )
    if not 0 <= margin < 1e6:  # NaN too
        errors["margin"] = "Enter a margin of 0 or more."
    if errors:
        raise ApplicationError(next(iter(errors.values())), field_errors=errors)
    return {
        "name": name,
        "url": url,
        "events": chosen,
        "baseline_run": baseline,
        "margin": margin,
    }


@sensitive_variables("secret")
def webhook_create(
    *,
    project: Project,
    user: User,
    name: str,
    url: str,
    secret: str,
    events: Iterable[str],
    active: bool = True,
    baseline_run_id: int | None = None,
    margin: float = 0.0,
) -> Webhook:
    fields = _clean(
        project=project,
        name=name,
        url=url,
        events=events,
        baseline_run_id=baseline_run_id,
        margin=margin,
    )
    problem = secret_problem(secret)
    if problem is not None:
        raise ApplicationError(problem, field_errors={"secret": problem})
    with transaction.atomic():
        webhook = Webhook.objects.create(
            project=project,
            created_by=user,
            active=active,
            secret_encrypted=secret_encrypt(secret.strip()),
            **fields,
        )
        _audit(webhook, user, "webhook.create", "created")
    return webhook


@sensitive_variables("secret")
def webhook_update(
    *,
    webhook: Webhook,
    user: User,
    name: str,
    url: str,
    events: Iterable[str],
    active: bool,
    secret: str | None = None,
    baseline_run_id: int | None = None,
    margin: float = 0.0,
) -> Webhook:
    """Change a webhook; a `secret` of None or "" keeps the stored one."""
    fields = _clean(
        project=webhook.project,
        name=name,
        url=url,
        events=events,
        baseline_run_id=baseline_run_id,
        margin=margin,
    )
    if secret:
        problem = secret_problem(secret)
        if problem is not None:
            raise ApplicationError(problem, field_errors={"secret": problem})
        webhook.secret_encrypted = secret_encrypt(secret.strip())
    for key, value in fields.items():
        setattr(webhook, key, value)
    webhook.active = active
    with transaction.atomic():
        webhook.save()
        _audit(
            webhook,
            user,
            "webhook.change",
            "changed" + (" (new secret)" if secret else ""),
        )
    return webhook


def webhook_delete(*, webhook: Webhook, user: User) -> None:
    with transaction.atomic():
        _audit(webhook, user, "webhook.delete", "deleted")
        webhook.delete()


def _audit(webhook: Webhook, user: User, action: str, verb: str) -> None:
    audit_event(
        project=webhook.project,
        actor=user,
        action=action,
        summary=f"{user.get_username()} {verb} webhook “{webhook.name}” ({webhook.url})",
        after={"url": webhook.url, "events": webhook.events, "active": webhook.active},
        object_type="webhook",
        object_id=webhook.pk,
        object_label=webhook.name,
    )


# ------------------------------------------------------------------------- events


def _subscribed(project_id: int, event: Event) -> list[Webhook]:
    return [
        w
        for w in Webhook.objects.filter(project_id=project_id, active=True)
        if event in w.events
    ]


def deliveries_create(
    *, webhooks: Iterable[Webhook], event: Event, key: str, data: dict[str, Any]
) -> list[Delivery]:
    """One delivery of `event` per webhook, sent once this transaction commits; none
    where this webhook already has one for the same event and `key`."""
    created: list[Delivery] = []
    timestamp = timezone.now().isoformat()
    for webhook in webhooks:
        delivery, new = Delivery.objects.get_or_create(
            webhook=webhook,
            event=event.value,
            event_key=key,
            defaults={
                "message_id": f"msg_{uuid.uuid4().hex}",
                "payload": {"type": event.value, "timestamp": timestamp, "data": data},
            },
        )
        if new:
            task_send_on_commit(DELIVERY_SEND_TASK, delivery.pk, robust=True)
            created.append(delivery)
    return created


def _run_data(run: Run) -> dict[str, Any]:
    return {
        "project_id": run.project_id,
        "run": {
            "id": run.pk,
            "name": run.name,
            "status": run.status,
            "dataset_id": run.dataset_id,
            "total": run.total,
            "error": run.error,
            "created_at": run.created_at.isoformat(),
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        },
    }


@transaction.atomic
def run_event(*, run_id: int) -> list[Delivery]:
    """The deliveries of a run that just finished: run.finished when every result
    scored, run.failed when some did not, and compare.regression to each webhook whose
    baseline run it regressed from. A cancelled run sends nothing, nor does a judge
    lab replay or a bias audit (not a listed run)."""
    run = runs_listed().filter(pk=run_id).first()
    if run is None:
        return []
    if run.status == Run.Status.DONE:
        event = Event.RUN_FINISHED
    elif run.status in (Run.Status.DONE_WITH_ERRORS, Run.Status.FAILED):
        event = Event.RUN_FAILED
    else:
        return []
    data = _run_data(run)
    created = deliveries_create(
        webhooks=_subscribed(run.project_id, event),
        event=event,
        key=f"run:{run.pk}",
        data=data,
    )
    for webhook in _subscribed(run.project_id, Event.COMPARE_REGRESSION):
        baseline = webhook.baseline_run
        if baseline is None or baseline.pk == run.pk or not baseline.is_finished:
            continue
        regressions = run_regressions(baseline=baseline, run=run, margin=webhook.margin)
        if regressions:
            created += deliveries_create(
                webhooks=[webhook],
                event=Event.COMPARE_REGRESSION,
                key=f"run:{run.pk}:baseline:{baseline.pk}",
                data={
                    **data,
                    "baseline_run_id": baseline.pk,
                    "margin": webhook.margin,
                    "regressions": regressions,
                },
            )
    return created


def _regression(delta: ScorerDelta, margin: float) -> dict[str, Any] | None:
    """The scorer's figures if the run is worse than the baseline by more than
    `margin`: the whole 95 % paired t-interval of the mean difference (run − baseline,
    turned so that worse is negative for a lower-is-better scorer) lies below −margin."""
    t = delta.mean_test
    if t is None or t.ci_low is None or t.ci_high is None:
        return None
    sign = 1.0 if delta.direction == "higher" else -1.0
    best = max(sign * t.ci_low, sign * t.ci_high)
    if best >= -margin:
        return None
    return {"scorer": delta.label, "kind": delta.a.kind, **delta.summary()}


def run_regressions(*, baseline: Run, run: Run, margin: float) -> list[dict[str, Any]]:
    """Each scorer on which `run` regressed from `baseline` on their matched items,
    by the paired test the compare page shows; [] when the runs cannot be compared."""
    try:
        comparison = runs_compare(runs=[baseline, run])
    except ApplicationError as exc:
        logger.warning(
            "webhooks: run %s not compared with baseline %s: %s",
            run.pk,
            baseline.pk,
            exc.message,
        )
        return []
    found = (_regression(d, margin) for d in comparison.candidates[0].deltas)
    return [r for r in found if r is not None]


@transaction.atomic
def queue_event(*, queue_id: int) -> list[Delivery]:
    """queue.completed once every result of a review queue has been reviewed."""
    queue = ReviewQueue.objects.filter(pk=queue_id).first()
    if queue is None or queue.is_pairwise:
        return []
    progress = queue_progress(queue=queue)
    if not progress["total"] or progress["reviewed"] < progress["total"]:
        return []
    return deliveries_create(
        webhooks=_subscribed(queue.project_id, Event.QUEUE_COMPLETED),
        event=Event.QUEUE_COMPLETED,
        key=f"queue:{queue.pk}",
        data={
            "project_id": queue.project_id,
            "queue": {
                "id": queue.pk,
                "name": queue.name,
                "run_id": queue.run_id,
                **progress,
            },
        },
    )


# ----------------------------------------------------------------------- sending


class Outcome(enum.Enum):
    DELIVERED = "delivered"
    RETRY = "retry"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass
class _Response:
    code: int | None
    error: str


@sensitive_variables("secret", "signer")
def _post(webhook: Webhook, delivery: Delivery) -> _Response:
    body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True)
    now = timezone.now()
    secret = secret_decrypt(webhook.secret_encrypted)
    signer = Signer(secret)
    headers = {
        "content-type": "application/json",
        "user-agent": "evalsite-webhooks",
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signer.sign(delivery.message_id, now, body),
    }
    with guarded_http_client(judge_address_guard(), conf.timeout_seconds()) as client:
        response = client.post(
            webhook.url, content=body.encode("utf-8"), headers=headers
        )
    if 200 <= response.status_code < 300:
        return _Response(response.status_code, "")
    if 300 <= response.status_code < 400:
        error = "The receiver answered with a redirect, which webhooks never follow."
    else:
        # The receiver's words: kept short, without what the database cannot store.
        error = "".join(
            c for c in response.text[:ERROR_CHARS] if not unstorable_char(c)
        )
    return _Response(response.status_code, error or f"HTTP {response.status_code}")


def delivery_attempt(*, delivery_id: int, final: bool) -> Outcome:
    """Send the delivery once and log the attempt. RETRY when it failed in a way a
    later attempt may not (receiver down, an error status) and this is not the
    `final` attempt; an address the egress policy refuses fails at once."""
    delivery = Delivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None or delivery.status == Delivery.Status.SUCCEEDED:
        return Outcome.SKIPPED
    webhook = delivery.webhook
    retry = not final
    try:
        if not webhook.active:
            response = _Response(None, "The webhook is turned off.")
            retry = False
        else:
            response = _post(webhook, delivery)
    except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
        refused = refused_cause(exc)
        if refused is not None:
            response = _Response(None, f"Not sent: {refused}")
            retry = False
        else:
            response = _Response(None, f"{type(exc).__name__}: {exc}"[:ERROR_CHARS])
    except ApplicationError as exc:  # the secret cannot be decrypted
        response = _Response(None, exc.message)
        retry = False
    now = timezone.now()
    delivery.attempts += 1
    delivery.last_attempt_at = now
    delivery.response_code = response.code
    delivery.error = response.error
    if not response.error:
        delivery.status = Delivery.Status.SUCCEEDED
        delivery.delivered_at = now
        outcome = Outcome.DELIVERED
    elif retry:
        delivery.status = Delivery.Status.RETRYING
        outcome = Outcome.RETRY
    else:
        delivery.status = Delivery.Status.FAILED
        outcome = Outcome.FAILED
    delivery.save(
        update_fields=[
            "attempts",
            "last_attempt_at",
            "response_code",
            "error",
            "status",
            "delivered_at",
        ]
    )
    return outcome


def delivery_redeliver(*, delivery: Delivery, user: User) -> Delivery:
    """Send a delivery again (same message id and payload, so a receiver that already
    has it can drop it), with a fresh round of retries."""
    with transaction.atomic():
        Delivery.objects.filter(pk=delivery.pk).update(status=Delivery.Status.PENDING)
        task_send_on_commit(DELIVERY_SEND_TASK, delivery.pk, robust=True)
    delivery.refresh_from_db()
    return delivery
