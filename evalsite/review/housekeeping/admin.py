"""The admin's deletion of the kinds the housekeeping pages delete (runs, datasets,
queues): through the same service, so that it is as scale-safe and as audited.

Django's admin deletes through its Collector, which loads every row it cascades to
(a run's million results) both for the confirmation page and for the deletion; this
counts them with a COUNT per table (evalsite.lib.cascade) and deletes with
object_delete_request (a worker when the rows are too many for a request)."""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, TypeVar

from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from evalsite.core.exceptions import ApplicationError
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
            perms_needed |= self._perms_needed(request, plan)
            deleted.append(str(obj))
            if count:
                deleted.append([f"{n:,} {label}" for label, n in plan.counts.items()])
                totals.update(plan.counts)
        return deleted, dict(totals), perms_needed, protected

    def _perms_needed(self, request: HttpRequest, plan: DeletionPlan) -> set[str]:
        """The kinds of row that go (at least one) and the user may not delete, as
        the Collector's check names them."""
        assert plan.cascade is not None
        missing: set[str] = set()
        for model in plan.cascade.paths:
            opts = model._meta
            perm = f"{opts.app_label}.{get_permission_codename('delete', opts)}"
            if not request.user.has_perm(perm) and plan.cascade.count(model, 1):
                missing.add(row_label(model))
        return missing

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
