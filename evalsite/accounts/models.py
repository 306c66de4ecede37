from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADJUDICATOR = "adjudicator", "Adjudicator"
    REVIEWER = "reviewer", "Reviewer"
    VIEWER = "viewer", "Viewer"


# Roles allowed to change review data (overrides, comments, assignments).
REVIEW_ROLES = frozenset({Role.OWNER, Role.ADJUDICATOR, Role.REVIEWER})
# Roles that decide results whose reviewers disagree.
ADJUDICATE_ROLES = frozenset({Role.OWNER, Role.ADJUDICATOR})

MAX_OVERLAP = 10


class Project(models.Model):
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    blind_review = models.BooleanField(
        default=False,
        help_text="Reviewers give pass/fail before they see the judge's verdict.",
    )
    # What reviewers may do beyond reviewing; owners always may. Off by default: both
    # cost money or rewrite everyone's numbers, so the owner opts in.
    reviewers_can_start_runs = models.BooleanField(
        default=False,
        help_text="Reviewers may start runs on paid judges (any judge but the "
        "built-in offline judge) and retry their failed results.",
    )
    reviewers_can_save_rescore = models.BooleanField(
        default=False,
        help_text="Reviewers may save a what-if rescore, which rewrites every "
        "result's final score for everyone.",
    )
    default_overlap = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_OVERLAP)],
        help_text="How many reviewers answer each result in a new queue (1–10).",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    # The caller's membership, set by accounts.selectors.project_get_for_user on the
    # project it returns; projects fetched any other way do not have it.
    membership: Membership

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="memberships"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "user"], name="unique_membership"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"

    @property
    def can_review(self) -> bool:
        return self.role in REVIEW_ROLES

    @property
    def can_manage(self) -> bool:
        return self.role == Role.OWNER

    @property
    def can_adjudicate(self) -> bool:
        return self.role in ADJUDICATE_ROLES

    @property
    def can_start_paid_runs(self) -> bool:
        """Start (or retry) runs whose judge costs money: owners, and reviewers when the
        owner allows it."""
        if self.role == Role.OWNER:
            return True
        return self.role == Role.REVIEWER and self.project.reviewers_can_start_runs

    @property
    def can_save_rescore(self) -> bool:
        """Save a rescore (rewrites every result's final score): owners, and reviewers
        when the owner allows it."""
        if self.role == Role.OWNER:
            return True
        return self.role == Role.REVIEWER and self.project.reviewers_can_save_rescore


TOKEN_PREFIX = "evs_"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token for the REST API. Only its SHA-256 is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, default="default")
    prefix = models.CharField(
        max_length=12, help_text="First characters, to tell tokens apart."
    )
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @staticmethod
    def generate_raw() -> str:
        return TOKEN_PREFIX + secrets.token_urlsafe(32)


class Invitation(models.Model):
    """An owner's invitation to join a project with a role, redeemed once through a
    link before it expires. Only the SHA-256 of the link's token is stored."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="invitations"
    )
    email = models.EmailField(blank=True)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.REVIEWER)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Set when an owner invited an existing account by username: only that user can
    # accept (from their dashboard), and the link's token is never shown to anyone.
    invitee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="invitations_received",
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invitation to {self.project} as {self.role}"

    def status(self, now: datetime | None = None) -> InvitationStatus:
        """Used, revoked, expired or pending, in that order: a link that was used
        stays "used" after it would have expired."""
        if self.accepted_at is not None:
            return InvitationStatus.ACCEPTED
        if self.revoked_at is not None:
            return InvitationStatus.REVOKED
        if self.expires_at <= (now or timezone.now()):
            return InvitationStatus.EXPIRED
        return InvitationStatus.PENDING

    @staticmethod
    def generate_raw() -> str:
        return secrets.token_urlsafe(32)


class InvitationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Used"
    REVOKED = "revoked", "Revoked"
    EXPIRED = "expired", "Expired"


class MembershipAction(models.TextChoices):
    """What a membership event in the audit log records (its `action`)."""

    ADDED = "member_added", "added"
    ROLE_CHANGED = "role_changed", "changed the role of"
    REMOVED = "member_removed", "removed"
    INVITED = "invited", "created an invitation"
    INVITATION_ACCEPTED = "invitation_accepted", "joined through an invitation"
    INVITATION_REVOKED = "invitation_revoked", "revoked an invitation"
    USER_CREATED = "user_created", "created the user"


# The object type of the audit log's membership events (the access log).
MEMBERSHIP_OBJECT = "membership"


class AuditEvent(models.Model):
    """The project's one audit log: who did what, when, before → after. Written in the
    same transaction as the change it records.

    What it names is a plain reference (`object_type`, `object_id` and the object's
    name at the time in `object_label`; `run_id`/`result_id` for the run and result
    pages), not a foreign key: an event outlives the run, judge or dataset it names,
    and `accounts` sits below the apps that own them. The table keeps its first
    name from when the log lived in `review`."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="audit_events"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Whose access a membership event changed.
    subject = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    action = models.CharField(max_length=40)
    object_type = models.CharField(max_length=40, blank=True)
    object_id = models.BigIntegerField(null=True, blank=True)
    object_label = models.CharField(max_length=200, blank=True)
    run_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    result_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    summary = models.CharField(max_length=500, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "review_auditevent"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["run_id", "-created_at"], name="review_audi_run_id_2d07c5_idx"
            ),
            models.Index(
                fields=["project", "-created_at"], name="accounts_audit_project_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_id}"

    @property
    def action_label(self) -> str:
        """A membership action's words ("added", "removed"…); other actions as stored."""
        try:
            return str(MembershipAction(self.action).label)
        except ValueError:
            return self.action


class ReviewerPreferences(models.Model):
    """How the review screens behave for one person, across projects."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="review_preferences",
    )
    # WCAG 2.1.4: single-character shortcuts can be turned off.
    keyboard_shortcuts = models.BooleanField(
        default=True, help_text="Single-key shortcuts (a, p, f, 1–9, u, j, k) on."
    )
    advance_after_answer = models.BooleanField(
        default=True,
        help_text="Accept, pass and fail move to the next item in a queue.",
    )

    def __str__(self) -> str:
        return f"preferences of {self.user_id}"
