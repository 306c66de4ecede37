"""The few REST calls the gate makes, with every failure turned into a GateError."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from evalsite_gate.errors import (
    EXIT_AUTH,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    GateError,
)

FINISHED = frozenset({"done", "done_with_errors", "cancelled", "failed"})
# Answers worth asking again: the server is restarting or its database is away
# (the API answers 503 then), or a proxy in front of it is.
_TRANSIENT_STATUS = frozenset({502, 503, 504})


def _detail(response: httpx.Response) -> str:
    """The API's {detail, errors} body as one line, or the start of whatever came."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200].strip() or response.reason_phrase
    if not isinstance(body, dict):
        return str(body)[:200]
    detail = str(body.get("detail") or response.reason_phrase)
    errors = body.get("errors") or []
    fields = "; ".join(
        f"{e.get('field')}: {e.get('message')}"
        for e in errors
        if isinstance(e, dict) and e.get("field")
    )
    return f"{detail} ({fields})" if fields else detail


class ApiClient:
    """Bearer-token calls to one evalsite server.

    GETs are retried ``retries`` times (backoff doubling from ``backoff`` seconds) on
    a lost connection, a timeout or a 502/503/504, so a server restart while the gate
    waits costs a few seconds, not the CI job. A POST is retried only when the
    connection was never made, so a run is never started twice.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = max(0, retries)
        self.backoff = backoff
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "User-Agent": "evalsite-gate",
            },
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The calls.

    def run(self, run_id: int) -> dict[str, Any]:
        return self._json("GET", f"/api/runs/{run_id}", what=f"run {run_id}")

    def run_start(
        self, *, project_id: int, dataset_id: int, scorer_ids: list[int], name: str
    ) -> dict[str, Any]:
        return self._json(
            "POST",
            f"/api/projects/{project_id}/runs",
            json={"dataset_id": dataset_id, "scorer_ids": scorer_ids, "name": name},
            what=f"a run in project {project_id}",
        )

    def compare(
        self, *, baseline_id: int, run_id: int, match: str, key: str
    ) -> dict[str, Any]:
        # limit=1: the gate reads the per-scorer figures, not the item list.
        return self._json(
            "GET",
            f"/api/runs/{baseline_id}/compare/{run_id}",
            params={"match": match, "key": key, "limit": 1},
            what=f"the comparison of run {run_id} with run {baseline_id}",
        )

    # The plumbing.

    def _json(
        self,
        method: str,
        path: str,
        *,
        what: str,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> dict[str, Any]:
        response = self._send(method, path, params=params, json=json)
        status = response.status_code
        if status == 401:
            raise GateError(
                f"{self.base_url} refused the token (HTTP 401): it is missing, wrong "
                "or revoked. Create one on the API tokens page (or `manage.py "
                "create_api_token <user>`) and pass it as EVALSITE_TOKEN.",
                EXIT_AUTH,
            )
        if status == 403:
            raise GateError(
                f"The token's user may not reach {what} (HTTP 403): {_detail(response)}",
                EXIT_AUTH,
            )
        if status == 404:
            raise GateError(
                f"Not found: {what} (HTTP 404 for {method} {path}); check the id and "
                "that the token's user is a member of its project.",
                EXIT_REFUSED,
            )
        if 400 <= status < 500:
            raise GateError(
                f"The server refused {method} {path} (HTTP {status}): {_detail(response)}",
                EXIT_REFUSED,
            )
        if status >= 300:
            # A redirect is not followed: the URL points somewhere else (a login
            # page, http → https), and the token is not sent on to another place.
            where = response.headers.get("location", "")
            extra = f" to {where}" if where else ""
            reason = (
                f"answered HTTP {status}{extra}"
                if status < 500
                else f"failed (HTTP {status}): {_detail(response)}"
            )
            raise GateError(
                f"{self.base_url} {reason} for {method} {path}; is EVALSITE_URL the "
                "server's base URL?",
                EXIT_UNREACHABLE,
            )
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise GateError(
                f"{self.base_url} did not answer {method} {path} with the evalsite "
                "API's JSON; is EVALSITE_URL the server's base URL?",
                EXIT_UNREACHABLE,
            )
        return body

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None,
        json: Any,
    ) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, params=params, json=json)
            except httpx.TransportError as exc:
                never_sent = isinstance(exc, httpx.ConnectError)
                if attempt < self.retries and (method == "GET" or never_sent):
                    self._pause(attempt)
                    attempt += 1
                    continue
                raise GateError(
                    f"Cannot reach {self.base_url} ({type(exc).__name__}: {exc}); "
                    "is the server up and EVALSITE_URL right?",
                    EXIT_UNREACHABLE,
                ) from exc
            if (
                response.status_code in _TRANSIENT_STATUS
                and method == "GET"
                and attempt < self.retries
            ):
                self._pause(attempt)
                attempt += 1
                continue
            return response

    def _pause(self, attempt: int) -> None:
        self._sleep(self.backoff * (2**attempt))
