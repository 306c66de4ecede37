"""Pairwise human review (issue 19 part 2): a queue from two runs' matched items, the
left/right order drawn per pair and recorded, answers that map back to the real run,
overlap and blindness, win rates and agreement, pages, isolation and permissions."""

from __future__ import annotations

import krippendorff
import pytest
from django.test import Client
from django.urls import reverse

from evalsite.accounts.models import AuditEvent, ReviewerPreferences, Role
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.review.models import PairwiseItem, Preference, ReviewQueue
from evalsite.review.schemas import ResultQuery
from evalsite.review.selectors.pairwise import (
    pairwise_figures,
    pairwise_next_for,
    pairwise_quick_agreement,
)
from evalsite.review.services import queue_create
from evalsite.review.services.pairwise import pairwise_answer, pairwise_queue_create
from scoring.pairwise import wilson_interval, win_rate_bootstrap, win_rates
from tests.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import make_run
from tests.review.pairwise_builders import make_model_runs, pairwise_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def bea(project):
    return MembershipFactory(
        project=project, user=UserFactory(username="bea"), role=Role.REVIEWER
    ).user


@pytest.fixture
def runs(project):
    return make_model_runs(project, n=4)


def _pair(queue, position):
    return PairwiseItem.objects.select_related("item_a", "item_b").get(
        queue=queue, position=position
    )


def _url(name, *args):
    return reverse(f"review:{name}", args=args)


# ------------------------------------------------------------------ the math alone


def test_wilson_interval_matches_the_hand_computed_formula():
    # 6 of 9, z = 1.95996: centre (p + z²/2n)/(1 + z²/n), half width
    # z √(p(1-p)/n + z²/4n²)/(1 + z²/n), worked by hand to four places.
    low, high = wilson_interval(6, 9)
    assert low == pytest.approx(0.3542, abs=1e-4)
    assert high == pytest.approx(0.8794, abs=1e-4)
    # The interval of 0 of n starts at 0; none without data.
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(0, 0) == (None, None)
    with pytest.raises(ValueError):
        wilson_interval(5, 3)


def test_win_rates_leave_ties_out_and_mirror_each_other():
    a, b = win_rates(a=6, b=3, tie=1)
    assert a.rate == pytest.approx(6 / 9)
    assert b.rate == pytest.approx(3 / 9)
    assert a.tie_half == pytest.approx(6.5 / 10)
    assert a.tie_share == pytest.approx(0.1)
    assert a.interval[0] == pytest.approx(1 - b.interval[1])


def test_bootstrap_over_pairs_is_wider_when_a_pairs_answers_move_together():
    # Ten pairs, three reviewers each, always unanimous: 7 pairs for A, 3 for B.
    pairs = [(3, 0)] * 7 + [(0, 3)] * 3
    low, high = win_rate_bootstrap(pairs, resamples=2000, seed=1)
    w_low, w_high = wilson_interval(21, 30)
    assert low <= 0.7 <= high
    assert high - low > w_high - w_low  # 30 answers are really 10 observations
    # Same seed, same interval; a pair split evenly everywhere is exactly 0.5.
    assert win_rate_bootstrap(pairs, resamples=2000, seed=1) == (low, high)
    assert win_rate_bootstrap([(1, 1)] * 5, resamples=100) == (0.5, 0.5)
    assert win_rate_bootstrap([(1, 0)], resamples=100) == (None, None)
    assert win_rate_bootstrap([(0, 0)] * 4, resamples=100) == (None, None)


# ------------------------------------------------------------------ creating a queue


def test_create_pairs_items_of_two_dataset_versions_by_input(runs, owner):
    run_a, run_b = runs
    queue = pairwise_queue(runs, owner, seed=7)
    assert queue.kind == ReviewQueue.Kind.PAIRWISE
    assert (queue.run_id, queue.run_b_id, queue.size) == (run_a.pk, run_b.pk, 4)
    assert queue.pairing["seed"] == 7
    assert queue.pairing["match"] == "input"
    pairs = list(
        PairwiseItem.objects.filter(queue=queue).select_related("item_a", "item_b")
    )
    assert [p.position for p in pairs] == [1, 2, 3, 4]
    for pair in pairs:
        # Same question (B's whitespace differs, B's rows are in reverse order).
        assert pair.item_a.dataset_id == run_a.dataset_id
        assert pair.item_b.dataset_id == run_b.dataset_id
        assert pair.item_a.metadata["id"] == pair.item_b.metadata["id"]
        assert pair.item_b.output.startswith("B answer")
    event = AuditEvent.objects.get(action="pairwise.create")
    assert event.after["queue_id"] == queue.pk and event.after["size"] == 4


def test_left_right_order_is_drawn_from_the_recorded_seed(project, owner):
    runs = make_model_runs(project, n=40)
    first = pairwise_queue(runs, owner, seed=123)
    again = pairwise_queue(runs, owner, seed=123)
    other = pairwise_queue(runs, owner, seed=124)
    order = lambda q: list(  # noqa: E731
        PairwiseItem.objects.filter(queue=q)
        .order_by("position")
        .values_list("a_left", flat=True)
    )
    assert order(first) == order(again)
    assert order(first) != order(other)
    assert {True, False} == set(order(first))  # both sides occur
    # Without a seed one is drawn and kept, so the order can be reproduced.
    drawn = pairwise_queue(runs, owner)
    assert isinstance(drawn.pairing["seed"], int)
    assert order(pairwise_queue(runs, owner, seed=drawn.pairing["seed"])) == order(
        drawn
    )


def test_create_by_metadata_key_counts_what_did_not_pair(project, owner):
    runs = make_model_runs(project, n=3, extra_b=2, b_input_spacing=False)
    queue = pairwise_queue(runs, owner, match="key", key="id")
    assert queue.size == 3
    assert queue.pairing["unmatched_b"] == 2 and queue.pairing["unmatched_a"] == 0
    assert _pair(queue, 1).match_value == "q0"


def test_a_queue_keeps_at_most_queue_max_pairs_and_says_so(project, owner, monkeypatch):
    monkeypatch.setattr("evalsite.review.services.pairwise.QUEUE_MAX", 3)
    monkeypatch.setattr("evalsite.review.services.pairwise.PAIR_CHUNK", 2)
    runs = make_model_runs(project, n=10, same_output=(0,))
    queue = pairwise_queue(runs, owner)
    assert queue.size == 3 and queue.truncated is True
    positions = PairwiseItem.objects.filter(queue=queue).order_by("position")
    assert [p.item_a.metadata["id"] for p in positions] == ["q1", "q2", "q3"]


def test_pairs_with_the_same_output_are_left_out_and_counted(project, owner):
    runs = make_model_runs(project, n=4, same_output=(1, 2))
    queue = pairwise_queue(runs, owner)
    assert queue.size == 2 and queue.pairing["identical"] == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"match": "key", "key": ""}, "Name the metadata key"),
        ({"match": "key", "key": "nope"}, "no item of run A matches"),
        ({"match": "sideways"}, "Unknown match mode"),
        ({"overlap": 0}, "between 1 and 10"),
        ({"seed": -1}, "seed"),
        ({"name": "bad\x00name"}, "cannot be stored"),
    ],
)
def test_create_refuses_bad_input_with_a_clear_error(runs, owner, kwargs, message):
    with pytest.raises(ApplicationError, match=message):
        pairwise_queue(runs, owner, **kwargs)
    assert not ReviewQueue.objects.filter(kind="pairwise").exists()


def test_create_refuses_one_run_twice_and_a_run_of_one_dataset(project, owner):
    run_a, _ = make_model_runs(project, n=2)
    with pytest.raises(ApplicationError, match="two different runs"):
        pairwise_queue_create(run_a=run_a, run_b=run_a, user=owner)
    same = make_run(project, n_items=2)
    also = make_run(project, dataset=same.dataset)
    with pytest.raises(ApplicationError, match="same dataset"):
        pairwise_queue_create(run_a=same, run_b=also, user=owner)


def test_create_refuses_a_key_held_by_two_items(project, owner):
    run_a, run_b = make_model_runs(project, n=3)
    item = run_b.dataset.items.order_by("index").first()
    item.metadata = {"id": "q1"}
    item.save()
    with pytest.raises(ApplicationError, match="not unique|several items"):
        pairwise_queue_create(
            run_a=run_a, run_b=run_b, user=owner, match="key", key="id"
        )


# ------------------------------------------------------------------ answers


def test_an_answer_by_side_maps_back_to_the_real_run(runs, owner, reviewer):
    queue = pairwise_queue(runs, owner, seed=1, overlap=1)
    for pair in PairwiseItem.objects.filter(queue=queue):
        outcome = pairwise_answer(
            queue=queue, position=pair.position, user=reviewer, side="left"
        )
        expected = "a" if pair.a_left else "b"
        assert outcome.preference.choice == expected
        assert outcome.preference.side == "left"
        assert outcome.preference.a_left == pair.a_left
    # And by run: "b" is recorded on the side where B was shown.
    queue2 = pairwise_queue(runs, owner, seed=1, overlap=1)
    pair = _pair(queue2, 1)
    pref = pairwise_answer(
        queue=queue2, position=1, user=reviewer, choice="b"
    ).preference
    assert pref.side == ("right" if pair.a_left else "left")


def test_an_answer_is_audited_with_the_run_it_prefers(runs, owner, reviewer):
    queue = pairwise_queue(runs, owner, seed=3)
    pair = _pair(queue, 2)
    pairwise_answer(
        queue=queue, position=2, user=reviewer, side="right", reason="clearer"
    )
    event = AuditEvent.objects.get(action="pairwise.answer")
    preferred = "b" if pair.a_left else "a"
    assert event.after["choice"] == preferred
    assert event.after["side"] == "right" and event.after["reason"] == "clearer"
    assert f"run {preferred.upper()}" in event.summary and "clearer" in event.summary
    assert event.actor == reviewer and event.run_id == queue.run_id


def test_the_audit_log_keeps_answers_blind_until_the_pair_is_complete(
    runs, owner, reviewer, bea
):
    queue = pairwise_queue(runs, owner, overlap=2, seed=3)
    pairwise_answer(queue=queue, position=1, user=reviewer, choice="a", reason="R-WHY")
    pairwise_answer(queue=queue, position=1, user=reviewer, choice="b", reason="R-WHY")
    first, change = AuditEvent.objects.filter(
        action__startswith="pairwise.answer"
    ).order_by("id")
    for event in (first, change):
        # Who answered, not what: every member reads the run's log.
        assert "choice" not in event.after and event.before is None
        assert "R-WHY" not in event.summary and "run " not in event.summary
        assert "(1 of 2)" in event.summary
    assert change.action == "pairwise.answer_change"
    pairwise_answer(queue=queue, position=1, user=bea, choice="tie")
    last = AuditEvent.objects.filter(action="pairwise.answer").latest("id")
    assert last.after["choice"] == "tie" and "a tie" in last.summary
    complete = AuditEvent.objects.get(action="pairwise.pair_complete")
    assert [
        (a["reviewer"], a["choice"], a["reason"]) for a in complete.after["answers"]
    ] == [
        ("rita", "b", "R-WHY"),
        ("bea", "tie", ""),
    ]
    assert "A 0, B 1, tie 1" in complete.summary


def test_overlap_takes_each_reviewers_answer_once_then_locks(
    runs, owner, reviewer, bea
):
    queue = pairwise_queue(runs, owner, overlap=2)
    pairwise_answer(queue=queue, position=1, user=reviewer, choice="a")
    # Answering again replaces, it does not add.
    pairwise_answer(queue=queue, position=1, user=reviewer, choice="tie")
    pair = _pair(queue, 1)
    assert (pair.answers, pair.answers_a, pair.answers_tie) == (1, 0, 1)
    pairwise_answer(queue=queue, position=1, user=bea, choice="b")
    pair.refresh_from_db()
    assert (pair.answers, pair.answers_b, pair.answers_tie) == (2, 1, 1)
    with pytest.raises(ConflictError, match="already has its 2 answers"):
        pairwise_answer(queue=queue, position=1, user=owner, choice="a")
    with pytest.raises(ConflictError, match="can no longer change"):
        pairwise_answer(queue=queue, position=1, user=bea, choice="a")
    assert Preference.objects.filter(pair=pair).count() == 2


def test_one_reviewer_per_pair_may_change_their_answer(runs, owner, reviewer):
    queue = pairwise_queue(runs, owner, overlap=1)
    pairwise_answer(queue=queue, position=1, user=reviewer, choice="a")
    pairwise_answer(queue=queue, position=1, user=reviewer, choice="b")
    assert Preference.objects.get(queue=queue).choice == "b"
    with pytest.raises(ConflictError):
        pairwise_answer(queue=queue, position=1, user=owner, choice="a")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "Say which output is better"),
        ({"choice": "a", "side": "left"}, "not both|Say which"),
        ({"side": "up"}, "left, right or tie"),
        ({"choice": "c"}, "a, b or tie"),
        ({"side": "left", "reason": "x" * 5001}, "longer than 5000"),
        ({"side": "left", "reason": "\ud800"}, "cannot be stored"),
    ],
)
def test_bad_answers_are_refused_with_a_clear_error(
    runs, owner, reviewer, kwargs, message
):
    queue = pairwise_queue(runs, owner)
    with pytest.raises(ApplicationError, match=message):
        pairwise_answer(queue=queue, position=1, user=reviewer, **kwargs)
    with pytest.raises(ApplicationError, match="no pair 9"):
        pairwise_answer(queue=queue, position=9, user=reviewer, side="left")
    assert not Preference.objects.exists()


def test_next_pair_skips_your_answers_and_complete_pairs(runs, owner, reviewer, bea):
    queue = pairwise_queue(runs, owner, overlap=1)
    pairwise_answer(queue=queue, position=1, user=bea, choice="a")  # complete
    pairwise_answer(queue=queue, position=2, user=reviewer, choice="a")
    assert pairwise_next_for(queue=queue, user=reviewer) == 3
    assert pairwise_next_for(queue=queue, user=reviewer, after=3) == 4
    assert pairwise_next_for(queue=queue, user=reviewer, after=4) == 3  # wraps


# ------------------------------------------------------------------ figures


def test_win_rates_and_side_bias_match_a_hand_count(project, owner, reviewer):
    runs = make_model_runs(project, n=10)
    queue = pairwise_queue(runs, owner, overlap=1, seed=5)
    # A wins 6, B wins 3, one tie: answers given by run.
    for position, choice in enumerate("aaaaaabbbt", 1):
        pairwise_answer(
            queue=queue,
            position=position,
            user=reviewer,
            choice="tie" if choice == "t" else choice,
        )
    figures = pairwise_figures(queue=queue)
    assert (figures.a.wins, figures.a.losses, figures.a.ties) == (6, 3, 1)
    assert figures.a.rate == pytest.approx(6 / 9)
    assert figures.b.rate == pytest.approx(3 / 9)
    assert figures.a.interval[0] == pytest.approx(0.3542, abs=1e-4)
    assert figures.a.interval[1] == pytest.approx(0.8794, abs=1e-4)
    assert figures.a.tie_half == pytest.approx(0.65)
    # The side each decisive answer landed on, counted from the recorded order.
    pairs = {p.position: p.a_left for p in PairwiseItem.objects.filter(queue=queue)}
    left = sum(
        1
        for position, choice in enumerate("aaaaaabbbt", 1)
        if choice != "t" and (choice == "a") == pairs[position]
    )
    assert figures.side.left == left and figures.side.decisive == 9
    assert figures.as_dict()["a"]["ci_low"] == pytest.approx(0.3542, abs=1e-4)


def test_agreement_on_preferences_matches_hand_and_reference(
    runs, owner, reviewer, bea
):
    queue = pairwise_queue(runs, owner, overlap=2)
    rita_says, bea_says = ["a", "a", "b", "tie"], ["a", "b", "b", "tie"]
    for position, (r, b) in enumerate(zip(rita_says, bea_says, strict=True), 1):
        pairwise_answer(queue=queue, position=position, user=reviewer, choice=r)
        pairwise_answer(queue=queue, position=position, user=bea, choice=b)
    figures = pairwise_figures(queue=queue)
    # Pairs agree on 3 of 4; alpha by hand from the coincidence matrix: n = 8,
    # n_a = n_b = 3, n_tie = 2, two off-diagonal coincidences:
    # 1 - 7 * 2 / (3*3*2 + 3*2*2 + 3*2*2) = 2/3.
    assert figures.percent.value == pytest.approx(0.75)
    assert figures.alpha.value == pytest.approx(2 / 3)
    codes = {"a": 0, "b": 1, "tie": 2}
    reference = krippendorff.alpha(
        reliability_data=[[codes[c] for c in rita_says], [codes[c] for c in bea_says]],
        level_of_measurement="nominal",
    )
    assert figures.alpha.value == pytest.approx(reference)
    assert figures.alpha.items == 4 and figures.reviewers == 2
    # A's wins over pairs: (2, 0), (1, 1), (0, 2), (0, 0): the bootstrap resamples
    # those pairs; B's interval mirrors A's.
    low, high = figures.a_pairs_interval
    assert (low, high) == win_rate_bootstrap(
        [(2, 0), (1, 1), (0, 2), (0, 0)], resamples=200
    )
    assert figures.b_pairs_interval == (1 - high, 1 - low)
    assert figures.alpha.ci_low is not None
    assert [(a, b) for a, b, _ in figures.kappa_pairs] == [("bea", "rita")]
    quick = pairwise_quick_agreement(queue_id=queue.pk)
    assert quick == {
        "percent": pytest.approx(0.75),
        "alpha": pytest.approx(2 / 3),
        "items": 4,
    }


# ------------------------------------------------------------------ pages


def test_run_page_links_to_pairwise_creation(client, runs, owner):
    run_a, _ = runs
    login(client, owner)
    page = client.get(reverse("evals:run_detail", args=[run_a.project_id, run_a.pk]))
    assert _url("pairwise_create", run_a.project_id, run_a.pk).encode() in page.content


def test_create_page_builds_a_queue_and_goes_to_it(client, runs, owner):
    run_a, run_b = runs
    login(client, owner)
    url = _url("pairwise_create", run_a.project_id, run_a.pk)
    form = client.get(url, {"b": run_b.pk})
    assert form.status_code == 200
    assert f'value="{run_b.pk}" selected'.encode() in form.content
    response = client.post(
        url, {"b": run_b.pk, "match": "key", "key": "id", "overlap": 2}
    )
    queue = ReviewQueue.objects.get(kind="pairwise")
    assert response.status_code == 302
    assert response["Location"] == _url("pairwise", run_a.project_id, queue.pk)
    assert queue.overlap == 2 and queue.pairing["key"] == "id"


def test_create_page_shows_why_nothing_was_created(client, runs, owner):
    run_a, run_b = runs
    login(client, owner)
    url = _url("pairwise_create", run_a.project_id, run_a.pk)
    response = client.post(
        url, {"b": run_b.pk, "match": "key", "key": "nope", "overlap": 1}
    )
    assert response.status_code == 400
    assert b"Nothing to compare" in response.content
    response = client.post(url, {"b": "abc", "match": "input", "overlap": 1})
    assert response.status_code == 400
    assert not ReviewQueue.objects.filter(kind="pairwise").exists()


def test_queue_page_shows_both_outputs_blind_until_you_answer(
    client, runs, owner, reviewer, bea
):
    queue = pairwise_queue(runs, owner, overlap=2, seed=2)
    pair = _pair(queue, 1)
    pairwise_answer(queue=queue, position=1, user=bea, choice="a", reason="bea-reason")
    login(client, reviewer)
    url = _url("pairwise", queue.project_id, queue.pk)
    page = client.get(url, {"pos": 1}).content.decode()
    assert pair.item_a.output in page and pair.item_b.output in page
    left, right = (
        (pair.item_a, pair.item_b) if pair.a_left else (pair.item_b, pair.item_a)
    )
    assert page.index(left.output) < page.index(right.output)
    assert "bea-reason" not in page and 'id="left-run"' not in page
    assert 'id="others-hidden"' in page
    assert 'data-key="1"' in page and 'data-key="3"' in page
    # The word diff runs from response 1 to response 2.
    assert 'id="pair-diff"' in page
    assert f"<del>{left.output.split()[0]} </del>" in page
    assert f"<ins>{right.output.split()[0]} </ins>" in page
    # Win rates wait until the reviewer is done; agreement is shown.
    assert 'id="win-rates-hidden"' in page and 'id="queue-agreement"' in page

    response = client.post(
        _url("pairwise_answer", queue.project_id, queue.pk, 1),
        {"side": "right", "reason": "mine"},
        HTTP_HX_REQUEST="true",
    )
    card = response.content.decode()
    assert response.status_code == 200 and "<html" not in card
    assert "bea-reason" in card and 'id="left-run"' in card
    assert Preference.objects.get(reviewer=reviewer).choice == (
        "b" if pair.a_left else "a"
    )


def test_owner_sees_win_rates_on_the_queue_page(client, runs, owner, reviewer):
    queue = pairwise_queue(runs, owner, overlap=1)
    pairwise_answer(queue=queue, position=1, user=reviewer, choice="a")
    login(client, owner)
    page = client.get(_url("pairwise", queue.project_id, queue.pk)).content.decode()
    assert 'class="small win-rates"' in page and "Wilson" in page
    # One answer per pair: the answers are the pairs, no second interval.
    assert "bootstrap over pairs" not in page
    overlap = pairwise_queue(runs, owner, overlap=2)
    pairwise_answer(queue=overlap, position=1, user=reviewer, choice="a")
    page = client.get(_url("pairwise", queue.project_id, overlap.pk)).content.decode()
    assert "bootstrap over pairs" in page


def test_answer_without_htmx_redirects_to_your_next_pair(client, runs, owner, reviewer):
    queue = pairwise_queue(runs, owner)
    login(client, reviewer)
    response = client.post(
        _url("pairwise_answer", queue.project_id, queue.pk, 1), {"side": "tie"}
    )
    assert response.status_code == 302
    assert response["Location"].endswith("?pos=2")
    ReviewerPreferences.objects.create(user=reviewer, advance_after_answer=False)
    response = client.post(
        _url("pairwise_answer", queue.project_id, queue.pk, 2), {"side": "tie"}
    )
    assert response["Location"].endswith("?pos=2")


def test_a_forged_side_is_refused_on_the_card(client, runs, owner, reviewer):
    queue = pairwise_queue(runs, owner)
    login(client, reviewer)
    response = client.post(
        _url("pairwise_answer", queue.project_id, queue.pk, 1),
        {"side": "both"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert (
        b'id="queue-error"' in response.content
        and b"left, right or tie" in response.content
    )
    assert not Preference.objects.exists()


def test_queue_page_checks_pos_and_methods(client, runs, owner):
    queue = pairwise_queue(runs, owner)
    login(client, owner)
    url = _url("pairwise", queue.project_id, queue.pk)
    assert client.get(url, {"pos": "x"}).status_code == 400
    assert client.get(url, {"pos": 99}).status_code == 400
    assert client.post(url).status_code == 405
    answer = _url("pairwise_answer", queue.project_id, queue.pk, 1)
    assert client.get(answer).status_code == 405
    assert (
        client.post(
            _url("pairwise_answer", queue.project_id, queue.pk, 99), {"side": "left"}
        ).status_code
        == 404
    )
    htmx = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert htmx.lstrip().startswith('<div id="queue-card"')


def test_queue_links_of_a_pairwise_queue_lead_to_its_page(client, runs, owner):
    queue = pairwise_queue(runs, owner)
    login(client, owner)
    response = client.get(_url("queue", queue.project_id, queue.pk))
    assert response.status_code == 302
    assert response["Location"] == _url("pairwise", queue.project_id, queue.pk)


def test_agreement_page_loads_the_pairwise_figures(client, runs, owner, reviewer, bea):
    queue = pairwise_queue(runs, owner, overlap=2)
    for position in (1, 2):
        pairwise_answer(queue=queue, position=position, user=reviewer, choice="a")
        pairwise_answer(
            queue=queue,
            position=position,
            user=bea,
            choice="a" if position == 1 else "b",
        )
    run_a, run_b = runs
    login(client, owner)
    page = client.get(_url("agreement", run_a.project_id, run_a.pk)).content.decode()
    fragment_url = _url("pairwise_run_agreement", run_a.project_id, run_a.pk)
    assert fragment_url in page
    # Run B's page lists the same queue.
    fragment = client.get(
        _url("pairwise_run_agreement", run_b.project_id, run_b.pk),
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert fragment.lstrip().startswith('<section id="pairwise-agreement"')
    assert queue.name in fragment
    assert 'data-figure="pairwise-alpha"' in fragment
    assert "50 %" in fragment  # percent agreement: one pair of two agrees


# ------------------------------------------------------------------ isolation and roles


def test_outsiders_and_other_projects_get_404(client, runs, owner, outsider):
    queue = pairwise_queue(runs, owner)
    login(client, outsider)
    own = outsider.memberships.get().project_id
    for project_id in (queue.project_id, own):
        assert client.get(_url("pairwise", project_id, queue.pk)).status_code == 404
        assert (
            client.post(
                _url("pairwise_answer", project_id, queue.pk, 1), {"side": "left"}
            ).status_code
            == 404
        )
    run_a, run_b = runs
    assert client.get(_url("pairwise_create", own, run_a.pk)).status_code == 404
    assert not Preference.objects.exists()


def test_run_b_of_another_project_is_refused(client, runs, owner):
    run_a, _ = runs
    other = ProjectFactory()
    other_a, other_b = make_model_runs(other, n=2)
    login(client, owner)
    response = client.post(
        _url("pairwise_create", run_a.project_id, run_a.pk),
        {"b": other_b.pk, "match": "input", "overlap": 1},
    )
    assert response.status_code == 400  # not a choice of this project's runs
    assert not ReviewQueue.objects.filter(kind="pairwise").exists()


def test_a_review_queue_id_is_not_a_pairwise_queue(client, project, owner):
    run = make_run(project, n_items=1)
    queue = queue_create(run=run, user=owner, query=ResultQuery())
    login(client, owner)
    assert client.get(_url("pairwise", project.pk, queue.pk)).status_code == 404


def test_viewers_read_but_cannot_answer_or_create(client, runs, owner, viewer):
    queue = pairwise_queue(runs, owner)
    login(client, viewer)
    page = client.get(_url("pairwise", queue.project_id, queue.pk)).content.decode()
    assert 'id="read-only"' in page and 'id="answer-form"' not in page
    answer = client.post(
        _url("pairwise_answer", queue.project_id, queue.pk, 1), {"side": "left"}
    )
    assert answer.status_code == 403
    run_a, run_b = runs
    create = client.post(
        _url("pairwise_create", run_a.project_id, run_a.pk),
        {"b": run_b.pk, "match": "input", "overlap": 1},
    )
    assert create.status_code == 403
    assert not Preference.objects.exists()
    assert ReviewQueue.objects.filter(kind="pairwise").count() == 1


def test_answers_need_the_csrf_token(runs, owner, reviewer):
    queue = pairwise_queue(runs, owner)
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    response = client.post(
        _url("pairwise_answer", queue.project_id, queue.pk, 1), {"side": "left"}
    )
    assert response.status_code == 403
    assert not Preference.objects.exists()


def test_login_is_required(client, runs, owner):
    queue = pairwise_queue(runs, owner)
    response = client.get(_url("pairwise", queue.project_id, queue.pk))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_compare_page_links_to_a_pairwise_queue_of_its_runs(client, project, owner):
    model_a, model_b = make_model_runs(project, n=3)
    run_a = make_run(project, dataset=model_a.dataset)
    run_b = make_run(project, dataset=model_b.dataset)
    login(client, owner)
    page = client.get(
        reverse("review:compare", args=[project.pk]),
        {"a": run_a.pk, "b": run_b.pk, "match": "input"},
    ).content.decode()
    link = _url("pairwise_create", project.pk, run_a.pk)
    assert f"{link}?b={run_b.pk}&amp;match=input" in page
    form = client.get(
        link, {"b": run_b.pk, "match": "key", "key": "id"}
    ).content.decode()
    assert f'value="{run_b.pk}" selected' in form
    assert 'value="key" selected' in form and 'value="id"' in form


def test_admin_lists_pairs_and_preferences_read_only(client, runs, owner, reviewer):
    queue = pairwise_queue(runs, owner)
    pairwise_answer(queue=queue, position=1, user=reviewer, side="left")
    owner.is_staff = owner.is_superuser = True
    owner.save()
    login(client, owner)
    for name in ("pairwiseitem", "preference"):
        assert client.get(f"/admin/review/{name}/").status_code == 200
    pref = Preference.objects.get()
    page = client.get(f"/admin/review/preference/{pref.pk}/change/").content.decode()
    assert 'name="choice"' not in page  # shown, not editable


def test_my_queue_page_lists_a_pairwise_queue_by_its_pairs(client, runs, owner):
    queue = pairwise_queue(runs, owner, overlap=2)
    login(client, owner)
    page = client.get(_url("assigned", queue.project_id)).content.decode()
    row = page.split(f'id="queue-row-{queue.pk}"')[1].split("</tr>")[0]
    assert "Pairwise review" in row and "4 pairs · 2 reviewers per pair" in row
    assert "reviewed" not in row
