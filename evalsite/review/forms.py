"""Review forms: overrides, rescore, explorer filters, queues, comments, audit filters."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.forms.utils import ErrorDict

from evalsite.evals.models import Result, RunScorer
from evalsite.evals.results.comments import COMMENT_MAX_LENGTH
from evalsite.evals.results.rescore import RESCORABLE_OPTIONS
from evalsite.review.explorer.selectors import DEFAULT_SORT, Q_MAX_LENGTH, SORT_LABELS
from evalsite.review.guidelines.services import GUIDELINE_MAX_LENGTH
from evalsite.review.schemas import ResultQuery, ResultQueryError
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


PASS_CHOICES = [("", "any"), ("pass", "pass"), ("fail", "fail")]


YES_NO_CHOICES = [("", "any"), ("yes", "yes"), ("no", "no")]


STATUS_CHOICES = [("", "any"), *[(s.value, s.label) for s in Result.Status]]


PAGE_SIZES = [25, 50, 100, 200]


class ExplorerFilterForm(forms.Form):
    """The explorer's filter widgets and its paging. Invalid input is a 400, never a
    silent default.

    The filters are parsed by `ResultQuery.from_querydict` (as in the API, queues and
    exports), so `is_valid()` leaves the result in `self.query`; the filter fields
    below only render the widgets. The form itself parses `page` and `per_page`.
    """

    run_scorer = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="Scorer"
    )
    judge = forms.ChoiceField(
        required=False, choices=PASS_CHOICES, label="Judge verdict"
    )
    final = forms.ChoiceField(
        required=False, choices=PASS_CHOICES, label="Final verdict"
    )
    min_score = forms.FloatField(required=False, label="Final score ≥")
    max_score = forms.FloatField(required=False, label="Final score ≤")
    reviewed = forms.ChoiceField(required=False, choices=YES_NO_CHOICES)
    overridden = forms.ChoiceField(required=False, choices=YES_NO_CHOICES)
    status = forms.ChoiceField(required=False, choices=STATUS_CHOICES)
    mine = forms.BooleanField(required=False, label="Assigned to me")
    disagree = forms.BooleanField(required=False, label="Human disagrees with judge")
    q = forms.CharField(
        required=False, max_length=Q_MAX_LENGTH, strip=True, label="Search"
    )
    sort = forms.ChoiceField(
        required=False, choices=list(SORT_LABELS.items()), initial=DEFAULT_SORT
    )
    per_page = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=PAGE_SIZES[1],  # type: ignore[arg-type]  # stubs say str; Django passes any value through
        choices=[(n, n) for n in PAGE_SIZES],
        label="Per page",
    )
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(
        self, data: Any = None, *, run_scorers: list[RunScorer], **kwargs: Any
    ) -> None:
        if data is not None and "scorer" in data and "run_scorer" not in data:
            # A bookmark from before issue 26 (?scorer=, a run scorer id): the
            # select shows it as ResultQuery reads it.
            data = data.copy()
            data["run_scorer"] = data["scorer"]
        super().__init__(data, **kwargs)
        self.run_scorers = run_scorers
        self.query = ResultQuery()
        cast(forms.ChoiceField, self.fields["run_scorer"]).choices = [
            ("", "all scorers")
        ] + [(rs.pk, rs.name) for rs in run_scorers]

    def full_clean(self) -> None:
        self._errors = ErrorDict()
        self.cleaned_data = {}
        if not self.is_bound:
            return
        for name in PAGING_FIELDS:
            field = self.fields[name]
            raw = field.widget.value_from_datadict(
                self.data, self.files, self.add_prefix(name)
            )
            try:
                self.cleaned_data[name] = field.clean(raw)
            except forms.ValidationError as exc:
                self._errors[name] = self.error_class(exc.messages)
        try:
            self.query = ResultQuery.from_querydict(
                self.data, run_scorers=self.run_scorers
            )
        except ResultQueryError as exc:
            for name, message in exc.field_errors.items():
                self._errors[name] = self.error_class([message])


PAGING_FIELDS = ("per_page", "page")


class QueueCreateForm(forms.Form):
    """Build a queue from the explorer's current filters (sent along as hidden fields)."""

    SOURCES = [
        ("failing", "Review failing cases"),
        ("filters", "Queue these results"),
        ("disagreement", "Disagreement queue"),
        ("stratified", "Stratified sample"),
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


SELECTION_SCOPES = [
    ("selected", "The selected results"),
    ("all", "Every result matching this filter"),
]

BULK_ACTIONS = [
    ("accept", "Accept"),
    ("assign", "Assign"),
    ("queue", "Add to a queue"),
    ("export_csv", "Export CSV"),
    ("export_excel", "Export CSV (Excel)"),
    ("export_jsonl", "Export JSONL"),
    ("export_parquet", "Export Parquet"),
]

# The assignee choice that means "nobody" (a username never starts with "-").
UNASSIGN = "-"


class ResultIdsField(forms.Field):
    """Repeated `ids` parameters as a list of positive ids (not yet checked to be the
    run's: the bulk services do that)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[int]:
        ids = []
        for raw in value or []:
            try:
                pk = int(str(raw).strip())
            except ValueError:
                raise forms.ValidationError(f"{raw!r} is not a result id.") from None
            if not 1 <= pk < 2**63:
                raise forms.ValidationError(f"{raw!r} is not a result id.")
            ids.append(pk)
        return ids


class BulkActionForm(forms.Form):
    """The explorer's bulk action bar. The filter it acts on ("all matching") is sent
    along as hidden fields and parsed by ResultQuery.from_querydict, like the queue
    form's."""

    action = forms.ChoiceField(choices=BULK_ACTIONS)
    scope = forms.ChoiceField(choices=SELECTION_SCOPES, initial="selected")
    ids = ResultIdsField(required=False)
    assign_to = forms.CharField(required=False, max_length=150)
    queue = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="Queue"
    )
    queue_name = forms.CharField(required=False, max_length=200, label="New queue name")
    blind = forms.BooleanField(required=False, label="Blind review")
    page = forms.IntegerField(required=False, min_value=1)
    per_page = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=PAGE_SIZES[1],  # type: ignore[arg-type]  # stubs say str; Django passes any value through
        choices=[(n, n) for n in PAGE_SIZES],
    )

    def __init__(
        self, data: Any = None, *, queue_ids: list[int] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(data, **kwargs)
        cast(forms.ChoiceField, self.fields["queue"]).choices = [
            ("", "a new queue")
        ] + [(pk, pk) for pk in queue_ids or []]

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()  # type: ignore[assignment]  # BaseForm.clean returns cleaned_data, never None
        if data.get("scope") == "selected" and "ids" in data and not data["ids"]:
            self.add_error("ids", "Select at least one result.")
        if data.get("action") == "assign" and not data.get("assign_to"):
            self.add_error("assign_to", "Choose whom to assign them to.")
        return data


class SavedFilterForm(forms.Form):
    """Save the explorer's current filter (sent along as hidden fields) under a name."""

    name = forms.CharField(max_length=100, strip=True, label="Name")


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


class PreferencesForm(forms.Form):
    keyboard_shortcuts = forms.BooleanField(
        required=False, label="Single-key shortcuts (a, p, f, 1–9, u, j, k, c, ?)"
    )
    advance_after_answer = forms.BooleanField(
        required=False, label="Accept, pass and fail move to the next item"
    )
