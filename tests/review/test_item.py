"""Item page, htmx override/undo, permissions and project isolation (UI)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.evals.models import Result
from evalsite.review.models import Override
from evalsite.review.services import override_create, result_accept
from tests.conftest import login
from tests.factories import CommentFactory, JudgeCallFactory, OverrideFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return make_run(
        project, kinds=["faithfulness", "hallucination", "context_relevance"]
    )


@pytest.fixture
def result(run):
    r = Result.objects.get(run=run, run_scorer__kind="faithfulness")
    JudgeCallFactory(
        result=r,
        step="verdicts",
        messages=[{"role": "user", "content": "Judge <these> claims"}],
        raw_response='{"verdicts": []}',
        prompt_tokens=120,
        completion_tokens=30,
        latency_ms=412.0,
    )
    return r


def _item_url(result):
    return reverse("review:item", args=[result.run.project_id, result.pk])


def _override_url(result):
    return reverse("review:override_create", args=[result.run.project_id, result.pk])


def test_item_page_shows_item_analysis_calls_and_controls(client, reviewer, result):
    html = login(client, reviewer).get(_item_url(result)).content.decode()
    assert "What is the capital of France" in html
    assert 'id="chunk-1"' in html and 'id="chunk-3"' in html  # numbered context chunks
    assert "Paris, with about 2.1 million inhabitants." in html  # reference
    assert "split" in html and "wiki" in html  # metadata
    # verdict labels from KINDS value_labels, with reasons
    assert "supported" in html and "contradicted" in html and "unverifiable" in html
    assert "Context says 2.1M." in html
    assert f'id="result-scores-{result.pk}"' in html
    assert "120 prompt + 30 completion tokens" in html and "412 ms" in html
    # The prompt and raw reply load when their <details> opens, not with the page.
    call = result.calls.get()
    call_url = reverse(
        "review:judge_call", args=[result.run.project_id, result.pk, call.pk]
    )
    assert "Judge &lt;these&gt; claims" not in html and call_url in html
    detail = client.get(call_url, headers={"HX-Request": "true"}).content.decode()
    assert "Judge &lt;these&gt; claims" in detail  # escaped
    assert '{"verdicts": []}' in detail.replace("&quot;", '"')
    assert 'name="path" value="verdicts.1.verdict"' in html
    assert "Override score" in html
    assert f'id="agg-{result.run_scorer_id}"' in html  # this scorer's aggregates


def test_hallucination_labels_and_context_relevance_controls(client, reviewer, run):
    login(client, reviewer)
    hall = Result.objects.get(run=run, run_scorer__kind="hallucination")
    html = client.get(_item_url(hall)).content.decode()
    assert "hallucinated" in html and "→ supported" in html
    cr = Result.objects.get(run=run, run_scorer__kind="context_relevance")
    html = client.get(_item_url(cr)).content.decode()
    assert (
        'value="evaluations.0.used"' in html
        and 'value="evaluations.2.relevance"' in html
    )
    assert "not used" in html and "irrelevant" in html


def test_per_item_page_lists_every_scorer(client, viewer, run, result):
    url = reverse("review:run_item", args=[run.project_id, run.pk, result.item_id])
    html = login(client, viewer).get(url).content.decode()
    for r in Result.objects.filter(run=run):
        assert f'id="result-panel-{r.pk}"' in html


def test_viewer_sees_no_controls_and_gets_403_on_forged_posts(client, viewer, result):
    login(client, viewer)
    html = client.get(_item_url(result)).content.decode()
    assert (
        "flip-form" not in html and "Override score" not in html and "Undo" not in html
    )
    post = {"kind": "verdict", "path": "verdicts.1.verdict", "value": "yes"}
    assert client.post(_override_url(result), post).status_code == 403
    assert (
        client.post(_override_url(result), post, HTTP_HX_REQUEST="true").status_code
        == 403
    )
    accept = reverse("review:accept", args=[result.run.project_id, result.pk])
    assert client.post(accept).status_code == 403
    assert not Override.objects.exists() and not AuditEvent.objects.exists()


def test_viewer_403_on_undo(client, viewer, reviewer, result):
    o = override_create(result=result, user=reviewer, kind="pass", value=True)
    url = reverse("review:override_revert", args=[result.run.project_id, o.pk])
    assert login(client, viewer).post(url).status_code == 403
    o.refresh_from_db()
    assert o.reverted_at is None


def test_outsider_gets_404_everywhere(client, outsider, run, result):
    login(client, outsider)
    pid = run.project_id
    o = OverrideFactory(result=result, kind="pass", new_value=True)
    urls_get = [
        _item_url(result),
        reverse("review:run_item", args=[pid, run.pk, result.item_id]),
        reverse("review:rescore", args=[pid, run.pk]),
        reverse("review:compare", args=[pid]) + f"?a={run.pk}&b={run.pk}",
    ]
    for url in urls_get:
        assert client.get(url).status_code == 404, url
    urls_post = [
        _override_url(result),
        reverse("review:accept", args=[pid, result.pk]),
        reverse("review:override_revert", args=[pid, o.pk]),
        reverse("review:rescore", args=[pid, run.pk]),
    ]
    for url in urls_post:
        assert client.post(url, {"kind": "pass", "value": "pass"}).status_code == 404, (
            url
        )


def test_result_of_another_project_under_my_project_url_is_404(
    client, outsider, result
):
    other_project = outsider.memberships.get().project
    login(client, outsider)
    url = reverse("review:item", args=[other_project.pk, result.pk])
    assert client.get(url).status_code == 404


def test_htmx_flip_returns_panel_and_oob_aggregates(client, reviewer, result):
    login(client, reviewer)
    resp = client.post(
        _override_url(result),
        {
            "kind": "verdict",
            "path": "verdicts.1.verdict",
            "value": "yes",
            "note": "ctx ok",
        },
        HTTP_HX_REQUEST="true",
    )
    assert resp.status_code == 200
    html = resp.content.decode()
    assert html.lstrip().startswith(f'<article id="result-panel-{result.pk}"')
    assert "<html" not in html  # a partial, not the page
    assert 'data-final-score="0.67"' in html
    assert (
        f'id="agg-{result.run_scorer_id}" class="scorer-aggregate" hx-swap-oob="true"'
        in html
    )
    assert "1 override moved the pass rate 0 % → 100 %" in html
    assert "ctx ok" in html  # the override list with the note
    o = Override.objects.get()
    assert (o.path, o.old_value, o.new_value, o.user) == (
        "verdicts.1.verdict",
        "no",
        "yes",
        reviewer,
    )

    undo = reverse("review:override_revert", args=[result.run.project_id, o.pk])
    html = client.post(undo, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-final-score="0.33"' in html and "No overrides yet" in html
    assert "undone by rita" in html


def test_used_flag_is_posted_as_text_and_becomes_a_boolean(client, reviewer, run):
    cr = Result.objects.get(run=run, run_scorer__kind="context_relevance")
    login(client, reviewer).post(
        _override_url(cr),
        {"kind": "verdict", "path": "evaluations.0.used", "value": "false"},
        HTTP_HX_REQUEST="true",
    )
    cr.refresh_from_db()
    assert cr.final_analysis["evaluations"][0]["used"] is False
    # high unused: (1 + 0.7 + 0.3)/3 − 0.1 = 0.5667 → 0.57
    assert cr.final_score == 0.57


def test_score_and_pass_forms_without_js_redirect_back(client, reviewer, result):
    login(client, reviewer)
    resp = client.post(
        _override_url(result), {"kind": "score", "value": "0.9", "note": "n"}
    )
    assert resp.status_code == 302 and resp["Location"].startswith(_item_url(result))
    resp = client.post(_override_url(result), {"kind": "pass", "value": "fail"})
    result.refresh_from_db()
    assert (result.final_score, result.final_passed) == (0.9, False)


def test_invalid_override_shows_the_error_in_the_panel(client, reviewer, result):
    login(client, reviewer)
    html = client.post(
        _override_url(result),
        {"kind": "verdict", "path": "verdicts.7.verdict", "value": "yes"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert 'role="alert"' in html and "out of range" in html
    assert not Override.objects.exists()


def test_a_stale_page_is_refused_and_shows_the_newest_state(
    client, reviewer, owner, result
):
    """Two reviewers on one result: the second write was made on a page that did not
    show the first, so it is refused (no last-writer-wins) and the panel shows the
    newest state."""
    override_create(result=result, user=owner, kind="pass", value=True)
    html = (
        login(client, reviewer)
        .post(
            _override_url(result),
            {"kind": "score", "value": "0.1", "version": "0"},
            HTTP_HX_REQUEST="true",
        )
        .content.decode()
    )
    assert "changed since you loaded it" in html
    result.refresh_from_db()
    assert result.final_score != 0.1 and result.final_passed is True
    assert result.version == 1
    # The panel now carries the newest version: sent again from it, the change lands.
    assert 'name="version" value="1"' in html
    login(client, reviewer).post(
        _override_url(result),
        {"kind": "score", "value": "0.1", "version": "1"},
        HTTP_HX_REQUEST="true",
    )
    result.refresh_from_db()
    assert (result.final_score, result.version) == (0.1, 2)


def test_hide_judge_hook_hides_verdicts_scores_and_reason(client, reviewer, result):
    html = login(client, reviewer).get(_item_url(result) + "?blind=1").content.decode()
    assert "Judge verdict hidden" in html
    assert "Context says 2.1M." not in html and "The judge&#x27;s reason." not in html
    assert 'class="final-value"' not in html and "flip-form" not in html
    assert "Override score" not in html  # its default value would show the score


def test_htmx_get_returns_only_the_result_panel(client, viewer, result):
    resp = login(client, viewer).get(_item_url(result), HTTP_HX_REQUEST="true")
    html = resp.content.decode()
    assert resp.status_code == 200 and "<html" not in html
    assert html.lstrip().startswith(f'<article id="result-panel-{result.pk}"')


def test_item_page_shows_comments_and_history(client, reviewer, result):

    CommentFactory(
        result=result, user=reviewer, body="Claim 2 is in chunk 3 <b>really</b>"
    )
    override_create(
        result=result, user=reviewer, kind="pass", value=True, note="judge too strict"
    )
    login(client, reviewer)
    body = client.get(
        reverse("review:item", args=[result.run.project_id, result.pk])
    ).content.decode()
    assert "Claim 2 is in chunk 3 &lt;b&gt;really&lt;/b&gt;" in body
    assert f'id="comment-form-{result.pk}"' in body
    assert "judge too strict" in body
    assert "rita" in body.split("History")[1]


def _call_url(result, call, project_id=None):
    return reverse(
        "review:judge_call",
        args=[project_id or result.run.project_id, result.pk, call.pk],
    )


def test_judge_call_detail_is_scoped_to_its_result_and_project(
    client, viewer, outsider, run, result
):
    call = result.calls.get()
    login(client, viewer)
    assert client.get(_call_url(result, call)).status_code == 200  # viewers may read
    other = Result.objects.filter(run=run).exclude(pk=result.pk).first()
    assert client.get(_call_url(other, call)).status_code == 404  # not its result
    login(client, outsider)
    assert client.get(_call_url(result, call)).status_code == 404


def test_judge_call_detail_stays_hidden_in_blind_review_until_answered(
    client, reviewer, project, result
):
    call = result.calls.get()
    project.blind_review = True
    project.save(update_fields=["blind_review"])
    login(client, reviewer)
    assert client.get(_call_url(result, call)).status_code == 403
    Result.objects.filter(pk=result.pk).update(reviewed=True)
    assert client.get(_call_url(result, call)).status_code == 200


def test_item_page_says_how_long_ago_it_was_reviewed(
    client, reviewer, result, frozen_clock
):
    result_accept(result=result, user=reviewer)
    frozen_clock.shift(7 * 60)
    html = login(client, reviewer).get(_item_url(result)).content.decode()
    assert "Reviewed by rita 7\xa0minutes ago" in html


@pytest.mark.parametrize(
    "kind, texts",
    [
        ("rubric", ["Has a title", "Cites a source"]),
        ("prompt_alignment", ["Be brief.", "Cite."]),
        ("tool_call_accuracy_llm", ["search", "weather"]),
        ("trajectory_accuracy_llm", ["search", "book"]),
        ("noise_sensitivity", ["completeness", "relevance"]),
        ("answer_similarity", ["Paris is the capital.", "It has 2.1 million people."]),
        ("summarization", ["C1", "C2", "Q1?", "Q2?"]),
    ],
)
def test_rows_of_the_newer_kinds_say_what_each_verdict_is_about(
    client, reviewer, project, kind, texts
):
    run = make_run(project, kinds=[kind])
    result = Result.objects.get(run=run)
    login(client, reviewer)
    html = client.get(_item_url(result)).content.decode()
    for number, text in enumerate(texts, 1):
        # One row per verdict, numbered across lists so each flip key names one row.
        row = html.split(f'data-number="{number}"', 1)[1].split("</tr>", 1)[0]
        assert text in row
    assert f'data-number="{len(texts) + 1}"' not in html


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "–"),
        (0, "0 ms"),
        (840.4, "840 ms"),
        (4200, "4.2 s"),
        (294411, "4 min 54 s"),
    ],
)
def test_durations_read_in_the_unit_a_reader_expects(ms, text):
    from evalsite.review.templatetags.review_format import duration_ms

    assert duration_ms(ms) == text
