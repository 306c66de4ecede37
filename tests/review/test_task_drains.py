"""Messages queued by the previous release under a review task's old name still run
(the name stays registered for one release)."""

from __future__ import annotations

import pytest

from evalsite.celery import app
from evalsite.evals.models import Result
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


def test_a_queued_bulk_action_under_its_old_name_still_accepts(project, reviewer):
    run = make_run(
        project,
        n_items=3,
        analyses={"faithfulness": [judged_claims("yes")] * 3},
    )
    # What the previous release queued (eager here: run inline).
    app.signature(
        "review.bulk_action", args=[run.pk, reviewer.pk, "accept", {}, None]
    ).apply_async()
    assert Result.objects.filter(run=run, reviewed=True).count() == 3
