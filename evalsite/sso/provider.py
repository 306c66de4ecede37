"""The identity provider's endpoints: from OIDC_OP_DISCOVERY_URL (the provider's
/.well-known/openid-configuration) unless each is set explicitly.

The discovery document is fetched on first use, not at start-up, and kept in the cache
for an hour: a provider that is down stops new single sign-on logins (with a message
that says so), never the site's start or the sessions already open.
"""

from __future__ import annotations

from typing import Any

import httpx
from django.conf import settings
from django.core.cache import cache

DISCOVERY_CACHE_SECONDS = 3600

# Our setting -> the discovery document's field.
ENDPOINT_FIELDS = {
    "OIDC_OP_ISSUER": "issuer",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}


class ProviderUnavailable(Exception):
    """The identity provider could not be reached or answered nonsense."""


def sso_enabled() -> bool:
    return bool(settings.OIDC_RP_CLIENT_ID)


def _discovery() -> dict[str, Any]:
    url = settings.OIDC_OP_DISCOVERY_URL
    if not url:
        return {}
    key = f"sso.discovery:{url}"
    document = cache.get(key)
    if isinstance(document, dict):
        return document
    try:
        response = httpx.get(url, timeout=settings.OIDC_TIMEOUT, follow_redirects=False)
        response.raise_for_status()
        document = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise ProviderUnavailable(
            f"The identity provider's discovery document ({url}) could not be read: {exc}"
        ) from exc
    if not isinstance(document, dict):
        raise ProviderUnavailable(f"{url} is not an OpenID Connect discovery document.")
    cache.set(key, document, DISCOVERY_CACHE_SECONDS)
    return document


def endpoint(name: str) -> str:
    """The setting `name` (one of ENDPOINT_FIELDS), explicit or discovered; "" when
    neither says (only the logout endpoint is optional)."""
    explicit = str(getattr(settings, name, "") or "")
    if explicit:
        return explicit
    value = _discovery().get(ENDPOINT_FIELDS[name])
    if not value and name != "OIDC_OP_LOGOUT_ENDPOINT":
        raise ProviderUnavailable(
            f"{name} is not set and the discovery document has no "
            f"{ENDPOINT_FIELDS[name]}."
        )
    return str(value or "")
