from __future__ import annotations

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
