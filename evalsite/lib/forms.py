"""Form helpers shared by the apps' pages."""

from __future__ import annotations

from collections.abc import Callable

from django import forms

from evalsite.core.exceptions import ApplicationError


def form_add_application_error(
    form: forms.Form,
    exc: ApplicationError,
    *,
    field_for: Callable[[str], str | None] | None = None,
    message: bool = True,
) -> None:
    """Show a service's error on the form: each field error on its field (when the
    form has it, else above the form), and the message above the form.

    `field_for` maps the service's field name to the form's, for forms whose fields
    are named otherwise (None: above the form). `message=False` leaves the message out,
    for pages that show it elsewhere."""
    for field, text in exc.field_errors.items():
        name = field_for(field) if field_for is not None else field
        form.add_error(name if name in form.fields else None, text)
    if message:
        form.add_error(None, exc.message)
