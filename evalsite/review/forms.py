"""Forms of the item page (overrides) and of the what-if rescore page."""

from __future__ import annotations

from typing import Any

from django import forms

from evalsite.review.services import RESCORABLE_OPTIONS
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
        data = super().clean()
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


class CompareForm(forms.Form):
    """?a=<run>&b=<run> of one project and one dataset; scorer = run A's RunScorer id."""

    a = forms.IntegerField(min_value=1, label="Run A (baseline)")
    b = forms.IntegerField(min_value=1, label="Run B (candidate)")
    scorer = forms.IntegerField(required=False, min_value=1)
    only = forms.ChoiceField(
        required=False,
        choices=[
            ("", "All items"),
            ("regressions", "Regressions"),
            ("improvements", "Improvements"),
            ("flips", "Pass/fail flips"),
            ("changed", "Changed"),
        ],
    )
    page = forms.IntegerField(required=False, min_value=1)
    per_page = forms.IntegerField(required=False, min_value=1, max_value=500)

    def __init__(self, *args: Any, project: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        from evalsite.evals.models import Run

        self.runs = list(
            Run.objects.filter(project=project)
            .select_related("dataset")
            .order_by("-created_at", "-id")[:200]
        )

    def _run(self, field_name: str) -> Any:
        from evalsite.evals.models import Run

        pk = self.cleaned_data.get(field_name)
        run = (
            Run.objects.select_related("dataset")
            .filter(project=self.project, pk=pk)
            .first()
        )
        if run is None:
            raise forms.ValidationError("No such run in this project.")
        return run

    def clean_a(self) -> Any:
        return self._run("a")

    def clean_b(self) -> Any:
        return self._run("b")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        a, b = data.get("a"), data.get("b")
        if a is not None and b is not None:
            if a.pk == b.pk:
                self.add_error("b", "Choose two different runs.")
            elif a.dataset_id != b.dataset_id:
                self.add_error(
                    "b",
                    f"Run B is on {b.dataset}, run A on {a.dataset}: compare runs of "
                    "the same dataset.",
                )
        return data
