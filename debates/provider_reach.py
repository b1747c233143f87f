"""Where a provider may point, and who may point it there.

A provider's base URL is where this server sends requests (and the key): pointed at loopback, a
private network or a link-local address, it reaches this machine's own services and the LAN, and
"Test connection" becomes a port scanner. So those addresses take the
`debates.use_private_provider_addresses` permission (superusers have it: the owner's local Ollama
stays one click), except networks the operator opens to every provider editor
(`AGORA_PROVIDER_ALLOWED_NETWORKS`). Cloud metadata addresses are refused to everyone. The host
is resolved and every address it resolves to is judged, as the research fetcher does
(`debates.search.addresses`), when the address is entered and again before each check someone asks
for. Debates call only providers a superuser approved (debates/admin.py).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext as _

from debates.search.addresses import Address, _embedded_ipv4, parse_networks, why_not_public

PERMISSION = "debates.use_private_provider_addresses"
# Where clouds serve instance credentials: AWS, GCP, Azure, OpenStack and DigitalOcean on
# link-local 169.254.0.0/16 (AWS ECS on 169.254.170.2), Alibaba Cloud on 100.100.100.200, AWS's
# IPv6 endpoint on fd00:ec2::254. No provider is ever sent there.
METADATA = tuple(
    ipaddress.ip_network(n) for n in ("169.254.0.0/16", "100.100.100.200/32", "fd00:ec2::254/128", "fe80::/10")
)


def is_metadata(address: Address) -> bool:
    return any(
        candidate.version == net.version and candidate in net
        for candidate in (address, _embedded_ipv4(address))
        if candidate is not None
        for net in METADATA
    )


def resolve(host: str) -> list[Address]:
    """Every address `host` stands for ([] when it does not resolve: nothing to reach yet)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos))


def may_use_private(user) -> bool:
    return bool(user is not None and user.is_active and user.has_perm(PERMISSION))


def refusal(base_url: str, user) -> str:
    """Why `user` may not have this server send requests to `base_url` ("" when they may)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.scheme.lower() not in ("http", "https") or not host:
        return _("A provider's address is an http or https URL with a host.")
    try:
        allowed = parse_networks(settings.AGORA_PROVIDER_ALLOWED_NETWORKS)
    except ValueError:  # a mistyped setting opens nothing (fail closed)
        allowed = []
    for address in resolve(host):
        if is_metadata(address):
            return _("%(host)s is a cloud metadata or link-local address (%(address)s): no provider may use it.") % {
                "host": host,
                "address": address,
            }
        if why_not_public(address) is None or any(address.version == n.version and address in n for n in allowed):
            continue
        if not may_use_private(user):
            return _(
                "%(host)s is a loopback or private address (%(address)s): only users allowed to use private "
                "provider addresses may point a provider there (AGORA_PROVIDER_ALLOWED_NETWORKS opens a network "
                "to everyone)."
            ) % {"host": host, "address": address}
    return ""
