"""The SSRF guard: which URLs the server may fetch on behalf of a search result.

Result URLs come from the web (and, through prompt injection, from whoever wrote a page), so a
fetch must never reach the server's own network: the cloud metadata service (169.254.169.254),
localhost admin ports, the office LAN. `vet` resolves the host once, refuses the URL if ANY of its
addresses is not public, and returns one vetted address for the caller to connect to: connecting
by name afterwards would resolve again, and a hostile DNS server can answer differently the second
time (DNS rebinding).

Operators who do want a private network searched (an intranet wiki) list it in
`allowed_networks`, e.g. ["10.0.0.0/8"].
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from urllib.parse import SplitResult, urlsplit

from .errors import FetchFailed, FetchRefused

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_SCHEMES = {"http": 80, "https": 443}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_ALLOW_HINT = "AGORA_FETCH_ALLOWED_NETWORKS lets an operator allow a network"


def parse_networks(allowed_networks: Sequence[str]) -> list[Network]:
    """CIDR strings to networks; a bad entry is a configuration error, reported as such."""
    networks = []
    for raw in allowed_networks:
        try:
            networks.append(ipaddress.ip_network(str(raw).strip(), strict=False))
        except ValueError as exc:
            raise ValueError(
                f"allowed network {raw!r} is not a CIDR network (e.g. 10.0.0.0/8 or 127.0.0.2/32): "
                f"fix AGORA_FETCH_ALLOWED_NETWORKS ({exc})"
            ) from exc
    return networks


def _embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (::ffff:a.b.c.d, 6to4, Teredo, NAT64), if any:
    ::ffff:127.0.0.1 reaches localhost as surely as 127.0.0.1 does."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def why_not_public(address: Address) -> str | None:
    """Why `address` is not a public address (e.g. "a link-local address"), or None if it is."""
    # The embedded IPv4 address first: it says where the packets really go (::ffff:127.0.0.1 is
    # "loopback", though ipaddress files the whole ::ffff:0:0/96 block under "private").
    for candidate in (_embedded_ipv4(address), address):
        if candidate is None:
            continue
        # Most specific reason first: 127.0.0.1 is also "private" to ipaddress.
        if candidate.is_unspecified:
            return "an unspecified address"
        if candidate.is_loopback:
            return "a loopback address"
        if candidate.is_link_local:
            return "a link-local address"
        if candidate.is_multicast:
            return "a multicast address"
        if candidate.is_private:
            return "a private address"
        if candidate.is_reserved:
            return "a reserved address"
        if not candidate.is_global:  # e.g. 100.64.0.0/10, carrier-grade NAT
            return "not a public address"
    return None


async def _resolve(host: str, port: int, url: str) -> list[Address]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchFailed(f"{url} was not fetched: the name {host} could not be resolved ({exc})") from exc
    addresses: list[Address] = []
    for *_, sockaddr in infos:
        # Drop an IPv6 scope ("fe80::1%eth0"): it does not change what kind of address it is.
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise FetchFailed(f"{url} was not fetched: the name {host} has no addresses")
    return addresses


async def vet(url: str, allowed_networks: Sequence[str] = ()) -> tuple[SplitResult, str]:
    """The parsed URL and one address to connect to, or FetchRefused saying why not.

    Refused: a scheme other than http/https, no host, or a host with any address that is not
    public, unless that address is inside one of `allowed_networks` (CIDR strings). A name that
    does not resolve raises FetchFailed (nothing was refused; there is nothing to reach).
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise FetchRefused(f"{url} was not fetched: it is not a valid URL ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        shown = f"{scheme}:" if scheme else "no scheme"
        raise FetchRefused(f"{url} was not fetched: only http and https pages are fetched, not {shown}")
    host = parts.hostname
    if not host:
        raise FetchRefused(f"{url} was not fetched: the URL names no host")
    networks = parse_networks(allowed_networks)
    try:
        addresses: list[Address] = [ipaddress.ip_address(host)]
        literal = True
    except ValueError:
        addresses = await _resolve(host, port or _SCHEMES[scheme], url)
        literal = False
    for address in addresses:
        reason = why_not_public(address)
        if reason is None or any(address.version == net.version and address in net for net in networks):
            continue
        if literal:
            subject = f"{host} is"
        else:
            subject = f"{host} resolves to {address}, which is"
        raise FetchRefused(
            f"{url} was not fetched: {subject} {reason}; the server fetches only public addresses ({_ALLOW_HINT})"
        )
    return parts, str(addresses[0])
