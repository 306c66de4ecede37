from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def login_options(request: HttpRequest) -> dict[str, object]:
    """What the login page offers: the password form, the provider's button, or both."""
    return {
        "sso_enabled": bool(settings.OIDC_RP_CLIENT_ID),
        "sso_provider_name": settings.OIDC_PROVIDER_NAME,
        "local_login_enabled": settings.LOCAL_LOGIN_ENABLED,
    }
