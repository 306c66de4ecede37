"""Compare runs: direction-aware regressions first, flips, counts, tests, pages."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.conftest import login
from tests.factories import DatasetFactory
from tests.review.builders import case_rows, judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(project):
    ds = DatasetFactory(project=project, name="qa", rows=case_rows(4))
    kinds = ["faithfulness", "hallucination"]
    a = make_run(
        project,
        kinds=kinds,
        dataset=ds,
        analyses={
            # faithfulness 1.0 P, 0.5 P, 0 F, 1.0 P
            "faithfulness": [
                judged_claims("yes", "yes"),
                judged_claims("yes", "no"),
                judged_claims("no", "no"),
                judged_claims("yes"),
            ],
            # hallucination (lower is better) 0 P, 0 P, 1.0 F, 0.5 P
            "hallucination": [
                judged_claims("no", "no"),
                judged_claims("no", "no"),
                judged_claims("yes", "yes"),
                judged_claims("yes", "no"),
            ],
        },
    )
    b = make_run(
        project,
        kinds=kinds,
        dataset=ds,
        analyses={
            # 0.5 P (−0.5), 0 F (−0.5, pass→fail), 1.0 P (+1, fail→pass), 1.0 (=)
            "faithfulness": [
                judged_claims("yes", "no"),
                judged_claims("no", "no"),
                judged_claims("yes", "yes"),
                judged_claims("yes"),
            ],
            # 0.5 (+0.5 worse), 0 (=), 0 (better, fail→pass), 1.0 (worse, pass→fail)
            "hallucination": [
                judged_claims("yes", "no"),
                judged_claims("no", "no"),
                judged_claims("no", "no"),
                judged_claims("yes", "yes"),
            ],
        },
    )
    return a, b


def test_api_orders_regressions_first_per_direction(client, viewer, runs):
    a, b = runs
    login(client, viewer)
    data = client.get(f"/api/runs/{a.pk}/compare/{b.pk}").json()
    faith, hall = data["pairs"]
    assert (faith["regressions"], faith["improvements"], faith["unchanged"]) == (
        2,
        1,
        1,
    )
    assert (faith["pass_to_fail"], faith["fail_to_pass"], faith["missing"]) == (1, 1, 0)
    assert faith["mean_delta"] == pytest.approx(0.0)
    assert (hall["regressions"], hall["improvements"], hall["unchanged"]) == (2, 1, 1)
    assert (hall["pass_to_fail"], hall["fail_to_pass"]) == (1, 1)
    assert [i["item_index"] for i in data["items"]] == [1, 0, 3, 2]
    assert (
        data["items"][0]["pass_flip"] == "pass_to_fail"
        and data["items"][0]["regression"]
    )
    assert data["items"][0]["delta"] == pytest.approx(-0.5)
    assert [i["regression"] for i in data["items"]] == [True, True, False, False]
    match = data["candidates"][0]["match"]
    assert match["same_dataset"] and match["matched"] == 4

    data = client.get(
        f"/api/runs/{a.pk}/compare/{b.pk}?run_scorer_id={hall['run_scorer_id']}"
    ).json()
    # lower is better: an increase is the regression
    assert [i["item_index"] for i in data["items"]] == [3, 0, 1, 2]
    assert (
        data["items"][1]["delta"] == pytest.approx(0.5)
        and data["items"][1]["regression"]
    )

    only = client.get(
        f"/api/runs/{a.pk}/compare/{b.pk}?only=regressions&limit=1"
    ).json()
    assert only["count"] == 2 and [i["item_index"] for i in only["items"]] == [1]
    flips = client.get(f"/api/runs/{a.pk}/compare/{b.pk}?only=flips").json()
    assert sorted(i["pass_flip"] for i in flips["items"]) == [
        "fail_to_pass",
        "pass_to_fail",
    ]
    improved = client.get(f"/api/runs/{a.pk}/compare/{b.pk}?only=improvements").json()
    assert [i["item_index"] for i in improved["items"]] == [2]


def test_api_states_the_tests_and_their_figures(client, viewer, runs):
    a, b = runs
    data = login(client, viewer).get(f"/api/runs/{a.pk}/compare/{b.pk}").json()
    assert "paired t" in data["tests"]["mean"] and "McNemar" in data["tests"]["pass"]
    faith = data["pairs"][0]
    # deltas −0.5, −0.5, +1, 0: mean 0, so the interval straddles 0 and p = 1
    assert faith["mean_delta_ci_low"] < 0 < faith["mean_delta_ci_high"]
    assert faith["mean_delta_p"] == pytest.approx(1.0)
    assert faith["sign_test_p"] == pytest.approx(1.0)  # 1 up, 2 down
    assert faith["mcnemar_p"] == pytest.approx(1.0)  # 1 each way
    assert faith["a_pass_rate"] == pytest.approx(0.75)
    assert faith["pass_rate_delta"] == pytest.approx(0.0)


def test_compare_page_paginates_and_serves_the_partial(client, viewer, project, runs):
    a, b = runs
    url = reverse("compare:compare", args=[project.pk])
    html = (
        login(client, viewer)
        .get(f"{url}?a={a.pk}&b={b.pk}&per_page=2")
        .content.decode()
    )
    assert 'id="compare-summary"' in html and "page 1 of 2" in html
    assert "exact McNemar test" in html and "paired t-interval" in html
    rows = html.split('id="compare-rows"')[1]
    assert rows.index('data-item="1"') < rows.index('data-item="0"')
    assert 'data-item="3"' not in rows
    partial = client.get(
        f"{url}?a={a.pk}&b={b.pk}&page=2&per_page=2", HTTP_HX_REQUEST="true"
    )
    body = partial.content.decode()
    assert (
        body.lstrip().startswith('<div id="compare-body"') and 'data-item="2"' in body
    )
    # links in the partial keep their path (no {% url as %} outside the region)
    assert f'href="{url}?a={a.pk}' in body


def test_compare_page_filters_regressed_and_changed_verdict(
    client, viewer, project, runs
):
    a, b = runs
    url = reverse("compare:compare", args=[project.pk])
    login(client, viewer)
    html = client.get(f"{url}?a={a.pk}&b={b.pk}&only=regressions").content
    rows = html.decode().split('id="compare-rows"')[1]
    assert 'data-item="1"' in rows and 'data-item="0"' in rows
    assert 'data-item="2"' not in rows and 'data-item="3"' not in rows
    html = client.get(f"{url}?a={a.pk}&b={b.pk}&only=flips").content.decode()
    rows = html.split('id="compare-rows"')[1]
    assert 'data-item="1"' in rows and 'data-item="2"' in rows
    assert 'data-item="0"' not in rows
    assert client.get(f"{url}?a={a.pk}&b={b.pk}&only=bogus").status_code == 400


def test_compare_page_needs_two_to_four_distinct_runs(client, viewer, project, runs):
    a, b = runs
    url = reverse("compare:compare", args=[project.pk])
    login(client, viewer)
    assert client.get(url).status_code == 200  # the empty form
    one = client.get(f"{url}?a={a.pk}")  # from a run page: A chosen, B to pick
    assert one.status_code == 200 and "Choose a run B" in one.content.decode()
    # The older spelling of that link lands on the same page, spelled ?a=.
    old = client.get(f"{url}?runs={a.pk}")
    assert old.status_code == 302 and old["Location"] == f"{url}?a={a.pk}"
    assert one.status_code == 200 and "Choose a run B" in one.content.decode()
    one = client.get(f"{url}?a={a.pk}&only=flips")
    assert one.status_code == 200 and f'value="{a.pk}" selected' in one.content.decode()
    three_same = client.get(f"{url}?a={a.pk}&b={b.pk}&c={a.pk}")
    assert three_same.status_code == 400
    same = client.get(f"{url}?a={a.pk}&b={a.pk}")
    assert same.status_code == 400 and "different runs" in same.content.decode()
    five = "&".join(f"runs={pk}" for pk in [a.pk, b.pk, a.pk, b.pk, a.pk])
    assert client.get(f"{url}?{five}").status_code == 400
    assert client.get(f"{url}?a=x&b={a.pk}").status_code == 400
    assert client.post(f"{url}?a={a.pk}&b={b.pk}").status_code == 405


def test_runs_of_another_project_are_not_found(client, outsider, project, runs):
    a, b = runs
    login(client, outsider)
    assert client.get(f"/api/runs/{a.pk}/compare/{b.pk}").status_code == 404
    own = outsider.memberships.get().project
    own_run = make_run(own, kinds=["faithfulness"])
    # the outsider's own run against a run of a project they cannot see
    assert client.get(f"/api/runs/{own_run.pk}/compare/{a.pk}").status_code == 404
    assert (
        client.get(f"/api/runs/{own_run.pk}/compare/{own_run.pk}?also={a.pk}")
    ).status_code == 404
    page = client.get(
        reverse("compare:compare", args=[own.pk]) + f"?a={own_run.pk}&b={a.pk}"
    )
    assert page.status_code == 404
    assert (
        client.get(
            reverse("compare:compare", args=[project.pk]) + f"?a={a.pk}&b={b.pk}"
        ).status_code
        == 404
    )


def test_member_with_runs_in_two_projects_cannot_mix_them(client, owner, project, runs):
    from evalsite.accounts.models import Role
    from tests.factories import MembershipFactory

    a, _ = runs
    other = MembershipFactory(user=owner, role=Role.OWNER).project
    foreign = make_run(other, kinds=["faithfulness"])
    login(client, owner)
    assert client.get(f"/api/runs/{a.pk}/compare/{foreign.pk}").status_code == 404
    url = reverse("compare:compare", args=[project.pk])
    assert client.get(f"{url}?a={a.pk}&b={foreign.pk}").status_code == 404


def test_login_required(client, project, runs):
    a, b = runs
    assert client.get(f"/api/runs/{a.pk}/compare/{b.pk}").status_code == 401
    url = reverse("compare:compare", args=[project.pk])
    assert client.get(f"{url}?a={a.pk}&b={b.pk}").status_code == 302


def test_a_review_after_a_compare_shows_in_the_next_one(client, reviewer, runs):
    """Figures and pages are cached under the results' state: an override moves it."""
    from evalsite.evals.models import Result
    from evalsite.evals.results.verdicts import override_create

    a, b = runs
    login(client, reviewer)
    url = f"/api/runs/{a.pk}/compare/{b.pk}"
    before = client.get(url).json()
    assert before["pairs"][0]["pass_to_fail"] == 1
    # item 3: 1.0 pass in both runs; B's verdict overridden to fail
    result = Result.objects.get(run=b, item__index=3, run_scorer__kind="faithfulness")
    override_create(result=result, user=reviewer, kind="pass", value=False)
    after = client.get(url).json()
    assert after["pairs"][0]["pass_to_fail"] == 2
    assert [i["item_index"] for i in after["items"]][:2] == [1, 3]
    assert before["pairs"][0]["b_pass_rate"] == pytest.approx(0.75)
    assert after["pairs"][0]["b_pass_rate"] == pytest.approx(0.5)


def test_an_error_in_either_run_is_missing_not_a_change(client, viewer, runs):
    """B's faithfulness result of item 1 (a pass → fail regression) is an error: it
    leaves the means, pass rates, tests and filters, counts under missing, and is
    listed after every scored item; an A result without a verdict flips nothing."""
    from evalsite.evals.models import Result

    a, b = runs
    Result.objects.filter(run=b, item__index=1, run_scorer__kind="faithfulness").update(
        status=Result.Status.ERROR, final_score=None, final_passed=None
    )
    # item 2 (fail → pass in B): A's verdict unknown, so no flip, still improved
    Result.objects.filter(run=a, item__index=2, run_scorer__kind="faithfulness").update(
        final_passed=None
    )
    login(client, viewer)
    data = client.get(f"/api/runs/{a.pk}/compare/{b.pk}").json()
    faith = data["pairs"][0]
    assert (faith["n"], faith["both_ok"], faith["missing"]) == (4, 3, 1)
    assert (faith["regressions"], faith["improvements"], faith["unchanged"]) == (
        1,
        1,
        1,
    )
    assert (faith["pass_to_fail"], faith["fail_to_pass"]) == (0, 0)
    # deltas of items 0, 2, 3: −0.5, +1, 0
    assert faith["mean_delta"] == pytest.approx(0.5 / 3)
    assert faith["a_pass_rate"] == pytest.approx(2 / 3)
    assert [i["item_index"] for i in data["items"]] == [0, 3, 2, 1]
    assert data["items"][-1]["delta"] is None and not data["items"][-1]["regression"]
    counts = {
        only: client.get(f"/api/runs/{a.pk}/compare/{b.pk}?only={only}").json()["count"]
        for only in ("regressions", "improvements", "flips", "changed")
    }
    assert counts == {"regressions": 1, "improvements": 1, "flips": 0, "changed": 2}


def test_compare_page_picks_run_a_scorer_by_run_scorer_and_swaps_to_b_one(
    client, viewer, project, runs
):
    """?run_scorer= is one of run A's RunScorer ids; the swap link names run B's
    scorer of the pair and turns regressions into improvements."""
    a, b = runs
    hall_a = a.run_scorers.get(kind="hallucination")
    hall_b = b.run_scorers.get(kind="hallucination")
    url = reverse("compare:compare", args=[project.pk])
    html = (
        login(client, viewer)
        .get(
            url, {"a": a.pk, "b": b.pk, "run_scorer": hall_a.pk, "only": "regressions"}
        )
        .content.decode()
    )
    assert f'aria-current="true" data-run-scorer="{hall_a.pk}"' in html
    assert f"run_scorer={hall_a.pk}" in html.split('id="compare-summary"')[1]
    swap = html.split('id="compare-swap"')[0].rsplit('href="', 1)[1].split('"')[0]
    swap = swap.replace("&amp;", "&")
    assert f"a={b.pk}&b={a.pk}" in swap and f"run_scorer={hall_b.pk}" in swap
    assert "only=improvements" in swap
    swapped = client.get(swap).content.decode()
    assert f'aria-current="true" data-run-scorer="{hall_b.pk}"' in swapped
    # B → A's improvements are A → B's regressions: the same items (3 and 0).
    rows = swapped.split('id="compare-rows"')[1]
    assert 'data-item="3"' in rows and 'data-item="0"' in rows
    assert 'data-item="1"' not in rows and 'data-item="2"' not in rows


def test_a_key_of_any_text_makes_cache_keys_every_cache_takes(client, project, viewer):
    """The match key is the user's text; cached compare figures are named by a hash of
    it (a raw key with spaces or control characters breaks memcached)."""
    import warnings

    from django.core.cache.backends.base import CacheKeyWarning

    key = "my key\x01 é \U0001f600"
    rows = [
        {"input": f"q{i}", "output": "a", "metadata": {key: str(i)}} for i in range(2)
    ]
    a = make_run(project, dataset=DatasetFactory(project=project, name="k", rows=rows))
    b = make_run(project, dataset=DatasetFactory(project=project, name="k", rows=rows))
    login(client, viewer)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheKeyWarning)
        response = client.get(f"/api/runs/{a.pk}/compare/{b.pk}", {"key": key})
        assert response.status_code == 200, response.content
        assert response.json()["pairs"][0]["n"] == 2


@pytest.fixture
def many(project):
    """12 items with ties in every sort key: pass → fail flips, equal losses,
    unchanged items, improvements and two errors (no delta)."""
    from evalsite.evals.models import Result

    yes, half, no = (
        judged_claims("yes", "yes"),
        judged_claims("yes", "no"),
        judged_claims("no", "no"),
    )
    ds = DatasetFactory(project=project, name="many", rows=case_rows(12))
    a = make_run(project, dataset=ds, analyses={"faithfulness": [yes, half] * 6})
    b = make_run(
        project,
        dataset=ds,
        analyses={"faithfulness": [half, no, yes, no, no, yes] * 2},
    )
    Result.objects.filter(run=b, item__index__in=[4, 9]).update(
        status=Result.Status.ERROR, final_score=None, final_passed=None
    )
    return a, b


def _walk(client, url, *, limit):
    """Every item of a compare list, following next_after from the first page."""
    seen, after = [], None
    while True:
        page = client.get(
            url + f"&limit={limit}" + (f"&after={after}" if after else "")
        )
        data = page.json()
        seen += [i["item_index"] for i in data["items"]]
        after = data["next_after"]
        if after is None:
            return seen, data["count"]


@pytest.mark.parametrize("only", ["", "regressions", "improvements", "changed"])
def test_api_pages_by_keyset_in_the_order_of_one_page(client, viewer, many, only):
    a, b = many
    login(client, viewer)
    url = f"/api/runs/{a.pk}/compare/{b.pk}?only={only}"
    whole = [i["item_index"] for i in client.get(url + "&limit=500").json()["items"]]
    for limit in (1, 5):
        walked, count = _walk(client, url, limit=limit)
        assert walked == whole and len(whole) == count


def test_a_page_link_of_another_scorer_starts_at_the_first_page(client, viewer, runs):
    a, b = runs
    login(client, viewer)
    url = f"/api/runs/{a.pk}/compare/{b.pk}"
    hall = a.run_scorers.get(kind="hallucination")
    other = a.results.filter(run_scorer=hall).first()
    first = client.get(url + "?limit=2").json()
    stale = client.get(url + f"?limit=2&after={other.pk}").json()
    assert [i["item_index"] for i in stale["items"]] == [
        i["item_index"] for i in first["items"]
    ]


def test_compare_page_next_and_previous_links_walk_the_items(
    client, viewer, project, many
):
    import re
    from html import unescape

    a, b = many
    login(client, viewer)
    url = reverse("compare:compare", args=[project.pk])
    html = client.get(f"{url}?a={a.pk}&b={b.pk}&per_page=500").content.decode()
    whole = re.findall(r'data-item="(\d+)"', html.split('id="compare-rows"')[1])

    def page(link):
        body = client.get(unescape(link), HTTP_HX_REQUEST="true").content.decode()
        items = re.findall(r'data-item="(\d+)"', body.split('id="compare-rows"')[1])
        pager = body.split('class="pagination')[1] if "pagination" in body else ""
        nxt = re.search(r'href="([^"]*)"[^>]*>next', pager)
        prev = re.search(r'href="([^"]*)"[^>]*>← previous', pager)
        number = re.search(r"page (\d+) of", pager)
        return items, nxt and nxt.group(1), prev and prev.group(1), number.group(1)

    link, forward, numbers = f"{url}?a={a.pk}&b={b.pk}&per_page=5", [], []
    while link:
        items, link, back, number = page(link)
        forward += items
        numbers.append(number)
        assert "after=" in (link or "after=") and "offset" not in (link or "")
    assert forward == whole and numbers == ["1", "2", "3"]
    backward = []
    while back:
        items, _, back, number = page(back)
        backward = items + backward
    assert backward == whole[:10] and number == "1"
