"""Where judge calls may go and which server secrets they may carry.

Anyone who can create a project owns a judge connection, so its URL and key are user
input aimed at the server itself. The rules:

- A judge's key may come from an environment variable only if the operator allowed that
  name (``JUDGE_KEY_ENV_ALLOWED``), so ``SECRET_KEY`` or ``DATABASE_URL`` never leave as a
  bearer token.
- A judge URL carries no credentials, and may reach only public addresses, except the
  hosts an operator listed (``JUDGE_ALLOWED_PRIVATE_HOSTS``), the configured offline judge,
  and loopback when ``DEBUG`` is on (``make run``'s offline judge). An IPv6 address that
  carries an IPv4 one (NAT64, 6to4, IPv4-compatible) is as public as the IPv4 address.
  The address check runs on every connection (``scoring.egress``), not only when the URL
  is saved.
"""

from __future__ import annotations

import fnmatch
import ipaddress
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings

from scoring.egress import AddressGuard, EgressRefused, IPAddress, resolve

HOST_HELP = "An administrator can allow a private host with the JUDGE_ALLOWED_PRIVATE_HOSTS setting."


def judge_key_env_allowed(name: str) -> bool:
    """Whether the operator allowed judges to read their key from env var ``name``."""
    return any(
        fnmatch.fnmatchcase(name, pattern) for pattern in settings.JUDGE_KEY_ENV_ALLOWED
    )


def judge_key_env_help() -> str:
    if not settings.JUDGE_KEY_ENV_ALLOWED:
        return "This server allows no variable names (JUDGE_KEY_ENV_ALLOWED); enter the key itself."
    return "Allowed names: " + ", ".join(settings.JUDGE_KEY_ENV_ALLOWED) + "."


@lru_cache(maxsize=64)
def _parse_allowed(entry: str) -> tuple[str, int | None]:
    """``host``, ``host:port``, ``[v6]:port``, an address or a network (CIDR)."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else None
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, int(port)
    return entry, None


def _matches(entry: str, host: str, port: int, address: IPAddress) -> bool:
    allowed_host, allowed_port = _parse_allowed(entry)
    if allowed_port is not None and allowed_port != port:
        return False
    if allowed_host == host.lower():
        return True
    try:
        return address in ipaddress.ip_network(allowed_host, strict=False)
    except ValueError:
        return False


def _offline_judge_entry() -> str | None:
    parts = urlsplit(settings.OFFLINE_JUDGE_URL)
    if not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return (
        f"[{parts.hostname}]:{port}"
        if ":" in parts.hostname
        else f"{parts.hostname}:{port}"
    )


# IPv6 forms that carry an IPv4 address a router may translate to: NAT64's well-known
# prefix (RFC 6052: 64:ff9b::a9fe:a9fe is 169.254.169.254 on an IPv6-only host behind
# NAT64), the deprecated IPv4-compatible form (::127.0.0.1) and 6to4 (2002::/16). Python
# calls them global whatever they carry, so they are public only if that IPv4 address is.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
# Local-use NAT64 (RFC 8215) and the deprecated site-local range: never public.
_LOCAL_V6 = (
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("fec0::/10"),
)


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address in _NAT64 or address in _IPV4_COMPATIBLE:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def _public(address: IPAddress) -> bool:
    if not address.is_global or address.is_multicast:
        return False
    if any(address in network for network in _LOCAL_V6):
        return False
    inner = _embedded_ipv4(address)
    return inner is None or _public(inner)


def _kind(address: IPAddress) -> str:
    inner = _embedded_ipv4(address)
    if inner is not None and not _public(inner):
        return f"an IPv6 form of {_kind(inner)}"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (such as a cloud metadata service)"
    if address.is_private:
        return "a private network address"
    return "an address that is not public"


def _address_allowed(
    host: str, port: int, address: IPAddress, extra: tuple[str, ...]
) -> bool:
    if _public(address):
        return True
    if settings.DEBUG and address.is_loopback:
        return True
    entries = [*settings.JUDGE_ALLOWED_PRIVATE_HOSTS, *extra]
    offline = _offline_judge_entry()
    if offline:
        entries.append(offline)
    return any(_matches(entry, host, port, address) for entry in entries)


def judge_address_guard(extra_allowed: tuple[str, ...] = ()) -> AddressGuard:
    """The guard every judge connection passes; ``extra_allowed`` adds host:port entries
    for callers inside the server (the demo's private offline judge)."""

    def guard(host: str, port: int, addresses: list[IPAddress]) -> None:
        for address in addresses:
            if not _address_allowed(host, port, address, extra_allowed):
                where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                raise EgressRefused(
                    f"{where} resolves to {_kind(address)}, which judges may not "
                    f"reach. {HOST_HELP}"
                )

    return guard


def judge_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a judge's base URL (a message for its field), or None.

    A host that does not resolve yet is accepted: every connection is checked anyway,
    and a name may exist only where the workers run.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "Enter a valid URL, e.g. https://api.openai.com/v1."
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "Enter an http(s) URL, e.g. https://api.openai.com/v1."
    if parts.username is not None or parts.password is not None:
        return (
            "Remove the user name and password from the URL; give the key in the API key "
            "field, where it is stored encrypted."
        )
    if parts.query or parts.fragment:
        return "Enter the API's base URL without a query string or fragment."
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = resolve(parts.hostname, port)
    except OSError:
        return None
    try:
        judge_address_guard()(parts.hostname, port, addresses)
    except EgressRefused as exc:
        return str(exc)
    return None
