"""Forms: judge connections, scorer configs (option fields generated from the kind's
JSON Schema) and the run start form."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q

from evalsite.evals.models import JudgeConnection
from evalsite.evals.scorers.services import SCORER_KINDS
from scoring import KINDS

OPTION_PREFIX = "options."
# Placeholders the prompt editors accept (mirrors the option descriptions in scoring).
PROMPT_PLACEHOLDERS = {
    "custom_rubric": ["{{input}}", "{{output}}", "{{context}}", "{{reference}}"],
    "factuality": ["{{input}}", "{{ideal}}", "{{completion}}"],
}


class ListOptionField(forms.Field):
    """A list-of-texts option in a textarea, one entry per line (a JSON array is read
    too). Shown the same way, so an edit form round-trips it: a plain CharField showed
    the list's Python repr, which saved back as names like "['search'"."""

    widget = forms.Textarea

    def __init__(self, *, split_commas: bool = False, **kwargs: Any) -> None:
        # The option says it is comma-separated (tool names): "a, b" on one line is two.
        self.split_commas = split_commas
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            if all(isinstance(v, str) and "\n" not in v for v in value):
                return "\n".join(value)
            return json.dumps(list(value), ensure_ascii=False)
        return value

    def to_python(self, value: Any) -> list[Any] | None:
        if isinstance(value, list):
            return value
        text = (value or "").strip()
        if not text:
            return None
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValidationError(
                    f"Not a valid JSON array ({exc.msg}); or write one entry per line."
                ) from None
            if not isinstance(parsed, list):
                raise ValidationError("Expected a JSON array, or one entry per line.")
            return parsed
        entries: list[str] = []
        for line in text.splitlines():
            parts = line.split(",") if self.split_commas else [line]
            entries.extend(part.strip() for part in parts if part.strip())
        return entries


class JsonOptionField(forms.Field):
    """A list or object option the generated fields cannot lay out (criteria, tool
    lists with descriptions, sequences of tools): shown as JSON (a list of tool lists
    as one comma-separated line each), read back as JSON when it starts with [ or {,
    else handed as text to the option's own reader (the library reads, e.g., one
    criterion per line), whose error shows on the field."""

    widget = forms.Textarea

    def prepare_value(self, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        if (
            isinstance(value, list)
            and value
            and all(
                isinstance(row, list)
                and row
                and all(isinstance(v, str) and not set(v) & {",", "\n"} for v in row)
                for row in value
            )
        ):
            return "\n".join(", ".join(row) for row in value)
        return json.dumps(value, ensure_ascii=False, indent=2)

    def to_python(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text:
            return None
        if text[0] not in "[{":
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"Not valid JSON: {exc.msg}.") from None


class _NullBooleanSelect(forms.NullBooleanSelect):
    def __init__(self) -> None:
        super().__init__()
        self.choices = [("unknown", "— not set —"), ("true", "Yes"), ("false", "No")]


def _option_fields(
    schema: dict[str, Any], prefix: str, defaults: dict[str, Any]
) -> tuple[dict[str, forms.Field], set[str]]:
    """Form fields for a JSON Schema object: number, integer, boolean, string (and
    nullable variants), and nested objects whose fields get dotted names; and the names
    of the nullable ones."""
    fields: dict[str, forms.Field] = {}
    nullable_names: set[str] = set()
    for name, prop in (schema.get("properties") or {}).items():
        key = f"{prefix}{name}"
        default = defaults.get(name, prop.get("default"))
        types = [prop.get("type")] + [
            alt.get("type") for alt in prop.get("anyOf", []) if isinstance(alt, dict)
        ]
        bounds = next(
            (
                a
                for a in prop.get("anyOf", [])
                if a.get("type") in ("number", "integer")
            ),
            prop,
        )
        nullable = "null" in types
        label = prop.get("title") or name
        help_text = prop.get("description", "")
        if "array" in types or ("object" in types and not prop.get("properties")):
            schema_of: dict[str, Any] = next(
                (a for a in [prop, *prop.get("anyOf", [])] if a.get("type") == "array"),
                {},
            )
            rows = len(default) + 1 if isinstance(default, list) else 3
            if (
                "array" in types
                and (schema_of.get("items") or {}).get("type") == "string"
            ):
                fields[key] = ListOptionField(
                    required=False,
                    label=label,
                    help_text=(help_text + " One per line.").strip(),
                    initial=default,
                    widget=forms.Textarea(attrs={"rows": min(max(rows, 3), 12)}),
                    split_commas="comma" in help_text,
                )
            else:
                fields[key] = JsonOptionField(
                    required=False,
                    label=label,
                    help_text=(help_text + " Or as JSON.").strip(),
                    initial=default,
                    widget=forms.Textarea(attrs={"rows": 6, "class": "json-editor"}),
                )
            if nullable:
                nullable_names.add(key)
            continue
        if "object" in types:
            nested, nested_nullable = _option_fields(
                prop, f"{key}.", default if isinstance(default, dict) else {}
            )
            fields.update(nested)
            nullable_names |= nested_nullable
            continue
        attrs: dict[str, Any] = {}
        if "integer" in types or "number" in types:
            if "minimum" in bounds:
                attrs["min"] = bounds["minimum"]
            if "maximum" in bounds:
                attrs["max"] = bounds["maximum"]
            attrs["step"] = "1" if "integer" in types else "any"
            field_cls = forms.IntegerField if "integer" in types else forms.FloatField
            fields[key] = field_cls(
                required=False,
                label=label,
                help_text=help_text + (" Leave empty for none." if nullable else ""),
                initial=default,
                widget=forms.NumberInput(attrs=attrs),
            )
        elif "boolean" in types and nullable:
            # Unset (None) is its own choice: a checkbox would save it as false.
            fields[key] = forms.NullBooleanField(
                required=False,
                label=label,
                help_text=help_text,
                initial=default,
                widget=_NullBooleanSelect(),
            )
        elif "boolean" in types:
            fields[key] = forms.BooleanField(
                required=False, label=label, help_text=help_text, initial=default
            )
        else:
            multiline = "prompt" in name or (
                isinstance(default, str) and "\n" in default
            )
            widget = (
                forms.Textarea(attrs={"rows": 10, "class": "prompt-editor"})
                if multiline
                else forms.TextInput()
            )
            fields[key] = forms.CharField(
                required=False,
                label=label,
                help_text=help_text,
                initial=default,
                widget=widget,
                strip=False,
            )
        if nullable:
            nullable_names.add(key)
    return fields, nullable_names


class ScorerForm(forms.Form):
    """Name, kind, judge and the kind's option fields (named "options.<dotted path>")."""

    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=[(k, KINDS[k].label) for k in SCORER_KINDS])
    judge = forms.ModelChoiceField(
        queryset=JudgeConnection.objects.none(),
        required=False,
        label="Judge connection",
    )

    def __init__(
        self,
        *args: Any,
        project_id: int,
        kind: str,
        current_options: dict[str, Any] | None = None,
        current_judge_id: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.kind_name = kind if kind in SCORER_KINDS else SCORER_KINDS[0]
        self.spec = KINDS[self.kind_name]
        self.fields["kind"].initial = self.kind_name
        # The kind's label is the default name: evalsite.js replaces it with the new
        # kind's label when the kind changes, unless the name was edited by hand.
        self.fields["name"].widget.attrs["data-default-name"] = self.spec.label
        judge = self.fields["judge"]
        assert isinstance(judge, forms.ModelChoiceField)
        # Archived judges are not offered, but a scorer keeps the one it has.
        judge.queryset = (
            JudgeConnection.objects.filter(project_id=project_id)
            .filter(Q(archived=False) | Q(pk=current_judge_id))
            .order_by("-is_offline", "name")
        )
        self.fields["judge"].required = self.spec.needs_judge
        defaults = current_options or self.spec.defaults
        option_fields, self.nullable_options = _option_fields(
            self.spec.options_schema, OPTION_PREFIX, defaults
        )
        self.option_names = list(option_fields)
        self.fields.update(option_fields)

    @property
    def option_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.option_names]

    @property
    def placeholders(self) -> list[str]:
        return PROMPT_PLACEHOLDERS.get(self.kind_name, [])

    def options(self) -> dict[str, Any]:
        """The submitted options as a nested dict (empty number fields are left out so
        the default applies, unless the option is nullable: then empty means None)."""
        out: dict[str, Any] = {}
        for key in self.option_names:
            value = self.cleaned_data.get(key)
            if value in (None, ""):
                if key in self.nullable_options:
                    value = None
                else:
                    continue
            node = out
            parts = key[len(OPTION_PREFIX) :].split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        return out

    def field_for(self, field: str) -> str | None:
        """The form field that shows a service error on `field` (None: the form)."""
        if field == "options" or not field:
            return None
        if field in self.fields:
            return field
        if field == "judge_id":
            return "judge"
        # e.g. "options.penalties" for a whole nested object
        matches = [n for n in self.option_names if n.startswith(field + ".")]
        return matches[0] if matches else None
