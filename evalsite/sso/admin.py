from __future__ import annotations

from django.contrib import admin

from evalsite.sso.models import OidcIdentity


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin[OidcIdentity]):
    """Who logs in as which provider account. Deleting a row unlinks it: the next
    single sign-on login of that account creates a new user (or joins a verified
    e-mail's)."""

    list_display = ["user", "subject", "issuer", "created_at", "last_login_at"]
    search_fields = ["user__username", "subject", "issuer"]
    list_select_related = ["user"]
    readonly_fields = ["created_at", "last_login_at"]
    raw_id_fields = ["user"]
