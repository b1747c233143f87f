"""Which forwarded addresses to believe: `X-Forwarded-For` only from the proxies in
`AGORA_TRUSTED_PROXIES`, in daphne's scope and in Agora's own reading of it.

daphne's `--proxy-headers` takes the header from anyone: with nothing in front (the Procfile run
published directly) one client wrote 500 invented addresses and was 500 visitors, holding every
seat of a shared debate (hardening round three). Under `python -m agora.web` (agora/web.py)
daphne's reading is replaced by `forwarded` below, so the scope's `client` (Django's
REMOTE_ADDR) and scheme come from the header only when the TCP peer is a trusted proxy.

Behind a trusted proxy the address is the header's *last* entry, the one the nearest proxy
added: with nginx's `$proxy_add_x_forwarded_for` (which appends) the first entries are whatever
the client wrote (docs/production.md, "Reverse proxy").
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def trusted(address: str) -> bool:
    """Is `address` (a TCP peer) one of AGORA_TRUSTED_PROXIES?"""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in _networks(tuple(settings.AGORA_TRUSTED_PROXIES)))


def last_forwarded(values: list[bytes]) -> str:
    """The last address in the `X-Forwarded-For` headers' values ('' when there is none)."""
    return values[-1].decode("latin-1").split(",")[-1].strip() if values else ""


def forwarded(
    headers,
    address_header_name="X-Forwarded-For",
    port_header_name="X-Forwarded-Port",
    proto_header_name="X-Forwarded-Proto",
    original_addr=None,
    original_scheme=None,
):
    """daphne's `parse_x_forwarded_for` (same arguments, same answer) for a trusted peer; anyone
    else's headers are left unread."""
    from daphne.utils import parse_x_forwarded_for
    from twisted.web.http_headers import Headers

    if original_addr is None or not trusted(str(original_addr[0])):
        return original_addr, original_scheme
    address, scheme = parse_x_forwarded_for(
        headers, address_header_name, port_header_name, proto_header_name, original_addr, original_scheme
    )
    if isinstance(headers, Headers):
        headers = dict(headers.getAllRawHeaders())
    named = (address_header_name or "").lower().encode()
    values = [value for name, raw in headers.items() if name.lower() == named for value in _listed(raw)]
    last = last_forwarded(values)
    if last and address is not None:
        address = [last, address[1]]
    return address, scheme


def _listed(raw) -> list[bytes]:
    return list(raw) if isinstance(raw, list | tuple) else [raw]


def install_in_daphne() -> None:
    """daphne's HTTP and WebSocket protocols read forwarded headers through `forwarded`."""
    from daphne import http_protocol, ws_protocol

    http_protocol.parse_x_forwarded_for = forwarded
    ws_protocol.parse_x_forwarded_for = forwarded
