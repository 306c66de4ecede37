"""The OpenAPI schema is valid and the API keeps to it (schemathesis, in-process WSGI).

A member's bearer token; every operation gets a few generated requests as generated
(random ids: mostly 404s, which must still be well-formed) and again with the path
ids of real objects, so real responses are checked against their schemas too.
Deterministic (derandomize) and small (max_examples), so it runs in every test run.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.security.routes import value_for

pytestmark = pytest.mark.django_db

CHECKS = [not_a_server_error, response_schema_conformance]


def test_schema_is_valid_openapi(api_schema):
    api_schema.validate()  # against the OpenAPI 3 meta-schema; raises on any error
    raw = api_schema.raw_schema
    assert raw["openapi"].startswith("3.")
    assert raw["components"]["securitySchemes"]


def test_api_has_no_server_errors_and_keeps_its_schema(
    api_schema, world, owner_headers
):
    # One loop over the operations with hypothesis inside (schemathesis' pytest plugin
    # does not run under pytest 9); every operation's failure is collected and reported.
    failures: dict[str, str] = {}
    tested = 0
    for result in api_schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=6,
            derandomize=True,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def check(case) -> None:
            case.call_and_validate(headers=owner_headers, checks=CHECKS)
            if case.path_parameters:
                route = case.operation.path
                case.path_parameters = {
                    name: value_for(name, route, world) for name in case.path_parameters
                }
                case.call_and_validate(headers=owner_headers, checks=CHECKS)

        try:
            check()
        except Exception as exc:  # noqa: BLE001 - reported below, per operation
            failures[operation.label] = f"{type(exc).__name__}: {exc}"[:2000]
        tested += 1
    assert tested >= 20
    assert not failures, "\n\n".join(f"{k}\n{v}" for k, v in failures.items())
