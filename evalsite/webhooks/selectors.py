"""Reads of webhooks and deliveries, each checked against the caller's project role."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.evals.models import Run
from evalsite.evals.runs.selectors import runs_listed
from evalsite.webhooks.models import Delivery, Webhook

DELIVERY_PAGE = 100


def webhook_get_for_user(
    *, user: User | AnonymousUser, project_id: int, pk: int
) -> Webhook:
    """Webhook `pk` of project `project_id` for one of its owners; 404 for another
    project's webhook or an outsider, 403 for members who are not owners."""
    project = project_get_for_user(user=user, pk=project_id, manage=True)
    webhook = (
        Webhook.objects.select_related("baseline_run")
        .filter(pk=pk, project=project)
        .first()
    )
    if webhook is None:
        raise Http404("No such webhook.")
    webhook.project = project
    return webhook


def webhook_list(*, project_id: int) -> QuerySet[Webhook]:
    return Webhook.objects.filter(project_id=project_id).select_related("baseline_run")


def delivery_list(*, webhook: Webhook) -> list[Delivery]:
    return list(Delivery.objects.filter(webhook=webhook)[:DELIVERY_PAGE])


def delivery_get(*, webhook: Webhook, pk: int) -> Delivery:
    delivery = Delivery.objects.filter(pk=pk, webhook=webhook).first()
    if delivery is None:
        raise Http404("No such delivery.")
    return delivery


def baseline_choices(*, project_id: int) -> QuerySet[Run]:
    """The runs a webhook may take as its baseline: the project's finished ones."""
    return runs_listed(project_id=project_id).filter(status__in=Run.FINISHED)
