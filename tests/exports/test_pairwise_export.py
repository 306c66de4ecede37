"""The download of a pairwise queue's answers ("export everything a reviewer
added"): one row per answer mapped back to the real runs, blind like the pairwise
page and API, spreadsheet-safe CSV, streamed in a constant number of queries, with
the project isolation and roles of the run exports; and GET /api/queues/{id}
pointing a pairwise queue to /api/pairwise/{id}."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalsite.accounts.models import Role
from evalsite.exports.pairwise import COLUMNS
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import PairwiseItem, Preference
from evalsite.review.pairwise.services import pairwise_answer, pairwise_queue_create
from evalsite.review.queues.services import queue_create
from tests.conftest import bearer, login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import make_run
from tests.review.pairwise_builders import make_model_runs, pairwise_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def bea(project):
    return MembershipFactory(
        project=project, user=UserFactory(username="bea"), role=Role.REVIEWER
    ).user


@pytest.fixture
def runs(project):
    return make_model_runs(project, n=4)


def _page_url(queue, fmt="csv"):
    return reverse(f"exports:pairwise_export_{fmt}", args=[queue.project_id, queue.pk])


def _body(response) -> str:
    assert response.streaming, "the export is streamed"
    return b"".join(response.streaming_content).decode("utf-8")


def _csv(response) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_body(response))))


def _jsonl(response) -> list[dict]:
    return [json.loads(line) for line in _body(response).splitlines() if line]


def _pair(queue, position):
    return PairwiseItem.objects.select_related("item_a", "item_b").get(
        queue=queue, position=position
    )


# ------------------------------------------------------------------ rows


def test_rows_map_each_answer_back_to_the_real_runs(client, runs, owner, reviewer):
    run_a, run_b = runs
    queue = pairwise_queue(runs, owner, overlap=1, seed=3, name="Model A vs B")
    # One answer by the side shown on each orientation, one tie.
    pairs = [_pair(queue, p) for p in (1, 2, 3, 4)]
    left_a = next(p for p in pairs if p.a_left)
    left_b = next(p for p in pairs if not p.a_left)
    pairwise_answer(
        queue=queue,
        position=left_a.position,
        user=reviewer,
        side="left",
        reason="clearer",
        seconds=12.5,
    )
    pairwise_answer(queue=queue, position=left_b.position, user=reviewer, side="left")
    tie = next(p for p in pairs if p not in (left_a, left_b))
    pairwise_answer(queue=queue, position=tie.position, user=owner, side="tie")

    response = login(client, reviewer).get(_page_url(queue))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == (
        f'attachment; filename="model-a-vs-b-pairwise-{queue.pk}.csv"'
    )
    assert response["Cache-Control"] == "private, no-store"
    text = _body(client.get(_page_url(queue)))
    assert text.splitlines()[0] == ",".join(COLUMNS)
    rows = {int(r["position"]): r for r in csv.DictReader(io.StringIO(text))}
    assert set(rows) == {left_a.position, left_b.position, tie.position}

    # Left was run A's output: choice a, run A preferred.
    row = rows[left_a.position]
    assert row["shown_left"] == "a" and row["side"] == "left"
    assert row["choice"] == "a" and row["preferred_run_id"] == str(run_a.pk)
    assert row["reviewer"] == "rita" and row["reason"] == "clearer"
    assert float(row["seconds"]) == 12.5
    assert row["answered_at"].startswith(
        Preference.objects.get(pair=left_a).created_at.isoformat()[:19]
    )
    # Outputs are the runs', whichever side showed them.
    for pair in (left_a, left_b):
        r = rows[pair.position]
        assert (r["pair_id"], r["item_a_id"], r["item_b_id"]) == (
            str(pair.pk),
            str(pair.item_a_id),
            str(pair.item_b_id),
        )
        assert r["item_a_index"] == str(pair.item_a.index)
        assert r["item_b_index"] == str(pair.item_b.index)
        assert r["input"] == pair.item_a.input
        assert r["input_b"] == pair.item_b.input
        assert r["output_a"] == pair.item_a.output
        assert r["output_a"].startswith("A answer")
        assert r["output_b"] == pair.item_b.output
        assert r["output_b"].startswith("B answer")
    # Left was run B's output: clicking left prefers run B.
    row = rows[left_b.position]
    assert (row["shown_left"], row["choice"]) == ("b", "b")
    assert row["preferred_run_id"] == str(run_b.pk)
    assert row["seconds"] == "" and row["reason"] == ""
    # A tie prefers no run.
    row = rows[tie.position]
    assert (row["choice"], row["side"], row["preferred_run_id"]) == ("tie", "tie", "")
    assert row["reviewer"] == "olivia"


def test_jsonl_has_the_same_rows_with_json_types(client, runs, owner, reviewer):
    run_a, _ = runs
    queue = pairwise_queue(runs, owner, overlap=1, seed=5)
    pair = _pair(queue, 2)
    pairwise_answer(
        queue=queue, position=2, user=reviewer, choice="a", reason="=1+1", seconds=3
    )
    response = login(client, owner).get(_page_url(queue, "jsonl"))
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"].endswith(f'-pairwise-{queue.pk}.jsonl"')
    (row,) = _jsonl(response)
    assert list(row) == list(COLUMNS)
    assert row["position"] == 2 and row["pair_id"] == pair.pk
    assert row["item_a_id"] == pair.item_a_id and row["item_b_id"] == pair.item_b_id
    assert row["choice"] == "a" and row["preferred_run_id"] == run_a.pk
    assert row["side"] == ("left" if pair.a_left else "right")
    assert row["shown_left"] == ("a" if pair.a_left else "b")
    # JSONL is data for programs: the text is exact, numbers are numbers.
    assert row["reason"] == "=1+1" and row["seconds"] == 3.0
    assert row["guideline_version"] is None


def test_an_empty_queue_exports_the_header_only(client, runs, owner):
    queue = pairwise_queue(runs, owner)
    assert _body(login(client, owner).get(_page_url(queue))).splitlines() == [
        ",".join(COLUMNS)
    ]
    assert _body(client.get(_page_url(queue, "jsonl"))) == ""


# ------------------------------------------------------------------ blindness


def test_answers_on_an_open_pair_stay_hidden_until_you_answer_it(
    client, runs, owner, reviewer, bea
):
    queue = pairwise_queue(runs, owner, overlap=2, seed=8)
    # Pair 1 complete (bea and olivia); pair 2 open with bea's answer only; pair 3
    # open with rita's only.
    pairwise_answer(queue=queue, position=1, user=bea, choice="a", reason="bea 1")
    pairwise_answer(queue=queue, position=1, user=owner, choice="b")
    pairwise_answer(queue=queue, position=2, user=bea, choice="b", reason="secret")
    pairwise_answer(queue=queue, position=3, user=reviewer, choice="tie")

    def seen(user):
        client.force_login(user)
        return sorted(
            (int(r["position"]), r["reviewer"])
            for r in _csv(client.get(_page_url(queue)))
        )

    # Rita: the complete pair and her own answer, not Bea's on open pair 2.
    assert seen(reviewer) == [(1, "bea"), (1, "olivia"), (3, "rita")]
    # The owner is blind by the same rule as the pairwise page and API.
    assert seen(owner) == [(1, "bea"), (1, "olivia")]
    assert seen(bea) == [(1, "bea"), (1, "olivia"), (2, "bea")]
    # The JSONL and the API follow it too.
    api = client.get(f"/api/pairwise/{queue.pk}/export.jsonl", **bearer(reviewer))
    assert "secret" not in _body(api)
    assert "secret" not in _body(login(client, reviewer).get(_page_url(queue, "jsonl")))
    # Once Rita answers pair 2 she sees Bea's answer on it.
    pairwise_answer(queue=queue, position=2, user=reviewer, choice="a")
    assert (2, "bea") in seen(reviewer)


# ------------------------------------------------------------------ CSV safety


@pytest.mark.parametrize(
    "reason",
    ['=HYPERLINK("http://x","y")', "+1", "-2+3", "@SUM(A1)", "﹢1", "＝1"],
)
def test_formula_like_text_is_quoted_in_csv(client, runs, owner, reason):
    queue = pairwise_queue(runs, owner, overlap=1)
    pairwise_answer(queue=queue, position=1, user=owner, choice="a", reason=reason)
    (row,) = _csv(login(client, owner).get(_page_url(queue)))
    assert row["reason"] == "'" + reason
    # Numbers stay numbers.
    assert row["position"] == "1"


def test_formula_like_outputs_and_names_are_quoted(client, project, owner):
    from tests.factories import DatasetFactory, RunFactory

    rows = [{"input": "@cmd", "output": "=A1*2"}]
    ds_a = DatasetFactory(project=project, name="a", rows=rows)
    ds_b = DatasetFactory(
        project=project, name="b", rows=[{"input": "@cmd", "output": "-5"}]
    )
    run_a = RunFactory(project=project, dataset=ds_a)
    run_b = RunFactory(project=project, dataset=ds_b)
    queue = pairwise_queue_create(
        run_a=run_a, run_b=run_b, user=owner, name='=x "quoted"/../name'
    )
    pairwise_answer(queue=queue, position=1, user=owner, choice="b")
    response = login(client, owner).get(_page_url(queue) + "?excel=1")
    text = _body(response)
    assert text.startswith("\ufeff")
    (row,) = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    assert (row["input"], row["output_a"], row["output_b"]) == (
        "'@cmd",
        "'=A1*2",
        "'-5",
    )
    # A safe, distinct name: slug only, and the Excel variant named apart.
    assert response["Content-Disposition"] == (
        f'attachment; filename="x-quotedname-pairwise-{queue.pk}-excel.csv"'
    )


# ------------------------------------------------------------------ isolation


def test_isolation_and_roles(client, runs, owner, viewer, outsider):
    queue = pairwise_queue(runs, owner, overlap=1)
    pairwise_answer(queue=queue, position=1, user=owner, choice="a")
    # A viewer may download, as with run exports.
    assert len(_csv(login(client, viewer).get(_page_url(queue)))) == 1
    api = client.get(f"/api/pairwise/{queue.pk}/export.csv", **bearer(viewer))
    assert api.status_code == 200 and len(_csv(api)) == 1
    # Outsiders get 404 on the page and the API.
    login(client, outsider)
    for fmt in ("csv", "jsonl"):
        assert client.get(_page_url(queue, fmt)).status_code == 404
        assert (
            client.get(
                f"/api/pairwise/{queue.pk}/export.{fmt}", **bearer(outsider)
            ).status_code
            == 404
        )
    # Another project's queue under this project's URL: 404.
    other = ProjectFactory(name="Other")
    MembershipFactory(project=other, user=owner, role=Role.OWNER)
    other_queue = pairwise_queue(make_model_runs(other, n=2), owner)
    url = reverse(
        "exports:pairwise_export_csv", args=[queue.project_id, other_queue.pk]
    )
    assert login(client, owner).get(url).status_code == 404
    # A review queue's id is not a pairwise queue.
    run = make_run(queue.project, n_items=2)
    review_queue = queue_create(run=run, user=owner, query=ResultQuery())
    assert client.get(_page_url(review_queue)).status_code == 404
    assert (
        client.get(
            f"/api/pairwise/{review_queue.pk}/export.csv", **bearer(owner)
        ).status_code
        == 404
    )
    # Anonymous: the page sends to the login page, the API answers 401.
    client.logout()
    response = client.get(_page_url(queue))
    assert response.status_code == 302 and "login" in response["Location"]
    assert client.get(f"/api/pairwise/{queue.pk}/export.csv").status_code == 401
    # Only GET.
    login(client, owner)
    assert client.post(_page_url(queue)).status_code == 405


def test_the_queue_page_links_the_downloads(client, runs, viewer, owner):
    queue = pairwise_queue(runs, owner)
    page = login(client, viewer).get(
        reverse("review:pairwise", args=[queue.project_id, queue.pk])
    )
    html = page.content.decode()
    assert f'href="{_page_url(queue)}"' in html
    assert f'href="{_page_url(queue)}?excel=1"' in html
    assert f'href="{_page_url(queue, "jsonl")}"' in html


# ------------------------------------------------------------------ queries


def _export_queries(client, project, owner, n):
    queue = pairwise_queue(make_model_runs(project, n=n), owner, overlap=1, seed=1)
    for position in range(1, n + 1):
        pairwise_answer(
            queue=queue, position=position, user=owner, choice="a", reason="r"
        )
    login(client, owner)
    with CaptureQueriesContext(connection) as ctx:
        rows = _csv(client.get(_page_url(queue)))
    assert len(rows) == n
    return len(ctx.captured_queries)


def test_query_count_does_not_grow_with_the_rows(client, project, owner):
    small = _export_queries(client, project, owner, 3)
    large = _export_queries(client, project, owner, 30)
    assert large == small


# ------------------------------------------------------------------ API


def test_api_export_csv_and_jsonl(client, runs, owner, reviewer):
    run_a, run_b = runs
    queue = pairwise_queue(runs, owner, overlap=1, name="Pairs")
    pairwise_answer(queue=queue, position=1, user=reviewer, choice="b", reason="+x")
    pairwise_answer(queue=queue, position=2, user=owner, choice="a")
    url = f"/api/pairwise/{queue.pk}/export"
    response = client.get(url + ".csv", **bearer(owner))
    assert response.status_code == 200
    assert response["Content-Disposition"] == (
        f'attachment; filename="pairs-pairwise-{queue.pk}.csv"'
    )
    rows = _csv(response)
    assert [(r["position"], r["choice"], r["reason"]) for r in rows] == [
        ("1", "b", "'+x"),
        ("2", "a", ""),
    ]
    assert rows[0]["preferred_run_id"] == str(run_b.pk)
    excel = client.get(url + ".csv?excel=true", **bearer(owner))
    assert excel["Content-Disposition"].endswith(
        f'pairs-pairwise-{queue.pk}-excel.csv"'
    )
    assert _body(excel).startswith("\ufeff")
    jsonl = client.get(url + ".jsonl", **bearer(owner))
    assert jsonl.status_code == 200
    assert [(r["position"], r["preferred_run_id"]) for r in _jsonl(jsonl)] == [
        (1, run_b.pk),
        (2, run_a.pk),
    ]
    # A bad flag is a clear 422, not a 500.
    assert client.get(url + ".csv?excel=maybe", **bearer(owner)).status_code == 422
    # The endpoints are documented in the schema.
    schema = client.get("/api/openapi.json", **bearer(owner)).json()
    assert "/api/pairwise/{pairwise_id}/export.csv" in schema["paths"]
    assert "/api/pairwise/{pairwise_id}/export.jsonl" in schema["paths"]


def test_queue_detail_points_a_pairwise_queue_to_its_api(client, runs, owner, outsider):
    queue = pairwise_queue(runs, owner)
    response = client.get(f"/api/queues/{queue.pk}", **bearer(owner))
    assert response.status_code == 404
    assert f"/api/pairwise/{queue.pk}" in response.json()["detail"]
    # An outsider learns nothing about the queue's kind.
    response = client.get(f"/api/queues/{queue.pk}", **bearer(outsider))
    assert response.status_code == 404
    assert response.json()["detail"] == "Not found."
    # An ordinary review queue still reads as before.
    run = make_run(queue.project, n_items=2)
    review_queue = queue_create(run=run, user=owner, query=ResultQuery())
    response = client.get(f"/api/queues/{review_queue.pk}", **bearer(owner))
    assert response.status_code == 200 and response.json()["id"] == review_queue.pk
