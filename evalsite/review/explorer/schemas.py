"""The one query over a run's results (explorer, queues, exports, API) and the explorer API's schemas."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, cast

from django.urls import reverse
from ninja import Schema
from pydantic import (
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from evalsite.core.exceptions import ApplicationError
from evalsite.core.pagination import MAX_OFFSET
from evalsite.core.schemas import ObjectId
from evalsite.evals.models import RunScorer
from evalsite.review.explorer.selectors import DEFAULT_SORT, Q_MAX_LENGTH, SORTS
from evalsite.review.models import SavedFilter

if TYPE_CHECKING:
    # Only a type here: bulk.py imports this module's ResultQuery.
    from evalsite.review.explorer.bulk import BulkOutcome

ResultStatus = Literal["pending", "ok", "error", "cancelled"]


SortKey = Literal[tuple(SORTS)]  # type: ignore[valid-type]


RENAMED_SCORER_ID = (
    "scorer_id is now run_scorer_id (the run scorer's id, as in GET /api/runs/{id} "
    "scorers[].id); scorer_id names only a scorer config."
)


class ResultQuery(Schema):
    """The one query over a run's results: the explorer page, its htmx fragment, the
    queue builder, both exports and GET /api/runs/{id}/results all parse into this and
    filter through `selectors.explorer.results_filter`.

    Field names are the API's. `from_querydict` also reads the explorer's spellings
    (run_scorer, judge, final, mine: see QUERY_ALIASES), so bookmarked explorer URLs
    keep working. `run_scorer_id` is a run scorer id (as in the run's aggregates;
    the explorer's old `scorer` still reads as it); `scorer_id`, which meant the same
    before the run scorer rename, is refused so it is never read as a scorer config's id; `passed`
    is the final (human-adjusted) verdict.
    """

    run_scorer_id: ObjectId | None = None
    scorer_id: SkipJsonSchema[Any] = Field(default=None, exclude=True)
    passed: bool | None = None
    judge_passed: bool | None = None
    reviewed: bool | None = None
    overridden: bool | None = None
    disagree: bool | None = None
    uncertain: bool | None = Field(
        default=None,
        description="Only results whose judge, asked several times, gave answers "
        "that disagree (judge_uncertainty > 0).",
    )
    # Only results whose item's text holds instructions aimed at the judge.
    judge_instructions: bool | None = None
    status: ResultStatus | None = None
    q: str | None = Field(default=None, max_length=Q_MAX_LENGTH)
    # Finite only: a queue stores its filters as JSON, which has no NaN or infinity.
    min_score: float | None = Field(default=None, allow_inf_nan=False)
    max_score: float | None = Field(default=None, allow_inf_nan=False)
    assignee: Literal["me"] | None = None
    sort: SortKey = DEFAULT_SORT  # type: ignore[valid-type]

    @field_validator("scorer_id")
    @classmethod
    def _renamed(cls, value: Any) -> None:
        if value is not None:
            raise ValueError(RENAMED_SCORER_ID)
        return None

    @model_validator(mode="after")
    def _range(self) -> ResultQuery:
        if (
            self.min_score is not None
            and self.max_score is not None
            and self.min_score > self.max_score
        ):
            raise ValueError("min_score must not exceed max_score")
        return self

    @classmethod
    def from_querydict(
        cls, query: Mapping[str, Any], *, run_scorers: Iterable[RunScorer] | None = None
    ) -> ResultQuery:
        """Parse GET or POST parameters in either spelling (API or explorer).

        Empty values mean "any". `run_scorers`, when given, limits `scorer` to the
        run's own scorers (the explorer's select offers no other). An invalid value is
        a ResultQueryError naming the parameter as it was sent.
        """
        data: dict[str, Any] = {}
        sent_as: dict[str, str] = {}
        for name, (field, convert) in QUERY_ALIASES.items():
            raw = query.get(name)
            if raw is None or field in data:
                continue
            if "\x00" in str(raw):
                # As Django's form fields do; the API reaches text_check_storable.
                raise ResultQueryError(
                    f"Invalid filter {name}: Null characters are not allowed.",
                    field_errors={name: "Null characters are not allowed."},
                )
            value = convert(str(raw))
            if value is not None:
                data[field], sent_as[field] = value, name
        if run_scorers is not None and "run_scorer_id" in data:
            allowed = {str(rs.pk) for rs in run_scorers}
            if str(data["run_scorer_id"]) not in allowed:
                name = sent_as["run_scorer_id"]
                raise ResultQueryError(
                    f"Invalid filter {name}: not one of this run's scorers.",
                    field_errors={name: "Not one of this run's scorers."},
                )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            errors: dict[str, str] = {}
            for error in exc.errors():
                loc = error["loc"]
                # The range check has no field of its own: the upper bound is named.
                name = sent_as.get(str(loc[0]), str(loc[0])) if loc else "max_score"
                errors.setdefault(name, error["msg"])
            first, message = next(iter(errors.items()))
            raise ResultQueryError(
                f"Invalid filter {first}: {message}", field_errors=errors
            ) from None

    @property
    def mine(self) -> bool:
        return self.assignee == "me"

    def is_filtered(self) -> bool:
        """Whether the query narrows the run (sorting does not)."""
        return bool(self.to_json().keys() - {"sort"})

    def to_json(self) -> dict[str, Any]:
        """The constraining keys, as a queue stores them (ReviewQueue.filters keeps
        the names run_scorer, final_passed, mine)."""
        out: dict[str, Any] = {}
        # Only the query's own fields: subclasses add paging (limit) or format (excel).
        for field, value in self.model_dump(
            include=set(ResultQuery.model_fields)
        ).items():
            if (
                value is None
                or value == ""
                or (
                    field in ("disagree", "uncertain", "judge_instructions")
                    and not value
                )
            ):
                continue
            if field == "sort" and value == DEFAULT_SORT:
                continue
            out[_STORED_NAMES.get(field, field)] = value
        if out.pop("assignee", None) == "me":
            out["mine"] = True
        return out

    def to_querydict(self) -> dict[str, str]:
        """GET parameters for an explorer link, in the explorer's own spelling (the
        inverse of from_querydict)."""
        verdict = {True: "pass", False: "fail"}
        yes_no = {True: "yes", False: "no"}
        out: dict[str, str] = {}
        if self.run_scorer_id is not None:
            out["run_scorer"] = str(self.run_scorer_id)
        if self.judge_passed is not None:
            out["judge"] = verdict[self.judge_passed]
        if self.passed is not None:
            out["final"] = verdict[self.passed]
        for key in ("min_score", "max_score"):
            if getattr(self, key) is not None:
                out[key] = str(getattr(self, key))
        for key in ("reviewed", "overridden"):
            if getattr(self, key) is not None:
                out[key] = yes_no[getattr(self, key)]
        if self.status:
            out["status"] = self.status
        if self.mine:
            out["mine"] = "on"
        if self.disagree:
            out["disagree"] = "on"
        if self.uncertain:
            out["uncertain"] = "on"
        if self.judge_instructions:
            out["judge_instructions"] = "on"
        if self.q:
            out["q"] = self.q
        if self.sort != DEFAULT_SORT:
            out["sort"] = self.sort
        return out


class ResultQueryError(ApplicationError):
    """A filter parameter that does not parse (400 on pages; ninja gives the API 422)."""


def _text(raw: str) -> str | None:
    return raw.strip() or None


def _verdict(raw: str) -> str | None:
    """The explorer's pass/fail, or the API's true/false (pydantic parses the rest)."""
    raw = raw.strip()
    return {"pass": "true", "fail": "false"}.get(raw.lower(), raw) or None


def _checkbox(raw: str) -> bool | None:
    """An HTML checkbox ("on"), read the way Django's BooleanField reads it."""
    return True if raw.strip().lower() not in ("", "false", "0") else None


def _me(raw: str) -> str | None:
    return "me" if _checkbox(raw) else None


# Parameter -> (ResultQuery field, raw string -> value or None for "any"). The API's
# names come first, so they win when a request sends both spellings.
QUERY_ALIASES: dict[str, tuple[str, Callable[[str], Any]]] = {
    "run_scorer_id": ("run_scorer_id", _text),
    "run_scorer": ("run_scorer_id", _text),
    # The explorer's name before the run scorer rename: kept for bookmarks and saved filters.
    "scorer": ("run_scorer_id", _text),
    # Refused by ResultQuery with RENAMED_SCORER_ID.
    "scorer_id": ("scorer_id", _text),
    "passed": ("passed", _verdict),
    "final": ("passed", _verdict),
    "judge_passed": ("judge_passed", _verdict),
    "judge": ("judge_passed", _verdict),
    "reviewed": ("reviewed", _verdict),
    "overridden": ("overridden", _verdict),
    "disagree": ("disagree", _checkbox),
    "uncertain": ("uncertain", _checkbox),
    "judge_instructions": ("judge_instructions", _checkbox),
    "status": ("status", _text),
    "q": ("q", _text),
    "min_score": ("min_score", _text),
    "max_score": ("max_score", _text),
    "assignee": ("assignee", _text),
    "mine": ("assignee", _me),
    "sort": ("sort", _text),
}


# ResultQuery field -> the key a stored queue filter has always used.
_STORED_NAMES = {"run_scorer_id": "run_scorer", "passed": "final_passed"}


class ResultListIn(ResultQuery):
    """The query plus limit/offset (the exports use ResultQuery without them)."""

    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    after: str | None = Field(
        default=None,
        max_length=200,
        description="A `next` cursor from the previous response: the page after it "
        "(keyset paging reaches every result, however deep; offset stops at "
        f"{MAX_OFFSET}).",
    )
    before: str | None = Field(
        default=None,
        max_length=200,
        description="A `previous` cursor: the page before it.",
    )

    @model_validator(mode="after")
    def _one_position(self) -> ResultListIn:
        if self.after and self.before:
            raise ValueError("give after or before, not both")
        if (self.after or self.before) and self.offset:
            raise ValueError("a cursor (after/before) replaces offset")
        return self


class ResultRowOut(Schema):
    id: int
    run_id: int
    item_id: int
    item_index: int
    run_scorer_id: int
    scorer_name: str
    kind: str
    status: str
    error: str
    judge_score: float | None
    final_score: float | None
    judge_passed: bool | None
    final_passed: bool | None
    human_passed: bool | None
    reviewed: bool
    overridden: bool
    score_overridden: bool
    pass_overridden: bool
    assignee: str | None
    reason: str
    updated_at: datetime

    # Resolved from the select_related row, so a page costs one query.
    @staticmethod
    def resolve_item_index(obj: Any) -> int:
        return cast(int, obj.item.index)

    @staticmethod
    def resolve_scorer_name(obj: Any) -> str:
        return cast(str, obj.run_scorer.name)

    @staticmethod
    def resolve_kind(obj: Any) -> str:
        return cast(str, obj.run_scorer.kind)

    @staticmethod
    def resolve_assignee(obj: Any) -> str | None:
        return obj.assignee.get_username() if obj.assignee_id else None


class ResultPageOut(Schema):
    count: int
    items: list[ResultRowOut]
    next: str | None = Field(
        None,
        description="Cursor of the next page (pass it as `after`); null at the end.",
    )
    previous: str | None = Field(
        None,
        description="Cursor of the previous page (pass it as `before`); null at the start.",
    )
    blind_hidden: int = Field(
        0,
        description="Results of the run left out because they wait for your "
        "answer in a blind queue.",
    )


class QueueFiltersIn(ResultQuery):
    """The result query a queue is built from; a JSON body refuses unknown keys."""

    model_config = ConfigDict(extra="forbid")


class SelectionIn(Schema):
    """What a bulk action acts on: `ids` (at most 1,000 results of the run) or
    `filters` (every result matching them; {} is the whole run), not both."""

    model_config = ConfigDict(extra="forbid")
    ids: list[ObjectId] | None = Field(default=None, min_length=1, max_length=1000)
    filters: QueueFiltersIn | None = None

    @model_validator(mode="after")
    def _one_of(self) -> SelectionIn:
        if (self.ids is None) == (self.filters is None):
            raise ValueError("send either ids or filters")
        return self


class BulkAssignIn(SelectionIn):
    assignee: str | None = Field(
        description="A reviewer's username, or null to unassign.", max_length=150
    )


class BulkQueueIn(SelectionIn):
    queue_id: ObjectId | None = Field(
        default=None, description="Append to this queue of the run (else a new one)."
    )
    name: str = Field(default="", max_length=200)
    blind: bool = False


class BulkOut(Schema):
    action: str
    done: int
    skipped: int
    skipped_reasons: dict[str, int]
    message: str
    queue_id: int | None = None
    queue_url: str | None = None
    background: int = Field(
        default=0,
        description="Results a worker accepts or assigns after this answer (an "
        "all-matching selection of more than 5,000); 0 when done here.",
    )

    @staticmethod
    def resolve_skipped(outcome: BulkOutcome) -> int:
        return outcome.skipped_total

    @staticmethod
    def resolve_skipped_reasons(outcome: BulkOutcome) -> dict[str, int]:
        return dict(outcome.skipped)

    @staticmethod
    def resolve_message(outcome: BulkOutcome) -> str:
        return outcome.summary()

    @staticmethod
    def resolve_queue_id(outcome: BulkOutcome) -> int | None:
        return outcome.queue.pk if outcome.queue else None

    @staticmethod
    def resolve_queue_url(outcome: BulkOutcome) -> str | None:
        queue = outcome.queue
        if queue is None:
            return None
        return reverse("review:queue", args=[queue.project_id, queue.pk])


class SavedFilterIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=100)
    filters: QueueFiltersIn = Field(default_factory=QueueFiltersIn)


class SavedFilterOut(Schema):
    id: int
    project_id: int
    name: str
    query: str = Field(description="The explorer's query string.")
    filters: dict[str, Any]
    created_at: datetime

    @staticmethod
    def resolve_filters(saved: SavedFilter) -> dict[str, Any]:
        # Imported here: the saved filters' selectors parse with this module's
        # ResultQuery, so a top-level import would be circular.
        from evalsite.review.explorer.saved_filters_selectors import (
            saved_filter_query,
        )

        return saved_filter_query(saved=saved).to_json()
