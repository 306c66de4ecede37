"""The bias audit start form."""

from __future__ import annotations

from typing import Any

from django import forms

from evalsite.evals.audits.services import (
    DEFAULT_SAMPLE_SIZE,
    MAX_SAMPLE_SIZE,
    MAX_SEED,
)
from evalsite.evals.models import Run, RunScorer
from scoring import KINDS


class BiasAuditStartForm(forms.Form):
    # The run's judged scorers: set in __init__.
    run_scorer: forms.ModelChoiceField[RunScorer] = forms.ModelChoiceField(
        queryset=None, empty_label=None, label="Scorer"
    )
    sample_size = forms.IntegerField(
        min_value=1, max_value=MAX_SAMPLE_SIZE, initial=DEFAULT_SAMPLE_SIZE
    )
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0)

    def __init__(self, *args: Any, run: Run, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["run_scorer"]
        assert isinstance(field, forms.ModelChoiceField)
        judged = [k for k, spec in KINDS.items() if spec.needs_judge]
        field.queryset = RunScorer.objects.filter(
            run=run, kind__in=judged, perturbation=""
        ).order_by("position", "id")
