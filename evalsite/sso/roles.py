"""Project roles from an identity provider claim (OIDC_ROLE_CLAIM + OIDC_ROLE_MAP).

OIDC_ROLE_MAP lists `VALUE=PROJECT_ID:ROLE` entries, separated by commas or white
space: a user whose claim holds VALUE (the claim may be one string or a list, such as
`groups`) gets ROLE in that project. The provider is the source of truth for the
projects the map names: at each login a user gets the highest role their claim grants
there and loses the membership when it grants none. Projects the map does not name
are left to the owners. Every change goes through accounts' membership services, so
it is in the audit log (actor "system") and the last owner is never removed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured

from evalsite.accounts.models import Membership, Project, Role
from evalsite.accounts.services.members import membership_remove, membership_set
from evalsite.core.exceptions import ApplicationError

logger = logging.getLogger(__name__)

# Higher first: with two values granting roles in one project, the higher wins.
ROLE_RANK = [Role.OWNER, Role.ADJUDICATOR, Role.REVIEWER, Role.VIEWER]


@dataclass(frozen=True)
class RoleRule:
    value: str
    project_id: int
    role: str


def role_map_parse(text: str) -> list[RoleRule]:
    """OIDC_ROLE_MAP's rules; ImproperlyConfigured names the entry that is wrong."""
    rules = []
    for entry in text.replace(",", " ").split():
        value, sep, target = entry.rpartition("=")
        project, colon, role = target.partition(":")
        if not sep or not value or not colon or not project.isdigit():
            raise ImproperlyConfigured(
                f"OIDC_ROLE_MAP entry {entry!r} is not VALUE=PROJECT_ID:ROLE."
            )
        if role not in Role.values:
            raise ImproperlyConfigured(
                f"OIDC_ROLE_MAP entry {entry!r}: unknown role {role!r} "
                f"(one of {', '.join(Role.values)})."
            )
        rules.append(RoleRule(value=value, project_id=int(project), role=role))
    return rules


def _claim_values(claims: Mapping[str, Any], name: str) -> set[str]:
    raw = claims.get(name)
    if raw is None:
        return set()
    if isinstance(raw, str):
        return {raw}
    if isinstance(raw, list | tuple):
        return {str(item) for item in raw}
    return {str(raw)}


def roles_granted(claims: Mapping[str, Any], rules: list[RoleRule]) -> dict[int, str]:
    """{project_id: role} for every project a rule names: the highest role granted,
    or "" when the claim grants none there."""
    values = _claim_values(claims, settings.OIDC_ROLE_CLAIM)
    granted: dict[int, str] = {rule.project_id: "" for rule in rules}
    for rule in rules:
        if rule.value not in values:
            continue
        current = granted[rule.project_id]
        if not current or ROLE_RANK.index(Role(rule.role)) < ROLE_RANK.index(
            Role(current)
        ):
            granted[rule.project_id] = rule.role
    return granted


def roles_sync(user: User, claims: Mapping[str, Any]) -> None:
    """Bring the user's memberships in the mapped projects in line with the claim."""
    if not settings.OIDC_ROLE_CLAIM:
        return
    granted = roles_granted(claims, role_map_parse(settings.OIDC_ROLE_MAP))
    projects = Project.objects.in_bulk(list(granted))
    for project_id, role in granted.items():
        project = projects.get(project_id)
        if project is None:
            logger.warning(
                "OIDC_ROLE_MAP names project %s, which does not exist", project_id
            )
            continue
        try:
            if role:
                membership_set(project=project, user=user, role=role)
                continue
            membership = Membership.objects.filter(project=project, user=user).first()
            if membership is not None:
                membership_remove(membership=membership)
        except ApplicationError as exc:
            # The last owner keeps the role the provider no longer grants: a project
            # without an owner could not be managed at all.
            logger.warning(
                "single sign-on left %s's role in project %s unchanged: %s",
                user.get_username(),
                project_id,
                exc,
            )
