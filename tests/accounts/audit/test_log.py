"""The project's audit log: the page (with its filters and pager), the API and the
CSV export show the same events, to members only."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from evalsite.accounts.models import AuditEvent, Role
from evalsite.accounts.services.audit import audit_event
from evalsite.exports.audit import AUDIT_COLUMNS
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    ResultFactory,
    RunFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _event(project, actor, action, *, days_ago=0, **fields):
    event = audit_event(
        project=project,
        actor=actor,
        action=action,
        summary=fields.pop("summary", f"{action} by {actor}"),
        **fields,
    )
    if days_ago:
        AuditEvent.objects.filter(pk=event.pk).update(
            created_at=timezone.now() - timedelta(days=days_ago)
        )
    return event


@pytest.fixture
def log(project, owner, reviewer):
    run = RunFactory(project=project, name="nightly")
    return {
        "start": _event(
            project, owner, "run.start", run=run, object_label="nightly", days_ago=3
        ),
        "judge": _event(
            project,
            owner,
            "judge.change",
            object_type="judge",
            object_label="gpt",
            before={"model": "a"},
            after={"model": "=HYPERLINK(1)"},
            days_ago=1,
        ),
        "comment": _event(project, reviewer, "comment.create", run=run),
    }


def _ids(events) -> list[int]:
    return [e["id"] for e in events]


def test_the_api_lists_the_log_newest_first_with_every_field(client, owner, log):
    client.force_login(owner)
    project = log["start"].project
    body = client.get(f"/api/projects/{project.pk}/audit").json()
    assert body["count"] == 3
    assert _ids(body["items"]) == [log["comment"].pk, log["judge"].pk, log["start"].pk]
    judge = body["items"][1]
    assert judge["actor"] == "olivia" and judge["object_type"] == "judge"
    assert (judge["before"], judge["after"]) == (
        {"model": "a"},
        {"model": "=HYPERLINK(1)"},
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("action=run.start", ["start"]),
        ("actor=rita", ["comment"]),
        ("object_type=judge", ["judge"]),
        ("object_type=run", ["start"]),
        ("since={d2}", ["comment", "judge"]),
        ("until={d2}", ["start"]),
        ("since={d3}&until={d1}", ["judge", "start"]),
        ("actor=nobody", []),
    ],
)
def test_filters_agree_on_page_api_and_export(client, owner, log, query, expected):
    today = timezone.localdate()
    query = query.format(
        d1=today - timedelta(days=1),
        d2=today - timedelta(days=2),
        d3=today - timedelta(days=3),
    )
    client.force_login(owner)
    project = log["start"].project
    want = [log[name].pk for name in expected]
    api = client.get(f"/api/projects/{project.pk}/audit?{query}").json()
    assert _ids(api["items"]) == want
    page = client.get(f"/projects/{project.pk}/audit/?{query}")
    assert page.status_code == 200
    shown = [
        pk for pk in (e.pk for e in log.values()) if f'id="audit-{pk}"' in page.text
    ]
    assert sorted(shown) == sorted(want)
    for url in (
        f"/projects/{project.pk}/audit/export.csv?{query}",
        f"/api/projects/{project.pk}/audit/export.csv?{query}",
    ):
        rows = list(csv.DictReader(io.StringIO(b"".join(client.get(url)).decode())))
        assert [int(r["id"]) for r in rows] == want


def test_the_csv_export_equals_the_rows_and_is_formula_safe(client, owner, log):
    client.force_login(owner)
    project = log["start"].project
    response = client.get(f"/projects/{project.pk}/audit/export.csv")
    assert response["Content-Type"].startswith("text/csv")
    assert "audit" in response["Content-Disposition"]
    reader = csv.reader(io.StringIO(b"".join(response.streaming_content).decode()))
    header, *rows = list(reader)
    assert tuple(header) == AUDIT_COLUMNS
    events = AuditEvent.objects.filter(project=project).order_by("-created_at", "-id")
    assert [int(r[0]) for r in rows] == [e.pk for e in events]
    by_id = {int(r[0]): dict(zip(header, r, strict=True)) for r in rows}
    judge = by_id[log["judge"].pk]
    assert (judge["actor"], judge["action"], judge["object_label"]) == (
        "olivia",
        "judge.change",
        "gpt",
    )
    assert judge["summary"] == log["judge"].summary
    assert judge["after"] == '{"model": "=HYPERLINK(1)"}'  # JSON: starts with {
    start = by_id[log["start"].pk]
    assert start["run_id"] == str(log["start"].run_id)


def test_a_formula_in_a_label_is_neutralised(client, owner, project):
    _event(project, owner, "dataset.upload", object_label="=cmd|' /C calc'!A0")
    client.force_login(owner)
    body = b"".join(client.get(f"/projects/{project.pk}/audit/export.csv")).decode()
    assert "'=cmd" in body


def test_the_page_pages_and_htmx_gets_the_events_only(client, owner, project):
    for _ in range(51):
        _event(project, owner, "scorer.create", object_type="scorer")
    client.force_login(owner)
    first = client.get(f"/projects/{project.pk}/audit/")
    assert "Page 1 of 2" in first.text and "<html" in first.text
    assert f'href="/projects/{project.pk}/audit/"' in first.text  # the nav link
    second = client.get(
        f"/projects/{project.pk}/audit/?action=scorer.create&page=2",
        HTTP_HX_REQUEST="true",
    )
    assert "<html" not in second.text and "Page 2 of 2" in second.text
    assert len(re.findall(r'id="audit-\d+"', second.text)) == 1


def test_bad_filters_are_400(client, owner, project):
    client.force_login(owner)
    assert client.get(f"/projects/{project.pk}/audit/?since=never").status_code == 400
    assert (
        client.get(f"/projects/{project.pk}/audit/export.csv?page=0").status_code == 400
    )
    assert client.get(f"/api/projects/{project.pk}/audit?since=x").status_code == 422


def test_other_projects_members_and_strangers_get_nothing(client, log, outsider):
    project = log["start"].project
    urls = [
        f"/projects/{project.pk}/audit/",
        f"/projects/{project.pk}/audit/export.csv",
        f"/api/projects/{project.pk}/audit",
        f"/api/projects/{project.pk}/audit/export.csv",
    ]
    for url in urls:
        assert client.get(url).status_code in (302, 401), url
    client.force_login(outsider)
    for url in urls:
        assert client.get(url).status_code == 404, url


def test_a_viewer_reads_the_log_without_invitation_emails(
    client, project, owner, viewer
):
    _event(
        project,
        owner,
        "invited",
        object_type="membership",
        after={"role": "viewer", "email": "new@example.com"},
    )
    client.force_login(viewer)
    body = client.get(f"/api/projects/{project.pk}/audit").json()
    assert body["items"][0]["after"] == {"role": "viewer"}
    export = b"".join(client.get(f"/projects/{project.pk}/audit/export.csv")).decode()
    assert "new@example.com" not in export
    client.force_login(owner)
    body = client.get(f"/api/projects/{project.pk}/audit").json()
    assert body["items"][0]["after"]["email"] == "new@example.com"


def test_events_of_another_project_never_show(client, owner, log):
    other = ProjectFactory()
    MembershipFactory(project=other, user=UserFactory(), role=Role.OWNER)
    _event(other, None, "run.start", summary="elsewhere")
    client.force_login(owner)
    project = log["start"].project
    body = client.get(f"/api/projects/{project.pk}/audit").json()
    assert body["count"] == 3 and "elsewhere" not in str(body)


def test_events_naming_a_deleted_result_still_show(client, owner, project):
    result = ResultFactory(run=RunFactory(project=project))
    event = _event(project, owner, "override.create", run=result.run, result=result)
    result.run.delete()
    client.force_login(owner)
    body = client.get(f"/api/projects/{project.pk}/audit").json()
    assert _ids(body["items"]) == [event.pk]
    assert body["items"][0]["result_id"] == result.pk


def test_a_blind_results_details_are_hidden_from_its_reviewer(
    client, project, owner, reviewer, viewer
):
    from tests.factories import QueueEntryFactory, ReviewQueueFactory

    result = ResultFactory(run=RunFactory(project=project))
    queue = ReviewQueueFactory(project=project, run=result.run, blind=True, size=1)
    QueueEntryFactory(queue=queue, result=result, position=1)
    _event(
        project,
        owner,
        "override.create",
        run=result.run,
        result=result,
        summary="olivia flipped pass to fail",
        after={"passed": False},
    )
    client.force_login(reviewer)
    item = client.get(f"/api/projects/{project.pk}/audit").json()["items"][0]
    assert "flipped" not in item["summary"] and item["after"] is None
    export = b"".join(client.get(f"/projects/{project.pk}/audit/export.csv")).decode()
    assert "flipped" not in export
    assert "flipped" not in client.get(f"/projects/{project.pk}/audit/").text
    client.force_login(viewer)  # answers no queue, so nothing is blind to them
    item = client.get(f"/api/projects/{project.pk}/audit").json()["items"][0]
    assert item["summary"] == "olivia flipped pass to fail"


def test_api_refuses_a_filter_the_database_cannot_hold(client, project, owner):
    """A NUL in a filter (found by the API fuzzer) is bad input, not a server error."""
    client.force_login(owner)
    for name in ("action", "actor", "object_type"):
        response = client.get(f"/api/projects/{project.pk}/audit", {name: "run\x00"})
        assert response.status_code == 422, name
        assert "NUL" in response.content.decode()
