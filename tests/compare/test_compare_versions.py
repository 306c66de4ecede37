"""Compare runs of different dataset versions and datasets: items matched by key or
input, added / removed / changed items, duplicate keys, side by side, 3–4 runs."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.conftest import login
from tests.factories import DatasetFactory
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db

YES2, HALF, NO2 = (
    judged_claims("yes", "yes"),  # 1.0 pass
    judged_claims("yes", "no"),  # 0.5 pass
    judged_claims("no", "no"),  # 0.0 fail
)


def _rows(spec):
    """[(id, input, output)] → dataset rows with metadata id."""
    return [
        {"input": q, "output": out, "metadata": {"id": key, "topic": "t"}}
        for key, q, out in spec
    ]


@pytest.fixture
def versions(project):
    """v1: q1..q4. v2: q1 unchanged, q2 with a worse answer, q3 removed, q4 moved
    to the end, q5 added."""
    v1 = DatasetFactory(
        project=project,
        name="qa",
        rows=_rows(
            [
                ("q1", "What is 1+1?", "Two."),
                ("q2", "Capital of France?", "Paris is the capital of France."),
                ("q3", "Colour of the sky?", "Blue."),
                ("q4", "Largest planet?", "Jupiter."),
            ]
        ),
    )
    v2 = DatasetFactory(
        project=project,
        name="qa",
        rows=_rows(
            [
                ("q1", "What is 1+1?", "Two."),
                ("q2", "Capital of France?", "Lyon is the capital of France."),
                ("q5", "Smallest prime?", "Two."),
                ("q4", "Largest planet?", "Jupiter."),
            ]
        ),
    )
    assert v2.version == 2
    a = make_run(
        project,
        dataset=v1,
        analyses={"faithfulness": [YES2, YES2, HALF, HALF]},
    )
    b = make_run(
        project,
        dataset=v2,
        # q1 =, q2 1.0 → 0.0 (pass → fail), q5 new, q4 0.5 → 1.0
        analyses={"faithfulness": [YES2, NO2, HALF, YES2]},
    )
    return v1, v2, a, b


def _api(client, a, b, query=""):
    return client.get(f"/api/runs/{a.pk}/compare/{b.pk}{query}")


def test_versions_match_by_key_with_added_removed_and_changed(client, viewer, versions):
    v1, v2, a, b = versions
    data = _api(login(client, viewer), a, b, "?match=key&key=id").json()
    match = data["candidates"][0]["match"]
    assert not match["same_dataset"]
    assert (match["matched"], match["only_in_a"], match["only_in_b"]) == (3, 1, 1)
    (faith,) = data["pairs"]
    assert faith["n"] == 3
    assert (faith["regressions"], faith["improvements"], faith["unchanged"]) == (
        1,
        1,
        1,
    )
    assert faith["pass_to_fail"] == 1
    assert faith["a_mean"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert faith["b_mean"] == pytest.approx((1 + 0 + 1) / 3)
    # q2 (pass → fail) first, then q1 (=), then q4 (improved)
    items = data["items"]
    v1_idx = [i["item_index"] for i in items]
    v2_idx = [i["b_item_index"] for i in items]
    assert v1_idx == [1, 0, 3] and v2_idx == [1, 0, 3]
    assert items[0]["regression"] and items[0]["delta"] == pytest.approx(-1.0)
    assert items[2]["delta"] == pytest.approx(0.5) and not items[2]["regression"]
    ids = dict(v2.items.values_list("index", "id"))
    assert [i["b_item_id"] for i in items] == [ids[1], ids[0], ids[3]]


def test_versions_page_reports_added_removed_and_lists_regressions(
    client, viewer, project, versions
):
    _, _, a, b = versions
    url = reverse("compare:compare", args=[project.pk])
    html = login(client, viewer).get(f"{url}?a={a.pk}&b={b.pk}").content.decode()
    assert "metadata key “id”" in html
    assert ">1 only in A (removed)</a>" in html and ">1 only in B (added)</a>" in html
    rows = html.split('id="compare-rows"')[1]
    assert rows.index('data-item="1"') < rows.index('data-item="0"')


def test_removed_and_added_items_are_listed(client, viewer, project, versions):
    """v1's q3 is removed, v2's q5 added: each listed with its own run's result."""
    v1, v2, a, b = versions
    login(client, viewer)
    removed = _api(client, a, b, "?unmatched=removed").json()["unmatched"]
    q3 = v1.items.get(index=2)
    assert (removed["side"], removed["run_id"], removed["count"]) == (
        "removed",
        a.pk,
        1,
    )
    [item] = removed["items"]
    assert (item["item_id"], item["item_index"], item["input"]) == (
        q3.pk,
        2,
        "Colour of the sky?",
    )
    assert item["result_id"] == a.results.get(item=q3).pk
    added = _api(client, a, b, "?unmatched=added").json()["unmatched"]
    q5 = v2.items.get(index=2)
    assert (added["side"], added["run_id"], added["count"]) == ("added", b.pk, 1)
    assert [i["item_id"] for i in added["items"]] == [q5.pk]
    assert added["items"][0]["result_id"] == b.results.get(item=q5).pk
    # The matched items stay as they were beside it, and without the flag it is None.
    assert len(_api(client, a, b, "?unmatched=added").json()["items"]) == 3
    assert _api(client, a, b).json()["unmatched"] is None
    assert _api(client, a, b, "?unmatched=bogus").status_code == 422

    url = reverse("compare:compare", args=[project.pk])
    html = client.get(f"{url}?a={a.pk}&b={b.pk}&unmatched=removed").content
    section = html.decode().split('id="compare-unmatched"')[1]
    assert "Colour of the sky?" in section and "Smallest prime?" not in section
    result_url = reverse("review:item", args=[project.pk, a.results.get(item=q3).pk])
    assert f'href="{result_url}"' in section
    assert 'id="compare-rows"' not in html.decode()
    bad = client.get(f"{url}?a={a.pk}&b={b.pk}&unmatched=bogus")
    assert bad.status_code == 400


def test_unmatched_pages_and_one_dataset_has_none(client, viewer, project):
    rows = [
        {"input": f"q{i}", "output": "a", "metadata": {"id": f"k{i}"}} for i in range(5)
    ]
    v1 = DatasetFactory(project=project, name="qa", rows=rows)
    v2 = DatasetFactory(project=project, name="qa", rows=rows[:1])
    a = make_run(project, dataset=v1, analyses={"faithfulness": [YES2] * 5})
    b = make_run(project, dataset=v2, analyses={"faithfulness": [YES2]})
    a2 = make_run(project, dataset=v1, analyses={"faithfulness": [NO2] * 5})
    login(client, viewer)
    first = _api(client, a, b, "?unmatched=removed&limit=3").json()["unmatched"]
    second = _api(client, a, b, "?unmatched=removed&limit=3&offset=3").json()
    assert first["count"] == 4
    assert [i["item_index"] for i in first["items"]] == [1, 2, 3]
    assert [i["item_index"] for i in second["unmatched"]["items"]] == [4]
    same = _api(client, a, a2, "?unmatched=removed").json()["unmatched"]
    assert same["count"] == 0 and same["items"] == []


def test_key_and_input_matching_differ(client, owner, project):
    """Keys renumbered between two datasets: by key they pair wrong items; by input
    they pair the same questions (whitespace aside)."""
    d1 = DatasetFactory(
        project=project,
        rows=_rows([("1", "Alpha?", "a"), ("2", "Beta?", "b"), ("3", "Gamma?", "c")]),
    )
    d2 = DatasetFactory(
        project=project,
        rows=_rows(
            [("2", "Alpha?", "a"), ("3", " Beta?\n", "b"), ("9", "Delta?", "d")]
        ),
    )
    a = make_run(project, dataset=d1, analyses={"faithfulness": [YES2, YES2, NO2]})
    b = make_run(project, dataset=d2, analyses={"faithfulness": [YES2, YES2, NO2]})
    login(client, owner)
    by_key = _api(client, a, b, "?match=key&key=id").json()
    by_input = _api(client, a, b, "?match=input").json()
    assert by_key["candidates"][0]["match"]["matched"] == 2  # "2" and "3"
    assert by_input["candidates"][0]["match"]["matched"] == 2  # Alpha, Beta
    # by key, "2" pairs Beta (1.0) with Alpha (1.0) and "3" Gamma (0) with Beta (1)
    assert by_key["pairs"][0]["improvements"] == 1
    # by input, both questions keep their score
    assert by_input["pairs"][0]["unchanged"] == 2
    assert by_input["match_key"] is None and by_input["match_mode"] == "input"
    pairs = {(i["item_index"], i["b_item_index"]) for i in by_input["items"]}
    assert pairs == {(0, 0), (1, 1)}
    # a key no item has matches nothing, and says so
    none = _api(client, a, b, "?match=key&key=nope").json()
    assert none["candidates"][0]["match"]["matched"] == 0
    assert none["candidates"][0]["match"]["no_key_a"] == 3
    assert none["items"] == []


def test_duplicate_keys_are_an_error_naming_them(client, owner, project):
    d1 = DatasetFactory(
        project=project, rows=_rows([("k", "A?", "a"), ("k", "B?", "b")])
    )
    d2 = DatasetFactory(project=project, rows=_rows([("k", "A?", "a")]))
    a = make_run(project, dataset=d1)
    b = make_run(project, dataset=d2)
    login(client, owner)
    resp = _api(client, a, b)
    assert resp.status_code == 400
    body = resp.json()
    assert "'k' (items 1, 2)" in body["detail"] and f"run A (#{a.pk})" in body["detail"]
    assert body["errors"][0]["field"] == "key"
    url = reverse("compare:compare", args=[project.pk])
    page = client.get(f"{url}?a={a.pk}&b={b.pk}")
    assert page.status_code == 400
    assert "&#x27;k&#x27; (items 1, 2)" in page.content.decode()
    # matching by input instead works
    assert _api(client, a, b, "?match=input").status_code == 200


def test_bad_match_rule_is_a_clear_error(client, owner, versions):
    _, _, a, b = versions
    login(client, owner)
    assert _api(client, a, b, "?match=fuzzy").status_code in (400, 422)
    assert _api(client, a, b, "?key=").status_code in (400, 422)
    url = reverse("compare:compare", args=[a.project_id])
    page = client.get(f"{url}?a={a.pk}&b={b.pk}&match=fuzzy")
    assert page.status_code == 400


def test_side_by_side_shows_both_outputs_with_a_word_diff(
    client, viewer, project, versions
):
    v1, v2, a, b = versions
    a_item = v1.items.get(index=1)
    b_item = v2.items.get(index=1)
    url = reverse("compare:compare_item", args=[project.pk])
    query = f"?a={a.pk}&b={b.pk}&a_item={a_item.pk}&b_item={b_item.pk}"
    login(client, viewer)
    page = client.get(url + query)
    html = page.content.decode()
    assert page.status_code == 200 and 'id="compare-rows"' in html
    side = html.split('id="compare-side-by-side"')[1]
    assert "Paris is the capital of France." in side
    assert "Lyon is the capital of France." in side
    assert "<del>Paris </del><ins>Lyon </ins>" in side
    assert "only in run A's output" in side and "run B&#x27;s output" in side
    partial = client.get(url + query, HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<section id="compare-side-by-side"')
    assert 'id="compare-rows"' not in partial
    # an item of another dataset (here: v1's item as B's) is not found
    wrong = f"?a={a.pk}&b={b.pk}&a_item={a_item.pk}&b_item={a_item.pk}"
    assert client.get(url + wrong).status_code == 404
    missing = client.get(url + f"?a={a.pk}&b={b.pk}")
    assert missing.status_code == 400


def test_side_by_side_escapes_item_text(client, viewer, project):
    d1 = DatasetFactory(
        project=project, rows=_rows([("x", "<b>q</b>", "<script>alert(1)</script>")])
    )
    d2 = DatasetFactory(project=project, rows=_rows([("x", "<b>q</b>", "<i>ok</i>")]))
    a, b = make_run(project, dataset=d1), make_run(project, dataset=d2)
    url = reverse("compare:compare_item", args=[project.pk])
    html = (
        login(client, viewer)
        .get(
            f"{url}?a={a.pk}&b={b.pk}"
            f"&a_item={d1.items.get().pk}&b_item={d2.items.get().pk}"
        )
        .content.decode()
    )
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html


def test_four_runs_compare_each_with_the_baseline(client, viewer, project, versions):
    v1, v2, a, b = versions
    c = make_run(project, dataset=v1, analyses={"faithfulness": [NO2] * 4})
    d = make_run(project, kinds=["hallucination"], dataset=v2)
    login(client, viewer)
    data = _api(client, a, b, f"?also={c.pk}&also={d.pk}&against={c.pk}").json()
    assert data["runs"] == [a.pk, b.pk, c.pk, d.pk]
    labels = [cand["label"] for cand in data["candidates"]]
    assert labels == ["B", "C", "D"]
    cand_c = data["candidates"][1]
    assert cand_c["match"]["same_dataset"] and cand_c["match"]["matched"] == 4
    assert cand_c["pairs"][0]["pass_to_fail"] == 4
    assert data["against"] == c.pk and data["count"] == 4
    # D has no faithfulness scorer: nothing to pair
    assert data["candidates"][2]["pairs"] == []
    url = reverse("compare:compare", args=[project.pk])
    html = client.get(
        f"{url}?a={a.pk}&b={b.pk}&c={c.pk}&d={d.pk}&against={c.pk}"
    ).content.decode()
    assert "<strong>A vs C</strong>" in html and "shares no scorer" in html
    assert _api(client, a, b, f"?also={c.pk}&also={d.pk}&also={a.pk}").status_code in (
        400,
        422,
    )


def test_runs_list_and_run_page_link_to_compare(client, viewer, project, versions):
    _, _, a, b = versions
    login(client, viewer)
    runs = client.get(reverse("evals:runs", args=[project.pk])).content.decode()
    assert 'id="compare-runs"' in runs
    assert f'name="runs" value="{a.pk}"' in runs
    detail = client.get(
        reverse("evals:run_detail", args=[project.pk, a.pk])
    ).content.decode()
    assert reverse("compare:compare", args=[project.pk]) + f"?a={a.pk}" in detail


def test_runs_list_sends_newest_first_and_the_oldest_becomes_run_a(
    client, viewer, project, versions
):
    """The runs list's ?order=oldest&runs=<newest>&runs=<oldest> is resolved once
    into ?a=<oldest>&b=<newest>: the URL, the selects and the heading agree."""
    _, _, a, b = versions  # a is older
    url = reverse("compare:compare", args=[project.pk])
    login(client, viewer)
    response = client.get(f"{url}?order=oldest&runs={b.pk}&runs={a.pk}&key=id")
    assert response.status_code == 302
    assert response["Location"] == f"{url}?key=id&a={a.pk}&b={b.pk}"
    html = client.get(response["Location"]).content.decode()
    assert f'Run A <span class="muted">#{a.pk} ' in html
    assert _selected(html, "a") == str(a.pk) and _selected(html, "b") == str(b.pk)
    # Without order=, the first run listed is A (the older spelling of ?a=&b=).
    response = client.get(f"{url}?runs={b.pk}&runs={a.pk}")
    assert response["Location"] == f"{url}?a={b.pk}&b={a.pk}"


def test_runs_list_baseline_the_user_designates_is_run_a(
    client, viewer, project, versions
):
    _, _, a, b = versions  # a is older, b designated
    url = reverse("compare:compare", args=[project.pk])
    login(client, viewer)
    response = client.get(f"{url}?order=oldest&runs={b.pk}&runs={a.pk}&baseline={b.pk}")
    assert response["Location"] == f"{url}?a={b.pk}&b={a.pk}"
    # A designated baseline left unticked still counts as chosen.
    response = client.get(f"{url}?order=oldest&runs={a.pk}&baseline={b.pk}")
    assert response["Location"] == f"{url}?a={b.pk}&b={a.pk}"
    # Still a 404 for another project's run; a baseline alone asks for run B.
    missing = client.get(f"{url}?order=oldest&runs={a.pk}&baseline=999999")
    assert missing.status_code == 404
    alone = client.get(f"{url}?order=oldest&baseline={a.pk}")
    assert alone["Location"] == f"{url}?a={a.pk}"
    assert client.get(f"{url}?order=oldest").status_code == 400


def _selected(html, param):
    """The run id the named select (a, b, c, d) has selected."""
    select = html.split(f'<select name="{param}"')[1].split("</select>")[0]
    return select.split('" selected')[0].rsplit('value="', 1)[1]


def _figures(html):
    """(run A, run B, removed, added, the current pair's mean Δ text)."""
    import re

    head = re.search(
        r'Run A <span class="muted">#(\d+) .*? vs run B <span class="muted">#(\d+) ',
        html,
    )
    removed = re.search(r">(\d+) only in A \(removed\)", html)
    added = re.search(r">(\d+) only in B \(added\)", html)
    delta = re.search(
        r'aria-current="true".*?data-stat="mean-delta">([^<\[]*)', html, re.S
    )
    return (
        int(head.group(1)),
        int(head.group(2)),
        int(removed.group(1)),
        int(added.group(1)),
        delta.group(1).strip(),
    )


def test_baseline_survives_every_resubmit_and_swaps_on_request(
    client, viewer, project, versions
):
    """From the runs list, then a new key submitted from the form
    (the selects as the page rendered them), paging and the unmatched list keep run
    A, B, removed/added and the sign of every delta; the swap link turns them over."""
    v1, v2, a, b = versions  # v1 → v2: q3 removed, q5 added; mean Δ (1+0+1 − 2.5)/3
    for ds in (v1, v2):  # a second key naming the same items
        for item in ds.items.all():
            item.metadata = {**item.metadata, "qid": item.metadata["id"]}
            item.save(update_fields=["metadata"])
    url = reverse("compare:compare", args=[project.pk])
    login(client, viewer)
    first = client.get(f"{url}?order=oldest&runs={b.pk}&runs={a.pk}", follow=True)
    html = first.content.decode()
    expected = (a.pk, b.pk, 1, 1, "-0.167")
    assert _figures(html) == expected
    # Re-submit the form as a browser would: its own selects, a new key.
    form = {
        "a": _selected(html, "a"),
        "b": _selected(html, "b"),
        "c": "",
        "d": "",
        "match": "key",
        "key": "qid",
        "only": "",
    }
    again = client.get(url, form)
    assert again.status_code == 200
    assert _figures(again.content.decode()) == expected
    partial = client.get(url, form, HTTP_HX_REQUEST="true").content.decode()
    assert _figures(partial) == expected
    for extra in ({"per_page": 1, "page": 2}, {"unmatched": "removed"}):
        html = client.get(url, {**form, **extra}).content.decode()
        assert _figures(html) == expected
    listed = client.get(url, {**form, "unmatched": "removed"}).content.decode()
    assert 'id="compare-unmatched" data-side="removed"' in listed
    assert "Colour of the sky?" in listed  # q3, only in v1 (run A)

    # The swap link: B becomes the baseline, everything turns over.
    swap = listed.split('id="compare-swap"')[0].rsplit('href="', 1)[1].split('"')[0]
    swapped = client.get(swap.replace("&amp;", "&")).content.decode()
    assert _figures(swapped) == (b.pk, a.pk, 1, 1, "+0.167")
    assert _selected(swapped, "a") == str(b.pk)
    # The same items are listed: q3 is now the one only run B holds (added).
    assert 'id="compare-unmatched" data-side="added"' in swapped
    assert "Colour of the sky?" in swapped
