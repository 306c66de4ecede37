from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from evalsite.accounts.services import project_create
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.evals import conf
from evalsite.evals.crypto import SecretUnreadableError, secret_decrypt, secret_encrypt
from evalsite.evals.engine.claims import new_claim_token, results_claim
from evalsite.evals.engine.dispatch import run_dispatch
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import JudgeCall, JudgeConnection, Result, Run, ScorerConfig
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from scoring import overridable_count
from tests.evals.conftest import judge_control, judge_stats, support_rows
from tests.factories import DatasetFactory, ProjectFactory, ScorerConfigFactory

pytestmark = pytest.mark.django_db


def _start(project, owner, dataset, scorers, capture):
    with capture(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers
        )
    run.refresh_from_db()
    return run


# --------------------------------------------------------------------------- judges


def test_project_create_adds_the_offline_judge_connection(owner):
    project = project_create(user=owner, name="Fresh")
    judge = JudgeConnection.objects.get(project=project)
    assert judge.is_offline
    assert judge.model == "offline-judge"
    assert judge.base_url == "http://127.0.0.1:8011/v1" or judge.base_url.endswith(
        "/v1"
    )


def test_secret_encrypt_round_trips_and_hides_the_plaintext():
    token = secret_encrypt("sk-live-abc123")
    assert "sk-live-abc123" not in token
    assert secret_decrypt(token) == "sk-live-abc123"


def test_secret_decrypt_rejects_a_token_made_with_another_secret_key(settings):
    token = secret_encrypt("sk-live-abc123")
    settings.SECRET_KEY = "another-secret-key-entirely-0123456789abcdef"
    with pytest.raises(SecretUnreadableError, match="SECRET_KEY"):
        secret_decrypt(token)


def test_judge_create_stores_the_key_encrypted_only(project, owner):
    judge = judge_services.judge_create(
        project=project,
        user=owner,
        name="GPT",
        base_url="https://api.example.com/v1/",
        model="gpt-4o-mini",
        api_key="sk-live-abc123",
    )
    judge.refresh_from_db()
    assert judge.base_url == "https://api.example.com/v1"
    assert judge.has_api_key
    assert "sk-live-abc123" not in judge.api_key_encrypted
    assert judge_services.judge_api_key(judge=judge) == "sk-live-abc123"


def test_judge_api_key_reads_the_named_environment_variable(
    project, owner, monkeypatch, settings
):
    settings.JUDGE_KEY_ENV_ALLOWED = ["EVALSITE_JUDGE_KEY_*@api.example.com"]
    judge = judge_services.judge_create(
        project=project,
        user=owner,
        name="Env",
        base_url="https://api.example.com/v1",
        model="m",
        api_key_env="EVALSITE_JUDGE_KEY_TEST",
    )
    monkeypatch.setenv("EVALSITE_JUDGE_KEY_TEST", "sk-from-env")
    assert judge_services.judge_api_key(judge=judge) == "sk-from-env"
    monkeypatch.delenv("EVALSITE_JUDGE_KEY_TEST")
    with pytest.raises(ApplicationError, match="EVALSITE_JUDGE_KEY_TEST is not set"):
        judge_services.judge_api_key(judge=judge)


def test_judge_update_keeps_the_key_unless_a_new_one_is_given(project, owner):
    judge = judge_services.judge_create(
        project=project,
        user=owner,
        name="J",
        base_url="http://h/v1",
        model="m",
        api_key="k1",
    )
    judge_services.judge_update(judge=judge, user=owner, model="m2")
    assert judge_services.judge_api_key(judge=judge) == "k1"
    judge_services.judge_update(judge=judge, user=owner, api_key="k2")
    assert judge_services.judge_api_key(judge=judge) == "k2"
    judge_services.judge_update(judge=judge, user=owner, clear_api_key=True)
    assert not judge.has_api_key


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base_url", "ftp://x"),
        ("max_concurrency", 0),
        ("temperature", 3),
        ("name", "  "),
        ("price_per_1k_input", -1),
    ],
)
def test_judge_create_names_the_bad_field(project, owner, field, value):
    fields = {"name": "J", "base_url": "http://h/v1", "model": "m", field: value}
    with pytest.raises(ApplicationError) as exc:
        judge_services.judge_create(project=project, user=owner, **fields)
    assert field in exc.value.field_errors


def test_judge_create_rejects_a_duplicate_name(project, owner):
    judge_services.judge_create(
        project=project, user=owner, name="J", base_url="http://h/v1", model="m"
    )
    with pytest.raises(ApplicationError) as exc:
        judge_services.judge_create(
            project=project, user=owner, name="J", base_url="http://h/v1", model="m"
        )
    assert "name" in exc.value.field_errors


def test_judge_test_reports_latency_against_the_offline_judge(judge):
    outcome = judge_services.judge_test(judge=judge)
    assert outcome.ok, outcome.message
    assert outcome.latency_ms > 0


def test_judge_test_reports_the_endpoint_error(judge, offline_judge):
    judge_control(offline_judge, script=["400"])
    outcome = judge_services.judge_test(judge=judge)
    assert not outcome.ok
    # The status, in words; never the remote body (a judge URL may point anywhere).
    assert "HTTP 400" in outcome.message and "Bad request" not in outcome.message


def test_judge_test_reports_an_unreachable_endpoint(project, owner):
    judge = judge_services.judge_create(
        project=project,
        user=owner,
        name="Nowhere",
        base_url="http://127.0.0.1:9/v1",
        model="m",
    )
    outcome = judge_services.judge_test(judge=judge)
    assert not outcome.ok
    assert "Connection" in outcome.message or "connect" in outcome.message


# --------------------------------------------------------------------------- scorers


def test_scorer_create_merges_defaults_and_threshold(project, owner, judge):
    scorer = scorer_services.scorer_create(
        project=project,
        user=owner,
        name="CR",
        kind="context_relevance",
        judge=judge,
        options={"penalties": {"unused_high_relevance": 0}},
        threshold=0.7,
    )
    assert scorer.options["threshold"] == 0.7
    assert scorer.options["penalties"] == {
        "unused_high_relevance": 0,
        "missing_context_per_item": 0.15,
        "max_missing_context_penalty": 0.5,
    }


def test_scorer_create_names_the_bad_option(project, owner, judge):
    with pytest.raises(ApplicationError) as exc:
        scorer_services.scorer_create(
            project=project,
            user=owner,
            name="CR",
            kind="context_relevance",
            judge=judge,
            options={"penalties": {"unused_high_relevance": 2}},
        )
    assert list(exc.value.field_errors) == ["options.penalties.unused_high_relevance"]


def test_scorer_create_requires_a_judge_only_for_llm_kinds(project, owner):
    with pytest.raises(ApplicationError) as exc:
        scorer_services.scorer_create(
            project=project, user=owner, name="F", kind="faithfulness"
        )
    assert "judge_id" in exc.value.field_errors
    scorer = scorer_services.scorer_create(
        project=project, user=owner, name="S", kind="content_similarity"
    )
    assert scorer.judge is None


def test_scorer_create_refuses_a_judge_of_another_project(project, owner):
    other = judge_services.judge_create_offline(ProjectFactory())
    with pytest.raises(ApplicationError) as exc:
        scorer_services.scorer_create(
            project=project, user=owner, name="F", kind="faithfulness", judge=other
        )
    assert "judge_id" in exc.value.field_errors


def test_scorer_update_edits_in_place_while_unused(project, owner, scorers):
    scorer = scorers[0]
    saved = scorer_services.scorer_update(scorer=scorer, user=owner, threshold=0.9)
    assert saved.pk == scorer.pk
    assert saved.options["threshold"] == 0.9


def test_scorer_update_makes_a_new_version_once_a_run_used_it(
    project, owner, dataset, scorers, django_capture_on_commit_callbacks
):
    run = _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    old = scorers[0]
    new = scorer_services.scorer_update(scorer=old, user=owner, threshold=0.9)
    old.refresh_from_db()
    assert (new.version, new.parent_id, old.archived) == (2, old.pk, True)
    snapshot = run.run_scorers.get(scorer=old)
    assert snapshot.options["threshold"] == 0.5
    with pytest.raises(ApplicationError, match="old version"):
        scorer_services.scorer_update(scorer=old, user=owner, threshold=0.1)


def test_scorer_version_create_from_run_numbers_after_every_version_and_archives_them(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    old = scorers[0]
    edited = scorer_services.scorer_update(scorer=old, user=owner, threshold=0.9)  # v2
    snapshot = run.run_scorers.get(scorer=old)  # the run ran v1
    options = {**snapshot.options, "threshold": 0.7}
    saved = scorer_services.scorer_version_create_from_run(
        run_scorer=snapshot, options=options, user=owner
    )
    edited.refresh_from_db()
    assert (saved.version, saved.parent_id, saved.name) == (3, old.pk, old.name)
    assert saved.options["threshold"] == 0.7
    assert edited.archived
    live = ScorerConfig.objects.filter(project=project, name=old.name, archived=False)
    assert list(live) == [saved]


def test_scorer_version_create_from_run_stands_in_the_snapshot_for_a_deleted_scorer(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    snapshot = run.run_scorers.get()
    scorers[0].delete()
    snapshot.refresh_from_db()
    saved = scorer_services.scorer_version_create_from_run(
        run_scorer=snapshot, options=snapshot.options, user=owner
    )
    assert (saved.version, saved.parent_id) == (1, None)
    assert (saved.name, saved.kind, saved.judge_id) == (
        snapshot.name,
        snapshot.kind,
        snapshot.judge_id,
    )


# --------------------------------------------------------------------------- runs


def test_run_start_snapshots_scorers_and_creates_pending_results(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    assert run.total == 6
    assert Result.objects.filter(run=run, status=Result.Status.PENDING).count() == 6
    snapshot = run.run_scorers.get(kind="faithfulness")
    assert snapshot.judge_snapshot["model"] == "offline-judge"
    assert "api_key" not in str(snapshot.judge_snapshot)


def test_run_start_rejects_a_scorer_of_another_project(project, owner, dataset):
    foreign = ScorerConfigFactory(
        project=ProjectFactory(), name="X", kind="content_similarity", options={}
    )
    with pytest.raises(ApplicationError) as exc:
        run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=[foreign]
        )
    assert "scorer_ids" in exc.value.field_errors


def test_run_start_rejects_an_empty_dataset(project, owner, scorers):
    empty = DatasetFactory(project=project, name="empty", rows=[])
    with pytest.raises(ApplicationError) as exc:
        run_services.run_start(
            project=project, user=owner, dataset=empty, scorers=scorers
        )
    assert "dataset_id" in exc.value.field_errors


def test_run_completes_and_stores_every_judge_step(
    project, owner, dataset, scorers, django_capture_on_commit_callbacks
):
    run = _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    assert run.status == Run.Status.DONE
    assert run.finished_at is not None
    results = Result.objects.filter(run=run)
    assert results.count() == 6
    for result in results:
        assert result.status == Result.Status.OK
        assert result.judge_score is not None
        assert result.final_score == result.judge_score
        assert result.final_passed == result.judge_passed
        assert result.final_analysis == result.analysis
        assert result.overridable_count == overridable_count(
            result.run_scorer.kind, result.analysis
        )
    faithful = results.filter(run_scorer__kind="faithfulness")
    for result in faithful:
        steps = list(result.calls.values_list("step", flat=True))
        assert steps[0] == "claims" and steps[-1] == "reason"
        call = result.calls.first()
        assert call.messages and call.raw_response and call.prompt_tokens > 0
        # Stored as JSON (the review page shows each message), in the order sent.
        assert [m["role"] for m in call.messages][-1] == "user"
        assert call.created_at is not None and not call.cache_hit
    # The non-LLM scorer makes no judge call.
    assert not JudgeCall.objects.filter(
        result__run_scorer__kind="content_similarity"
    ).exists()
    # The faithful first case scores high, the contradicting second one low.
    by_index = {r.item.index: r.judge_score for r in faithful}
    assert by_index[0] > by_index[1]


def test_identical_calls_are_answered_from_the_cache(
    project, owner, dataset, scorers, offline_judge, django_capture_on_commit_callbacks
):
    _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    before = judge_stats(offline_judge)["chat_completions"]
    second = _start(
        project, owner, dataset, scorers, django_capture_on_commit_callbacks
    )
    assert judge_stats(offline_judge)["chat_completions"] == before
    calls = JudgeCall.objects.filter(result__run=second)
    assert calls.exists() and all(c.cache_hit for c in calls)


def test_another_projects_identical_calls_are_judged_again_not_cached(
    project, owner, dataset, scorers, offline_judge, django_capture_on_commit_callbacks
):
    _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    other = project_create(user=owner, name="Other team")
    other_judge = judge_services.judge_create_offline(other)
    other_judge.base_url = offline_judge.base_url
    other_judge.save(update_fields=["base_url"])
    other_scorer = scorer_services.scorer_create(
        project=other,
        user=owner,
        name="Faithfulness",
        kind="faithfulness",
        judge=other_judge,
    )
    before = judge_stats(offline_judge)["chat_completions"]
    second = _start(
        other,
        owner,
        DatasetFactory(project=other, name="support", rows=support_rows(3)),
        [other_scorer],
        django_capture_on_commit_callbacks,
    )
    # Same texts, same judge settings: paid again, and nothing says they were seen.
    assert judge_stats(offline_judge)["chat_completions"] > before
    calls = JudgeCall.objects.filter(result__run=second)
    assert calls.exists() and not any(c.cache_hit for c in calls)


def test_a_second_dispatch_neither_duplicates_nor_calls_again(
    project, owner, dataset, scorers, offline_judge
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert run_dispatch(run_id=run.pk).judged == run.total
    calls = JudgeCall.objects.filter(result__run=run).count()
    completions = judge_stats(offline_judge)["chat_completions"]
    # A redelivered dispatch message while the run still shows running.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    second = run_dispatch(run_id=run.pk)
    assert (second.judged, second.errors) == (0, 0)
    assert JudgeCall.objects.filter(result__run=run).count() == calls
    assert judge_stats(offline_judge)["chat_completions"] == completions


def test_a_claim_respects_a_live_lease_and_takes_over_an_expired_one(
    project, owner, dataset, scorers, frozen_clock
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    result = run.results.first()

    def claim() -> bool:
        return bool(
            results_claim(
                run_id=run.pk, token=new_claim_token(), count=1, ids=[result.pk]
            )
        )

    assert claim()
    assert not claim()
    frozen_clock.shift(conf.lease_seconds() - 1)
    assert not claim()  # the lease still runs
    frozen_clock.shift(2)
    assert claim()
    result.refresh_from_db()
    assert result.attempts == 2


def test_judge_error_fails_only_that_result_and_the_run_finishes(
    project, owner, dataset, scorers, offline_judge, django_capture_on_commit_callbacks
):
    judge_control(offline_judge, script=["400"])
    run = _start(
        project, owner, dataset, scorers[:1], django_capture_on_commit_callbacks
    )
    assert run.status == Run.Status.DONE_WITH_ERRORS
    failed = Result.objects.get(run=run, status=Result.Status.ERROR)
    assert "HTTP 400" in failed.error
    assert failed.judge_score is None and failed.final_score is None
    assert failed.calls.count() == 1 and failed.calls.get().error
    assert Result.objects.filter(run=run, status=Result.Status.OK).count() == 2


def test_case_error_marks_the_result_with_the_field(
    project, owner, judge, scorers, django_capture_on_commit_callbacks
):
    dataset = DatasetFactory(project=project, name="bad", rows=support_rows(2))
    dataset.items.filter(index=0).update(output="")
    run = _start(
        project, owner, dataset, scorers[:1], django_capture_on_commit_callbacks
    )
    result = Result.objects.get(run=run, item__index=0)
    assert result.status == Result.Status.ERROR
    assert "output" in result.error
    assert Result.objects.get(run=run, item__index=1).status == Result.Status.OK
    assert run.status == Run.Status.DONE_WITH_ERRORS


def test_a_scorer_needing_a_field_no_item_has_is_refused_before_the_run(
    project, owner, judge, scorers
):
    dataset = DatasetFactory(project=project, name="bad", rows=support_rows(2))
    dataset.items.update(output="")
    with pytest.raises(ApplicationError) as caught:
        run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers[:1]
        )
    assert "needs output, which no item of" in caught.value.field_errors["scorer_ids"]
    assert not Run.objects.filter(dataset=dataset).exists()


def test_run_cancel_cancels_pending_results_and_work_stops(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    run_services.run_cancel(run=run, user=owner)
    assert run.status == Run.Status.CANCELLED
    assert set(run.results.values_list("status", flat=True)) == {
        Result.Status.CANCELLED
    }
    assert results_claim(run_id=run.pk, token=new_claim_token(), count=10) == []
    with pytest.raises(ConflictError):
        run_services.run_cancel(run=run, user=owner)


def test_run_retry_failed_requeues_only_the_errors(
    project, owner, dataset, scorers, offline_judge, django_capture_on_commit_callbacks
):
    judge_control(offline_judge, script=["400"])
    run = _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    ok_before = dict(
        Result.objects.filter(run=run, status=Result.Status.OK).values_list(
            "pk", "updated_at"
        )
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert run_services.run_retry_failed(run=run, user=owner) == 1
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert (
        dict(Result.objects.filter(pk__in=ok_before).values_list("pk", "updated_at"))
        == ok_before
    )
    with pytest.raises(ApplicationError, match="no failed"):
        run_services.run_retry_failed(run=run, user=owner)


def test_run_recover_requeues_results_of_a_dead_worker(
    project, owner, dataset, scorers, frozen_clock
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, started_at=timezone.now()
    )
    Result.objects.filter(run=run).update(
        claimed_at=timezone.now() - timedelta(hours=1),
        claimed_by="dead:1:x",
        attempts=1,
    )
    assert run_services.run_recover(run_id=run.pk) == 3
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert set(run.results.values_list("attempts", flat=True)) == {2}
    # A second tick right away is skipped: one watchdog tick per interval.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert run_services.run_recover(run_id=run.pk) is None
    # The next interval's tick runs (and finds nothing lost).
    frozen_clock.shift(conf.monitor_interval())
    assert run_services.run_recover(run_id=run.pk) == 0


def test_run_finish_if_complete_waits_for_pending_results(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    assert not run_services.run_finish_if_complete(run_id=run.pk)
    Result.objects.filter(run=run).update(status=Result.Status.OK)
    Result.objects.filter(pk=run.results.first().pk).update(status=Result.Status.ERROR)
    assert run_services.run_finish_if_complete(run_id=run.pk)
    assert not run_services.run_finish_if_complete(run_id=run.pk)  # once only
    run.refresh_from_db()
    assert run.status == Run.Status.DONE_WITH_ERRORS


# --------------------------------------------------------------------------- preview


def test_run_preview_renders_the_first_prompt_and_extrapolates(
    project, owner, judge, scorers
):
    dataset = DatasetFactory(project=project, name="big", rows=support_rows(120))
    judge.price_per_1k_input = Decimal("0.5")
    judge.price_per_1k_output = Decimal("1.5")
    judge.save()
    preview = run_services.run_preview(dataset=dataset, scorers=scorers)
    faithful, similarity = preview.scorers
    first = faithful.prompts[0]
    assert first["step"] == "claims"
    assert (
        "Refunds are processed within 5 business days."
        in first["messages"][-1]["content"]
    )
    assert [p["step"] for p in faithful.prompts[1:]] == ["verdicts", "reason"]
    assert faithful.calls == 360  # 3 judge calls per item x 120 items
    assert faithful.prompt_tokens > 0
    expected = (
        Decimal("0.5") * faithful.prompt_tokens
        + Decimal("1.5") * faithful.completion_tokens
    ) / 1000
    assert faithful.cost == expected
    assert (similarity.calls, similarity.prompts, similarity.cost) == (0, [], None)
    assert preview.results == 240


def test_viewer_cannot_reach_write_lookups(project, viewer, dataset, scorers):
    from evalsite.evals.scorers.selectors import scorer_get_for_user

    with pytest.raises(PermissionDenied):
        scorer_get_for_user(user=viewer, pk=scorers[0].pk, write=True)


def test_kinds_that_need_agent_data_are_offered_now_datasets_hold_it(project, owner):
    """tool_call_accuracy reads an item's tool calls, which datasets hold
    part 2 (evalsite.datasets.agentdata): offered like every kind whose fields items
    hold; a kind the library does not know is still refused."""
    from evalsite.evals.scorers.forms import ScorerForm
    from evalsite.evals.scorers.services import SCORER_KINDS, scorer_create

    assert {"tool_call_accuracy", "trajectory_accuracy", "faithfulness"} <= set(
        SCORER_KINDS
    )
    form = ScorerForm(project_id=project.pk, kind="faithfulness")
    assert "tool_call_accuracy" in dict(form.fields["kind"].choices)
    scorer = scorer_create(
        project=project, user=owner, name="t", kind="tool_call_accuracy"
    )
    assert scorer.options["expected_tool_order"] is None
    with pytest.raises(ApplicationError, match="Unknown scorer kind"):
        scorer_create(project=project, user=owner, name="t", kind="no_such_kind")
