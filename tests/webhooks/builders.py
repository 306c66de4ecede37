"""A webhook and one delivery of it, for the security walk's world."""

from __future__ import annotations

import base64
from typing import Any

from evalsite.accounts.models import Project
from evalsite.evals.crypto import secret_encrypt
from evalsite.webhooks.models import Delivery, Webhook

# The world's signing secret: never on a page, in an API response or a log
# (tests/security/test_secrets.py).
WORLD_WEBHOOK_SECRET = (
    "whsec_" + base64.b64encode(b"webhook-SECRET-999-0123456789").decode()
)


def build_webhooks(project: Project) -> dict[str, Any]:
    # Straight to the model: the service would resolve the URL's host.
    webhook = Webhook.objects.create(
        project=project,
        name="ci",
        url="https://hooks.example.com/evalsite",
        events=["run.finished"],
        secret_encrypted=secret_encrypt(WORLD_WEBHOOK_SECRET),
    )
    delivery = Delivery.objects.create(
        webhook=webhook,
        event="run.finished",
        event_key="run:0",
        message_id="msg_world",
        payload={"type": "run.finished", "data": {}},
        status=Delivery.Status.FAILED,
        attempts=1,
    )
    return {"webhook": webhook, "delivery": delivery}
