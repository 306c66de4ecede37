"""Compare of many results: the rows at once, the figures counted by a worker while
the page polls for them; never a wrong figure meanwhile, and after any review the
figures equal a recount."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from evalsite.compare.figures import (
    COMPARE_FIGURES_TASK,
    compare_figures_count,
    compare_figures_lock,
)
from evalsite.compare.selectors import runs_compare
from evalsite.datasets.matching.selectors import MatchSpec
from evalsite.evals.results.rescore import run_rescore
from evalsite.evals.results.verdicts import override_create, override_revert
from tests.conftest import login
from tests.factories import DatasetFactory
from tests.review.builders import case_rows, judged_claims, make_run

pytestmark = pytest.mark.django_db

COUNTING = 'id="compare-counting"'


@pytest.fixture
def runs(project):
    ds = DatasetFactory(project=project, name="qa", rows=case_rows(4))
    kinds = ["faithfulness", "hallucination"]
    a = make_run(
        project,
        kinds=kinds,
        dataset=ds,
        analyses={
            "faithfulness": [
                judged_claims("yes", "yes"),
                judged_claims("yes", "no"),
                judged_claims("no", "no"),
                judged_claims("yes"),
            ]
        },
    )
    b = make_run(
        project,
        kinds=kinds,
        dataset=ds,
        analyses={
            "faithfulness": [
                judged_claims("yes", "no"),
                judged_claims("no", "no"),
                judged_claims("yes", "yes"),
                judged_claims("yes"),
            ]
        },
    )
    return a, b


@pytest.fixture
def background(settings):
    """Every compare's figures are left to the worker (as 2 × 1M results are)."""
    settings.COMPARE_FIGURES_IN_REQUEST_MAX = 0


@pytest.fixture
def sent(monkeypatch):
    """The counts the page sends, recorded instead of run."""
    calls: list[tuple] = []
    monkeypatch.setattr(
        "evalsite.compare.figures.task_send", lambda *a, **k: calls.append(a)
    )
    return calls


def _urls(project, a, b, extra=""):
    query = f"?a={a.pk}&b={b.pk}{extra}"
    return (
        reverse("compare:compare", args=[project.pk]) + query,
        reverse("compare:compare_figures", args=[project.pk]) + query,
    )


def _poll(client, url):
    return client.get(url, headers={"HX-Request": "true"})


def _recount(a, b) -> list[dict]:
    """Every pair's figures counted from the results, with no cache."""
    cache.clear()
    comparison = runs_compare(runs=[a, b], spec=MatchSpec())
    return [d.summary() for d in comparison.candidates[0].deltas]


def _shown(a, b) -> list[dict]:
    """The figures the page reads (cached only: an uncounted pair fails)."""
    comparison = runs_compare(runs=[a, b], spec=MatchSpec(), count_max=0)
    assert not comparison.uncounted
    return [d.summary() for d in comparison.candidates[0].deltas]


def _count(a, b) -> None:
    compare_figures_count(run_ids=[a.pk, b.pk], match="key", key="id")


def test_compare_page_lists_rows_while_figures_are_counted(
    client, viewer, project, runs, background, sent
):
    a, b = runs
    page, _ = _urls(project, a, b, "&per_page=2")
    resp = login(client, viewer).get(page, headers={"HX-Request": "true"})
    html = resp.content.decode()
    assert resp.status_code == 200
    assert COUNTING in html and 'role="status"' in html
    assert 'data-stat="counting"' in html and 'data-stat="mean-delta"' not in html
    # No figure of an uncounted pair: not the filters' counts, not the page count,
    # not the corrected difference.
    assert "Regressed (" not in html and 'id="compare-corrected"' not in html
    assert 'id="compare-page-count">page 1</span>' in html
    assert html.count('data-item="') == 2 and "next →" in html
    assert sent == [(COMPARE_FIGURES_TASK, [a.pk, b.pk], "key", "id")]


def test_compare_page_sends_one_count_per_state(
    client, viewer, reviewer, project, runs, background, sent
):
    a, b = runs
    page, figures = _urls(project, a, b)
    login(client, viewer).get(page)
    login(client, viewer).get(page)
    _poll(client, figures)
    assert len(sent) == 1
    result = b.results.filter(run_scorer__kind="faithfulness").first()
    override_create(result=result, user=reviewer, kind="pass", value=False)
    login(client, viewer).get(page)
    assert len(sent) == 2


def test_compare_figures_poll_swaps_in_the_figures_once_counted(
    client, viewer, project, runs, background, sent
):
    a, b = runs
    _, figures = _urls(project, a, b, "&per_page=2&only=regressions")
    login(client, viewer)
    waiting = _poll(client, figures)
    assert waiting.status_code == 200 and COUNTING in waiting.content.decode()
    assert 'hx-trigger="every 1s"' in waiting.content.decode()
    _count(a, b)
    done = _poll(client, figures)
    html = done.content.decode()
    assert done.status_code == 286  # htmx stops polling
    assert COUNTING not in html and 'data-stat="mean-delta"' in html
    assert 'id="compare-figures"' in html and "hx-trigger" not in html
    comparison = runs_compare(runs=[a, b], spec=MatchSpec(), count_max=0)
    regressed = comparison.candidates[0].deltas[0].rows_by_only["regressions"]
    # The filters' counts and the page count, swapped in out of band.
    assert 'id="compare-filters" hx-swap-oob="true"' in html
    assert f"Regressed ({regressed})" in html
    pages = -(-regressed // 2)
    assert f'id="compare-page-count" hx-swap-oob="true">page 1 of {pages}<' in html
    assert _shown(a, b) == _recount(a, b)


def test_compare_figures_equal_a_recount_after_review_undo_and_rescore(
    client, viewer, reviewer, owner, project, runs, background, sent
):
    a, b = runs
    page, figures = _urls(project, a, b)
    login(client, viewer).get(page)
    _count(a, b)
    before = _shown(a, b)
    result = b.results.filter(run_scorer__kind="faithfulness").order_by("pk").first()
    override = override_create(result=result, user=reviewer, kind="score", value=0.0)
    html = login(client, viewer).get(page).content.decode()
    # The reviewed pair is counted again; the other pair's figures still hold.
    assert html.count('data-stat="counting"') == 1
    assert html.count('data-stat="mean-delta"') == 1
    _count(a, b)
    after_review = _shown(a, b)
    assert after_review != before and after_review == _recount(a, b)
    login(client, viewer).get(page)
    override_revert(override=override, user=reviewer)
    login(client, viewer).get(page)
    _count(a, b)
    assert _shown(a, b) == _recount(a, b) == before
    rs = b.run_scorers.get(kind="faithfulness")
    run_rescore(
        run=b,
        run_scorer=rs,
        options={**rs.options, "threshold": 0.9},
        user=owner,
        save=True,
    )
    assert COUNTING in login(client, viewer).get(page).content.decode()
    _count(a, b)
    assert _shown(a, b) == _recount(a, b)
    assert _poll(client, figures).status_code == 286


def test_compare_figures_sent_to_the_worker_reach_the_page(
    client, viewer, project, runs, background
):
    """The task wiring: sent by name (eager in tests), counted, then polled."""
    a, b = runs
    page, figures = _urls(project, a, b)
    assert COUNTING in login(client, viewer).get(page).content.decode()
    done = _poll(client, figures)
    assert done.status_code == 286 and 'data-stat="mean-delta"' in done.content.decode()


def test_small_compares_count_their_figures_in_the_request(
    client, viewer, project, runs, sent
):
    a, b = runs
    page, _ = _urls(project, a, b)
    html = login(client, viewer).get(page).content.decode()
    assert COUNTING not in html and 'data-stat="mean-delta"' in html and not sent


def test_unfinished_runs_count_their_figures_in_the_request(
    client, viewer, project, runs, background, sent
):
    """Figures of a run still scoring have no state to cache them under, so no
    worker could hand them over: they are counted in the request."""
    a, b = runs
    b.status = b.Status.RUNNING
    b.finished_at = None
    b.save(update_fields=["status", "finished_at"])
    html = login(client, viewer).get(_urls(project, a, b)[0]).content.decode()
    assert COUNTING not in html and 'data-stat="mean-delta"' in html and not sent


def test_compare_figures_access(
    client, viewer, outsider, project, runs, background, sent
):
    a, b = runs
    _, figures = _urls(project, a, b)
    assert _poll(login(client, outsider), figures).status_code == 404
    assert not sent
    other = make_run(outsider.memberships.get().project)
    foreign = reverse("compare:compare_figures", args=[project.pk])
    foreign += f"?a={a.pk}&b={other.pk}"
    assert _poll(login(client, viewer), foreign).status_code == 404
    assert _poll(login(client, viewer), figures).status_code == 200
    assert login(client, viewer).post(figures).status_code == 405
    # Without htmx: the page itself.
    resp = login(client, viewer).get(figures)
    assert resp.status_code == 302 and resp["Location"] == _urls(project, a, b)[0]


def test_compare_figures_refuses_an_invalid_query(
    client, viewer, project, runs, background
):
    a, _ = runs
    url = reverse("compare:compare_figures", args=[project.pk])
    assert _poll(login(client, viewer), f"{url}?a={a.pk}&b=x").status_code == 400
    resp = _poll(login(client, viewer), f"{url}?a={a.pk}&b={a.pk}")
    assert resp.status_code == 400


def test_compare_figures_count_of_a_deleted_run_or_a_bad_rule_does_nothing(
    project, runs, sent
):
    a, b = runs
    compare_figures_count(run_ids=[a.pk, b.pk + 1000], match="key", key="id")
    compare_figures_count(run_ids=[a.pk, b.pk], match="key", key=" ")
    cache.clear()
    assert runs_compare(runs=[a, b], spec=MatchSpec(), count_max=0).uncounted


def test_a_lost_count_is_sent_again_once_its_lock_expires(
    client, viewer, project, runs, background, sent
):
    a, b = runs
    page, figures = _urls(project, a, b)
    login(client, viewer).get(page)
    assert len(sent) == 1
    assert COUNTING in _poll(client, figures).content.decode()
    assert len(sent) == 1  # the count is under way (or lost: a minute's lock)
    comparison = runs_compare(runs=[a, b], spec=MatchSpec(), count_max=0)
    cache.delete(compare_figures_lock(comparison=comparison))
    _poll(client, figures)
    assert len(sent) == 2
