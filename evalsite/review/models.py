from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from evalsite.accounts.models import MAX_OVERLAP, Project
from evalsite.evals.models import Result, Run

# Review queues: an ordered, frozen list of results built from explorer filters.
#
# A queue snapshots the result ids at creation time, so its progress ("12 of 40
# reviewed") is stable while reviewers work, even though the filters that built it
# (e.g. "judge failed") would match a different set after overrides.


class FinalRule(models.TextChoices):
    """How a queue turns its reviewers' answers into a result's final verdict."""

    SINGLE = "single", "The single review"
    MAJORITY = "majority", "Majority (a tie goes to adjudication)"
    UNANIMOUS = "unanimous", "Unanimous, or adjudicate"


class ReviewQueue(models.Model):
    class Kind(models.TextChoices):
        REVIEW = "review", "Review results"
        PAIRWISE = "pairwise", "Pairwise preference"

    class Source(models.TextChoices):
        FILTERS = "filters", "From filters"
        DISAGREEMENT = "disagreement", "Disagreement"
        STRATIFIED = "stratified", "Stratified sample"
        ASSIGNED = "assigned", "Assigned to me"
        CALIBRATION = "calibration", "Calibration sample"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="review_queues"
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="review_queues")
    # A pairwise queue compares the outputs of `run` (A) with those
    # of `run_b` (B) on matched items; its rows are PairwiseItems, not QueueEntries.
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.REVIEW)
    run_b = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="pairwise_queues_b",
    )
    # How the pairs were made: {"match": "input" | "key", "key": str, "seed": int,
    # "matched": n, "identical": n, "unmatched_a": n, "unmatched_b": n,
    # "ambiguous": n}; empty for other kinds.
    pairing = models.JSONField(default=dict, blank=True)
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
    # A calibration sample's draw (services.calibration): {"design": "uniform" |
    # "stratified" | "active", "run_scorer_id", "budget", "floor", "strata", "seed",
    # "population"}; with each entry's inclusion_probability it makes the sample's
    # labels usable by the estimates. Empty for other queues.
    design = models.JSONField(default=dict, blank=True)
    overlap = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_OVERLAP)],
        help_text="How many reviewers answer each result (1–10).",
    )
    final_rule = models.CharField(
        max_length=12, choices=FinalRule.choices, default=FinalRule.SINGLE
    )
    size = models.PositiveIntegerField(default=0)
    truncated = models.BooleanField(
        default=False, help_text="More results matched than a queue holds."
    )
    # An archived queue is closed: hidden from lists and the reviewers' counts, and
    # no longer keeps its runs from being deleted.
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
        indexes = [models.Index(fields=["project", "-created_at"])]

    def __str__(self) -> str:
        return self.name

    @property
    def is_stratified(self) -> bool:
        return bool(self.stratified)

    @property
    def is_calibration(self) -> bool:
        return self.source == self.Source.CALIBRATION

    @property
    def is_pairwise(self) -> bool:
        return self.kind == self.Kind.PAIRWISE


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

    class State(models.TextChoices):
        OPEN = "open", "Waiting for answers"
        ADJUDICATE = "adjudicate", "Needs adjudication"
        DECIDED = "decided", "Decided"

    stratum = models.CharField(
        max_length=4, choices=Stratum.choices, blank=True, default=""
    )
    # The chance this result had of being drawn into a calibration sample; None in
    # every other queue (whose picks, by hand or by filter, have no known chance).
    inclusion_probability = models.FloatField(null=True, blank=True)
    # Overlap queues only (overlap ≥ 2): the answers counted so far and what became of
    # them; a single-review queue applies each answer at once and stays "open".
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    answers = models.PositiveSmallIntegerField(default=0)
    # How many of those answers said pass / fail: the item's shape in the queue's
    # pass/fail agreement, kept here so each answer's response can group the queue's
    # entries (an index-only scan) instead of its reviews (see
    # selectors.reviews.overlap_counts).
    answers_pass = models.PositiveSmallIntegerField(default=0)
    answers_fail = models.PositiveSmallIntegerField(default=0)
    # The answer that was applied as the final verdict ({"passed", "flips", "score"}),
    # and how: "majority", "unanimous" or "adjudicated".
    decision = models.JSONField(default=dict, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["queue_id", "position"]
        indexes = [
            models.Index(fields=["queue", "state"]),
            # Progress and agreement group a queue's entries by these: an index-only
            # scan (selectors.reviews.overlap_counts).
            models.Index(
                fields=["queue", "state", "answers_pass", "answers_fail"],
                name="review_entry_shape_idx",
            ),
        ]
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


class Guideline(models.Model):
    """Markdown instructions for reviewers, for a whole project (queue empty) or one
    queue. Never edited in place: saving adds the next version, and each review keeps
    the version it was made under."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="guidelines"
    )
    queue = models.ForeignKey(
        ReviewQueue,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="guidelines",
    )
    version = models.PositiveIntegerField()
    body = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "version"],
                condition=models.Q(queue__isnull=True),
                name="unique_project_guideline_version",
            ),
            models.UniqueConstraint(
                fields=["queue", "version"],
                condition=models.Q(queue__isnull=False),
                name="unique_queue_guideline_version",
            ),
        ]

    def __str__(self) -> str:
        return f"guidelines v{self.version}"


class Review(models.Model):
    """One reviewer's own answer on a result in a queue (blind to the others until
    they have answered), or an adjudicator's decision between such answers."""

    class Kind(models.TextChoices):
        ANSWER = "answer", "Answer"
        ADJUDICATION = "adjudication", "Adjudication"

    queue = models.ForeignKey(
        ReviewQueue, on_delete=models.CASCADE, related_name="reviews"
    )
    result = models.ForeignKey(Result, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.ANSWER)
    passed = models.BooleanField(null=True)
    # {"verdicts.2.verdict": "no", ...}: the verdicts this reviewer set differently
    # from the judge; a path not listed is the judge's value.
    flips = models.JSONField(default=dict, blank=True)
    score = models.FloatField(null=True, blank=True)
    note = models.TextField(blank=True)
    # The guidelines shown when the answer was given (the queue's, else the project's).
    guideline = models.ForeignKey(
        Guideline, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Seconds from the item being shown to the answer, as the browser measured them
    # (capped at an hour), or None when unknown (API answers).
    seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["queue_id", "result_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "result", "reviewer", "kind"],
                name="unique_review_per_reviewer",
            )
        ]
        indexes = [
            models.Index(fields=["queue", "result"]),
            models.Index(fields=["result", "kind"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind} by {self.reviewer_id} on {self.result_id}"


class SavedFilter(models.Model):
    """An explorer filter a user saved under a name, for one project."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="saved_filters"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    name = models.CharField(max_length=100)
    # The explorer's query string (review.schemas.ResultQuery.to_querydict, urlencoded).
    query = models.CharField(max_length=2000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "user", "name"], name="unique_saved_filter_name"
            )
        ]

    def __str__(self) -> str:
        return self.name


class PairwiseItem(models.Model):
    """One matched pair of a pairwise queue: the same input answered by run A (item_a
    of A's dataset) and run B (item_b of B's). Which output is shown on the left is
    drawn once per pair from the queue's seed and kept, so every reviewer sees the
    same order, a left/right bias can be measured, and an answer given by side maps
    back to the real run."""

    queue = models.ForeignKey(
        ReviewQueue, on_delete=models.CASCADE, related_name="pairs"
    )
    position = models.PositiveIntegerField(help_text="1-based order in the queue.")
    item_a = models.ForeignKey(
        "datasets.Item", on_delete=models.CASCADE, related_name="+"
    )
    item_b = models.ForeignKey(
        "datasets.Item", on_delete=models.CASCADE, related_name="+"
    )
    a_left = models.BooleanField(help_text="Run A's output is shown on the left.")
    # The key value (or the input, cut short) the two items were matched on.
    match_value = models.CharField(max_length=200, blank=True)
    # Counts of the pair's preferences, kept by the pairwise services in the answer's
    # transaction: progress and agreement group these rows instead of the answers.
    answers = models.PositiveSmallIntegerField(default=0)
    answers_a = models.PositiveSmallIntegerField(default=0)
    answers_b = models.PositiveSmallIntegerField(default=0)
    answers_tie = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["queue_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "position"], name="unique_pair_position"
            ),
        ]

    def __str__(self) -> str:
        return f"pair #{self.position} of queue {self.queue_id}"


class Preference(models.Model):
    """One reviewer's answer on a pair: which run's output is better, or a tie."""

    class Choice(models.TextChoices):
        A = "a", "Run A"
        B = "b", "Run B"
        TIE = "tie", "Tie"

    class Side(models.TextChoices):
        LEFT = "left", "Left"
        RIGHT = "right", "Right"
        TIE = "tie", "Tie"

    queue = models.ForeignKey(
        ReviewQueue, on_delete=models.CASCADE, related_name="preferences"
    )
    pair = models.ForeignKey(
        PairwiseItem, on_delete=models.CASCADE, related_name="preferences"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    choice = models.CharField(max_length=3, choices=Choice.choices)
    # The side clicked and the order shown, as the reviewer saw it (the pair's order
    # when they answered): the data of a left/right bias analysis.
    side = models.CharField(max_length=5, choices=Side.choices)
    a_left = models.BooleanField()
    reason = models.TextField(blank=True)
    guideline = models.ForeignKey(
        Guideline, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pair_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["pair", "reviewer"], name="unique_preference_per_reviewer"
            )
        ]
        indexes = [models.Index(fields=["queue", "reviewer"])]

    def __str__(self) -> str:
        return f"{self.choice} by {self.reviewer_id} on pair {self.pair_id}"


class LabCandidate(models.Model):
    """A draft judge for a scorer in the judge lab: the scorer's options with another
    rubric, model, temperature or few-shot examples. Not offered to runs until it is
    promoted, which saves it as the scorer's next version."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="lab_candidates"
    )
    # The scorer version it was drafted from; the lab of any version of that scorer
    # (same project and name) lists it.
    scorer = models.ForeignKey(
        "evals.ScorerConfig", on_delete=models.CASCADE, related_name="lab_candidates"
    )
    name = models.CharField(max_length=200)
    # Every scorer option, validated like an edit of the scorer would be.
    options = models.JSONField(default=dict)
    # The item each of options["examples"] was taken from (None: written by hand), in
    # the same order: a replay never judges an example's own item.
    example_items = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    promoted_to = models.ForeignKey(
        "evals.ScorerConfig",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    promoted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class LabReplay(models.Model):
    """One replay of a candidate and of the scorer's version at that time over the
    human-labelled items (minus the candidate's examples' own items): per dataset the
    items come from, a lab run of each version."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="lab_replays"
    )
    candidate = models.ForeignKey(
        LabCandidate, on_delete=models.CASCADE, related_name="replays"
    )
    # The scorer version replayed as "current" beside the candidate.
    scorer = models.ForeignKey(
        "evals.ScorerConfig", on_delete=models.CASCADE, related_name="+"
    )
    current_runs = models.ManyToManyField(Run, related_name="+")
    candidate_runs = models.ManyToManyField(Run, related_name="+")
    held_out = models.JSONField(default=list, blank=True)  # item ids not judged
    items = models.PositiveIntegerField(default=0)
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

    def __str__(self) -> str:
        return f"replay {self.pk} of {self.candidate_id}"


class QueueFlag(models.Model):
    """A reviewer's "I cannot answer this as it is" on one queue item (a result's
    entry, or a pair of a pairwise queue), with the reason. While open, the item is
    out of everyone's waiting count and on the project's flagged list; an owner
    resolves it and it waits again."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="queue_flags"
    )
    queue = models.ForeignKey(
        ReviewQueue, on_delete=models.CASCADE, related_name="flags"
    )
    entry = models.ForeignKey(
        QueueEntry,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="flags",
    )
    pair = models.ForeignKey(
        PairwiseItem,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="flags",
    )
    reason = models.TextField()
    flagged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "resolved_at"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(entry__isnull=False, pair__isnull=True)
                    | models.Q(entry__isnull=True, pair__isnull=False)
                ),
                name="queue_flag_entry_or_pair",
            ),
            # One open flag per item: a second reviewer's flag would only repeat it.
            models.UniqueConstraint(
                fields=["entry"],
                condition=models.Q(resolved_at__isnull=True, entry__isnull=False),
                name="unique_open_flag_entry",
            ),
            models.UniqueConstraint(
                fields=["pair"],
                condition=models.Q(resolved_at__isnull=True, pair__isnull=False),
                name="unique_open_flag_pair",
            ),
        ]

    def __str__(self) -> str:
        return f"flag on {self.entry or self.pair}"

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None

    @property
    def position(self) -> int:
        item = self.entry or self.pair
        return item.position if item is not None else 0
