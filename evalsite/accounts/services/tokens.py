"""API tokens: created once (only a hash kept), revoked, checked on each call."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from evalsite.accounts.models import ApiToken, hash_token


def api_token_create(*, user: User, name: str = "default") -> tuple[ApiToken, str]:
    """Create a token; returns the row and the raw token, which is shown once and never stored."""
    raw = ApiToken.generate_raw()
    token = ApiToken.objects.create(
        user=user, name=name or "default", prefix=raw[:10], token_hash=hash_token(raw)
    )
    return token, raw


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


# Writing last_used_at on every request would make each API call a write; once a minute is enough.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_token_authenticate(raw: str) -> ApiToken | None:
    token = (
        ApiToken.objects.select_related("user")
        .filter(
            token_hash=hash_token(raw), revoked_at__isnull=True, user__is_active=True
        )
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
