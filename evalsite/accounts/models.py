from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    REVIEWER = "reviewer", "Reviewer"
    VIEWER = "viewer", "Viewer"


# Roles allowed to change review data (overrides, comments, assignments).
REVIEW_ROLES = frozenset({Role.OWNER, Role.REVIEWER})


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
