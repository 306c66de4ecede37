from __future__ import annotations

from typing import Any

from django import forms

from evalsite.datasets.agentdata import AGENT_FIELDS, LABELS
from evalsite.datasets.parsing.mapping import escape_delimiter

FORMAT_CHOICES = [
    ("", "Detect from the file name"),
    ("csv", "CSV (delimiter sniffed)"),
    ("jsonl", "JSON Lines (one object per line)"),
    ("json", "JSON array of objects"),
]
_NONE = [("", "— none —")]
# Input and output start unchosen unless a column is named like one: a browser would
# otherwise submit the first column for both, importing output = input unasked.
_CHOOSE = [("", "— choose a column —")]
_AGENT_HELP = {
    "system_prompt": "The agent's instructions (text).",
    "conversation": 'A JSON list of messages: [{"role": "user", "content": "…"}, …].',
    "tool_calls": 'The calls the agent made, in order: [{"name", "arguments", "result"}, …].',
    "expected_tool_calls": "Tool names or calls the agent should make (JSON list).",
    "expected_trajectory": "The expected steps: tool names or calls (JSON list).",
    "baseline_output": "An earlier output to compare with (noise sensitivity).",
}


class UploadForm(forms.Form):
    file = forms.FileField(help_text="CSV, JSON Lines or a JSON array, UTF-8.")
    name = forms.CharField(
        max_length=200,
        required=False,
        help_text="Uploading again under the same name makes a new version. "
        "Defaults to the file name.",
    )
    file_format = forms.ChoiceField(
        choices=FORMAT_CHOICES, required=False, label="Format"
    )


class MappingForm(forms.Form):
    name = forms.CharField(max_length=200)
    input = forms.ChoiceField(
        help_text="The question or prompt.",
        error_messages={"required": "Choose the column that holds the input."},
    )
    output = forms.ChoiceField(
        help_text="The answer to judge.",
        error_messages={"required": "Choose the column that holds the output."},
    )
    context = forms.ChoiceField(required=False, help_text="Retrieved chunks, if any.")
    reference = forms.ChoiceField(required=False, help_text="The ideal answer, if any.")
    context_format = forms.ChoiceField(
        choices=[
            ("json", "JSON array of strings"),
            ("delimited", "Text split on a delimiter"),
        ],
        widget=forms.RadioSelect,
        initial="json",
    )
    context_delimiter = forms.CharField(
        required=False,
        max_length=20,
        strip=False,
        initial="\\n",
        help_text=r"Used with “Text split on a delimiter”. Type \n for a newline, \t for a tab.",
    )

    def __init__(self, *args: Any, columns: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in AGENT_FIELDS:
            self.fields[name] = forms.ChoiceField(
                required=False, label=LABELS[name], help_text=_AGENT_HELP[name]
            )
        choices = [(c, c) for c in columns]
        for name, first in (
            ("input", _CHOOSE),
            ("output", _CHOOSE),
            ("context", _NONE),
            ("reference", _NONE),
            *((name, _NONE) for name in AGENT_FIELDS),
        ):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = first + choices

    @staticmethod
    def initial_from(mapping: dict[str, Any], name: str) -> dict[str, Any]:
        return {
            "name": name,
            "input": mapping.get("input") or "",
            "output": mapping.get("output") or "",
            "context": mapping.get("context") or "",
            "reference": mapping.get("reference") or "",
            "context_format": mapping.get("context_format") or "json",
            "context_delimiter": escape_delimiter(
                mapping.get("context_delimiter") or "\n"
            ),
            **{name: mapping.get(name) or "" for name in AGENT_FIELDS},
        }

    def mapping(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "input": data["input"],
            "output": data["output"],
            "context": data["context"] or None,
            "reference": data["reference"] or None,
            "context_format": data["context_format"],
            "context_delimiter": data["context_delimiter"] or "\\n",
            **{name: data[name] or None for name in AGENT_FIELDS},
        }


class PageForm(forms.Form):
    page = forms.IntegerField(min_value=1, required=False)
