"""The agreement page after an answer: the latest figures at once, marked, while a
background task recounts them exactly; everything else stays exact."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from evalsite.accounts.models import Role
from evalsite.lib.tasks import task_send
from evalsite.review.estimates.annotators import annotator_test
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import FinalRule, QueueEntry
from evalsite.review.queues.services import queue_create
from evalsite.review.team.agreement import AGREEMENT_RECOUNT_TASK
from evalsite.review.team.selectors import agreement_report
from evalsite.review.team.services import review_answer
from tests.conftest import bearer, login
from tests.factories import MembershipFactory, UserFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

MARKER = "Recounting: these figures are as of"


@pytest.fixture
def second(project):
    user = UserFactory(username="bea")
    MembershipFactory(project=project, user=user, role=Role.REVIEWER)
    return user


@pytest.fixture
def setup(project, owner, reviewer, second):
    """Ten results in an overlap-2 queue; rita and bea agree on the first four."""
    run = make_run(project, n_items=10)
    queue = queue_create(
        run=run,
        user=owner,
        query=ResultQuery(sort="item"),
        overlap=2,
        final_rule=FinalRule.UNANIMOUS,
    )
    entries = list(QueueEntry.objects.filter(queue=queue).order_by("position"))
    for entry in entries[:4]:
        for user in (reviewer, second):
            review_answer(queue=queue, result=entry.result, user=user, passed=True)
    return run, queue, entries


@pytest.fixture
def sent(monkeypatch):
    """The tasks the page sends, recorded instead of run."""
    calls: list[tuple] = []
    monkeypatch.setattr(
        "evalsite.review.team.agreement.task_send", lambda *a, **k: calls.append(a)
    )
    return calls


def _disagree(queue, entries, reviewer, second, n=4):
    result = entries[n].result
    review_answer(queue=queue, result=result, user=reviewer, passed=True)
    review_answer(queue=queue, result=result, user=second, passed=False)


def _recount(run, queue) -> dict:
    """Every figure of the page counted from the answers, with no cache."""
    cache.clear()
    rs = run.run_scorers.get()
    return {
        "scorer": agreement_report(run_scorer=rs).as_dict(),
        "alt": annotator_test(run_scorer=rs),
        "queue": agreement_report(queue=queue).as_dict(),
    }


def _shown(response) -> dict:
    scorer = response.context["scorers"][0]
    return {
        "scorer": scorer["report"].as_dict(),
        "alt": replace(scorer["alt"], as_of=None),
        "queue": response.context["queues"][0]["report"].as_dict(),
    }


def test_first_load_counts_at_once(client, setup, owner, sent):
    run, queue, _ = setup
    page = login(client, owner).get(
        reverse("review:agreement", args=[run.project_id, run.pk])
    )
    assert page.status_code == 200
    body = page.content.decode()
    assert MARKER not in body and "every 2s" not in body
    assert sent == []
    assert _shown(page) == _recount(run, queue)
    assert _shown(page)["queue"]["percent_agreement"]["items"] == 4


def test_after_an_answer_the_page_shows_the_latest_figures_marked_then_the_recount(
    client, setup, owner, reviewer, second, sent
):
    run, queue, entries = setup
    url = reverse("review:agreement", args=[run.project_id, run.pk])
    poll = reverse("review:agreement_figures", args=[run.project_id, run.pk])
    login(client, owner)
    before = _shown(client.get(url))

    answered = timezone.now()
    _disagree(queue, entries, reviewer, second)

    first, again = client.get(url), client.get(url)
    for page in (first, again):
        body = page.content.decode()
        assert MARKER in body and "before the latest answers" in body
        assert 'role="status"' in body
        assert f'hx-get="{poll}"' in body and 'hx-trigger="every 2s"' in body
        assert _shown(page) == before  # the previous figures, not a mix
        assert page.context["as_of"] < answered
        assert page.context["scorers"][0]["alt"].as_of == page.context["as_of"]
    polled = client.get(poll, HTTP_HX_REQUEST="true")
    assert polled.status_code == 200  # still recounting: keeps polling
    assert MARKER in polled.content.decode()
    # Two loads and a poll by two viewers of one state: one recount.
    assert sent == [(AGREEMENT_RECOUNT_TASK, run.pk, 0.1)]

    task_send(*sent[0])  # eager: the worker's recount

    polled = client.get(poll, HTTP_HX_REQUEST="true")
    assert polled.status_code == 286  # htmx stops polling
    body = polled.content.decode()
    assert MARKER not in body and "every 2s" not in body
    assert 'id="agreement-figures"' in body and "<html" not in body
    page = client.get(url)
    assert MARKER not in page.content.decode()
    shown = _shown(page)
    assert shown["queue"]["percent_agreement"]["items"] == 5
    assert shown == _recount(run, queue)
    assert len(sent) == 1


def test_everything_but_the_page_stays_exact_after_an_answer(
    client, setup, owner, reviewer, second, sent
):
    run, queue, entries = setup
    login(client, owner).get(reverse("review:agreement", args=[run.project_id, run.pk]))
    headers = bearer(owner)
    api = f"/api/runs/{run.pk}/agreement"
    assert client.get(api, **headers).json()[0]["percent_agreement"]["items"] == 4

    _disagree(queue, entries, reviewer, second)

    body = client.get(api, **headers).json()[0]
    assert body["percent_agreement"]["items"] == 5
    assert body["percent_agreement"]["value"] == pytest.approx(0.8)
    queue_api = client.get(f"/api/queues/{queue.pk}/agreement", **headers).json()
    assert queue_api["percent_agreement"]["items"] == 5
    report = agreement_report(queue=queue)
    assert report.as_of is None and report.percent.items == 5
    assert annotator_test(run_scorer=run.run_scorers.get()).as_of is None
    assert _recount(run, queue)["queue"] == report.as_dict()


def test_the_poll_answers_the_page_without_htmx_and_keeps_epsilon(client, setup, owner):
    run, _, _ = setup
    poll = reverse("review:agreement_figures", args=[run.project_id, run.pk])
    response = login(client, owner).get(poll, {"epsilon": "0.2"})
    assert response.status_code == 302
    assert response.url == (
        reverse("review:agreement", args=[run.project_id, run.pk]) + "?epsilon=0.2"
    )
    assert client.get(poll, {"epsilon": "2"}, HTTP_HX_REQUEST="true").status_code == 400


def test_outsiders_get_404_and_the_poll_needs_a_login(client, setup, outsider):
    run, _, _ = setup
    page = reverse("review:agreement", args=[run.project_id, run.pk])
    poll = reverse("review:agreement_figures", args=[run.project_id, run.pk])
    anonymous = client.get(poll, HTTP_HX_REQUEST="true")
    assert anonymous.status_code in (302, 401)
    assert "login" in anonymous.get("Location", anonymous.get("HX-Redirect", ""))
    login(client, outsider)
    assert client.get(page).status_code == 404
    assert client.get(poll, HTTP_HX_REQUEST="true").status_code == 404
