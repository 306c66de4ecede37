"""Every URL pattern and every API operation, with path parameters filled from a world.

Shared by the access walkers; a new pattern or parameter name fails loudly in
`fill()` so nobody adds a route the security suite silently skips.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

# Not project data: public or per-user pages, or the API (walked per operation).
SKIP_PREFIXES = ("admin/", "api/", "static/")
SKIP_NAMES = {
    "healthz",
    "accounts:login",
    "accounts:logout",
    "accounts:dashboard",
    "accounts:project_create",
    "accounts:tokens",
    "review:preferences",  # the signed-in user's own settings
    # Single sign-on's login, callback and logout (tests/sso covers them).
    "oidc_authentication_init",
    "oidc_authentication_callback",
    "oidc_logout",
}

_PARAM = re.compile(r"<(?:(?P<conv>\w+):)?(?P<name>\w+)>|\{(?P<api>\w+)\}")


@dataclass(frozen=True)
class Page:
    route: str
    name: str


def pages() -> list[Page]:
    found: list[Page] = []

    def walk(resolver: URLResolver, prefix: str, ns: str) -> None:
        for p in resolver.url_patterns:
            if isinstance(p, URLResolver):
                walk(
                    p,
                    prefix + str(p.pattern),
                    ns + (f"{p.namespace}:" if p.namespace else ""),
                )
            elif isinstance(p, URLPattern):
                route = prefix + str(p.pattern)
                name = ns + (p.name or "")
                if route.startswith(SKIP_PREFIXES) or name in SKIP_NAMES:
                    continue
                found.append(Page(route, name))

    walk(get_resolver(), "", "")
    return found


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # "/runs/{run_id}/cancel"
    name: str


def operations() -> list[Operation]:
    """Every mounted API operation, from the generated OpenAPI document (nested routers
    included), with paths relative to /api."""
    from evalsite.api import api

    schema = api.get_openapi_schema(path_prefix="")
    return [
        Operation(method.upper(), path, op.get("operationId", ""))
        for path, methods in schema["paths"].items()
        for method, op in methods.items()
    ]


def value_for(name: str, route: str, world: dict[str, Any]) -> Any:
    """The id of `world`'s object that a path parameter names."""
    if name == "kind":
        # Archive, unarchive, delete: "<housekeeping_kind:kind>/<int:pk>/…" and
        # "/projects/{project_id}/{kind}/{pk}/…" walk with the world's run.
        return "runs"
    if name == "pk" and ("<housekeeping_kind:kind>" in route or "{kind}" in route):
        return world["run"].pk
    if name == "pk":
        # "judges/<int:pk>/", "scorers/<int:pk>/", "runs/<int:pk>/": the segment before.
        segment = route.split("<int:pk>")[0].rstrip("/").rsplit("/", 1)[-1]
        name = {
            "judges": "judge_id",
            "scorers": "scorer_id",
            "runs": "run_id",
            "webhooks": "webhook_id",
            "bias-audits": "audit_id",
        }[segment]
    objects = {
        "project_id": world["project"],
        "dataset_id": world["dataset"],
        "judge_id": world["judge"],
        "scorer_id": world["scorer"],
        "run_id": world["run"],
        "other_id": world["other_run"],
        "result_id": world["result"],
        "override_id": world["override"],
        "item_id": world["item"],
        "queue_id": world["queue"],
        "pairwise_id": world["pairwise"],
        "flag_id": world["flag"],
        "token_id": world["token"],
        "membership_id": world["reviewer_membership"],
        "invitation_id": world["invitation"],
        "comment_id": world["comment"],
        "call_id": world["call"],
        "saved_filter_id": world["saved_filter"],
        "webhook_id": world["webhook"],
        "delivery_id": world["delivery"],
        "candidate_id": world["candidate"],
        "replay_id": world["replay"],
        "audit_id": world["bias_audit"],
    }
    if name in objects:
        return objects[name].pk
    if name == "position":
        return 1
    if name == "action":
        return "accept"
    if name == "token":
        return "0123456789abcdef"
    raise AssertionError(
        f"{route}: unknown path parameter {name!r}; teach tests/security/routes.py "
        "which object it names so the access walk covers it"
    )


def fill(route: str, world: dict[str, Any], **override: Any) -> str:
    def sub(match: re.Match[str]) -> str:
        name = match.group("name") or match.group("api")
        if name in override:
            return str(override[name])
        return str(value_for(name, route, world))

    return "/" + _PARAM.sub(sub, route).lstrip("/")


WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
