"""The API as DESIGN.md promises it: every path and method, paginated lists, one error
body shape with the right status codes."""

from __future__ import annotations

import json

import pytest

from tests.security.routes import fill, operations

pytestmark = pytest.mark.django_db

# DESIGN.md "API" (paths with ninja's {param} names) plus the list GET every collection has.
DESIGN = {
    ("POST", "/projects"),
    ("GET", "/projects"),
    ("POST", "/projects/{project_id}/datasets"),
    ("GET", "/projects/{project_id}/datasets"),
    ("GET", "/datasets/{dataset_id}/items"),
    ("GET", "/projects/{project_id}/judges"),
    ("POST", "/projects/{project_id}/judges"),
    ("GET", "/projects/{project_id}/scorers"),
    ("POST", "/projects/{project_id}/scorers"),
    ("POST", "/projects/{project_id}/runs"),
    ("GET", "/projects/{project_id}/runs"),
    ("GET", "/runs/{run_id}"),
    ("GET", "/runs/{run_id}/results"),
    ("GET", "/results/{result_id}"),
    ("POST", "/results/{result_id}/overrides"),
    ("DELETE", "/overrides/{override_id}"),
    ("POST", "/runs/{run_id}/rescore"),
    ("POST", "/runs/{run_id}/cancel"),
    ("POST", "/runs/{run_id}/retry-failed"),
    ("GET", "/runs/{run_id}/export.csv"),
    ("GET", "/runs/{run_id}/export.jsonl"),
}


def _schema(client, headers):
    return client.get("/api/openapi.json", **headers).json()


def test_every_design_path_exists_with_its_method():
    present = {(op.method, op.path) for op in operations()}
    assert not DESIGN - present, sorted(DESIGN - present)


def test_every_list_get_is_paginated_with_limit_and_offset(client):
    schema = client.get("/api/openapi.json").json()
    components = schema["components"]["schemas"]
    bare_lists, unpaginated = [], []
    for path, ops in schema["paths"].items():
        op = ops.get("get")
        if not op:
            continue
        content = op["responses"].get("200", {}).get("content", {})
        body = content.get("application/json", {}).get("schema", {})
        if "$ref" in body:
            body = components[body["$ref"].rsplit("/", 1)[-1]]
        if body.get("type") == "array":
            bare_lists.append(path)
        elif set(body.get("properties", {})) >= {"items", "count"}:
            names = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
            if not {"limit", "offset"} <= names:
                unpaginated.append(path)
    # A run's aggregates, agreement and estimates are one row per scorer of that run
    # (bounded, not a collection).
    bare_lists = [
        p
        for p in bare_lists
        if not p.endswith(("/aggregates", "/agreement", "/estimates"))
    ]
    assert not bare_lists, f"lists must be paginated: {bare_lists}"
    assert not unpaginated, unpaginated


def test_list_responses_carry_items_and_count(client, world, owner):
    from evalsite.accounts.services import api_token_create

    _, raw = api_token_create(user=owner)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    schema = client.get("/api/openapi.json").json()
    paginated = [
        path
        for path, ops in schema["paths"].items()
        if "get" in ops
        and "limit" in {p["name"] for p in ops["get"].get("parameters", [])}
    ]
    assert len(paginated) >= 8
    for path in paginated:
        url = fill(path.removeprefix("/api"), world)
        body = client.get(f"/api{url}?limit=1&offset=0", **headers).json()
        assert set(body) >= {"items", "count"}, path
        assert len(body["items"]) <= 1, path


def _headers(user):
    from evalsite.accounts.services import api_token_create

    _, raw = api_token_create(user=user)
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def _assert_error_body(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"detail", "errors"}
    assert isinstance(body["detail"], str) and body["detail"]
    for err in body["errors"]:
        assert set(err) == {"field", "message"}
    return body


def test_validation_errors_name_the_field(client, owner):
    response = client.post(
        "/api/projects",
        data=json.dumps({}),
        content_type="application/json",
        **_headers(owner),
    )
    body = _assert_error_body(response, 422)
    assert body["errors"][0]["field"] == "name"

    response = client.post(
        "/api/projects",
        data=json.dumps({"name": "x", "colour": "red"}),
        content_type="application/json",
        **_headers(owner),
    )
    assert _assert_error_body(response, 422)["errors"][0]["field"] == "colour"


def test_bad_pagination_is_a_422_naming_the_parameter(client, owner):
    response = client.get("/api/projects?limit=0", **_headers(owner))
    assert _assert_error_body(response, 422)["errors"][0]["field"] == "limit"


def test_malformed_json_is_a_400_in_the_error_shape(client, owner):
    response = client.post(
        "/api/projects",
        data="{not json",
        content_type="application/json",
        **_headers(owner),
    )
    _assert_error_body(response, 400)


def test_missing_and_foreign_objects_are_the_same_404(client, world, outsider):
    missing = client.get("/api/runs/987654321", **_headers(outsider))
    foreign = client.get(f"/api/runs/{world['run'].pk}", **_headers(outsider))
    assert _assert_error_body(missing, 404) == _assert_error_body(foreign, 404)


def test_revoked_tokens_are_refused(client, owner):
    from evalsite.accounts.services import api_token_create, api_token_revoke

    token, raw = api_token_create(user=owner)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    assert client.get("/api/projects", **headers).status_code == 200
    api_token_revoke(token=token)
    _assert_error_body(client.get("/api/projects", **headers), 401)


def test_out_of_range_ids_are_404_not_500(client, project, owner):
    client.raise_request_exception = False
    response = client.get(f"/api/projects/{2**70}/members", **_headers(owner))
    _assert_error_body(response, 404)
    assert client.get(f"/projects/{2**70}/").status_code in (302, 404)
    client.force_login(owner)
    assert client.get(f"/projects/{2**70}/").status_code == 404


def test_unknown_paths_and_methods_use_the_error_body(client, owner):
    _assert_error_body(client.get("/api/no-such-thing", **_headers(owner)), 404)
    _assert_error_body(client.put("/api/projects", **_headers(owner)), 405)
