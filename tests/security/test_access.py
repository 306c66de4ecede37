"""Project isolation and roles on EVERY page and API operation.

The walk is generated from the URL resolver and the NinjaAPI's routers, so a new route is
covered the day it is added (and `routes.value_for` fails loudly on an unknown
parameter). Path parameters are filled with the ids of one project's objects; an
outsider (owner of another project) must get 404 for every method, a viewer 403 for
every write, and the owner must see every page (which proves the ids are right, so the
404s are not vacuous).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import login
from tests.security.routes import WRITE_METHODS, fill, operations, pages

pytestmark = pytest.mark.django_db

# Pages whose ids cannot come from the world: the upload token lives in the session of
# whoever uploaded, so even the owner gets 404 for a made-up one; an invitation link's
# token is stored hashed only, so a made-up one is unknown to everyone alike.
OWNER_404_OK = {"datasets:map", "imports:preview", "accounts:invite"}

# Operations that are not about one project's objects.
UNSCOPED_OPS = {
    ("GET", "/projects"),
    ("POST", "/projects"),
    # Invitations to the caller's own account: per user, not per project (anyone
    # else's answer 404: tests/accounts/test_api.py).
    ("GET", "/invitations"),
    ("POST", "/invitations/{invitation_id}/accept"),
    ("POST", "/invitations/{invitation_id}/decline"),
}


def _row_counts() -> dict[str, int]:
    return {
        m._meta.label: m.objects.count()
        for m in apps.get_models()
        if m._meta.app_label in {"accounts", "datasets", "evals", "review", "webhooks"}
        # Tokens record last use on every request; sessions are not project data.
        and m._meta.model_name not in {"apitoken"}
    }


def _page_requests(client, url: str) -> dict[str, Any]:
    return {
        "GET": client.get(url),
        "POST": client.post(url, {}),
        "POST htmx": client.post(url, {}, HTTP_HX_REQUEST="true"),
    }


def test_the_walk_covers_the_app():
    names = {p.name for p in pages()}
    # A sample of each app's pages; if these vanish the walker is broken, not the app.
    assert {"exports:run_csv", "accounts:project"} <= names
    assert len(pages()) >= 10
    assert len(operations()) >= 10


def test_owner_sees_every_page_so_the_ids_are_right(client, world, owner):
    login(client, owner)
    for page in pages():
        url = fill(page.route, world)
        status = client.get(url).status_code
        assert status < 500, (page.name, url, status)
        if page.name not in OWNER_404_OK:
            assert status != 404, (page.name, url)


def test_outsiders_get_404_for_every_page_and_method(client, world, outsider):
    login(client, outsider)
    own_project = outsider.memberships.get().project_id
    before = _row_counts()
    for page in pages():
        urls = [fill(page.route, world)]
        if page.route.count("<") > 1:
            # Our object's id under the outsider's own project path: 404 as well.
            urls.append(fill(page.route, world, project_id=own_project))
        for url in urls:
            responses = _page_requests(client, url)
            statuses = {how: r.status_code for how, r in responses.items()}
            # 405 = the view does not take that method at all (same answer for everyone).
            assert set(statuses.values()) <= {404, 405}, (page.name, url, statuses)
            assert 404 in statuses.values(), (page.name, url, statuses)
    assert _row_counts() == before


def test_viewers_get_403_on_every_page_write(client, world, viewer):
    login(client, viewer)
    before = _row_counts()
    writes = 0
    for page in pages():
        url = fill(page.route, world)
        for how in ("POST", "POST htmx"):
            status = _page_requests(client, url)[how].status_code
            # Per-user pages (API tokens) are not the viewer's: 404, like an outsider.
            allowed = {403, 405} if "project_id" in page.route else {404, 405}
            assert status in allowed, (page.name, url, how, status)
            writes += status == 403
    assert writes >= 10  # the walk reached real write views
    assert _row_counts() == before


# ------------------------------------------------------------------ API


def _bodies(world: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """A valid request body per write operation, so validation (422) is not what answers."""
    return {
        ("POST", "/projects/{project_id}/members"): {
            "username": "rita",
            "role": "viewer",
        },
        ("PATCH", "/projects/{project_id}/members/{membership_id}"): {"role": "viewer"},
        ("DELETE", "/projects/{project_id}/members/{membership_id}"): None,
        ("POST", "/projects/{project_id}/invitations"): {"role": "owner", "days": 7},
        ("POST", "/projects/{project_id}/invitations/{invitation_id}/revoke"): None,
        ("POST", "/projects/{project_id}/datasets"): "multipart",
        ("POST", "/projects/{project_id}/imports"): "multipart",
        ("POST", "/projects/{project_id}/judges"): {
            "name": "another",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "m",
        },
        ("PATCH", "/judges/{judge_id}"): {"name": "renamed"},
        ("POST", "/judges/{judge_id}/test"): None,
        ("POST", "/projects/{project_id}/scorers"): {
            "name": "s2",
            "kind": "faithfulness",
            "judge_id": world["judge"].pk,
            "options": {},
        },
        ("PATCH", "/scorers/{scorer_id}"): {"name": "renamed"},
        ("POST", "/projects/{project_id}/runs"): {
            "dataset_id": world["dataset"].pk,
            "scorer_ids": [world["scorer"].pk],
        },
        ("POST", "/runs/{run_id}/cancel"): None,
        ("POST", "/runs/{run_id}/retry-failed"): None,
        ("POST", "/runs/{run_id}/rejudge"): None,
        ("POST", "/results/{result_id}/overrides"): {
            "kind": "score",
            "value": 0.5,
            "note": "x",
        },
        ("DELETE", "/overrides/{override_id}"): None,
        ("POST", "/runs/{run_id}/rescore"): {
            "run_scorer_id": world["run_scorer"].pk,
            "options": {},
        },
        ("POST", "/results/{result_id}/comments"): {"body": "hello"},
        ("POST", "/runs/{run_id}/queues"): {"name": "q"},
        ("POST", "/runs/{run_id}/calibration-samples"): {
            "run_scorer_id": world["run_scorer"].pk,
            "budget": 1,
        },
        ("POST", "/runs/{run_id}/results/accept"): {"ids": [world["result"].pk]},
        ("POST", "/runs/{run_id}/results/assign"): {
            "ids": [world["result"].pk],
            "assignee": None,
        },
        ("POST", "/runs/{run_id}/results/queue"): {"ids": [world["result"].pk]},
        ("POST", "/projects/{project_id}/saved-filters"): {"name": "mine"},
        ("DELETE", "/saved-filters/{saved_filter_id}"): None,
        ("PUT", "/projects/{project_id}/guidelines"): {"body": "Be strict."},
        ("PUT", "/projects/{project_id}/queues/{queue_id}/guidelines"): {
            "body": "Be strict."
        },
        ("POST", "/queues/{queue_id}/entries/{position}/reviews"): {"passed": True},
        ("POST", "/queues/{queue_id}/entries/{position}/adjudication"): {
            "passed": True
        },
        ("POST", "/queues/{queue_id}/items/{position}/skip"): None,
        ("POST", "/queues/{queue_id}/items/{position}/flag"): {"reason": "unclear"},
        ("POST", "/flags/{flag_id}/resolve"): {"note": "fixed"},
        ("POST", "/runs/{run_id}/pairwise"): {"run_b_id": world["other_run"].pk},
        ("POST", "/runs/{run_id}/bias-audits"): {
            "run_scorer_id": world["run_scorer"].pk,
            "sample_size": 1,
        },
        ("POST", "/pairwise/{pairwise_id}/pairs/{position}/preferences"): {
            "side": "left"
        },
        ("POST", "/projects/{project_id}/webhooks"): {
            "name": "another",
            "url": "http://127.0.0.1:9/hook",
            "secret": "whsec_" + "B" * 44,
            "events": ["run.failed"],
        },
        ("PATCH", "/projects/{project_id}/webhooks/{webhook_id}"): {"name": "renamed"},
        ("DELETE", "/projects/{project_id}/webhooks/{webhook_id}"): None,
        ("POST", "/projects/{project_id}/{kind}/{pk}/archive"): None,
        ("POST", "/projects/{project_id}/{kind}/{pk}/unarchive"): None,
        ("DELETE", "/projects/{project_id}/{kind}/{pk}"): None,
        (
            "POST",
            "/projects/{project_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
        ): None,
    }


def _call(client, method: str, path: str, body: Any, headers: dict[str, str]):
    url = "/api" + path
    if body == "multipart":
        upload = SimpleUploadedFile(
            "d.csv", b"input,output\nq,a\n", content_type="text/csv"
        )
        return client.post(url, {"name": "upload", "file": upload}, **headers)
    kwargs: dict[str, Any] = dict(headers)
    if body is not None:
        kwargs.update(data=json.dumps(body), content_type="application/json")
    return client.generic(method, url, **kwargs)


def test_every_api_write_has_a_body_example(world):
    bodies = _bodies(world)
    writes = {(op.method, op.path) for op in operations() if op.method in WRITE_METHODS}
    missing = writes - set(bodies) - UNSCOPED_OPS
    assert not missing, f"add a valid body for {sorted(missing)} to tests/security"


def test_owner_reads_every_api_get(client, world, owner, bearer):
    headers = bearer(owner)
    for op in operations():
        if op.method != "GET":
            continue
        path = fill(op.path, world)
        response = client.get("/api" + path, **headers)
        assert response.status_code == 200, (op.name, path, response.content[:300])


def test_outsiders_get_404_from_every_api_operation(client, world, outsider, bearer):
    headers = bearer(outsider)
    bodies = _bodies(world)
    before = _row_counts()
    for op in operations():
        if (op.method, op.path) in UNSCOPED_OPS:
            continue
        path = fill(op.path, world)
        response = _call(
            client, op.method, path, bodies.get((op.method, op.path)), headers
        )
        assert response.status_code == 404, (op.method, path, response.content[:300])
        assert response.json() == {"detail": "Not found.", "errors": []} or (
            set(response.json()) == {"detail", "errors"}
        )
    assert _row_counts() == before


def test_viewers_get_403_from_every_api_write(client, world, viewer, bearer):
    headers = bearer(viewer)
    bodies = _bodies(world)
    before = _row_counts()
    for op in operations():
        if op.method not in WRITE_METHODS or (op.method, op.path) in UNSCOPED_OPS:
            continue
        path = fill(op.path, world)
        response = _call(client, op.method, path, bodies[(op.method, op.path)], headers)
        assert response.status_code == 403, (op.method, path, response.content[:300])
        body = response.json()
        assert set(body) == {"detail", "errors"} and body["detail"]
    assert _row_counts() == before


def test_body_ids_of_another_project_are_refused(client, world, outsider, bearer):
    """An outsider writing in their OWN project cannot reach our objects by id."""
    headers = bearer(outsider)
    own = outsider.memberships.get().project_id
    before = _row_counts()
    attempts = [
        (
            f"/projects/{own}/runs",
            {"dataset_id": world["dataset"].pk, "scorer_ids": [world["scorer"].pk]},
        ),
        (
            f"/projects/{own}/scorers",
            {
                "name": "x",
                "kind": "faithfulness",
                "judge_id": world["judge"].pk,
                "options": {},
            },
        ),
    ]
    for path, body in attempts:
        response = _call(client, "POST", path, body, headers)
        assert 400 <= response.status_code < 500, (path, response.status_code)
        assert set(response.json()) == {"detail", "errors"}
    assert _row_counts() == before


def test_anonymous_api_calls_get_401(client, world):
    for op in operations():
        if op.path in {"/openapi.json", "/docs"}:
            continue
        path = fill(op.path, world)
        response = _call(client, op.method, path, None, {})
        assert response.status_code == 401, (op.method, path, response.status_code)
        assert set(response.json()) == {"detail", "errors"}
