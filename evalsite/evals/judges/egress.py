"""Where judge calls may go and which server secrets they may carry.

Anyone who can create a project owns a judge connection, so its URL and key are user
input aimed at the server itself. The rules:

- A judge's key may come from an environment variable only if the operator allowed that
  name *for the judge's host* (``JUDGE_KEY_ENV_ALLOWED``: ``NAME@host[:port]``), so
  ``SECRET_KEY`` or ``DATABASE_URL`` never leave as a bearer token, and the server's
  ``OPENAI_API_KEY`` goes to api.openai.com only, never to a URL a project owner chose.
- A judge URL carries no credentials, and may reach only public addresses, except the
  hosts an operator listed (``JUDGE_ALLOWED_PRIVATE_HOSTS``), the configured offline judge,
  and loopback when ``DEBUG`` is on (``make run``'s offline judge). An IPv6 address that
  carries an IPv4 one (NAT64, 6to4, IPv4-compatible) is as public as the IPv4 address.
  The address check runs on every connection (``scoring.egress``), not only when the URL
  is saved.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings

from scoring.egress import (
    AddressGuard,
    EgressRefused,
    IPAddress,
    resolve,
    url_problem,
)

HOST_HELP = "An administrator can allow a private host with the JUDGE_ALLOWED_PRIVATE_HOSTS setting."


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ANY_HOST = "*"


@dataclass(frozen=True)
class KeyEnvEntry:
    """One ``JUDGE_KEY_ENV_ALLOWED`` entry: a variable name (or a prefix, ``PREFIX*``)
    and the one scheme, host and port its value may be sent to, or ``*`` for any.

    The scheme is part of the binding: ``NAME@host`` and ``NAME@host:port`` mean HTTPS
    (on 443 unless a port is given); a key goes out in the clear only where the
    operator wrote ``NAME@http://host[:port]`` (port 80 unless given)."""

    name: str
    prefix: bool
    host: str
    port: int | None
    scheme: str = "https"

    def admits_name(self, name: str) -> bool:
        return name.startswith(self.name) if self.prefix else name == self.name

    def admits_host(self, host: str, port: int, scheme: str = "https") -> bool:
        if self.host == ANY_HOST:
            return True
        default_port = 443 if self.scheme == "https" else 80
        return (
            self.scheme == scheme.lower()
            and self.host == _host_key(host)
            and (self.port or default_port) == port
        )

    def __str__(self) -> str:
        name = self.name + ("*" if self.prefix else "")
        if self.host == ANY_HOST:
            return f"{name}@*"
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "http://" if self.scheme == "http" else ""
        return f"{name}@{scheme}{host}" + (
            f":{self.port}" if self.port is not None else ""
        )


def _host_key(host: str) -> str:
    """A host as entries and URLs are compared: lower case, no brackets or final dot."""
    return host.strip().strip("[]").lower().rstrip(".")


def parse_key_env_entry(entry: str) -> KeyEnvEntry | str:
    """The entry, or why it admits nothing (a message for the operator)."""
    text = entry.strip()
    name, at, where = text.partition("@")
    if not at:
        return (
            f"JUDGE_KEY_ENV_ALLOWED entry {text!r} names no host, so it allows nothing: "
            f"a key is only sent to the hosts it is listed for. Write "
            f"{text}@api.example.com (the API's host, optionally :port), or {text}@* "
            "if any project owner may send it to any URL."
        )
    prefix = name.endswith("*")
    bare = name[:-1] if prefix else name
    if not _NAME.match(bare) or "*" in bare:
        return (
            f"JUDGE_KEY_ENV_ALLOWED entry {text!r}: before the @ goes a variable name "
            "(letters, digits, underscores) or a prefix ending in *, e.g. "
            "EVALSITE_JUDGE_KEY_*."
        )
    where = where.strip()
    if where == ANY_HOST:
        return KeyEnvEntry(bare, prefix, ANY_HOST, None, ANY_HOST)
    scheme, sep, rest = where.partition("://")
    scheme = scheme.lower() if sep else "https"
    where = rest if sep else where
    try:
        parts = urlsplit(f"//{where}")
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or not parts.hostname
        or "*" in where
        or parts.path
        or parts.username is not None
        or scheme not in ("http", "https")
    ):
        return (
            f"JUDGE_KEY_ENV_ALLOWED entry {text!r}: after the @ goes one host, "
            "optionally with :port, HTTPS unless written http:// (e.g. api.openai.com, "
            "vllm.internal:8443 or http://vllm.internal:8000), or *."
        )
    return KeyEnvEntry(bare, prefix, _host_key(parts.hostname), port, scheme)


def key_env_entries() -> tuple[list[KeyEnvEntry], list[str]]:
    """The usable ``JUDGE_KEY_ENV_ALLOWED`` entries, and a message for each other one."""
    entries: list[KeyEnvEntry] = []
    problems: list[str] = []
    for raw in settings.JUDGE_KEY_ENV_ALLOWED:
        if not raw.strip():
            continue
        parsed = parse_key_env_entry(raw)
        if isinstance(parsed, str):
            problems.append(parsed)
        else:
            entries.append(parsed)
    return entries, problems


def _url_host_port(url: str) -> tuple[str, int, str] | None:
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return (parts.hostname, port, parts.scheme.lower()) if parts.hostname else None


def judge_key_env_allowed(
    name: str, host: str, port: int, scheme: str = "https"
) -> bool:
    """Whether the operator allowed a judge to send env var ``name`` to
    ``scheme://host:port``."""
    entries, _ = key_env_entries()
    return any(
        e.admits_name(name) and e.admits_host(host, port, scheme) for e in entries
    )


def judge_key_env_problem(name: str, url: str) -> str | None:
    """Why a judge at ``url`` may not take its key from env var ``name`` (a message for
    the ``api_key_env`` field that never shows the variable's value), or None."""
    where = _url_host_port(url)
    entries, _ = key_env_entries()
    for_name = [e for e in entries if e.admits_name(name)]
    if where is not None and any(e.admits_host(*where) for e in for_name):
        return None
    if not entries:
        return (
            "This server allows no variable names (JUDGE_KEY_ENV_ALLOWED); enter the "
            "key itself."
        )
    if not for_name:
        return f"This server does not let judges read {name}. " + judge_key_env_help()
    hosts = sorted({str(e).partition("@")[2] for e in for_name})
    shown = f"{where[2]}://{where[0]}:{where[1]}" if where else "this URL"
    return (
        f"This server sends {name} only to {', '.join(hosts)} (over HTTPS unless "
        f"written http://), not to {shown}: enter "
        "the key itself for this URL, or ask an administrator to allow "
        f"{name} for this host (JUDGE_KEY_ENV_ALLOWED)."
    )


def judge_key_env_help() -> str:
    entries, _ = key_env_entries()
    if not entries:
        return "This server allows no variable names (JUDGE_KEY_ENV_ALLOWED); enter the key itself."
    return "Allowed: " + ", ".join(str(e) for e in entries) + "."


def judge_key_env_guard(name: str) -> Callable[..., None]:
    """Checks each connection's host and port for a key read from env var ``name``: the
    host the HTTP client really connects to, whatever the stored URL says. Called with
    the request's ``scheme`` too (before the request, and its key, is sent), the scheme
    must be the bound one; a bare connection (no scheme known yet) may be to any
    scheme the variable is bound to on that host and port."""

    def guard(host: str, port: int, scheme: str | None = None) -> None:
        schemes = (scheme,) if scheme else ("https", "http")
        if not any(judge_key_env_allowed(name, host, port, s) for s in schemes):
            where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            shown = f"{scheme}://{where}" if scheme else where
            raise EgressRefused(
                f"This server does not send {name} to {shown} (JUDGE_KEY_ENV_ALLOWED)."
            )

    return guard


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


class JudgeAddressGuard:
    """The guard every judge connection passes (an ``AddressGuard``), and with a key
    from the environment also the check of each request's scheme, host and port
    (``check_origin``, called by ``scoring.egress`` before a request is sent)."""

    def __init__(self, extra_allowed: tuple[str, ...], key_env: str | None) -> None:
        self._extra = extra_allowed
        self._key_guard = judge_key_env_guard(key_env) if key_env else None

    def __call__(self, host: str, port: int, addresses: list[IPAddress]) -> None:
        if self._key_guard is not None:
            self._key_guard(host, port)
        for address in addresses:
            if not _address_allowed(host, port, address, self._extra):
                where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                raise EgressRefused(
                    f"{where} resolves to {_kind(address)}, which judges may not "
                    f"reach. {HOST_HELP}"
                )

    def check_origin(self, scheme: str, host: str, port: int) -> None:
        if self._key_guard is not None:
            self._key_guard(host, port, scheme)


def judge_address_guard(
    extra_allowed: tuple[str, ...] = (), key_env: str | None = None
) -> AddressGuard:
    """The guard every judge connection passes; ``extra_allowed`` adds host:port entries
    for callers inside the server (the demo's private offline judge). With ``key_env``
    (the key comes from that environment variable), the scheme, host and port must also
    be ones the operator allowed that variable to be sent to."""
    return JudgeAddressGuard(extra_allowed, key_env)


def judge_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a judge's base URL (a message for its field), or None.

    A host that does not resolve yet is accepted (if the judge clients can parse it):
    every connection is checked anyway, and a name may exist only where the workers
    run.
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
        addresses = None
    if addresses is not None:
        try:
            judge_address_guard()(parts.hostname, port, addresses)
        except EgressRefused as exc:
            return str(exc)
    problem = url_problem(url)
    if problem is not None:
        # What the judge clients' parser refuses (a host that is not valid IDNA, such
        # as "①②⑧.0.0.1", which the C resolver reads as 128.0.0.1; a malformed
        # address) would fail every call to it.
        return (
            f"Enter a valid host name or address ({problem}; international names "
            "must be valid IDNA)."
        )
    return None
