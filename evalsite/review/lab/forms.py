"""Forms of the judge lab."""

from __future__ import annotations

from django import forms

from evalsite.review.lab.services import MAX_TEXT, VERDICTS


class CandidateForm(forms.Form):
    name = forms.CharField(max_length=200)
    rubric = forms.CharField(
        required=False,
        max_length=MAX_TEXT,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="What the judge is told to look for; empty keeps the kind's own prompt.",
    )
    judge_model = forms.CharField(
        required=False,
        max_length=200,
        help_text="Empty: the judge connection's model.",
    )
    judge_temperature = forms.FloatField(
        required=False,
        min_value=0.0,
        max_value=2.0,
        help_text="Empty: the judge connection's temperature.",
    )


class ExampleForm(forms.Form):
    input = forms.CharField(
        required=False, max_length=MAX_TEXT, widget=forms.Textarea(attrs={"rows": 2})
    )
    output = forms.CharField(
        required=False, max_length=MAX_TEXT, widget=forms.Textarea(attrs={"rows": 2})
    )
    context = forms.CharField(
        required=False,
        max_length=MAX_TEXT,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One chunk per line.",
    )
    verdict = forms.ChoiceField(choices=[(v, v) for v in VERDICTS])
    explanation = forms.CharField(
        required=False, max_length=MAX_TEXT, widget=forms.Textarea(attrs={"rows": 2})
    )

    def context_chunks(self) -> list[str]:
        text = self.cleaned_data.get("context") or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class ProposedForm(forms.Form):
    """Insert the proposed examples: all of them, or the one of `item`."""

    item = forms.IntegerField(required=False, min_value=1)


class RemoveForm(forms.Form):
    position = forms.IntegerField(min_value=1)
