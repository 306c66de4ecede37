"""Work that finds the reviewer: "N waiting for you" (overview, navigation, My queue,
API) equal to a recount from the raw rows; skip and flag in every queue kind; the
flagged list; withdrawing an overlap answer (key u)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.accounts.models import REVIEW_ROLES, AuditEvent, Membership, Role
from evalsite.evals.models import Result
from evalsite.evals.results.verdicts import result_accept
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import (
    FinalRule,
    PairwiseItem,
    Preference,
    QueueEntry,
    QueueFlag,
    Review,
    ReviewQueue,
)
from evalsite.review.queues.services import queue_create
from evalsite.review.queues.waiting import queue_next_waiting, waiting_for
from evalsite.review.team.services import review_answer
from tests.conftest import bearer, login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import judged_claims, make_run, queue_card_key
from tests.review.pairwise_builders import make_model_runs, pairwise_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def second(project):
    user = UserFactory(username="bea")
    MembershipFactory(project=project, user=user, role=Role.REVIEWER)
    return user


def _entry(queue: ReviewQueue, position: int) -> QueueEntry:
    return QueueEntry.objects.select_related("result").get(
        queue=queue, position=position
    )


def recount(project, user) -> tuple[dict[int, int], int]:
    """What waits for `user`, counted row by row in Python from the tables."""
    membership = Membership.objects.filter(project=project, user=user).first()
    if membership is None or membership.role not in REVIEW_ROLES:
        return {}, 0
    open_entries = set(
        QueueFlag.objects.filter(
            resolved_at__isnull=True, entry__isnull=False
        ).values_list("entry_id", flat=True)
    )
    open_pairs = set(
        QueueFlag.objects.filter(
            resolved_at__isnull=True, pair__isnull=False
        ).values_list("pair_id", flat=True)
    )
    by_queue: dict[int, int] = {}
    for entry in QueueEntry.objects.filter(queue__project=project).select_related(
        "queue", "result"
    ):
        result = entry.result
        if (
            result.status != Result.Status.OK
            or entry.pk in open_entries
            or entry.queue.archived
        ):
            continue
        if entry.queue.overlap == 1:
            waits = not result.reviewed and result.assignee_id in (None, user.pk)
        else:
            mine = Review.objects.filter(
                queue=entry.queue, result=result, reviewer=user, kind="answer"
            ).exists()
            waits = entry.state == QueueEntry.State.OPEN and not mine
        if waits:
            by_queue[entry.queue_id] = by_queue.get(entry.queue_id, 0) + 1
    for pair in PairwiseItem.objects.filter(queue__project=project).select_related(
        "queue"
    ):
        mine = Preference.objects.filter(pair=pair, reviewer=user).exists()
        if (
            pair.answers < pair.queue.overlap
            and not mine
            and pair.pk not in open_pairs
            and not pair.queue.archived
        ):
            by_queue[pair.queue_id] = by_queue.get(pair.queue_id, 0) + 1
    queued = set(QueueEntry.objects.values_list("result_id", flat=True))
    assigned = sum(
        1
        for r in Result.objects.filter(
            run__project=project, assignee=user
        ).select_related("run")
        if not r.reviewed
        and r.status == Result.Status.OK
        and r.pk not in queued
        and not r.run.archived
    )
    return by_queue, assigned


@pytest.fixture
def day(project, owner, reviewer, second, viewer):
    """A single-review queue (one result assigned to `second`, one errored), an
    overlap queue answered in part, and assigned results in no queue."""
    run_a = make_run(project, n_items=6)
    single = queue_create(
        run=run_a, user=owner, query=ResultQuery(sort="item"), name="single"
    )
    Result.objects.filter(pk=_entry(single, 3).result_id).update(assignee=second)
    Result.objects.filter(pk=_entry(single, 6).result_id).update(
        status=Result.Status.ERROR
    )
    queue_card_key(queue=single, position=1, user=reviewer, key="pass")
    queue_card_key(queue=single, position=2, user=second, key="accept")
    QueueFlag.objects.create(
        project=project,
        queue=single,
        entry=_entry(single, 4),
        reason="the output is cut off",
        flagged_by=reviewer,
    )
    analyses = [judged_claims("yes", "yes")] * 4
    run_b = make_run(project, n_items=4, analyses={"faithfulness": analyses})
    team = queue_create(
        run=run_b,
        user=owner,
        query=ResultQuery(sort="item"),
        name="team",
        overlap=2,
        final_rule=FinalRule.UNANIMOUS,
        blind=True,
    )
    for user, position in ((reviewer, 1), (reviewer, 2), (second, 1), (second, 3)):
        entry = _entry(team, position)
        review_answer(queue=team, result=entry.result, user=user, passed=True)
    run_c = make_run(project, n_items=3)
    Result.objects.filter(run=run_c).update(assignee=reviewer)
    result_accept(result=run_c.results.order_by("item__index").first(), user=reviewer)
    return {"single": single, "team": team}


def test_waiting_counts_equal_a_recount_for_every_member(
    day, project, owner, reviewer, second, viewer
):
    single, team = day["single"], day["team"]
    assert _entry(team, 1).state == QueueEntry.State.DECIDED
    expected = {
        # single: only item 5 (1, 2 reviewed, 3 a teammate's, 4 flagged, 6 errored);
        # team: items 3 and 4; and two assigned results in no queue.
        reviewer: ({single.pk: 1, team.pk: 2}, 2),
        second: ({single.pk: 2, team.pk: 2}, 0),
        owner: ({single.pk: 1, team.pk: 3}, 0),
        viewer: ({}, 0),
    }
    for user, (by_queue, assigned) in expected.items():
        assert recount(project, user) == (by_queue, assigned), user
        waiting = waiting_for(project_id=project.pk, user=user)
        assert (waiting.by_queue, waiting.assigned) == (by_queue, assigned), user
        assert waiting.total == sum(by_queue.values()) + assigned


def test_archived_queues_and_runs_wait_for_nobody(day, project, owner, reviewer):
    from evalsite.evals.runs.services import run_set_archived
    from evalsite.review.queues.services import queue_set_archived

    queue_set_archived(queue=day["team"], user=owner, archived=True)
    assigned_run = Result.objects.filter(assignee=reviewer, reviewed=False).first().run
    run_set_archived(run=assigned_run, user=owner, archived=True)
    waiting = waiting_for(project_id=project.pk, user=reviewer)
    assert (waiting.by_queue, waiting.assigned) == recount(project, reviewer)
    assert waiting.by_queue == {day["single"].pk: 1}
    assert waiting.assigned == 0


def test_an_assigned_result_in_two_queues_waits_in_them_not_as_assigned(
    day, project, owner, reviewer
):
    # The badge counts the assigned results in no queue as all assigned results
    # less the queued ones: a result queued twice is taken off once.
    run_d = make_run(project, n_items=3)
    Result.objects.filter(run=run_d).update(assignee=reviewer)
    twice = run_d.results.order_by("item__index").first()
    for name in ("first", "again"):
        queue_create(
            run=run_d,
            user=owner,
            query=ResultQuery(sort="item"),
            name=name,
            result_ids=[twice.pk],
        )
    waiting = waiting_for(project_id=project.pk, user=reviewer)
    assert (waiting.by_queue, waiting.assigned) == recount(project, reviewer)
    # Two of run_c's three (one accepted) and two of run_d's.
    assert waiting.assigned == 2 + 2


def test_a_project_without_queues_or_runs_waits_for_nobody(
    project, reviewer, django_assert_num_queries
):
    """Only the list of its open queues and runs is read: there is nothing to count."""
    with django_assert_num_queries(1):
        waiting = waiting_for(project_id=project.pk, user=reviewer)
    assert (waiting.by_queue, waiting.assigned, waiting.total) == ({}, 0, 0)


def test_waiting_is_two_queries(day, project, reviewer, django_assert_num_queries):
    """The project's open queues and runs, then every count in one UNION."""
    with django_assert_num_queries(2):
        waiting_for(project_id=project.pk, user=reviewer)


def test_pages_and_api_show_the_recounted_numbers(
    client, day, project, reviewer, second
):
    for user in (reviewer, second):
        by_queue, assigned = recount(project, user)
        total = sum(by_queue.values()) + assigned
        login(client, user)
        overview = client.get(reverse("accounts:project", args=[project.pk])).content
        assert f"{total} waiting for you".encode() in overview
        assert f'data-count="{total}"'.encode() in overview  # the navigation badge
        page = client.get(
            reverse("review:assigned", args=[project.pk])
        ).content.decode()
        assert f'id="waiting-total">{total}<' in page
        shown = {
            int(q): int(n)
            for q, n in re.findall(
                r'id="waiting-queue-(\d+)" data-waiting="(\d+)"', page
            )
        }
        assert shown == by_queue
        if assigned:
            assert f'id="waiting-assigned" data-waiting="{assigned}"' in page
        api = client.get(f"/api/projects/{project.pk}/waiting", **bearer(user)).json()
        assert (api["total"], api["assigned"]) == (total, assigned)
        assert {q["queue_id"]: q["waiting"] for q in api["queues"]} == by_queue


def test_answering_on_the_card_updates_the_badge(day, project, reviewer):
    single = day["single"]
    before = waiting_for(project_id=project.pk, user=reviewer).total
    response = queue_card_key(queue=single, position=5, user=reviewer, key="accept")
    badge = re.search(
        rb'<span id="nav-waiting" hx-swap-oob="true"[^>]*data-count="(\d+)"',
        response.content,
    )
    assert badge is not None
    assert (
        int(badge.group(1))
        == before - 1
        == sum(recount(project, reviewer)[0].values()) + 2
    )


def test_an_outsider_sees_no_badge_numbers_of_another_project(
    client, day, project, outsider
):
    login(client, outsider)
    assert (
        client.get(
            f"/api/projects/{project.pk}/waiting", **bearer(outsider)
        ).status_code
        == 404
    )
    assert client.get(reverse("review:assigned", args=[project.pk])).status_code == 404


# ------------------------------------------------------------------ skip


def test_skip_leads_to_the_next_waiting_item_and_wraps(client, day, project, reviewer):
    team = day["team"]
    login(client, reviewer)
    url = reverse("review:queue", args=[project.pk, team.pk])
    card = client.get(f"{url}?pos=3").content.decode()
    assert f'href="{url}?pos=4"' in card and 'data-key="s"' in card
    card = client.get(f"{url}?pos=4").content.decode()
    # Skipped item 3 comes round again; items 1 and 2 have the reviewer's answer.
    assert re.search(rf'href="{re.escape(url)}\?pos=3"[^>]*data-key="s"', card)
    headers = bearer(reviewer)
    skip = f"/api/queues/{team.pk}/items/4/skip"
    assert client.post(skip, **headers).json()["next_position"] == 3
    assert (
        client.post(f"/api/queues/{team.pk}/items/3/skip", **headers).json()[
            "next_position"
        ]
        == 4
    )
    # Skipping records nothing: the item still waits.
    assert recount(project, reviewer)[0][team.pk] == 2


def test_the_badge_read_with_skip_gives_both_as_they_are_read_apart(
    day, project, owner, reviewer, second, viewer
):
    """The card reads the badge and where Skip leads in one query: each equals its
    own read, at every position of both queue kinds (wrapping, and nothing else
    waiting included), for every member."""
    for user in (owner, reviewer, second, viewer):
        alone = waiting_for(project_id=project.pk, user=user)
        for queue in (day["single"], day["team"]):
            for position in range(1, queue.size + 2):
                both = waiting_for(
                    project_id=project.pk, user=user, around=(queue.pk, position)
                )
                assert (both.by_queue, both.assigned) == (
                    alone.by_queue,
                    alone.assigned,
                )
                assert both.following == queue_next_waiting(
                    queue=queue, user=user, after=position
                ), (user, queue.name, position)


def test_skip_when_nothing_else_waits_says_so(client, day, project, reviewer):
    single = day["single"]
    login(client, reviewer)
    card = client.get(
        reverse("review:queue", args=[project.pk, single.pk]) + "?pos=5"
    ).content.decode()
    assert 'id="queue-skip-none"' in card and 'data-key="s"' not in card
    response = client.post(f"/api/queues/{single.pk}/items/5/skip", **bearer(reviewer))
    assert response.json() == {"next_position": None, "url": None}


# ------------------------------------------------------------------ flag


def _flag_url(queue, position):
    return reverse("review:queue_flag", args=[queue.project_id, queue.pk, position])


def test_flag_needs_a_reason_and_keeps_what_was_typed(client, day, project, reviewer):
    team = day["team"]
    login(client, reviewer)
    before = QueueFlag.objects.count()
    response = client.post(
        _flag_url(team, 3), {"reason": "   "}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert b'id="flag-reason-error"' in response.content
    assert b"Say why you flag this item." in response.content
    assert QueueFlag.objects.count() == before


def test_flag_records_who_and_why_audits_and_moves_on(client, day, project, reviewer):
    team = day["team"]
    login(client, reviewer)
    response = client.post(
        _flag_url(team, 3), {"reason": "input <b>garbled</b>"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    flag = QueueFlag.objects.get(entry=_entry(team, 3), resolved_at__isnull=True)
    assert (flag.flagged_by, flag.reason) == (reviewer, "input <b>garbled</b>")
    # The card moved on to the next item waiting for the reviewer.
    assert response["HX-Push-Url"].endswith("?pos=4")
    assert b'data-position="4"' in response.content
    event = AuditEvent.objects.get(action="queue.flag")
    assert event.actor == reviewer and "garbled" in event.summary
    # It waits for nobody now, and the card of that item says it is flagged.
    assert recount(project, reviewer)[0][team.pk] == 1
    assert waiting_for(project_id=project.pk, user=reviewer).by_queue[team.pk] == 1
    card = client.get(
        reverse("review:queue", args=[project.pk, team.pk]) + "?pos=3"
    ).content
    assert b'id="open-flag"' in card and b"input &lt;b&gt;garbled&lt;/b&gt;" in card
    again = client.post(_flag_url(team, 3), {"reason": "x"}, HTTP_HX_REQUEST="true")
    assert b"already flagged" in again.content
    assert QueueFlag.objects.filter(entry=_entry(team, 3)).count() == 1


def test_flag_permissions_isolation_and_csrf(
    client, day, project, viewer, outsider, reviewer
):
    team = day["team"]
    login(client, viewer)
    assert client.post(_flag_url(team, 3), {"reason": "x"}).status_code == 403
    login(client, outsider)
    assert client.post(_flag_url(team, 3), {"reason": "x"}).status_code == 404
    # Another project's queue under this project's URL.
    other = ProjectFactory()
    MembershipFactory(project=other, user=reviewer, role=Role.REVIEWER)
    other_queue = queue_create(
        run=make_run(other, n_items=1), user=reviewer, query=ResultQuery()
    )
    login(client, reviewer)
    url = reverse("review:queue_flag", args=[project.pk, other_queue.pk, 1])
    assert client.post(url, {"reason": "x"}).status_code == 404
    assert client.post(_flag_url(team, 99), {"reason": "x"}).status_code == 404
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(reviewer)
    assert csrf.post(_flag_url(team, 3), {"reason": "x"}).status_code == 403
    assert not QueueFlag.objects.filter(queue=team).exists()


def test_flagged_list_and_owner_resolves(client, day, project, owner, reviewer):
    single = day["single"]
    flag = QueueFlag.objects.get(queue=single)
    login(client, reviewer)
    page = client.get(reverse("review:flagged", args=[project.pk])).content.decode()
    assert "the output is cut off" in page and "rita" in page
    assert "Resolve (unflag)" not in page
    resolve = reverse("review:flag_resolve", args=[project.pk, flag.pk])
    assert client.post(resolve, {}).status_code == 403
    before = waiting_for(project_id=project.pk, user=reviewer).by_queue[single.pk]
    login(client, owner)
    assert (
        "Resolve (unflag)"
        in client.get(reverse("review:flagged", args=[project.pk])).content.decode()
    )
    response = client.post(resolve, {"note": "fixed the item"})
    assert response.status_code == 302
    flag.refresh_from_db()
    assert (flag.resolved_by, flag.resolution) == (owner, "fixed the item")
    assert AuditEvent.objects.filter(action="queue.unflag", actor=owner).count() == 1
    # The item waits again.
    after = waiting_for(project_id=project.pk, user=reviewer).by_queue[single.pk]
    assert after == before + 1 == recount(project, reviewer)[0][single.pk]
    assert (
        "the output is cut off"
        not in client.get(reverse("review:flagged", args=[project.pk])).content.decode()
    )
    assert (
        "the output is cut off"
        in client.get(
            reverse("review:flagged", args=[project.pk]) + "?state=resolved"
        ).content.decode()
    )
    assert (
        client.get(
            reverse("review:flagged", args=[project.pk]) + "?state=nope"
        ).status_code
        == 400
    )
    # Resolving twice says so, and changes nothing.
    client.post(resolve, {"note": "again"})
    flag.refresh_from_db()
    assert flag.resolution == "fixed the item"


def test_flag_api(client, day, project, owner, reviewer, viewer, outsider):
    team = day["team"]
    url = f"/api/queues/{team.pk}/items/4/flag"
    empty = client.post(
        url, data={"reason": ""}, content_type="application/json", **bearer(reviewer)
    )
    assert empty.status_code in (400, 422)
    assert (
        client.post(
            url, data={"reason": "x"}, content_type="application/json", **bearer(viewer)
        ).status_code
        == 403
    )
    assert (
        client.post(
            url,
            data={"reason": "x"},
            content_type="application/json",
            **bearer(outsider),
        ).status_code
        == 404
    )
    assert (
        client.post(
            f"/api/queues/{team.pk}/items/77/flag",
            data={"reason": "x"},
            content_type="application/json",
            **bearer(reviewer),
        ).status_code
        == 404
    )
    created = client.post(
        url,
        data={"reason": "two answers in one"},
        content_type="application/json",
        **bearer(reviewer),
    )
    assert created.status_code == 201
    body = created.json()
    assert (body["position"], body["reason"], body["flagged_by"], body["open"]) == (
        4,
        "two answers in one",
        "rita",
        True,
    )
    assert body["result_id"] == _entry(team, 4).result_id
    duplicate = client.post(
        url, data={"reason": "x"}, content_type="application/json", **bearer(reviewer)
    )
    assert duplicate.status_code == 409
    listed = client.get(f"/api/projects/{project.pk}/flags", **bearer(viewer)).json()
    assert {f["reason"] for f in listed["items"]} == {
        "two answers in one",
        "the output is cut off",
    }
    assert (
        client.get(f"/api/projects/{project.pk}/flags", **bearer(outsider)).status_code
        == 404
    )
    resolve = f"/api/flags/{body['id']}/resolve"
    assert (
        client.post(
            resolve, data={}, content_type="application/json", **bearer(reviewer)
        ).status_code
        == 403
    )
    assert (
        client.post(
            resolve, data={}, content_type="application/json", **bearer(outsider)
        ).status_code
        == 404
    )
    done = client.post(
        resolve,
        data={"note": "split it"},
        content_type="application/json",
        **bearer(owner),
    )
    assert done.status_code == 200 and done.json()["open"] is False
    assert done.json()["resolved_by"] == "olivia"
    assert (
        client.post(
            resolve, data={}, content_type="application/json", **bearer(owner)
        ).status_code
        == 409
    )
    resolved = client.get(
        f"/api/projects/{project.pk}/flags?state=resolved", **bearer(owner)
    ).json()
    assert [f["id"] for f in resolved["items"]] == [body["id"]]
    bad = client.get(f"/api/projects/{project.pk}/flags?state=nope", **bearer(owner))
    assert bad.status_code == 400 and "state must be" in bad.json()["detail"]


def test_flag_and_skip_on_a_pairwise_card(client, project, reviewer):
    queue = pairwise_queue(make_model_runs(project, n=3), reviewer)
    login(client, reviewer)
    url = reverse("review:pairwise", args=[project.pk, queue.pk])
    card = client.get(f"{url}?pos=1").content.decode()
    assert f'href="{url}?pos=2"' in card and 'data-key="x"' in card
    response = client.post(
        _flag_url(queue, 1), {"reason": "same output twice"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    flag = QueueFlag.objects.get(queue=queue)
    assert flag.pair.position == 1 and flag.entry is None
    assert response["HX-Push-Url"].endswith("?pos=2")
    by_queue, _ = recount(project, reviewer)
    assert waiting_for(project_id=project.pk, user=reviewer).by_queue == by_queue
    assert by_queue[queue.pk] == queue.size - 1


# ------------------------------------------------------------------ withdraw (u)


def test_withdraw_an_overlap_answer_while_it_is_open(client, day, project, reviewer):
    team = day["team"]
    login(client, reviewer)
    entry = _entry(team, 2)
    assert entry.answers == 1
    url = reverse("review:queue_answer_withdraw", args=[project.pk, team.pk, 2])
    response = client.post(url, {"back": "1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    entry.refresh_from_db()
    assert (entry.answers, entry.answers_pass) == (0, 0)
    assert not Review.objects.filter(
        queue=team, result=entry.result, reviewer=reviewer
    ).exists()
    assert AuditEvent.objects.filter(action="review.answer_withdraw").count() == 1
    assert response["HX-Push-Url"].endswith("?pos=2")
    assert recount(project, reviewer)[0][team.pk] == 3
    # A decided entry keeps its answers.
    decided = reverse("review:queue_answer_withdraw", args=[project.pk, team.pk, 1])
    refused = client.post(decided, {}, HTTP_HX_REQUEST="true")
    assert b"already decided" in refused.content
    assert _entry(team, 1).answers == 2


def test_the_queue_opens_on_the_first_item_waiting_for_you(
    client, day, project, reviewer, second
):
    single = day["single"]
    url = reverse("review:queue", args=[project.pk, single.pk])
    # Items 1 and 2 are reviewed, 3 is a teammate's, 4 is flagged.
    login(client, reviewer)
    assert b'data-position="5"' in client.get(url).content
    login(client, second)
    assert b'data-position="3"' in client.get(url).content
