"""Dataset text, metadata, judge reasons and review notes render inert on every page."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import AuditEvent, Invitation
from evalsite.evals.models import Comment, Result
from tests.conftest import login
from tests.exports.builders import build_world
from tests.security.routes import fill, pages

pytestmark = pytest.mark.django_db

SCRIPT = "<script>window.__xss=1</script>"
IMG = "<img src=x onerror=window.__xss=1>"
ATTR = '" onmouseover="window.__xss=1" x="'
PAYLOADS = (SCRIPT, IMG, ATTR)


def poison(world: dict) -> None:
    """Put the payloads everywhere users' or judges' text is shown."""
    item = world["item"]
    item.input = f"question {SCRIPT}"
    item.output = f"answer {IMG}"
    item.context = [f"chunk {SCRIPT}", f"chunk {IMG}"]
    item.reference = f"ref {ATTR}"
    item.metadata = {"topic": SCRIPT, IMG: "key is a payload", "attr": ATTR}
    item.save()
    dataset = world["dataset"]
    dataset.name = f"data {IMG}"
    dataset.save()
    analysis = {
        "claims": [f"claim {SCRIPT}"],
        "verdicts": [{"verdict": "yes", "reason": f"because {IMG}"}],
    }
    Result.objects.filter(run=world["run"]).update(
        reason=f"judge says {SCRIPT}",
        error=f"error {IMG}",
        analysis=analysis,
        final_analysis=analysis,
    )
    world["override"].note = f"note {IMG}"
    world["override"].save()
    Comment.objects.filter(pk=world["comment"].pk).update(body=f"comment {SCRIPT}")
    world["scorer"].name = f"scorer {IMG}"
    world["scorer"].save()
    world["run_scorer"].name = f"scorer {IMG}"
    world["run_scorer"].save()
    world["run"].name = f"run {SCRIPT}"
    world["run"].save()
    # Owners type invitation emails; the access log shows them and people's names.
    Invitation.objects.filter(pk=world["invitation"].pk).update(email=f"{IMG}@x.org")
    AuditEvent.objects.filter(pk=world["membership_event"].pk).update(
        after={"role": SCRIPT, "email": ATTR, "invitation": IMG}
    )
    # Owners name webhooks; a receiver's error body is shown in the delivery log.
    world["webhook"].name = f"hook {SCRIPT}"
    world["webhook"].save()
    world["delivery"].error = f"receiver said {IMG}"
    world["delivery"].save()


@pytest.fixture
def poisoned(project, owner, reviewer, viewer):
    world = build_world(project, owner)
    poison(world)
    return world


def test_no_page_renders_a_payload_raw(client, poisoned, owner):
    login(client, owner)
    shown_escaped = set()
    for page in pages():
        url = fill(page.route, poisoned)
        response = client.get(url)
        if response.status_code != 200 or "html" not in response.get(
            "Content-Type", ""
        ):
            continue
        html = response.content.decode()
        for payload in PAYLOADS:
            assert payload not in html, (page.name, url, payload)
        if "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html:
            shown_escaped.add(page.name)
    # The walk really saw the payloads (escaped) on the pages that show this text.
    assert {"review:item", "accounts:settings"} <= shown_escaped, shown_escaped


def test_htmx_partials_render_payloads_escaped(client, poisoned, owner):
    login(client, owner)
    run = poisoned["run"]
    explorer = fill("projects/<int:project_id>/runs/<int:run_id>/results/", poisoned)
    html = client.get(explorer, HTTP_HX_REQUEST="true").content.decode()
    for payload in PAYLOADS:
        assert payload not in html
    assert run.pk
    matrix = fill("projects/<int:project_id>/runs/<int:run_id>/matrix/", poisoned)
    html = client.get(matrix, HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="matrix"')
    for payload in PAYLOADS:
        assert payload not in html
