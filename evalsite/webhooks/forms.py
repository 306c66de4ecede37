from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Q

from evalsite.evals.models import Run
from evalsite.webhooks.events import Event
from evalsite.webhooks.models import Webhook
from evalsite.webhooks.selectors import baseline_choices
from evalsite.webhooks.services import SECRET_HELP


class WebhookForm(forms.Form):
    name = forms.CharField(max_length=200)
    url = forms.CharField(max_length=2000, label="URL")
    secret = forms.CharField(
        required=False,
        label="Signing secret",
        # Never rendered back: the page shows only whether a secret is set.
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=SECRET_HELP + " Stored encrypted and never shown again; leave "
        "empty to keep the current one.",
    )
    events = forms.MultipleChoiceField(
        choices=Event.choices, widget=forms.CheckboxSelectMultiple
    )
    active = forms.BooleanField(required=False, initial=True)
    baseline_run = forms.ModelChoiceField(
        queryset=Run.objects.none(),
        required=False,
        label="Baseline run (for regressions)",
    )
    margin = forms.FloatField(
        initial=0.0,
        min_value=0,
        label="Margin",
        help_text="A regression is sent when the run is worse than the baseline by more "
        "than this, on the whole 95 % interval of the mean difference.",
    )

    def __init__(self, *args: Any, project_id: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Archived runs are not offered, but a webhook keeps the baseline it has.
        runs = baseline_choices(project_id=project_id).filter(
            Q(archived=False) | Q(pk=self.initial.get("baseline_run"))
        )
        self.fields["baseline_run"].queryset = runs  # type: ignore[attr-defined]

    @classmethod
    def for_webhook(cls, webhook: Webhook) -> WebhookForm:
        return cls(
            project_id=webhook.project_id,
            initial={
                "name": webhook.name,
                "url": webhook.url,
                "events": webhook.events,
                "active": webhook.active,
                "baseline_run": webhook.baseline_run_id,
                "margin": webhook.margin,
            },
        )

    def service_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        baseline = data.get("baseline_run")
        return {
            "name": data["name"],
            "url": data["url"],
            "events": data["events"],
            "active": data["active"],
            "secret": data.get("secret") or "",
            "baseline_run_id": baseline.pk if baseline else None,
            "margin": data["margin"] or 0.0,
        }
