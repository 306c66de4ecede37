"""Text the database cannot store (NUL, lone surrogates) is refused with a field error,
a 400 from the API and an error shown by the HTML forms: never a 500, never cleaned.

PostgreSQL refuses NUL in text, jsonb and even query parameters; a lone surrogate
(JSON's "\\ud800") cannot be encoded as UTF-8 by either database driver.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent, Project
from evalsite.evals.models import Result
from evalsite.review.models import Comment, Override, ReviewQueue
from evalsite.review.schemas import ResultQuery
from tests.conftest import login
from tests.factories import UserFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

# As JSON text: the escapes reach Python as the characters themselves.
BAD_JSON = {"nul": "a\\u0000b", "surrogate": "a\\ud800b"}


@pytest.fixture
def run(project):
    return make_run(project, kinds=["faithfulness"], n_items=2)


@pytest.fixture
def result(run):
    return Result.objects.filter(run=run).first()


def _post_json(client, url, raw):
    return client.post(url, raw, content_type="application/json")


def _assert_field_400(resp, field):
    """NUL: the shared rule's 400 naming the field. A lone surrogate does not even get
    past the API's schema layer (pydantic cannot read it as a string): a 422 that
    names the field, the API's answer to any malformed input."""
    body = resp.json()
    if resp.status_code == 422:
        assert "unicode" in body["errors"][0]["message"], body
        return
    assert resp.status_code == 400, resp.content
    assert "cannot be stored" in body["detail"]
    assert body["errors"] == [{"field": field, "message": body["errors"][0]["message"]}]
    assert "cannot be stored" in body["errors"][0]["message"]


# ------------------------------------------------------------------------- API


@pytest.mark.parametrize("bad", BAD_JSON.values(), ids=BAD_JSON.keys())
def test_api_project_name_and_description(client, db, bad):
    user = UserFactory(username="pat", is_staff=True)
    login(client, user)
    resp = _post_json(client, "/api/projects", f'{{"name": "{bad}"}}')
    _assert_field_400(resp, "name")
    resp = _post_json(
        client, "/api/projects", f'{{"name": "ok", "description": "{bad}"}}'
    )
    _assert_field_400(resp, "description")
    assert not Project.objects.filter(created_by=user).exists()


@pytest.mark.parametrize("bad", BAD_JSON.values(), ids=BAD_JSON.keys())
def test_api_override_note(client, reviewer, result, bad):
    login(client, reviewer)
    url = f"/api/results/{result.pk}/overrides"
    resp = _post_json(
        client, url, f'{{"kind": "pass", "value": true, "note": "{bad}"}}'
    )
    _assert_field_400(resp, "note")
    resp = _post_json(
        client,
        url,
        f'{{"kind": "verdict", "path": "verdicts.1.verdict", "value": "yes", '
        f'"note": "{bad}"}}',
    )
    _assert_field_400(resp, "note")
    assert not Override.objects.exists() and not AuditEvent.objects.exists()
    result.refresh_from_db()
    assert result.version == 0


@pytest.mark.parametrize("bad", BAD_JSON.values(), ids=BAD_JSON.keys())
def test_api_override_path(client, reviewer, result, bad):
    login(client, reviewer)
    resp = _post_json(
        client,
        f"/api/results/{result.pk}/overrides",
        f'{{"kind": "verdict", "path": "verdicts.1.verdict{bad}", "value": "yes"}}',
    )
    _assert_field_400(resp, "path")


@pytest.mark.parametrize("bad", BAD_JSON.values(), ids=BAD_JSON.keys())
def test_api_comment_body(client, reviewer, result, bad):
    login(client, reviewer)
    resp = _post_json(
        client, f"/api/results/{result.pk}/comments", f'{{"body": "{bad}"}}'
    )
    _assert_field_400(resp, "body")
    assert not Comment.objects.exists()


@pytest.mark.parametrize("bad", BAD_JSON.values(), ids=BAD_JSON.keys())
def test_api_queue_name_and_search(client, reviewer, run, bad):
    login(client, reviewer)
    url = f"/api/runs/{run.pk}/queues"
    _assert_field_400(_post_json(client, url, f'{{"name": "{bad}"}}'), "name")
    _assert_field_400(_post_json(client, url, f'{{"filters": {{"q": "{bad}"}}}}'), "q")
    assert not ReviewQueue.objects.exists()


def test_api_queue_score_filters_must_be_finite(client, reviewer, run):
    """A queue stores its filters as JSON, which has no NaN: refused, not a 500."""
    login(client, reviewer)
    url = f"/api/runs/{run.pk}/queues"
    for raw in ("NaN", "Infinity", "1e999"):
        resp = _post_json(client, url, f'{{"filters": {{"min_score": {raw}}}}}')
        assert resp.status_code == 422, resp.content
        assert resp.json()["errors"][0]["field"] == "filters.min_score"
    assert not ReviewQueue.objects.exists()


def test_api_results_list_and_export_search(client, viewer, run):
    login(client, viewer)
    resp = client.get(f"/api/runs/{run.pk}/results", {"q": "a\x00b"})
    _assert_field_400(resp, "q")
    for fmt in ("csv", "jsonl"):
        resp = client.get(f"/api/runs/{run.pk}/export.{fmt}", {"q": "a\x00b"})
        _assert_field_400(resp, "q")
    assert client.get(f"/api/runs/{run.pk}/results", {"q": "Paris"}).status_code == 200


# ------------------------------------------------------------------- HTML forms


def test_html_project_form_shows_the_error(client, db):
    user = UserFactory(username="pat", is_staff=True)
    login(client, user)
    url = reverse("accounts:project_create")
    for data in ({"name": "a\x00b"}, {"name": "ok", "description": "a\x00b"}):
        resp = client.post(url, data)
        assert resp.status_code == 400
        html = resp.content.decode()
        assert '<small class="error">Null characters are not allowed.</small>' in html
    assert not Project.objects.filter(created_by=user).exists()


def test_html_project_settings_form_shows_the_error(client, owner, project):
    login(client, owner)
    url = reverse("accounts:settings", args=[project.pk])
    for data in ({"name": "a\x00b"}, {"name": "ok", "description": "a\x00b"}):
        resp = client.post(url, data)
        assert resp.status_code in (200, 400)
        html = resp.content.decode()
        assert '<small class="error">Null characters are not allowed.</small>' in html
    project.refresh_from_db()
    assert project.name == "Acme RAG"


def test_html_override_note_shows_the_error(client, reviewer, result):
    login(client, reviewer)
    url = reverse("review:override_create", args=[result.run.project_id, result.pk])
    data = {"kind": "pass", "value": "pass", "note": "a\x00b"}
    resp = client.post(url, data, HTTP_HX_REQUEST="true")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert 'role="alert"' in html and "Null characters are not allowed" in html
    resp = client.post(url, data, follow=True)
    assert resp.status_code == 200
    assert "Null characters are not allowed" in resp.content.decode()
    assert not Override.objects.exists()


def test_html_comment_shows_the_error(client, reviewer, result):
    login(client, reviewer)
    url = reverse("review:comments", args=[result.run.project_id, result.pk])
    resp = client.post(url, {"body": "a\x00b"}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 400
    assert "Null characters are not allowed" in resp.content.decode()
    resp = client.post(url, {"body": "a\x00b"}, follow=True)
    assert resp.status_code == 200
    assert "Null characters are not allowed" in resp.content.decode()
    assert not Comment.objects.exists()


def test_html_queue_name_and_search(client, reviewer, run):
    login(client, reviewer)
    url = reverse("review:queue_create", args=[run.project_id, run.pk])
    resp = client.post(url, {"source": "filters", "name": "a\x00b"})
    assert resp.status_code == 400 and "name" in resp.content.decode()
    resp = client.post(url, {"source": "filters", "q": "a\x00b"})
    assert resp.status_code == 400 and "q:" in resp.content.decode()
    assert not ReviewQueue.objects.exists()


def test_html_explorer_and_export_search(client, viewer, run):
    login(client, viewer)
    explorer = reverse("review:explorer", args=[run.project_id, run.pk])
    assert client.get(explorer, {"q": "a\x00b"}).status_code == 400
    export = reverse("exports:run_csv", args=[run.project_id, run.pk])
    resp = client.get(export, {"q": "a\x00b"})
    assert resp.status_code == 400


# --------------------------------------------------------- services (any caller)


@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b", "\udfff"])
def test_services_refuse_unstorable_text(project, reviewer, result, run, bad):
    from evalsite.accounts.services import project_create, project_update
    from evalsite.core.exceptions import ApplicationError
    from evalsite.review.services import (
        comment_create,
        override_create,
        queue_create,
        result_set_human_pass,
    )

    calls = [
        (lambda: project_create(user=reviewer, name=bad), "name"),
        (
            lambda: project_create(user=reviewer, name="x", description=bad),
            "description",
        ),
        (
            lambda: project_update(
                project=project,
                actor=reviewer,
                name=bad,
                description="",
                blind_review=False,
            ),
            "name",
        ),
        (
            lambda: override_create(
                result=result, user=reviewer, kind="pass", value=True, note=bad
            ),
            "note",
        ),
        (
            lambda: result_set_human_pass(
                result=result, user=reviewer, passed=bool(result.final_passed), note=bad
            ),
            "note",
        ),
        (lambda: comment_create(result=result, user=reviewer, body=bad), "body"),
        (
            lambda: queue_create(run=run, user=reviewer, query=ResultQuery(), name=bad),
            "name",
        ),
        (
            # Unvalidated: pydantic already refuses lone surrogates; the service
            # must still refuse whatever reaches it.
            lambda: queue_create(
                run=run, user=reviewer, query=ResultQuery.model_construct(q=bad)
            ),
            "q",
        ),
    ]
    for call, field in calls:
        with pytest.raises(ApplicationError) as info:
            call()
        assert list(info.value.field_errors) == [field]
    project.refresh_from_db()
    assert project.name == "Acme RAG"
    assert not (
        Override.objects.exists()
        or Comment.objects.exists()
        or ReviewQueue.objects.exists()
        or AuditEvent.objects.exists()
    )
