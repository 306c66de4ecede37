"""The form that builds a review queue from the explorer's filters."""

from __future__ import annotations

from django import forms


class QueueCreateForm(forms.Form):
    """Build a queue from the explorer's current filters (sent along as hidden fields)."""

    SOURCES = [
        ("failing", "Review failing cases"),
        ("filters", "Queue these results"),
        ("disagreement", "Disagreement queue"),
        ("stratified", "Stratified sample"),
        ("flagged", "Send flagged to a queue"),
    ]

    source = forms.ChoiceField(choices=SOURCES, initial="failing")
    name = forms.CharField(required=False, max_length=200)
    blind = forms.BooleanField(required=False, label="Blind review")
    assign_round_robin = forms.BooleanField(
        required=False, label="Assign round-robin to reviewers"
    )
    pass_share = forms.FloatField(
        required=False,
        min_value=0.1,
        max_value=100,
        initial=10,
        label="Share of passing results (%)",
    )
    seed = forms.IntegerField(required=False, min_value=0, initial=0)
    overlap = forms.IntegerField(
        required=False, min_value=1, max_value=10, label="Reviewers per result"
    )
    final_rule = forms.ChoiceField(
        required=False,
        choices=[("", "—"), ("majority", "Majority"), ("unanimous", "Unanimous")],
    )
