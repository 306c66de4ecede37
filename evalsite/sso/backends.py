"""The single sign-on authentication backend (mozilla-django-oidc's, stricter).

mozilla-django-oidc checks the ID token's signature and nonce; this also checks its
issuer, audience, expiry and issue time (OpenID Connect Core 3.1.3.7), reads every
setting when it is used (so the discovery document is fetched only by a login), and
finds users by the provider's subject rather than by e-mail.
"""

from __future__ import annotations

import re
from typing import Any

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from evalsite.sso.models import OidcIdentity
from evalsite.sso.provider import endpoint
from evalsite.sso.roles import roles_sync

USERNAME_MAX = 150
_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")


class OidcBackend(OIDCAuthenticationBackend):
    OIDC_RP_IDP_SIGN_KEY = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Not mozilla's __init__: it reads the endpoints, which may need the provider,
        # and Django builds a backend for every request of a logged-in user.
        ModelBackend.__init__(self)
        self.UserModel = get_user_model()

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:  # noqa: N802 (mozilla's name)
        return endpoint("OIDC_OP_TOKEN_ENDPOINT")

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:  # noqa: N802
        return endpoint("OIDC_OP_USER_ENDPOINT")

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:  # noqa: N802
        return endpoint("OIDC_OP_JWKS_ENDPOINT")

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:  # noqa: N802
        return str(settings.OIDC_RP_CLIENT_ID)

    @property
    def OIDC_RP_CLIENT_SECRET(self) -> str:  # noqa: N802
        return str(settings.OIDC_RP_CLIENT_SECRET)

    @property
    def OIDC_RP_SIGN_ALGO(self) -> str:  # noqa: N802
        return str(settings.OIDC_RP_SIGN_ALGO)

    def get_user(self, user_id: Any) -> User | None:
        # ModelBackend's: an inactive user's session ends too (mozilla's skips that).
        return ModelBackend.get_user(self, user_id)

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The ID token's claims, once its signature, issuer, audience, expiry, issue
        time and nonce all check out; SuspiciousOperation otherwise."""
        if not token:
            raise SuspiciousOperation("The provider sent no ID token.")
        algorithm = self.OIDC_RP_SIGN_ALGO
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"The ID token is malformed: {exc}") from exc
        if header.get("alg") != algorithm:
            raise SuspiciousOperation(
                f"The ID token is signed with {header.get('alg')!r}, not {algorithm}."
            )
        if algorithm.startswith(("RS", "ES", "PS")):
            key: Any = self.retrieve_matching_jwk(token)
        else:
            key = self.OIDC_RP_CLIENT_SECRET
        try:
            payload: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=endpoint("OIDC_OP_ISSUER"),
                leeway=settings.OIDC_CLOCK_SKEW_SECONDS,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"The ID token was refused: {exc}") from exc
        if "nonce" in kwargs and kwargs["nonce"] != payload.get("nonce"):
            raise SuspiciousOperation("The ID token's nonce is not this login's.")
        return payload

    def get_userinfo(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        claims: dict[str, Any] = super().get_userinfo(access_token, id_token, payload)
        # OpenID Connect Core 5.3.2: userinfo about another subject must be ignored.
        if claims.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("The userinfo is about another subject.")
        # The ID token's claims fill what userinfo leaves out (some providers put the
        # groups only in the token).
        return {**payload, **claims}

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub"))

    @transaction.atomic
    def get_or_create_user(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> User | None:
        claims = self.get_userinfo(access_token, id_token, payload)
        if not self.verify_claims(claims):
            raise SuspiciousOperation("The provider named no subject.")
        issuer = str(payload["iss"])
        identity = (
            OidcIdentity.objects.select_related("user")
            .filter(issuer=issuer, subject=str(claims["sub"]))
            .first()
        )
        if identity is None:
            user = self._user_for_new_identity(claims)
            identity = OidcIdentity.objects.create(
                user=user, issuer=issuer, subject=str(claims["sub"])
            )
        user = identity.user
        if not user.is_active:
            return None
        identity.last_login_at = timezone.now()
        identity.save(update_fields=["last_login_at"])
        self._user_update(user, claims)
        roles_sync(user, claims)
        return user

    def _user_for_new_identity(self, claims: dict[str, Any]) -> User:
        email = str(claims.get("email") or "")
        # An existing account joins its identity only on an address the provider has
        # verified, and only when exactly one account has it: otherwise anyone who
        # can set an address at the provider could take that account over.
        if email and claims.get("email_verified") is True:
            matches = list(
                self.UserModel.objects.filter(
                    email__iexact=email, oidc_identities__isnull=True
                )[:2]
            )
            if len(matches) == 1:
                user: User = matches[0]
                return user
        created: User = self.UserModel.objects.create_user(
            self._username_free(claims), email=email
        )
        # No password: this user logs in through the provider only.
        created.set_unusable_password()
        created.save(update_fields=["password"])
        return created

    def _username_free(self, claims: dict[str, Any]) -> str:
        wanted = str(
            claims.get("preferred_username")
            or str(claims.get("email") or "").split("@")[0]
            or claims["sub"]
        )
        base = _USERNAME_UNSAFE.sub("", wanted)[: USERNAME_MAX - 8] or "user"
        candidate, n = base, 1
        while self.UserModel.objects.filter(username__iexact=candidate).exists():
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def _user_update(self, user: User, claims: dict[str, Any]) -> None:
        changed = []
        for field, claim in (
            ("email", "email"),
            ("first_name", "given_name"),
            ("last_name", "family_name"),
        ):
            value = str(claims.get(claim) or "")
            if value and getattr(user, field) != value:
                setattr(user, field, value[:150] if field != "email" else value)
                changed.append(field)
        if changed:
            user.save(update_fields=changed)
