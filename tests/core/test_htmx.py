"""htmx partials: one rule (evalsite/lib/htmx.py) for every view that switches on htmx.

- Each switching view sends `Vary: HX-Request`, so the browser never serves the
  fragment it fetched for a pushed URL when the page is reloaded or revisited.
- A history-restore request (`HX-Request` + `HX-History-Restore-Request`) gets the
  whole page, never a bare fragment.
- Messages added while answering htmx are swapped in out of band (#messages) with that
  response, and are gone from the next full page.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evalsite.evals.models import Result, Run
from evalsite.review.models import ReviewQueue
from tests.conftest import login
from tests.factories import QueueEntryFactory, ReviewQueueFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
RESTORE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}
FULL_PAGE = "<!doctype html>"


@pytest.fixture
def run(project):
    return make_run(project, n_items=2)


@pytest.fixture
def queue(run, owner):
    queue = ReviewQueueFactory(run=run, name="q", size=2, created_by=owner)
    for position, result in enumerate(run.results.order_by("pk"), start=1):
        QueueEntryFactory(queue=queue, result=result, position=position)
    return queue


def _urls(run: Run, queue: ReviewQueue) -> dict[str, str]:
    """GET views that answer htmx with a region and the browser with the page."""
    p = run.project_id
    result = Result.objects.filter(run=run).order_by("pk").first()
    assert result is not None
    return {
        "compare": reverse("compare:compare", args=[p]),
        "item": reverse("review:item", args=[p, result.pk]),
        "explorer": reverse("review:explorer", args=[p, run.pk]),
        "run_audit": reverse("review:run_audit", args=[p, run.pk]),
        "queue": reverse("review:queue", args=[p, queue.pk]),
        "assigned": reverse("review:assigned", args=[p]),
        "dataset_detail": reverse("datasets:detail", args=[p, run.dataset_id]),
        "run_create": reverse("evals:run_create", args=[p]),
        "scorer_create": reverse("evals:scorer_create", args=[p]),
    }


SWITCHING_GETS = [
    "compare",
    "item",
    "explorer",
    "run_audit",
    "queue",
    "assigned",
    "dataset_detail",
    "run_create",
    "scorer_create",
]


def _vary(response) -> list[str]:
    return [h.strip().lower() for h in response.get("Vary", "").split(",")]


@pytest.mark.parametrize("name", SWITCHING_GETS)
def test_switching_views_vary_on_hx_request_and_restore_history_with_the_page(
    client, owner, run, queue, name
):
    url = _urls(run, queue)[name]
    login(client, owner)

    page = client.get(url)
    fragment = client.get(url, **HX)
    restore = client.get(url, **RESTORE)

    for response in (page, fragment, restore):
        assert response.status_code == 200, (name, response.status_code)
        assert "hx-request" in _vary(response)
        assert "hx-history-restore-request" in _vary(response)
    assert FULL_PAGE in page.content.decode()
    assert FULL_PAGE not in fragment.content.decode()
    # Back/reload through htmx's history cache miss: the page, not a bare region.
    assert FULL_PAGE in restore.content.decode()


@pytest.mark.parametrize("name", ["run_progress", "run_summary"])
def test_htmx_only_regions_send_a_restore_request_to_the_page(client, owner, run, name):
    url = reverse(f"evals:{name}", args=[run.project_id, run.pk])
    login(client, owner)
    fragment = client.get(url, **HX)
    assert fragment.status_code in (200, 286)
    assert FULL_PAGE not in fragment.content.decode()
    assert "hx-request" in _vary(fragment)
    restore = client.get(url, **RESTORE)
    assert restore.status_code == 302
    assert restore["Location"] == reverse(
        "evals:run_detail", args=[run.project_id, run.pk]
    )
    assert "hx-request" in _vary(restore)


def test_htmx_posts_vary_too(client, owner, run):
    result = Result.objects.filter(run=run).order_by("pk").first()
    url = reverse("review:accept", args=[run.project_id, result.pk])
    response = login(client, owner).post(url, **HX)
    assert response.status_code == 200
    assert "hx-request" in _vary(response)


def _messages_region(html: str) -> str:
    match = re.search(r'<div id="messages"[^>]*>(.*?)</div>', html, re.S)
    assert match, "no #messages region"
    return match.group(0)


def test_htmx_post_sends_its_messages_out_of_band_and_the_next_page_is_clean(
    client, owner, project
):
    run = make_run(project, status=Run.Status.RUNNING)
    login(client, owner)
    cancel = reverse("evals:run_cancel", args=[project.pk, run.pk])

    response = client.post(cancel, **HX)

    html = response.content.decode()
    assert response.status_code == 200
    assert FULL_PAGE not in html
    assert 'id="run-progress"' in html  # the swapped region
    oob = _messages_region(html)
    assert 'hx-swap-oob="true"' in oob
    assert "cancelled." in oob
    # Shown once: the next full page does not repeat it.
    page = client.get(reverse("evals:run_detail", args=[project.pk, run.pk]))
    assert "cancelled." not in _messages_region(page.content.decode())


def test_without_htmx_the_message_waits_for_the_page_it_redirects_to(
    client, owner, project
):
    run = make_run(project, status=Run.Status.RUNNING)
    login(client, owner)
    cancel = reverse("evals:run_cancel", args=[project.pk, run.pk])

    response = client.post(cancel, follow=True)

    region = _messages_region(response.content.decode())
    assert "cancelled." in region
    assert "hx-swap-oob" not in region


def test_htmx_responses_without_messages_get_no_oob_region(client, owner, run):
    url = reverse("review:explorer", args=[run.project_id, run.pk])
    html = login(client, owner).get(url, **HX).content.decode()
    assert 'id="messages"' not in html


def test_htmx_client_redirect_keeps_its_messages_for_the_next_page(
    client, owner, project
):
    from evalsite.accounts.models import Membership

    other = Membership.objects.exclude(user=owner).filter(project=project).first()
    if other is None:
        from tests.factories import MembershipFactory

        other = MembershipFactory(project=project)
    url = reverse("accounts:member_remove", args=[project.pk, other.pk])
    response = login(client, owner).post(url, {"confirm": "yes"}, **HX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("accounts:settings", args=[project.pk])
    assert 'id="messages"' not in response.content.decode()
    assert "hx-request" in _vary(response)
    page = client.get(response["HX-Redirect"])
    assert "Removed" in _messages_region(page.content.decode())


def test_views_ask_the_one_helper_not_request_htmx():
    """Every switch goes through evalsite/lib/htmx.py, so the history-restore rule and
    the Vary header cannot be forgotten in one view."""
    from pathlib import Path

    import evalsite

    root = Path(evalsite.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path != root / "lib" / "htmx.py"
        and re.search(r"request\.htmx\b", path.read_text())
    ]
    assert offenders == []
