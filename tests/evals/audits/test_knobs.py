"""The audit's figures move as the offline judge's imperfect-LLM knobs say they must.

Every item is one the honest judge fails (the answer's number contradicts the
reference). The knobs sway a failing verdict to pass, with a known probability, when
the answer carries their cue; so of the sampled verdicts, a share 1 - sensitivity must
stay the same under each change. The rolls are fixed by the requests, so the shares
are the same on every run of this test.
"""

from __future__ import annotations

import pytest

from evalsite.evals.audits.selectors import bias_audit_figures
from evalsite.evals.models import Result
from evalsite.evals.scorers.services import scorer_create
from tests.evals.audits.conftest import start_audit, start_run
from tests.evals.conftest import judge_control
from tests.factories import DatasetFactory

pytestmark = pytest.mark.django_db

N = 100


@pytest.fixture
def failing_dataset(project):
    rows = [
        {
            "input": f"How long does refund {i} take?",
            "output": f"Refund {i} takes {i % 20 + 30} business days.",
            "reference": f"Refund {i} takes {i % 20 + 5} business days.",
        }
        for i in range(N)
    ]
    return DatasetFactory(project=project, name="refunds", rows=rows)


def test_audit_shares_follow_the_judge_knobs(
    project,
    owner,
    judge,
    offline_judge,
    failing_dataset,
    django_capture_on_commit_callbacks,
):
    judge_control(
        offline_judge,
        padding_sensitivity=0.3,
        instruction_sensitivity=0.0,
        authority_sensitivity=1.0,
    )
    scorer = scorer_create(
        project=project, user=owner, name="Factuality", kind="factuality", judge=judge
    )
    run = start_run(
        project, owner, failing_dataset, [scorer], django_capture_on_commit_callbacks
    )
    rs = run.run_scorers.get()
    # No cue in the original answers: the honest judge fails them all.
    assert Result.objects.filter(run=run, status="ok", judge_passed=False).count() == N
    audit = start_audit(
        project,
        owner,
        run,
        rs,
        django_capture_on_commit_callbacks,
        sample_size=N,
        seed=4,
    )
    figures = {f.change: f for f in bias_audit_figures(audit=audit).changes}
    for f in figures.values():
        assert f.compared == N, f.change
    assert figures["unchanged"].share == 1.0
    # Padding sways 30 % of the failing verdicts to pass: about 70 % stay the same.
    padded = figures["padded"]
    assert abs(padded.share - 0.7) <= 0.12, padded.share
    assert padded.flipped_to_pass == N - padded.same and padded.flipped_to_fail == 0
    low, high = padded.interval
    assert low < 0.7 < high
    # An instruction the judge is insensitive to changes nothing.
    assert figures["injected"].share == 1.0
    # An authority cue the judge always obeys flips every verdict.
    assert figures["authority"].share == 0.0
    assert figures["authority"].flipped_to_pass == N


def test_instruction_sensitivity_shows_in_the_injected_share(
    project,
    owner,
    judge,
    offline_judge,
    failing_dataset,
    django_capture_on_commit_callbacks,
):
    judge_control(offline_judge, instruction_sensitivity=0.5)
    scorer = scorer_create(
        project=project, user=owner, name="Factuality", kind="factuality", judge=judge
    )
    run = start_run(
        project, owner, failing_dataset, [scorer], django_capture_on_commit_callbacks
    )
    audit = start_audit(
        project,
        owner,
        run,
        run.run_scorers.get(),
        django_capture_on_commit_callbacks,
        sample_size=N,
        seed=4,
    )
    figures = {f.change: f for f in bias_audit_figures(audit=audit).changes}
    assert abs(figures["injected"].share - 0.5) <= 0.13, figures["injected"].share
    assert figures["padded"].share == 1.0
    assert figures["authority"].share == 1.0
