"""A queue that flows (issue 17 part 6): preferences, guidelines beside the card, the
reference and its word diff, verdict labels, 1-based chunks, plurals, and the item's
history in the same response as the change."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent, ReviewerPreferences
from evalsite.evals.models import Result
from evalsite.review.models import Override, QueueEntry
from evalsite.review.schemas import ResultQuery
from evalsite.review.selectors.diff import WORD_DIFF_MAX_WORDS, word_diff
from evalsite.review.selectors.labels import override_change, path_label
from evalsite.review.selectors.preferences import reviewer_preferences
from evalsite.review.services import (
    override_create,
    override_revert,
    queue_create,
    result_flip_field,
)
from evalsite.review.services.guidelines import guideline_save
from evalsite.review.services.preferences import reviewer_preferences_set
from evalsite.review.views.flow import REFERENCE_KINDS
from scoring import KINDS
from scoring.offline_judge.heuristics import _reason_text
from tests.conftest import login
from tests.factories import DatasetFactory, JudgeCallFactory
from tests.review.builders import CASE, judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return make_run(project, n_items=2, kinds=("faithfulness",))


@pytest.fixture
def queue(run, reviewer):
    return queue_create(run=run, user=reviewer, query=ResultQuery())


def _queue_url(queue, pos=None):
    url = reverse("review:queue", args=[queue.project_id, queue.pk])
    return f"{url}?pos={pos}" if pos else url


def _first(queue):
    return QueueEntry.objects.get(queue=queue, position=1).result


# ------------------------------------------------------------------ preferences


def test_reviewer_preferences_defaults_without_a_row(reviewer):
    prefs = reviewer_preferences(reviewer)
    assert prefs.pk is None or not ReviewerPreferences.objects.exists()
    assert prefs.keyboard_shortcuts is True and prefs.advance_after_answer is True
    assert not ReviewerPreferences.objects.exists()


def test_reviewer_preferences_set_then_read(reviewer):
    reviewer_preferences_set(
        user=reviewer, keyboard_shortcuts=False, advance_after_answer=True
    )
    reviewer_preferences_set(
        user=reviewer, keyboard_shortcuts=False, advance_after_answer=False
    )
    prefs = reviewer_preferences(reviewer)
    assert (prefs.keyboard_shortcuts, prefs.advance_after_answer) == (False, False)
    assert ReviewerPreferences.objects.count() == 1


def test_preferences_page_saves_and_returns_to_the_queue(client, reviewer, queue):
    login(client, reviewer)
    page = client.get(reverse("review:preferences"))
    assert page.status_code == 200 and 'id="preferences-form"' in page.content.decode()
    back = _queue_url(queue, 2)
    response = client.post(
        reverse("review:preferences"),
        {"advance_after_answer": "on", "next": back},
    )
    assert response.status_code == 302 and response.url == back
    prefs = ReviewerPreferences.objects.get(user=reviewer)
    assert prefs.keyboard_shortcuts is False and prefs.advance_after_answer is True


def test_preferences_page_ignores_a_foreign_next_url(client, reviewer):
    login(client, reviewer)
    response = client.post(
        reverse("review:preferences"),
        {"keyboard_shortcuts": "on", "next": "https://evil.example/"},
    )
    assert response.url == reverse("review:preferences")


def test_viewers_set_their_own_preferences_too(client, viewer):
    # WCAG 2.1.4 is for everyone who uses the keys, not only those who review.
    login(client, viewer)
    client.post(reverse("review:preferences"), {})
    assert ReviewerPreferences.objects.get(user=viewer).keyboard_shortcuts is False


def test_preferences_page_needs_login_and_refuses_other_methods(client, reviewer):
    response = client.get(reverse("review:preferences"))
    assert response.status_code == 302 and "/login/" in response.url
    login(client, reviewer)
    assert client.put(reverse("review:preferences")).status_code == 405


def test_queue_page_carries_the_preferences_for_its_script(client, reviewer, queue):
    login(client, reviewer)
    html = client.get(_queue_url(queue)).content.decode()
    assert 'data-shortcuts="on" data-advance="on"' in html
    assert 'id="preferences-form"' in html  # in the ? dialog
    reviewer_preferences_set(
        user=reviewer, keyboard_shortcuts=False, advance_after_answer=False
    )
    html = client.get(_queue_url(queue)).content.decode()
    assert 'data-shortcuts="off" data-advance="off"' in html
    assert 'id="shortcuts-off"' in html


def test_queue_answer_buttons_are_marked_for_advancing(client, reviewer, queue):
    login(client, reviewer)
    html = client.get(_queue_url(queue)).content.decode()
    assert html.count("data-answer>") == 3  # accept, pass, fail; not flips or undo


# ------------------------------------------------------------------ guidelines on the queue


def test_queue_page_shows_the_guidelines_beside_the_card_and_in_the_help(
    client, project, owner, reviewer, queue
):
    guideline_save(
        project=project,
        body="**Fail** invented numbers <script>x()</script>",
        user=owner,
    )
    guideline_save(project=project, queue=queue, body="Queue: _be quick_", user=owner)
    login(client, reviewer)
    html = client.get(_queue_url(queue)).content.decode()
    aside = html[html.index('id="queue-guidelines"') :]
    assert "<em>be quick</em>" in aside.split("</aside>")[0]
    assert 'id="queue-guideline-version">version 1' in html
    dialog = html[html.index('id="keys-help"') :]
    assert "<em>be quick</em>" in dialog  # the queue's
    assert (
        "<strong>Fail</strong> invented numbers &lt;script&gt;" in dialog
    )  # and the project's
    assert "<script>x()</script>" not in html
    # The card alone (htmx) carries no guidelines: they stay beside it.
    fragment = client.get(_queue_url(queue, 2), HTTP_HX_REQUEST="true")
    assert "be quick" not in fragment.content.decode()


def test_queue_page_without_guidelines_says_so(client, reviewer, queue):
    login(client, reviewer)
    html = client.get(_queue_url(queue)).content.decode()
    assert "No guidelines yet." in html


def test_queue_card_renders_in_a_bounded_number_of_queries(
    client, reviewer, queue, django_assert_max_num_queries
):
    login(client, reviewer)
    client.get(_queue_url(queue, 1), HTTP_HX_REQUEST="true")
    with django_assert_max_num_queries(25):
        client.get(_queue_url(queue, 2), HTTP_HX_REQUEST="true")


# ------------------------------------------------------------------ reference and diff


def test_word_diff_marks_words_only_in_one_text():
    diff = word_diff("The cat sat on the mat.", "The dog sat on\nthe mat today.")
    ops = [(s.op, s.text) for s in diff.segments]
    assert ops[0] == ("equal", "The ")
    assert ("delete", "cat ") in ops and ("insert", "dog ") in ops
    assert diff.changed == 5 and not diff.identical
    # The output's own spacing is kept: the segments rebuild it.
    rebuilt = "".join(s.text for s in diff.segments if s.op != "delete")
    assert rebuilt == "The dog sat on\nthe mat today."


def test_word_diff_of_equal_texts_and_of_long_texts():
    assert word_diff("a b  c", "a b c").identical
    long = "word " * (WORD_DIFF_MAX_WORDS + 1)
    diff = word_diff(long, "word")
    assert diff.too_long and diff.segments == [] and not diff.identical


def test_reference_is_open_for_the_scorers_that_use_it(client, project, reviewer):
    assert set(KINDS) >= REFERENCE_KINDS
    run = make_run(project, kinds=("factuality", "faithfulness"))
    login(client, reviewer)
    for kind, is_open in (("factuality", True), ("faithfulness", False)):
        result = Result.objects.get(run=run, run_scorer__kind=kind)
        html = client.get(
            reverse("review:item", args=[project.pk, result.pk])
        ).content.decode()
        tag = html[html.index(f'id="reference-{result.pk}"') :].split(">")[0]
        assert (" open" in tag) is is_open, kind
        diff_tag = html[html.index(f'id="word-diff-{result.pk}"') :].split(">")[0]
        trigger = "load" if is_open else "toggle once"
        assert f'hx-trigger="{trigger}"' in diff_tag


def test_queue_card_shows_reference_and_diff_link(client, project, reviewer):
    run = make_run(project, kinds=("factuality",))
    queue = queue_create(run=run, user=reviewer, query=ResultQuery())
    result = _first(queue)
    login(client, reviewer)
    html = client.get(_queue_url(queue)).content.decode()
    assert f'id="reference-{result.pk}" open' in html
    assert reverse("review:result_diff", args=[project.pk, result.pk]) in html
    assert 'class="prompt item-text item-output"' in html


def test_result_diff_escapes_the_texts(client, project, reviewer):
    dataset = DatasetFactory(
        project=project,
        name="hostile",
        rows=[
            CASE
            | {
                "output": "Paris <script>alert(1)</script> is big",
                "reference": "Paris <b>is</b> big",
            }
        ],
    )
    run = make_run(project, kinds=("factuality",), dataset=dataset)
    result = Result.objects.get(run=run)
    login(client, reviewer)
    response = client.get(reverse("review:result_diff", args=[project.pk, result.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "<ins>&lt;script&gt;alert(1)&lt;/script&gt; is </ins>" in html
    assert "<del>&lt;b&gt;is&lt;/b&gt; </del>" in html
    assert "<script>" not in html
    assert "3 words differ" in html


def test_result_diff_without_a_reference_and_for_outsiders(
    client, project, reviewer, outsider
):
    dataset = DatasetFactory(
        project=project, name="no-ref", rows=[CASE | {"reference": ""}]
    )
    run = make_run(project, kinds=("faithfulness",), dataset=dataset)
    result = Result.objects.get(run=run)
    url = reverse("review:result_diff", args=[project.pk, result.pk])
    login(client, reviewer)
    assert "no reference" in client.get(url).content.decode()
    assert client.post(url).status_code == 405
    login(client, outsider)
    assert client.get(url).status_code == 404


# ------------------------------------------------------------------ verdict labels


@pytest.mark.parametrize(
    ("path", "label"),
    [
        ("verdicts.2.verdict", "verdict 3"),
        ("verdicts.0.verdict", "verdict 1"),
        ("evaluations.1.used", "evaluation 2 used"),
        ("category", "category"),
    ],
)
def test_path_label_numbers_from_one(path, label):
    assert path_label(path) == label


@pytest.mark.parametrize(
    ("kind", "path", "old", "new", "text"),
    [
        ("faithfulness", "verdicts.2.verdict", "yes", "no", "verdict 3: supported → contradicted"),
        ("hallucination", "verdicts.0.verdict", "yes", "no", "verdict 1: hallucinated → supported"),
        ("bias", "verdicts.1.verdict", "no", "yes", "verdict 2: not biased → biased"),
        ("context_relevance", "evaluations.0.used", True, False, "evaluation 1 used: used → not used"),
        ("factuality", "category", "C", "D", "category: same details → disagrees"),
    ],
)  # fmt: skip
def test_override_change_uses_the_kinds_own_words(kind, path, old, new, text):
    assert (
        override_change(kind=kind, override_kind="verdict", path=path, old=old, new=new)
        == text
    )


def test_override_change_for_pass_and_score():
    assert (
        override_change(kind="faithfulness", override_kind="pass", path="", old=False, new=True)
        == "pass/fail: fail → pass"
    )  # fmt: skip
    assert (
        override_change(kind="faithfulness", override_kind="score", path="", old=0.5, new=1.0)
        == "score: 0.5 → 1"
    )  # fmt: skip


def test_audit_summaries_name_verdicts_in_words(queue, reviewer):
    result = _first(queue)
    override = result_flip_field(result=result, user=reviewer, number=1)
    override_revert(override=override, user=reviewer)
    summaries = list(
        AuditEvent.objects.filter(action__startswith="override.")
        .order_by("id")
        .values_list("summary", flat=True)
    )
    assert summaries[0].startswith(
        "rita set verdict 1: supported → contradicted on item"
    )
    assert summaries[1].startswith("rita undid verdict 1: supported → contradicted")
    assert not any("verdicts." in s for s in summaries)


def test_item_page_override_table_speaks_the_kinds_words(
    client, project, queue, reviewer
):
    result = _first(queue)
    override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.2.verdict",
        value="yes",
    )
    login(client, reviewer)
    html = client.get(
        reverse("review:item", args=[project.pk, result.pk])
    ).content.decode()
    table = html[html.index('class="overrides small"') :].split("</table>")[0]
    assert "Verdict 3" in table and "unverifiable → <strong>supported</strong>" in table
    assert ">verdicts.2.verdict<" not in table


def test_queue_flip_keys_say_which_verdict(client, reviewer, queue):
    login(client, reviewer)
    html = client.get(_queue_url(queue)).content.decode()
    assert 'title="verdict 1: supported → contradicted"' in html


# ------------------------------------------------------------------ chunk numbering


def test_queue_card_numbers_context_chunks_from_one(client, reviewer, queue):
    login(client, reviewer)
    html = client.get(_queue_url(queue)).content.decode()
    assert 'start="0"' not in html
    assert 'id="chunk-1" value="1"' in html and 'id="chunk-3" value="3"' in html
    assert 'id="chunk-0"' not in html


def test_analysis_rows_link_chunks_from_one(client, project, reviewer):
    run = make_run(project, kinds=("context_relevance",))
    result = Result.objects.get(run=run)
    login(client, reviewer)
    html = client.get(
        reverse("review:item", args=[project.pk, result.pk])
    ).content.decode()
    assert '<a href="#chunk-1">[1]</a>' in html and 'id="chunk-1"' in html
    assert "[0]" not in html


def test_offline_judge_reasons_number_chunks_from_one():
    analysis = {
        "evaluations": [
            {"context_index": 0, "relevance": "high", "used": False},
            {"context_index": 1, "relevance": "low", "used": True},
        ]
    }
    reason = _reason_text("context_relevance", "0.5", analysis)
    assert "high for chunk(s) [1]" in reason and "low for chunk(s) [2]" in reason
    assert "Highly relevant chunk(s) [1] were not used" in reason


# ------------------------------------------------------------------ plurals


def test_queue_page_pluralises_counts(client, project, reviewer):
    one = DatasetFactory(project=project, name="one", rows=[CASE | {"context": ["x"]}])
    run = make_run(project, kinds=("faithfulness",), dataset=one)
    queue = queue_create(run=run, user=reviewer, query=ResultQuery())
    assert queue.name.endswith("· 1 result")
    assert AuditEvent.objects.get(action="queue.create").summary.endswith("(1 result)")
    login(client, reviewer)
    html = client.get(_queue_url(queue)).content.decode()
    assert "Context (1 chunk)" in html


def test_queue_create_message_pluralises(client, project, reviewer):
    run = make_run(project, kinds=("faithfulness",))
    login(client, reviewer)
    response = client.post(
        reverse("review:queue_create", args=[project.pk, run.pk]),
        {"source": "filters", "name": "Solo"},
        follow=True,
    )
    assert "Queue “Solo” created (1 result)." in response.content.decode()


def test_item_page_pluralises_tokens_and_verdicts(client, project, reviewer):
    run = make_run(
        project,
        kinds=("faithfulness",),
        analyses={"faithfulness": [judged_claims("yes")]},
    )
    result = Result.objects.get(run=run)
    JudgeCallFactory(
        result=result, step="verdicts", prompt_tokens=1, completion_tokens=0
    )
    override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.0.verdict",
        value="no",
    )
    login(client, reviewer)
    html = client.get(
        reverse("review:item", args=[project.pk, result.pk])
    ).content.decode()
    assert "1 / 1 verdict in reviewed results" in html
    assert "1 judge call · 1 token ·" in html
    assert "1 prompt + 0 completion token ·" in html


# ------------------------------------------------------------------ history in the same response


def test_item_page_override_answer_carries_the_new_history(
    client, project, reviewer, run
):
    result = Result.objects.filter(run=run).first()
    login(client, reviewer)
    url = reverse("review:override_create", args=[project.pk, result.pk])
    data = {
        "kind": "verdict",
        "path": "verdicts.0.verdict",
        "value": "no",
        "history": "1",
    }
    response = client.post(url, data, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    history = html[html.index('<article id="item-history" hx-swap-oob="true">') :]
    assert "verdict 1: supported → contradicted" in history
    # The re-rendered panel keeps asking for the history.
    assert 'hx-vals=\'{"history": "1"}\'' in html
    # From pages without a history (every scorer of an item) nothing extra comes back.
    data.pop("history")
    data["value"] = "yes"
    assert (
        'id="item-history"'
        not in client.post(url, data, HTTP_HX_REQUEST="true").content.decode()
    )


def test_item_page_undo_and_accept_answers_carry_the_history(
    client, project, reviewer, run
):
    result = Result.objects.filter(run=run).first()
    override = override_create(result=result, user=reviewer, kind="score", value=0.9)
    login(client, reviewer)
    undo = client.post(
        reverse("review:override_revert", args=[project.pk, override.pk]),
        {"history": "1"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert "rita undid score: 0.33 → 0.9 on item" in undo
    accept = client.post(
        reverse("review:accept", args=[project.pk, result.pk]),
        {"history": "1"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert 'id="item-history" hx-swap-oob="true"' in accept and "accepted" in accept


def test_item_page_comment_answer_carries_the_history(client, project, reviewer, run):
    result = Result.objects.filter(run=run).first()
    login(client, reviewer)
    page = client.get(
        reverse("review:item", args=[project.pk, result.pk])
    ).content.decode()
    assert '<input type="hidden" name="history" value="1">' in page
    response = client.post(
        reverse("review:comments", args=[project.pk, result.pk]),
        {"body": "Check chunk 2", "history": "1"},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert response.status_code == 201
    assert html.lstrip().startswith('<li id="comment-')
    assert (
        'id="item-history" hx-swap-oob="true"' in html
        and "commented: Check chunk 2" in html
    )


def test_queue_comment_answer_stays_a_list_item(client, project, reviewer, queue):
    result = _first(queue)
    login(client, reviewer)
    html = client.get(_queue_url(queue)).content.decode()
    assert 'name="history"' not in html
    response = client.post(
        reverse("review:comments", args=[project.pk, result.pk]),
        {"body": "ok"},
        HTTP_HX_REQUEST="true",
    )
    assert "item-history" not in response.content.decode()
    assert Override.objects.count() == 0
