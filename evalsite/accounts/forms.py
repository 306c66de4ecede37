from __future__ import annotations

from django import forms

from evalsite.accounts.models import MAX_OVERLAP, Role
from evalsite.accounts.selectors import AuditFilters
from evalsite.accounts.services import (
    INVITATION_DAYS_DEFAULT,
    INVITATION_DAYS_MAX,
    PASSWORD_MAX_LENGTH,
)
from evalsite.core.exceptions import ApplicationError


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2})
    )


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.REVIEWER)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class MemberCreateForm(forms.Form):
    """A new account added to the project; an empty password makes one up."""

    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False, max_length=254)
    # Not stripped: a password is what it is.
    password = forms.CharField(
        required=False, max_length=PASSWORD_MAX_LENGTH, strip=False
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.REVIEWER)


class InvitationForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.REVIEWER)
    email = forms.EmailField(required=False, max_length=254)
    days = forms.IntegerField(
        min_value=1, max_value=INVITATION_DAYS_MAX, initial=INVITATION_DAYS_DEFAULT
    )


class InvitationSignupForm(forms.Form):
    """A visitor's new account, made through an invitation link."""

    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False, max_length=254)
    password = forms.CharField(max_length=PASSWORD_MAX_LENGTH, strip=False)
    password2 = forms.CharField(
        max_length=PASSWORD_MAX_LENGTH, strip=False, label="Password again"
    )

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if (
            data.get("password")
            and data.get("password2")
            and data["password"] != data["password2"]
        ):
            self.add_error("password2", "The two passwords differ.")
        return data


class AccessLogForm(forms.Form):
    """The access log's page number (a fragment's GET parameters)."""

    page = forms.IntegerField(required=False, min_value=1, max_value=10**6)


class AuditLogForm(forms.Form):
    """The audit log's filters and page (GET parameters of the page, its fragments
    and its CSV export)."""

    action = forms.CharField(required=False, max_length=40)
    actor = forms.CharField(required=False, max_length=150)
    object_type = forms.CharField(required=False, max_length=40)
    since = forms.DateField(required=False)
    until = forms.DateField(required=False)
    page = forms.IntegerField(required=False, min_value=1, max_value=10**6)

    def filters(self) -> AuditFilters:
        """The cleaned filters (call after is_valid())."""
        data = self.cleaned_data
        return AuditFilters(
            action=data.get("action") or "",
            actor=data.get("actor") or "",
            object_type=data.get("object_type") or "",
            since=data.get("since"),
            until=data.get("until"),
        )


def form_add_application_error(form: forms.Form, exc: ApplicationError) -> None:
    """Show a service's error on the form: each field error on its field (when the
    form has it), and the message above the form."""
    for field, message in exc.field_errors.items():
        form.add_error(field if field in form.fields else None, message)
    form.add_error(None, exc.message)


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, initial="default")


class ProjectSettingsForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    blind_review = forms.BooleanField(required=False)
    reviewers_can_start_runs = forms.BooleanField(required=False)
    reviewers_can_save_rescore = forms.BooleanField(required=False)
    default_overlap = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_OVERLAP, initial=1
    )
