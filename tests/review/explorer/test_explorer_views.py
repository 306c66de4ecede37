"""The explorer page at work: the question beside the output, page sizes, the bulk
action bar and its posts, saved filters."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlparse

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.evals.models import Result
from evalsite.review.explorer.saved_filters import saved_filter_create
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import ReviewQueue, SavedFilter
from evalsite.review.queues.services import queue_create
from tests.conftest import login
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    # Four items × two scorers; faithfulness passes items 0 and 2, fails 1 and 3.
    analyses = [judged_claims("yes"), judged_claims("no")] * 2
    run = make_run(
        project,
        n_items=4,
        kinds=("faithfulness", "hallucination"),
        analyses={"faithfulness": analyses},
    )
    item = run.dataset.items.get(index=0)
    item.input = "Where is the <b>Eiffel</b> Tower? " + "more words " * 40
    item.save()
    return run


@pytest.fixture
def other_run(project):
    return make_run(project, n_items=1)


def _url(run, **params):
    base = reverse("review:explorer", args=[run.project_id, run.pk])
    return f"{base}?{urlencode(params)}" if params else base


def _bulk_url(run):
    return reverse("review:explorer_bulk", args=[run.project_id, run.pk])


def _ids(run, **filters):
    return list(
        Result.objects.filter(run=run, **filters)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _messages(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


# ------------------------------------------------------------------ the page


def test_explorer_shows_the_question_beside_the_output_truncated_and_escaped(
    client, viewer, run
):
    body = login(client, viewer).get(_url(run)).content.decode()
    assert "<th>Question</th>" in body and "<th>Output</th>" in body
    assert "Where is the &lt;b&gt;Eiffel&lt;/b&gt; Tower?" in body
    assert "<b>Eiffel</b>" not in body
    assert "more words " * 40 not in body  # truncated to 120 characters
    assert 'class="small row-question"' in body


@pytest.mark.parametrize("size", [25, 50, 100, 200])
def test_explorer_page_sizes(client, reviewer, project, size):
    big = make_run(project, n_items=120, kinds=("faithfulness", "hallucination"))
    response = login(client, reviewer).get(_url(big, per_page=size))
    assert response.status_code == 200
    assert len(response.context["rows"]) == size
    assert f'<option value="{size}" selected>' in response.content.decode()


@pytest.mark.parametrize("size", ["10", "500", "abc", "-1"])
def test_explorer_refuses_other_page_sizes_with_400(client, reviewer, run, size):
    response = login(client, reviewer).get(_url(run, per_page=size))
    assert response.status_code == 400
    assert "per_page" in response.content.decode()


def test_explorer_page_links_keep_the_page_size(client, reviewer, project):
    big = make_run(project, n_items=120, kinds=("faithfulness",))
    response = login(client, reviewer).get(_url(big, per_page=100))
    assert "per_page=100&amp;after=" in response.content.decode()
    following = client.get(response.context["pages"]["next"])
    assert len(following.context["rows"]) == 20


def test_reviewer_sees_the_bulk_bar_row_checkboxes_and_saved_filters(
    client, reviewer, run
):
    body = login(client, reviewer).get(_url(run, final="fail")).content.decode()
    assert 'id="explorer-bulk"' in body
    assert body.count('form="explorer-bulk"') == 2  # one checkbox per row
    assert 'id="select-page"' in body and "js/explorer-bulk.js" in body
    assert 'value="all" id="bulk-scope-all"' in body
    assert "all <strong>2</strong> results matching this filter" in body
    # The filter goes along for "all matching" and for saving it.
    assert '<input type="hidden" name="final" value="fail">' in body
    assert 'id="explorer-saved-filters"' in body
    assert '<option value="rita">rita</option>' in body


def test_viewer_sees_no_bulk_bar_checkboxes_or_saved_filters(client, viewer, run):
    body = login(client, viewer).get(_url(run)).content.decode()
    assert 'id="results-table"' in body
    for absent in (
        'id="explorer-bulk"',
        'form="explorer-bulk"',
        "select-page",
        "explorer-saved-filters",
    ):
        assert absent not in body


def test_explorer_htmx_partial_carries_the_bulk_bar_for_the_new_filter(
    client, reviewer, run
):
    response = login(client, reviewer).get(
        _url(run, final="pass"), headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="explorer"') and "<html" not in body
    assert '<input type="hidden" name="final" value="pass">' in body
    assert 'id="explorer-bulk"' in body


def test_explorer_query_count_stays_flat_with_the_bulk_bar(
    client, reviewer, project, django_assert_max_num_queries
):
    big = make_run(project, n_items=100, kinds=("faithfulness", "hallucination"))
    saved_filter_create(
        project=project, user=reviewer, name="f", query=ResultQuery(passed=False)
    )
    queue_create(run=big, user=reviewer, query=ResultQuery(passed=False))
    login(client, reviewer)
    with django_assert_max_num_queries(15):
        response = client.get(_url(big, per_page=200))
    assert len(response.context["rows"]) == 200


# ------------------------------------------------------------------ bulk posts


def test_bulk_accept_of_checked_rows_then_back_to_the_same_page(client, reviewer, run):
    picked = _ids(run)[:2]
    response = login(client, reviewer).post(
        _bulk_url(run),
        {
            "action": "accept",
            "scope": "selected",
            "ids": picked,
            "final": "pass",
            "page": "1",
            "per_page": "25",
        },
    )
    assert response.status_code == 302
    target = urlparse(response["Location"])
    assert dict(parse_qsl(target.query)) == {
        "final": "pass",
        "page": "1",
        "per_page": "25",
    }
    assert _ids(run, reviewed=True) == picked
    assert _messages(response) == ["Accepted 2 results."]


def test_bulk_accept_of_all_matching_the_posted_filter_reports_skips(
    client, reviewer, run
):
    failing = _ids(run, final_passed=False)
    Result.objects.filter(pk=failing[0]).update(status=Result.Status.ERROR)
    response = login(client, reviewer).post(
        _bulk_url(run), {"action": "accept", "scope": "all", "final": "fail"}
    )
    assert response.status_code == 302
    assert set(_ids(run, reviewed=True)) == set(failing[1:])
    n = len(failing) - 1
    assert _messages(response) == [
        f"Accepted {n} result{'s' if n != 1 else ''}; skipped 1 "
        "(1 not scored (errored, pending or cancelled))."
    ]
    assert AuditEvent.objects.filter(action="result.accept").count() == len(failing) - 1


def test_bulk_post_with_ids_of_another_run_changes_nothing_and_says_why(
    client, reviewer, run, other_run
):
    foreign = _ids(other_run)[0]
    response = login(client, reviewer).post(
        _bulk_url(run),
        {"action": "accept", "scope": "selected", "ids": [_ids(run)[0], foreign]},
    )
    assert response.status_code == 302
    assert not Result.objects.filter(reviewed=True).exists()
    [message] = _messages(response)
    assert message.startswith("Nothing changed: 1 of the selected results")
    assert str(foreign) in message


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"action": "accept", "scope": "selected"}, "Select at least one result"),
        ({"action": "assign", "scope": "all"}, "Choose whom"),
        ({"action": "explode", "scope": "all"}, "action"),
        ({"action": "accept", "scope": "selected", "ids": ["x"]}, "not a result id"),
        ({"action": "accept", "scope": "all", "final": "maybe"}, "final"),
    ],
)
def test_bulk_post_refuses_bad_input_with_a_message(client, reviewer, run, data, error):
    response = login(client, reviewer).post(_bulk_url(run), data)
    assert response.status_code == 302
    [message] = _messages(response)
    assert message.startswith("Nothing changed") and error in message
    assert not Result.objects.filter(reviewed=True).exists()


def test_bulk_assign_and_unassign(client, owner, reviewer, run):
    picked = _ids(run)[:3]
    login(client, owner)
    response = client.post(
        _bulk_url(run),
        {"action": "assign", "scope": "selected", "ids": picked, "assign_to": "rita"},
    )
    assert _messages(response) == ["Assigned 3 results."]
    assert _ids(run, assignee=reviewer) == picked
    response = client.post(
        _bulk_url(run), {"action": "assign", "scope": "all", "assign_to": "-"}
    )
    assert _messages(response)[-1] == (
        f"Unassigned 3 results; skipped {len(_ids(run)) - 3} "
        f"({len(_ids(run)) - 3} already unassigned)."
    )
    assert not Result.objects.filter(assignee__isnull=False).exists()


def test_bulk_assign_to_a_viewer_is_refused(client, owner, viewer, run):
    response = login(client, owner).post(
        _bulk_url(run), {"action": "assign", "scope": "all", "assign_to": "victor"}
    )
    assert "not a reviewer of this project" in _messages(response)[0]
    assert not Result.objects.filter(assignee__isnull=False).exists()


def test_bulk_queue_of_checked_rows_goes_to_the_new_queue(client, reviewer, run):
    picked = _ids(run)[1:3]
    response = login(client, reviewer).post(
        _bulk_url(run),
        {
            "action": "queue",
            "scope": "selected",
            "ids": picked,
            "queue_name": "two",
            "blind": "on",
        },
    )
    queue = ReviewQueue.objects.get()
    assert response["Location"] == reverse(
        "review:queue", args=[run.project_id, queue.pk]
    )
    assert queue.name == "two" and queue.blind and queue.size == 2
    assert _messages(response) == ["Queued 2 results in “two”."]


def test_bulk_queue_appends_to_a_chosen_queue_of_this_run(
    client, reviewer, run, other_run
):
    ids = _ids(run)
    queue = queue_create(
        run=run, user=reviewer, query=ResultQuery(), result_ids=ids[:1]
    )
    login(client, reviewer)
    client.post(
        _bulk_url(run),
        {"action": "queue", "scope": "selected", "ids": ids[:3], "queue": queue.pk},
    )
    queue.refresh_from_db()
    assert queue.size == 3
    # Another run's queue is not a choice: refused, nothing added.
    foreign = queue_create(run=other_run, user=reviewer, query=ResultQuery())
    response = client.post(
        _bulk_url(run),
        {"action": "queue", "scope": "selected", "ids": ids[3:4], "queue": foreign.pk},
    )
    assert _messages(response)[-1].startswith(
        "Nothing changed: queue: Select a valid choice"
    )
    assert foreign.entries.count() == 1


@pytest.mark.parametrize(
    ("action", "export", "extra"),
    [
        ("export_csv", "exports:run_csv", {}),
        ("export_excel", "exports:run_csv", {"excel": "1"}),
        ("export_jsonl", "exports:run_jsonl", {}),
    ],
)
def test_bulk_export_of_checked_rows_redirects_to_the_export_of_those_ids(
    client, reviewer, run, action, export, extra
):
    picked = _ids(run)[:2]
    response = login(client, reviewer).post(
        _bulk_url(run),
        {"action": action, "scope": "selected", "ids": picked, "sort": "-score"},
    )
    target = urlparse(response["Location"])
    assert target.path == reverse(export, args=[run.project_id, run.pk])
    params = parse_qsl(target.query)
    assert [int(v) for k, v in params if k == "ids"] == picked
    assert {k: v for k, v in params if k != "ids"} == extra
    download = client.get(response["Location"])
    assert download.status_code == 200 and download.streaming


def test_bulk_export_of_all_matching_redirects_to_the_filtered_export(
    client, reviewer, run
):
    response = login(client, reviewer).post(
        _bulk_url(run), {"action": "export_csv", "scope": "all", "final": "fail"}
    )
    target = urlparse(response["Location"])
    assert target.path == reverse("exports:run_csv", args=[run.project_id, run.pk])
    assert dict(parse_qsl(target.query)) == {"final": "fail"}


def test_bulk_htmx_post_answers_with_a_client_redirect(client, reviewer, run):
    response = login(client, reviewer).post(
        _bulk_url(run),
        {"action": "accept", "scope": "all"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200 and response["HX-Redirect"] == _url(run)


def test_bulk_viewer_forged_post_is_403_and_changes_nothing(client, viewer, run):
    response = login(client, viewer).post(
        _bulk_url(run), {"action": "accept", "scope": "all"}
    )
    assert response.status_code == 403
    assert not Result.objects.filter(reviewed=True).exists()


def test_bulk_outsider_gets_404(client, outsider, run):
    response = login(client, outsider).post(
        _bulk_url(run), {"action": "accept", "scope": "all"}
    )
    assert response.status_code == 404
    other_project = outsider.memberships.get().project_id
    url = reverse("review:explorer_bulk", args=[other_project, run.pk])
    assert client.post(url, {"action": "accept", "scope": "all"}).status_code == 404


def test_bulk_requires_post(client, reviewer, run):
    assert login(client, reviewer).get(_bulk_url(run)).status_code == 405


def test_bulk_requires_csrf(reviewer, run):
    from django.test import Client

    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(reviewer)
    response = csrf_client.post(_bulk_url(run), {"action": "accept", "scope": "all"})
    assert response.status_code == 403
    assert not Result.objects.filter(reviewed=True).exists()


# ------------------------------------------------------------------ saved filters


def _save_url(run):
    return reverse("review:saved_filter_create", args=[run.project_id, run.pk])


def _apply_url(run, saved):
    return reverse("review:saved_filter_apply", args=[run.project_id, run.pk, saved.pk])


def _delete_url(run, saved):
    return reverse(
        "review:saved_filter_delete", args=[run.project_id, run.pk, saved.pk]
    )


def test_save_a_filter_then_see_it_listed_and_apply_it(client, reviewer, run):
    login(client, reviewer)
    response = client.post(
        _save_url(run),
        {"name": "Failing", "final": "fail", "reviewed": "no", "sort": "-score"},
    )
    assert response.status_code == 302
    saved = SavedFilter.objects.get()
    assert saved.user == reviewer and saved.name == "Failing"
    assert _messages(response) == ["Filter “Failing” saved."]
    body = client.get(_url(run)).content.decode()
    assert f'href="{_apply_url(run, saved)}"' in body and ">Failing</a>" in body
    applied = client.get(_apply_url(run, saved))
    assert applied.status_code == 302
    target = urlparse(applied["Location"])
    assert target.path == _url(run)
    assert dict(parse_qsl(target.query)) == {
        "final": "fail",
        "reviewed": "no",
        "sort": "-score",
    }


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("", "This field is required."),
        ("x" * 101, "at most 100 characters"),
        ("nul\x00", "Null characters are not allowed."),
    ],
)
def test_save_filter_bad_name_renders_the_field_error_with_400(
    client, reviewer, run, name, error
):
    response = login(client, reviewer).post(
        _save_url(run), {"name": name, "final": "fail"}
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="saved-filter-name-error"' in body and error in body
    assert 'aria-invalid="true"' in body
    # The page keeps the filter being saved.
    assert '<input type="hidden" name="final" value="fail">' in body
    assert not SavedFilter.objects.exists()


def test_save_filter_duplicate_name_is_a_field_error(client, reviewer, run):
    login(client, reviewer)
    client.post(_save_url(run), {"name": "Mine", "final": "fail"})
    response = client.post(_save_url(run), {"name": "Mine", "final": "pass"})
    assert response.status_code == 400
    assert "You already have a filter with this name." in response.content.decode()
    assert SavedFilter.objects.count() == 1


def test_saved_filter_of_another_user_or_project_is_404(
    client, reviewer, owner, outsider, run
):
    theirs = saved_filter_create(
        project=run.project, user=owner, name="theirs", query=ResultQuery()
    )
    login(client, reviewer)
    assert client.get(_apply_url(run, theirs)).status_code == 404
    assert client.post(_delete_url(run, theirs)).status_code == 404
    body = client.get(_url(run)).content.decode()
    assert "theirs" not in body
    login(client, outsider)
    assert client.get(_apply_url(run, theirs)).status_code == 404
    other_project = outsider.memberships.get().project_id
    url = reverse("review:saved_filter_apply", args=[other_project, run.pk, theirs.pk])
    assert client.get(url).status_code == 404
    assert SavedFilter.objects.count() == 1


def test_delete_my_saved_filter_and_return_to_the_filter_i_was_on(
    client, reviewer, run
):
    saved = saved_filter_create(
        project=run.project, user=reviewer, name="x", query=ResultQuery()
    )
    response = login(client, reviewer).post(_delete_url(run, saved), {"final": "pass"})
    assert response.status_code == 302
    assert dict(parse_qsl(urlparse(response["Location"]).query)) == {"final": "pass"}
    assert not SavedFilter.objects.exists()
    assert _messages(response) == ["Filter “x” deleted."]


def test_saved_filter_writes_need_review_rights_and_post(client, viewer, reviewer, run):
    saved = saved_filter_create(
        project=run.project, user=reviewer, name="x", query=ResultQuery()
    )
    login(client, viewer)
    assert client.post(_save_url(run), {"name": "v"}).status_code == 403
    assert client.post(_delete_url(run, saved)).status_code == 403
    login(client, reviewer)
    assert client.get(_save_url(run)).status_code == 405
    assert client.get(_delete_url(run, saved)).status_code == 405
    assert client.post(_apply_url(run, saved)).status_code == 405
    assert SavedFilter.objects.count() == 1


def test_applying_a_filter_on_a_run_without_its_scorer_warns(
    client, reviewer, run, project
):
    elsewhere = make_run(project, n_items=1, kinds=("toxicity",))
    saved = saved_filter_create(
        project=project,
        user=reviewer,
        name="halluc",
        query=ResultQuery(run_scorer_id=run.run_scorers.last().pk, passed=False),
    )
    response = login(client, reviewer).get(_apply_url(elsewhere, saved))
    assert dict(parse_qsl(urlparse(response["Location"]).query)) == {"final": "fail"}
    assert _messages(response) == [
        "“halluc”: Its scorer is not one of this run's: showing every scorer."
    ]
