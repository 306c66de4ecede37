"""Schemathesis over the whole API, valid and invalid input alike: no server error.

Every operation gets generated requests in both of schemathesis' modes (positive:
bodies the schema allows; negative: bodies and parameters it does not), once with
random path ids and once with the ids of a real project's objects, so the requests
reach the services rather than stopping at a 404. The project's judges point at a
listener on 127.0.0.1, so the judge endpoints (create, update, test) make real
connections. On Postgres this covers what SQLite accepts and Postgres refuses (NUL in
text). FUZZ_EXAMPLES sets the examples per operation and mode (CI: the default).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from evalsite.evals.models import JudgeConnection
from tests.security.routes import value_for

# Committed requests, as in production: inside one test transaction, a statement
# Postgres refuses would abort it and fail every later request too. One test walks
# every operation: on Postgres with the machine busy, a mode took 294 s, at the edge of
# pyproject's 300 s per test, and the timeout then shows up as a flaky operation.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_answers_any_request_without_a_server_error(
    api_schema, world, owner_headers, listener, mode
):
    JudgeConnection.objects.filter(project=world["project"]).update(
        base_url=listener.url, api_key_url=listener.url
    )
    failures: dict[str, str] = {}
    tested = with_real_ids = 0
    for result in api_schema.get_all_operations():
        operation = result.ok()
        real_ids = {
            parameter.name: value_for(parameter.name, operation.path, world)
            for parameter in operation.path_parameters
        }
        with_real_ids += bool(real_ids)

        @given(
            random_case=operation.as_strategy(mode),
            real_case=operation.as_strategy(mode, path_parameters=real_ids or None),
        )
        @settings(
            max_examples=EXAMPLES,
            derandomize=True,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def check(random_case, real_case) -> None:
            for case in (random_case, real_case):
                case.call_and_validate(
                    headers=owner_headers, checks=[not_a_server_error]
                )

        try:
            check()
        except Exception as exc:  # noqa: BLE001 - reported below, per operation
            text = str(exc)
            start = text.find("curl ")
            failures[operation.label] = (
                text[start:].split("\n")[0] if start >= 0 else text[:500]
            )
        tested += 1
    assert tested >= 30 and with_real_ids >= 20
    assert not failures, "\n\n".join(f"{k}\n{v}" for k, v in failures.items())
