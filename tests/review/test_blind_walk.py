"""Blind review on EVERY surface: while a reviewer has an unanswered
entry in a blind queue, no page, htmx fragment, export or API read shows them the
judge's output, the final fields or another reviewer's answer for that result.

The walk is generated from the URL resolver and the NinjaAPI (tests.security.routes),
so a surface added later is covered the day it is added. The world's result carries
marker strings in every judge-made or reviewer-made field; the reviewer with the
unanswered entry fetches everything and no marker may appear. After they answer, the
same pages show the markers (so the walk is not vacuous).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.http import StreamingHttpResponse

from evalsite.evals.models import Result
from evalsite.review.models import QueueEntry, Review, ReviewQueue
from evalsite.review.selectors.blind import blind_result_ids
from tests.conftest import bearer, login
from tests.exports.builders import build_world
from tests.factories import (
    AuditEventFactory,
    JudgeCallFactory,
    QueueEntryFactory,
    ReviewQueueFactory,
)
from tests.security.routes import fill, operations, pages

pytestmark = pytest.mark.django_db

JUDGE_REASON = "judge-reason-ZQX"
VERDICT_REASON = "verdict-reason-ZQX"
RAW = "raw-reply-ZQX"
OVERRIDE_NOTE = "override-note-ZQX"
AUDIT_AFTER = "audit-after-ZQX"
ANSWER_NOTE = "answer-note-ZQX"
# The blind result's judge and final score (the run's other results score 0.75, so
# no aggregate of the run reads 0.81...).
SCORE = "0.81"
SECRETS = (
    JUDGE_REASON,
    VERDICT_REASON,
    RAW,
    OVERRIDE_NOTE,
    AUDIT_AFTER,
    ANSWER_NOTE,
    SCORE,
)


def _blind_world(project: Any, owner: Any, *, overlap: int) -> dict[str, Any]:
    world = build_world(project, owner)
    result: Result = world["result"]
    analysis = {
        "claims": ["c"],
        "verdicts": [{"claim": "c", "verdict": "yes", "reason": VERDICT_REASON}],
    }
    Result.objects.filter(pk=result.pk).update(
        reason=JUDGE_REASON,
        judge_score=0.8137,
        final_score=0.8137,
        analysis=analysis,
        final_analysis=analysis,
        reviewed=False,
        human_passed=None,
    )
    world["override"].note = OVERRIDE_NOTE
    world["override"].save(update_fields=["note"])
    JudgeCallFactory(result=result, step="verdicts", raw_response=RAW, messages=[])
    AuditEventFactory(
        project=project,
        run=world["run"],
        result=result,
        actor=owner,
        action="override",
        summary="flipped",
        after={"note": AUDIT_AFTER},
    )
    blind = ReviewQueueFactory(
        project=project,
        run=world["run"],
        name="blind one",
        size=1,
        blind=True,
        overlap=overlap,
        final_rule="unanimous" if overlap > 1 else "single",
        created_by=owner,
    )
    entry = QueueEntryFactory(queue=blind, result=result, position=1)
    # The world's own queue (not blind) holds the same result, and has an answer.
    Review.objects.create(
        queue=world["queue"],
        result=result,
        reviewer=owner,
        passed=True,
        note=ANSWER_NOTE,
    )
    if overlap > 1:
        Review.objects.create(
            queue=blind, result=result, reviewer=owner, passed=False, note=ANSWER_NOTE
        )
        QueueEntry.objects.filter(pk=entry.pk).update(answers=1, answers_fail=1)
    world.update(blind_queue=blind, blind_entry=entry)
    world["result"].refresh_from_db()
    return world


def _body(response: Any) -> str:
    if isinstance(response, StreamingHttpResponse):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def _walk(
    client: Any, world: dict[str, Any], headers: dict[str, str]
) -> dict[str, str]:
    """Every page (whole and as an htmx fragment) and every API GET: url -> body."""
    bodies: dict[str, str] = {}
    run, other = world["run"].pk, world["other_run"].pk
    project, blind = world["project"].pk, world["blind_queue"].pk
    item = world["item"].pk
    extra = [
        f"/projects/{project}/compare/?a={run}&b={other}",
        f"/projects/{project}/compare/?a={other}&b={run}",
        f"/projects/{project}/compare/item/?a={run}&b={other}&a_item={item}"
        f"&b_item={item}",
        f"/api/runs/{other}/compare/{run}",
        f"/projects/{project}/queues/{blind}/",
        f"/projects/{project}/queues/{blind}/1/adjudicate/",
        f"/api/queues/{blind}/entries/1/reviews",
        # The matrix and the explorer, sorted and filtered by the judge's values, and
        # the results API by cursor: no order or match may tell the blind value.
        f"/projects/{project}/runs/{run}/matrix/?sort=-score",
        f"/projects/{project}/runs/{run}/matrix/?min_score=0.8&max_score=0.82",
        f"/projects/{project}/runs/{run}/results/?sort=-final&last=1",
        f"/api/runs/{run}/results?sort=-score&limit=1&offset=1",
    ]
    for page in pages():
        url = fill(page.route, world)
        for how in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = client.get(url, **how)
            assert response.status_code < 500, (page.name, url)
            bodies[f"{url} {how}"] = _body(response)
    for url in extra:
        for how in ({}, {"HTTP_HX_REQUEST": "true"}):
            bodies[f"{url} {how}"] = _body(client.get(url, **how, **headers))
    for op in operations():
        if op.method != "GET":
            continue
        path = "/api" + fill(op.path, world)
        response = client.get(path, **headers)
        assert response.status_code < 500, (op.name, path)
        bodies[path] = _body(response)
    return bodies


def _leaks(bodies: dict[str, str], secrets: tuple[str, ...] = SECRETS) -> list[str]:
    return sorted(
        f"{url}: {secret}"
        for url, body in bodies.items()
        for secret in secrets
        if secret in body
    )


@pytest.mark.parametrize("overlap", [1, 2])
def test_nothing_shows_the_judge_or_the_answers_before_you_answer(
    client, project, owner, reviewer, viewer, overlap
):
    world = _blind_world(project, owner, overlap=overlap)
    assert blind_result_ids(user=reviewer, project_id=project.pk) == {
        world["result"].pk
    }
    login(client, reviewer)
    leaks = _leaks(_walk(client, world, bearer(reviewer)))
    assert leaks == [], "\n".join(leaks)


@pytest.mark.parametrize("overlap", [1, 2])
def test_after_answering_the_judge_and_answers_show_again(
    client, project, owner, reviewer, overlap
):
    world = _blind_world(project, owner, overlap=overlap)
    result: Result = world["result"]
    queue: ReviewQueue = world["blind_queue"]
    login(client, reviewer)
    if overlap > 1:
        url = f"/projects/{project.pk}/queues/{queue.pk}/1/answer/"
        client.post(url, {"passed": "pass"})
        assert Review.objects.filter(reviewer=reviewer, queue=queue).exists()
    else:
        url = f"/projects/{project.pk}/queues/{queue.pk}/1/pass/"
        client.post(url)
        result.refresh_from_db()
        assert result.human_passed is True
    assert blind_result_ids(user=reviewer, project_id=project.pk) == set()
    bodies = _walk(client, world, bearer(reviewer))
    p, r, run = project.pk, result.pk, world["run"].pk
    # Each surface the first test checked shows its marker now: the walk reached
    # pages that really carry them, so its silence there was the rule, not luck.
    expected = {
        f"/projects/{p}/results/{r}/ {{}}": (JUDGE_REASON, VERDICT_REASON, SCORE),
        f"/projects/{p}/results/{r}/audit/ {{}}": (AUDIT_AFTER,),
        f"/projects/{p}/runs/{run}/audit/ {{}}": (AUDIT_AFTER,),
        f"/projects/{p}/runs/{run}/results/ {{}}": (SCORE,),
        f"/projects/{p}/runs/{run}/export.csv {{}}": (JUDGE_REASON, OVERRIDE_NOTE),
        f"/api/results/{r}": (JUDGE_REASON, VERDICT_REASON, RAW, OVERRIDE_NOTE),
        f"/api/runs/{run}/results": (JUDGE_REASON, SCORE),
        f"/api/runs/{run}/export.jsonl": (JUDGE_REASON,),
        f"/api/runs/{world['other_run'].pk}/compare/{run} {{}}": (SCORE,),
        f"/projects/{p}/compare/?a={run}&b={world['other_run'].pk} {{}}": (SCORE,),
        f"/projects/{p}/queues/{world['queue'].pk}/ {{}}": (JUDGE_REASON,),
        f"/projects/{p}/compare/item/?a={run}&b={world['other_run'].pk}"
        f"&a_item={world['item'].pk}&b_item={world['item'].pk} {{}}": (JUDGE_REASON,),
    }
    missing = [
        f"{url}: {secret}"
        for url, secrets in expected.items()
        for secret in secrets
        if secret not in bodies[url]
    ]
    assert missing == [], "\n".join(missing)
    if overlap > 1:
        # The other reviewer's answer, now that rita answered too.
        reviews = f"/api/queues/{queue.pk}/entries/1/reviews {{}}"
        assert ANSWER_NOTE in bodies[reviews]


def test_viewers_are_never_blind(client, project, owner, viewer):
    """A viewer cannot answer a queue, so nothing biases them: they see the judge."""
    world = _blind_world(project, owner, overlap=1)
    assert blind_result_ids(user=viewer, project_id=project.pk) == set()
    login(client, viewer)
    item = _body(client.get(f"/projects/{project.pk}/results/{world['result'].pk}/"))
    assert JUDGE_REASON in item


def test_the_explorer_says_how_many_results_it_and_the_exports_leave_out(
    client, project, owner, reviewer
):
    world = _blind_world(project, owner, overlap=1)
    login(client, reviewer)
    run = world["run"]
    page = client.get(f"/projects/{project.pk}/runs/{run.pk}/results/")
    html = page.content.decode()
    assert (
        "1 result hidden until you answer it in blind queues; your exports leave it "
        "out too." in html
    )
    csv_text = _body(client.get(f"/projects/{project.pk}/runs/{run.pk}/export.csv"))
    ids = {line.split(",", 1)[0] for line in csv_text.splitlines()[1:]}
    assert str(world["result"].pk) not in ids
    total = Result.objects.filter(run=run).count()
    assert len(ids) == total - 1
