"""Review guidelines: safe markdown, versions, who edits, pages and API (issue 17 part 4)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent, Role
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.lib.markdown import ALLOWED_TAGS, markdown_to_html
from evalsite.review.models import Guideline
from evalsite.review.schemas import ResultQuery
from evalsite.review.selectors.guidelines import (
    guideline_current,
    guideline_history,
    guideline_html,
)
from evalsite.review.services import queue_create
from evalsite.review.services.guidelines import GUIDELINE_MAX_LENGTH, guideline_save
from tests.conftest import bearer, login
from tests.factories import MembershipFactory, UserFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

# ------------------------------------------------------------------ safe markdown

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](  javascript:alert(1))",
    "[x](java&#x09;script:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](file:///etc/passwd)",
    "<javascript:alert(1)>",
    '[x](https://example.com "a" onmouseover="alert(1)")',
    "![x](https://tracker.example/pixel.png)",
    "<iframe src=https://example.com></iframe>",
    "<style>body{display:none}</style>",
    '<div style="position:fixed">x</div>',
    "<!-- <script>alert(1)</script> -->",
    "<svg onload=alert(1)>",
    "<form action=/logout method=post><button>x</button></form>",
]


class _Elements(HTMLParser):
    """Every element and attribute the browser would build from the HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def _elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.elements


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_to_html_leaves_no_script_handler_or_foreign_element(text):
    html = str(markdown_to_html(text))
    for tag, attrs in _elements(html):
        assert tag in ALLOWED_TAGS, (text, html)
        assert set(attrs) <= {"href", "title", "rel", "start"}, (text, html)
        # What the browser would open: its scheme, or none for a relative link.
        scheme = urlsplit(attrs.get("href") or "").scheme.lower()
        assert scheme in {"", "http", "https", "mailto"}, (text, html)
        if tag == "a":
            assert attrs["rel"] == "noopener nofollow"


def test_markdown_to_html_shows_raw_html_as_text():
    html = str(markdown_to_html("Use <b>bold</b> & <script>x</script>"))
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "&lt;script&gt;" in html
    assert "&amp;" in html


def test_markdown_to_html_links_get_noopener_nofollow():
    html = str(
        markdown_to_html(
            "[docs](https://example.com/guide) [mail](mailto:a@example.com) "
            "[here](/projects/1/) <https://example.org>"
        )
    )
    assert html.count('rel="noopener nofollow"') == 4
    assert 'href="https://example.com/guide"' in html
    assert 'href="mailto:a@example.com"' in html
    assert 'href="/projects/1/"' in html


def test_markdown_to_html_keeps_the_markdown_people_write():
    html = str(
        markdown_to_html(
            "# Rules\n\n**Fail** an answer that _invents_ numbers.\n\n"
            "1. read\n2. decide\n\n- a\n- b\n\n> quote\n\n`code` ~~old~~\n\n"
            "| label | meaning |\n|:--|--:|\n| yes | supported |\n"
        )
    )
    for tag in ("<h1>", "<strong>", "<em>", "<ol>", "<ul>", "<blockquote>", "<code>"):
        assert tag in html
    assert "<s>old</s>" in html or "<del>old</del>" in html
    assert "<table>" in html and "<td>supported</td>" in html


# ------------------------------------------------------------------ services and selectors


@pytest.fixture
def adjudicator(project):
    return MembershipFactory(
        project=project, user=UserFactory(username="ada"), role=Role.ADJUDICATOR
    ).user


@pytest.fixture
def run(project):
    return make_run(project, n_items=2, kinds=("faithfulness",))


@pytest.fixture
def queue(run, reviewer):
    return queue_create(run=run, user=reviewer, query=ResultQuery())


@pytest.fixture
def other_queue(outsider):
    other = outsider.memberships.get().project
    return queue_create(
        run=make_run(other, n_items=1, kinds=("faithfulness",)),
        user=outsider,
        query=ResultQuery(),
    )


def test_guideline_save_adds_versions_and_audits_each(project, owner):
    first = guideline_save(project=project, body="# Rules\r\nBe strict.", user=owner)
    second = guideline_save(project=project, body="Be kind.", user=owner)
    assert (first.version, second.version) == (1, 2)
    assert first.body == "# Rules\nBe strict."  # one kind of line end
    events = AuditEvent.objects.filter(action="guideline.save").order_by("id")
    assert [e.summary for e in events] == [
        "olivia saved the guidelines of the project as version 1",
        "olivia saved the guidelines of the project as version 2",
    ]
    assert events[1].before == {"version": 1}
    assert events[1].after["guideline_id"] == second.pk


def test_guideline_save_unchanged_text_adds_no_version(project, owner):
    first = guideline_save(project=project, body="Same.", user=owner)
    again = guideline_save(project=project, body="Same.\r\n", user=owner)
    assert again.pk == first.pk
    assert Guideline.objects.count() == 1
    assert AuditEvent.objects.filter(action="guideline.save").count() == 1


def test_guideline_versions_count_per_scope(project, owner, queue):
    guideline_save(project=project, body="Project v1", user=owner)
    guideline_save(project=project, body="Project v2", user=owner)
    own = guideline_save(project=project, queue=queue, body="Queue v1", user=owner)
    assert own.version == 1 and own.queue_id == queue.pk
    event = AuditEvent.objects.filter(action="guideline.save").first()
    assert event.run_id == queue.run_id
    assert f"queue “{queue.name}” as version 1" in event.summary


@pytest.mark.parametrize(
    ("body", "field"),
    [("nul \x00 here", "body"), ("x" * (GUIDELINE_MAX_LENGTH + 1), "body")],
)
def test_guideline_save_refuses_nul_and_overlong_text(project, owner, body, field):
    with pytest.raises(ApplicationError) as exc:
        guideline_save(project=project, body=body, user=owner)
    assert field in exc.value.field_errors
    assert not Guideline.objects.exists()


def test_guideline_save_at_the_length_limit(project, owner):
    saved = guideline_save(project=project, body="x" * GUIDELINE_MAX_LENGTH, user=owner)
    assert len(saved.body) == GUIDELINE_MAX_LENGTH


def test_guideline_save_refuses_a_stale_expected_version(project, owner):
    guideline_save(project=project, body="v1", user=owner)
    guideline_save(project=project, body="v2", user=owner, expected_version=1)
    with pytest.raises(ConflictError):
        guideline_save(project=project, body="v3", user=owner, expected_version=1)
    assert Guideline.objects.count() == 2


def test_guideline_save_refuses_a_queue_of_another_project(project, owner, other_queue):
    with pytest.raises(ApplicationError):
        guideline_save(project=project, queue=other_queue, body="x", user=owner)


def test_guideline_current_prefers_the_queue_then_the_project(project, owner, queue):
    assert guideline_current(project_id=project.pk, queue_id=queue.pk) is None
    p1 = guideline_save(project=project, body="Project", user=owner)
    assert guideline_current(project_id=project.pk, queue_id=queue.pk) == p1
    assert guideline_current(project_id=project.pk) == p1
    q1 = guideline_save(project=project, queue=queue, body="Queue", user=owner)
    assert guideline_current(project_id=project.pk, queue_id=queue.pk) == q1
    assert guideline_current(project_id=project.pk) == p1
    # Clearing the queue's text brings the project's back.
    guideline_save(project=project, queue=queue, body="", user=owner)
    assert guideline_current(project_id=project.pk, queue_id=queue.pk) == p1


def test_guideline_current_ignores_another_projects_queue(project, owner, other_queue):
    other = other_queue.project
    guideline_save(project=other, queue=other_queue, body="Theirs", user=owner)
    assert guideline_current(project_id=project.pk, queue_id=other_queue.pk) is None


def test_guideline_history_newest_first(project, owner):
    for text in ("a", "b", "c"):
        guideline_save(project=project, body=text, user=owner)
    history = guideline_history(project_id=project.pk)
    assert [g.version for g in history] == [3, 2, 1]
    assert history[0].created_by == owner


def test_guideline_html_is_sanitised_and_cached(
    project, owner, django_assert_num_queries
):
    saved = guideline_save(
        project=project, body="[x](javascript:alert(1)) **ok**", user=owner
    )
    html = str(guideline_html(saved))
    assert "<strong>ok</strong>" in html and "href" not in html
    with django_assert_num_queries(0):
        assert str(guideline_html(saved)) == html


# ------------------------------------------------------------------ pages


def _project_url(project):
    return reverse("review:project_guidelines", args=[project.pk])


def _queue_url(queue):
    return reverse("review:queue_guidelines", args=[queue.project_id, queue.pk])


def test_guidelines_page_shows_current_version_and_history(
    client, project, owner, reviewer
):
    guideline_save(project=project, body="# Be strict", user=owner)
    guideline_save(project=project, body="# Be fair <script>x</script>", user=owner)
    login(client, reviewer)
    response = client.get(_project_url(project))
    html = response.content.decode()
    assert response.status_code == 200
    assert "<h1>Be fair &lt;script&gt;x&lt;/script&gt;</h1>" in html
    assert 'id="guideline-v1"' in html and 'id="guideline-v2"' in html
    assert "<script>x</script>" not in html
    assert 'id="guideline-form"' not in html  # reviewers read only


@pytest.mark.parametrize("who", ["owner", "adjudicator"])
def test_owners_and_adjudicators_save_guidelines_from_the_page(
    client, project, request, who
):
    user = request.getfixturevalue(who)
    login(client, user)
    assert 'id="guideline-form"' in client.get(_project_url(project)).content.decode()
    response = client.post(_project_url(project), {"body": "Read twice.", "version": 0})
    assert response.status_code == 302 and response.url == _project_url(project)
    saved = Guideline.objects.get()
    assert saved.body == "Read twice." and saved.created_by == user


@pytest.mark.parametrize("who", ["reviewer", "viewer"])
def test_reviewers_and_viewers_cannot_edit_guidelines(
    client, project, queue, request, who
):
    login(client, request.getfixturevalue(who))
    assert client.get(_project_url(project)).status_code == 200
    assert client.post(_project_url(project), {"body": "x"}).status_code == 403
    assert client.post(_queue_url(queue), {"body": "x"}).status_code == 403
    assert not Guideline.objects.exists()


def test_guidelines_page_preview_saves_nothing(client, project, owner):
    login(client, owner)
    data = {"body": "**bold** [x](javascript:alert(1))", "version": 0, "preview": "1"}
    page = client.post(_project_url(project), data)
    assert page.status_code == 200
    assert "<strong>bold</strong>" in page.content.decode()
    fragment = client.post(_project_url(project), data, HTTP_HX_REQUEST="true")
    html = fragment.content.decode()
    assert html.strip().startswith('<div id="guideline-preview"')
    assert "<strong>bold</strong>" in html and "href" not in html
    assert not Guideline.objects.exists()


def test_guidelines_page_stale_version_is_a_conflict(client, project, owner):
    guideline_save(project=project, body="v1", user=owner)
    guideline_save(project=project, body="v2", user=owner)
    login(client, owner)
    response = client.post(_project_url(project), {"body": "mine", "version": 1})
    assert response.status_code == 409
    assert "Someone saved version 2" in response.content.decode()
    assert "mine" in response.content.decode()  # the text is not lost


def test_queue_guidelines_page_shows_the_project_text_until_the_queue_has_its_own(
    client, project, owner, queue
):
    guideline_save(project=project, body="Project rules", user=owner)
    login(client, owner)
    html = client.get(_queue_url(queue)).content.decode()
    assert "Project rules" in html and 'id="guideline-inherited"' in html
    client.post(_queue_url(queue), {"body": "Queue rules", "version": 0})
    html = client.get(_queue_url(queue)).content.decode()
    assert "Queue rules" in html and 'id="guideline-inherited"' not in html
    assert Guideline.objects.get(queue=queue).version == 1


def test_guidelines_pages_refuse_outsiders_and_other_projects_queues(
    client, project, queue, outsider, owner, other_queue
):
    login(client, outsider)
    assert client.get(_project_url(project)).status_code == 404
    assert client.get(_queue_url(queue)).status_code == 404
    login(client, owner)
    mixed = reverse("review:queue_guidelines", args=[project.pk, other_queue.pk])
    assert client.get(mixed).status_code == 404
    assert client.post(mixed, {"body": "x"}).status_code == 404


def test_guidelines_page_refuses_other_methods(client, project, owner):
    login(client, owner)
    assert client.put(_project_url(project)).status_code == 405


def test_queue_page_links_its_guidelines(client, project, owner, queue):
    login(client, owner)
    html = client.get(
        reverse("review:queue", args=[project.pk, queue.pk])
    ).content.decode()
    assert _queue_url(queue) in html


# ------------------------------------------------------------------ API


def _api(project, queue=None):
    if queue is None:
        return f"/api/projects/{project.pk}/guidelines"
    return f"/api/projects/{project.pk}/queues/{queue.pk}/guidelines"


def _put(client, url, user, body):
    return client.put(
        url, json.dumps(body), content_type="application/json", **bearer(user)
    )


def test_api_put_and_get_guidelines(client, project, owner, reviewer, queue):
    response = _put(client, _api(project), owner, {"body": "Rules *v1*"})
    assert response.status_code == 200
    data = response.json()
    assert data["version"] == 1 and data["scope"] == "project"
    assert data["html"].strip() == "<p>Rules <em>v1</em></p>"
    assert data["created_by"] == "olivia"
    _put(client, _api(project), owner, {"body": "Rules v2", "expected_version": 1})
    read = client.get(_api(project), **bearer(reviewer)).json()
    assert read["current"]["version"] == 2
    assert [v["version"] for v in read["versions"]] == [2, 1]
    queue_read = client.get(_api(project, queue), **bearer(reviewer)).json()
    assert queue_read["current"]["scope"] == "project" and queue_read["versions"] == []
    response = _put(client, _api(project, queue), owner, {"body": "Queue rules"})
    assert response.json()["scope"] == "queue" and response.json()["version"] == 1
    queue_read = client.get(_api(project, queue), **bearer(reviewer)).json()
    assert queue_read["current"]["body"] == "Queue rules"


def test_api_guidelines_errors(
    client, project, owner, reviewer, viewer, queue, outsider, other_queue
):
    assert _put(client, _api(project), reviewer, {"body": "x"}).status_code == 403
    assert _put(client, _api(project, queue), viewer, {"body": "x"}).status_code == 403
    assert client.get(_api(project), **bearer(outsider)).status_code == 404
    assert _put(client, _api(project), outsider, {"body": "x"}).status_code == 404
    mixed = f"/api/projects/{project.pk}/queues/{other_queue.pk}/guidelines"
    assert client.get(mixed, **bearer(owner)).status_code == 404
    nul = _put(client, _api(project), owner, {"body": "a\x00b"})
    assert nul.status_code == 400 and nul.json()["errors"][0]["field"] == "body"
    long = _put(
        client, _api(project), owner, {"body": "x" * (GUIDELINE_MAX_LENGTH + 1)}
    )
    assert long.status_code == 400
    extra = _put(client, _api(project), owner, {"body": "x", "html": "<b>"})
    assert extra.status_code == 422
    _put(client, _api(project), owner, {"body": "v1"})
    stale = _put(client, _api(project), owner, {"body": "v2", "expected_version": 0})
    assert stale.status_code == 409 and set(stale.json()) == {"detail", "errors"}
    assert Guideline.objects.count() == 1


def test_my_queue_page_links_the_project_guidelines(client, project, reviewer):
    login(client, reviewer)
    html = client.get(reverse("review:assigned", args=[project.pk])).content.decode()
    assert _project_url(project) in html and reverse("review:preferences") in html
