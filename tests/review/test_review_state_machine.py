"""Every figure the product shows equals a recount from the raw rows, after any
sequence of review work.

A stateful, model-based test (Hypothesis `RuleBasedStateMachine`) of the review domain
on the real database, with commits (so on-commit work and caches behave as in
production). Rules: judge results arriving (pass, fail, error), verdict flips, score and
pass/fail overrides, undo, comments, queue answers by three reviewers (blind or not,
overlap 1-3, majority or unanimous-or-adjudicate), adjudication, undo on a queue card,
bulk accept, a saved what-if rescore, a second run on a new dataset version, and
calibration samples (uniform, stratified, active) answered like any queue.

After every step the invariants read what a user sees (the REST API's aggregates,
queue, agreement and compare figures, the CSV export) and compare it with a recount
written here in plain Python from the rows (results, overrides, reviews, entries). The
recount never calls the product's aggregate, agreement or compare code; the only
product code it uses is `scoring`'s formula (what a score *is*) and `bin_of` below is
written out again.

Bounded for CI by REVIEW_MACHINE_EXAMPLES / REVIEW_MACHINE_STEPS (defaults 40 x 30, about 2 minutes; the test's own timeout is 20 minutes, since the
suite's 5-minute one cut it off mid-query on a loaded CI machine),
derandomized (the same sequences every run), and on failure Hypothesis prints the
shortest failing sequence of rules as a runnable test.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
from collections import defaultdict
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from evalsite.accounts.models import Role
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.engine.claims import new_claim_token, results_claim, store_result
from evalsite.evals.models import Comment, Override, Result, Run, RunScorer
from evalsite.evals.results.comments import comment_create
from evalsite.evals.results.rescore import run_rescore
from evalsite.evals.results.verdicts import override_create
from evalsite.evals.runs.services import run_finish_if_complete
from evalsite.review.estimates.services import SampleDesign, calibration_sample_create
from evalsite.review.explorer.bulk import results_accept
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import Selection
from evalsite.review.models import FinalRule, QueueEntry, Review, ReviewQueue
from evalsite.review.queues.services import queue_create, result_undo_last
from evalsite.review.team.services import review_adjudicate, review_answer
from scoring import (
    JudgeResult,
    apply_override,
    compute_score,
    overridable_count,
    passes,
    validate_options,
)
from tests.conftest import bearer
from tests.factories import (
    DatasetFactory,
    MembershipFactory,
    ProjectFactory,
    RunFactory,
    RunScorerFactory,
    ScorerConfigFactory,
    UserFactory,
)
from tests.review.builders import queue_card_key
from tests.review.estimates.recount import recount as estimates_recount

pytestmark = pytest.mark.django_db(transaction=True)

KIND = "faithfulness"
VERDICTS = ("yes", "no", "unsure")
N_ITEMS = 5
EXAMPLES = int(os.environ.get("REVIEW_MACHINE_EXAMPLES", "40"))
STEPS = int(os.environ.get("REVIEW_MACHINE_STEPS", "30"))
TOL = 1e-9

analyses = st.lists(st.sampled_from(VERDICTS), min_size=1, max_size=3).map(
    lambda vs: {
        "claims": [f"claim {i}" for i in range(len(vs))],
        "verdicts": [
            {"claim": f"claim {i}", "verdict": v, "reason": f"reason {i}"}
            for i, v in enumerate(vs)
        ],
    }
)


def bin_of(score: float, scale: float) -> int:
    """Ten equal bins over [0, scale], the top edge in the last one."""
    return min(int(score / scale * 10), 9) if scale else 0


def mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def share(pairs: list[tuple[Any, Any]]) -> float | None:
    return sum(a == b for a, b in pairs) / len(pairs) if pairs else None


def close(got: Any, want: Any) -> bool:
    if want is None or got is None:
        return got is want
    return abs(float(got) - float(want)) <= TOL


class ReviewMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.project = ProjectFactory(name="machine")
        self.owner = self._member("owner", Role.OWNER)
        self.reviewers = [self._member(f"rev{i}", Role.REVIEWER) for i in range(3)]
        # Figures are read as a viewer: viewers never answer, so blind review hides
        # nothing from them and they see every row the recount counts.
        self.viewer = self._member("viewer", Role.VIEWER)
        self.client = Client()
        self.headers = bearer(self.viewer)
        rows = [
            {
                "input": f"question {i}",
                "output": f"answer {i}",
                "context": [f"context {i}"],
                "metadata": {"id": f"k{i}"},
            }
            for i in range(N_ITEMS)
        ]
        self.rows = rows
        dataset = DatasetFactory(project=self.project, name="qa", rows=rows)
        self.config = ScorerConfigFactory(
            project=self.project, kind=KIND, options=validate_options(KIND, None)
        )
        self.run_a = RunFactory(
            project=self.project,
            dataset=dataset,
            status=Run.Status.RUNNING,
            total=N_ITEMS,
        )
        rs = RunScorerFactory(run=self.run_a, scorer=self.config)
        Result.objects.bulk_create(
            Result(
                run=self.run_a,
                item=item,
                run_scorer=rs,
                status=Result.Status.PENDING,
            )
            for item in dataset.items.order_by("index")
        )
        self.run_b: Run | None = None
        self.queues: list[ReviewQueue] = []

    def _member(self, name: str, role: str) -> Any:
        user = UserFactory(username=f"{name}-{self.project.pk}")
        MembershipFactory(project=self.project, user=user, role=role)
        return user

    # ------------------------------------------------------------ reading helpers

    def _runs(self) -> list[Run]:
        return [r for r in (self.run_a, self.run_b) if r is not None]

    def _results(self, **filters: Any) -> list[Result]:
        return list(
            Result.objects.filter(run__in=self._runs(), **filters).order_by(
                "run_id", "item__index"
            )
        )

    def _user(self, data: st.DataObject) -> Any:
        return data.draw(st.sampled_from([self.owner, *self.reviewers]), label="user")

    def _get(self, url: str) -> Any:
        response = self.client.get(url, **self.headers)
        assert response.status_code == 200, (url, response.content[:500])
        return response.json()

    # ------------------------------------------------------------------ the rules

    @precondition(lambda self: self._results(status=Result.Status.PENDING))
    @rule(data=st.data(), outcome=st.sampled_from(["ok", "ok", "error"]))
    def judge_arrives(self, data: st.DataObject, outcome: str) -> None:
        result = data.draw(
            st.sampled_from(self._results(status=Result.Status.PENDING)), label="result"
        )
        token = new_claim_token()
        assert results_claim(
            run_id=result.run_id, token=token, count=1, ids=[result.pk]
        )
        if outcome == "error":
            store_result(
                result.pk, token, judged=None, error="judge timed out", steps=[]
            )
        else:
            analysis = data.draw(analyses, label="analysis")
            options = result.run_scorer.options
            score = compute_score(KIND, analysis, options)
            judged = JudgeResult(
                kind=KIND,
                analysis=analysis,
                score=score,
                passed=passes(KIND, score, options),
                reason="judged",
            )
            store_result(result.pk, token, judged=judged, steps=[])
        run_finish_if_complete(run_id=result.run_id)

    def _ok(self) -> list[Result]:
        return self._results(status=Result.Status.OK)

    @precondition(lambda self: self._ok())
    @rule(data=st.data())
    def override(self, data: st.DataObject) -> None:
        result = data.draw(st.sampled_from(self._ok()), label="result")
        kind = data.draw(st.sampled_from(["verdict", "score", "pass"]), label="kind")
        if kind == "verdict":
            n = len((result.final_analysis or {})["verdicts"])
            path = f"verdicts.{data.draw(st.integers(0, n - 1))}.verdict"
            value: Any = data.draw(st.sampled_from(VERDICTS), label="value")
        elif kind == "score":
            path, value = "", data.draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
        else:
            path, value = "", data.draw(st.booleans(), label="passed")
        # e.g. the value it already has: refused, nothing may change
        with contextlib.suppress(ApplicationError):
            override_create(
                result=result,
                user=self._user(data),
                kind=kind,
                path=path,
                value=value,
            )

    @precondition(lambda self: self._ok())
    @rule(data=st.data())
    def undo(self, data: st.DataObject) -> None:
        result = data.draw(st.sampled_from(self._ok()), label="result")
        with contextlib.suppress(ApplicationError):
            result_undo_last(result=result, user=self._user(data))

    @precondition(lambda self: self._ok())
    @rule(data=st.data())
    def comment(self, data: st.DataObject) -> None:
        result = data.draw(st.sampled_from(self._ok()), label="result")
        comment_create(result=result, user=self._user(data), body="looks off")

    @precondition(
        lambda self: (
            len(self.queues) < 3
            and Result.objects.filter(run=self.run_a, status=Result.Status.OK).exists()
        )
    )
    @rule(
        overlap=st.integers(1, 3),
        rule_=st.sampled_from([FinalRule.MAJORITY, FinalRule.UNANIMOUS]),
        blind=st.booleans(),
    )
    def make_queue(self, overlap: int, rule_: str, blind: bool) -> None:
        self.queues.append(
            queue_create(
                run=self.run_a,
                user=self.owner,
                query=ResultQuery(sort="item"),
                overlap=overlap,
                final_rule=FinalRule.SINGLE if overlap == 1 else rule_,
                blind=blind,
            )
        )

    @precondition(
        lambda self: (
            len(self.queues) < 4
            and Result.objects.filter(run=self.run_a, status=Result.Status.OK).exists()
        )
    )
    @rule(
        design=st.sampled_from(["uniform", "stratified", "active"]),
        budget=st.integers(1, N_ITEMS),
        seed=st.integers(0, 3),
    )
    def draw_calibration_sample(self, design: str, budget: int, seed: int) -> None:
        with contextlib.suppress(ApplicationError):  # a draw that picked nothing
            self.queues.append(
                calibration_sample_create(
                    run=self.run_a,
                    run_scorer=self.run_a.run_scorers.get(),
                    user=self.owner,
                    spec=SampleDesign(design=design, budget=budget, seed=seed),
                )
            )

    def _entry(self, data: st.DataObject, queue: ReviewQueue) -> QueueEntry:
        entries = list(QueueEntry.objects.filter(queue=queue).order_by("position"))
        return data.draw(st.sampled_from(entries), label="entry")

    def _card_key(
        self, queue: ReviewQueue, entry: QueueEntry, user: Any, key: str
    ) -> None:
        queue_card_key(queue=queue, position=entry.position, user=user, key=key)

    @precondition(lambda self: self.queues)
    @rule(data=st.data())
    def answer(self, data: st.DataObject) -> None:
        queue = data.draw(st.sampled_from(self.queues), label="queue")
        entry = self._entry(data, queue)
        user = data.draw(st.sampled_from(self.reviewers), label="reviewer")
        if queue.overlap == 1:
            key = data.draw(st.sampled_from(["pass", "fail", "accept"]), label="key")
            self._card_key(queue, entry, user, key)
            return
        result = Result.objects.get(pk=entry.result_id)
        flips: dict[str, str] = {}
        if result.analysis and data.draw(st.booleans(), label="flip?"):
            n = len(result.analysis["verdicts"])
            path = f"verdicts.{data.draw(st.integers(0, n - 1))}.verdict"
            flips[path] = data.draw(st.sampled_from(VERDICTS), label="flip")
        # decided already, or a result that is not ok
        with contextlib.suppress(ApplicationError):
            review_answer(
                queue=queue,
                result=result,
                user=user,
                passed=data.draw(st.booleans(), label="passed"),
                flips=flips,
            )

    @precondition(lambda self: any(q.overlap == 1 for q in self.queues))
    @rule(data=st.data())
    def undo_on_card(self, data: st.DataObject) -> None:
        queue = data.draw(
            st.sampled_from([q for q in self.queues if q.overlap == 1]), label="queue"
        )
        entry = self._entry(data, queue)
        self._card_key(queue, entry, data.draw(st.sampled_from(self.reviewers)), "undo")

    @precondition(
        lambda self: QueueEntry.objects.filter(
            queue__in=self.queues, state=QueueEntry.State.ADJUDICATE
        ).exists()
    )
    @rule(data=st.data())
    def adjudicate(self, data: st.DataObject) -> None:
        entries = list(
            QueueEntry.objects.filter(
                queue__in=self.queues, state=QueueEntry.State.ADJUDICATE
            ).select_related("queue", "result")
        )
        entry = data.draw(st.sampled_from(entries), label="entry")
        review_adjudicate(
            queue=entry.queue,
            result=entry.result,
            user=self.owner,
            passed=data.draw(st.booleans(), label="passed"),
        )

    @precondition(lambda self: self._ok())
    @rule(data=st.data())
    def bulk_accept(self, data: st.DataObject) -> None:
        run = data.draw(st.sampled_from(self._runs()), label="run")
        ids = [r.pk for r in self._results(run=run)]
        chosen = data.draw(
            st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True)
        )
        with contextlib.suppress(ApplicationError):
            results_accept(
                run=run, user=self._user(data), selection=Selection(ids=tuple(chosen))
            )

    @precondition(lambda self: self._ok())
    @rule(data=st.data(), threshold=st.sampled_from([0.2, 0.5, 0.7, 1.0]))
    def rescore_saved(self, data: st.DataObject, threshold: float) -> None:
        run = data.draw(st.sampled_from(self._runs()), label="run")
        rs = RunScorer.objects.get(run=run)
        # e.g. a run still judging
        with contextlib.suppress(ApplicationError):
            run_rescore(
                run=run,
                run_scorer=rs,
                options={**rs.options, "threshold": threshold},
                user=self.owner,
                save=True,
            )

    @precondition(lambda self: self.run_b is None)
    @rule(data=st.data())
    def second_run_on_new_version(self, data: st.DataObject) -> None:
        """Version 2 drops k0, changes k2's output and adds k5; judged at once."""
        rows = [dict(r) for r in self.rows[1:]] + [
            {
                "input": "question 5",
                "output": "answer 5",
                "context": ["context 5"],
                "metadata": {"id": "k5"},
            }
        ]
        rows[1]["output"] = "a better answer 2"
        dataset = DatasetFactory(project=self.project, name="qa", rows=rows)
        assert dataset.version == 2
        run = RunFactory(project=self.project, dataset=dataset, total=len(rows))
        rs = RunScorerFactory(run=run, scorer=self.config)
        results = []
        for item in dataset.items.order_by("index"):
            analysis = data.draw(analyses, label="analysis b")
            score = compute_score(KIND, analysis, rs.options)
            ok = passes(KIND, score, rs.options)
            results.append(
                Result(
                    run=run,
                    item=item,
                    run_scorer=rs,
                    status=Result.Status.OK,
                    analysis=analysis,
                    overridable_count=overridable_count(KIND, analysis),
                    judge_score=score,
                    judge_passed=ok,
                    final_analysis=analysis,
                    final_score=score,
                    final_passed=ok,
                )
            )
        Result.objects.bulk_create(results)
        self.run_b = run

    # ------------------------------------------------------------- the invariants

    @invariant()
    def finals_follow_the_judge_and_the_active_overrides(self) -> None:
        """final = the judge's analysis with the active overrides applied (newest per
        path), scored by the formula, unless a score or pass override says otherwise."""
        for result in self._ok():
            options = result.run_scorer.options
            active = Override.objects.filter(
                result=result, reverted_at__isnull=True
            ).order_by("created_at", "id")
            analysis = result.analysis
            score_override = pass_override = None
            for o in active:
                if o.kind == Override.Kind.VERDICT:
                    analysis = apply_override(KIND, analysis, o.path, o.new_value)
                elif o.kind == Override.Kind.SCORE:
                    score_override = o.new_value
                else:
                    pass_override = o.new_value
            score = compute_score(KIND, analysis, options)
            if score_override is not None:
                score = float(score_override)
            passed = passes(KIND, score, options)
            if pass_override is not None:
                passed = bool(pass_override)
            where = f"result {result.pk}"
            assert result.final_analysis == analysis, where
            assert close(result.final_score, score), where
            assert result.final_passed == passed, where
            assert result.overridden == active.exists(), where
            if result.human_passed is not None:
                assert result.reviewed, where

    @invariant()
    def run_aggregates_equal_a_recount(self) -> None:
        for run in self._runs():
            (got,) = self._get(f"/api/runs/{run.pk}/aggregates")
            rows = list(Result.objects.filter(run=run))
            ok = [r for r in rows if r.status == Result.Status.OK]
            reviewed = [r for r in ok if r.reviewed]
            scale = float(got["scale"])
            judge_hist, final_hist = [0] * 10, [0] * 10
            for r in ok:
                judge_hist[bin_of(r.judge_score, scale)] += 1
                final_hist[bin_of(r.final_score, scale)] += 1
            want = {
                "total": len(rows),
                "ok": len(ok),
                "errors": sum(r.status == Result.Status.ERROR for r in rows),
                "pending": sum(r.status == Result.Status.PENDING for r in rows),
                "reviewed": len(reviewed),
                "overridden": sum(r.overridden for r in ok),
                "active_overrides": Override.objects.filter(
                    result__run=run,
                    result__status=Result.Status.OK,
                    reverted_at__isnull=True,
                ).count(),
            }
            assert {k: got[k] for k in want} == want, run
            figures = {
                "judge_mean": mean([r.judge_score for r in ok]),
                "final_mean": mean([r.final_score for r in ok]),
                "human_mean": mean([r.final_score for r in reviewed]),
                "judge_pass_rate": mean([float(r.judge_passed) for r in ok]),
                "final_pass_rate": mean([float(r.final_passed) for r in ok]),
                "human_pass_rate": mean([float(r.final_passed) for r in reviewed]),
            }
            for name, value in figures.items():
                assert close(got[name], value), (run, name, got[name], value)
            if ok:
                assert got["histogram"]["judge"] == judge_hist
                assert got["histogram"]["final"] == final_hist

    @invariant()
    def corrected_figures_equal_a_recount(self) -> None:
        for run in self._runs():
            got = {
                e["run_scorer_id"]: e
                for e in self._get(f"/api/runs/{run.pk}/estimates")
            }
            for rs in run.run_scorers.all():
                for metric in ("pass_rate", "mean"):
                    figure = got[rs.pk][metric]
                    want = estimates_recount(rs, metric)
                    if want is None:
                        assert figure is None or figure["estimate"] is None
                        continue
                    assert close(figure["estimate"], want[0]), (metric, figure, want)
                    assert close(figure["half_width"], want[1]), (metric, figure, want)

    @invariant()
    def queue_progress_equals_a_recount(self) -> None:
        for queue in self.queues:
            got = self._get(f"/api/queues/{queue.pk}")
            entries = list(
                QueueEntry.objects.filter(queue=queue).select_related("result")
            )
            assert got["size"] == len(entries)
            assert got["reviewed"] == sum(e.result.reviewed for e in entries)
            assert got["decided"] == sum(e.state == "decided" for e in entries)
            assert got["adjudicate"] == sum(e.state == "adjudicate" for e in entries)
            for e in entries:
                answers = list(
                    Review.objects.filter(
                        queue=queue, result_id=e.result_id, kind=Review.Kind.ANSWER
                    )
                )
                assert e.answers == len(answers), e
                assert e.answers_pass == sum(a.passed is True for a in answers), e
                assert e.answers_fail == sum(a.passed is False for a in answers), e
                if queue.overlap == 1 and not e.result.reviewed:
                    # An undo that left the result unreviewed took its answers back.
                    assert not answers, e

    @invariant()
    def agreement_equals_a_recount(self) -> None:
        got = {
            scorer["scope_id"]: scorer
            for scorer in self._get(f"/api/runs/{self.run_a.pk}/agreement")
        }
        for rs in RunScorer.objects.filter(run=self.run_a):
            latest: dict[tuple[int, str], Review] = {}
            for review in (
                Review.objects.filter(
                    result__run_scorer=rs,
                    kind=Review.Kind.ANSWER,
                    reviewer__isnull=False,
                )
                .select_related("reviewer")
                .order_by("created_at", "id")
            ):
                latest[(review.result_id, review.reviewer.username)] = review
            results = {r.pk: r for r in Result.objects.filter(run_scorer=rs)}
            decided = set(
                QueueEntry.objects.filter(
                    result__run_scorer=rs, state=QueueEntry.State.DECIDED
                ).values_list("result_id", flat=True)
            )
            per = {p["username"]: p for p in got[rs.pk]["per_reviewer"]}
            users = sorted({u for _, u in latest})
            assert sorted(per) == users
            for username in users:
                mine = [
                    (rid, r.passed) for (rid, u), r in latest.items() if u == username
                ]
                with_final = [
                    (p, results[rid].final_passed)
                    for rid, p in mine
                    if p is not None and rid in decided
                ]
                with_judge = [
                    (p, results[rid].judge_passed)
                    for rid, p in mine
                    if p is not None and results[rid].judge_passed is not None
                ]
                stats = per[username]
                assert stats["answered"] == len(mine), username
                assert stats["with_final_items"] == len(with_final), username
                assert close(stats["with_final"], share(with_final)), username
                assert stats["with_judge_items"] == len(with_judge), username
                assert close(stats["with_judge"], share(with_judge)), username
            by_result: dict[int, list[bool]] = defaultdict(list)
            for (rid, _), review in latest.items():
                if review.passed is not None:
                    by_result[rid].append(review.passed)
            units = [v for v in by_result.values() if len(v) >= 2]
            pairs = agreeing = 0
            for values in units:
                for i in range(len(values)):
                    for j in range(i + 1, len(values)):
                        pairs += 1
                        agreeing += values[i] == values[j]
            percent = got[rs.pk]["percent_agreement"]
            assert percent["items"] == len(units)
            assert close(percent["value"], agreeing / pairs if pairs else None)

    @invariant()
    def export_rows_equal_the_rows(self) -> None:
        for run in self._runs():
            response = self.client.get(f"/api/runs/{run.pk}/export.csv", **self.headers)
            assert response.status_code == 200
            text = b"".join(response.streaming_content).decode()
            exported = {
                int(row["result_id"]): row for row in csv.DictReader(io.StringIO(text))
            }
            results = {r.pk: r for r in Result.objects.filter(run=run)}
            assert set(exported) == set(results)
            for pk, result in results.items():
                row = exported[pk]
                answers = Review.objects.filter(result=result, kind=Review.Kind.ANSWER)
                visible = [
                    a
                    for a in answers.select_related("queue")
                    if a.queue.overlap == 1
                    or QueueEntry.objects.filter(queue=a.queue, result=result)
                    .exclude(state=QueueEntry.State.OPEN)
                    .exists()
                ]
                assert int(row["answer_count"] or 0) == len(visible), pk
                assert (
                    row["reviewed"] in ("true", "True", "1")
                    if result.reviewed
                    else (row["reviewed"] in ("false", "False", "0", ""))
                ), (pk, row["reviewed"])
                if result.status == Result.Status.OK:
                    assert close(float(row["final_score"]), result.final_score), pk
                    assert row["final_passed"].lower() in (
                        ("true", "1") if result.final_passed else ("false", "0")
                    ), (pk, row["final_passed"])
                assert (
                    int(row["comment_count"] or 0)
                    == Comment.objects.filter(result=result).count()
                )

    @invariant()
    def compare_equals_a_recount(self) -> None:
        if self.run_b is None:
            return
        body = self._get(f"/api/runs/{self.run_a.pk}/compare/{self.run_b.pk}?key=id")
        assert (body["run_a"], body["run_b"]) == (self.run_a.pk, self.run_b.pk)
        (pair,) = body["pairs"]
        a = {
            r.item.metadata["id"]: r
            for r in Result.objects.filter(run=self.run_a).select_related("item")
        }
        b = {
            r.item.metadata["id"]: r
            for r in Result.objects.filter(run=self.run_b).select_related("item")
        }
        matched = sorted(set(a) & set(b))
        both = [
            (a[k], b[k])
            for k in matched
            if a[k].status == Result.Status.OK and b[k].status == Result.Status.OK
        ]
        assert pair["n"] == len(matched)
        assert pair["both_ok"] == len(both)
        assert pair["missing"] == len(matched) - len(both)
        assert pair["regressions"] == sum(
            y.final_score < x.final_score for x, y in both
        )
        assert pair["improvements"] == sum(
            y.final_score > x.final_score for x, y in both
        )
        assert pair["pass_to_fail"] == sum(
            x.final_passed and not y.final_passed for x, y in both
        )
        assert pair["fail_to_pass"] == sum(
            y.final_passed and not x.final_passed for x, y in both
        )
        assert close(pair["a_mean"], mean([x.final_score for x, _ in both]))
        assert close(pair["b_mean"], mean([y.final_score for _, y in both]))
        deltas = [y.final_score - x.final_score for x, y in both]
        assert close(pair["mean_delta"], mean(deltas))
        a_rate = mean([float(x.final_passed) for x, _ in both])
        b_rate = mean([float(y.final_passed) for _, y in both])
        assert close(pair["a_pass_rate"], a_rate)
        assert close(pair["b_pass_rate"], b_rate)
        if both:
            assert close(pair["pass_rate_delta"], b_rate - a_rate)


@pytest.mark.timeout(1200)
def test_every_figure_equals_a_recount_after_any_review_sequence() -> None:
    run_state_machine_as_test(
        ReviewMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            derandomize=True,
            database=None,
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
