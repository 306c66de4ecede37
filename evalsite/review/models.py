from __future__ import annotations

from django.conf import settings
from django.db import models

from evalsite.accounts.models import Project
from evalsite.evals.models import Result, Run, RunScorer


class Override(models.Model):
    class Kind(models.TextChoices):
        VERDICT = "verdict", "Verdict"
        SCORE = "score", "Score"
        PASS = "pass", "Pass/fail"

    result = models.ForeignKey(
        Result, on_delete=models.CASCADE, related_name="overrides"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    path = models.CharField(
        max_length=200, blank=True, help_text='e.g. "verdicts.2.verdict"'
    )
    old_value = models.JSONField(null=True)
    new_value = models.JSONField(null=True)
    note = models.TextField(blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    reverted_at = models.DateTimeField(null=True, blank=True)
    reverted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Maintained by the review services: True for the active verdict override that
    # decides a path's final value when that value differs from the judge's (so a
    # flip and a flip back count 0, two flips of one verdict count 1).
    counts_as_flip = models.BooleanField(default=False)
    # The result's review state (reviewed, human_passed, reviewed_by_id, reviewed_at)
    # just before this override, so undoing the latest change restores it exactly.
    prior_review = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["result_id", "created_at", "id"]
        indexes = [models.Index(fields=["result", "reverted_at"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.path} → {self.new_value!r}"

    @property
    def is_active(self) -> bool:
        return self.reverted_at is None


class Comment(models.Model):
    result = models.ForeignKey(
        Result, on_delete=models.CASCADE, related_name="comments"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.body[:40]


class AuditEvent(models.Model):
    """Who did what, when, before → after. Written in the same transaction as the change."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="audit_events"
    )
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    result = models.ForeignKey(
        Result,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="audit_events",
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=40)
    summary = models.CharField(max_length=500, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["run", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_id}"


class ReviewVersion(models.Model):
    """How many review writes a run scorer's results have had.

    Every review service bumps it in the same transaction as its change, so the
    review side of the run aggregates can be cached per version and carried from one
    version to the next by the change alone (see selectors.review_groups_advance).
    """

    run_scorer = models.OneToOneField(
        RunScorer,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="review_version",
    )
    version = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.run_scorer_id}@{self.version}"


# Review queues: an ordered, frozen list of results built from explorer filters.
#
# A queue snapshots the result ids at creation time, so its progress ("12 of 40
# reviewed") is stable while reviewers work, even though the filters that built it
# (e.g. "judge failed") would match a different set after overrides.


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
    # The cleaned explorer filters the queue was built from (review.schemas.ResultQuery.to_json).
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
