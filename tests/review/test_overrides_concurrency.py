"""Two reviewers changing one result at the same moment: both updates land, both audited.

Needs row locks (select_for_update), so it runs on Postgres; on SQLite the IMMEDIATE
transaction mode serialises writers and there is no concurrent writer to test.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.test import Client

from evalsite.accounts.models import AuditEvent
from evalsite.evals.models import Result
from evalsite.review.models import Override
from evalsite.review.services import overrides
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db(transaction=True)

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="row-level locking needs Postgres; SQLite serialises writers (IMMEDIATE)",
)


@postgres_only
def test_two_sessions_flipping_one_result_both_land(
    project, owner, reviewer, monkeypatch
):
    run = make_run(project, kinds=["faithfulness"])
    result = Result.objects.get(run=run)
    # Widen the race: hold the row for a moment after reading it, so without the lock
    # both requests would read version 0 and the second write would drop the first flip.
    real = overrides._recompute_locked

    def slow(result, run_scorer):
        flips = real(result, run_scorer)
        time.sleep(0.3)
        return flips

    monkeypatch.setattr(overrides, "_recompute_locked", slow)
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def flip(user, path):
        try:
            client = Client()
            client.force_login(user)
            barrier.wait()
            resp = client.post(
                f"/api/results/{result.pk}/overrides",
                {"kind": "verdict", "path": path, "value": "yes"},
                content_type="application/json",
            )
            statuses.append(resp.status_code)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=flip, args=(owner, "verdicts.1.verdict")),
        threading.Thread(target=flip, args=(reviewer, "verdicts.2.verdict")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert statuses == [201, 201]
    result.refresh_from_db()
    verdicts = [v["verdict"] for v in result.final_analysis["verdicts"]]
    assert verdicts == ["yes", "yes", "yes"]
    assert result.final_score == 1.0 and result.version == 2
    assert Override.objects.filter(result=result, reverted_at__isnull=True).count() == 2
    actors = set(
        AuditEvent.objects.filter(
            result_id=result.pk, action="override.create"
        ).values_list("actor__username", flat=True)
    )
    assert actors == {owner.username, reviewer.username}


def test_stale_client_gets_409_while_the_other_lands(project, owner, reviewer):
    run = make_run(project, kinds=["faithfulness"])
    result = Result.objects.get(run=run)
    a, b = Client(), Client()
    a.force_login(owner)
    b.force_login(reviewer)
    url = f"/api/results/{result.pk}/overrides"
    first = a.post(
        url,
        {"kind": "pass", "value": True, "expected_version": 0},
        content_type="application/json",
    )
    second = b.post(
        url,
        {"kind": "score", "value": 0.1, "expected_version": 0},
        content_type="application/json",
    )
    assert (first.status_code, second.status_code) == (201, 409)
    result.refresh_from_db()
    assert result.final_passed is True and result.final_score == 0.33
