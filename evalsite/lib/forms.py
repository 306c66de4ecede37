"""Form helpers shared by the apps' pages."""

from __future__ import annotations

from django import forms

from evalsite.core.exceptions import ApplicationError


def form_add_application_error(form: forms.Form, exc: ApplicationError) -> None:
    """Show a service's error on the form: each field error on its field (when the
    form has it, else above the form), and the message above the form."""
    for field, message in exc.field_errors.items():
        form.add_error(field if field in form.fields else None, message)
    form.add_error(None, exc.message)
