from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from evalsite.accounts.models import ApiToken, Membership, Project, Role, hash_token
from evalsite.core.exceptions import ApplicationError
from evalsite.lib.text import text_check_storable


def project_create(*, user: User, name: str, description: str = "") -> Project:
    """Create a project owned by `user`.

    Other apps hook per-project setup (e.g. the built-in offline judge connection)
    through `on_project_created`.
    """
    name = name.strip()
    if not name:
        raise ApplicationError(
            "A project needs a name.", field_errors={"name": "Required."}
        )
    if len(name) > 200:
        raise ApplicationError(
            "Project name is too long.",
            field_errors={"name": "At most 200 characters."},
        )
    text_check_storable(name, field="name")
    text_check_storable(description, field="description")
    with transaction.atomic():
        project = Project.objects.create(
            name=name, description=description, created_by=user
        )
        Membership.objects.create(project=project, user=user, role=Role.OWNER)
        for hook in _PROJECT_CREATED_HOOKS:
            hook(project)
    return project


# Per-project setup of the apps above accounts (evals adds the built-in offline judge),
# registered from their AppConfig.ready: accounts does not import them.
_PROJECT_CREATED_HOOKS: list[Callable[[Project], object]] = []


def on_project_created(hook: Callable[[Project], object]) -> None:
    """Register `hook(project)` to run inside the creating transaction."""
    if hook not in _PROJECT_CREATED_HOOKS:
        _PROJECT_CREATED_HOOKS.append(hook)


def _lock_project(project: Project) -> None:
    """Serialise membership changes of one project for the rest of the transaction, so
    two owners demoting or removing each other at once cannot both pass the last-owner
    check (each would still see the other as an owner)."""
    rows = Project.objects.select_for_update().filter(pk=project.pk).order_by()
    list(rows.values_list("pk"))


def _other_owners_exist(*, project: Project, membership: Membership) -> bool:
    return (
        Membership.objects.filter(project=project, role=Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )


@transaction.atomic
def membership_set(*, project: Project, user: User, role: str) -> Membership:
    """Add `user` to the project with `role`, or change their role.

    Refuses to demote the project's last owner: every project keeps one."""
    if role not in Role.values:
        raise ApplicationError(
            f"Unknown role {role!r}.", field_errors={"role": "Unknown role."}
        )
    _lock_project(project)
    current = Membership.objects.filter(project=project, user=user).first()
    if (
        current is not None
        and current.role == Role.OWNER
        and role != Role.OWNER
        and not _other_owners_exist(project=project, membership=current)
    ):
        raise ApplicationError(
            "A project needs at least one owner: make someone else owner first.",
            field_errors={"role": "The last owner must stay owner."},
        )
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership


def api_token_create(*, user: User, name: str = "default") -> tuple[ApiToken, str]:
    """Create a token; returns the row and the raw token, which is shown once and never stored."""
    raw = ApiToken.generate_raw()
    token = ApiToken.objects.create(
        user=user, name=name or "default", prefix=raw[:10], token_hash=hash_token(raw)
    )
    return token, raw


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


# Writing last_used_at on every request would make each API call a write; once a minute is enough.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_token_authenticate(raw: str) -> ApiToken | None:
    token = (
        ApiToken.objects.select_related("user")
        .filter(
            token_hash=hash_token(raw), revoked_at__isnull=True, user__is_active=True
        )
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def project_update(
    *,
    project: Project,
    actor: User,
    name: str,
    description: str,
    blind_review: bool,
    reviewers_can_start_runs: bool | None = None,
    reviewers_can_save_rescore: bool | None = None,
) -> Project:
    """Change the project's settings; the two reviewer permissions change only when
    given."""
    if not name.strip():
        raise ApplicationError(
            "A project needs a name.", field_errors={"name": "Required."}
        )
    if len(name.strip()) > 200:
        raise ApplicationError(
            "Project name is too long.",
            field_errors={"name": "At most 200 characters."},
        )
    text_check_storable(name, field="name")
    text_check_storable(description, field="description")
    project.name = name.strip()
    project.description = description
    project.blind_review = blind_review
    fields = ["name", "description", "blind_review"]
    if reviewers_can_start_runs is not None:
        project.reviewers_can_start_runs = reviewers_can_start_runs
        fields.append("reviewers_can_start_runs")
    if reviewers_can_save_rescore is not None:
        project.reviewers_can_save_rescore = reviewers_can_save_rescore
        fields.append("reviewers_can_save_rescore")
    project.save(update_fields=fields)
    return project


@transaction.atomic
def membership_remove(*, membership: Membership) -> None:
    _lock_project(membership.project)
    # Re-read under the lock: the role may have changed since the caller loaded it.
    role = (
        Membership.objects.filter(pk=membership.pk)
        .values_list("role", flat=True)
        .first()
    )
    if role is None:
        return  # already removed
    if role == Role.OWNER and not _other_owners_exist(
        project=membership.project, membership=membership
    ):
        raise ApplicationError("A project needs at least one owner.")
    membership.delete()
