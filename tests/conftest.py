from __future__ import annotations

import datetime as dt
import socket

import pytest

from evalsite.accounts.models import Role
from evalsite.accounts.services import api_token_create
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.security.listener import Listener


@pytest.fixture(autouse=True)
def _empty_cache():
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def project(db):
    return ProjectFactory(name="Acme RAG")


@pytest.fixture
def owner(project):
    return MembershipFactory(
        project=project, user=UserFactory(username="olivia"), role=Role.OWNER
    ).user


@pytest.fixture
def reviewer(project):
    return MembershipFactory(
        project=project, user=UserFactory(username="rita"), role=Role.REVIEWER
    ).user


@pytest.fixture
def viewer(project):
    return MembershipFactory(
        project=project, user=UserFactory(username="victor"), role=Role.VIEWER
    ).user


@pytest.fixture
def outsider(db):
    """A user who belongs to another project only."""
    user = UserFactory(username="oscar")
    MembershipFactory(user=user, role=Role.OWNER)
    return user


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


def login(client, user):
    client.force_login(user)
    return client


def bearer(user) -> dict[str, str]:
    """Test-client headers carrying a new API token of `user`."""
    _, raw = api_token_create(user=user, name="test")
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


@pytest.fixture(name="bearer")
def bearer_fixture():
    """`bearer(user)` as a fixture, for tests that take their helpers as arguments."""
    return bearer


@pytest.fixture
def frozen_clock(time_machine):
    """Time stands still at the current second (time-machine, tick=False) until the
    test moves it on with `frozen_clock.shift(seconds or timedelta)`: for tests that
    assert on time, so that none races the real clock."""
    time_machine.move_to(dt.datetime.now(dt.UTC).replace(microsecond=0), tick=False)
    return time_machine


@pytest.fixture
def listener():
    """A judge endpoint on 127.0.0.1 that records what it receives."""
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def other_listener():
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def refusing_port():
    """A loopback socket bound but not listening: connections to its port are
    refused, and as long as the test holds it nothing else in the suite can take the
    port and answer on it (a port merely released could go to another test's server,
    or to nothing that answers: once a 300 s hang in CI). Close it to free the port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock
    finally:
        sock.close()
