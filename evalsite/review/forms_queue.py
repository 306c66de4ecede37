"""Forms for the results explorer (GET filters), queue building and comments."""

from __future__ import annotations

from typing import Any

from django import forms

from evalsite.evals.models import Result, RunScorer
from evalsite.review.selectors_explorer import (
    DEFAULT_SORT,
    Q_MAX_LENGTH,
    SORT_LABELS,
    ResultFilters,
)

PASS_CHOICES = [("", "any"), ("pass", "pass"), ("fail", "fail")]
YES_NO_CHOICES = [("", "any"), ("yes", "yes"), ("no", "no")]
STATUS_CHOICES = [("", "any"), *[(s.value, s.label) for s in Result.Status]]
_TRI = {"pass": True, "fail": False, "yes": True, "no": False, "": None}
PAGE_SIZES = [25, 50, 100]
COMMENT_MAX_LENGTH = 10_000


class ExplorerFilterForm(forms.Form):
    """The explorer's GET parameters. Invalid input is a 400, never a silent default."""

    scorer = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)
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
        empty_value=PAGE_SIZES[1],
        choices=[(n, n) for n in PAGE_SIZES],
        label="Per page",
    )
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(
        self, data: Any = None, *, run_scorers: list[RunScorer], **kwargs: Any
    ) -> None:
        super().__init__(data, **kwargs)
        self.fields["scorer"].choices = [("", "all scorers")] + [
            (rs.pk, rs.name) for rs in run_scorers
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        low, high = data.get("min_score"), data.get("max_score")
        if low is not None and high is not None and low > high:
            self.add_error("max_score", "Must be at least the minimum score.")
        return data

    def to_filters(self) -> ResultFilters:
        data = self.cleaned_data
        return ResultFilters(
            scorer=data.get("scorer"),
            judge_passed=_TRI[data.get("judge") or ""],
            final_passed=_TRI[data.get("final") or ""],
            min_score=data.get("min_score"),
            max_score=data.get("max_score"),
            reviewed=_TRI[data.get("reviewed") or ""],
            overridden=_TRI[data.get("overridden") or ""],
            status=data.get("status") or None,
            mine=bool(data.get("mine")),
            disagree=bool(data.get("disagree")),
            q=data.get("q") or "",
            sort=data.get("sort") or DEFAULT_SORT,
        )


def filters_to_query(filters: ResultFilters) -> dict[str, str]:
    """The inverse of ExplorerFilterForm.to_filters: GET parameters for a link."""
    out: dict[str, str] = {}
    tri = {True: "pass", False: "fail"}
    yes_no = {True: "yes", False: "no"}
    if filters.get("scorer") is not None:
        out["scorer"] = str(filters["scorer"])
    if filters.get("judge_passed") is not None:
        out["judge"] = tri[filters["judge_passed"]]
    if filters.get("final_passed") is not None:
        out["final"] = tri[filters["final_passed"]]
    for key in ("min_score", "max_score"):
        if filters.get(key) is not None:
            out[key] = str(filters[key])
    for key in ("reviewed", "overridden"):
        if filters.get(key) is not None:
            out[key] = yes_no[filters[key]]
    if filters.get("status"):
        out["status"] = str(filters["status"])
    if filters.get("mine"):
        out["mine"] = "on"
    if filters.get("disagree"):
        out["disagree"] = "on"
    if filters.get("q"):
        out["q"] = str(filters["q"])
    if filters.get("sort") and filters["sort"] != DEFAULT_SORT:
        out["sort"] = str(filters["sort"])
    return out


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
