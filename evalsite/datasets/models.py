from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from evalsite.accounts.models import Project
from evalsite.datasets.agentdata import AGENT_FIELDS


class Dataset(models.Model):
    """An immutable set of items. Re-uploading under the same name makes a new version."""

    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        JSONL = "jsonl", "JSON Lines"
        JSON = "json", "JSON array"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="datasets"
    )
    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField(default=1)
    source_filename = models.CharField(max_length=255, blank=True)
    file_format = models.CharField(max_length=8, choices=Format.choices)
    # {"input": col, "output": col, "context": col|None, "reference": col|None,
    #  "context_format": "json"|"delimited", "context_delimiter": str,
    #  and col|None for each agent field: "system_prompt", "conversation", "tool_calls",
    #  "expected_tool_calls", "expected_trajectory", "baseline_output"}
    mapping = models.JSONField(default=dict)
    columns = models.JSONField(
        default=list, help_text="Column names found in the file."
    )
    item_count = models.PositiveIntegerField(default=0)
    # Hidden from lists and pickers until unarchived; runs that used it keep it.
    archived = models.BooleanField(default=False)
    # Set while a worker deletes it (too many rows for a web request): archived too,
    # so that lists and pickers hide it, and no new work starts on it. The deletion
    # clears both (archived back to what it was) if it fails, in one transaction.
    deleting = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name", "version"], name="unique_dataset_version"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def agent_fields(self) -> list[str]:
        """The agent fields (evalsite.datasets.agentdata.AGENT_FIELDS) a column was
        mapped to on upload, in their order: the ones exports add for this dataset."""
        mapping = self.mapping if isinstance(self.mapping, dict) else {}
        return [name for name in AGENT_FIELDS if mapping.get(name)]


class Item(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="items")
    index = models.PositiveIntegerField(
        help_text="0-based row number in the uploaded file."
    )
    input = models.TextField(blank=True)
    output = models.TextField(blank=True)
    context = models.JSONField(default=list)
    reference = models.TextField(
        blank=True, help_text="Empty when the item has no reference."
    )
    metadata = models.JSONField(default=dict)
    # An agent's data (evalsite.datasets.agentdata checks the shapes on upload). The
    # lists are NULL when the file had none: "no expected tool calls given" is not
    # "expected to call no tool".
    system_prompt = models.TextField(blank=True)
    conversation = models.JSONField(
        null=True, blank=True, help_text='Messages: [{"role", "content"}, ...].'
    )
    tool_calls = models.JSONField(
        null=True,
        blank=True,
        help_text='The calls the agent made: [{"name", "arguments", "result"}, ...].',
    )
    expected_tool_calls = models.JSONField(
        null=True, blank=True, help_text="Tool names, or calls with a name."
    )
    expected_trajectory = models.JSONField(
        null=True, blank=True, help_text="Tool names, or calls with a name."
    )
    baseline_output = models.TextField(
        blank=True, help_text="An earlier output to compare with (noise sensitivity)."
    )
    # Passages of the item's text aimed at the judge (scoring.injection), found once on
    # upload so the explorer can filter on them: [{"field", "rule", "match", "snippet"}].
    judge_instructions = models.JSONField(default=list, blank=True, db_default=[])

    class Meta:
        ordering = ["dataset_id", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "index"], name="unique_item_index"
            )
        ]

    def __str__(self) -> str:
        return f"item {self.number} of {self.dataset_id}"

    @property
    def number(self) -> int:
        """The item as people count it, from 1 (as context chunks are): every page
        shows this; `index` stays 0-based in the API and the exports."""
        return self.index + 1

    def as_case(self) -> dict[str, Any]:
        """The item in the shape `scoring` expects."""
        return {
            "input": self.input,
            "output": self.output,
            "context": list(self.context or []),
            "reference": self.reference or None,
            "metadata": dict(self.metadata or {}),
            **self.agent_case(),
        }

    def agent_case(self) -> dict[str, Any]:
        """The agent fields the item has, under the case keys `scoring` reads; a field
        the item lacks is left out (scoring tells "missing" from "empty")."""
        case: dict[str, Any] = {}
        for key in ("system_prompt", "baseline_output"):
            if getattr(self, key):
                case[key] = getattr(self, key)
        for key in (
            "conversation",
            "tool_calls",
            "expected_tool_calls",
            "expected_trajectory",
        ):
            value = getattr(self, key)
            if value is not None:
                case[key] = value
        return case


class DatasetMatch(models.Model):
    """The items of two datasets matched by one rule (matching.selectors), kept for
    good: items never change once uploaded, so a pair of datasets and a rule match
    the same way forever. Compare joins the results on its pairs instead of matching
    again (2 × 25k items take ~100 ms). A new version of a dataset is matched with
    its previous version in the background (tasks.dataset_versions_match_task).
    """

    dataset_a = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    dataset_b = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    rule = models.CharField(max_length=120, help_text="MatchSpec.cache_token()")
    items_a = models.PositiveIntegerField()
    items_b = models.PositiveIntegerField()
    matched = models.PositiveIntegerField()
    only_in_a = models.PositiveIntegerField()
    only_in_b = models.PositiveIntegerField()
    no_key_a = models.PositiveIntegerField()
    no_key_b = models.PositiveIntegerField()
    # Keys held by several items of one side: [{side, key, item_ids, item_indexes}].
    duplicates = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "review_datasetmatch"  # created by the review app, kept on the move
        constraints = [
            models.UniqueConstraint(
                fields=["dataset_a", "dataset_b", "rule"],
                name="unique_dataset_match_per_rule",
            )
        ]

    def __str__(self) -> str:
        return f"datasets {self.dataset_a_id} ~ {self.dataset_b_id} by {self.rule}"


class DatasetMatchPair(models.Model):
    """One matched item: dataset A's item and dataset B's, under one DatasetMatch.

    A table rather than a list on the match, so that compare's SQL joins the results
    on it directly: no list read into Python and sent back as array literals, and
    Postgres may run the scorers' joins in parallel (four scorers' figures of two
    100k-result runs: 95 ms from array literals, 65 ms from this table). The item ids
    are plain columns, not foreign keys: the rows go with their match, which goes
    with its datasets, and 25k foreign-key checks would double the insert.
    """

    pk = models.CompositePrimaryKey("match", "item_a")
    # No index of its own: the primary key (match, item_a) leads with it. No
    # constraint in the database either: Postgres checked it once per inserted pair
    # (25k checks took 80 of the 180 ms of storing a matching, bench_compare's
    # datasets); the pairs are only ever inserted for a match just saved in the same
    # transaction, and deleted with it by Django's cascade.
    match = models.ForeignKey(
        DatasetMatch,
        on_delete=models.CASCADE,
        related_name="pairs",
        db_index=False,
        db_constraint=False,
    )
    item_a = models.BigIntegerField()
    item_b = models.BigIntegerField()

    class Meta:
        db_table = (
            "review_datasetmatchpair"  # created by the review app, kept on the move
        )

    def __str__(self) -> str:
        return f"{self.item_a} ~ {self.item_b}"
