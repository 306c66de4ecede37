"""The judge lab without a judge: labels, corrections, proposals, candidates,
permissions and the figures against a recount."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Override, Result
from evalsite.review.lab.selectors import (
    comparison,
    corrections,
    labels,
    proposed_examples,
)
from evalsite.review.lab.services import (
    lab_candidate_create,
    lab_candidate_update,
    lab_example_add,
    lab_example_remove,
    lab_examples_add_proposed,
)
from evalsite.review.models import LabCandidate
from tests.conftest import login
from tests.factories import OverrideFactory, ProjectFactory
from tests.review.lab.builders import labelled_run, labelled_scorer

pytestmark = pytest.mark.django_db

# (judge, human): 3 corrections to fail, 2 to pass, 3 agreements, 2 unreviewed
VERDICTS = [
    (True, False),
    (True, False),
    (True, False),
    (False, True),
    (False, True),
    (True, True),
    (False, False),
    (True, True),
    (True, None),
    (False, None),
]


@pytest.fixture
def scorer(project):
    return labelled_scorer(project)


@pytest.fixture
def labelled(project, scorer, reviewer):
    return labelled_run(project, scorer, VERDICTS, reviewer=reviewer)


def _lab(project, scorer) -> str:
    return reverse("review:lab", args=[project.pk, scorer.pk])


def test_labels_are_the_final_human_verdicts_one_per_item(
    project, scorer, labelled, reviewer
):
    _run, results = labelled
    # Another kind, an error, another project and a lab run never count.
    other = labelled_scorer(project, kind="hallucination")
    labelled_run(project, other, [(True, False)], reviewer=reviewer)
    labelled_run(project, scorer, [(True, False)], reviewer=reviewer, purpose="lab")
    outside = ProjectFactory()
    labelled_run(outside, labelled_scorer(outside), [(True, False)])
    Result.objects.filter(pk=results[7].pk).update(status=Result.Status.ERROR)

    found = labels(project_id=project.pk, kind="faithfulness")
    assert {label.result_id for label in found} == {r.pk for r in results[:7]}
    by_result = {label.result_id: label for label in found}
    for r in results[:7]:
        assert by_result[r.pk].human_passed == r.final_passed
        assert by_result[r.pk].reviewed_by == reviewer.username
        assert by_result[r.pk].reviewed_at == r.reviewed_at
    assert sum(label.corrected for label in found) == 5
    # Newest first
    assert [label.reviewed_at for label in found] == sorted(
        (label.reviewed_at for label in found), reverse=True
    )


def test_an_item_reviewed_twice_keeps_its_latest_label(project, scorer, labelled):
    _run, results = labelled
    first = results[0]
    newer = Result.objects.get(pk=first.pk)
    # The same item judged again in a later run and reviewed later the other way.
    from tests.factories import ResultFactory, RunFactory, RunScorerFactory

    run2 = RunFactory(project=project, dataset=first.run.dataset)
    rs2 = RunScorerFactory(run=run2, scorer=scorer)
    later = ResultFactory(
        run=run2,
        run_scorer=rs2,
        item=first.item,
        judge_passed=True,
        final_passed=True,
        reviewed=True,
        reviewed_at=newer.reviewed_at.replace(year=newer.reviewed_at.year + 1),
    )
    found = {
        label.item_id: label
        for label in labels(project_id=project.pk, kind="faithfulness")
    }
    assert found[first.item_id].result_id == later.pk
    assert found[first.item_id].human_passed is True


def test_corrections_carry_the_reviewers_note(project, scorer, labelled, reviewer):
    _run, results = labelled
    OverrideFactory(
        result=results[0],
        kind=Override.Kind.PASS,
        note="contradicts chunk 2",
        user=reviewer,
    )
    reverted = OverrideFactory(
        result=results[1], kind=Override.Kind.PASS, note="old", user=reviewer
    )
    reverted.reverted_at = reverted.created_at
    reverted.save()
    found = corrections(label_list=labels(project_id=project.pk, kind="faithfulness"))
    notes = {c.key: c.explanation for c in found}
    assert notes[results[0].item_id] == "contradicts chunk 2"
    assert notes[results[1].item_id] == ""  # a reverted override's note is no note
    assert {
        c.verdict for c in found if c.key in (results[3].item_id, results[4].item_id)
    } == {"pass"}


def test_proposal_is_balanced_and_skips_examples_already_taken(project, labelled):
    _run, results = labelled
    label_list = labels(project_id=project.pk, kind="faithfulness")
    proposed = proposed_examples(label_list=label_list, k=4)
    assert sorted(c.verdict for c in proposed) == ["fail", "fail", "pass", "pass"]
    taken = [proposed[0].key]
    again = proposed_examples(label_list=label_list, k=4, exclude=taken)
    assert proposed[0].key not in {c.key for c in again}


def test_candidate_examples_add_remove_and_hold_out(project, scorer, labelled, owner):
    label_list = labels(project_id=project.pk, kind="faithfulness")
    scorer.project = project
    candidate = lab_candidate_create(scorer=scorer, user=owner, name="with examples")
    added = lab_examples_add_proposed(
        candidate=candidate, user=owner, label_list=label_list
    )
    candidate.refresh_from_db()
    assert len(candidate.options["examples"]) == len(added) == 4
    assert candidate.example_items == [int(c.key) for c in added]
    assert [e["verdict"] for e in candidate.options["examples"]] == [
        c.verdict for c in added
    ]
    # Nothing is proposed twice.
    with pytest.raises(ApplicationError):
        lab_examples_add_proposed(
            candidate=candidate,
            user=owner,
            label_list=label_list,
            only=int(added[0].key),
        )
    candidate.project = project
    lab_example_add(
        candidate=candidate,
        user=owner,
        input="q",
        output="by hand",
        context=["c"],
        verdict="fail",
        explanation="why",
    )
    lab_example_remove(candidate=candidate, user=owner, position=1)
    candidate.refresh_from_db()
    assert len(candidate.options["examples"]) == 4
    assert candidate.example_items == [int(c.key) for c in added[1:]] + [None]
    assert AuditEvent.objects.filter(project=project, action="lab.change").count() == 3


def test_bad_candidate_input_saves_nothing(project, scorer, owner):
    scorer.project = project
    candidate = lab_candidate_create(scorer=scorer, user=owner)
    before = dict(candidate.options)
    with pytest.raises(ApplicationError):
        lab_candidate_update(
            candidate=candidate,
            user=owner,
            name="x",
            rubric="r" * 5000,  # longer than a rubric may be
            judge_model="",
            judge_temperature=None,
        )
    with pytest.raises(ApplicationError):
        lab_example_add(
            candidate=candidate,
            user=owner,
            input="",
            output="",
            context=[],
            verdict="fail",
            explanation="",
        )
    with pytest.raises(ApplicationError):
        lab_example_remove(candidate=candidate, user=owner, position=3)
    candidate.refresh_from_db()
    assert candidate.options == before


def test_page_lists_labels_and_proposals_for_every_member(
    client, project, scorer, labelled, viewer, reviewer
):
    for user in (viewer, reviewer):
        login(client, user)
        response = client.get(_lab(project, scorer))
        assert response.status_code == 200
        body = response.content.decode()
        assert 'id="lab-label-count">8<' in body
        assert "Read only" in body
        assert "lab-new-candidate" not in body


def test_only_owners_write(client, project, scorer, labelled, owner, viewer, reviewer):
    scorer.project = project
    candidate = lab_candidate_create(scorer=scorer, user=owner)
    urls = [
        reverse("review:lab_candidate_create", args=[project.pk, scorer.pk]),
        reverse(
            "review:lab_candidate_update", args=[project.pk, scorer.pk, candidate.pk]
        ),
        reverse("review:lab_example_add", args=[project.pk, scorer.pk, candidate.pk]),
        reverse(
            "review:lab_example_add_proposed",
            args=[project.pk, scorer.pk, candidate.pk],
        ),
        reverse(
            "review:lab_example_remove", args=[project.pk, scorer.pk, candidate.pk]
        ),
        reverse("review:lab_replay_start", args=[project.pk, scorer.pk, candidate.pk]),
        reverse(
            "review:lab_candidate_promote", args=[project.pk, scorer.pk, candidate.pk]
        ),
    ]
    for user in (viewer, reviewer):
        login(client, user)
        for url in urls:
            assert client.post(url, {"name": "x", "position": 1}).status_code == 403, (
                url
            )
        assert (
            client.get(
                reverse(
                    "review:lab_replay_preview",
                    args=[project.pk, scorer.pk, candidate.pk],
                )
            ).status_code
            == 403
        )
    assert LabCandidate.objects.count() == 1
    candidate.refresh_from_db()
    assert "examples" not in candidate.options


def test_another_projects_scorer_or_candidate_is_404(
    client, project, scorer, owner, outsider
):
    scorer.project = project
    candidate = lab_candidate_create(scorer=scorer, user=owner)
    login(client, outsider)
    assert client.get(_lab(project, scorer)).status_code == 404
    # The outsider's own project in the URL with our scorer: 404 too.
    own = outsider.memberships.first().project
    assert (
        client.get(reverse("review:lab", args=[own.pk, scorer.pk])).status_code == 404
    )
    other_scorer = labelled_scorer(own)
    url = reverse(
        "review:lab_candidate_promote", args=[own.pk, other_scorer.pk, candidate.pk]
    )
    assert client.post(url).status_code == 404


def test_owner_drafts_and_edits_a_candidate_through_the_page(
    client, project, scorer, labelled, owner
):
    login(client, owner)
    response = client.post(
        reverse("review:lab_candidate_create", args=[project.pk, scorer.pk]),
        {"name": "Stricter"},
    )
    assert response.status_code == 302
    candidate = LabCandidate.objects.get()
    response = client.post(
        reverse(
            "review:lab_candidate_update", args=[project.pk, scorer.pk, candidate.pk]
        ),
        {
            "name": "Stricter",
            "rubric": "Fail any unsupported number.",
            "judge_model": "m2",
            "judge_temperature": "0.2",
        },
    )
    assert response.status_code == 302
    candidate.refresh_from_db()
    assert candidate.options["rubric"] == "Fail any unsupported number."
    assert candidate.options["judge_model"] == "m2"
    assert candidate.options["judge_temperature"] == 0.2
    response = client.post(
        reverse(
            "review:lab_example_add_proposed",
            args=[project.pk, scorer.pk, candidate.pk],
        )
    )
    assert response.status_code == 302
    page = client.get(
        _lab(project, scorer) + f"?candidate={candidate.pk}"
    ).content.decode()
    assert 'id="lab-example-count">4<' in page
    # Bad input: 400 with the reason, nothing saved.
    response = client.post(
        reverse(
            "review:lab_candidate_update", args=[project.pk, scorer.pk, candidate.pk]
        ),
        {"name": "", "judge_temperature": "9"},
    )
    assert response.status_code == 400
    assert 'id="lab-error"' in response.content.decode()
    candidate.refresh_from_db()
    assert candidate.name == "Stricter"


def test_comparison_without_replays_is_empty(project, scorer, labelled):
    label_list = labels(project_id=project.pk, kind="faithfulness")
    assert comparison(scorer=scorer, label_list=label_list).columns == []
