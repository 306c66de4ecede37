"""Archive, unarchive and delete buttons' views, and the deletion's confirmation."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.lib.htmx import redirect_htmx, vary_on_htmx
from evalsite.review.housekeeping import services
from evalsite.review.housekeeping.selectors import (
    KIND_INFO,
    DeletionPlan,
    Kind,
    archive_needs_owner,
    deletion_plan,
    housekeeping_get_for_user,
    kind_of,
    object_label,
)


def _list_url(kind: Kind, project_id: int, *, archived: bool = False) -> str:
    url = reverse(KIND_INFO[kind].list_url, args=[project_id])
    return f"{url}?archived=1" if archived else url


def _back(request: AuthenticatedHttpRequest, fallback: str) -> str:
    """Where the button was pressed (a same-site `next`), else `fallback`."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback


def _set_archived(
    request: AuthenticatedHttpRequest,
    project_id: int,
    kind_name: str,
    pk: int,
    archived: bool,
) -> HttpResponse:
    kind = kind_of(kind_name)
    obj = housekeeping_get_for_user(
        user=request.user,
        kind=kind,
        pk=pk,
        project_id=project_id,
        write=True,
        manage=archive_needs_owner(kind),
    )
    noun = KIND_INFO[kind].noun
    label = object_label(kind, obj)
    try:
        services.object_set_archived(
            kind=kind, obj=obj, user=request.user, archived=archived
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        verb = "archived" if archived else "unarchived"
        messages.success(request, f"The {noun} “{label}” is {verb}.")
    # Unarchiving from the archived list goes back there; archiving from the list
    # stays on the (active) list.
    return redirect_htmx(request, _back(request, _list_url(kind, project_id)))


@require_POST
@vary_on_htmx
def object_archive(
    request: AuthenticatedHttpRequest, project_id: int, kind: str, pk: int
) -> HttpResponse:
    return _set_archived(request, project_id, kind, pk, True)


@require_POST
@vary_on_htmx
def object_unarchive(
    request: AuthenticatedHttpRequest, project_id: int, kind: str, pk: int
) -> HttpResponse:
    return _set_archived(request, project_id, kind, pk, False)


@require_http_methods(["GET", "POST"])
def object_delete(
    request: AuthenticatedHttpRequest, project_id: int, kind: str, pk: int
) -> HttpResponse:
    """GET: what goes with the object, and the confirmation form; POST: delete it
    once the user typed its name."""
    the_kind = kind_of(kind)
    obj = housekeeping_get_for_user(
        user=request.user, kind=the_kind, pk=pk, project_id=project_id, manage=True
    )
    context: dict[str, Any] = {
        "project": obj.project,
        "noun": KIND_INFO[the_kind].noun,
        "cancel_url": _list_url(the_kind, project_id, archived=obj.archived),
    }
    status = 200
    if request.method == "POST":
        typed = request.POST.get("confirm", "").strip()
        # The name alone, not the plan: the deletion counts again in its transaction.
        name = object_label(the_kind, obj)
        if typed != name:
            context["confirm_error"] = (
                f"Type the name “{name}” exactly to confirm the deletion."
            )
            context["typed"] = typed
            status = 400
        else:
            try:
                done = services.object_delete_request(
                    kind=the_kind, obj=obj, user=request.user
                )
            except ApplicationError as exc:
                context["error"] = exc.message
                status = exc.status_code
            else:
                if done.background:
                    messages.success(
                        request,
                        f"Deleting the {context['noun']} “{done.name}” in the "
                        "background: it is hidden from lists until it is gone.",
                    )
                else:
                    messages.success(
                        request,
                        f"Deleted the {context['noun']} “{done.name}” and "
                        f"{done.total - 1:,} rows that went with it.",
                    )
                return redirect_htmx(request, _list_url(the_kind, project_id))
    if getattr(obj, "deleting", False):
        # Nothing to count or confirm: a worker is deleting it.
        context["plan"] = DeletionPlan(
            kind=the_kind,
            obj=obj,
            name=object_label(the_kind, obj),
            blockers=["It is being deleted in the background."],
        )
    else:
        context["plan"] = deletion_plan(kind=the_kind, obj=obj)
    return render(request, "review/housekeeping/delete.html", context, status=status)
