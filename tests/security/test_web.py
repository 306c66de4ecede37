"""CSRF on htmx posts, the login throttle, the upload size and spool limits, the
Content-Security-Policy and the offline judge's test hooks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from evalsite.datasets.models import Dataset, Item
from evalsite.evals.models import Override

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


LOGIN = "/login/"


def _login(client, username, password, ip, **extra):
    return client.post(
        LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip, **extra
    )


def _ip() -> str:
    return f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.7"


# The login throttle counts in fixed windows: on a frozen clock a test's attempts stay
# in one window, however slowly it runs.


def test_login_failures_are_limited_per_account_from_every_address(
    client, owner, reviewer, frozen_clock
):
    """An attacker alternating addresses gets no more guesses at one account."""
    statuses = [
        _login(client, "olivia", "wrong", f"192.0.2.{i}").status_code
        for i in range(1, 11)
    ]
    assert statuses == [200] * 10
    # An 11th address, and even the right password: the account waits out the window.
    limited = _login(client, "olivia", "pw", "192.0.2.200")
    assert limited.status_code == 429
    assert "Too many login attempts" in limited.content.decode()
    assert "_auth_user_id" not in client.session
    # Case and spaces do not make another account of it.
    assert _login(client, " OLIVIA", "wrong", "192.0.2.201").status_code == 429
    # Another account is not affected.
    assert _login(client, "rita", "pw", "192.0.2.202").status_code == 302
    # Once the window (LOGIN_RATE_PER_ACCOUNT, 10/15m) is over, the account logs in.
    frozen_clock.shift(timedelta(minutes=15))
    assert _login(client, "olivia", "pw", "192.0.2.203").status_code == 302


def test_login_failures_are_limited_per_address_over_every_account(
    client, owner, settings, frozen_clock
):
    settings.LOGIN_RATE_PER_IP = "5/15m"
    ip = _ip()
    for i in range(5):
        assert _login(client, f"nobody{i}", "wrong", ip).status_code == 200
    assert _login(client, "olivia", "pw", ip).status_code == 429
    # The account itself is fine from anywhere else.
    assert _login(client, "olivia", "pw", _ip()).status_code == 302


def test_successful_logins_never_count_towards_the_limits(client, owner):
    """A busy office behind one address is not locked out by its own logins."""
    ip = _ip()
    for _ in range(15):
        assert _login(client, "olivia", "pw", ip).status_code == 302
        client.logout()


def test_one_client_behind_the_proxy_cannot_lock_out_the_others(
    client, owner, reviewer, settings, frozen_clock
):
    settings.TRUSTED_PROXY_COUNT = 1
    settings.LOGIN_RATE_PER_IP = "5/15m"
    proxy = "10.0.0.1"
    attacker = {"HTTP_X_FORWARDED_FOR": "203.0.113.9"}
    for i in range(5):
        assert _login(client, f"nobody{i}", "x", proxy, **attacker).status_code == 200
    assert _login(client, "nobody", "x", proxy, **attacker).status_code == 429
    # A spoofed entry on the left changes nothing: the proxy's own entry is the last.
    spoofed = {"HTTP_X_FORWARDED_FOR": "198.51.100.7, 203.0.113.9"}
    assert _login(client, "nobody", "x", proxy, **spoofed).status_code == 429
    # Another client through the same proxy logs in.
    other = {"HTTP_X_FORWARDED_FOR": "198.51.100.7"}
    assert _login(client, "rita", "pw", proxy, **other).status_code == 302


def test_without_trusted_proxies_a_forwarded_header_is_ignored(
    client, owner, settings, frozen_clock
):
    settings.LOGIN_RATE_PER_IP = "5/15m"
    ip = _ip()
    for i in range(5):
        forged = {"HTTP_X_FORWARDED_FOR": f"198.51.100.{i}"}
        assert _login(client, f"nobody{i}", "x", ip, **forged).status_code == 200
    forged = {"HTTP_X_FORWARDED_FOR": "198.51.100.99"}
    assert _login(client, "nobody", "x", ip, **forged).status_code == 429


def test_the_admin_login_is_throttled_too(client, django_user_model, frozen_clock):
    django_user_model.objects.create_user(
        username="root", password="right-pw", is_staff=True, is_superuser=True
    )
    ip = _ip()
    for i in range(10):
        client.post(
            "/admin/login/",
            {"username": "root", "password": f"guess{i}"},
            REMOTE_ADDR=f"192.0.2.{i + 1}",
        )
    client.post(
        "/admin/login/",
        {"username": "root", "password": "right-pw", "next": "/admin/"},
        REMOTE_ADDR=ip,
    )
    assert "_auth_user_id" not in client.session
    # And it counts towards the same limit as the login page.
    assert _login(client, "root", "right-pw", _ip()).status_code == 429


def test_login_rates_are_validated():
    result = subprocess.run(
        [sys.executable, "-c", "import evalsite.settings"],
        env={**os.environ, "LOGIN_RATE_PER_ACCOUNT": "ten per minute"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "LOGIN_RATE_PER_ACCOUNT must look like 10/15m" in result.stderr


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


# ------------------------------------------------------------------ upload spool


def _csv(rows: int) -> bytes:
    return b"input,output\n" + b"what is this question,an answer\n" * rows


def _upload(client, project, content: bytes, name: str = "d"):
    return client.post(
        reverse("datasets:upload", args=[project.pk]),
        {"file": SimpleUploadedFile(f"{name}.csv", content, "text/csv"), "name": name},
    )


def test_upload_spool_is_capped_with_a_clear_error(
    client, project, owner, settings, tmp_path
):
    settings.VAR_DIR = tmp_path
    content = _csv(5)
    settings.UPLOAD_SPOOL_MAX_BYTES = len(content) * 2 + 10
    client.force_login(owner)
    for name in ("a", "b"):
        assert _upload(client, project, content, name).status_code == 302
    spool = tmp_path / "uploads"
    assert len(list(spool.glob("*.upload"))) == 2

    refused = _upload(client, project, content, "c")
    assert refused.status_code == 400
    body = refused.content.decode()
    assert "room for uploads" in body and "UPLOAD_SPOOL_MAX_BYTES" in body
    assert len(list(spool.glob("*.upload"))) == 2  # nothing written for it

    # Once the abandoned uploads have expired, there is room again.
    old = time.time() - 2 * 3600
    for path in spool.glob("*.upload"):
        os.utime(path, (old, old))
    assert _upload(client, project, content, "d").status_code == 302
    assert len(list(spool.glob("*.upload"))) == 1


def test_a_stored_upload_keeps_its_exact_bytes(settings, tmp_path):
    from evalsite.datasets import uploads

    settings.VAR_DIR = tmp_path
    content = _csv(3)
    token = uploads.upload_store(file=SimpleUploadedFile("x.csv", content))
    path = uploads.upload_path(token)
    assert path is not None and path.read_bytes() == content


# ------------------------------------------------------------------ CSP


def test_every_response_carries_the_content_security_policy(
    client, world, owner, settings
):
    policy = settings.CONTENT_SECURITY_POLICY
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy

    anonymous = [LOGIN, "/", "/healthz", "/api/projects", "/no/such/page/"]
    for path in anonymous:
        response = client.get(path)
        assert response["Content-Security-Policy"] == policy, path
    client.force_login(owner)
    project = world["project"]
    pages = [
        reverse("accounts:project", args=[project.pk]),
        reverse("evals:run_detail", args=[project.pk, world["run"].pk]),
        reverse("review:rescore", args=[project.pk, world["run"].pk]),
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        assert response["Content-Security-Policy"] == policy, path
        html = response.content.decode()
        # Every script is a file of ours; no inline code the policy would block.
        for tag in re.findall(r"<script\b[^>]*>", html):
            assert 'src="/static/' in tag, (path, tag)
        assert not re.search(r"\son[a-z]+=|hx-on|style=|javascript:", html), path


def test_templates_have_no_inline_script_handler_or_style():
    root = Path(__file__).resolve().parents[2] / "templates"
    bad = []
    for template in sorted(root.rglob("*.html")):
        # Template tags are not markup: `{% querystring only=value %}` is no handler.
        text = re.sub(r"{%.*?%}", "", template.read_text())
        for tag in re.findall(r"<script\b[^>]*>", text):
            # A JSON data block is never executed (the Swagger page's settings).
            if "src=" not in tag and 'type="application/json"' not in tag:
                bad.append((template.name, tag))
        for found in re.findall(
            r"\son[a-z]+\s*=|hx-on[:-]|\sstyle\s*=|<style\b|javascript:", text
        ):
            bad.append((template.name, found))
    assert bad == []


def test_htmx_is_told_to_inject_no_style_and_eval_nothing(client, owner):
    client.force_login(owner)
    html = client.get("/").content.decode()
    config = re.search(r'<meta name="htmx-config" content=\'([^\']*)\'>', html)
    assert config is not None
    assert json.loads(config.group(1)) == {
        "includeIndicatorStyles": False,
        "allowEval": False,
        "allowScriptTags": False,
    }


def test_debug_pages_go_without_the_policy_only_in_debug(client, owner, settings):
    client.force_login(owner)
    assert "Content-Security-Policy" in client.get("/no/such/page/")
    settings.DEBUG = True
    debug_404 = client.get("/no/such/page/")
    assert debug_404.status_code == 404
    assert "Content-Security-Policy" not in debug_404
    assert "Content-Security-Policy" in client.get("/")


# ------------------------------------------------------------------ offline judge


def test_offline_judge_test_hooks_are_off_unless_enabled():
    from scoring.offline_judge import start_server

    server = start_server(port=0)
    try:
        root = server.base_url.removesuffix("/v1")
        for hook in ("/_control", "/_reset"):
            response = httpx.post(root + hook, json={"script": ["500"]}, timeout=5)
            assert response.status_code == 404, hook
            assert "--enable-control" in response.text
        assert not server.state.script  # the hook changed nothing
        assert httpx.get(root + "/v1/models", timeout=5).status_code == 200
    finally:
        server.stop()

    server = start_server(port=0, enable_control=True)
    try:
        root = server.base_url.removesuffix("/v1")
        assert httpx.post(root + "/_control", json={}, timeout=5).status_code == 200
        assert httpx.post(root + "/_reset", json={}, timeout=5).status_code == 200
    finally:
        server.stop()


def test_offline_judge_command_line_has_the_flag_off_by_default():
    result = subprocess.run(
        [sys.executable, "-m", "scoring.offline_judge", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "--enable-control" in result.stdout
    procfile = (Path(__file__).resolve().parents[2] / "Procfile.dev").read_text()
    compose = (
        Path(__file__).resolve().parents[2] / "docker" / "compose.yml"
    ).read_text()
    assert "--enable-control" not in procfile + compose
