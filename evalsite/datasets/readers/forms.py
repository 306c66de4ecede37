"""Forms of the Import page: the file and tool, then the preview's choices."""

from __future__ import annotations

from typing import Any

from django import forms

from evalsite.datasets.readers.base import TOOL_LABELS, TOOLS

TOOL_CHOICES = [("", "Detect from the file"), *[(t, TOOL_LABELS[t]) for t in TOOLS]]


class ImportForm(forms.Form):
    file = forms.FileField(
        help_text="promptfoo's results.json, or a Langfuse or LangSmith dataset export "
        "(CSV, JSON or JSON Lines), UTF-8."
    )
    tool = forms.ChoiceField(
        choices=TOOL_CHOICES,
        required=False,
        label="Format",
        help_text="Detected from the file unless you choose.",
    )
    name = forms.CharField(
        max_length=200,
        required=False,
        help_text="The dataset's name; importing again under a name makes a new "
        "version. Defaults to the file name.",
    )


class PreviewOptionsForm(forms.Form):
    """GET parameters of the preview: another tool or input var than detected."""

    tool = forms.ChoiceField(choices=TOOL_CHOICES, required=False, label="Format")
    input_var = forms.CharField(max_length=200, required=False, label="Input")


class ConfirmForm(forms.Form):
    name = forms.CharField(max_length=200)
    run_name = forms.CharField(
        max_length=200,
        required=False,
        label="Run name",
        help_text="The finished run that holds the file's grades.",
    )
    tool = forms.ChoiceField(
        choices=TOOL_CHOICES, required=False, widget=forms.HiddenInput
    )
    input_var = forms.CharField(
        max_length=200, required=False, widget=forms.HiddenInput
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].widget.attrs["autocomplete"] = "off"
