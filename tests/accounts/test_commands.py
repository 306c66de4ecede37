from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from evalsite.accounts.models import ApiToken, hash_token
from evalsite.accounts.services import api_token_authenticate, api_token_revoke

pytestmark = pytest.mark.django_db


def test_create_api_token_prints_token_as_last_word(owner):
    out = StringIO()
    call_command("create_api_token", "olivia", stdout=out)
    raw = out.getvalue().split()[-1]
    assert ApiToken.objects.get(user=owner).token_hash == hash_token(raw)
    assert api_token_authenticate(raw).user == owner


def test_create_api_token_unknown_user_fails():
    with pytest.raises(CommandError, match="No user named"):
        call_command("create_api_token", "nobody")


def test_revoked_token_no_longer_authenticates(owner):
    out = StringIO()
    call_command("create_api_token", "olivia", stdout=out)
    raw = out.getvalue().split()[-1]
    api_token_revoke(token=ApiToken.objects.get(user=owner))
    assert api_token_authenticate(raw) is None
