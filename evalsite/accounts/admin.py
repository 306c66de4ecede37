from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from evalsite.accounts.models import (
    ApiToken,
    AuditEvent,
    Invitation,
    Membership,
    Project,
    ReviewerPreferences,
    Role,
)
from evalsite.accounts.services import membership_changes_record, membership_snapshot

LAST_OWNER_MESSAGE = (
    "A project needs at least one owner: make someone else owner first."
)


class MembershipInlineFormSet(
    forms.BaseInlineFormSet[Membership, Project, forms.ModelForm[Membership]]
):
    """The admin's project page edits all memberships at once: at least one owner must
    be left among those kept (the app's own views refuse the same through services)."""

    def clean(self) -> None:
        super().clean()
        kept = [
            form
            for form in self.forms
            if form.cleaned_data  # an untouched extra row has none
            and not (
                self.can_delete
                # A private BaseFormSet method the stubs leave out.
                and self._should_delete_form(form)  # type: ignore[attr-defined]
            )
        ]
        had_members = bool(self.instance.pk) and self.instance.memberships.exists()
        if (kept or had_members) and not any(
            form.cleaned_data.get("role") == Role.OWNER for form in kept
        ):
            raise ValidationError(LAST_OWNER_MESSAGE)


class MembershipInline(admin.TabularInline[Membership, Project]):
    model = Membership
    formset = MembershipInlineFormSet
    extra = 0
    raw_id_fields = ["user"]


def _staff(request: HttpRequest) -> Any:
    return request.user if request.user.is_authenticated else None


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    list_display = ["name", "created_at", "blind_review"]
    search_fields = ["name"]
    inlines = [MembershipInline]

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        # The inline edits memberships without the services: record what changed.
        with transaction.atomic():
            pk = form.instance.pk
            before = membership_snapshot(project_ids=[pk]) if change else {pk: {}}
            super().save_related(request, form, formsets, change)
            after = membership_snapshot(project_ids=[pk])
            membership_changes_record(actor=_staff(request), before=before, after=after)


class MembershipAdminForm(forms.ModelForm[Membership]):
    class Meta:
        model = Membership
        fields = ["project", "user", "role"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        before = self.instance
        if before.pk and before.role == Role.OWNER:
            # The owner row leaves its project when demoted or moved to another one.
            leaves = (
                data.get("role") != Role.OWNER or data.get("project") != before.project
            )
            others = (
                Membership.objects.filter(project_id=before.project_id, role=Role.OWNER)
                .exclude(pk=before.pk)
                .exists()
            )
            if leaves and not others:
                raise ValidationError(LAST_OWNER_MESSAGE)
        return data


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    form = MembershipAdminForm
    list_display = ["project", "user", "role"]
    list_filter = ["role"]

    def has_delete_permission(
        self, request: HttpRequest, obj: Membership | None = None
    ) -> bool:
        if obj is not None and _leaves_a_project_ownerless([obj.pk]):
            return False
        return super().has_delete_permission(request, obj)

    # Each change below is recorded in the access log, as the services do.

    def save_model(
        self, request: HttpRequest, obj: Membership, form: Any, change: bool
    ) -> None:
        with transaction.atomic():
            moved_from = Membership.objects.filter(pk=obj.pk).values_list(
                "project_id", flat=True
            )
            projects = {obj.project_id, *moved_from}
            before = membership_snapshot(project_ids=projects)
            super().save_model(request, obj, form, change)
            after = membership_snapshot(project_ids=projects)
            membership_changes_record(actor=_staff(request), before=before, after=after)

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        with transaction.atomic():
            before = membership_snapshot(project_ids=[obj.project_id])
            super().delete_model(request, obj)
            after = membership_snapshot(project_ids=[obj.project_id])
            membership_changes_record(actor=_staff(request), before=before, after=after)

    def delete_queryset(
        self, request: HttpRequest, queryset: QuerySet[Membership]
    ) -> None:
        if _leaves_a_project_ownerless(list(queryset.values_list("pk", flat=True))):
            raise PermissionDenied(LAST_OWNER_MESSAGE)
        with transaction.atomic():
            projects = set(queryset.values_list("project_id", flat=True))
            before = membership_snapshot(project_ids=projects)
            super().delete_queryset(request, queryset)
            after = membership_snapshot(project_ids=projects)
            membership_changes_record(actor=_staff(request), before=before, after=after)


def _leaves_a_project_ownerless(pks: list[int]) -> bool:
    """Whether deleting these memberships removes every owner of some project."""
    doomed = Membership.objects.filter(pk__in=pks, role=Role.OWNER)
    for project_id in doomed.values_list("project_id", flat=True).distinct():
        if (
            not Membership.objects.filter(project_id=project_id, role=Role.OWNER)
            .exclude(pk__in=pks)
            .exists()
        ):
            return True
    return False


def last_owner_projects(users: QuerySet[User]) -> list[Project]:
    """The projects whose every owner is among ``users`` (deleting them would leave
    those projects without an owner)."""
    owned = Project.objects.filter(
        memberships__role=Role.OWNER, memberships__user__in=users
    ).distinct()
    return [
        project
        for project in owned
        if not project.memberships.filter(role=Role.OWNER)
        .exclude(user__in=users)
        .exists()
    ]


class EvalsiteUserAdmin(UserAdmin[User]):
    """Django's user admin, except that a user who is the last owner of a project cannot
    be deleted (their membership would go with them and leave the project ownerless):
    the delete page (and the bulk action) lists those projects as what blocks it."""

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[str], list[str]]:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(
            objs, request
        )
        users = User.objects.filter(pk__in=[user.pk for user in objs])
        blocked = [
            f"Project “{project.name}”: the user to delete is its last owner. "
            + LAST_OWNER_MESSAGE
            for project in last_owner_projects(users)
        ]
        if blocked:
            # MembershipAdmin refuses to delete a last owner's row, which Django would
            # report as a missing permission; say why instead (the admin shows
            # missing permissions before protected objects).
            return deleted, counts, set(), [*protected, *blocked]
        return deleted, counts, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj: User) -> None:
        # The delete page already refuses; this keeps any other admin path honest.
        if last_owner_projects(User.objects.filter(pk=obj.pk)):
            raise PermissionDenied(LAST_OWNER_MESSAGE)
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        if last_owner_projects(queryset):
            raise PermissionDenied(LAST_OWNER_MESSAGE)
        super().delete_queryset(request, queryset)


admin.site.unregister(User)
admin.site.register(User, EvalsiteUserAdmin)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    list_display = [
        "prefix",
        "user",
        "name",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    readonly_fields = ["prefix", "token_hash", "created_at", "last_used_at"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin[Invitation]):
    """Read-only: invitations are made and revoked on the project's settings page or
    the API (so that each is recorded); the token itself is never stored."""

    list_display = ["project", "role", "email", "created_at", "expires_at"]
    list_filter = ["role"]
    readonly_fields = [f.name for f in Invitation._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: Invitation | None = None
    ) -> bool:
        return False

    def has_delete_permission(
        self, request: HttpRequest, obj: Invitation | None = None
    ) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin[AuditEvent]):
    """The audit log, read-only: nobody edits history."""

    list_display = [
        "created_at",
        "project",
        "actor",
        "action",
        "object_type",
        "summary",
    ]
    list_filter = ["object_type", "action"]
    search_fields = ["summary", "object_label"]
    raw_id_fields = ["project", "actor", "subject"]
    readonly_fields = [f.name for f in AuditEvent._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: AuditEvent | None = None
    ) -> bool:
        return False

    def has_delete_permission(
        self, request: HttpRequest, obj: AuditEvent | None = None
    ) -> bool:
        return False


@admin.register(ReviewerPreferences)
class ReviewerPreferencesAdmin(admin.ModelAdmin[ReviewerPreferences]):
    list_display = ["user", "keyboard_shortcuts", "advance_after_answer"]
