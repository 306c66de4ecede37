"""Outbound connections to a judge, checked where they are made.

A judge URL is typed by a user, so it may name an address of the server's own network
(loopback, a private range, a cloud metadata service). Checking the URL when it is saved
is not enough: its name may resolve elsewhere by the time a call is made (DNS
rebinding). So every connection of a judge client resolves the host itself, asks an
``AddressGuard`` about every address, and connects to the checked address, never to a
name resolved a second time. The guard is the caller's policy; this module only makes
sure it is asked on every connection.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import Callable, Iterable
from typing import Any

import httpcore2
import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Raises EgressRefused to refuse a connection to (host, port) that resolved to addresses.
AddressGuard = Callable[[str, int, list[IPAddress]], None]


class EgressRefused(httpcore2.ConnectError):
    """A connection the address policy refused; the message is safe to show a user.

    A ConnectError so that httpx2 and the openai client wrap it as they wrap any failed
    connection (``refused_cause`` finds it again behind their exceptions).
    """


def url_problem(url: str) -> str | None:
    """Why the HTTP client cannot use ``url`` (a host that is not valid IDNA, a
    malformed IPv4 or IPv6 address, ...), or None. The same parser the judge clients
    use, so a URL accepted here does not fail when a client is built for it."""
    try:
        httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return None


def normalise_address(address: IPAddress) -> IPAddress:
    """An IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) as the IPv4 address it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (a literal address resolves to itself; so do
    the odd forms the C resolver accepts, such as ``2130706433`` for 127.0.0.1).
    Raises OSError when the name does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (UnicodeError, ValueError) as exc:  # IDNA cannot encode it; a NUL in it
        raise socket.gaierror(f"could not resolve host {host}") from exc
    seen: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        # Drop an IPv6 zone ("fe80::1%eth0"); the address itself is what is checked.
        address = normalise_address(
            ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        )
        if address not in seen:
            seen.append(address)
    return seen


def _checked_addresses(
    guard: AddressGuard, host: str, port: int, addresses: Any
) -> list[IPAddress]:
    if isinstance(addresses, OSError):
        raise httpcore2.ConnectError(f"could not resolve host {host}") from addresses
    guard(host, port, addresses)
    return list(addresses)


def _resolve_or_error(host: str, port: int) -> list[IPAddress] | OSError:
    try:
        return resolve(host, port)
    except OSError as exc:
        return exc


class _GuardedBackend(httpcore2.NetworkBackend):
    def __init__(self, guard: AddressGuard) -> None:
        self._guard = guard
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        addresses = _checked_addresses(
            self._guard, host, port, _resolve_or_error(host, port)
        )
        error: httpcore2.ConnectError | None = None
        for address in addresses:
            try:
                # TLS still verifies and sends the name from the URL (httpcore2 takes
                # the server name from the request's origin, not from this address).
                return self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore2.ConnectError as exc:
                error = exc
        assert error is not None  # resolve() returns at least one address
        raise error

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        raise EgressRefused("judge connections go over TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncGuardedBackend(httpcore2.AsyncNetworkBackend):
    """_GuardedBackend for asyncio clients (the name is resolved off the event loop)."""

    def __init__(self, guard: AddressGuard) -> None:
        self._guard = guard
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        resolved = await asyncio.to_thread(_resolve_or_error, host, port)
        addresses = _checked_addresses(self._guard, host, port, resolved)
        error: httpcore2.ConnectError | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore2.ConnectError as exc:
                error = exc
        assert error is not None
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise EgressRefused("judge connections go over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _origin_check(guard: AddressGuard) -> Callable[[str, str, int], None] | None:
    """The guard's ``check_origin(scheme, host, port)``, if it has one: asked before
    each request is sent, as a connection (checked by address) does not know whether
    TLS will run over it, and a key bound to HTTPS must never go out in the clear."""
    return getattr(guard, "check_origin", None)


def _origin(request: httpcore2.Request) -> tuple[str, str, int]:
    scheme = request.url.scheme.decode("ascii").lower()
    port = request.url.port or (443 if scheme == "https" else 80)
    return scheme, request.url.host.decode("ascii"), port


class _GuardedPool(httpcore2.ConnectionPool):
    def __init__(self, guard: AddressGuard, **kwargs: Any) -> None:
        super().__init__(network_backend=_GuardedBackend(guard), **kwargs)
        self._check_origin = _origin_check(guard)

    def handle_request(self, request: httpcore2.Request) -> httpcore2.Response:
        if self._check_origin is not None:
            self._check_origin(*_origin(request))
        return super().handle_request(request)


class _AsyncGuardedPool(httpcore2.AsyncConnectionPool):
    def __init__(self, guard: AddressGuard, **kwargs: Any) -> None:
        super().__init__(network_backend=_AsyncGuardedBackend(guard), **kwargs)
        self._check_origin = _origin_check(guard)

    async def handle_async_request(
        self, request: httpcore2.Request
    ) -> httpcore2.Response:
        if self._check_origin is not None:
            self._check_origin(*_origin(request))
        return await super().handle_async_request(request)


_DEFAULT_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=1000)


@functools.cache
def shared_ssl_context(*, trust_env: bool = False) -> ssl.SSLContext:
    """The verifying TLS context every judge client of this process shares (an
    SSLContext is made to be shared by many connections).

    Building one reads the whole CA bundle: 57 ms each at load 5. A dispatcher of a
    judge at 512 in flight makes 64 clients (dispatch._client), and each built two
    (its transport's and its pool's): 7 s of the event loop before the first call,
    again at every hand-over, and 15 of the 38 s of CPU that 4,500 calls at 2 s × 512
    took in process (py-spy, /work/scratch/disp512.py)."""
    return httpx2.create_ssl_context(trust_env=trust_env)


class GuardedTransport(httpx2.HTTPTransport):
    """httpx2's transport with every TCP connection checked by ``guard``.

    No proxy from the environment: a proxy would be the only address checked.
    """

    def __init__(
        self, guard: AddressGuard, *, limits: httpx2.Limits | None = None
    ) -> None:
        limits = limits or _DEFAULT_LIMITS
        super().__init__(verify=shared_ssl_context(), limits=limits, trust_env=False)
        # The pool httpx2 would build, with our network backend: httpx2 takes no backend
        # argument, httpcore2's pool does.
        self._pool = _GuardedPool(
            guard,
            ssl_context=shared_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
        )


class AsyncGuardedTransport(httpx2.AsyncHTTPTransport):
    """GuardedTransport for ``httpx2.AsyncClient``."""

    def __init__(
        self, guard: AddressGuard, *, limits: httpx2.Limits | None = None
    ) -> None:
        limits = limits or _DEFAULT_LIMITS
        super().__init__(verify=shared_ssl_context(), limits=limits, trust_env=False)
        self._pool = _AsyncGuardedPool(
            guard,
            ssl_context=shared_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
        )


def guarded_http_client(guard: AddressGuard, timeout: float) -> httpx2.Client:
    """An httpx2 client for a judge: connections checked by ``guard``, redirects never
    followed (a redirect could send the request, with its key, to another address)."""
    return httpx2.Client(
        transport=GuardedTransport(guard),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
    )


def guarded_async_http_client(
    guard: AddressGuard, timeout: float
) -> httpx2.AsyncClient:
    """guarded_http_client for asyncio."""
    return httpx2.AsyncClient(
        transport=AsyncGuardedTransport(guard),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
    )


def refused_cause(exc: BaseException) -> EgressRefused | None:
    """The EgressRefused behind an exception (the openai client wraps it), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, EgressRefused):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
