"""Review queues: an ordered, frozen list of results built from explorer filters.

A queue snapshots the result ids at creation time, so its progress ("12 of 40
reviewed") is stable while reviewers work, even though the filters that built it
(e.g. "judge failed") would match a different set after overrides.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from evalsite.accounts.models import Project
from evalsite.evals.models import Result, Run


class ReviewQueue(models.Model):
    class Source(models.TextChoices):
        FILTERS = "filters", "From filters"
        DISAGREEMENT = "disagreement", "Disagreement"
        STRATIFIED = "stratified", "Stratified sample"
        ASSIGNED = "assigned", "Assigned to me"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="review_queues"
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="review_queues")
    name = models.CharField(max_length=200)
    source = models.CharField(
        max_length=16, choices=Source.choices, default=Source.FILTERS
    )
    # The cleaned explorer filters the queue was built from (selectors_explorer.ResultFilters).
    filters = models.JSONField(default=dict)
    blind = models.BooleanField(
        default=False,
        help_text="Hide the judge's verdict until the reviewer answers pass/fail.",
    )
    # {"pass_share": 0.1, "seed": 0, "population": {"fail": N_F, "pass": N_P},
    #  "sampled": {"fail": n, "pass": n}}; empty when the queue is not stratified.
    stratified = models.JSONField(default=dict, blank=True)
    size = models.PositiveIntegerField(default=0)
    truncated = models.BooleanField(
        default=False, help_text="More results matched than a queue holds."
    )
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
        indexes = [models.Index(fields=["project", "-created_at"])]

    def __str__(self) -> str:
        return self.name

    @property
    def is_stratified(self) -> bool:
        return bool(self.stratified)


class QueueEntry(models.Model):
    class Stratum(models.TextChoices):
        NONE = "", "—"
        FAIL = "fail", "Judge fail"
        PASS = "pass", "Judge pass"

    queue = models.ForeignKey(
        ReviewQueue, on_delete=models.CASCADE, related_name="entries"
    )
    result = models.ForeignKey(
        Result, on_delete=models.CASCADE, related_name="queue_entries"
    )
    position = models.PositiveIntegerField(help_text="1-based order in the queue.")
    stratum = models.CharField(
        max_length=4, choices=Stratum.choices, blank=True, default=""
    )

    class Meta:
        ordering = ["queue_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "position"], name="unique_queue_position"
            ),
            models.UniqueConstraint(
                fields=["queue", "result"], name="unique_queue_result"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.position} of queue {self.queue_id}"
