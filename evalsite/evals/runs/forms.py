"""The run start form."""

from __future__ import annotations

from typing import Any

from django import forms

from evalsite.datasets.models import Dataset
from evalsite.evals.models import ScorerConfig
from evalsite.evals.scorers.services import scorer_fields_missing
from scoring import KINDS


class RunStartForm(forms.Form):
    # Querysets of the form's project: set in __init__.
    dataset: forms.ModelChoiceField[Dataset] = forms.ModelChoiceField(
        queryset=None, empty_label=None
    )
    scorers: forms.ModelMultipleChoiceField[ScorerConfig] = (
        forms.ModelMultipleChoiceField(
            queryset=None, widget=forms.CheckboxSelectMultiple
        )
    )
    name = forms.CharField(max_length=200, required=False)

    def __init__(self, *args: Any, project_id: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        dataset, scorers = self.fields["dataset"], self.fields["scorers"]
        assert isinstance(dataset, forms.ModelChoiceField)
        assert isinstance(scorers, forms.ModelMultipleChoiceField)
        dataset.queryset = Dataset.objects.filter(
            project_id=project_id, archived=False
        ).order_by("-created_at")
        scorers.queryset = (
            ScorerConfig.objects.filter(project_id=project_id, archived=False)
            .select_related("judge")
            .order_by("name")
        )

    def clean(self) -> dict[str, Any]:
        """Refuse a scorer whose required fields no item of the dataset has (a
        conversation, tool calls, a reference, ...): every result would error."""
        data = super().clean() or {}
        dataset, chosen = data.get("dataset"), data.get("scorers")
        if dataset is not None and chosen:
            missing = scorer_fields_missing(
                dataset=dataset, kinds={s.kind for s in chosen}
            )
            for scorer in chosen:
                if scorer.kind in missing:
                    self.add_error(
                        "scorers",
                        f"“{scorer.name}” ({KINDS[scorer.kind].label}) needs "
                        f"{' and '.join(missing[scorer.kind])}, which no item of "
                        f"{dataset} has.",
                    )
        return data
