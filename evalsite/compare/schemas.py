"""Compare API schemas."""

from __future__ import annotations

from typing import Literal

from ninja import Schema
from pydantic import Field

from evalsite.core.pagination import MAX_OFFSET
from evalsite.core.schemas import ObjectId


class ComparePairOut(Schema):
    """One scorer of run A against the same scorer (kind and name) of another run,
    over the matched items. mean_delta_ci_*: 95 % paired t-interval; mean_delta_p:
    paired t-test; sign_test_p: exact sign test, regressed vs improved; mcnemar_p:
    exact McNemar test on pass/fail flips."""

    run_scorer_id: int = Field(description="Run A's run scorer id.")
    b_run_scorer_id: int = Field(description="The other run's run scorer id.")
    name: str
    kind: str
    direction: str
    n: int
    both_ok: int
    regressions: int
    improvements: int
    unchanged: int
    pass_to_fail: int
    fail_to_pass: int
    missing: int
    a_mean: float | None = None
    b_mean: float | None = None
    mean_delta: float | None = None
    mean_delta_ci_low: float | None = None
    mean_delta_ci_high: float | None = None
    mean_delta_p: float | None = None
    sign_test_p: float | None = None
    a_pass_rate: float | None = None
    b_pass_rate: float | None = None
    pass_rate_delta: float | None = None
    mcnemar_p: float | None = None
    a_judge_version: str | None = Field(
        default=None, description="Run A's judge version label (null: no judge)."
    )
    b_judge_version: str | None = Field(
        default=None, description="The other run's judge version label."
    )
    judge_versions_differ: bool = Field(
        default=False,
        description="The two runs were judged by different judge versions: part of "
        "any difference may be the judge's.",
    )


class CompareMatchOut(Schema):
    """How run A's items and another run's matched (item level)."""

    same_dataset: bool
    items_a: int
    items_b: int
    matched: int
    only_in_a: int = Field(description="Removed: A's items the other run lacks.")
    only_in_b: int = Field(description="Added: the other run's items A lacks.")
    no_key_a: int
    no_key_b: int


class CompareCandidateOut(Schema):
    run_id: int
    label: str
    match: CompareMatchOut
    pairs: list[ComparePairOut]


class CompareRowOut(Schema):
    item_id: int = Field(description="Run A's item.")
    item_index: int
    b_item_id: int
    b_item_index: int | None = None
    a_result_id: int
    b_result_id: int | None = None
    a_status: str
    b_status: str | None = None
    a_score: float | None = None
    b_score: float | None = None
    delta: float | None = None
    a_passed: bool | None = None
    b_passed: bool | None = None
    regression: bool
    pass_flip: Literal["pass_to_fail", "fail_to_pass", ""]


class CompareUnmatchedItemOut(Schema):
    item_id: int
    item_index: int
    input: str
    output: str
    result_id: int | None = Field(
        description="The item's result of the listed scorer in its own run."
    )


class CompareUnmatchedOut(Schema):
    side: Literal["removed", "added"]
    run_id: int = Field(description="The run whose dataset holds these items.")
    count: int
    items: list[CompareUnmatchedItemOut]


class CompareOut(Schema):
    run_a: int
    run_b: int
    runs: list[int]
    match_mode: Literal["key", "input"]
    match_key: str | None = None
    tests: dict[str, str] = Field(
        description="The statistical test behind each figure."
    )
    candidates: list[CompareCandidateOut]
    pairs: list[ComparePairOut] = Field(description="Run B's pairs (candidates[0]).")
    against: int = Field(description="The run whose items are listed against run A.")
    run_scorer_id: int | None = Field(
        default=None, description="Run A's run scorer whose items are listed."
    )
    count: int
    items: list[CompareRowOut]
    next_after: int | None = Field(
        default=None,
        description="Pass as `after` for the next page of `items` (keyset paging; "
        "None on the last page).",
    )
    unmatched: CompareUnmatchedOut | None = Field(
        default=None,
        description="With ?unmatched=removed|added: the items only one side holds.",
    )


class CompareQueryIn(Schema):
    match: Literal["key", "input"] = "key"
    key: str = Field(default="id", min_length=1, max_length=100)
    also: list[ObjectId] = Field(
        default_factory=list, max_length=2, description="Runs C and D (optional)."
    )
    against: ObjectId | None = Field(
        default=None, description="List the items of this run (default: run B)."
    )
    run_scorer_id: ObjectId | None = Field(
        default=None, description="Run A's run scorer to list (default: the first)."
    )
    only: Literal["", "regressions", "improvements", "flips", "changed"] = ""
    unmatched: Literal["", "removed", "added"] = Field(
        default="",
        description="Also list the items only run A's dataset holds (removed) or "
        "only the `against` run's (added), paged by limit and offset.",
    )
    limit: int = Field(default=50, ge=1, le=500)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    after: ObjectId | None = Field(
        default=None,
        description="The matched items after the one with this run A result id "
        "(a page's next_after): keyset paging, as fast deep as on the first page, "
        "and past the offset limit.",
    )
