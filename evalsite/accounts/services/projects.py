"""Projects: create (with the first owner) and change settings."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.db import transaction

from evalsite.accounts.models import (
    MAX_OVERLAP,
    Membership,
    MembershipAction,
    Project,
    Role,
)
from evalsite.accounts.services.members import membership_event_write
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
        membership_event_write(
            project=project,
            actor=user,
            subject=user,
            action=MembershipAction.ADDED,
            after={"role": Role.OWNER},
        )
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


def project_update(
    *,
    project: Project,
    actor: User,
    name: str,
    description: str,
    blind_review: bool,
    reviewers_can_start_runs: bool | None = None,
    reviewers_can_save_rescore: bool | None = None,
    default_overlap: int | None = None,
) -> Project:
    """Change the project's settings; the two reviewer permissions and the reviewers
    per result of new queues change only when given."""
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
    if default_overlap is not None:
        if isinstance(default_overlap, bool) or not 1 <= default_overlap <= MAX_OVERLAP:
            raise ApplicationError(
                f"Reviewers per result must be between 1 and {MAX_OVERLAP}.",
                field_errors={"default_overlap": f"between 1 and {MAX_OVERLAP}"},
            )
        project.default_overlap = default_overlap
        fields.append("default_overlap")
    project.save(update_fields=fields)
    return project
