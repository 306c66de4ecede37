from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

from evalsite.accounts.models import Project
from evalsite.datasets.models import Dataset, Item

if TYPE_CHECKING:
    from evalsite.evals.runs.selectors import RunProgress


class JudgeConnection(models.Model):
    """An OpenAI-compatible endpoint. The API key is write-only (env var name or encrypted)."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="judges"
    )
    name = models.CharField(max_length=200)
    base_url = models.URLField(max_length=500)
    model = models.CharField(max_length=200)
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of an environment variable holding the key.",
    )
    api_key_encrypted = models.TextField(
        blank=True, help_text="Fernet token; never rendered."
    )
    api_key_url = models.CharField(
        max_length=500,
        blank=True,
        help_text="The base URL the key was entered for: it is sent nowhere else.",
    )
    temperature = models.FloatField(default=0.0)
    timeout_seconds = models.FloatField(default=60.0)
    max_concurrency = models.PositiveIntegerField(default=8)
    requests_per_minute = models.PositiveIntegerField(default=600)
    price_per_1k_input = models.DecimalField(
        max_digits=10, decimal_places=6, null=True, blank=True
    )
    price_per_1k_output = models.DecimalField(
        max_digits=10, decimal_places=6, null=True, blank=True
    )
    is_offline = models.BooleanField(
        default=False, help_text="The built-in offline heuristic judge (not an LLM)."
    )
    # The judge's own mean latency per call (ms) as the last run's dispatcher saw it:
    # with max_concurrency and requests_per_minute, it tells which limit binds.
    observed_latency_ms = models.FloatField(null=True, blank=True)
    latency_observed_at = models.DateTimeField(null=True, blank=True)
    # Hidden from lists and pickers until unarchived; runs that used it keep it.
    archived = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="unique_judge_name"
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_env or self.api_key_encrypted)


class ScorerConfig(models.Model):
    """A scorer kind with validated options. Editing makes a new version (runs snapshot them)."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="scorers"
    )
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=40)
    judge = models.ForeignKey(
        JudgeConnection,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="scorers",
    )
    options = models.JSONField(
        default=dict, help_text="Full options incl. scale and threshold."
    )
    version = models.PositiveIntegerField(default=1)
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="versions",
    )
    archived = models.BooleanField(default=False)
    # Options saved before a range was checked (factuality category scores outside
    # 0-1, migration 0006): what is wrong, shown on the scorer pages until an edit
    # saves options within the ranges. Never rewritten silently.
    range_problem = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version", "id"]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}" if self.version > 1 else self.name


class JudgeVersion(models.Model):
    """One judge as scoring.judge_version identifies it (prompt templates, rubric,
    examples, model, parameters, options, library version), numbered v1, v2, ... per
    project and scorer kind in the order first used. Written only through
    evals.judges.versions; never changed once written."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="judge_versions"
    )
    kind = models.CharField(max_length=40)
    digest = models.CharField(max_length=64)
    number = models.PositiveIntegerField()
    label = models.CharField(max_length=300)
    spec = models.JSONField(default=dict)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "kind", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "kind", "digest"], name="unique_judge_version"
            ),
            models.UniqueConstraint(
                fields=["project", "kind", "number"], name="unique_judge_version_number"
            ),
        ]

    def __str__(self) -> str:
        return self.label


class Run(models.Model):
    class Purpose(models.TextChoices):
        # Lab replays and bias audits are runs too (same dispatcher, limiter and
        # cancel), kept out of every list of runs (evals.runs.selectors.listed_runs).
        RUN = "run", "Run"
        LAB = "lab", "Judge lab replay"
        AUDIT = "audit", "Bias audit"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        DONE_WITH_ERRORS = "done_with_errors", "Done with errors"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    FINISHED = frozenset(
        {Status.DONE, Status.DONE_WITH_ERRORS, Status.CANCELLED, Status.FAILED}
    )

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="runs")
    # Set by the API's run list from one query for all its runs; RunOut counts it
    # otherwise.
    progress: RunProgress
    name = models.CharField(max_length=200, blank=True)
    purpose = models.CharField(
        max_length=8,
        choices=Purpose.choices,
        default=Purpose.RUN,
        db_default=Purpose.RUN,
    )
    # A re-judged run: the run whose items and scorers it judged again.
    rejudge_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="rejudges",
    )
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.QUEUED
    )
    error = models.TextField(blank=True)
    total = models.PositiveIntegerField(default=0, help_text="items × scorers")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The watchdog that re-queues work lost with a killed worker ticks at most once per
    # interval per run, however many copies of it are scheduled.
    monitor_at = models.DateTimeField(null=True, blank=True)
    # Hidden from lists and pickers until unarchived; its pages and links still work.
    archived = models.BooleanField(default=False)
    # Set while a worker deletes it (too many rows for a web request): archived too,
    # so that lists and pickers hide it, and no new work starts on it. The deletion
    # clears both (archived back to what it was) if it fails, in one transaction.
    deleting = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "purpose"], name="run_project_purpose_idx")
        ]

    def __str__(self) -> str:
        return self.name or f"Run #{self.pk}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED


class RunScorer(models.Model):
    """The snapshot of a scorer config (and its judge) as a run used it.

    What-if rescoring changes `options` here (recording the previous ones in the audit log),
    never the judge analyses.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="run_scorers")
    scorer = models.ForeignKey(
        ScorerConfig, null=True, on_delete=models.SET_NULL, related_name="run_scorers"
    )
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=40)
    options = models.JSONField(default=dict)
    judge = models.ForeignKey(
        JudgeConnection,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    judge_snapshot = models.JSONField(
        default=dict, help_text="base_url, model, temperature at run time (no secrets)."
    )
    position = models.PositiveIntegerField(default=0)
    # The judge this run scorer judges with (set when the run starts; none for the
    # kinds without a judge).
    judge_version = models.ForeignKey(
        JudgeVersion,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="run_scorers",
    )
    # Options or scores outside the range every score keeps to (0-scale), found by
    # migration 0006: what is wrong, shown on the run page until a what-if rescore
    # saves options within the ranges and recomputes every score.
    range_problem = models.TextField(blank=True)
    # A bias audit's controlled change (scoring.perturbation.CHANGES), made to every
    # item's case before it is judged; "" for the judge of an ordinary run.
    perturbation = models.CharField(max_length=20, blank=True, default="")

    class Meta:
        ordering = ["run_id", "position", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class Result(models.Model):
    """One (run, item, scorer). The judge fields are written once; final_* follow overrides."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        OK = "ok", "OK"
        ERROR = "error", "Error"
        CANCELLED = "cancelled", "Cancelled"

    # No index of their own for run, run_scorer and assignee: each is the first
    # column of a composite index (unique_result_per_item_scorer, review_result_agg_idx,
    # (assignee, run)), and every write of a result maintains every index, since each
    # write moves updated_at, which review_result_*_updated_idx hold (25 indexes ->
    # 22; figures in docs/benchmarks.md).
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="results", db_index=False
    )
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="results")
    run_scorer = models.ForeignKey(
        RunScorer, on_delete=models.CASCADE, related_name="results", db_index=False
    )
    # The run's project (with the caller's `.membership`), set by
    # evals.runs.selectors.result_get_for_user; results fetched any other way lack it.
    project: Project
    status = models.CharField(
        max_length=12, choices=Status.choices, default=Status.PENDING
    )
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # A worker claims a pending result before judging it (conditional UPDATE) and keeps
    # the lease fresh while it works; a lease older than EVALS_RESULT_LEASE_SECONDS
    # belongs to a dead worker and may be taken over.
    claimed_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=120, blank=True)

    analysis = models.JSONField(
        null=True, blank=True, help_text="The judge's analysis."
    )
    judge_score = models.FloatField(null=True, blank=True)
    judge_passed = models.BooleanField(null=True, blank=True)
    reason = models.TextField(blank=True)
    # The judge that made judge_* (set when judged).
    judge_version = models.ForeignKey(
        JudgeVersion,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="results",
    )
    # A judge asked k times (the repeat option): every answer [{score, passed}], the
    # majority's verdict in judge_passed, and the share of answers that disagree with
    # it (0 to 0.5) as the judge's uncertainty. Null when asked once.
    judge_answers = models.JSONField(null=True, blank=True)
    judge_uncertainty = models.FloatField(null=True, blank=True)
    overridable_count = models.PositiveIntegerField(
        default=0,
        db_default=0,
        help_text="Values of the analysis a reviewer can flip (scoring.overridable_count).",
    )

    final_analysis = models.JSONField(null=True, blank=True)
    final_score = models.FloatField(null=True, blank=True)
    final_passed = models.BooleanField(null=True, blank=True)
    # The judge or final score was outside 0-scale when migration 0006 checked it
    # (no source writes one since); a what-if rescore recomputes both and clears it.
    # db_default: the run start inserts results with one INSERT … SELECT.
    score_out_of_range = models.BooleanField(default=False, db_default=False)
    score_overridden = models.BooleanField(default=False)
    pass_overridden = models.BooleanField(default=False)

    reviewed = models.BooleanField(default=False)
    overridden = models.BooleanField(
        default=False, help_text="Has at least one active override."
    )
    # Kept by the review services with `overridden`, so the run aggregates count
    # overrides from the result rows they already read instead of joining overrides.
    # db_default: the run start inserts results with one INSERT … SELECT.
    active_override_count = models.PositiveIntegerField(default=0, db_default=0)
    verdict_flip_count = models.PositiveIntegerField(
        default=0,
        db_default=0,
        help_text="Active verdict overrides that differ from the judge.",
    )
    human_passed = models.BooleanField(
        null=True, blank=True, help_text="The reviewer's pass/fail (blind or explicit)."
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    version = models.PositiveIntegerField(
        default=0, help_text="Bumped on every review change."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "item", "run_scorer"],
                name="unique_result_per_item_scorer",
            )
        ]
        indexes = [
            models.Index(fields=["run", "run_scorer", "status"]),
            models.Index(fields=["run", "status"]),
            models.Index(fields=["run", "run_scorer", "final_passed"]),
            models.Index(fields=["assignee", "run"]),
        ]

    def __str__(self) -> str:
        return f"result {self.pk} ({self.status})"

    @property
    def judge_split(self) -> tuple[int, int] | None:
        """(passes, fails) among the judge's k answers; None when asked once."""
        if not self.judge_answers:
            return None
        passes = sum(1 for answer in self.judge_answers if answer.get("passed"))
        return passes, len(self.judge_answers) - passes

    @property
    def judge_answers_mean(self) -> float | None:
        """The mean score of the judge's k answers; None when asked once."""
        if not self.judge_answers:
            return None
        scores = [float(answer["score"]) for answer in self.judge_answers]
        return sum(scores) / len(scores)


class JudgeCall(models.Model):
    """One HTTP call (or cache hit) made for a result's judge step."""

    result = models.ForeignKey(Result, on_delete=models.CASCADE, related_name="calls")
    step = models.CharField(max_length=40)
    messages = models.JSONField(default=list)
    raw_response = models.TextField(blank=True)
    response_format = models.CharField(max_length=16, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    # The judge's own time (its requests, sent to answered) and, apart, the time the
    # step waited around them: a limiter slot, the cache, back-off between retries.
    latency_ms = models.FloatField(default=0)
    wait_ms = models.FloatField(default=0)
    attempts = models.PositiveIntegerField(default=1)
    cache_hit = models.BooleanField(default=False)
    # `error` is a short reason every member may read; `error_body` is the judge's whole
    # reply to the failed request (secrets redacted), shown to owners only: a judge
    # that echoes request headers would otherwise show everyone the key.
    error = models.TextField(blank=True)
    error_body = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["result_id", "id"]

    def __str__(self) -> str:
        return f"{self.step} for result {self.result_id}"


class JudgeCacheEntry(models.Model):
    """Identical judge calls (same base URL, model, messages, params) are answered from here."""

    key = models.CharField(max_length=64, unique=True)
    value = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key


# The verdict: people's changes to results, and what they add to them.


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
        db_table = "review_override"  # created by the review app, kept on the move
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
        db_table = "review_comment"  # created by the review app, kept on the move
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.body[:40]


class ReviewVersion(models.Model):
    """How many review writes a run scorer's results have had.

    Every review service bumps it in the same transaction as its change, so the
    review side of the run aggregates can be cached per version and carried from one
    version to the next by the change alone (see results.aggregate_updates.review_groups_advance).
    Team-review answers on the results (and their queue entries) bump it too, though
    the aggregates do not count them: the agreement figures are cached by it.
    """

    run_scorer = models.OneToOneField(
        RunScorer,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="review_version",
    )
    version = models.PositiveBigIntegerField(default=0)

    class Meta:
        db_table = "review_reviewversion"  # created by the review app, kept on the move

    def __str__(self) -> str:
        return f"{self.run_scorer_id}@{self.version}"


class BiasAudit(models.Model):
    """A bias audit of one scorer of a run: a seeded sample of its judged results,
    judged again by a hidden run (`audit_run`) with one controlled change per run
    scorer of that run. The figures are counted from the audit run's results whenever
    they are read (evals.audits.selectors), never stored."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="bias_audits"
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="bias_audits")
    run_scorer = models.ForeignKey(
        RunScorer, on_delete=models.CASCADE, related_name="bias_audits"
    )
    audit_run = models.OneToOneField(
        Run, on_delete=models.CASCADE, related_name="bias_audit_of"
    )
    sample_size = models.PositiveIntegerField(help_text="The size asked for.")
    seed = models.BigIntegerField()
    sample = models.JSONField(
        default=list, help_text="The sampled items' ids, in sampling order."
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

    def __str__(self) -> str:
        return f"Bias audit #{self.pk}"
