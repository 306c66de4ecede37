from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.evals.results.comments import comment_create
from evalsite.evals.results.verdicts import override_create, result_accept
from tests.conftest import login
from tests.factories import AuditEventFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return make_run(project, n_items=2)


def _url(run, **params):
    from urllib.parse import urlencode

    base = reverse("review:run_audit", args=[run.project_id, run.pk])
    return f"{base}?{urlencode(params)}" if params else base


def test_run_audit_lists_who_when_action_before_after(client, reviewer, viewer, run):
    result = run.results.order_by("id").first()
    override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.0.verdict",
        value="no",
    )
    comment_create(result=result, user=reviewer, body="checked")
    login(client, viewer)
    response = client.get(_url(run))
    body = response.content.decode()
    assert response.status_code == 200
    assert "override.create" in body and "comment.create" in body
    assert "rita" in body
    assert "changes" in body  # before → after details
    # newest first
    assert body.index("comment.create") < body.index("override.create")


def test_run_audit_filters_by_action_and_htmx_partial(client, reviewer, run):
    result = run.results.order_by("id").first()
    comment_create(result=result, user=reviewer, body="a")
    result_accept(result=result, user=reviewer)
    login(client, reviewer)
    response = client.get(
        _url(run, action="comment.create"), headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="audit-events"')
    assert "comment.create" in body and "result.accept" not in body


def test_run_audit_does_not_show_other_runs(client, reviewer, project, run):
    other = make_run(project, n_items=1)
    comment_create(result=other.results.get(), user=reviewer, body="elsewhere")
    login(client, reviewer)
    assert "elsewhere" not in client.get(_url(run)).content.decode()


def test_run_audit_paginates(client, reviewer, run):
    result = run.results.order_by("id").first()
    for i in range(55):
        AuditEventFactory(
            project=run.project,
            run=run,
            result=result,
            actor=reviewer,
            action="x",
            summary=f"e{i}",
        )
    login(client, reviewer)
    page1 = client.get(_url(run))
    assert page1.context["page_obj"].paginator.num_pages == 2
    assert "Older →" in page1.content.decode()
    assert len(client.get(_url(run, page=2)).context["page_obj"]) == 5


def test_run_audit_permissions_and_methods(client, run, outsider, reviewer):
    login(client, outsider)
    assert client.get(_url(run)).status_code == 404
    login(client, reviewer)
    assert client.post(_url(run)).status_code == 405
    assert client.get(_url(run, page="abc")).status_code == 400


def test_result_audit_partial_lists_only_that_result(client, reviewer, viewer, run):
    first, second = run.results.order_by("id")
    comment_create(result=first, user=reviewer, body="on first")
    comment_create(result=second, user=reviewer, body="on second")
    login(client, viewer)
    url = reverse("review:result_audit", args=[run.project_id, first.pk])
    body = client.get(url).content.decode()
    assert "on first" in body and "on second" not in body
    assert "<html" not in body
    login(client, reviewer)
    assert client.post(url).status_code == 405


def test_result_audit_outsider_404(client, outsider, run):
    login(client, outsider)
    url = reverse("review:result_audit", args=[run.project_id, run.results.first().pk])
    assert client.get(url).status_code == 404
