"""Single sign-on against a real OpenID Connect provider (tests/sso/conftest.py):
the login round trip, first-login creation, role mapping, state, nonce and token
checks, password login turned off, logout, and a provider that is down."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.exceptions import SuspiciousOperation
from django.test import Client

from evalsite.accounts.models import Membership, Role
from evalsite.sso.backends import OidcBackend
from evalsite.sso.models import OidcIdentity
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.sso.conftest import CALLBACK, CLIENT_ID, Provider

pytestmark = pytest.mark.django_db


def provider_round_trip(authorize_url: str, login: str) -> str:
    """Log in at the provider as `login` (its development login and consent pages)
    and return the URL it sends the browser back to: our callback with code and state."""
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        response = browser.get(authorize_url)
        for _ in range(12):
            if response.status_code in (302, 303):
                location = urljoin(str(response.url), response.headers["location"])
                if location.startswith(CALLBACK):
                    return location
                response = browser.get(location)
            elif response.status_code == 200 and "/interaction/" in str(response.url):
                if 'name="login"' in response.text:
                    data = {"prompt": "login", "login": login, "password": "any"}
                else:
                    data = {"prompt": "consent"}
                response = browser.post(str(response.url), data=data)
            else:
                raise AssertionError(
                    f"unexpected {response.status_code} from {response.url}: "
                    f"{response.text[:500]}"
                )
    raise AssertionError("the provider never sent the browser back")


def start_login(client: Client, provider: Provider, query: str = "") -> str:
    response = client.get(f"/oidc/authenticate/{query}")
    assert response.status_code == 302
    authorize_url = response["Location"]
    assert authorize_url.startswith(provider.issuer)
    query = parse_qs(urlsplit(authorize_url).query)
    assert query["state"] and query["nonce"] and query["code_challenge"]
    return authorize_url


def sso_login(client: Client, provider: Provider, login: str) -> Any:
    callback = provider_round_trip(start_login(client, provider), login)
    return client.get(callback)


def logged_in_as(client: Client) -> str | None:
    response = client.get("/")
    if response.status_code != 200:
        return None
    return str(response.context["user"].get_username())


def test_login_round_trip_creates_the_user_on_first_login(client, sso):
    response = sso_login(client, sso, "alice")
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert logged_in_as(client) == "alice"

    user = User.objects.get(username="alice")
    assert user.email == "alice@example.com"
    assert not user.has_usable_password()
    identity = OidcIdentity.objects.get(user=user)
    assert (identity.issuer, identity.subject) == (sso.issuer, "alice")

    # The second login finds the same user: no second account, no second identity.
    other = Client()
    sso_login(other, sso, "alice")
    assert logged_in_as(other) == "alice"
    assert User.objects.filter(email="alice@example.com").count() == 1
    assert OidcIdentity.objects.count() == 1


def test_the_login_returns_to_the_page_asked_for_on_this_site_only(sso):
    browser = Client()
    callback = provider_round_trip(
        start_login(browser, sso, "?next=/account/tokens/"), "alice"
    )
    assert browser.get(callback)["Location"] == "/account/tokens/"

    browser = Client()
    callback = provider_round_trip(
        start_login(browser, sso, "?next=https://evil.test/"), "alice"
    )
    assert browser.get(callback)["Location"] == "/"


def test_a_taken_username_gets_a_suffix_and_an_unverified_email_links_nothing(
    client, sso
):
    existing = UserFactory(username="bob", email="bob@example.com")
    sso_login(client, sso, "bob")  # bob's address is not verified at the provider
    assert logged_in_as(client) == "bob-2"
    assert not OidcIdentity.objects.filter(user=existing).exists()


def test_a_verified_email_links_the_one_existing_account(client, sso):
    existing = UserFactory(username="alice.local", email="Alice@example.com")
    sso_login(client, sso, "alice")
    assert logged_in_as(client) == "alice.local"
    assert OidcIdentity.objects.get(subject="alice").user == existing


def test_role_mapping_gives_and_takes_project_roles(client, settings, sso):
    mapped, second, unmapped = ProjectFactory(), ProjectFactory(), ProjectFactory()
    settings.OIDC_ROLE_CLAIM = "groups"
    settings.OIDC_ROLE_MAP = (
        f"evals-owners={mapped.pk}:owner, staff={mapped.pk}:viewer "
        f"evals-reviewers={mapped.pk}:reviewer evals-owners={second.pk}:adjudicator"
    )
    sso_login(client, sso, "alice")
    alice = User.objects.get(username="alice")
    roles = dict(
        Membership.objects.filter(user=alice).values_list("project_id", "role")
    )
    # The highest role her groups grant in each mapped project.
    assert roles == {mapped.pk: Role.OWNER, second.pk: Role.ADJUDICATOR}

    # bob's groups grant a reviewer role in `mapped` and nothing in `second`, where an
    # owner had added him: the provider decides there. `unmapped` is the owners' call.
    bob = UserFactory(username="bob-local", email="bob@example.com")
    OidcIdentity.objects.create(user=bob, issuer=sso.issuer, subject="bob")
    MembershipFactory(project=second, user=bob, role=Role.VIEWER)
    MembershipFactory(project=unmapped, user=bob, role=Role.VIEWER)
    sso_login(Client(), sso, "bob")
    roles = dict(Membership.objects.filter(user=bob).values_list("project_id", "role"))
    assert roles == {mapped.pk: Role.REVIEWER, unmapped.pk: Role.VIEWER}


def test_the_last_owner_keeps_the_role_the_claim_no_longer_grants(
    client, settings, sso
):
    project = ProjectFactory()
    carol = UserFactory(username="carol")
    OidcIdentity.objects.create(user=carol, issuer=sso.issuer, subject="carol")
    MembershipFactory(project=project, user=carol, role=Role.OWNER)
    settings.OIDC_ROLE_CLAIM = "groups"
    settings.OIDC_ROLE_MAP = f"evals-owners={project.pk}:owner"
    sso_login(client, sso, "carol")
    assert logged_in_as(client) == "carol"
    assert Membership.objects.get(project=project, user=carol).role == Role.OWNER


def test_a_state_this_browser_was_not_given_is_refused(client, sso):
    callback = provider_round_trip(start_login(client, sso), "alice")
    parts = urlsplit(callback)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    query["state"] = "forged-" + query["state"]
    response = client.get(f"{parts.path}?{urlencode(query)}", follow=True)
    assert logged_in_as(client) is None
    assert "did not log you in" in response.content.decode()
    assert not User.objects.filter(username="alice").exists()

    # Another browser's genuine callback is refused too: the state is in the session.
    thief = Client()
    thief.get(callback)
    assert logged_in_as(thief) is None


def test_a_callback_logs_in_once(client, sso):
    callback = provider_round_trip(start_login(client, sso), "alice")
    client.get(callback)
    assert logged_in_as(client) == "alice"
    client.logout()
    client.get(callback)
    assert logged_in_as(client) is None


def test_an_id_token_with_another_logins_nonce_is_refused(client, sso):
    callback = provider_round_trip(start_login(client, sso), "alice")
    session = client.session
    state = parse_qs(urlsplit(callback).query)["state"][0]
    states = session["oidc_states"]
    states[state]["nonce"] = "the-nonce-of-another-login"
    session["oidc_states"] = states
    session.save()
    response = client.get(callback, follow=True)
    assert logged_in_as(client) is None
    assert "did not log you in" in response.content.decode()


def _id_token(provider: Provider, key: rsa.RSAPrivateKey, **claims: Any) -> str:
    now = int(time.time())
    payload = {
        "iss": provider.issuer,
        "aud": CLIENT_ID,
        "sub": "alice",
        "iat": now,
        "exp": now + 300,
        "nonce": "n-1",
        **claims,
    }
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": provider.kid})


def test_id_tokens_are_checked_signature_issuer_audience_expiry_and_nonce(sso):
    backend = OidcBackend()
    genuine = _id_token(sso, sso.private_key)
    assert backend.verify_token(genuine, nonce="n-1")["sub"] == "alice"

    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = _id_token(sso, other_key)
    long_ago = int(time.time()) - 7200
    refused = {
        "forged": forged,
        "expired": _id_token(sso, sso.private_key, iat=long_ago, exp=long_ago + 300),
        "another client's": _id_token(sso, sso.private_key, aud="someone-else"),
        "another issuer's": _id_token(sso, sso.private_key, iss="http://evil.test"),
        "unsigned": jwt.encode(
            {"iss": sso.issuer, "aud": CLIENT_ID, "sub": "alice", "nonce": "n-1"},
            None,
            algorithm="none",
        ),
    }
    for name, token in refused.items():
        with pytest.raises(SuspiciousOperation):
            backend.verify_token(token, nonce="n-1")
            pytest.fail(f"the {name} token was accepted")
    with pytest.raises(SuspiciousOperation, match="nonce"):
        backend.verify_token(genuine, nonce="n-2")


def test_password_login_turned_off_refuses_passwords(client, settings, sso):
    UserFactory(username="olivia", password="right-password")
    settings.LOCAL_LOGIN_ENABLED = False
    settings.AUTHENTICATION_BACKENDS = ["evalsite.sso.backends.OidcBackend"]

    page = client.get("/login/").content.decode()
    assert 'id="sso-login"' in page
    assert 'name="password"' not in page
    response = client.post(
        "/login/", {"username": "olivia", "password": "right-password"}
    )
    assert response.status_code == 403
    assert logged_in_as(client) is None
    # Nor through any other form that calls authenticate() (the admin's login).
    assert authenticate(username="olivia", password="right-password") is None
    # Single sign-on still logs in.
    sso_login(client, sso, "alice")
    assert logged_in_as(client) == "alice"


def test_logout_ends_the_session_here_and_at_the_provider(client, sso):
    sso_login(client, sso, "alice")
    assert logged_in_as(client) == "alice"
    id_token = client.session["oidc_id_token"]
    response = client.post("/oidc/logout/")
    assert response.status_code == 302
    end_session = response["Location"]
    assert end_session.startswith(sso.issuer)
    assert parse_qs(urlsplit(end_session).query)["id_token_hint"] == [id_token]
    assert logged_in_as(client) is None
    # The provider accepts the logout request (it asks the user to confirm).
    answer = httpx.get(end_session, timeout=10)
    assert answer.status_code == 200, answer.text


def test_a_provider_that_is_down_gives_a_clear_message(client, settings, sso):
    settings.OIDC_OP_DISCOVERY_URL = (
        "http://127.0.0.1:9/.well-known/openid-configuration"
    )
    response = client.get("/oidc/authenticate/", follow=True)
    assert response.redirect_chain[-1][0] == "/login/"
    assert "identity provider cannot be reached" in response.content.decode()
    # The provider going away between the login's start and its callback.
    settings.OIDC_OP_DISCOVERY_URL = sso.discovery_url
    callback = provider_round_trip(start_login(client, sso), "alice")
    settings.OIDC_OP_TOKEN_ENDPOINT = "http://127.0.0.1:9/token"
    response = client.get(callback, follow=True)
    assert "identity provider cannot be reached" in response.content.decode()
    assert logged_in_as(client) is None
    # A password login still works.
    UserFactory(username="olivia", password="right-password")
    client.post("/login/", {"username": "olivia", "password": "right-password"})
    assert logged_in_as(client) == "olivia"


def test_single_sign_on_is_off_unless_configured(client, settings):
    settings.OIDC_RP_CLIENT_ID = ""
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    assert 'id="sso-login"' not in client.get("/login/").content.decode()
