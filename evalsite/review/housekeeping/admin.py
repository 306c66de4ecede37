"""The admin's deletion of the kinds the housekeeping pages delete (runs, datasets,
queues): through the same service, so that it is as scale-safe and as audited; and
of projects, by the same cascade.

Django's admin deletes through its Collector, which loads every row it cascades to
(a run's million results) both for the confirmation page and for the deletion; this
counts them with a COUNT per table (evalsite.lib.cascade) and deletes with
object_delete_request (a worker when the rows are too many for a request)."""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, TypeVar

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import router
from django.db.models import Model, QuerySet
from django.db.models.deletion import ProtectedError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from evalsite.accounts.models import Project
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Run
from evalsite.evals.runs.services import ACTIVE
from evalsite.lib.cascade import Cascade, cascade_collect, cascade_delete
from evalsite.review.housekeeping.selectors import (
    DeletionPlan,
    Kind,
    deletion_plan,
    row_label,
)
from evalsite.review.housekeeping.services import object_delete_request

M = TypeVar("M", bound=Model)


def _staff(request: HttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


class CascadeDeleteAdmin(admin.ModelAdmin[M]):
    """A ModelAdmin whose delete page and bulk delete action go through the
    housekeeping deletion: counts instead of rows on the confirmation page, the
    reasons it cannot go now (a running run, an open queue) as protected objects,
    and large deletions handed to a worker."""

    housekeeping_kind: ClassVar[Kind]

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[str], list[str]]:
        """What the confirmation page lists: per object its rows that go, counted
        (not on the confirmed POST that deletes, which needs only what stops it);
        the models whose rows go and the user may not delete; and what stops it."""
        # "post" is the confirmation form's (the delete page's and the bulk action's).
        count = not request.POST.get("post")
        deleted: list[Any] = []
        totals: Counter[str] = Counter()
        perms_needed: set[str] = set()
        protected: list[str] = []
        for obj in objs:
            if getattr(obj, "deleting", False):
                protected.append(f"{obj}: it is being deleted in the background.")
                continue
            plan = deletion_plan(kind=self.housekeeping_kind, obj=obj, count=count)
            protected += [f"{obj}: {reason}" for reason in plan.blockers]
            assert plan.cascade is not None
            perms_needed |= _perms_needed(request, plan.cascade)
            deleted.append(str(obj))
            if count:
                deleted.append([f"{n:,} {label}" for label, n in plan.counts.items()])
                totals.update(plan.counts)
        return deleted, dict(totals), perms_needed, protected

    def _delete(self, request: HttpRequest, obj: M) -> DeletionPlan:
        try:
            # Not durable: the admin's delete view runs in its own transaction (the
            # task, for a large one, is sent once that commits).
            return object_delete_request(
                kind=self.housekeeping_kind,
                obj=obj,
                user=_staff(request),
                durable=False,
            )
        except ApplicationError as exc:
            # Something started on it since the confirmation page.
            raise PermissionDenied(exc.message) from exc

    def delete_model(self, request: HttpRequest, obj: M) -> None:
        self._delete(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[M]) -> None:
        for obj in queryset:
            if self._delete(request, obj).background:
                self._say_background(request, str(obj))

    def response_delete(
        self, request: HttpRequest, obj_display: str, obj_id: Any
    ) -> HttpResponse:
        if not self.model._default_manager.filter(pk=obj_id).exists():
            return super().response_delete(request, obj_display, obj_id)
        # Still there: a worker deletes it.
        self._say_background(request, obj_display)
        opts = self.opts
        return HttpResponseRedirect(
            reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        )

    def _say_background(self, request: HttpRequest, name: str) -> None:
        self.message_user(
            request,
            f"Deleting the {self.opts.verbose_name} “{name}” in the background.",
            messages.SUCCESS,
        )


class ProjectCascadeDeleteAdmin(admin.ModelAdmin[Project]):
    """A project's delete page and bulk action by the cascade too: counts instead of
    every row of the project, and a deletion a table at a time. Only in the
    request, up to settings.DELETE_INLINE_MAX_ROWS rows: a larger project is refused
    until its large runs and datasets are deleted from its pages (each in the
    background). No audit event: the project's log goes with it (the admin's own
    LogEntry records the deletion)."""

    def _blockers(self, project: Project, cascade: Cascade) -> list[str]:
        blockers = [
            f"Run “{run}” (#{run.pk}) is {run.get_status_display().lower()}: "
            "cancel it or let it finish first."
            for run in Run.objects.filter(project=project, status__in=ACTIVE)
        ]
        if cascade.exceeds(settings.DELETE_INLINE_MAX_ROWS):
            blockers.append(
                f"It has more than {settings.DELETE_INLINE_MAX_ROWS:,} rows to delete, "
                "too many for a request: delete its large runs and datasets from the "
                "project's pages first (they are deleted in the background)."
            )
        return blockers

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[str], list[str]]:
        count = not request.POST.get("post")
        deleted: list[Any] = []
        totals: Counter[str] = Counter()
        perms_needed: set[str] = set()
        protected: list[str] = []
        for project in objs:
            try:
                cascade = _project_cascade(project)
            except ProtectedError as exc:
                protected.append(f"{project}: {exc.args[0]}")
                continue
            protected += [f"{project}: {b}" for b in self._blockers(project, cascade)]
            perms_needed |= _perms_needed(request, cascade)
            deleted.append(str(project))
            if count:
                counts = Counter(
                    {row_label(m): cascade.count(m) for m in cascade.paths}
                )
                deleted.append([f"{n:,} {label}" for label, n in counts.items() if n])
                totals.update(counts)
        return deleted, {k: n for k, n in totals.items() if n}, perms_needed, protected

    def _delete(self, project: Project) -> None:
        # In the admin's transaction: lock the project's runs, so that none starts
        # between the check and the deletion.
        list(Run.objects.select_for_update().filter(project=project))
        cascade = _project_cascade(project)
        if blockers := self._blockers(project, cascade):
            raise PermissionDenied(" ".join(blockers))
        cascade_delete(cascade)

    def delete_model(self, request: HttpRequest, obj: Project) -> None:
        self._delete(obj)

    def delete_queryset(
        self, request: HttpRequest, queryset: QuerySet[Project]
    ) -> None:
        for project in queryset:
            self._delete(project)


def _project_cascade(project: Project) -> Cascade:
    return cascade_collect(
        roots=[Project.objects.filter(pk=project.pk)],
        using=router.db_for_write(Project),
    )


def _perms_needed(request: HttpRequest, cascade: Cascade) -> set[str]:
    """The kinds of row that go (at least one) and the user may not delete, as
    the Collector's check names them."""
    missing: set[str] = set()
    for model in cascade.paths:
        opts = model._meta
        perm = f"{opts.app_label}.{get_permission_codename('delete', opts)}"
        if not request.user.has_perm(perm) and cascade.count(model, 1):
            missing.add(row_label(model))
    return missing
