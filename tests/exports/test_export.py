from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from evalsite.accounts.services import api_token_create
from evalsite.evals.models import Result
from evalsite.exports.services import RUN_EXTRA
from tests.conftest import bearer, login
from tests.exports.builders import QA_DATASET, make_run_with_score
from tests.factories import (
    DatasetFactory,
    JudgeConnectionFactory,
    OverrideFactory,
    ScorerConfigFactory,
)

pytestmark = pytest.mark.django_db

SECRET = "sk-live-SUPERSECRET-0123456789"
RUN_EXTRA_NAMES = [name for name, _ in RUN_EXTRA]


@pytest.fixture
def run(project, owner):
    judge = JudgeConnectionFactory(project=project, api_key=SECRET)
    dataset = DatasetFactory(project=project, **QA_DATASET)
    return make_run_with_score(
        project,
        dataset,
        [
            ScorerConfigFactory(project=project, judge=judge, kind="faithfulness"),
            ScorerConfigFactory(project=project, judge=judge, kind="hallucination"),
        ],
    )


def _body(response) -> bytes:
    assert response.streaming, "exports must stream"
    return b"".join(response.streaming_content)


def _csv_rows(response) -> list[dict[str, str]]:
    text = _body(response).decode("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _run_url(run, fmt: str = "csv") -> str:
    return reverse(
        f"exports:run_{fmt}", kwargs={"project_id": run.project_id, "run_id": run.pk}
    )


def test_csv_has_one_row_per_item_and_scorer_with_every_column(client, owner, run):
    first = run.results.order_by("item__index", "run_scorer__position").first()
    first.reviewed = True
    first.reviewed_by = owner
    first.final_score = 0.25
    first.final_passed = False
    first.save()
    OverrideFactory(
        result=first, kind="score", new_value=0.25, note="too generous", user=owner
    )
    OverrideFactory(
        result=first, kind="pass", new_value=False, note="wrong author", user=owner
    )
    OverrideFactory(
        result=first,
        kind="pass",
        new_value=True,
        note="reverted one",
        user=owner,
        reverted_at=timezone.now(),
    )

    response = login(client, owner).get(_run_url(run))

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == (
        f'attachment; filename="{slugify(run.name)}-run-{run.pk}.csv"'
        if run.name
        else f'attachment; filename="run-{run.pk}.csv"'
    )
    rows = _csv_rows(response)
    assert len(rows) == 4
    assert list(rows[0]) == [
        "result_id",
        "item_id",
        "item_index",
        "input",
        "output",
        "context",
        "reference",
        "metadata.topic",
        "metadata.difficulty",
        "scorer",
        "scorer_kind",
        "status",
        "judge_score",
        "final_score",
        "judge_passed",
        "final_passed",
        "reviewed",
        "reviewer",
        "override_notes",
        "reason",
        "error",
        # What reviewers and the judge added (tests/exports/test_export_everything.py).
        *RUN_EXTRA_NAMES,
    ]
    row = rows[0]
    assert row["input"] == "What is the capital of France?"
    assert json.loads(row["context"]) == [
        "Paris is the capital and largest city of France."
    ]
    assert row["reference"] == "Paris"
    assert row["metadata.topic"] == "geo"
    assert row["metadata.difficulty"] == "1"
    assert (row["scorer"], row["scorer_kind"]) == ("Faithfulness", "faithfulness")
    assert (row["judge_score"], row["final_score"]) == ("0.75", "0.25")
    assert (row["judge_passed"], row["final_passed"]) == ("true", "false")
    assert (row["reviewed"], row["reviewer"]) == ("true", "olivia")
    assert row["override_notes"] == "too generous | wrong author"
    assert row["reason"] == "All claims are supported."
    # Item 1 has no "difficulty": an empty cell, not a missing column.
    assert [r["metadata.difficulty"] for r in rows] == ["1", "1", "", ""]
    assert [(r["item_index"], r["scorer"]) for r in rows] == [
        ("0", "Faithfulness"),
        ("0", "Hallucination"),
        ("1", "Faithfulness"),
        ("1", "Hallucination"),
    ]


def test_errored_results_are_exported_with_their_message_and_no_score(
    client, owner, run
):
    result = run.results.order_by("id").last()
    Result.objects.filter(pk=result.pk).update(
        status="error",
        error="judge answered garbage",
        judge_score=None,
        final_score=None,
        judge_passed=None,
        final_passed=None,
    )
    rows = _csv_rows(login(client, owner).get(_run_url(run)))
    errored = next(r for r in rows if r["result_id"] == str(result.pk))
    assert errored["status"] == "error"
    assert errored["error"] == "judge answered garbage"
    assert errored["judge_score"] == errored["final_score"] == ""
    assert errored["judge_passed"] == ""


FORMULA_PAYLOADS = [
    '=HYPERLINK("http://x")',
    "+1+1",
    "-2+3",
    "@SUM(A1)",
    "\tcmd",
    "\rcmd",
    # Past a first-character check: leading whitespace and line feeds...
    " =1+1",
    "   @SUM(A1)",
    "\n=cmd|' /C calc'!A0",
    "\r\n=cmd",
    "\u3000=1+1",  # ideographic space
    "\xa0-2+3",  # no-break space
    # ...and the full-width and small forms spreadsheet input folds to ASCII.
    '＝HYPERLINK("http://x")',
    "＋1+1",
    "－2+3",
    "＠SUM(A1)",
    " ＝1+1",
    "﹦1+1",
    "﹫SUM(A1)",
]


@pytest.mark.parametrize("payload", FORMULA_PAYLOADS)
def test_formula_cells_are_neutralised(client, owner, project, payload):
    dataset = DatasetFactory(
        project=project,
        rows=[
            {
                "input": payload,
                "output": payload,
                "context": [payload],
                "reference": payload,
                "metadata": {"note": payload},
            }
        ],
        columns=["input", "output", "context", "reference", "note"],
    )
    run = make_run_with_score(
        project, dataset, [ScorerConfigFactory(project=project)], reason=payload
    )
    rows = _csv_rows(login(client, owner).get(_run_url(run)))
    row = rows[0]
    for column in ("input", "output", "reference", "metadata.note", "reason"):
        assert row[column] == "'" + payload, column
    assert json.loads(row["context"]) == [
        payload
    ]  # JSON text starts with "[": harmless


def test_formula_like_metadata_key_in_header_is_neutralised(client, owner, project):
    dataset = DatasetFactory(
        project=project,
        rows=[{"input": "q", "output": "a", "metadata": {"=cmd()": "x"}}],
        columns=["input", "output", "=cmd()"],
    )
    run = make_run_with_score(project, dataset, [ScorerConfigFactory(project=project)])
    text = _body(login(client, owner).get(_run_url(run))).decode()
    assert (
        "'metadata.=cmd()" not in text
    )  # header starts with "metadata.", already safe
    assert "metadata.=cmd()" in text.splitlines()[0]


def test_negative_numbers_stay_numbers(client, owner, project):
    dataset = DatasetFactory(project=project, rows=[{"input": "q", "output": "a"}])
    run = make_run_with_score(
        project, dataset, [ScorerConfigFactory(project=project)], judge_score=-0.5
    )
    row = _csv_rows(login(client, owner).get(_run_url(run)))[0]
    assert row["judge_score"] == "-0.5"


def test_excel_option_writes_a_utf8_bom_and_plain_csv_does_not(client, owner, run):
    login(client, owner)
    excel = _body(client.get(_run_url(run) + "?excel=1"))
    plain = _body(client.get(_run_url(run)))
    assert excel.startswith(b"\xef\xbb\xbf")
    assert not plain.startswith(b"\xef\xbb\xbf")
    assert excel[3:] == plain


def test_non_ascii_text_round_trips_as_utf8(client, owner, project):
    dataset = DatasetFactory(
        project=project, rows=[{"input": "Grüße — 東京 🚀", "output": "ok"}]
    )
    run = make_run_with_score(project, dataset, [ScorerConfigFactory(project=project)])
    login(client, owner)
    assert _csv_rows(client.get(_run_url(run)))[0]["input"] == "Grüße — 東京 🚀"
    line = _body(client.get(_run_url(run, "jsonl"))).decode("utf-8").splitlines()[0]
    assert json.loads(line)["input"] == "Grüße — 東京 🚀"


def test_jsonl_has_typed_fields_and_nested_metadata(client, owner, run):
    response = login(client, owner).get(_run_url(run, "jsonl"))
    assert response["Content-Type"].startswith("application/x-ndjson")
    lines = _body(response).decode().splitlines()
    assert len(lines) == 4
    record = json.loads(lines[0])
    assert record["context"] == ["Paris is the capital and largest city of France."]
    assert record["metadata"] == {"topic": "geo", "difficulty": 1}
    assert record["judge_score"] == 0.75 and record["judge_passed"] is True
    assert record["reviewed"] is False and record["reviewer"] is None
    assert record["override_notes"] == []
    # JSONL is data for programs: text is exact, never quote-prefixed.
    assert record["input"] == "What is the capital of France?"


def test_current_filter_exports_only_matching_results(client, owner, run):
    hallucination = run.run_scorers.get(kind="hallucination")
    failing = run.results.filter(run_scorer=hallucination).first()
    Result.objects.filter(pk=failing.pk).update(final_passed=False, final_score=0.1)
    login(client, owner)

    rows = _csv_rows(client.get(_run_url(run) + f"?run_scorer={hallucination.pk}"))
    assert {r["scorer"] for r in rows} == {"Hallucination"} and len(rows) == 2

    response = client.get(_run_url(run) + "?final=fail")
    assert "filtered" in response["Content-Disposition"]
    assert [r["result_id"] for r in _csv_rows(response)] == [str(failing.pk)]

    rows = _csv_rows(client.get(_run_url(run) + "?q=Hamlet"))
    assert {r["item_index"] for r in rows} == {"1"}


def test_invalid_filter_is_a_400_not_a_wider_export(client, owner, run):
    response = login(client, owner).get(_run_url(run) + "?final=maybe")
    assert response.status_code == 400
    assert b"final" in response.content


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("run_scorer_id", [2**63, 10**30, 0, -1])
def test_api_export_with_an_impossible_run_scorer_id_is_refused_before_streaming(
    client, owner, run, fmt, run_scorer_id
):
    # SQLite raises OverflowError on such a number, inside the stream: after the 200.
    _, raw = api_token_create(user=owner)
    response = client.get(
        f"/api/runs/{run.pk}/export.{fmt}?run_scorer_id={run_scorer_id}",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert response.status_code == 422
    assert "run_scorer_id" in response.content.decode()


def test_every_member_role_may_export(client, run, owner, reviewer, viewer):
    for user in (owner, reviewer, viewer):
        client.force_login(user)
        assert client.get(_run_url(run)).status_code == 200
        assert client.get(_run_url(run, "jsonl")).status_code == 200


def test_outsiders_get_404_and_a_run_under_another_project_path_is_404(
    client, run, outsider
):
    client.force_login(outsider)
    assert client.get(_run_url(run)).status_code == 404
    assert client.get(_run_url(run, "jsonl")).status_code == 404
    other_project = outsider.memberships.get().project_id
    url = reverse(
        "exports:run_csv", kwargs={"project_id": other_project, "run_id": run.pk}
    )
    assert client.get(url).status_code == 404


def test_anonymous_users_are_sent_to_login(client, run):
    response = client.get(_run_url(run))
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_exports_never_contain_the_judge_api_key(client, owner, run, monkeypatch):
    monkeypatch.setenv("EVALSITE_TEST_JUDGE_KEY", "sk-env-ALSOSECRET-42")
    JudgeConnectionFactory(
        project=run.project, name="env", api_key_env="EVALSITE_TEST_JUDGE_KEY"
    )
    login(client, owner)
    for fmt in ("csv", "jsonl"):
        body = _body(client.get(_run_url(run, fmt)))
        assert SECRET.encode() not in body
        assert b"sk-env-ALSOSECRET-42" not in body


def test_query_count_does_not_grow_with_rows(
    client, owner, project, django_assert_max_num_queries
):
    small = make_run_with_score(
        project,
        DatasetFactory(
            project=project, rows=[{"input": f"q{i}"} for i in range(2)], name="s"
        ),
        [ScorerConfigFactory(project=project)],
    )
    big = make_run_with_score(
        project,
        DatasetFactory(
            project=project, rows=[{"input": f"q{i}"} for i in range(60)], name="b"
        ),
        [ScorerConfigFactory(project=project)],
    )
    # Both runs have override notes: a kind of addition a run has none of is not
    # queried at all (tests/exports/test_export_everything.py counts per chunk).
    OverrideFactory(result=small.results.first(), kind="score", new_value=0.1, note="n")
    for result in big.results.all()[:30]:
        OverrideFactory(result=result, kind="score", new_value=0.1, note="n")
    login(client, owner)
    with django_assert_max_num_queries(12) as small_ctx:
        _body(client.get(_run_url(small)))
    with django_assert_max_num_queries(len(small_ctx.captured_queries)):
        rows = _csv_rows(client.get(_run_url(big)))
    assert len(rows) == 60


# ------------------------------------------------------------------ API


def test_api_exports_csv_and_jsonl_with_a_bearer_token(client, viewer, run):
    headers = bearer(viewer)
    response = client.get(f"/api/runs/{run.pk}/export.csv?excel=1", **headers)
    assert response.status_code == 200
    body = _body(response)
    assert body.startswith(b"\xef\xbb\xbf")
    assert len(list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))) == 4

    response = client.get(f"/api/runs/{run.pk}/export.jsonl?passed=true", **headers)
    assert response.status_code == 200
    assert len(_body(response).splitlines()) == 4


def test_api_export_filters_and_errors(client, owner, outsider, run):
    headers = bearer(owner)
    scorer = run.run_scorers.get(kind="faithfulness")
    response = client.get(
        f"/api/runs/{run.pk}/export.jsonl?run_scorer_id={scorer.pk}", **headers
    )
    assert {json.loads(line)["scorer"] for line in _body(response).splitlines()} == {
        "Faithfulness"
    }

    bad = client.get(f"/api/runs/{run.pk}/export.csv?passed=maybe", **headers)
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["field"] == "passed"
    failing = run.results.first()
    Result.objects.filter(pk=failing.pk).update(final_passed=False)
    response = client.get(f"/api/runs/{run.pk}/export.csv?passed=false", **headers)
    assert [r["result_id"] for r in _csv_rows(response)] == [str(failing.pk)]

    missing = client.get("/api/runs/999999/export.csv", **headers)
    assert missing.status_code == 404
    assert missing.json() == {"detail": "Not found.", "errors": []}

    hidden = client.get(f"/api/runs/{run.pk}/export.csv", **bearer(outsider))
    assert hidden.status_code == 404

    assert client.get(f"/api/runs/{run.pk}/export.csv").status_code == 401


# ------------------------------------------------------------------ datasets


def test_dataset_export_round_trips_items(client, viewer, project):
    dataset = DatasetFactory(project=project, **QA_DATASET)
    login(client, viewer)
    url = reverse(
        "exports:dataset_csv",
        kwargs={"project_id": project.pk, "dataset_id": dataset.pk},
    )
    rows = _csv_rows(client.get(url))
    assert list(rows[0]) == [
        "item_id",
        "index",
        "input",
        "output",
        "context",
        "reference",
        "topic",
        "difficulty",
    ]
    assert [r["input"] for r in rows] == [
        "What is the capital of France?",
        "Who wrote Hamlet?",
    ]
    url = reverse(
        "exports:dataset_jsonl",
        kwargs={"project_id": project.pk, "dataset_id": dataset.pk},
    )
    records = [json.loads(line) for line in _body(client.get(url)).splitlines()]
    assert records[1]["metadata"] == {"topic": "lit"}
    api = client.get(f"/api/datasets/{dataset.pk}/export.jsonl", **bearer(viewer))
    assert api.status_code == 200


def test_dataset_export_is_404_for_outsiders(client, outsider, project):
    dataset = DatasetFactory(project=project, **QA_DATASET)
    client.force_login(outsider)
    url = reverse(
        "exports:dataset_csv",
        kwargs={"project_id": project.pk, "dataset_id": dataset.pk},
    )
    assert client.get(url).status_code == 404
    assert (
        client.get(
            f"/api/datasets/{dataset.pk}/export.csv", **bearer(outsider)
        ).status_code
        == 404
    )


@pytest.mark.parametrize("payload", FORMULA_PAYLOADS)
def test_dataset_export_neutralises_formula_cells(client, viewer, project, payload):
    dataset = DatasetFactory(
        project=project,
        rows=[
            {
                "input": payload,
                "output": "ok",
                "reference": payload,
                "metadata": {"note": payload},
            }
        ],
        columns=["input", "output", "reference", "note"],
    )
    login(client, viewer)
    url = reverse(
        "exports:dataset_csv",
        kwargs={"project_id": project.pk, "dataset_id": dataset.pk},
    )
    (row,) = _csv_rows(client.get(url))
    assert row["input"] == row["reference"] == row["note"] == "'" + payload
    assert row["output"] == "ok"
    # JSONL is data for programs: exact.
    url = reverse(
        "exports:dataset_jsonl",
        kwargs={"project_id": project.pk, "dataset_id": dataset.pk},
    )
    (record,) = [json.loads(line) for line in _body(client.get(url)).splitlines()]
    assert record["input"] == payload


def test_exports_use_the_one_shared_rule(client, owner, project, monkeypatch):
    """No inlined copy of the rule: every CSV cell of both exports goes through
    evalsite.lib.csvsafe.safe_cell."""
    import evalsite.exports.services as export_services
    from evalsite.lib import csvsafe

    assert not hasattr(export_services, "_FORMULA_FIRST")
    assert not hasattr(export_services, "_cell")
    seen = []

    def spy(value):
        seen.append(value)
        return csvsafe.safe_cell(value)

    monkeypatch.setattr(export_services, "safe_cell", spy)
    dataset = DatasetFactory(project=project, rows=[{"input": " =1+1", "output": "a"}])
    run = make_run_with_score(project, dataset, [ScorerConfigFactory(project=project)])
    login(client, owner)
    row = _csv_rows(client.get(_run_url(run)))[0]
    assert row["input"] == "' =1+1" and " =1+1" in seen
    seen.clear()
    url = reverse(
        "exports:dataset_csv",
        kwargs={"project_id": project.pk, "dataset_id": dataset.pk},
    )
    assert _csv_rows(client.get(url))[0]["input"] == "' =1+1"
    assert " =1+1" in seen
