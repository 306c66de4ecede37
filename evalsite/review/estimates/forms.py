"""Forms of the calibration sample page and the alternative annotator test."""

from __future__ import annotations

from typing import Any

from django import forms

from evalsite.evals.models import RunScorer
from evalsite.review.estimates.services import DEFAULT_FLOOR


class SamplePlanForm(forms.Form):
    """The planner's inputs (GET): which scorer, and the half-width wanted (points)."""

    run_scorer = forms.ModelChoiceField(queryset=RunScorer.objects.none())
    half_width = forms.FloatField(
        min_value=0.1,
        max_value=50,
        initial=3,
        required=False,
        label="Interval half-width wanted (± points)",
    )

    def __init__(self, *args: Any, run_id: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["run_scorer"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = RunScorer.objects.filter(run_id=run_id).order_by(
            "position", "id"
        )


class CalibrationSampleForm(SamplePlanForm):
    DESIGNS = [
        ("active", "Active: more of the results the judge is unsure about"),
        ("stratified", "Stratified: as many from each stratum"),
        ("uniform", "Uniform: every result the same chance"),
    ]
    STRATA = [("verdict", "Judge pass / fail"), ("score_bin", "Score bin (fifths)")]

    design = forms.ChoiceField(choices=DESIGNS, initial="active")
    budget = forms.IntegerField(
        min_value=1, max_value=5000, initial=50, label="Labels to ask for (expected)"
    )
    floor = forms.FloatField(
        min_value=0.01,
        max_value=1,
        initial=DEFAULT_FLOOR,
        required=False,
        label="Floor (active: share of the uniform chance every result keeps)",
    )
    strata = forms.ChoiceField(choices=STRATA, initial="verdict", required=False)
    seed = forms.IntegerField(min_value=0, initial=0, required=False)
    name = forms.CharField(max_length=200, required=False)
    blind = forms.BooleanField(
        required=False, initial=True, label="Blind (hide the judge until answered)"
    )
    overlap = forms.IntegerField(
        min_value=1, max_value=10, required=False, label="Reviewers per result"
    )
    assign_round_robin = forms.BooleanField(
        required=False, label="Assign round-robin to reviewers"
    )


class AlternativeTestForm(forms.Form):
    epsilon = forms.FloatField(
        min_value=0, max_value=1, initial=0.1, required=False, label="Margin ε"
    )


class DetectForm(forms.Form):
    """The compare page's difference to plan labels for, in pass-rate points."""

    detect = forms.FloatField(min_value=0.1, max_value=100, required=False)
