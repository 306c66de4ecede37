from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import Role
from evalsite.review.estimates.annotators import annotator_test
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import Review
from evalsite.review.queues.services import queue_create
from tests.conftest import login
from tests.factories import MembershipFactory, UserFactory
from tests.review.estimates.builders import biased_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return biased_run(project, n_items=40)


@pytest.fixture
def reviewers(project):
    users = []
    for name in ("ana", "ben", "cyd"):
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role=Role.REVIEWER)
        users.append(user)
    return users


def _answers(run, owner, reviewers, *, items):
    """Each reviewer answers the first `items` results; ana and ben agree with the
    judge, cyd disagrees on every third result."""
    queue = queue_create(
        run=run, user=owner, query=ResultQuery(), overlap=3, final_rule="majority"
    )
    results = list(run.results.order_by("item__index")[:items])
    Review.objects.bulk_create(
        Review(
            queue=queue,
            result=r,
            reviewer=user,
            passed=r.judge_passed
            if (user.username != "cyd" or i % 3)
            else not r.judge_passed,
        )
        for user in reviewers
        for i, r in enumerate(results)
    )


def test_annotator_test_refuses_with_too_few_shared_results(run, owner, reviewers):
    _answers(run, owner, reviewers, items=10)
    verdict = annotator_test(run_scorer=run.run_scorers.get())
    assert verdict.test is None
    assert verdict.items == 10 and verdict.reviewers == 3
    assert "needs" in verdict.refusal
    assert sum(n for _, n in verdict.more_items) > 0


def test_annotator_test_refuses_without_any_overlap(run):
    verdict = annotator_test(run_scorer=run.run_scorers.get())
    assert verdict.test is None and verdict.items == 0
    assert "at least 2 human answers" in verdict.refusal


def test_annotator_test_runs_with_three_reviewers_and_a_wider_margin_helps(
    run, owner, reviewers
):
    _answers(run, owner, reviewers, items=40)
    rs = run.run_scorers.get()
    strict = annotator_test(run_scorer=rs, epsilon=0.0)
    lenient = annotator_test(run_scorer=rs, epsilon=0.5)
    assert strict.test is not None and lenient.test is not None
    assert {o.reviewer for o in strict.test.reviewers} == {"ana", "ben", "cyd"}
    assert lenient.test.winning_rate >= strict.test.winning_rate
    # The judge always agrees with ana and ben, so it beats cyd (who does not).
    cyd = next(o for o in lenient.test.reviewers if o.reviewer == "cyd")
    assert cyd.rejected and cyd.rho_judge > cyd.rho_human


def test_agreement_page_shows_the_test_and_its_margin(
    client, project, run, owner, reviewers
):
    _answers(run, owner, reviewers, items=40)
    login(client, owner)
    url = reverse("review:agreement", args=[project.pk, run.pk])
    html = client.get(url, {"epsilon": "0.2"}).content.decode()
    assert 'id="annotator-verdict-1"' in html
    assert "ε = 0.2" in html
    assert client.get(url, {"epsilon": "2"}).status_code == 400


def test_agreement_page_says_what_the_test_still_needs(client, project, run, owner):
    login(client, owner)
    html = client.get(reverse("review:agreement", args=[project.pk, run.pk])).content
    assert b'id="annotator-refusal-1"' in html
    assert b"Cannot run yet" in html
