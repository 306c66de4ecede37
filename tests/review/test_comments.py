from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.review.models import Comment
from tests.conftest import login
from tests.factories import CommentFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def result(project):
    return make_run(project).results.get()


def _url(result):
    return reverse("review:comments", args=[result.run.project_id, result.pk])


def test_comment_htmx_post_returns_the_new_comment_to_append(client, reviewer, result):
    login(client, reviewer)
    response = client.post(
        _url(result),
        {"body": "Claim 2 is fine, see chunk 1."},
        headers={"HX-Request": "true"},
    )
    comment = Comment.objects.get()
    body = response.content.decode()
    assert response.status_code == 201
    assert body.lstrip().startswith(f'<li id="comment-{comment.pk}"')
    assert "Claim 2 is fine" in body and "rita" in body
    assert comment.user == reviewer and comment.result == result
    event = AuditEvent.objects.get(action="comment.create")
    assert (
        event.result_id == result.pk
        and event.actor == reviewer
        and event.after["body"].startswith("Claim 2")
    )


def test_comment_without_js_redirects_to_a_safe_next(client, reviewer, result):
    login(client, reviewer)
    response = client.post(_url(result), {"body": "ok", "next": "/projects/1/queue/"})
    assert response.status_code == 302 and response.url == "/projects/1/queue/"
    response = client.post(
        _url(result), {"body": "ok", "next": "https://evil.example/"}
    )
    assert response.status_code == 302 and "evil" not in response.url
    assert Comment.objects.count() == 2


@pytest.mark.parametrize("body", ["", "   ", "x" * 10_001])
def test_comment_rejects_empty_or_too_long(client, reviewer, result, body):
    login(client, reviewer)
    response = client.post(_url(result), {"body": body}, headers={"HX-Request": "true"})
    assert response.status_code == 400
    assert not Comment.objects.exists()


def test_comment_list_get_renders_partial_escaped(client, viewer, reviewer, result):
    CommentFactory(result=result, user=reviewer, body="<b>bold</b>")
    login(client, viewer)
    response = client.get(_url(result))
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith(f'<section id="comments-{result.pk}"')
    assert "&lt;b&gt;bold&lt;/b&gt;" in body
    assert "<form" not in body  # viewers get no comment form


def test_comment_permissions(client, result, viewer, outsider):
    login(client, viewer)
    assert client.post(_url(result), {"body": "hi"}).status_code == 403
    login(client, outsider)
    assert client.post(_url(result), {"body": "hi"}).status_code == 404
    assert client.get(_url(result)).status_code == 404
    assert client.put(_url(result)).status_code in (404, 405)
    assert not Comment.objects.exists()


def test_comment_wrong_method_is_405(client, reviewer, result):
    login(client, reviewer)
    assert client.delete(_url(result)).status_code == 405


def test_comment_result_of_other_project_under_my_url_is_404(
    client, reviewer, outsider, result
):
    other = outsider.memberships.get().project
    login(client, reviewer)
    url = reverse("review:comments", args=[other.pk, result.pk])
    assert client.post(url, {"body": "x"}).status_code == 404
