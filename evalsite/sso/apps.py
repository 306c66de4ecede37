from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings


class SsoConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evalsite.sso"
    verbose_name = "Single sign-on"

    def ready(self) -> None:
        if settings.OIDC_RP_CLIENT_ID:
            from evalsite.sso.roles import role_map_parse

            # A wrong rule stops the start, naming the entry, rather than the logins.
            role_map_parse(settings.OIDC_ROLE_MAP)
