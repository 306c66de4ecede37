"""Webhooks over the REST API: project owners only; the secret is write-only."""

from __future__ import annotations

from typing import Any

from ninja import Router, Status
from ninja.pagination import paginate

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.webhooks import selectors, services
from evalsite.webhooks.models import Delivery, Webhook
from evalsite.webhooks.schemas import (
    DeliveryOut,
    WebhookIn,
    WebhookOut,
    WebhookPatch,
)

router = Router(tags=["webhooks"])
_W = "/projects/{project_id}/webhooks"


@router.get(_W, response=list[WebhookOut])
@paginate(LimitOffsetPagination)
def webhook_list(request: AuthenticatedHttpRequest, project_id: int) -> Any:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    return selectors.webhook_list(project_id=project.pk)


@router.post(_W, response={201: WebhookOut})
def webhook_create(
    request: AuthenticatedHttpRequest, project_id: int, payload: WebhookIn
) -> Status[Webhook]:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    webhook = services.webhook_create(
        project=project,
        user=request.user,
        name=payload.name,
        url=payload.url,
        secret=payload.secret.get_secret_value(),
        events=[e.value for e in payload.events],
        active=payload.active,
        baseline_run_id=payload.baseline_run_id,
        margin=payload.margin,
    )
    return Status(201, webhook)


@router.get(_W + "/{webhook_id}", response=WebhookOut)
def webhook_detail(
    request: AuthenticatedHttpRequest, project_id: int, webhook_id: int
) -> Webhook:
    return selectors.webhook_get_for_user(
        user=request.user, project_id=project_id, pk=webhook_id
    )


@router.patch(_W + "/{webhook_id}", response=WebhookOut)
def webhook_update(
    request: AuthenticatedHttpRequest,
    project_id: int,
    webhook_id: int,
    payload: WebhookPatch,
) -> Webhook:
    webhook = selectors.webhook_get_for_user(
        user=request.user, project_id=project_id, pk=webhook_id
    )
    given = payload.model_fields_set
    return services.webhook_update(
        webhook=webhook,
        user=request.user,
        name=payload.name if payload.name is not None else webhook.name,
        url=payload.url if payload.url is not None else webhook.url,
        events=(
            [e.value for e in payload.events]
            if payload.events is not None
            else webhook.events
        ),
        active=payload.active if payload.active is not None else webhook.active,
        secret=payload.secret.get_secret_value() if payload.secret else None,
        baseline_run_id=(
            payload.baseline_run_id
            if "baseline_run_id" in given
            else webhook.baseline_run_id
        ),
        margin=payload.margin if payload.margin is not None else webhook.margin,
    )


@router.delete(_W + "/{webhook_id}", response={204: None})
def webhook_delete(
    request: AuthenticatedHttpRequest, project_id: int, webhook_id: int
) -> Status[None]:
    webhook = selectors.webhook_get_for_user(
        user=request.user, project_id=project_id, pk=webhook_id
    )
    services.webhook_delete(webhook=webhook, user=request.user)
    return Status(204, None)


@router.get(_W + "/{webhook_id}/deliveries", response=list[DeliveryOut])
@paginate(LimitOffsetPagination)
def delivery_list(
    request: AuthenticatedHttpRequest, project_id: int, webhook_id: int
) -> Any:
    webhook = selectors.webhook_get_for_user(
        user=request.user, project_id=project_id, pk=webhook_id
    )
    return Delivery.objects.filter(webhook=webhook)


@router.post(
    _W + "/{webhook_id}/deliveries/{delivery_id}/redeliver",
    response={202: DeliveryOut},
)
def delivery_redeliver(
    request: AuthenticatedHttpRequest,
    project_id: int,
    webhook_id: int,
    delivery_id: int,
) -> Status[Delivery]:
    webhook = selectors.webhook_get_for_user(
        user=request.user, project_id=project_id, pk=webhook_id
    )
    delivery = selectors.delivery_get(webhook=webhook, pk=delivery_id)
    return Status(
        202, services.delivery_redeliver(delivery=delivery, user=request.user)
    )
