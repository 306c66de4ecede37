"""Every score a result holds stays within 0-scale. Factuality category
scores outside 0-1 are refused at create and edit (form and API) and by run start; what
was saved before the check is flagged by evals 0006 (never rewritten) and the scorer
and run pages show the flag until the scorer is reconfigured and the run rescored."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.urls import reverse

from evalsite.accounts.services import api_token_create
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result, RunScorer, ScorerConfig
from evalsite.evals.results.rescore import run_rescore
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

migration = importlib.import_module("evalsite.evals.migrations.0006_score_range_flags")

OUT_OF_RANGE = [1.5, -1]


def _url(name, project, *args):
    return reverse(f"evals:{name}", args=[project.pk, *args])


def _form(judge, **category_scores):
    scores = {
        "subset": "1",
        "superset": "1",
        "agree": "1",
        "disagree": "0",
        "differ_but_factual": "1",
    } | {k: str(v) for k, v in category_scores.items()}
    return {
        "name": "Fact",
        "kind": "factuality",
        "judge": judge.pk,
        "options.scale": "1",
        "options.threshold": "",
        "options.rubric_prompt": "",
        **{f"options.category_scores.{k}": v for k, v in scores.items()},
    }


def _api(client, user):
    _, raw = api_token_create(user=user)
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    return client


def _factuality(project, owner, judge, **options):
    return scorer_services.scorer_create(
        project=project,
        user=owner,
        name="Fact",
        kind="factuality",
        judge=judge,
        options=options,
    )


def _legacy(obj, **category_scores):
    """Options as the old check let them be saved (a queryset update skips the services)."""
    options = {
        **obj.options,
        "category_scores": {**obj.options["category_scores"], **category_scores},
    }
    type(obj).objects.filter(pk=obj.pk).update(options=options)
    obj.refresh_from_db()
    return obj


# ------------------------------------------------------------ refused at every entry


@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_scorer_form_refuses_category_scores_outside_0_1(
    owner_client, project, judge, value
):
    response = owner_client.post(
        _url("scorer_create", project), _form(judge, disagree=value)
    )
    assert response.status_code == 400
    body = response.content.decode()
    block = body.split('data-option="options.category_scores.disagree"')[1]
    assert 'class="error"' in block.split("data-option=")[0]
    assert not ScorerConfig.objects.filter(name="Fact").exists()


@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_scorer_edit_form_refuses_category_scores_outside_0_1(
    owner_client, project, owner, judge, value
):
    scorer = _factuality(project, owner, judge)
    response = owner_client.post(
        _url("scorer_edit", project, scorer.pk), _form(judge, superset=value)
    )
    assert response.status_code == 400
    scorer.refresh_from_db()
    assert scorer.options["category_scores"]["superset"] == 1.0


@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_api_scorer_create_and_patch_refuse_category_scores_outside_0_1(
    client, project, owner, judge, value
):
    api = _api(client, owner)
    created = api.post(
        f"/api/projects/{project.pk}/scorers",
        {
            "name": "Fact",
            "kind": "factuality",
            "judge_id": judge.pk,
            "options": {"category_scores": {"disagree": value}},
        },
        content_type="application/json",
    )
    assert created.status_code == 400
    assert created.json()["errors"][0]["field"] == "options.category_scores.disagree"
    scorer = _factuality(project, owner, judge)
    patched = api.patch(
        f"/api/scorers/{scorer.pk}",
        {"options": {"category_scores": {"subset": value}}},
        content_type="application/json",
    )
    assert patched.status_code == 400
    assert patched.json()["errors"][0]["field"] == "options.category_scores.subset"
    scorer.refresh_from_db()
    assert scorer.options["category_scores"]["subset"] == 1.0


def test_run_start_refuses_a_scorer_saved_with_category_scores_outside_0_1(
    project, owner, judge, dataset
):
    scorer = _legacy(_factuality(project, owner, judge), disagree=-1)
    with pytest.raises(ApplicationError) as info:
        run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=[scorer]
        )
    assert "out of range" in info.value.message
    assert "edit the scorer" in info.value.message
    assert "scorer_ids" in info.value.field_errors


# ------------------------------------------------------------------- the migration


def test_the_migration_adds_the_flags_then_flags():
    operations = migration.Migration.operations
    assert [getattr(op, "name", None) for op in operations[:3]] == [
        "range_problem",
        "range_problem",
        "score_out_of_range",
    ]
    assert operations[3].code is migration.flag_out_of_range


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"category_scores": {"disagree": 0.25}}, ""),
        ({"category_scores": {"disagree": 0, "subset": 1}}, ""),
        ({}, ""),
        (None, ""),
        (
            {"category_scores": {"disagree": -1}},
            "category scores outside 0-1 (disagree -1)",
        ),
        (
            {"category_scores": {"superset": 1.5, "agree": 2}},
            "category scores outside 0-1 (superset 1.5, agree 2)",
        ),
        (
            {"category_scores": {"agree": "x"}},
            "category scores outside 0-1 (agree 'x')",
        ),
    ],
)
def test_category_problem(options, problem):
    assert migration.category_problem("factuality", options) == problem
    assert migration.category_problem("faithfulness", options) == ""


def test_the_migration_flags_configs_run_scorers_and_results_without_rewriting_them(
    project, owner, judge
):
    run = make_run(project, kinds=["factuality", "faithfulness"], n_items=3)
    fact = run.run_scorers.get(kind="factuality")
    faith = run.run_scorers.get(kind="faithfulness")
    # A run as the old check let it be: disagree -1, and the results' scores with it.
    _legacy(fact, disagree=-1)
    _legacy(fact.scorer, disagree=-1)
    bad, good, _ = Result.objects.filter(run_scorer=fact).order_by("pk")
    Result.objects.filter(pk=bad.pk).update(judge_score=-1.0, final_score=-1.0)
    before = {
        r.pk: (r.judge_score, r.final_score) for r in Result.objects.filter(run=run)
    }
    fine = _factuality(project, owner, judge)

    counts = migration.flag_out_of_range(django_apps)

    assert counts == {"scorer_configs": 1, "run_scorers": 1, "results": 1}
    fact.refresh_from_db()
    fact.scorer.refresh_from_db()
    assert (
        fact.scorer.range_problem
        == "Saved with category scores outside 0-1 (disagree -1)."
    )
    assert fact.range_problem == (
        "Run with category scores outside 0-1 (disagree -1). "
        "1 result holds a score outside 0-1."
    )
    assert fact.options["category_scores"]["disagree"] == -1  # flagged, not rewritten
    faith.refresh_from_db()
    fine.refresh_from_db()
    assert faith.range_problem == "" and fine.range_problem == ""
    assert set(
        Result.objects.filter(score_out_of_range=True).values_list("pk", flat=True)
    ) == {bad.pk}
    assert {
        r.pk: (r.judge_score, r.final_score) for r in Result.objects.filter(run=run)
    } == before

    # The pages show the flags.
    client = owner_client_for(owner)
    body = client.get(_url("scorers", project)).content.decode()
    assert f'id="scorer-range-problem-{fact.scorer.pk}"' in body
    assert "disagree -1" in body
    body = client.get(_url("scorer_edit", project, fact.scorer.pk)).content.decode()
    assert 'id="scorer-range-problem"' in body
    body = client.get(_url("run_detail", project, run.pk)).content.decode()
    assert f'id="run-scorer-range-problem-{fact.pk}"' in body
    assert "Reconfigure and rescore" in body
    assert f'id="run-scorer-range-problem-{faith.pk}"' not in body
    body = client.get(reverse("review:item", args=[project.pk, bad.pk])).content
    assert f'id="score-out-of-range-{bad.pk}"' in body.decode()
    body = client.get(reverse("review:item", args=[project.pk, good.pk])).content
    assert "score-out-of-range" not in body.decode()

    # A what-if rescore with options within the ranges recomputes and clears them.
    run_rescore(
        run=run,
        run_scorer=fact,
        options={**fact.options, "category_scores": {"disagree": 0}},
        user=owner,
        save=True,
    )
    fact.refresh_from_db()
    assert fact.range_problem == ""
    assert not Result.objects.filter(score_out_of_range=True).exists()
    assert Result.objects.get(pk=bad.pk).judge_score == 0.0
    body = client.get(_url("run_detail", project, run.pk)).content.decode()
    assert "run-scorer-range-problem" not in body


def test_an_edit_within_the_ranges_clears_a_configs_flag(
    owner_client, project, owner, judge
):
    scorer = _legacy(_factuality(project, owner, judge), superset=2)
    assert migration.flag_out_of_range(django_apps)["scorer_configs"] == 1
    response = owner_client.post(
        _url("scorer_edit", project, scorer.pk), _form(judge, superset="0.5")
    )
    assert response.status_code == 302
    scorer.refresh_from_db()
    assert scorer.range_problem == ""
    assert scorer.options["category_scores"]["superset"] == 0.5
    body = owner_client.get(_url("scorers", project)).content.decode()
    assert "scorer-range-problem" not in body


def test_the_migration_flags_results_outside_their_own_scale(project):
    run = make_run(
        project,
        kinds=["faithfulness"],
        n_items=3,
        options={"faithfulness": {"scale": 10}},
    )
    rs = run.run_scorers.get()
    a, b, c = Result.objects.filter(run=run).order_by("pk")
    Result.objects.filter(pk=a.pk).update(final_score=10.0)  # the top: inside
    Result.objects.filter(pk=b.pk).update(final_score=10.5)
    Result.objects.filter(pk=c.pk).update(judge_score=-0.5)

    counts = migration.flag_out_of_range(django_apps)

    assert counts == {"scorer_configs": 0, "run_scorers": 1, "results": 2}
    assert set(
        Result.objects.filter(score_out_of_range=True).values_list("pk", flat=True)
    ) == {b.pk, c.pk}
    rs.refresh_from_db()
    assert rs.range_problem == "2 results hold a score outside 0-10."
    assert isinstance(RunScorer.objects.get(pk=rs.pk).options, dict)


def owner_client_for(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client
