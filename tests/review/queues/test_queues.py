from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent, Role
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Override, Result
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import QueueEntry, ReviewQueue
from evalsite.review.queues.selectors import queue_progress
from evalsite.review.queues.services import SOURCE_FAILING, queue_create
from tests.conftest import login
from tests.factories import MembershipFactory, RunScorerFactory, UserFactory
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    # Six items, judge scores: 1, 0.5, 0.33, 0, 0.67, 0 → fail at 2, 3, 5 (threshold 0.5).
    analyses = [
        judged_claims("yes", "yes"),
        judged_claims("yes", "no"),
        judged_claims("yes", "no", "no"),
        judged_claims("no", "no"),
        judged_claims("yes", "yes", "no"),
        judged_claims("no"),
    ]
    return make_run(project, n_items=6, analyses={"faithfulness": analyses})


@pytest.fixture
def queue(run, reviewer):
    return queue_create(run=run, user=reviewer, query=ResultQuery(passed=False))


def _queue_url(queue, pos=None):
    url = reverse("review:queue", args=[queue.project_id, queue.pk])
    return f"{url}?pos={pos}" if pos else url


def _action_url(queue, pos, action):
    return reverse(
        "review:queue_action", args=[queue.project_id, queue.pk, pos, action]
    )


def _result_at(queue, pos):
    return QueueEntry.objects.get(queue=queue, position=pos).result


# ------------------------------------------------------------------ building queues


def test_queue_create_freezes_matching_results_in_filter_order(run, reviewer, queue):
    indexes = [
        e.result.item.index for e in queue.entries.select_related("result__item")
    ]
    assert indexes == [2, 3, 5]
    assert queue.size == 3
    assert queue.filters == {"final_passed": False}
    assert AuditEvent.objects.filter(action="queue.create", run_id=run.pk).count() == 1


def test_queue_create_with_no_match_is_an_error(run, reviewer):
    with pytest.raises(ApplicationError, match="No results match"):
        queue_create(
            run=run, user=reviewer, query=ResultQuery(q="no such text anywhere")
        )
    assert not ReviewQueue.objects.exists()


def test_queue_round_robin_assigns_reviewers_in_turn_and_audits(
    run, project, reviewer, owner
):
    second = MembershipFactory(
        project=project, user=UserFactory(username="sam"), role=Role.REVIEWER
    ).user
    queue = queue_create(
        run=run,
        user=owner,
        query=ResultQuery(passed=False),
        assign_round_robin=True,
    )
    assignees = [
        e.result.assignee.username
        for e in queue.entries.select_related("result__assignee")
    ]
    # Reviewers (not the owner) sorted by username: rita, sam, rita.
    assert assignees == ["rita", "sam", "rita"]
    events = AuditEvent.objects.filter(action="result.assign")
    assert events.count() == 3
    assert {e.after["assignee"] for e in events} == {"rita", "sam"}
    assert all(e.actor == owner and e.result_id for e in events)
    assert second


def test_queue_create_view_builds_failing_queue_from_explorer_filters(
    client, reviewer, run
):
    login(client, reviewer)
    url = reverse("review:queue_create", args=[run.project_id, run.pk])
    response = client.post(url, {"source": "failing", "q": ""})
    queue = ReviewQueue.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("review:queue", args=[run.project_id, queue.pk])
    assert queue.size == 3 and queue.filters == {"final_passed": False}


def test_queue_create_view_htmx_redirects_client(client, reviewer, run):
    login(client, reviewer)
    url = reverse("review:queue_create", args=[run.project_id, run.pk])
    response = client.post(
        url, {"source": "filters", "reviewed": "no"}, headers={"HX-Request": "true"}
    )
    queue = ReviewQueue.objects.get()
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse(
        "review:queue", args=[run.project_id, queue.pk]
    )
    assert queue.size == 6


def test_queue_create_view_rejects_bad_input(client, reviewer, run):
    login(client, reviewer)
    url = reverse("review:queue_create", args=[run.project_id, run.pk])
    assert client.post(url, {"source": "everything"}).status_code == 400
    assert client.post(url, {"source": "filters", "min_score": "x"}).status_code == 400
    assert not ReviewQueue.objects.exists()


def test_queue_create_view_empty_match_redirects_back_with_message(
    client, reviewer, run
):
    login(client, reviewer)
    url = reverse("review:queue_create", args=[run.project_id, run.pk])
    response = client.post(url, {"source": "filters", "q": "zebra"}, follow=True)
    assert "No results match" in response.content.decode()
    assert response.redirect_chain[-1][0].endswith("?q=zebra")


def test_queue_create_view_permissions(client, run, viewer, outsider):
    url = reverse("review:queue_create", args=[run.project_id, run.pk])
    login(client, viewer)
    assert client.post(url, {"source": "failing"}).status_code == 403
    login(client, outsider)
    assert client.post(url, {"source": "failing"}).status_code == 404
    assert client.get(url).status_code == 405
    assert not ReviewQueue.objects.exists()


# ------------------------------------------------------------------ queue page


def test_queue_page_shows_one_result_with_progress(client, reviewer, queue):
    login(client, reviewer)
    response = client.get(_queue_url(queue))
    body = response.content.decode()
    assert response.status_code == 200
    assert "0 of 3 reviewed" in body
    assert "Result 1 of 3" in body
    assert f'id="result-scores-{_result_at(queue, 1).pk}"' in body
    assert "review-keys.js" in body
    assert 'data-key="j"' in body and 'id="keys-help"' in body


def test_queue_page_starts_at_first_unreviewed(client, reviewer, queue):
    Result.objects.filter(pk=_result_at(queue, 1).pk).update(reviewed=True)
    login(client, reviewer)
    response = client.get(_queue_url(queue))
    assert response.context["position"] == 2
    assert "1 of 3 reviewed" in response.content.decode()


def test_queue_page_htmx_navigation_returns_only_the_card(client, reviewer, queue):
    login(client, reviewer)
    response = client.get(_queue_url(queue, 2), headers={"HX-Request": "true"})
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="queue-card"')
    assert "<html" not in body
    assert "Result 2 of 3" in body
    # prev and next are links with href + hx-get + push-url
    assert (
        f'href="{_queue_url(queue, 1)}"' in body
        and f'hx-get="{_queue_url(queue, 3)}"' in body
    )


@pytest.mark.parametrize("pos", ["0", "4", "x"])
def test_queue_page_rejects_bad_position(client, reviewer, queue, pos):
    login(client, reviewer)
    assert client.get(f"{_queue_url(queue)}?pos={pos}").status_code == 400


def test_queue_page_permissions(client, queue, viewer, outsider):
    login(client, outsider)
    assert client.get(_queue_url(queue)).status_code == 404
    login(client, viewer)
    response = client.get(_queue_url(queue))
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="queue-actions"' not in body and 'id="flip-buttons"' not in body
    assert 'id="comment-form-' not in body
    assert client.post(_queue_url(queue)).status_code == 405


def test_queue_of_another_project_is_404_under_my_project_url(
    client, reviewer, outsider, queue
):
    other = outsider.memberships.get().project
    MembershipFactory(project=other, user=reviewer, role=Role.REVIEWER)
    login(client, reviewer)
    url = reverse("review:queue", args=[other.pk, queue.pk])
    assert client.get(url).status_code == 404


# ------------------------------------------------------------------ keys (actions)


def test_flip_key_overrides_verdict_and_returns_card_with_new_score(
    client, reviewer, queue
):
    result = _result_at(queue, 1)  # item 2: [yes, no, no] → 0.33, fail
    login(client, reviewer)
    url = _action_url(queue, 1, "flip")
    # Key 2 flips verdict 2: no (contradicted) → yes (supported).
    response = client.post(url, {"n": "2"}, headers={"HX-Request": "true"})
    body = response.content.decode()
    result.refresh_from_db()
    assert response.status_code == 200
    assert result.final_analysis["verdicts"][1]["verdict"] == "yes"
    assert result.final_score == 0.67 and result.final_passed is True
    assert result.reviewed and result.overridden
    assert body.lstrip().startswith('<div id="queue-card"')
    assert 'class="num final-score"><strong>0.67</strong>' in body
    assert "1 of 3 reviewed" in body
    override = Override.objects.get(result=result)
    assert (override.path, override.new_value, override.user) == (
        "verdicts.1.verdict",
        "yes",
        reviewer,
    )


def test_flip_buttons_show_what_each_key_does(client, reviewer, queue):
    login(client, reviewer)
    body = client.get(_queue_url(queue, 1)).content.decode()
    assert 'id="flip-1"' in body and 'id="flip-3"' in body and 'id="flip-4"' not in body
    assert "supported → contradicted" in body  # verdict 1 is yes


def test_undo_key_reverts_last_override(client, reviewer, queue):
    result = _result_at(queue, 1)
    login(client, reviewer)
    client.post(_action_url(queue, 1, "flip"), {"n": "1"})
    result.refresh_from_db()
    assert result.final_score == 0.0
    response = client.post(
        _action_url(queue, 1, "undo"), headers={"HX-Request": "true"}
    )
    result.refresh_from_db()
    assert response.status_code == 200
    assert result.final_score == 0.33 and not result.overridden and not result.reviewed
    assert Override.objects.get(result=result).reverted_by == reviewer
    assert AuditEvent.objects.filter(
        result_id=result.pk, action="override.revert"
    ).exists()


def test_undo_with_nothing_to_undo_shows_error_in_card(client, reviewer, queue):
    login(client, reviewer)
    response = client.post(
        _action_url(queue, 1, "undo"), headers={"HX-Request": "true"}
    )
    assert 'id="queue-error"' in response.content.decode()
    assert "Nothing of yours to undo" in response.content.decode()


@pytest.mark.parametrize("n", ["0", "4", "x", ""])
def test_flip_key_out_of_range_changes_nothing(client, reviewer, queue, n):
    login(client, reviewer)
    response = client.post(
        _action_url(queue, 1, "flip"), {"n": n}, headers={"HX-Request": "true"}
    )
    assert 'id="queue-error"' in response.content.decode()
    assert not Override.objects.exists()


def test_accept_key_marks_reviewed_agreeing_with_judge(client, reviewer, queue):
    result = _result_at(queue, 1)
    login(client, reviewer)
    response = client.post(_action_url(queue, 1, "accept"))
    result.refresh_from_db()
    assert response.status_code == 302 and response.url == _queue_url(queue, 1)
    assert result.reviewed and result.human_passed is False and not result.overridden


def test_pass_and_fail_keys_record_the_human_verdict(client, reviewer, queue):
    login(client, reviewer)
    client.post(_action_url(queue, 1, "pass"))
    client.post(_action_url(queue, 2, "fail"))
    first, second = _result_at(queue, 1), _result_at(queue, 2)
    assert (
        first.human_passed is True
        and first.final_passed is True
        and first.pass_overridden
    )
    assert (
        second.human_passed is False
        and second.final_passed is False
        and second.reviewed
    )
    assert queue_progress(queue=queue) == {"total": 3, "reviewed": 2}


def test_actions_permissions(client, queue, viewer, outsider, reviewer):
    url = _action_url(queue, 1, "pass")
    login(client, viewer)
    assert client.post(url).status_code == 403
    login(client, outsider)
    assert client.post(url).status_code == 404
    login(client, reviewer)
    assert client.get(url).status_code == 405
    assert client.post(_action_url(queue, 1, "explode")).status_code == 404
    assert client.post(_action_url(queue, 9, "pass")).status_code == 404
    assert not Override.objects.exists()


def test_owner_can_act_in_queue(client, owner, queue):
    login(client, owner)
    client.post(_action_url(queue, 1, "accept"))
    assert _result_at(queue, 1).reviewed_by == owner


# ------------------------------------------------------------------ assigned to me


def test_assigned_page_lists_my_results_with_progress(
    client, project, reviewer, owner, run
):
    queue_create(run=run, user=owner, query=ResultQuery(), assign_round_robin=True)
    Result.objects.filter(run=run, item__index=0).update(reviewed=True)
    login(client, reviewer)
    response = client.get(reverse("review:assigned", args=[project.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "1 of 6 reviewed" in body  # the run row
    assert len(response.context["rows"]) == 6
    assert "Review my 5 remaining" in body


def test_assigned_page_start_button_builds_a_queue_of_my_unreviewed(
    client, project, reviewer, owner, run
):
    other = MembershipFactory(
        project=project, user=UserFactory(username="sam"), role=Role.REVIEWER
    ).user
    queue_create(run=run, user=owner, query=ResultQuery(), assign_round_robin=True)
    login(client, reviewer)
    response = client.post(
        reverse("review:queue_create", args=[project.pk, run.pk]),
        {"source": "filters", "mine": "on", "reviewed": "no"},
    )
    queue = ReviewQueue.objects.order_by("-id").first()
    assert response.status_code == 302
    assert queue.size == 3
    assert {e.result.assignee_id for e in queue.entries.select_related("result")} == {
        reviewer.pk
    }
    assert other


def test_assigned_page_htmx_partial_and_permissions(client, project, viewer, outsider):
    url = reverse("review:assigned", args=[project.pk])
    login(client, viewer)
    response = client.get(url, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert (
        response.content.decode().lstrip().startswith('<section id="assigned-results"')
    )
    assert client.post(url).status_code == 405
    login(client, outsider)
    assert client.get(url).status_code == 404


# ------------------------------------------------------------------ what each key flips


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (
            "faithfulness",  # [yes, no, unsure]
            [
                ("verdicts.0.verdict", "no"),
                ("verdicts.1.verdict", "yes"),
                ("verdicts.2.verdict", "yes"),
            ],
        ),
        (
            "hallucination",
            [("verdicts.0.verdict", "no")]
            + [(f"verdicts.{i}.verdict", "yes") for i in (1, 2, 3)],
        ),
        (
            "context_relevance",  # high, medium, low → next level
            [
                ("evaluations.0.relevance", "medium"),
                ("evaluations.1.relevance", "low"),
                ("evaluations.2.relevance", "none"),
            ],
        ),
        ("factuality", [("category", "E")]),  # D → E
        ("custom_rubric", []),
    ],
)
def test_flip_fields_per_kind(kind, expected):
    from evalsite.review.queues.selectors import flip_fields
    from tests.review.builders import ANALYSES

    fields = flip_fields(kind=kind, analysis=ANALYSES[kind])
    assert [(f.path, f.new_value) for f in fields] == expected
    assert [f.number for f in fields] == list(range(1, len(expected) + 1))


def test_flip_fields_stop_at_nine():
    from evalsite.review.queues.selectors import flip_fields

    analysis = judged_claims(*["yes"] * 12)
    assert len(flip_fields(kind="faithfulness", analysis=analysis)) == 9


# Analyses the judge would not write, beside ones it does: where a field is missing
# the keys stop (get_path fails), which the database's JSON path must not hide.
_ODD_ANALYSES = {
    "faithfulness": [
        judged_claims("yes", "no", "idk"),
        {
            "claims": ["a", "b", "c"],
            "verdicts": [{"verdict": "yes"}, {}, {"verdict": "no"}],
        },
        {"verdicts": [{"verdict": "yes"}, "not an object", {"verdict": "no"}]},
        {"verdicts": [{"verdict": None}, {"verdict": {"nested": True}}]},
        {"verdicts": {"0": {"verdict": "yes"}}},
        {"verdicts": []},
        {"claims": []},
        {},
        None,
        judged_claims(*["yes", "no"] * 6),
    ],
    "factuality": [{"category": "B"}, {"category": None}, {"other": "A"}, {}, None],
    "context_relevance": [
        {"evaluations": [{"relevance": "high", "used": True}, {"used": False}]},
        {"evaluations": [{"relevance": "low"}]},
    ],
    "exact_match": [{"anything": [1, 2]}, None],
}


@pytest.mark.parametrize("limit", [9, 10_000])
def test_overridable_values_read_from_the_database_equal_the_analysis_walk(
    project, limit
):
    from evalsite.review.queues.selectors import (
        overridable_values,
        overridable_values_read,
    )
    from tests.factories import ResultFactory

    run = make_run(project, kinds=("faithfulness",), n_items=12)
    items = list(run.dataset.items.order_by("index"))
    expected = {}
    for kind, analyses in _ODD_ANALYSES.items():
        scorer = RunScorerFactory(run=run, kind=kind, position=len(expected) + 1)
        for item, analysis in zip(items, analyses, strict=False):
            result = ResultFactory(
                run=run,
                run_scorer=scorer,
                item=item,
                analysis=analysis,
                judge_passed=True,
                final_passed=False,
            )
            expected[result.pk] = (
                True,
                False,
                overridable_values(kind=kind, analysis=analysis, limit=limit),
            )
    results = Result.objects.filter(pk__in=list(expected))
    got = {
        result_id: (judged, final, fields)
        for result_id, judged, final, fields in overridable_values_read(
            results, limit=limit
        )
    }
    assert got == expected
    # The walk stops at the first element without the field.
    stopped = [fields for _, _, fields in expected.values() if len(fields) == 1]
    assert [("verdicts.0.verdict", "yes")] in stopped


def test_flip_key_on_factuality_cycles_category_and_recomputes(
    client, reviewer, project
):
    run = make_run(project, kinds=("factuality",))
    queue = queue_create(run=run, user=reviewer, query=ResultQuery())
    login(client, reviewer)
    client.post(_action_url(queue, 1, "flip"), {"n": "1"})
    result = _result_at(queue, 1)
    assert result.final_analysis["category"] == "E"
    assert (
        result.final_score == 1.0 and result.final_passed
    )  # E: differences don't matter


def test_queue_create_failing_source_queues_final_fails_unless_told_otherwise(
    reviewer, run
):
    failing = queue_create(
        run=run, user=reviewer, query=ResultQuery(), source=SOURCE_FAILING
    )
    assert failing.source == ReviewQueue.Source.FILTERS
    assert failing.filters == {"final_passed": False}
    passing = queue_create(
        run=run, user=reviewer, query=ResultQuery(passed=True), source=SOURCE_FAILING
    )
    assert passing.filters == {"final_passed": True}
