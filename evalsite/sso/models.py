from __future__ import annotations

from django.conf import settings
from django.db import models


class OidcIdentity(models.Model):
    """The identity provider's account (issuer + subject) a user logs in as.

    Users are found by this pair, not by e-mail: an address can change or be reused at
    the provider, the subject cannot."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="oidc_identities",
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_login_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "subject"], name="unique_oidc_identity"
            )
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
