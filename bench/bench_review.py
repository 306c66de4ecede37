"""Review on a 100k-result run (25k items × 4 LLM scorers), section "review".

Server times (the app's Server-Timing header) of requests made with the Django test
client and a logged-in reviewer:
- an override request (POST /api/results/{id}/overrides, a verdict flip) including the
  recomputed aggregates it returns, and the same through the item page's htmx POST
  (updated panel + aggregates card out of band): p50 / p95, target p95 ≤ 50 ms;
- the filtered results page (the explorer's htmx partial, judge fail of one scorer):
  p95 ≤ 150 ms;
- run_aggregates of the whole run, and a what-if rescore preview of one scorer (25k).
The run is first reset to a fixed review state (about 5 % of results reviewed, see
_reset_reviews), as a run part-way through review would be.
Runs on the configured database (`make bench` gives it a scratch one); the data is
built once and reused. Run alone: `python -m bench bench_review`.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from typing import Any

from bench._common import (
    allow_testserver,
    bench_member,
    latency_rows,
    replace_dataset,
    reusable_run,
    server_ms,
    settle_database,
    setup_row,
    time_get,
)

N_ITEMS = 25_000
KINDS_USED = ("faithfulness", "hallucination", "context_relevance", "factuality")
BATCH = 5_000
REPEAT = 40
# Before timing, the run is reset to a fixed review state: every 25th ok result
# accepted (4 %) and every 75th given a pass override (1.3 %), so the figures do not
# drift with the overrides earlier bench runs left behind.
REVIEWED_EVERY = 25
OVERRIDDEN_EVERY = 75
OVERRIDE_TARGET_MS = 50.0
PAGE_TARGET_MS = 150.0
DATASET_NAME = "bench-review-100k"


def _claims_analysis(
    claims: list[str], verdicts: list[str], reason: str, rng: random.Random
) -> dict[str, Any]:
    """A claims + per-claim verdicts analysis, each verdict drawn from `verdicts`."""
    return {
        "claims": claims,
        "verdicts": [
            {"claim": c, "verdict": rng.choice(verdicts), "reason": reason}
            for c in claims
        ],
    }


def _item_fields(i: int) -> dict[str, Any]:
    return {
        "input": f"Question {i}: what does the report say about region {i % 17}?",
        "output": f"Revenue in region {i % 17} grew by {i % 9} percent in 2023.",
        "context": [f"Revenue in region {i % 17} grew {i % 9}%.", "Costs fell."],
        "reference": f"Region {i % 17} grew {i % 9}%.",
    }


def _analysis(kind: str, rng: random.Random) -> dict[str, Any]:
    n = rng.randint(1, 8)
    if kind == "faithfulness":
        claims = [
            f"Claim {i}: revenue in region {rng.randint(1, 17)} grew." for i in range(n)
        ]
        return _claims_analysis(
            claims,
            ["yes", "yes", "no", "unsure"],
            "The context states the figure for that region.",
            rng,
        )
    if kind == "hallucination":
        claims = [f"Statement {i} about the quarterly report." for i in range(n)]
        return _claims_analysis(
            claims, ["no", "no", "no", "yes"], "Supported by the second chunk.", rng
        )
    if kind == "context_relevance":
        k = rng.randint(1, 5)
        return {
            "evaluations": [
                {
                    "context_index": i,
                    "relevance": rng.choice(["high", "medium", "low", "none"]),
                    "used": rng.random() < 0.7,
                    "reason": "Mentions the region asked about.",
                }
                for i in range(k)
            ],
            "missing_context": ["the year"] if rng.random() < 0.2 else [],
            "context_count": k,
        }
    return {
        "category": rng.choice("ABCDE"),
        "reason": "The answer matches the reference.",
    }


def _build() -> tuple[Any, Any]:
    from django.db import connection, transaction
    from django.utils import timezone

    from evalsite.accounts.models import Role
    from evalsite.evals.models import Result, Run, RunScorer
    from scoring import (
        KINDS,
        compute_score,
        overridable_count,
        passes,
        validate_options,
    )

    user, project = bench_member("bench-review", Role.REVIEWER)
    run = reusable_run(project, DATASET_NAME, N_ITEMS * len(KINDS_USED))
    if run is not None:
        if run.finished_at is None:  # built by an older bench
            run.finished_at = timezone.now()
            run.save(update_fields=["finished_at"])
        return run, user
    rng = random.Random(5)
    with transaction.atomic():
        dataset = replace_dataset(
            project, DATASET_NAME, N_ITEMS, BATCH, _item_fields, file_format="jsonl"
        )
        run = Run.objects.create(
            project=project,
            dataset=dataset,
            status="done",
            total=N_ITEMS * len(KINDS_USED),
            finished_at=timezone.now(),
        )
        scorers = []
        for pos, kind in enumerate(KINDS_USED):
            options = validate_options(kind, {})
            scorers.append(
                RunScorer.objects.create(
                    run=run,
                    name=KINDS[kind].label,
                    kind=kind,
                    position=pos,
                    options=options,
                )
            )
        item_ids = list(dataset.items.order_by("index").values_list("id", flat=True))
        rows = []
        for n, item_id in enumerate(item_ids):
            for rs in scorers:
                if n % 97 == 0:
                    rows.append(
                        Result(
                            run=run,
                            item_id=item_id,
                            run_scorer=rs,
                            status="error",
                            error="judge timed out",
                        )
                    )
                    continue
                analysis = _analysis(rs.kind, rng)
                score = compute_score(rs.kind, analysis, rs.options)
                passed = passes(rs.kind, score, rs.options)
                rows.append(
                    Result(
                        run=run,
                        item_id=item_id,
                        run_scorer=rs,
                        status="ok",
                        analysis=analysis,
                        overridable_count=overridable_count(rs.kind, analysis),
                        final_analysis=analysis,
                        judge_score=score,
                        final_score=score,
                        judge_passed=passed,
                        final_passed=passed,
                        reason="Most claims are supported.",
                    )
                )
            if len(rows) >= BATCH:
                Result.objects.bulk_create(rows)
                rows = []
        Result.objects.bulk_create(rows)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE evals_result")
    return run, user


def _reset_reviews(run: Any, user: Any) -> None:
    """Put the run back into the same review state every time (timed overrides of
    earlier bench runs are dropped): 4 % of the ok results reviewed, 1/3 of those
    with an active pass override, the rest accepted."""
    from django.db import transaction
    from django.db.models import F, Q
    from django.utils import timezone

    from evalsite.accounts.models import AuditEvent
    from evalsite.evals.models import Result
    from evalsite.review.models import Override, ReviewVersion

    now = timezone.now()
    with transaction.atomic():
        Override.objects.filter(result__run=run).delete()
        AuditEvent.objects.filter(run_id=run.pk).delete()
        Result.objects.filter(run=run).filter(
            Q(reviewed=True) | Q(overridden=True)
        ).update(
            final_analysis=F("analysis"),
            final_score=F("judge_score"),
            final_passed=F("judge_passed"),
            reviewed=False,
            overridden=False,
            score_overridden=False,
            pass_overridden=False,
            active_override_count=0,
            verdict_flip_count=0,
            human_passed=None,
            reviewed_by=None,
            reviewed_at=None,
        )
        ok = list(
            Result.objects.filter(run=run, status="ok")
            .order_by("id")
            .values_list("id", "judge_passed")
        )
        accepted = [pk for n, (pk, _) in enumerate(ok) if n % REVIEWED_EVERY == 0]
        flipped = [
            (pk, passed)
            for n, (pk, passed) in enumerate(ok)
            if n % OVERRIDDEN_EVERY == 1
        ]
        Result.objects.filter(pk__in=accepted).update(
            reviewed=True,
            human_passed=F("judge_passed"),
            reviewed_by=user,
            reviewed_at=now,
        )
        Override.objects.bulk_create(
            Override(
                result_id=pk,
                kind="pass",
                path="",
                old_value=passed,
                new_value=not passed,
                note="bench seed",
                user=user,
            )
            for pk, passed in flipped
        )
        for passed in (True, False):
            Result.objects.filter(
                pk__in=[pk for pk, p in flipped if p == passed]
            ).update(
                final_passed=not passed,
                pass_overridden=True,
                overridden=True,
                active_override_count=1,
                reviewed=True,
                human_passed=not passed,
                reviewed_by=user,
                reviewed_at=now,
            )
        # Written behind the review services' back: move the review version on, so
        # no cached review side of the old state is served.
        for rs_id in run.run_scorers.values_list("id", flat=True):
            ReviewVersion.objects.update_or_create(
                run_scorer_id=rs_id,
                defaults={"version": F("version") + 1},
                create_defaults={"version": 1},
            )
    # Commits wait on the WAL flush, which a checkpoint in the timed part would slow.
    settle_database()


def run() -> list[dict]:
    from django.test import Client
    from django.urls import reverse

    from evalsite.evals.models import Result
    from evalsite.review.selectors import run_aggregates
    from evalsite.review.services import run_rescore
    from scoring import KINDS

    allow_testserver()
    started = time.perf_counter()
    bench_run, user = _build()
    _reset_reviews(bench_run, user)
    out: list[dict] = [setup_row("review", time.perf_counter() - started)]
    # Like a production process (evalsite/wsgi.py): what is loaded so far is frozen
    # out of the garbage collector's full passes.
    gc.collect()
    gc.freeze()
    client = Client()
    client.force_login(user)
    faith = bench_run.run_scorers.get(kind="faithfulness")
    candidates = list(
        Result.objects.filter(
            run=bench_run, run_scorer=faith, status="ok", overridden=False
        )
        .order_by("?")
        .values_list("id", "final_analysis")[: 2 * REPEAT + 2]
    )

    def flip_body(analysis: dict) -> dict:
        current = analysis["verdicts"][0]["verdict"]
        allowed = KINDS["faithfulness"].overridable["verdicts.*.verdict"]
        return {
            "kind": "verdict",
            "path": "verdicts.0.verdict",
            "value": next(v for v in allowed if v != current),
            "note": "bench",
        }

    # API override (201 with final fields + this scorer's aggregates).
    samples = []
    for i, (pk, analysis) in enumerate(candidates[: REPEAT + 1]):
        resp = client.post(
            f"/api/results/{pk}/overrides",
            flip_body(analysis),
            content_type="application/json",
        )
        elapsed = server_ms(resp)
        if resp.status_code != 201:
            raise RuntimeError(
                f"override answered {resp.status_code}: {resp.content[:200]}"
            )
        if i:  # the first one warms caches
            samples.append(elapsed)
    out += latency_rows(
        "review", "override via API incl. aggregates", samples, OVERRIDE_TARGET_MS
    )

    # The item page's htmx POST: panel + aggregates card (hx-swap-oob).
    samples = []
    for i, (pk, analysis) in enumerate(candidates[REPEAT + 1 :]):
        url = reverse("review:override_create", args=[bench_run.project_id, pk])
        body = flip_body(analysis)
        resp = client.post(url, body, headers={"HX-Request": "true"})
        elapsed = server_ms(resp)
        if resp.status_code != 200 or b"hx-swap-oob" not in resp.content:
            raise RuntimeError(f"htmx override answered {resp.status_code}")
        if i:
            samples.append(elapsed)
    out += latency_rows(
        "review",
        "override via htmx (panel + OOB aggregates)",
        samples,
        OVERRIDE_TARGET_MS,
    )

    # The filtered results page (D2's explorer partial) or, without it, the results API.
    try:
        page = reverse("review:explorer", args=[bench_run.project_id, bench_run.pk])
        url, headers = (
            f"{page}?run_scorer={faith.pk}&judge=fail",
            {"HX-Request": "true"},
        )
    except Exception:
        url, headers = (
            f"/api/runs/{bench_run.pk}/results?run_scorer_id={faith.pk}&judge_passed=false",
            {},
        )
    samples = time_get(client, url, headers, REPEAT)
    out += latency_rows(
        "review", "filtered results page (scorer + judge fail)", samples, PAGE_TARGET_MS
    )

    # Whole-run aggregates (4 scorers) and a what-if preview of one scorer (25k results).
    samples = []
    for _ in range(10):
        t0 = time.perf_counter()
        run_aggregates(run_id=bench_run.pk)
        samples.append((time.perf_counter() - t0) * 1000)
    out.append(
        {
            "section": "review",
            "name": "run_aggregates, 4 scorers × 25k (median)",
            "value": statistics.median(samples),
            "unit": "ms",
            "target": None,
            "ok": None,
        }
    )
    t0 = time.perf_counter()
    preview = run_rescore(
        run=bench_run, run_scorer=faith, options={"scale": 10}, user=user, save=False
    )
    out.append(
        {
            "section": "review",
            "name": "what-if rescore preview, 25k results",
            "value": time.perf_counter() - t0,
            "unit": "s",
            "target": None,
            "ok": None,
            "note": f"{preview.changed_scores} scores change",
        }
    )
    return out
