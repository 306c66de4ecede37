"""The bias audit pages and API: who may read, who may start, isolation, errors."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evalsite.evals.models import BiasAudit, Run
from tests.conftest import bearer, login
from tests.evals.audits.conftest import start_audit
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def _list_url(run):
    return reverse("evals:bias_audits", args=[run.project_id, run.pk])


def _start_url(run):
    return reverse("evals:bias_audit_start", args=[run.project_id, run.pk])


def _detail_url(audit):
    return reverse(
        "evals:bias_audit_detail", args=[audit.project_id, audit.run_id, audit.pk]
    )


@pytest.fixture
def audit(project, owner, judged_run, django_capture_on_commit_callbacks):
    return start_audit(
        project,
        owner,
        judged_run,
        judged_run.run_scorers.get(kind="factuality"),
        django_capture_on_commit_callbacks,
        sample_size=6,
        seed=2,
    )


def test_owner_starts_an_audit_from_the_page_and_sees_its_figures(
    client, owner, judged_run, django_capture_on_commit_callbacks
):
    login(client, owner)
    page = client.get(_list_url(judged_run))
    assert page.status_code == 200
    assert b'id="bias-audit-form"' in page.content
    rs = judged_run.run_scorers.get(kind="factuality")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            _start_url(judged_run),
            {"run_scorer": rs.pk, "sample_size": 4, "seed": 5},
        )
    audit = BiasAudit.objects.get()
    assert response.status_code == 302
    assert response["Location"] == _detail_url(audit)
    detail = client.get(_detail_url(audit))
    html = detail.content.decode()
    assert detail.status_code == 200
    assert 'id="bias-change-swapped"' in html
    assert "Not applicable" not in html  # factuality: every change applies
    assert f"<strong>{4 * 5}</strong> of {4 * 5} judged" in html


def test_the_figures_region_stops_polling_once_the_audit_run_finished(
    client, owner, audit
):
    login(client, owner)
    response = client.get(_detail_url(audit), HTTP_HX_REQUEST="true")
    assert response.status_code == 286  # htmx: stop polling
    assert (
        response.content.decode()
        .lstrip()
        .startswith('<section id="bias-audit-figures"')
    )
    Run.objects.filter(pk=audit.audit_run_id).update(status=Run.Status.RUNNING)
    response = client.get(_detail_url(audit), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert 'hx-trigger="every 1s"' in response.content.decode()


@pytest.mark.parametrize("role", ["reviewer", "viewer"])
def test_only_owners_start_an_audit(request, client, judged_run, role):
    user = request.getfixturevalue(role)
    login(client, user)
    page = client.get(_list_url(judged_run))
    assert page.status_code == 200
    assert b'id="bias-audit-form"' not in page.content
    rs = judged_run.run_scorers.get(kind="factuality")
    response = client.post(_start_url(judged_run), {"run_scorer": rs.pk})
    assert response.status_code == 403
    api = client.post(
        f"/api/runs/{judged_run.pk}/bias-audits",
        data=json.dumps({"run_scorer_id": rs.pk}),
        content_type="application/json",
        **bearer(user),
    )
    assert api.status_code == 403
    assert not BiasAudit.objects.exists()


@pytest.mark.parametrize("role", ["reviewer", "viewer"])
def test_members_read_audits(request, client, audit, role):
    user = request.getfixturevalue(role)
    login(client, user)
    assert client.get(_detail_url(audit)).status_code == 200
    data = client.get(f"/api/bias-audits/{audit.pk}", **bearer(user)).json()
    assert data["id"] == audit.pk


def test_outsiders_get_404_everywhere(client, outsider, audit, judged_run):
    login(client, outsider)
    assert client.get(_list_url(judged_run)).status_code == 404
    assert client.get(_detail_url(audit)).status_code == 404
    assert client.post(_start_url(judged_run), {}).status_code == 404
    headers = bearer(outsider)
    assert client.get(f"/api/bias-audits/{audit.pk}", **headers).status_code == 404
    assert (
        client.get(f"/api/runs/{judged_run.pk}/bias-audits", **headers).status_code
        == 404
    )
    assert (
        client.post(
            f"/api/runs/{judged_run.pk}/bias-audits",
            data=json.dumps({"run_scorer_id": 1}),
            content_type="application/json",
            **headers,
        ).status_code
        == 404
    )


def test_another_projects_run_in_the_url_is_a_404(client, owner, audit):
    login(client, owner)
    other = ProjectFactory()
    url = reverse("evals:bias_audit_detail", args=[other.pk, audit.run_id, audit.pk])
    assert client.get(url).status_code == 404
    # An audit under another run of the same project is not found either.
    url = reverse(
        "evals:bias_audit_detail", args=[audit.project_id, audit.audit_run_id, audit.pk]
    )
    assert client.get(url).status_code == 404


def test_wrong_method_is_405(client, owner, audit, judged_run):
    login(client, owner)
    assert client.post(_detail_url(audit)).status_code == 405
    assert client.get(_start_url(judged_run)).status_code == 405


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"sample_size": 0, "seed": 0}, "greater than or equal to 1"),
        ({"sample_size": 5000, "seed": 0}, "less than or equal to 1000"),
    ],
)
def test_page_refuses_bad_input_with_a_clear_error(
    client, owner, judged_run, data, message
):
    login(client, owner)
    rs = judged_run.run_scorers.get(kind="factuality")
    response = client.post(_start_url(judged_run), {"run_scorer": rs.pk, **data})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not BiasAudit.objects.exists()


def test_page_refuses_a_scorer_without_judge(client, owner, judged_run):
    login(client, owner)
    rs = judged_run.run_scorers.get(kind="content_similarity")
    response = client.post(
        _start_url(judged_run), {"run_scorer": rs.pk, "sample_size": 5, "seed": 0}
    )
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()


def test_api_starts_lists_and_reads_an_audit(
    client, owner, judged_run, django_capture_on_commit_callbacks
):
    headers = bearer(owner)
    rs = judged_run.run_scorers.get(kind="faithfulness")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/runs/{judged_run.pk}/bias-audits",
            data=json.dumps({"run_scorer_id": rs.pk, "sample_size": 3, "seed": 9}),
            content_type="application/json",
            **headers,
        )
    assert response.status_code == 202, response.content
    audit_id = response.json()["id"]
    listed = client.get(f"/api/runs/{judged_run.pk}/bias-audits", **headers).json()
    assert [a["id"] for a in listed["items"]] == [audit_id]
    data = client.get(f"/api/bias-audits/{audit_id}", **headers).json()
    assert data["status"] == "done" and data["sampled"] == 3 and data["seed"] == 9
    changes = {c["change"]: c for c in data["changes"]}
    assert changes["swapped"]["applicable"] is False
    assert "no order to swap" in changes["swapped"]["not_applicable"]
    unchanged = changes["unchanged"]
    assert unchanged["compared"] == 3 and unchanged["same"] == 3
    assert unchanged["share_same"] == 1.0
    assert 0 < unchanged["ci_low"] < 1 and unchanged["ci_high"] == 1.0


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"sample_size": 0}, "sample_size"),
        ({"sample_size": 10**6}, "sample_size"),
        ({"run_scorer_id": 999999}, "run_scorer_id"),
    ],
)
def test_api_refuses_bad_input(client, owner, judged_run, payload, field):
    rs = judged_run.run_scorers.get(kind="faithfulness")
    body = {"run_scorer_id": rs.pk, **payload}
    response = client.post(
        f"/api/runs/{judged_run.pk}/bias-audits",
        data=json.dumps(body),
        content_type="application/json",
        **bearer(owner),
    )
    assert response.status_code == 400, response.content
    assert field in json.dumps(response.json())
    assert not BiasAudit.objects.exists()
