"""The compare page's form: which runs, how items match, what to list."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django import forms
from django.db.models import Q
from django.http import QueryDict

from evalsite.compare.selectors import ONLY_CHOICES as COMPARE_ONLY_CHOICES
from evalsite.compare.selectors import SIDE_LABELS as COMPARE_SIDE_LABELS
from evalsite.compare.selectors import UNMATCHED_CHOICES

# The compare page names each run by its side: ?a=<baseline>&b=<run>[&c=&d=].
COMPARE_SIDE_PARAMS = tuple(label.lower() for label in COMPARE_SIDE_LABELS)
# The runs list's spelling (?runs=&runs=&order=oldest[&baseline=]), which the page
# answers with a redirect to the ?a=&b= spelling so the baseline is in the URL.
COMPARE_LEGACY_PARAMS = ("runs", "order", "baseline")


class CompareForm(forms.Form):
    """?a=<A>&b=<B>[&c=<C>&d=<D>] of one project (run A the baseline), how items
    match (match=key|input, key=<metadata key>), which other run's items to list
    (against), run A's run scorer (run_scorer), filter, page.

    The runs list sends ?runs=…&runs=…&order=oldest (and optionally baseline=<id>):
    the form resolves that to sides once and `canonical_query` spells it as ?a=&b=,
    which the view redirects to. Every later submit, link and partial then carries
    the sides themselves, never an ordering rule to apply again.
    """

    match = forms.ChoiceField(
        required=False,
        choices=[("key", "By metadata key"), ("input", "By identical input")],
        label="Match items",
    )
    key = forms.CharField(required=False, max_length=100, label="Key")
    against = forms.IntegerField(required=False, min_value=1)
    run_scorer = forms.IntegerField(required=False, min_value=1)
    only = forms.ChoiceField(required=False, choices=COMPARE_ONLY_CHOICES)
    # List the items only one side holds instead of the matched ones.
    unmatched = forms.ChoiceField(required=False, choices=UNMATCHED_CHOICES)
    page = forms.IntegerField(required=False, min_value=1)
    # Keyset paging of the matched items (selectors.compare_rows): the page after
    # (or before) the row of this run A result.
    after = forms.IntegerField(required=False, min_value=1)
    before = forms.IntegerField(required=False, min_value=1)
    per_page = forms.IntegerField(required=False, min_value=1, max_value=500)
    a_item = forms.IntegerField(required=False, min_value=1)
    b_item = forms.IntegerField(required=False, min_value=1)
    # The runs list sends its ticked runs newest first; order=oldest makes the
    # oldest the baseline (A), as a before → after comparison reads, unless the
    # user designated one (baseline=<run id>).
    order = forms.ChoiceField(
        required=False, choices=[("", "as chosen"), ("oldest", "oldest first")]
    )
    baseline = forms.IntegerField(required=False, min_value=1)

    def __init__(self, *args: Any, project: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        data = self.data
        listed = data.getlist("runs") if hasattr(data, "getlist") else []
        sides = [str(data.get(name) or "").strip() for name in COMPARE_SIDE_PARAMS]
        self.legacy = not any(sides) and any(
            name in data for name in COMPARE_LEGACY_PARAMS
        )
        # The optional C and D selects send "" when left empty.
        raw = sides if any(sides) else [str(v).strip() for v in listed]
        self.raw_runs: list[str] = [v for v in raw if v]
        baseline = str(data.get("baseline") or "").strip() if self.legacy else ""
        if baseline and baseline not in self.raw_runs:
            # The designated baseline counts as chosen even when left unticked.
            self.raw_runs.insert(0, baseline)
        self.foreign_run = False

    @cached_property
    def runs(self) -> list[Any]:
        """The project's newest runs, for the selects (read only when rendered)."""
        from evalsite.evals.runs.selectors import runs_listed

        # Archived runs are not offered, unless the link already chose them.
        chosen = [int(r) for r in self.raw_runs if r.isdigit()]
        return list(
            runs_listed(project_id=self.project.pk)
            .filter(Q(archived=False) | Q(pk__in=chosen))
            .select_related("dataset")
            .order_by("-created_at", "-id")[:200]
        )

    @property
    def slots(self) -> list[tuple[str, str, str]]:
        """(side label, its parameter, chosen run id or "") for the A–D selects:
        the resolved sides once valid, else what was sent."""
        cleaned = getattr(self, "cleaned_data", {}) or {}
        if cleaned.get("runs"):
            chosen = [str(r.pk) for r in cleaned["runs"]]
        else:
            chosen = list(self.raw_runs)
        chosen += [""] * (len(COMPARE_SIDE_LABELS) - len(chosen))
        return list(zip(COMPARE_SIDE_LABELS, COMPARE_SIDE_PARAMS, chosen, strict=False))

    def clean(self) -> dict[str, Any]:
        from evalsite.evals.models import Run

        data: dict[str, Any] = super().clean()  # type: ignore[assignment]  # BaseForm.clean returns cleaned_data, never None
        ids: list[int] = []
        for raw in self.raw_runs:
            try:
                ids.append(int(raw))
            except ValueError:
                self.add_error(None, f"{raw!r} is not a run id.")
                return data
        baseline = data.get("baseline") if self.legacy else None
        if not 2 <= len(ids) <= 4:
            self.add_error(None, f"Choose 2 to 4 runs to compare ({len(ids)} chosen).")
            return data
        if len(set(ids)) != len(ids):
            self.add_error(None, "Choose two different runs.")
            return data
        found = Run.objects.select_related("dataset").in_bulk(ids, field_name="pk")
        runs = [found.get(pk) for pk in ids]
        if any(r is None or r.project_id != self.project.pk for r in runs):
            # The view answers 404, as for any other id outside the project.
            self.foreign_run = True
            self.add_error(None, "No such run in this project.")
            return data
        if self.legacy and data.get("order") == "oldest":
            runs.sort(key=lambda r: (r.created_at, r.pk))  # type: ignore[union-attr]  # None refused above
        if baseline is not None:
            runs.sort(key=lambda r: r.pk != baseline)  # type: ignore[union-attr]  # None refused above
        data["runs"] = runs
        data["match"] = data.get("match") or "key"
        data["key"] = (data.get("key") or "").strip() or "id"
        return data

    def canonical_query(self) -> str | None:
        """The ?a=&b= spelling of a runs-list query (None when it is one already,
        or when it names no run the page could show: the errors render instead)."""
        if not self.legacy:
            return None
        if self.is_valid():
            ids = [str(r.pk) for r in self.cleaned_data["runs"]]
        elif len(self.raw_runs) == 1:
            # From a run page's "Compare with other runs": A chosen, B to pick.
            ids = list(self.raw_runs)
        else:
            return None
        query = QueryDict(mutable=True)
        query.update(self.data)
        for name in (*COMPARE_LEGACY_PARAMS, *COMPARE_SIDE_PARAMS):
            query.pop(name, None)
        for name, pk in zip(COMPARE_SIDE_PARAMS, ids, strict=False):
            query[name] = pk
        return str(query.urlencode())
