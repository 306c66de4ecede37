"""The explorer's forms: filters, bulk actions, saved filters."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.forms.utils import ErrorDict

from evalsite.evals.models import Result, RunScorer
from evalsite.review.explorer.keyset import CursorError, cursor_decode
from evalsite.review.explorer.schemas import ResultQuery, ResultQueryError
from evalsite.review.explorer.selectors import DEFAULT_SORT, Q_MAX_LENGTH, SORT_LABELS

PASS_CHOICES = [("", "any"), ("pass", "pass"), ("fail", "fail")]


YES_NO_CHOICES = [("", "any"), ("yes", "yes"), ("no", "no")]


STATUS_CHOICES = [("", "any"), *[(s.value, s.label) for s in Result.Status]]


PAGE_SIZES = [25, 50, 100, 200]


# A cursor holds a segment number and at most two values (an ISO time or a score, an id).
CURSOR_MAX_LENGTH = 200


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
    uncertain = forms.BooleanField(
        required=False, label="Judge's repeated answers disagree"
    )
    judge_instructions = forms.BooleanField(
        required=False, label="Instructions aimed at the judge"
    )
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
    # Old bookmarks page by number (an offset); the page's own links carry cursors.
    page = forms.IntegerField(required=False, min_value=1)
    after = forms.CharField(required=False, max_length=CURSOR_MAX_LENGTH)
    before = forms.CharField(required=False, max_length=CURSOR_MAX_LENGTH)
    last = forms.BooleanField(required=False)

    def __init__(
        self, data: Any = None, *, run_scorers: list[RunScorer], **kwargs: Any
    ) -> None:
        if data is not None and "scorer" in data and "run_scorer" not in data:
            # A bookmark from before the run scorer rename (?scorer=, a run scorer id): the
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
            return
        self._clean_cursors()

    def _clean_cursors(self) -> None:
        """Decode `after`/`before` for the query's sort: at most one of them, and
        neither with `last`."""
        given = [n for n in ("after", "before") if self.cleaned_data.get(n)]
        if len(given) + bool(self.cleaned_data.get("last")) > 1:
            self._errors["after"] = self.error_class(
                ["Give only one of after, before and last."]
            )
            return
        for name in given:
            try:
                self.cleaned_data[f"{name}_cursor"] = cursor_decode(
                    self.cleaned_data[name], sort=self.query.sort, field=name
                )
            except CursorError as exc:
                self._errors[name] = self.error_class([exc.field_errors[name]])

    @property
    def cursor_params(self) -> dict[str, str]:
        """The paging position as GET parameters (for links that stay on this page)."""
        if not self.is_valid():
            return {}
        out = {
            n: self.cleaned_data[n]
            for n in ("after", "before")
            if self.cleaned_data.get(n)
        }
        if self.cleaned_data.get("last"):
            out["last"] = "1"
        if self.cleaned_data.get("page") and not out:
            out["page"] = str(self.cleaned_data["page"])
        return out


PAGING_FIELDS = ("per_page", "page", "after", "before", "last")


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
    # The page the bar was posted from, to come back to (checked again on the way).
    after = forms.CharField(required=False, max_length=CURSOR_MAX_LENGTH)
    before = forms.CharField(required=False, max_length=CURSOR_MAX_LENGTH)
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
