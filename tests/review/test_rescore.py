"""What-if rescore: preview writes nothing, save makes a scorer version and rewrites scores."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result, Run, ScorerConfig
from evalsite.evals.results.rescore import run_rescore
from evalsite.evals.results.verdicts import override_create
from tests.conftest import login
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


def _cr(*evaluations, missing=()):
    return {
        "evaluations": [
            {"context_index": i, "relevance": rel, "used": used, "reason": "r"}
            for i, (rel, used) in enumerate(evaluations)
        ],
        "missing_context": list(missing),
        "context_count": len(evaluations),
    }


@pytest.fixture
def run(project):
    # SCORERS.md examples at default penalties: 0.75 and 0.63 and 0.35
    analyses = [
        _cr(("high", False), ("high", True), missing=["x"]),
        _cr(("high", False), ("high", False), ("high", False), ("medium", True)),
        _cr(("high", True), ("medium", True), missing=["a", "b", "c", "d"]),
    ]
    return make_run(
        project,
        kinds=["context_relevance"],
        n_items=3,
        analyses={"context_relevance": analyses},
    )


def _scores(run):
    return list(
        Result.objects.filter(run=run)
        .order_by("item__index")
        .values_list("judge_score", "final_score", "final_passed")
    )


def test_preview_computes_after_aggregates_and_writes_nothing(run, reviewer):
    rs = run.run_scorers.get()
    before = _scores(run)
    assert [b[0] for b in before] == [0.75, 0.63, 0.35]
    preview = run_rescore(
        run=run,
        run_scorer=rs,
        user=reviewer,
        save=False,
        options={
            "penalties": {
                "unused_high_relevance": 0.2,
                "missing_context_per_item": 0.3,
                "max_missing_context_penalty": 0.4,
            }
        },
    )
    # SCORERS.md: penalties {0.2, 0.3, cap 0.4}: [high unused, high used] + 1 missing →
    # 1 − 0.2 − 0.3 = 0.5; 3 unused high + medium: 0.925 − 0.6 = 0.325 → 0.33;
    # 4 missing capped at 0.4: 0.85 − 0.4 = 0.45
    assert preview.before.final_mean == pytest.approx((0.75 + 0.63 + 0.35) / 3)
    assert preview.after.final_mean == pytest.approx((0.5 + 0.33 + 0.45) / 3)
    assert preview.after.judge_mean == pytest.approx((0.5 + 0.33 + 0.45) / 3)
    assert preview.before.final_pass_rate == pytest.approx(2 / 3)
    assert preview.after.final_pass_rate == pytest.approx(1 / 3)
    assert (preview.changed_scores, preview.changed_passes) == (3, 1)
    assert not preview.saved
    assert _scores(run) == before
    assert run.run_scorers.get().options["penalties"]["unused_high_relevance"] == 0.1
    assert ScorerConfig.objects.count() == 1 and not AuditEvent.objects.exists()


def test_save_makes_a_version_rewrites_scores_keeps_score_overrides(run, reviewer):
    rs = run.run_scorers.get()
    first, second, third = Result.objects.filter(run=run).order_by("item__index")
    override_create(result=second, user=reviewer, kind="score", value=0.99)
    override_create(
        result=third,
        user=reviewer,
        kind="verdict",
        path="evaluations.0.relevance",
        value="low",
    )
    preview = run_rescore(
        run=run, run_scorer=rs, user=reviewer, save=True, options={"scale": 10}
    )
    assert preview.saved
    rows = _scores(run)
    assert rows[0] == (7.5, 7.5, True)
    # 0.625 × 10 = 6.25 (rounded after scaling); the score override is kept and pass
    # follows it (0.99 < 5)
    assert rows[1] == (6.25, 0.99, False)
    # [low used, medium used] + 4 missing: (0.3 + 0.7)/2 − 0.5 = 0 → 0
    assert rows[2] == (3.5, 0.0, False)
    rs.refresh_from_db()
    assert rs.options["scale"] == 10.0
    config = ScorerConfig.objects.get(pk=preview.scorer_config_id)
    assert (
        config.version == 2
        and config.parent_id == rs.scorer.parent_id == config.parent.pk
    )
    assert rs.scorer_id == config.pk and config.options["scale"] == 10.0
    event = AuditEvent.objects.get(action="run.rescore")
    assert (
        event.before["options"]["scale"] == 1.0
        and event.after["options"]["scale"] == 10.0
    )
    assert event.run_id == run.pk and event.actor == reviewer


def test_invalid_or_unrescorable_options_are_rejected(run, reviewer):
    rs = run.run_scorers.get()
    with pytest.raises(ApplicationError) as exc:
        run_rescore(
            run=run, run_scorer=rs, user=reviewer, save=False, options={"scale": -1}
        )
    assert "options.scale" in exc.value.field_errors
    with pytest.raises(ApplicationError) as exc:
        run_rescore(
            run=run, run_scorer=rs, user=reviewer, save=False, options={"bogus": 1}
        )
    fact = make_run(run.project, kinds=["factuality"])
    with pytest.raises(ApplicationError) as exc:
        run_rescore(
            run=fact,
            run_scorer=fact.run_scorers.get(),
            user=reviewer,
            save=False,
            options={"rubric_prompt": "Grade {{input}} {{ideal}} {{completion}}"},
        )
    assert "options.rubric_prompt" in exc.value.field_errors


def test_unfinished_run_cannot_be_rescored(project, reviewer):
    running = make_run(project, status=Run.Status.RUNNING)
    with pytest.raises(ApplicationError, match="finished"):
        run_rescore(
            run=running,
            run_scorer=running.run_scorers.get(),
            user=reviewer,
            save=False,
            options={},
        )


def test_rescore_page_preview_and_save(client, reviewer, viewer, run):
    rs = run.run_scorers.get()
    url = reverse("review:rescore", args=[run.project_id, run.pk])
    login(client, viewer)
    html = client.get(url).content.decode()
    assert (
        'name="penalties__unused_high_relevance"' in html and "Viewers can look" in html
    )
    assert client.post(url, {"run_scorer": rs.pk, "scale": "2"}).status_code == 403
    login(client, reviewer)
    form = {
        "run_scorer": rs.pk,
        "scale": "1",
        "threshold": "0.5",
        "penalties__unused_high_relevance": "0",
        "penalties__missing_context_per_item": "0.15",
        "penalties__max_missing_context_penalty": "0.5",
        "action": "preview",
    }
    resp = client.post(url, form, HTTP_HX_REQUEST="true")
    html = resp.content.decode()
    assert html.lstrip().startswith('<section id="rescore-result">')
    assert "Preview (nothing saved)" in html
    assert rs.results.filter(final_score=0.75).exists()
    # Saving rewrites everyone's scores: reviewers need the owner's leave, and confirm.
    run.project.reviewers_can_save_rescore = True
    run.project.save(update_fields=["reviewers_can_save_rescore"])
    resp = client.post(url, {**form, "action": "save", "confirm": "yes"})
    assert resp.status_code == 302
    assert not rs.results.filter(
        final_score=0.75
    ).exists()  # now 0.85: no unused penalty
    assert rs.results.filter(final_score=0.85).exists()


def test_rescore_api_preview_and_save_by_config_id(client, reviewer, run):
    rs = run.run_scorers.get()
    run.project.reviewers_can_save_rescore = True  # saving needs the owner's leave
    run.project.save(update_fields=["reviewers_can_save_rescore"])
    login(client, reviewer)
    body = {"scorer_id": rs.scorer_id, "options": {"threshold": 0.7}}
    data = client.post(
        f"/api/runs/{run.pk}/rescore", body, content_type="application/json"
    ).json()
    assert data["saved"] is False and data["after"]["final_pass_rate"] == pytest.approx(
        1 / 3
    )
    data = client.post(
        f"/api/runs/{run.pk}/rescore",
        {**body, "save": True},
        content_type="application/json",
    ).json()
    assert data["saved"] is True and data["scorer_config_id"]
    bad = client.post(
        f"/api/runs/{run.pk}/rescore",
        {"run_scorer_id": rs.pk, "options": {"threshold": 3}},
        content_type="application/json",
    )
    assert (
        bad.status_code == 400
        and bad.json()["errors"][0]["field"] == "options.threshold"
    )
    missing = client.post(
        f"/api/runs/{run.pk}/rescore",
        {"run_scorer_id": 999999},
        content_type="application/json",
    )
    assert missing.status_code == 400


def test_a_refused_rescore_value_comes_back_at_its_field_with_the_value_typed(
    client, reviewer, run
):
    """htmx posts the form to the result region; a refused value re-renders the form
    instead (retargeted), the error under its field and what was typed kept."""
    import re

    rs = run.run_scorers.get()
    url = reverse("review:rescore", args=[run.project_id, run.pk])
    login(client, reviewer)
    resp = client.post(
        url,
        {
            "run_scorer": rs.pk,
            "scale": "1",
            "threshold": "abc",
            "penalties__unused_high_relevance": "0",
            "penalties__missing_context_per_item": "0.15",
            "penalties__max_missing_context_penalty": "0.5",
            "action": "preview",
        },
        HTTP_HX_REQUEST="true",
    )
    assert resp["HX-Retarget"] == "#rescore-form" and resp["HX-Reswap"] == "outerHTML"
    html = resp.content.decode()
    assert html.lstrip().startswith('<form method="post" id="rescore-form"')
    field = re.search(r'<input[^>]*name="threshold"[^>]*>', html).group(0)
    assert 'value="abc"' in field and 'aria-invalid="true"' in field
    label = html.split('name="threshold"', 1)[1].split("</label>", 1)[0]
    assert 'class="error"' in label  # the message sits in the field's own label
    assert 'id="rescore-form-error"' in html
    assert rs.results.filter(final_score=0.75).exists()  # nothing rescored
