"""Real browser + real worker: upload a CSV, map its columns, start a run, watch the
progress bar reach 100 % and the summary's histogram appear."""

from __future__ import annotations

import json

import pytest

from evalsite.accounts.models import Role
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import Run
from evalsite.evals.scorers import services as scorer_services
from scoring.offline_judge import start_server
from tests.browser.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.integration.conftest import (
    WorkerProcess,
    _real_broker,  # noqa: F401 - the fixture, used below
)

pytestmark = [
    pytest.mark.usefixtures("_real_broker"),
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
]

ROWS = [
    (
        "How long do refunds take?",
        "Refunds are processed within 5 business days.",
        ["Refunds are processed within 5 business days of approval."],
        "Five business days after approval.",
    ),
    (
        "Can I change my delivery address?",
        "No, addresses can never be changed.",
        ["You can change the delivery address until the order has shipped."],
        "Yes, until the order ships.",
    ),
    (
        "Which payment methods do you accept?",
        "We accept Visa, Mastercard and PayPal.",
        ["Accepted payment methods: Visa, Mastercard, PayPal."],
        "Visa, Mastercard and PayPal.",
    ),
    (
        "Do you ship abroad?",
        "We ship to 30 countries in Europe.",
        ["We ship to all EU countries and to Norway and Switzerland."],
        "Yes, within Europe.",
    ),
]


def _csv() -> bytes:
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question", "answer", "chunks", "ideal", "topic"])
    for i, (q, a, chunks, ideal) in enumerate(ROWS):
        writer.writerow([q, a, json.dumps(chunks), ideal, f"topic-{i}"])
    return out.getvalue().encode("utf-8")


@pytest.fixture
def judge_server():
    server = start_server(port=0, latency_ms=20)
    yield server
    server.stop()


@pytest.fixture
def worker(tmp_path):
    """A real Celery worker on the configured broker (as in the integration tests)."""
    process = WorkerProcess(tmp_path / "worker.log", concurrency=2).start()
    yield process
    process.stop()


@pytest.fixture
def setup(judge_server):
    project = ProjectFactory(name="Browser runs")
    owner = MembershipFactory(
        project=project, user=UserFactory(username="olivia"), role=Role.OWNER
    ).user
    judge = judge_services.judge_create_offline(project)
    judge.base_url = judge_server.base_url
    judge.save()
    for kind in ("faithfulness", "content_similarity"):
        scorer_services.scorer_create(
            project=project, user=owner, name=kind.title(), kind=kind, judge=judge
        )
    return project, owner


def test_upload_map_run_and_watch_the_bar_reach_100(
    page, live_server, setup, worker, tmp_path
):
    project, owner = setup
    csv_path = tmp_path / "support.csv"
    csv_path.write_bytes(_csv())
    base = f"{live_server.url}/projects/{project.pk}"
    login(page, live_server, "olivia", "pw")

    # Upload, then map question/answer/chunks/ideal; topic stays metadata.
    page.goto(f"{base}/datasets/")
    page.set_input_files("#dataset-upload input[type=file]", str(csv_path))
    page.fill("#dataset-upload input[name=name]", "Support CSV")
    page.click("#upload-button")
    page.wait_for_selector("#mapping-form")
    assert page.locator("#preview-table").inner_text().count("topic-") == 4
    page.select_option("#mapping-form select[name=input]", "question")
    page.select_option("#mapping-form select[name=output]", "answer")
    page.select_option("#mapping-form select[name=context]", "chunks")
    page.select_option("#mapping-form select[name=reference]", "ideal")
    page.check("#mapping-form input[name=context_format][value=json]")
    page.click("#create-button")
    page.wait_for_url(lambda url: "/upload/" not in url)

    # Start a run of both scorers; the preview shows the judge calls first.
    page.goto(f"{base}/runs/new")
    page.select_option("#id_dataset", label="Support CSV v1 (4 items)")
    for box in page.locator("#run-form input[name=scorers]").all():
        box.check()
    # Each change re-renders the preview; wait for the one with both scorers.
    page.wait_for_function(
        "() => (document.querySelector('#run-preview tbody') || {children: []}).children.length === 2"
    )
    preview = page.locator("#run-preview").inner_text()
    assert "offline heuristic judge" in preview
    assert page.locator("#estimated-calls").inner_text() == "12"  # 4 items x 3 calls
    page.click("#start-run")
    page.wait_for_selector("#run-progress")

    # The bar fills without a reload, then the summary refreshes with the histogram.
    page.wait_for_function(
        "() => document.querySelector('#run-percent').innerText.trim() === '100 %'",
        timeout=60_000,
    )
    assert page.locator("#run-progress-bar").get_attribute("value") == "8"
    page.wait_for_selector("#run-summary svg", timeout=15_000)
    # The last result's commit and the run's "done" are two writes: on a loaded
    # machine the page can show 100 % a poll before the status follows.
    page.wait_for_function(
        "() => ['done', 'done_with_errors'].includes("
        "document.querySelector('#run-progress [data-status]').dataset.status)",
        timeout=15_000,
    )
    run = Run.objects.get(project=project)
    assert run.status == Run.Status.DONE, worker.log()[-2000:]
    assert page.locator("#run-summary .scorer-aggregate").count() == 2

    # An item page: the judge call's prompt loads when its details are opened.
    judged = run.results.filter(calls__isnull=False).order_by("id").first()
    page.goto(f"{base}/results/{judged.pk}/")
    page.click(".judge-calls > summary")
    page.locator(".call-detail > summary").first.click()
    body = page.locator(".call-detail .call-body").first
    body.locator("pre.prompt").first.wait_for(timeout=10_000)
    assert judged.item.output in body.inner_text()  # the faithfulness claims prompt
