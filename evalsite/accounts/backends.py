"""Password logins, throttled per account and per client address.

Every password check goes through `ThrottledModelBackend`: our login page, the admin's
and anything else that calls `authenticate()` with a request, so no login form is left
unthrottled. Only failures count, in the cache (django-ratelimit's counters):

- per account (`LOGIN_RATE_PER_ACCOUNT`), from every address together, so an attacker
  spraying one account from many addresses gets no more guesses than from one;
- per client address (`LOGIN_RATE_PER_IP`), over every account, so one address cannot
  try many accounts. The address is the real client's behind `TRUSTED_PROXY_COUNT`
  reverse proxies (see `client_ip`), so one client behind a proxy cannot use up the
  proxy's address for everyone, and successful logins never count.

Once a limit is used up, even the right password is refused until its window ends:
otherwise the throttle would only slow down wrong guesses, not stop the right one.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django_ratelimit.core import get_usage

LOGIN_ACCOUNT_GROUP = "accounts.login.account"
LOGIN_IP_GROUP = "accounts.login.ip"
LOGIN_THROTTLED_MESSAGE = (
    "Too many login attempts for this account or from this address. "
    "Wait a few minutes and try again."
)


def client_ip(request: HttpRequest) -> str:
    """The client's address (django-ratelimit's RATELIMIT_IP_META_KEY).

    With TRUSTED_PROXY_COUNT = 0 it is REMOTE_ADDR. Behind n reverse proxies that each
    append the address they saw to X-Forwarded-For, it is the n-th entry from the right:
    the one our outermost proxy wrote. Entries further left are whatever the client sent,
    so they are never trusted; a missing or malformed entry falls back to REMOTE_ADDR.
    """
    remote = str(request.META.get("REMOTE_ADDR") or "")
    hops = settings.TRUSTED_PROXY_COUNT
    if hops <= 0:
        return remote
    forwarded = [
        part.strip()
        for part in str(request.META.get("HTTP_X_FORWARDED_FOR") or "").split(",")
        if part.strip()
    ]
    if len(forwarded) < hops:
        return remote
    candidate = forwarded[-hops]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


def _account_key(username: str) -> Any:
    # Case-folded and trimmed, so "Alice " and "alice" share one count.
    value = username.strip().casefold()
    return lambda group, request: value


def _limits(username: str) -> list[tuple[str, Any, str | None]]:
    return [
        (LOGIN_ACCOUNT_GROUP, _account_key(username), settings.LOGIN_RATE_PER_ACCOUNT),
        (LOGIN_IP_GROUP, "ip", settings.LOGIN_RATE_PER_IP),
    ]


def login_throttled(request: HttpRequest, username: str) -> bool:
    """Whether a login for `username` from this client is refused before its password
    is checked: either limit's failures are used up (or the cache cannot say)."""
    for group, key, rate in _limits(username):
        if not rate:
            continue
        usage = get_usage(request, group=group, key=key, rate=rate, increment=False)
        # django-ratelimit reports a cache outage as should_limit with limit 0.
        if usage is not None and (
            usage["should_limit"] or usage["count"] >= usage["limit"]
        ):
            return True
    return False


def login_failed(request: HttpRequest, username: str) -> None:
    """Count one failed login against the account and the client address."""
    for group, key, rate in _limits(username):
        if rate:
            get_usage(request, group=group, key=key, rate=rate, increment=True)


class ThrottledModelBackend(ModelBackend):
    """Django's ModelBackend behind the login throttle (see the module docstring)."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if request is None or username is None or password is None:
            # No client to throttle (a management command, a test's client.login()).
            return super().authenticate(request, username, password, **kwargs)
        if login_throttled(request, username):
            # authenticate() stops at PermissionDenied: no later backend is tried and
            # the password is not even hashed.
            raise PermissionDenied(LOGIN_THROTTLED_MESSAGE)
        user = super().authenticate(request, username, password, **kwargs)
        if user is None:
            login_failed(request, username)
        return user
