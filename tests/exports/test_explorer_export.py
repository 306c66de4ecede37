"""Bulk export from the explorer: the run export restricted to selected ids (page and
API), every id checked to be the run's before anything streams."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from evalsite.evals.models import Result
from tests.conftest import bearer, login
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return make_run(project, n_items=4, kinds=("faithfulness", "hallucination"))


@pytest.fixture
def other_run(project):
    return make_run(project, n_items=1)


def _ids(run):
    return list(
        Result.objects.filter(run=run).order_by("pk").values_list("pk", flat=True)
    )


def _url(run, fmt="csv"):
    return reverse(f"exports:run_{fmt}", args=[run.project_id, run.pk])


def _csv_ids(response):
    text = b"".join(response.streaming_content).decode()
    return sorted(int(row["result_id"]) for row in csv.DictReader(io.StringIO(text)))


def test_export_page_with_ids_streams_only_those_results(client, viewer, run):
    picked = _ids(run)[1:4]
    response = login(client, viewer).get(_url(run), {"ids": picked})
    assert response.status_code == 200 and response.streaming
    assert _csv_ids(response) == picked
    assert f"run-{run.pk}-filtered.csv" in response["Content-Disposition"]


def test_export_page_with_ids_and_a_filter_exports_their_intersection(
    client, viewer, run
):
    faith = run.run_scorers.get(kind="faithfulness")
    picked = _ids(run)
    response = login(client, viewer).get(
        _url(run), {"ids": picked, "run_scorer": faith.pk}
    )
    expected = sorted(
        Result.objects.filter(run=run, run_scorer=faith).values_list("pk", flat=True)
    )
    assert _csv_ids(response) == expected


@pytest.mark.parametrize("bad", ["abc", "0", "-3", str(2**63)])
def test_export_page_refuses_a_malformed_id_with_400(client, viewer, run, bad):
    response = login(client, viewer).get(_url(run), {"ids": [_ids(run)[0], bad]})
    assert response.status_code == 400
    assert b"ids" in response.content


def test_export_page_refuses_ids_of_another_run_before_streaming(
    client, viewer, run, other_run
):
    foreign = _ids(other_run)[0]
    response = login(client, viewer).get(_url(run), {"ids": [_ids(run)[0], foreign]})
    assert response.status_code == 400 and not response.streaming
    assert f"not results of this run ({foreign})" in response.content.decode()


def test_export_api_with_ids_streams_only_those(client, reviewer, run):
    picked = _ids(run)[:2]
    response = client.get(
        f"/api/runs/{run.pk}/export.jsonl", {"ids": picked}, **bearer(reviewer)
    )
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert sorted(json.loads(line)["result_id"] for line in lines) == picked


def test_export_api_refuses_ids_of_another_run_with_the_error_body(
    client, reviewer, run, other_run
):
    response = client.get(
        f"/api/runs/{run.pk}/export.csv",
        {"ids": [_ids(other_run)[0]]},
        **bearer(reviewer),
    )
    assert response.status_code == 400
    body = response.json()
    assert "not results of this run" in body["detail"]
    assert body["errors"][0]["field"] == "ids"


def test_export_api_outsider_gets_404_even_with_valid_ids(client, outsider, run):
    response = client.get(
        f"/api/runs/{run.pk}/export.csv", {"ids": _ids(run)[:1]}, **bearer(outsider)
    )
    assert response.status_code == 404


# ------------------------------------------------------------------ Parquet


def _bulk_url(run):
    return reverse("review:explorer_bulk", args=[run.project_id, run.pk])


def _parquet_ids(response):
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(b"".join(response.streaming_content)))
    return sorted(table.column("result_id").to_pylist())


def test_explorer_offers_parquet_among_the_bulk_exports(client, reviewer, run):
    page = login(client, reviewer).get(
        reverse("review:explorer", args=[run.project_id, run.pk])
    )
    assert (
        '<button type="submit" name="action" value="export_parquet"'
        in page.content.decode()
    )


def test_bulk_parquet_export_holds_exactly_the_selected_results(client, reviewer, run):
    picked = _ids(run)[1:4]
    response = login(client, reviewer).post(
        _bulk_url(run), {"action": "export_parquet", "scope": "selected", "ids": picked}
    )
    assert response.status_code == 302
    target = response["Location"]
    assert target.startswith(_url(run, "parquet") + "?")
    download = client.get(target)
    assert download.status_code == 200 and download.streaming
    assert download["Content-Disposition"].endswith('.parquet"')
    assert _parquet_ids(download) == picked


def test_bulk_parquet_export_of_all_matching_follows_the_filter(client, reviewer, run):
    faith = run.run_scorers.get(scorer__kind="faithfulness")
    response = login(client, reviewer).post(
        _bulk_url(run),
        {"action": "export_parquet", "scope": "all", "run_scorer": faith.pk},
    )
    download = client.get(response["Location"])
    expected = sorted(
        Result.objects.filter(run=run, run_scorer=faith).values_list("pk", flat=True)
    )
    assert _parquet_ids(download) == expected and len(expected) == 4


def test_bulk_parquet_export_refuses_another_projects_ids_as_csv_does(
    client, reviewer, run
):
    from tests.factories import ProjectFactory

    foreign = _ids(make_run(ProjectFactory(), n_items=1))[0]
    login(client, reviewer)
    messages = {}
    for action in ("export_csv", "export_parquet"):
        response = client.post(
            _bulk_url(run),
            {"action": action, "scope": "selected", "ids": [_ids(run)[0], foreign]},
            follow=True,
        )
        # Back on the explorer with the reason, no download.
        assert response.status_code == 200
        assert response.redirect_chain[-1][0].startswith(
            reverse("review:explorer", args=[run.project_id, run.pk])
        )
        messages[action] = [str(m) for m in response.context["messages"]]
    assert messages["export_parquet"] == messages["export_csv"]
    assert messages["export_parquet"][0].startswith("Nothing changed:")
    assert str(foreign) in messages["export_parquet"][0]
    # The export URL itself refuses them before streaming, with the CSV's message.
    csv_response = client.get(_url(run), {"ids": [_ids(run)[0], foreign]})
    response = client.get(_url(run, "parquet"), {"ids": [_ids(run)[0], foreign]})
    assert response.status_code == 400 and not response.streaming
    assert response.content == csv_response.content
    assert f"not results of this run ({foreign})" in response.content.decode()
