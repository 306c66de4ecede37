from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from evalsite.sso.roles import RoleRule, role_map_parse, roles_granted


def test_the_role_map_is_parsed():
    assert role_map_parse("a=1:owner, urn:x:y=2:viewer\n b=1:reviewer") == [
        RoleRule("a", 1, "owner"),
        RoleRule("urn:x:y", 2, "viewer"),
        RoleRule("b", 1, "reviewer"),
    ]
    assert role_map_parse("") == []


@pytest.mark.parametrize(
    "text", ["a=1", "a=x:owner", "=1:owner", "a:1:owner", "a=1:boss"]
)
def test_a_wrong_entry_is_named(text):
    with pytest.raises(ImproperlyConfigured, match="OIDC_ROLE_MAP entry"):
        role_map_parse(text)


def test_the_highest_role_wins_and_a_string_claim_counts(settings):
    settings.OIDC_ROLE_CLAIM = "role"
    rules = role_map_parse("a=1:viewer b=1:adjudicator c=2:owner")
    assert roles_granted({"role": ["a", "b"]}, rules) == {1: "adjudicator", 2: ""}
    assert roles_granted({"role": "c"}, rules) == {1: "", 2: "owner"}
    assert roles_granted({}, rules) == {1: "", 2: ""}


def _start(**env: str) -> subprocess.CompletedProcess[str]:
    """Django set up from the app's settings with `env`, in a process of its own (the
    settings are read once per process)."""
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "evalsite.settings",
            "DEBUG": "true",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_wrong_configuration_stops_the_start_with_a_message():
    alone = _start(LOCAL_LOGIN_ENABLED="false", OIDC_RP_CLIENT_ID="")
    assert alone.returncode != 0
    assert "LOCAL_LOGIN_ENABLED=false needs single sign-on" in alone.stderr

    wrong_rule = _start(OIDC_RP_CLIENT_ID="evalsite", OIDC_ROLE_MAP="ml=1:boss")
    assert wrong_rule.returncode != 0
    assert "OIDC_ROLE_MAP entry 'ml=1:boss'" in wrong_rule.stderr

    fine = _start(
        OIDC_RP_CLIENT_ID="evalsite",
        OIDC_ROLE_MAP="ml=1:owner",
        LOCAL_LOGIN_ENABLED="false",
    )
    assert fine.returncode == 0, fine.stderr
