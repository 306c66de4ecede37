"""Review API: result detail, overrides (201 + final fields + aggregates), undo, errors."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import AuditEvent
from evalsite.evals.models import Result
from evalsite.review.models import Override
from evalsite.review.services import override_create
from tests.conftest import login
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def result(project):
    run = make_run(project, kinds=["faithfulness"])
    return Result.objects.get(run=run)


def _post(client, result, body):
    return client.post(
        f"/api/results/{result.pk}/overrides", body, content_type="application/json"
    )


def test_result_detail_shape(client, viewer, result):
    data = login(client, viewer).get(f"/api/results/{result.pk}").json()
    assert data["id"] == result.pk and data["kind"] == "faithfulness"
    assert data["run_scorer_id"] == result.run_scorer_id
    assert data["item"]["context"][0].startswith("Paris is the capital")
    assert data["analysis"]["verdicts"][1]["verdict"] == "no"
    assert (data["judge_score"], data["final_score"], data["judge_passed"]) == (
        0.33,
        0.33,
        False,
    )
    assert data["overrides"] == [] and data["calls"] == [] and data["reviewed"] is False


def test_verdict_override_returns_201_with_final_fields_and_aggregates(
    client, reviewer, result
):
    resp = _post(
        login(client, reviewer),
        result,
        {
            "kind": "verdict",
            "path": "verdicts.1.verdict",
            "value": "yes",
            "note": "see ctx",
        },
    )
    assert resp.status_code == 201, resp.content
    data = resp.json()
    assert data["override"]["path"] == "verdicts.1.verdict"
    assert (data["override"]["old_value"], data["override"]["new_value"]) == (
        "no",
        "yes",
    )
    assert data["override"]["user"] == "rita" and data["override"]["active"] is True
    assert (
        data["result"]["final_score"] == 0.67 and data["result"]["final_passed"] is True
    )
    assert data["result"]["version"] == 1 and data["result"]["reviewed"] is True
    (agg,) = data["aggregates"]
    assert agg["run_scorer_id"] == result.run_scorer_id
    assert agg["final_mean"] == 0.67 and agg["judge_mean"] == 0.33
    assert agg["agreement"]["matrix"] == {"tp": 0, "fp": 0, "fn": 1, "tn": 0}
    detail = client.get(f"/api/results/{result.pk}").json()
    assert detail["final_analysis"]["verdicts"][1]["verdict"] == "yes"
    assert len(detail["overrides"]) == 1


def test_score_and_pass_overrides(client, owner, result):
    login(client, owner)
    data = _post(client, result, {"kind": "score", "value": 0.8, "note": ""}).json()
    assert data["result"]["final_score"] == 0.8 and data["result"]["score_overridden"]
    data = _post(client, result, {"kind": "pass", "value": False}).json()
    assert data["result"]["final_passed"] is False and data["result"]["pass_overridden"]


def test_delete_override_undoes_it(client, reviewer, result):
    o = override_create(result=result, user=reviewer, kind="score", value=0.9)
    resp = login(client, reviewer).delete(f"/api/overrides/{o.pk}")
    assert resp.status_code == 200
    data = resp.json()
    assert (
        data["override"]["active"] is False
        and data["override"]["reverted_by"] == "rita"
    )
    assert data["result"]["final_score"] == 0.33 and not data["result"]["overridden"]
    assert login(client, reviewer).delete(f"/api/overrides/{o.pk}").status_code == 400


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (
            {"kind": "verdict", "path": "verdicts.5.verdict", "value": "yes"},
            400,
            "path",
        ),
        (
            {"kind": "verdict", "path": "verdicts.0.verdict", "value": "perhaps"},
            400,
            "value",
        ),
        ({"kind": "verdict", "path": "reason", "value": "x"}, 400, "path"),
        ({"kind": "score", "value": "lots"}, 400, "value"),
        ({"kind": "pass", "value": 3}, 400, "value"),
        ({"kind": "flip", "value": "yes"}, 422, "kind"),
        ({"kind": "score"}, 422, "value"),
        ({"kind": "score", "value": 1, "colour": "red"}, 422, "colour"),
    ],
)
def test_errors_name_the_field(client, reviewer, result, body, status, field):
    resp = _post(login(client, reviewer), result, body)
    assert resp.status_code == status, resp.content
    errors = resp.json()["errors"]
    assert any(e["field"].startswith(field) for e in errors), errors
    assert not Override.objects.exists()


def test_stale_expected_version_is_409(client, reviewer, owner, result):
    override_create(result=result, user=owner, kind="pass", value=True)
    resp = _post(
        login(client, reviewer),
        result,
        {"kind": "score", "value": 1, "expected_version": 0},
    )
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["field"] == "expected_version"
    ok = _post(client, result, {"kind": "score", "value": 1, "expected_version": 1})
    assert ok.status_code == 201


def test_viewer_gets_403_on_writes_and_outsider_404_everywhere(
    client, viewer, outsider, reviewer, result
):
    o = override_create(result=result, user=reviewer, kind="pass", value=True)
    run = result.run
    login(client, viewer)
    assert _post(client, result, {"kind": "pass", "value": False}).status_code == 403
    assert client.delete(f"/api/overrides/{o.pk}").status_code == 403
    rescore = {"run_scorer_id": result.run_scorer_id, "options": {"scale": 2}}
    assert (
        client.post(
            f"/api/runs/{run.pk}/rescore", rescore, content_type="application/json"
        ).status_code
        == 403
    )
    login(client, outsider)
    for method, url, body in [
        ("get", f"/api/results/{result.pk}", None),
        (
            "post",
            f"/api/results/{result.pk}/overrides",
            {"kind": "pass", "value": False},
        ),
        ("delete", f"/api/overrides/{o.pk}", None),
        ("get", f"/api/runs/{run.pk}/aggregates", None),
        ("post", f"/api/runs/{run.pk}/rescore", rescore),
        ("get", f"/api/runs/{run.pk}/compare/{run.pk}", None),
    ]:
        kwargs = {"content_type": "application/json", "data": body} if body else {}
        assert getattr(client, method)(url, **kwargs).status_code == 404, url
    assert AuditEvent.objects.count() == 1  # only the reviewer's override


def test_bearer_token_works(client, reviewer, result):
    from evalsite.accounts.services import api_token_create

    raw = api_token_create(user=reviewer, name="t")[1]
    resp = client.post(
        f"/api/results/{result.pk}/overrides",
        {"kind": "pass", "value": True},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert resp.status_code == 201


def test_unauthenticated_is_401(client, result):
    assert client.get(f"/api/results/{result.pk}").status_code == 401
