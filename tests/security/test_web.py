"""CSRF on htmx posts, the login rate limit, and the upload size limit."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from evalsite.datasets.models import Dataset, Item
from evalsite.review.models import Override

pytestmark = pytest.mark.django_db


def _csrf_client(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def test_htmx_post_without_csrf_token_is_refused_and_with_it_accepted(world, owner):
    client = _csrf_client(owner)
    result = world["result"]
    item_url = reverse("review:item", args=[world["project"].pk, result.pk])
    accept_url = reverse("review:accept", args=[world["project"].pk, result.pk])
    assert client.get(item_url).status_code == 200  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value

    refused = client.post(accept_url, {}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 403
    result.refresh_from_db()
    assert not result.reviewed

    accepted = client.post(
        accept_url, {}, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token
    )
    assert accepted.status_code == 200
    result.refresh_from_db()
    assert result.reviewed


def test_the_page_sends_the_token_header_for_htmx(world, owner):
    client = _csrf_client(owner)
    html = client.get(
        reverse("accounts:project", args=[world["project"].pk])
    ).content.decode()
    token = client.cookies["csrftoken"].value
    assert 'hx-headers=\'{"X-CSRFToken": "' in html
    assert token  # the header value is the masked form of this cookie


def test_session_authenticated_api_writes_need_csrf_but_bearer_ones_do_not(
    world, owner, bearer
):
    client = _csrf_client(owner)
    url = f"/api/results/{world['result'].pk}/overrides"
    body = json.dumps({"kind": "score", "value": 0.5, "note": "n"})
    refused = client.post(url, body, content_type="application/json")
    assert refused.status_code in (401, 403)
    assert not Override.objects.filter(note="n").exists()

    by_token = Client(enforce_csrf_checks=True).post(
        url, body, content_type="application/json", **bearer(owner)
    )
    assert by_token.status_code in (200, 201), by_token.content
    assert Override.objects.filter(note="n").exists()


def test_login_is_rate_limited_per_ip(client, owner):
    ip = f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.7"
    url = reverse("accounts:login")
    statuses = [
        client.post(
            url, {"username": "olivia", "password": "wrong"}, REMOTE_ADDR=ip
        ).status_code
        for _ in range(11)
    ]
    assert statuses[:10] == [200] * 10
    assert statuses[10] == 429
    # The right password does not get through while limited...
    limited = client.post(url, {"username": "olivia", "password": "pw"}, REMOTE_ADDR=ip)
    assert limited.status_code == 429
    # ...and another address is not affected.
    other = client.post(
        url, {"username": "olivia", "password": "pw"}, REMOTE_ADDR=ip + "1"
    )
    assert other.status_code == 302


def test_oversized_uploads_are_refused_with_a_clear_error_and_no_rows(
    client, project, owner, bearer, settings
):
    settings.DATASET_MAX_UPLOAD_BYTES = 64
    content = b"input,output\n" + b"what is this question,an answer\n" * 10
    client.force_login(owner)
    page = client.post(
        reverse("datasets:upload", args=[project.pk]),
        {"file": SimpleUploadedFile("big.csv", content, "text/csv"), "name": "big"},
    )
    assert page.status_code == 400
    assert "limit" in page.content.decode().lower()

    api = client.post(
        f"/api/projects/{project.pk}/datasets",
        {"file": SimpleUploadedFile("big.csv", content, "text/csv"), "name": "big"},
        **bearer(owner),
    )
    assert 400 <= api.status_code < 500
    body = api.json()
    assert set(body) == {"detail", "errors"} and "limit" in body["detail"].lower()
    assert not Dataset.objects.exists() and not Item.objects.exists()
