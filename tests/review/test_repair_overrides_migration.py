"""review 0008: active overrides the services refuse today are reverted, audited, and
their results recomputed, so the aggregates and later rescores work again."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.core.cache import cache
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from evalsite.accounts.models import AuditEvent
from evalsite.evals.models import Override, Result, ReviewVersion
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.results.rescore import run_rescore
from evalsite.evals.results.verdicts import override_create
from tests.factories import OverrideFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

migration = importlib.import_module(
    "evalsite.review.migrations.0008_repair_out_of_range_overrides"
)


class _AppsOfThen:
    """The models under the names review 0008 uses (Override, ReviewVersion and
    AuditEvent all review's then), as its function is given them when it runs: the
    historical ones as review 0014 left them, except the audit log, whose table has
    gained required columns since (accounts 0005), so the live model writes it."""

    def __init__(self) -> None:
        loader = MigrationLoader(connection)
        self.then = loader.project_state(
            ("review", "0014_queue_filters_run_scorer")
        ).apps

    def get_model(self, app_label: str, model_name: str) -> Any:
        if (app_label, model_name.lower()) == ("review", "auditevent"):
            return django_apps.get_model("accounts", "AuditEvent")
        return self.then.get_model(app_label, model_name)


def _review_apps() -> _AppsOfThen:
    return _AppsOfThen()


def test_the_migration_runs_the_repair_and_cannot_be_undone_meaningfully():
    (operation,) = migration.Migration.operations
    assert operation.code is migration.repair
    assert operation.reverse_code.__name__ == "noop"


@pytest.mark.parametrize(
    ("kind", "scorer_kind", "path", "value", "scale", "problem"),
    [
        ("score", "faithfulness", "", 0.5, 1.0, ""),
        ("score", "faithfulness", "", 0, 1.0, ""),
        ("score", "faithfulness", "", 100, 100.0, ""),
        ("score", "faithfulness", "", 1e308, 1.0, "score outside [0, 1]"),
        ("score", "faithfulness", "", -0.5, 1.0, "score outside [0, 1]"),
        ("score", "faithfulness", "", float("nan"), 1.0, "score is not finite"),
        ("score", "faithfulness", "", float("inf"), 1.0, "score is not finite"),
        ("score", "faithfulness", "", 10**400, 1.0, "score is not finite"),
        ("score", "faithfulness", "", "0.5", 1.0, "score is not a number"),
        ("score", "faithfulness", "", True, 1.0, "score is not a number"),
        ("pass", "faithfulness", "", True, 1.0, ""),
        ("pass", "faithfulness", "", "yes", 1.0, "pass/fail is not a boolean"),
        ("pass", "faithfulness", "", 1, 1.0, "pass/fail is not a boolean"),
        ("verdict", "faithfulness", "verdicts.0.verdict", "yes", 1.0, ""),
        (
            "verdict",
            "faithfulness",
            "verdicts.0.verdict",
            "maybe",
            1.0,
            "value is not allowed",
        ),
        (
            "verdict",
            "faithfulness",
            "verdicts.0.verdict",
            True,
            1.0,
            "value is not allowed",
        ),
        ("verdict", "faithfulness", "claims.0", "x", 1.0, "path is not overridable"),
        ("verdict", "context_relevance", "evaluations.1.used", False, 1.0, ""),
        (
            "verdict",
            "context_relevance",
            "evaluations.1.used",
            "false",
            1.0,
            "value is not allowed",
        ),
        ("verdict", "factuality", "category", "B", 1.0, ""),
        ("nonsense", "faithfulness", "", 1, 1.0, "unknown override kind"),
    ],
)
def test_override_problem_matches_what_the_services_accept(
    kind, scorer_kind, path, value, scale, problem
):
    got = migration.override_problem(
        kind=kind, scorer_kind=scorer_kind, path=path, value=value, scale=scale
    )
    assert got == problem


@pytest.mark.parametrize(
    ("options", "scale"),
    [
        ({"scale": 10.0}, 10.0),
        ({"scale": 1e308}, 1e6),  # saved before scale had a bound: checked at the bound
        ({"scale": 0}, 1.0),
        ({"scale": "ten"}, 1.0),
        ({}, 1.0),
        (None, 1.0),
    ],
)
def test_scale_checked_against(options, scale):
    assert migration._scale(options) == scale


def test_override_problem_checks_verdict_paths_against_the_analysis():
    analysis = {
        "claims": ["a"],
        "verdicts": [{"claim": "a", "verdict": "no", "reason": ""}],
    }
    kwargs = {
        "kind": "verdict",
        "scorer_kind": "faithfulness",
        "value": "yes",
        "scale": 1,
    }
    assert (
        migration.override_problem(
            path="verdicts.0.verdict", analysis=analysis, **kwargs
        )
        == ""
    )
    assert (
        migration.override_problem(
            path="verdicts.5.verdict", analysis=analysis, **kwargs
        )
        == "path is not in the analysis"
    )


def _bad(result, kind, value, path=""):
    """An override row as the old code (or a hand edit) left it, final fields included."""
    o = OverrideFactory(result=result, kind=kind, path=path, new_value=value)
    fields = {"overridden": True, "reviewed": True}
    if kind == "score":
        fields.update(final_score=value, score_overridden=True)
    Result.objects.filter(pk=result.pk).update(**fields)
    Result.objects.filter(pk=result.pk).update(
        active_override_count=Override.objects.filter(
            result=result, reverted_at__isnull=True
        ).count()
    )
    return o


def _final(result):
    result.refresh_from_db()
    return result


def test_repair_reverts_refused_overrides_and_recomputes_their_results(
    project, reviewer
):
    run = make_run(project, kinds=["faithfulness", "context_relevance"], n_items=3)
    r0, r1, r2 = Result.objects.filter(
        run=run, run_scorer__kind="faithfulness"
    ).order_by("pk")
    cr = Result.objects.filter(run=run, run_scorer__kind="context_relevance").first()
    kept_score = override_create(result=r0, user=reviewer, kind="score", value=0.8)
    kept_flip = override_create(
        result=r2, user=reviewer, kind="verdict", path="verdicts.1.verdict", value="yes"
    )
    kept_pass = override_create(result=cr, user=reviewer, kind="pass", value=True)
    bad = [
        _bad(r0, "score", 1e308),
        _bad(r1, "score", -0.5),
        _bad(r1, "pass", "yes"),
        _bad(r2, "verdict", "maybe", path="verdicts.0.verdict"),
        _bad(cr, "score", 1.5),
    ]
    versions = {r.pk: _final(r).version for r in (r0, r1, r2, cr)}
    review_versions = dict(
        ReviewVersion.objects.values_list("run_scorer_id", "version")
    )
    # Prime the aggregates cache with the broken state, as a running site would have.
    run_aggregates(run_id=run.pk)

    reverted = migration.repair_out_of_range_overrides(_review_apps())

    assert sorted(reverted) == sorted(o.pk for o in bad)
    assert not Override.objects.filter(
        pk__in=reverted, reverted_at__isnull=True
    ).exists()
    assert (
        Override.objects.filter(
            pk__in=[kept_score.pk, kept_flip.pk, kept_pass.pk], reverted_at__isnull=True
        ).count()
        == 3
    )
    events = AuditEvent.objects.filter(action="override.repair")
    assert events.count() == len(bad)
    assert {e.before["override_id"] for e in events} == set(reverted)
    assert all(e.actor_id is None and e.before["problem"] for e in events)

    r0, r1, r2, cr = (_final(r) for r in (r0, r1, r2, cr))
    assert (r0.final_score, r0.score_overridden, r0.active_override_count) == (
        0.8,
        True,
        1,
    )
    assert r0.final_passed is True
    assert (r1.final_score, r1.final_passed) == (r1.judge_score, r1.judge_passed)
    assert not (r1.overridden or r1.score_overridden or r1.pass_overridden)
    assert r1.active_override_count == 0
    assert r2.final_analysis["verdicts"][1]["verdict"] == "yes"
    assert r2.final_analysis["verdicts"][0]["verdict"] == "yes"  # the judge's
    assert (r2.final_score, r2.verdict_flip_count, r2.active_override_count) == (
        0.67,
        1,
        1,
    )
    assert (cr.final_score, cr.final_passed) == (cr.judge_score, True)
    assert cr.pass_overridden and not cr.score_overridden
    for r in (r0, r1, r2, cr):
        assert r.version == versions[r.pk] + 1
    for scorer_id, version in ReviewVersion.objects.values_list(
        "run_scorer_id", "version"
    ):
        assert version == review_versions.get(scorer_id, 0) + 1

    # The cached aggregates moved on (new review version) and equal a cold recount.
    warm = [a.as_dict() for a in run_aggregates(run_id=run.pk)]
    cache.clear()
    cold = [a.as_dict() for a in run_aggregates(run_id=run.pk)]
    assert warm == cold
    faithfulness = next(a for a in cold if a["kind"] == "faithfulness")
    scores = list(
        Result.objects.filter(run=run, run_scorer__kind="faithfulness").values_list(
            "final_score", flat=True
        )
    )
    assert faithfulness["final_mean"] == pytest.approx(
        sum(scores) / len(scores), abs=0.01
    )
    assert faithfulness["active_overrides"] == 2

    # And a what-if rescore works again.
    preview = run_rescore(
        run=run,
        run_scorer=r0.run_scorer,
        options={"scale": 10},
        user=reviewer,
        save=True,
    )
    assert preview.saved and _final(r0).final_score == 0.8


def test_repair_is_idempotent_and_leaves_valid_overrides_alone(project, reviewer):
    run = make_run(project, kinds=["faithfulness"], n_items=2)
    first, second = Result.objects.filter(run=run).order_by("pk")
    override_create(result=first, user=reviewer, kind="score", value=0.5)
    override_create(result=second, user=reviewer, kind="pass", value=True)
    before = list(Result.objects.order_by("pk").values())
    assert migration.repair_out_of_range_overrides(_review_apps()) == []
    assert list(Result.objects.order_by("pk").values()) == before
    assert not AuditEvent.objects.filter(action="override.repair").exists()

    _bad(first, "score", 1e308)
    assert len(migration.repair_out_of_range_overrides(_review_apps())) == 1
    assert migration.repair_out_of_range_overrides(_review_apps()) == []
    assert _final(first).final_score == 0.5


def test_repair_checks_scores_against_each_scorers_own_scale(project, reviewer):
    run = make_run(
        project, kinds=["faithfulness"], options={"faithfulness": {"scale": 100}}
    )
    result = Result.objects.get(run=run)
    ok = _bad(result, "score", 99.5)
    too_big = _bad(result, "score", 100.5)
    assert migration.repair_out_of_range_overrides(_review_apps()) == [too_big.pk]
    assert _final(result).final_score == 99.5
    ok.refresh_from_db()
    assert ok.reverted_at is None
