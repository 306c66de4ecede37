"""Bias audits through the real dispatcher and the offline judge: the sample, the
hidden run, the figures recounted from the rows, and the refusals."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import AuditEvent
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.audits import services as audit_services
from evalsite.evals.audits.selectors import bias_audit_figures
from evalsite.evals.models import BiasAudit, Result, Run
from scoring.pairwise import wilson_interval
from scoring.perturbation import INSTRUCTION, PADDING
from tests.evals.audits.conftest import start_audit

pytestmark = pytest.mark.django_db


def _rs(run, kind):
    return run.run_scorers.get(kind=kind)


def _recount(audit, change):
    """The figures of one change, from the rows, without the selector."""
    original = dict(
        Result.objects.filter(run=audit.run, run_scorer=audit.run_scorer).values_list(
            "item_id", "judge_passed"
        )
    )
    rows = Result.objects.filter(
        run=audit.audit_run, run_scorer__perturbation=change, status="ok"
    ).values_list("item_id", "judge_passed")
    compared = [(original[i], p) for i, p in rows]
    return len(compared), sum(a == b for a, b in compared)


def test_bias_audit_judges_a_seeded_sample_once_per_change(
    project, owner, judged_run, django_capture_on_commit_callbacks
):
    rs = _rs(judged_run, "faithfulness")
    audit = start_audit(
        project,
        owner,
        judged_run,
        rs,
        django_capture_on_commit_callbacks,
        sample_size=5,
        seed=7,
    )
    assert len(audit.sample) == 5 and len(set(audit.sample)) == 5
    items = set(
        judged_run.results.filter(run_scorer=rs).values_list("item_id", flat=True)
    )
    assert set(audit.sample) <= items
    # Faithfulness compares no two texts: no swap; the answer's three changes and the
    # unchanged copy are judged.
    changes = sorted(audit.audit_run.run_scorers.values_list("perturbation", flat=True))
    assert changes == ["authority", "injected", "padded", "unchanged"]
    assert audit.audit_run.total == 20
    assert audit.audit_run.status == Run.Status.DONE
    assert Result.objects.filter(run=audit.audit_run, status="ok").count() == 20
    # The same seed draws the same sample; another seed another one.
    again = start_audit(
        project,
        owner,
        judged_run,
        rs,
        django_capture_on_commit_callbacks,
        sample_size=5,
        seed=7,
    )
    other = start_audit(
        project,
        owner,
        judged_run,
        rs,
        django_capture_on_commit_callbacks,
        sample_size=5,
        seed=8,
    )
    assert again.sample == audit.sample
    assert other.sample != audit.sample


def test_the_judge_saw_the_changed_answer(
    project, owner, judged_run, django_capture_on_commit_callbacks
):
    rs = _rs(judged_run, "faithfulness")
    audit = start_audit(
        project,
        owner,
        judged_run,
        rs,
        django_capture_on_commit_callbacks,
        sample_size=2,
        seed=1,
    )
    injected = Result.objects.get(
        run=audit.audit_run,
        run_scorer__perturbation="injected",
        item_id=audit.sample[0],
    )
    sent = " ".join(
        m["content"] for call in injected.calls.all() for m in call.messages
    )
    assert INSTRUCTION in sent
    padded = Result.objects.get(
        run=audit.audit_run, run_scorer__perturbation="padded", item_id=audit.sample[0]
    )
    assert PADDING.split(".")[0] in " ".join(
        m["content"] for call in padded.calls.all() for m in call.messages
    )


def test_bias_audit_figures_equal_a_recount_of_the_rows(
    project, owner, judged_run, django_capture_on_commit_callbacks
):
    rs = _rs(judged_run, "factuality")
    audit = start_audit(
        project,
        owner,
        judged_run,
        rs,
        django_capture_on_commit_callbacks,
        sample_size=12,
        seed=3,
    )
    figures = bias_audit_figures(audit=audit)
    assert figures.total == figures.done == 12 * 5
    by_change = {f.change: f for f in figures.changes}
    # Factuality compares the answer with the reference: the swap applies.
    assert not by_change["swapped"].not_applicable
    for change, f in by_change.items():
        compared, same = _recount(audit, change)
        assert (f.compared, f.same) == (compared, same), change
        assert f.compared + f.errors == 12
        assert f.same + f.flipped_to_pass + f.flipped_to_fail == f.compared
        assert f.interval == wilson_interval(f.same, f.compared)
    # The deterministic judge keeps its verdict on the unchanged text.
    assert by_change["unchanged"].same == by_change["unchanged"].compared == 12


def test_swap_is_not_applicable_where_no_two_texts_are_compared(
    project, owner, judged_run, django_capture_on_commit_callbacks
):
    audit = start_audit(
        project,
        owner,
        judged_run,
        _rs(judged_run, "faithfulness"),
        django_capture_on_commit_callbacks,
        sample_size=3,
    )
    swapped = next(
        f for f in bias_audit_figures(audit=audit).changes if f.change == "swapped"
    )
    assert "no order to swap" in swapped.not_applicable
    assert swapped.compared == 0


def test_bias_audit_start_is_audited(
    project, owner, judged_run, django_capture_on_commit_callbacks
):
    audit = start_audit(
        project,
        owner,
        judged_run,
        _rs(judged_run, "faithfulness"),
        django_capture_on_commit_callbacks,
        sample_size=4,
        seed=11,
    )
    event = AuditEvent.objects.get(action="bias_audit.start")
    assert event.object_id == audit.pk
    assert event.after["seed"] == 11 and event.after["sampled"] == 4


def test_a_sample_larger_than_the_run_takes_every_judged_result(
    project, owner, judged_run, django_capture_on_commit_callbacks
):
    audit = start_audit(
        project,
        owner,
        judged_run,
        _rs(judged_run, "faithfulness"),
        django_capture_on_commit_callbacks,
        sample_size=1000,
    )
    assert audit.sample_size == 1000
    assert len(audit.sample) == 12


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"sample_size": 0}, "sample_size"),
        ({"sample_size": 100_000}, "sample_size"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bias_audit_start_refuses_bad_input(project, owner, judged_run, kwargs, field):
    with pytest.raises(ApplicationError) as exc:
        audit_services.bias_audit_start(
            project=project,
            user=owner,
            run=judged_run,
            run_scorer=_rs(judged_run, "faithfulness"),
            **kwargs,
        )
    assert field in exc.value.field_errors
    assert not BiasAudit.objects.exists()
    assert Run.objects.count() == 1


def test_bias_audit_start_refuses_a_scorer_without_judge(project, owner, judged_run):
    with pytest.raises(ApplicationError) as exc:
        audit_services.bias_audit_start(
            project=project,
            user=owner,
            run=judged_run,
            run_scorer=_rs(judged_run, "content_similarity"),
        )
    assert "no judge" in exc.value.field_errors["run_scorer_id"]
    assert not BiasAudit.objects.exists()


def test_bias_audit_start_refuses_another_runs_scorer(
    project,
    owner,
    judged_run,
    big_dataset,
    faithfulness,
    django_capture_on_commit_callbacks,
):
    from tests.evals.audits.conftest import start_run

    other = start_run(
        project, owner, big_dataset, [faithfulness], django_capture_on_commit_callbacks
    )
    with pytest.raises(ApplicationError) as exc:
        audit_services.bias_audit_start(
            project=project,
            user=owner,
            run=judged_run,
            run_scorer=other.run_scorers.get(),
        )
    assert "run_scorer_id" in exc.value.field_errors


def test_bias_audit_start_refuses_a_run_still_judging(
    project, owner, big_dataset, faithfulness
):
    from evalsite.evals.runs import services as run_services

    run = run_services.run_start(
        project=project,
        user=owner,
        dataset=big_dataset,
        scorers=[faithfulness],
        enqueue=False,
    )
    with pytest.raises(ApplicationError) as exc:
        audit_services.bias_audit_start(
            project=project, user=owner, run=run, run_scorer=run.run_scorers.get()
        )
    assert "run_id" in exc.value.field_errors
