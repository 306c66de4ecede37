"""The judge connection form."""

from __future__ import annotations

from django import forms

from evalsite.evals.judges.services import EDITABLE_FIELDS
from evalsite.evals.models import JudgeConnection


class JudgeForm(forms.Form):
    name = forms.CharField(max_length=200)
    base_url = forms.CharField(max_length=500, label="Base URL")
    model = forms.CharField(max_length=200)
    api_key = forms.CharField(
        required=False,
        label="API key",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        # "Leave empty to keep the current key" is the edit form's (the template adds
        # it when a key is set): a new connection has no key to keep.
        help_text=(
            "Stored encrypted and never shown again, and only sent to this base URL."
        ),
    )
    api_key_env = forms.CharField(
        required=False,
        max_length=100,
        label="…or the name of an environment variable holding it",
        help_text=(
            "Only names this server allows for this base URL's host, e.g. "
            "OPENAI_API_KEY for https://api.openai.com/v1."
        ),
    )
    clear_api_key = forms.BooleanField(required=False, label="Remove the stored key")
    temperature = forms.FloatField(initial=0.0, min_value=0, max_value=2)
    timeout_seconds = forms.FloatField(
        initial=60.0, min_value=0.1, max_value=600, label="Timeout (s)"
    )
    max_concurrency = forms.IntegerField(
        initial=8, min_value=1, max_value=1000, label="Max concurrent requests"
    )
    requests_per_minute = forms.IntegerField(
        initial=600,
        min_value=0,
        max_value=1_000_000,
        label="Requests per minute (0 = no limit)",
    )
    price_per_1k_input = forms.DecimalField(
        required=False,
        min_value=0,
        decimal_places=6,
        label="Price per 1k input tokens (USD)",
    )
    price_per_1k_output = forms.DecimalField(
        required=False,
        min_value=0,
        decimal_places=6,
        label="Price per 1k output tokens (USD)",
    )

    @classmethod
    def for_judge(cls, judge: JudgeConnection) -> JudgeForm:
        # The key fields start empty: the key is write-only.
        return cls(
            initial={name: getattr(judge, name) for name in EDITABLE_FIELDS}
            | {"api_key_env": judge.api_key_env}
        )
