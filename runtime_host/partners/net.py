"""The network boundary of partner calls: which addresses may be reached, DNS resolved by Hearth itself, and an
httpx transport bound to one pinned HTTPS origin.

`forbidden_reason(ip)` says why an address is off limits (loopback, private, link-local incl. cloud metadata,
CGNAT, multicast, unspecified, reserved, and the IPv4-mapped / NAT64 / 6to4 / IPv4-compatible IPv6 forms of
them). `PinnedTransport` refuses any request that is not to the pinned origin, resolves the host with the
injected resolver when it opens a connection, checks *every* address the name resolves to, and connects to a
checked address (so DNS cannot change between check and connect), while TLS still verifies the pinned name
(SNI and Host stay the partner's host name). Right after the TLS handshake, before any byte of the request is
written, it compares the certificate with the pinned fingerprint. Redirects are refused, never followed.
Reply bodies are streamed and cut at the size cap.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from runtime_host.partners.errors import (
    AddressRefused,
    CertificateRefused,
    PartnerError,
    PartnerTimeout,
    PartnerUnavailable,
    RedirectRefused,
    ReplyTooLarge,
)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: An async function from (host name, port) to the addresses it resolves to (as strings).
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Named ranges, checked in order, so the refusal says what the address is.
_FORBIDDEN: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = (
    (_V4("0.0.0.0/8"), "an unspecified / 'this network' address (0.0.0.0/8)"),
    (_V4("127.0.0.0/8"), "a loopback address (127.0.0.0/8)"),
    (_V4("10.0.0.0/8"), "a private network address (10.0.0.0/8)"),
    (_V4("172.16.0.0/12"), "a private network address (172.16.0.0/12)"),
    (_V4("192.168.0.0/16"), "a private network address (192.168.0.0/16)"),
    (_V4("169.254.169.254/32"), "the cloud metadata address (169.254.169.254)"),
    (_V4("169.254.0.0/16"), "a link-local address (169.254.0.0/16)"),
    (_V4("100.64.0.0/10"), "a shared carrier-grade NAT address (100.64.0.0/10)"),
    (_V4("224.0.0.0/4"), "a multicast address (224.0.0.0/4)"),
    (_V4("240.0.0.0/4"), "a reserved or broadcast address (240.0.0.0/4)"),
    (_V6("::/128"), "the unspecified address (::)"),
    (_V6("::1/128"), "the loopback address (::1)"),
    (_V6("fd00:ec2::254/128"), "the cloud metadata address (fd00:ec2::254)"),
    (_V6("fc00::/7"), "a private network address (fc00::/7)"),
    (_V6("fe80::/10"), "a link-local address (fe80::/10)"),
    (_V6("fec0::/10"), "a site-local address (fec0::/10)"),
    (_V6("ff00::/8"), "a multicast address (ff00::/8)"),
)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4, IPv4-compatible), with the form's name."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4"
    packed = ip.packed
    if ip in _V6("64:ff9b::/96") or ip in _V6("64:ff9b:1::/48"):
        return ipaddress.IPv4Address(packed[-4:]), "NAT64"
    if packed[:12] == bytes(12) and int(ip) > 1:
        return ipaddress.IPv4Address(packed[-4:]), "IPv4-compatible"
    return None


def forbidden_reason(ip: IPAddress | str) -> str | None:
    """Why `ip` may not be called by a partner client, or None when it is a public unicast address."""
    if isinstance(ip, str):
        ip = parse_ip(ip)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            return f"a scoped IPv6 address ({ip})"
        inner = _embedded_ipv4(ip)
        if inner is not None:
            why = forbidden_reason(inner[0])
            if why:
                return f"{why}, in its {inner[1]} IPv6 form"
    for net, why in _FORBIDDEN:
        if ip.version == net.version and ip in net:
            return why
    if ip.is_multicast:
        return "a multicast address"
    if not ip.is_global:
        return "an address that is not on the public internet (a special-purpose range)"
    return None


def parse_ip(text: str) -> IPAddress:
    """An address from its text form (IPv6 brackets allowed); ValueError if it is not one."""
    return ipaddress.ip_address(text.strip().removeprefix("[").removesuffix("]"))


def is_ip_literal(host: str) -> bool:
    try:
        parse_ip(host)
        return True
    except ValueError:
        return False


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolves `host` with the operating system (getaddrinfo), TCP addresses only."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    out: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        addr = str(sockaddr[0])
        if addr not in out:
            out.append(addr)
    return out


class AddressPolicy:
    """Decides which resolved addresses a connection may use.

    `allowed_for_tests` is the test-only allowance: exact loopback addresses that are let through although
    they are forbidden. Nothing in Hearth builds a policy with it except `PartnerClient._for_tests`; it is
    not read from any setting, environment variable or partner record.
    """

    def __init__(self, allowed_for_tests: Iterable[str] = ()) -> None:
        allowed: set[IPAddress] = set()
        for a in allowed_for_tests:
            ip = parse_ip(a)
            if not ip.is_loopback:
                raise ValueError(f"The test-only allowance takes loopback addresses only, not {a!r}.")
            allowed.add(ip)
        self._allowed: frozenset[IPAddress] = frozenset(allowed)

    def check(self, host: str, addresses: Sequence[str]) -> list[IPAddress]:
        """The addresses to connect to, in order; AddressRefused if there are none or any one is forbidden.

        Every address must pass: a name that resolves into a private network at all is refused, even when
        it also has public addresses (a partner's name never legitimately points inside our network).
        """
        if not addresses:
            raise AddressRefused(f"{host} did not resolve to any address, so Hearth cannot call it. "
                                 "Check the partner's address in Settings → Partners.")
        ips: list[IPAddress] = []
        for text in addresses:
            try:
                ip = parse_ip(text)
            except ValueError:
                raise AddressRefused(f"{host} resolved to {text!r}, which is not an IP address; the call was "
                                     "not made.") from None
            if ip in self._allowed:
                ips.append(ip)
                continue
            why = forbidden_reason(ip)
            if why:
                where = f"it is {why}" if is_ip_literal(host) else f"it resolves to {text.strip()}, which is {why}"
                raise AddressRefused(f"Refused to call {host}: {where}. Partner agents are reached only on the "
                                     "public internet; nothing was sent.")
            ips.append(ip)
        return ips


def certificate_sha256(der: bytes) -> str:
    """The pin form of a certificate: "sha256:" and the lowercase hex SHA-256 of its DER bytes."""
    return "sha256:" + hashlib.sha256(der).hexdigest()


def normalise_fingerprint(text: str) -> str:
    """Accepts "sha256:ab12…", "AB:12:…" or bare hex; returns "sha256:<64 lowercase hex>"."""
    t = text.strip()
    if t.lower().startswith("sha256:"):
        t = t[7:]
    elif t.lower().startswith("sha256 "):
        t = t[7:]
    t = t.replace(":", "").replace(" ", "").lower()
    if len(t) != 64 or any(c not in "0123456789abcdef" for c in t):
        raise ValueError(f"{text!r} is not a SHA-256 certificate fingerprint (64 hex digits, colons allowed).")
    return "sha256:" + t


# ----------------------------------------------------------------------------------- httpcore plumbing

class _PinnedStream(httpcore.AsyncNetworkStream):
    """A TCP stream to a checked address; after TLS it checks the certificate pin before anything is written."""

    def __init__(self, inner: httpcore.AsyncNetworkStream, host: str, pin: str | None, ip: IPAddress) -> None:
        self._inner = inner
        self._host = host
        self._pin = pin
        self.ip = ip

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        try:
            tls = await self._inner.start_tls(ssl_context, server_hostname=server_hostname, timeout=timeout)
        except httpcore.ConnectError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(exc):
                detail = getattr(cause, "verify_message", "") or str(exc)
                raise CertificateRefused(
                    f"The TLS certificate of {self._host} did not verify against the pinned CA ({detail}). "
                    "Nothing was sent. If the partner changed its certificate, an operator must re-pin it in "
                    "Settings → Partners."
                ) from exc
            raise
        if self._pin is not None:
            ssl_object = tls.get_extra_info("ssl_object")
            der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
            seen = certificate_sha256(der) if der else "no certificate"
            if seen != self._pin:
                await tls.aclose()
                raise CertificateRefused(
                    f"{self._host} presented a TLS certificate ({seen}) that is not the one pinned when the "
                    f"partner was added ({self._pin}). Nothing was sent. If the partner really changed its "
                    "certificate, an operator must re-pin it in Settings → Partners."
                )
        return _PinnedStream(tls, self._host, None, self.ip)

    def get_extra_info(self, info: str) -> Any:
        if info == "hearth_ip":
            return self.ip
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Resolves with the injected resolver, checks every address, connects only to a checked one."""

    def __init__(self, host: str, resolver: Resolver, policy: AddressPolicy, pin: str | None,
                 connect_timeout: float) -> None:
        self._host = host
        self._resolver = resolver
        self._policy = policy
        self._pin = pin
        self._connect_timeout = connect_timeout
        self._inner = httpcore.AnyIOBackend()
        self.connected_to: list[IPAddress] = []

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        if host.lower() != self._host:
            raise AddressRefused(f"Refused to connect to {host}: this partner is pinned to {self._host}.")
        if is_ip_literal(host):
            addresses: Sequence[str] = [host]
        else:
            try:
                addresses = await asyncio.wait_for(self._resolver(host, port), self._connect_timeout)
            except TimeoutError:
                raise PartnerTimeout(f"Looking up {host} took longer than {self._connect_timeout:g} s; "
                                     "nothing was sent.") from None
            except OSError as exc:
                raise PartnerUnavailable(f"Could not look up {host} ({exc}); nothing was sent.") from exc
        ips = self._policy.check(host, list(addresses))
        last: Exception | None = None
        for ip in ips:
            try:
                stream = await self._inner.connect_tcp(str(ip), port, timeout=timeout, local_address=local_address,
                                                       socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
                continue
            self.connected_to.append(ip)
            return _PinnedStream(stream, host, self._pin, ip)
        assert last is not None
        raise last

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        raise AddressRefused("Partner calls never use local sockets.")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _CappedBody(httpx.AsyncByteStream):
    """The reply body, streamed and cut at `cap` bytes."""

    def __init__(self, inner: AsyncIterator[bytes] | Any, cap: int, host: str, on_close: Callable[[], Awaitable[None]]):
        self._inner = inner
        self._cap = cap
        self._host = host
        self._on_close = on_close
        self.received = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self.received += len(chunk)
                if self.received > self._cap:
                    raise ReplyTooLarge(
                        f"The reply from {self._host} went past the {_size(self._cap)} limit and was cut; "
                        "it was dropped, nothing of it reaches the assistant."
                    )
                yield chunk
        except httpcore.TimeoutException as exc:
            raise PartnerTimeout(f"{self._host} stopped sending its reply for too long; the reply was cut.") from exc
        except httpcore.NetworkError as exc:
            raise PartnerUnavailable(f"The connection to {self._host} broke during the reply ({exc}).") from exc
        except httpcore.ProtocolError as exc:
            raise PartnerUnavailable(f"{self._host} sent a reply that is not valid HTTP ({exc}).") from exc

    async def aclose(self) -> None:
        await self._on_close()


def _size(n: int) -> str:
    def fmt(x: float) -> str:
        return f"{x:.1f}".removesuffix(".0")

    return f"{fmt(n / 1048576)} MiB" if n >= 1048576 else f"{fmt(n / 1024)} KiB" if n >= 1024 else f"{n} bytes"


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that only ever talks to one pinned HTTPS origin (see the module docstring)."""

    def __init__(self, endpoint: str, *, resolver: Resolver, policy: AddressPolicy, ssl_context: ssl.SSLContext,
                 fingerprint: str | None, max_reply_bytes: int, connect_timeout: float) -> None:
        parts = urlsplit(endpoint)
        if parts.scheme != "https" or not parts.hostname:
            raise AddressRefused(f"Refused {endpoint!r}: partner calls use HTTPS only.")
        self._host = parts.hostname.lower()
        self._port = parts.port or 443
        self._max = max_reply_bytes
        self.backend = _PinnedBackend(self._host, resolver, policy, fingerprint, connect_timeout)
        self._pool = httpcore.AsyncConnectionPool(ssl_context=ssl_context, max_connections=2,
                                                  max_keepalive_connections=0, http1=True, http2=False,
                                                  retries=0, network_backend=self.backend)
        self._policy = policy
        self.last_body: _CappedBody | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "https":
            raise AddressRefused(f"Refused to call {url}: partner calls use HTTPS only; nothing was sent.")
        if url.host.lower() != self._host or (url.port or 443) != self._port:
            raise AddressRefused(f"Refused to call {url.host}:{url.port or 443}: this partner is pinned to "
                                 f"{self._host}:{self._port}; nothing was sent.")
        assert isinstance(request.stream, httpx.AsyncByteStream)
        req = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            resp = await self._pool.handle_async_request(req)
        except PartnerError:
            raise
        except httpcore.TimeoutException as exc:
            limits = request.extensions.get("timeout") or {}
            if isinstance(exc, httpcore.ConnectTimeout | httpcore.PoolTimeout):
                what, limit = "accept a connection", limits.get("connect")
            elif isinstance(exc, httpcore.WriteTimeout):
                what, limit = "take the message", limits.get("write")
            else:
                what, limit = "answer", limits.get("read")
            within = f" within {limit:g} s" if isinstance(limit, int | float) else " in time"
            raise PartnerTimeout(f"{self._host} did not {what}{within}; the call was cut.") from exc
        except httpcore.NetworkError as exc:
            raise PartnerUnavailable(f"Could not reach {self._host}:{self._port} ({exc or type(exc).__name__}). "
                                     "The partner may be down; try again later.") from exc
        except httpcore.ProtocolError as exc:
            raise PartnerUnavailable(f"{self._host} answered with something that is not valid HTTP ({exc}).") from exc

        async def close() -> None:
            if hasattr(resp.stream, "aclose"):
                await resp.stream.aclose()

        if 300 <= resp.status < 400 and resp.status != 304:
            await close()
            location = ""
            for k, v in resp.headers:
                if k.lower() == b"location":
                    location = v.decode("latin-1")
            raise RedirectRefused(self._redirect_message(str(url), resp.status, location))
        for k, v in resp.headers:
            if k.lower() == b"content-length" and v.strip().isdigit() and int(v) > self._max:
                await close()
                raise ReplyTooLarge(f"The reply from {self._host} announced {_size(int(v))}, past the "
                                    f"{_size(self._max)} limit; it was not read.")
        body = _CappedBody(resp.stream, self._max, self._host, close)
        self.last_body = body
        return httpx.Response(status_code=resp.status, headers=resp.headers, stream=body, extensions=resp.extensions)

    def _redirect_message(self, url: str, status: int, location: str) -> str:
        if not location:
            return f"{self._host} answered with a redirect ({status}) and no target; Hearth does not follow redirects."
        target = urljoin(url, location)
        parts = urlsplit(target)
        why = ""
        if parts.scheme != "https":
            why = f" The target is not even HTTPS ({parts.scheme or 'no scheme'})."
        elif parts.hostname and is_ip_literal(parts.hostname):
            reason = forbidden_reason(parts.hostname)
            if reason:
                why = f" The target is {reason}."
        return (f"{self._host} tried to redirect the call ({status}) to {target}. Refused: a partner's address "
                f"is pinned when it is added and redirects are never followed.{why} If the partner really moved, "
                "an operator must re-add it in Settings → Partners.")

    async def aclose(self) -> None:
        await self._pool.aclose()
