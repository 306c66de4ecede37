"""A real OpenID Connect provider on loopback for the single sign-on tests.

oidc-provider (npm) on Node 22, both from the npm registry, installed from
tests/fixtures/oidc/package-lock.json the way `make conformance` installs its packages:
only a machine without npm skips these tests. The tests hold the provider's signing key,
so they can sign tokens it would sign (an expired one) and tokens it would not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

OIDC_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "oidc"
NODE = OIDC_DIR / "node_modules" / "node" / "bin" / "node"
CLIENT_ID = "evalsite"
CLIENT_SECRET = "test-client-secret-0123456789"
CALLBACK = "http://testserver/oidc/callback/"
ACCOUNTS = {
    "alice": {
        "email": "alice@example.com",
        "email_verified": True,
        "preferred_username": "alice",
        "name": "Alice Liddell",
        "groups": ["evals-owners", "staff"],
    },
    "bob": {
        "email": "bob@example.com",
        "email_verified": False,
        "preferred_username": "bob",
        "groups": ["evals-reviewers"],
    },
    "carol": {"email": "carol@example.com", "groups": []},
}


@dataclass
class Provider:
    issuer: str
    kid: str
    private_key: rsa.RSAPrivateKey

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"


def _node_packages() -> None:
    marker = OIDC_DIR / "node_modules" / ".installed"
    lock = OIDC_DIR / "package-lock.json"
    if marker.exists() and marker.stat().st_mtime >= lock.stat().st_mtime:
        return
    if shutil.which("npm") is None:
        reason = (
            "npm is not installed: the single sign-on tests need it to install the "
            "OpenID Connect provider they run (tests/fixtures/oidc)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)  # CI installs npm: there, a skip would hide a gap
        pytest.skip(reason)
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=OIDC_DIR,
        check=True,
        timeout=600,
    )
    marker.touch()


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    _node_packages()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    kid = uuid.uuid4().hex
    jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key))
    # PyJWT marks a private key "sign" only; the provider also verifies with it (the
    # id_token_hint of a logout).
    jwk.pop("key_ops", None)
    jwk.update(kid=kid, alg="RS256", use="sig")
    config = {
        "port": 0,
        "jwks": {"keys": [jwk]},
        "accounts": ACCOUNTS,
        "clients": [
            {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uris": [CALLBACK],
                "post_logout_redirect_uris": ["http://testserver/login/"],
                "token_endpoint_auth_method": "client_secret_post",
            }
        ],
    }
    path = tmp_path_factory.mktemp("oidc") / "config.json"
    path.write_text(json.dumps(config))
    # Its warnings and errors go to a file: a pipe nobody reads could fill and stall it.
    log = path.with_name("provider.log")
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [str(NODE), "provider.mjs", str(path)],
            cwd=OIDC_DIR,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("listening "):
            process.kill()
            raise RuntimeError(
                f"the OpenID Connect provider did not start: {line}{log.read_text()}"
            )
        yield Provider(issuer=line.split()[1], kid=kid, private_key=key)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def sso(settings: Any, oidc_provider: Provider) -> Provider:
    """Single sign-on configured against the provider, with the password login on."""
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_OP_DISCOVERY_URL = oidc_provider.discovery_url
    settings.OIDC_RP_SCOPES = "openid email profile groups"
    settings.OIDC_ROLE_CLAIM = ""
    settings.OIDC_ROLE_MAP = ""
    settings.LOCAL_LOGIN_ENABLED = True
    settings.AUTHENTICATION_BACKENDS = [
        "evalsite.accounts.backends.ThrottledModelBackend",
        "evalsite.sso.backends.OidcBackend",
    ]
    return oidc_provider
