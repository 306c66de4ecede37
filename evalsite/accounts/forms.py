from __future__ import annotations

from django import forms

from evalsite.accounts.models import Role


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2})
    )


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices)


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
