"""Review forms: the item page's (overrides, rescore, comments), audit filters, preferences."""

from __future__ import annotations

from typing import Any

from django import forms

from evalsite.evals.results.comments import COMMENT_MAX_LENGTH
from evalsite.evals.results.rescore import RESCORABLE_OPTIONS
from scoring import KINDS


class OverrideForm(forms.Form):
    kind = forms.ChoiceField(
        choices=[("verdict", "Verdict"), ("score", "Score"), ("pass", "Pass/fail")]
    )
    path = forms.CharField(required=False, max_length=200)
    value = forms.CharField(required=False, max_length=100)
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea)
    version = forms.IntegerField(required=False, min_value=0)

    def __init__(self, *args: Any, scorer_kind: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scorer_kind = scorer_kind

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()  # type: ignore[assignment]  # BaseForm.clean returns cleaned_data, never None
        kind, raw = data.get("kind"), (data.get("value") or "").strip()
        if kind is None:
            return data
        if raw == "":
            self.add_error("value", "Choose a value.")
            return data
        if kind == "pass":
            if raw.lower() not in {"pass", "fail", "true", "false"}:
                self.add_error("value", "Pass or fail.")
            else:
                data["value"] = raw.lower() in {"pass", "true"}
        elif kind == "score":
            try:
                data["value"] = float(raw)
            except ValueError:
                self.add_error("value", "Enter a number.")
        else:
            # Boolean fields (context_relevance "used") are posted as "true"/"false".
            pattern = ".".join(
                "*" if p.isdigit() else p for p in (data.get("path") or "").split(".")
            )
            allowed = KINDS[self.scorer_kind].overridable.get(pattern, [])
            if allowed and all(isinstance(a, bool) for a in allowed):
                if raw.lower() not in {"true", "false"}:
                    self.add_error("value", "true or false.")
                else:
                    data["value"] = raw.lower() == "true"
            else:
                data["value"] = raw
        return data


def _flatten(
    schema: dict[str, Any], prefix: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for name, prop in schema.get("properties", {}).items():
        if not prefix and name not in RESCORABLE_OPTIONS:
            continue
        if prop.get("type") == "object":
            out.extend(_flatten(prop, f"{prefix}{name}."))
        else:
            out.append((f"{prefix}{name}", prop))
    return out


class RescoreForm(forms.Form):
    """Number fields generated from KINDS[kind].options_schema (rescorable options only).

    Field names use "__" for nesting ("penalties__unused_high_relevance"); `options()`
    rebuilds the nested dict, merged over the current options.
    """

    def __init__(
        self, *args: Any, kind: str, current: dict[str, Any], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.kind = kind
        self.current = current
        self.paths: dict[str, str] = {}
        for dotted, prop in _flatten(KINDS[kind].options_schema):
            nullable = "anyOf" in prop
            number = prop
            if nullable:
                number = next(
                    (p for p in prop["anyOf"] if p.get("type") == "number"), {}
                )
            name = dotted.replace(".", "__")
            self.paths[name] = dotted
            value: Any = current
            for part in dotted.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            help_text = prop.get("description", "")
            self.fields[name] = forms.FloatField(
                label=prop.get("title") or dotted,
                required=not nullable,
                min_value=number.get("minimum"),
                max_value=number.get("maximum"),
                initial=value,
                help_text=help_text,
                widget=forms.NumberInput(attrs={"step": "any"}),
            )

    def options(self) -> dict[str, Any]:
        """The full options: current ones with the edited fields replaced."""
        import copy

        options = copy.deepcopy(self.current)
        for name, dotted in self.paths.items():
            node = options
            *parents, last = dotted.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = self.cleaned_data.get(name)
        return options


class CommentForm(forms.Form):
    body = forms.CharField(
        max_length=COMMENT_MAX_LENGTH,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Add a comment…"}),
        label="Comment",
    )


class AuditFilterForm(forms.Form):
    action = forms.CharField(required=False, max_length=40)
    page = forms.IntegerField(required=False, min_value=1)


class PreferencesForm(forms.Form):
    keyboard_shortcuts = forms.BooleanField(
        required=False, label="Single-key shortcuts (a, p, f, 1–9, u, j, k, c, ?)"
    )
    advance_after_answer = forms.BooleanField(
        required=False, label="Accept, pass and fail move to the next item"
    )
