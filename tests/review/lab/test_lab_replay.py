"""Replay through the real run path against the real offline judge, made imperfect:
a bias towards "yes" that few-shot examples remove (yes_bias 1, example_sensitivity
1). Without examples the judge passes everything (kappa 0 against the humans); with
the proposed examples it answers as the honest heuristics do, which is what the
reviewers answered (kappa 1), on the held-out items."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.core.exceptions import ConflictError
from evalsite.evals.models import Result, Run
from evalsite.review.lab.selectors import comparison, labels
from evalsite.review.lab.services import (
    lab_candidate_create,
    lab_candidate_promote,
    lab_examples_add_proposed,
    lab_replay_cancel,
    lab_replay_preview,
    lab_replay_start,
)
from scoring import estimate_tokens
from scoring.offline_judge import start_server
from tests.conftest import login
from tests.review.lab.builders import ROWS, biased_labelled_world, judged_run

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def judge_server():
    server = start_server(port=0, enable_control=True)
    yield server
    server.stop()


@pytest.fixture
def lab_world(
    project, owner, reviewer, judge_server, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    world = biased_labelled_world(project, owner, reviewer, judge_server, capture)
    return {**world, "capture": capture}


def test_examples_raise_kappa_on_held_out_labels(project, owner, lab_world):
    scorer, capture = lab_world["scorer"], lab_world["capture"]
    label_list = labels(project_id=project.pk, kind="faithfulness")
    assert len(label_list) == ROWS
    candidate = lab_candidate_create(scorer=scorer, user=owner, name="with examples")
    added = lab_examples_add_proposed(
        candidate=candidate, user=owner, label_list=label_list
    )
    assert len(added) == 4 and {c.verdict for c in added} == {"fail"}
    assert all(c.explanation.startswith("claim ") for c in added)
    candidate.refresh_from_db()
    candidate.project = project
    held = set(candidate.example_items)

    preview = lab_replay_preview(candidate=candidate, label_list=label_list)
    replayed = [label for label in label_list if label.item_id not in held]
    assert preview.items == ROWS - 4
    from evalsite.datasets.models import Item

    expected_calls = 0
    for options in (scorer.options, candidate.options):
        for item in Item.objects.filter(pk__in=[label.item_id for label in replayed]):
            expected_calls += estimate_tokens("faithfulness", item.as_case(), options)[
                "calls"
            ]
    assert preview.calls == expected_calls

    with capture(execute=True):
        replay = lab_replay_start(
            candidate=candidate, user=owner, label_list=label_list
        )
    runs = [*replay.current_runs.all(), *replay.candidate_runs.all()]
    assert len(runs) == 2
    assert all(r.purpose == "lab" and r.status == Run.Status.DONE for r in runs)
    judged = set(Result.objects.filter(run__in=runs).values_list("item_id", flat=True))
    assert judged and not judged & held  # never an example's own item
    assert replay.held_out == sorted(held)

    compared = comparison(scorer=scorer, label_list=label_list)
    assert compared.items == ROWS - 4
    assert compared.held_out == 4
    current, cand = compared.columns
    assert current.is_current and cand.candidate == candidate
    fails = sum(1 for label in replayed if not label.human_passed)
    # The current judge passes everything: chance agreement, kappa 0.
    assert current.figures.kappa.value == pytest.approx(0.0)
    assert current.figures.confusion.pass_fail == fails
    assert current.figures.fail_recall.value == 0.0
    # With examples the bias is gone: the judge answers as the reviewers did.
    assert cand.figures.kappa.value == pytest.approx(1.0)
    assert cand.figures.confusion.fail_fail == fails
    assert cand.figures.agreement.value == 1.0
    # Too few multi-reviewer items: the annotator test says why.
    assert "at least 2 human answers" in current.annotator_refusal
    assert AuditEvent.objects.filter(project=project, action="lab.replay").count() == 1


def test_the_lab_page_shows_the_versions_on_the_same_items(
    client, project, owner, viewer, lab_world
):
    scorer, capture = lab_world["scorer"], lab_world["capture"]
    label_list = labels(project_id=project.pk, kind="faithfulness")
    candidate = lab_candidate_create(scorer=scorer, user=owner, name="with examples")
    lab_examples_add_proposed(candidate=candidate, user=owner, label_list=label_list)
    candidate.refresh_from_db()
    candidate.project = project
    login(client, owner)
    url = reverse(
        "review:lab_replay_preview", args=[project.pk, scorer.pk, candidate.pk]
    )
    preview = client.get(url).content.decode()
    assert f"<strong>{ROWS - 4}</strong> labelled items" in preview
    with capture(execute=True):
        response = client.post(
            reverse(
                "review:lab_replay_start", args=[project.pk, scorer.pk, candidate.pk]
            )
        )
    assert response.status_code == 302
    login(client, viewer)
    body = client.get(
        reverse("review:lab", args=[project.pk, scorer.pk])
    ).content.decode()
    assert f'id="lab-items">{ROWS - 4}<' in body
    assert 'id="lab-held-out">4<' in body
    assert 'data-value="0.0"' in body and 'data-value="1.0"' in body


def test_promote_makes_the_next_version_and_the_next_run_records_it(
    client, project, owner, lab_world
):
    scorer, capture, first_run = (
        lab_world["scorer"],
        lab_world["capture"],
        lab_world["run"],
    )
    label_list = labels(project_id=project.pk, kind="faithfulness")
    candidate = lab_candidate_create(scorer=scorer, user=owner, name="with examples")
    lab_examples_add_proposed(candidate=candidate, user=owner, label_list=label_list)
    candidate.refresh_from_db()
    login(client, owner)
    response = client.post(
        reverse(
            "review:lab_candidate_promote", args=[project.pk, scorer.pk, candidate.pk]
        )
    )
    assert response.status_code == 302
    candidate.refresh_from_db()
    new = candidate.promoted_to
    assert new is not None and new.version == scorer.version + 1
    assert new.options["examples"] == candidate.options["examples"]
    scorer.refresh_from_db()
    assert scorer.archived
    event = AuditEvent.objects.get(project=project, action="lab.promote")
    assert event.actor == owner and event.after["scorer_id"] == new.pk
    # Promoted: no more edits.
    candidate.project = project
    with pytest.raises(ConflictError):
        lab_candidate_promote(candidate=candidate, user=owner)

    dataset = first_run.dataset
    new.project = project
    run = judged_run(project, owner, dataset, new, capture)
    rs = run.run_scorers.get()
    old_rs = first_run.run_scorers.get()
    assert rs.judge_version_id is not None
    assert rs.judge_version_id != old_rs.judge_version_id
    assert set(
        Result.objects.filter(run=run).values_list("judge_version_id", flat=True)
    ) == {rs.judge_version_id}
    # The new judge has seen the examples: the bias is gone on the run too.
    honest = lab_world["honest"]
    by_index = {
        r.item.index: r.judge_passed
        for r in Result.objects.filter(run=run).select_related("item")
    }
    assert by_index == honest


def test_cancel_stops_a_replay(project, owner, lab_world):
    scorer = lab_world["scorer"]
    label_list = labels(project_id=project.pk, kind="faithfulness")
    candidate = lab_candidate_create(scorer=scorer, user=owner, name="c")
    candidate.project = project
    # No on-commit execution: the runs stay queued.
    replay = lab_replay_start(candidate=candidate, user=owner, label_list=label_list)
    assert lab_replay_cancel(replay=replay, user=owner) == 2
    runs = [*replay.current_runs.all(), *replay.candidate_runs.all()]
    assert {r.status for r in runs} == {Run.Status.CANCELLED}
    assert not Result.objects.filter(
        run__in=runs, status=Result.Status.PENDING
    ).exists()
    with pytest.raises(ConflictError):
        lab_replay_cancel(replay=replay, user=owner)
