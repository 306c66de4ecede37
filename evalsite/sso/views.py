"""The single sign-on pages: start a login at the provider, come back from it, log out.

Every failure (provider down, a refused token, a state that is not this browser's)
ends on the login page with a message saying what happened, never a server error.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from evalsite.sso.provider import ProviderUnavailable, endpoint, sso_enabled

logger = logging.getLogger(__name__)

PROVIDER_DOWN_MESSAGE = (
    "The identity provider cannot be reached right now, so single sign-on is not "
    "available. Try again in a few minutes."
)
LOGIN_REFUSED_MESSAGE = "Single sign-on did not log you in. Start again from this page."


def _login_page(request: HttpRequest, message: str) -> HttpResponse:
    messages.error(request, message)
    return redirect(settings.LOGIN_URL)


class LoginStartView(OIDCAuthenticationRequestView):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Not mozilla's __init__: the endpoint is read per request (it may need the
        # provider, which may be down).
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)

    @property
    def OIDC_OP_AUTH_ENDPOINT(self) -> str:  # noqa: N802 (mozilla's name)
        return endpoint("OIDC_OP_AUTHORIZATION_ENDPOINT")

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:  # noqa: N802
        return str(settings.OIDC_RP_CLIENT_ID)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            raise Http404("Single sign-on is not configured.")
        try:
            response: HttpResponse = super().get(request)
        except ProviderUnavailable as exc:
            logger.warning("single sign-on: %s", exc)
            return _login_page(request, PROVIDER_DOWN_MESSAGE)
        return response


class LoginCallbackView(OIDCAuthenticationCallbackView):
    @property
    def failure_url(self) -> str:
        return reverse(settings.LOGIN_URL)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            raise Http404("Single sign-on is not configured.")
        try:
            response: HttpResponse = super().get(request)
        except ProviderUnavailable as exc:
            logger.warning("single sign-on: %s", exc)
            return _login_page(request, PROVIDER_DOWN_MESSAGE)
        except (requests.ConnectionError, requests.Timeout) as exc:
            # The token, keys or userinfo request (mozilla-django-oidc's, with requests).
            logger.warning("single sign-on: the provider went away: %s", exc)
            return _login_page(request, PROVIDER_DOWN_MESSAGE)
        except requests.RequestException as exc:
            # The provider refused the code (used, expired) or the access token.
            logger.warning("single sign-on: the provider refused: %s", exc)
            return _login_page(request, LOGIN_REFUSED_MESSAGE)
        except SuspiciousOperation as exc:
            # A state not issued to this browser, or an ID token that does not check
            # out (forged, expired, another client's, another login's nonce).
            logger.warning("single sign-on refused: %s", exc)
            return _login_page(request, LOGIN_REFUSED_MESSAGE)
        if not request.user.is_authenticated:
            messages.error(request, LOGIN_REFUSED_MESSAGE)
        return response


def provider_logout_url(request: HttpRequest) -> str:
    """Where logging out sends the browser: the provider's end_session_endpoint when it
        has one (so the provider's session ends too), else our login page. mozilla-django-oidc
        calls this (OIDC_OP_LOGOUT_URL_METHOD) before it ends our session, which it ends
    in every case."""
    login_url = request.build_absolute_uri(reverse(settings.LOGIN_URL))
    if not sso_enabled():
        return login_url
    try:
        end_session = endpoint("OIDC_OP_LOGOUT_ENDPOINT")
    except ProviderUnavailable:
        return login_url
    if not end_session:
        return login_url
    id_token = request.session.get("oidc_id_token")
    if not id_token:
        return login_url  # logged in with a password: no provider session to end
    params = {
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "id_token_hint": id_token,
        "post_logout_redirect_uri": login_url,
    }
    return f"{end_session}?{urlencode(params)}"
