"""Review services: exact recompute per kind, score/pass overrides, undo, audit, errors."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import AuditEvent
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.evals.models import Result
from evalsite.review.models import Override
from evalsite.review.services import (
    override_create,
    override_revert,
    result_accept,
    result_recompute,
    result_set_human_pass,
)
from scoring import KINDS, LLM_KINDS, apply_override, compute_score, get_path, passes
from tests.review.builders import ANALYSES, make_run

pytestmark = pytest.mark.django_db

# Non-default options so the test proves the run scorer's options are used.
OPTIONS = {
    "faithfulness": {"scale": 10, "threshold": 0.6},
    "hallucination": {"scale": 5},
    "context_relevance": {
        "scale": 1,
        "penalties": {
            "unused_high_relevance": 0.2,
            "missing_context_per_item": 0.3,
            "max_missing_context_penalty": 0.4,
        },
    },
    "context_precision": {"scale": 2},
    "answer_relevancy": {"uncertainty_weight": 0.5},
    "bias": {"threshold": 0.3},
    "toxicity": {},
    "factuality": {"category_scores": {"disagree": 0.25}},
}

OVERRIDES = [
    (kind, pattern) for kind in LLM_KINDS for pattern in KINDS[kind].overridable
]


def _result(project, kind):
    run = make_run(project, kinds=[kind], options={kind: OPTIONS.get(kind, {})})
    return Result.objects.select_related("run_scorer").get(run=run)


@pytest.mark.parametrize(("kind", "pattern"), OVERRIDES)
def test_verdict_override_gives_exactly_compute_score_of_the_overridden_analysis(
    project, reviewer, kind, pattern
):
    result = _result(project, kind)
    options = result.run_scorer.options
    path = pattern.replace("*", "0")
    current = get_path(ANALYSES[kind], path)
    value = next(v for v in KINDS[kind].overridable[pattern] if v != current)

    override_create(
        result=result, user=reviewer, kind="verdict", path=path, value=value
    )

    expected_analysis = apply_override(kind, ANALYSES[kind], path, value)
    expected = compute_score(kind, expected_analysis, options)
    result.refresh_from_db()
    assert result.final_score == expected
    assert result.final_passed == passes(kind, expected, options)
    assert get_path(result.final_analysis, path) == value
    assert result.judge_score == compute_score(kind, ANALYSES[kind], options)
    assert result.reviewed and result.overridden and result.version == 1


def test_known_values_faithfulness_scale_10(project, reviewer):
    # [yes, no, unsure] at scale 10 → 3.33; flipping the "no" to "yes" → 6.67 (≥ 6: pass).
    result = _result(project, "faithfulness")
    assert result.judge_score == 3.33 and result.judge_passed is False
    override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.1.verdict",
        value="yes",
    )
    assert (result.final_score, result.final_passed) == (6.67, True)


def test_overrides_apply_in_order_and_undo_restores_exactly(project, reviewer, owner):
    result = _result(project, "faithfulness")
    before = Result.objects.values().get(pk=result.pk)
    first = override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.1.verdict",
        value="yes",
    )
    second = override_create(
        result=result,
        user=owner,
        kind="verdict",
        path="verdicts.2.verdict",
        value="yes",
    )
    assert result.final_score == 10.0
    override_revert(override=first, user=owner)
    result.refresh_from_db()
    # verdicts [yes, no (back), yes] → 6.67
    assert result.final_score == 6.67
    override_revert(override=second, user=owner)
    after = Result.objects.values().get(pk=result.pk)
    for field in (
        "final_analysis",
        "final_score",
        "final_passed",
        "score_overridden",
        "pass_overridden",
        "overridden",
        "reviewed",
        "human_passed",
        "reviewed_by_id",
        "reviewed_at",
    ):
        assert after[field] == before[field], field
    assert after["version"] == 4


def test_score_override_wins_over_verdicts_and_pass_follows_it(project, reviewer):
    result = _result(project, "faithfulness")  # scale 10, threshold 0.6 → pass at ≥ 6
    score = override_create(
        result=result, user=reviewer, kind="score", value=7.5, note="fine"
    )
    assert (result.final_score, result.final_passed, result.score_overridden) == (
        7.5,
        True,
        True,
    )
    override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.0.verdict",
        value="no",
    )
    assert result.final_score == 7.5  # the score override still decides
    assert result.final_analysis["verdicts"][0]["verdict"] == "no"
    override_revert(override=score, user=reviewer)
    assert result.final_score == 0.0 and result.final_passed is False


def test_pass_override_and_undo(project, reviewer):
    result = _result(project, "faithfulness")
    o = override_create(
        result=result, user=reviewer, kind="pass", value=True, note="ok by me"
    )
    assert result.final_passed is True and result.human_passed is True
    assert result.final_score == 3.33  # the score is untouched
    assert o.old_value is False and o.new_value is True and o.note == "ok by me"
    override_revert(override=o, user=reviewer)
    assert result.final_passed is False and result.human_passed is None
    assert not result.reviewed and not result.pass_overridden


def test_flip_and_flip_back_count_as_no_flip(project, reviewer):
    result = _result(project, "hallucination")
    a = override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.1.verdict",
        value="yes",
    )
    assert Override.objects.get(pk=a.pk).counts_as_flip
    b = override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.1.verdict",
        value="no",
    )
    assert not Override.objects.filter(counts_as_flip=True).exists()
    override_revert(override=b, user=reviewer)
    assert list(Override.objects.filter(counts_as_flip=True)) == [a]


def test_every_change_writes_one_audit_event(project, reviewer):
    result = _result(project, "faithfulness")
    o = override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.1.verdict",
        value="yes",
        note="context says so",
    )
    override_revert(override=o, user=reviewer)
    result_accept(result=result, user=reviewer)
    events = list(AuditEvent.objects.order_by("id"))
    assert [e.action for e in events] == [
        "override.create",
        "override.revert",
        "result.accept",
    ]
    created = events[0]
    assert created.actor == reviewer and created.result_id == result.pk
    assert created.run_id == result.run_id and created.project_id == project.pk
    assert created.before["value"] == "no" and created.after["value"] == "yes"
    assert (
        created.before["final_score"] == 3.33 and created.after["final_score"] == 6.67
    )
    assert "verdict 2: contradicted → supported" in created.summary
    assert "context says so" in created.summary


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kind": "verdict", "path": "verdicts.9.verdict", "value": "yes"}, "path"),
        ({"kind": "verdict", "path": "claims.0", "value": "yes"}, "path"),
        ({"kind": "verdict", "path": "verdicts.0.verdict", "value": "maybe"}, "value"),
        ({"kind": "verdict", "path": "verdicts.0.verdict", "value": "yes"}, "value"),
        ({"kind": "verdict", "path": "", "value": "yes"}, "path"),
        ({"kind": "score", "value": "abc"}, "value"),
        ({"kind": "score", "value": float("nan")}, "value"),
        ({"kind": "score", "value": True}, "value"),
        ({"kind": "pass", "value": "perhaps"}, "value"),
        ({"kind": "score", "path": "verdicts.0.verdict", "value": 1}, "path"),
        ({"kind": "nonsense", "value": 1}, "kind"),
    ],
)
def test_invalid_overrides_name_the_field_and_change_nothing(
    project, reviewer, kwargs, field
):
    result = _result(project, "faithfulness")
    with pytest.raises(ApplicationError) as exc:
        override_create(result=result, user=reviewer, **kwargs)
    assert field in exc.value.field_errors
    result.refresh_from_db()
    assert result.version == 0 and not result.reviewed
    assert not Override.objects.exists() and not AuditEvent.objects.exists()


def test_custom_rubric_has_no_verdicts_but_takes_a_score_override(project, reviewer):
    result = _result(project, "custom_rubric")
    with pytest.raises(ApplicationError) as exc:
        override_create(
            result=result, user=reviewer, kind="verdict", path="score", value="1"
        )
    assert "path" in exc.value.field_errors
    override_create(result=result, user=reviewer, kind="score", value=0.2)
    assert result.final_score == 0.2 and result.final_passed is False


def test_text_kinds_take_score_and_pass_overrides(project, reviewer):
    run = make_run(project, kinds=["content_similarity"])
    result = Result.objects.get(run=run)
    override_create(result=result, user=reviewer, kind="score", value=0.9)
    assert result.final_score == 0.9 and result.final_passed is True


def test_error_results_cannot_be_overridden(project, reviewer):
    result = _result(project, "faithfulness")
    Result.objects.filter(pk=result.pk).update(
        status=Result.Status.ERROR, error="judge said junk"
    )
    result.refresh_from_db()
    with pytest.raises(ApplicationError, match="error"):
        override_create(result=result, user=reviewer, kind="pass", value=True)


def test_stale_expected_version_is_a_conflict(project, reviewer, owner):
    result = _result(project, "faithfulness")
    stale = Result.objects.get(pk=result.pk)
    override_create(
        result=result, user=owner, kind="pass", value=True, expected_version=0
    )
    with pytest.raises(ConflictError) as exc:
        override_create(
            result=stale, user=reviewer, kind="score", value=1, expected_version=0
        )
    assert exc.value.status_code == 409
    # Without expected_version the stale instance still applies on the newest state.
    override_create(result=stale, user=reviewer, kind="score", value=1)
    stale.refresh_from_db()
    assert stale.pass_overridden and stale.score_overridden and stale.version == 2


def test_undo_twice_is_an_error(project, reviewer):
    result = _result(project, "faithfulness")
    o = override_create(result=result, user=reviewer, kind="pass", value=True)
    override_revert(override=o, user=reviewer)
    with pytest.raises(ApplicationError, match="already undone"):
        override_revert(override=o, user=reviewer)


def test_accept_marks_reviewed_with_the_current_verdict(project, reviewer):
    result = _result(project, "faithfulness")
    result_accept(result=result, user=reviewer)
    result.refresh_from_db()
    assert (
        result.reviewed
        and result.reviewed_by == reviewer
        and result.human_passed is False
    )
    assert not result.overridden and result.final_score == result.judge_score


def test_human_pass_records_an_override_only_when_it_differs(project, reviewer):
    result = _result(project, "faithfulness")  # judge: fail
    result_set_human_pass(result=result, user=reviewer, passed=False)
    assert result.human_passed is False and result.reviewed and not result.overridden
    result_set_human_pass(result=result, user=reviewer, passed=True, note="blind: pass")
    assert result.final_passed is True and result.pass_overridden
    assert Override.objects.get().note == "blind: pass"
    assert [e.action for e in AuditEvent.objects.order_by("id")] == [
        "result.human_pass",
        "override.create",
    ]


def test_recompute_follows_changed_run_options(project, reviewer):
    result = _result(project, "faithfulness")
    override_create(
        result=result,
        user=reviewer,
        kind="verdict",
        path="verdicts.1.verdict",
        value="yes",
    )
    rs = result.run_scorer
    rs.options = {**rs.options, "scale": 1}
    rs.save()
    result_recompute(result=result)
    assert result.final_score == 0.67
