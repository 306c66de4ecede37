"""The guideline editor's form."""

from __future__ import annotations

from django import forms

from evalsite.review.guidelines.services import GUIDELINE_MAX_LENGTH


class GuidelineForm(forms.Form):
    """Edit one scope's guidelines; `version` is the version the editor started from."""

    body = forms.CharField(
        required=False,
        strip=False,
        max_length=GUIDELINE_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 16}),
        label="Guidelines (markdown)",
    )
    version = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
