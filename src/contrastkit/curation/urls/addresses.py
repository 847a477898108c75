"""Which addresses the checker may connect to, checked when a host is resolved.

:class:`AddressPolicy` resolves a host itself (or takes a fixed ``--resolve`` address)
and refuses every address that is not public unicast unless the config allows it;
:class:`GuardedResolver` plugs it into aiohttp, so every new connection (first request,
every redirect, every new pooled connection) is checked *at connect time* and DNS
rebinding cannot slip a private address past the check.

What "not public" means is :func:`non_public_reason`: every range of the IANA IPv4 and
IPv6 special-purpose address registries (:data:`IPV4_SPECIAL`, :data:`IPV6_SPECIAL`),
multicast, the reserved 240.0.0.0/4 and limited broadcast, every IPv6 address outside the
global unicast space 2000::/3, and anything Python's :mod:`ipaddress` does not call
global. IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-translated,
IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged as the IPv4 address they
embed (:func:`embedded_ipv4`); Teredo (2001::/32) and the local-use NAT64 prefix
64:ff9b:1::/48, whose embedded addresses cannot be read reliably, are refused outright.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

from aiohttp.abc import AbstractResolver, ResolveResult

from contrastkit.curation.urls.config import CheckConfig

__all__ = [
    "IPV4_SPECIAL",
    "IPV6_SPECIAL",
    "AddressPolicy",
    "BlockedAddressError",
    "DNSLookupError",
    "GuardedResolver",
    "embedded_ipv4",
    "non_public_reason",
]

IPAddress = IPv4Address | IPv6Address


def _table4(*rows: tuple[str, str]) -> tuple[tuple[IPv4Network, str], ...]:
    networks = [(IPv4Network(network), name) for network, name in rows]
    return tuple(sorted(networks, key=lambda row: -row[0].prefixlen))  # most specific first


def _table6(*rows: tuple[str, str]) -> tuple[tuple[IPv6Network, str], ...]:
    networks = [(IPv6Network(network), name) for network, name in rows]
    return tuple(sorted(networks, key=lambda row: -row[0].prefixlen))


IPV4_SPECIAL = _table4(
    # The IANA IPv4 Special-Purpose Address Registry, every entry (the "globally
    # reachable" anycast services in 192.0.0.0/24 and the AS112 and AMT blocks too: no
    # image is served from them), plus multicast.
    ("0.0.0.0/8", "'this network' (RFC 791)"),
    ("10.0.0.0/8", "private-use (RFC 1918)"),
    ("100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)"),
    ("127.0.0.0/8", "loopback (RFC 1122)"),
    ("169.254.0.0/16", "link-local (RFC 3927)"),
    ("172.16.0.0/12", "private-use (RFC 1918)"),
    ("192.0.0.0/24", "IETF protocol assignments (RFC 6890)"),
    ("192.0.0.0/29", "IPv4 service continuity prefix, DS-Lite (RFC 7335)"),
    ("192.0.0.8/32", "IPv4 dummy address (RFC 7600)"),
    ("192.0.0.9/32", "port control protocol anycast (RFC 7723)"),
    ("192.0.0.10/32", "traversal using relays around NAT anycast (RFC 8155)"),
    ("192.0.0.170/31", "NAT64/DNS64 discovery (RFC 7050)"),
    ("192.0.2.0/24", "documentation TEST-NET-1 (RFC 5737)"),
    ("192.31.196.0/24", "AS112-v4 (RFC 7535)"),
    ("192.52.193.0/24", "automatic multicast tunneling (RFC 7450)"),
    ("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)"),
    ("192.168.0.0/16", "private-use (RFC 1918)"),
    ("192.175.48.0/24", "direct delegation AS112 service (RFC 7534)"),
    ("198.18.0.0/15", "benchmarking (RFC 2544)"),
    ("198.51.100.0/24", "documentation TEST-NET-2 (RFC 5737)"),
    ("203.0.113.0/24", "documentation TEST-NET-3 (RFC 5737)"),
    ("224.0.0.0/4", "multicast (RFC 5771)"),
    ("240.0.0.0/4", "reserved (RFC 1112)"),
    ("255.255.255.255/32", "limited broadcast (RFC 919)"),
)
"""Refused IPv4 ranges and what they are, most specific first."""

IPV6_SPECIAL = _table6(
    # The IANA IPv6 Special-Purpose Address Registry, every entry, plus multicast and the
    # deprecated site-local range. The forms that embed an IPv4 address (::ffff:0:0/96,
    # ::ffff:0:0:0/96, ::/96, 64:ff9b::/96, 2002::/16) are judged as that IPv4 address
    # before this table is consulted; Teredo and 64:ff9b:1::/48 are refused as they are.
    ("::/128", "unspecified address (RFC 4291)"),
    ("::1/128", "loopback (RFC 4291)"),
    ("64:ff9b:1::/48", "local-use IPv4/IPv6 translation (RFC 8215)"),
    ("100::/64", "discard-only (RFC 6666)"),
    ("100:0:0:1::/64", "dummy IPv6 prefix (RFC 9780)"),
    ("2001::/23", "IETF protocol assignments (RFC 2928)"),
    ("2001::/32", "Teredo tunnel (RFC 4380): its IPv4 endpoints are refused unread"),
    ("2001:1::1/128", "port control protocol anycast (RFC 7723)"),
    ("2001:1::2/128", "traversal using relays around NAT anycast (RFC 8155)"),
    ("2001:1::3/128", "DNS-SD service registration protocol anycast (RFC 9665)"),
    ("2001:2::/48", "benchmarking (RFC 5180)"),
    ("2001:3::/32", "automatic multicast tunneling (RFC 7450)"),
    ("2001:4:112::/48", "AS112-v6 (RFC 7535)"),
    ("2001:10::/28", "deprecated ORCHID (RFC 4843)"),
    ("2001:20::/28", "ORCHIDv2 (RFC 7343)"),
    ("2001:30::/28", "drone remote ID protocol entity tags (RFC 9374)"),
    ("2001:db8::/32", "documentation (RFC 3849)"),
    ("2620:4f:8000::/48", "direct delegation AS112 service (RFC 7534)"),
    ("3fff::/20", "documentation (RFC 9637)"),
    ("5f00::/16", "segment routing SIDs (RFC 9602)"),
    ("fc00::/7", "unique local (RFC 4193)"),
    ("fe80::/10", "link-local (RFC 4291)"),
    ("fec0::/10", "deprecated site-local (RFC 3879)"),
    ("ff00::/8", "multicast (RFC 4291)"),
)
"""Refused IPv6 ranges and what they are, most specific first."""

_GLOBAL_UNICAST = IPv6Network("2000::/3")
_NAT64 = int(IPv6Address("64:ff9b::")) >> 32
_MAPPED = 0xFFFF  # ::ffff:0:0/96
_TRANSLATED = 0xFFFF_0000  # ::ffff:0:0:0/96 (SIIT)
_SIX_TO_FOUR = IPv6Network("2002::/16")


def embedded_ipv4(ip: IPv6Address) -> tuple[str, IPv4Address] | None:
    """The IPv4 address an IPv6 address stands for, with the form's name, or None.

    The forms: IPv4-mapped ``::ffff:a.b.c.d``, IPv4-translated ``::ffff:0:a.b.c.d``
    (SIIT), IPv4-compatible ``::a.b.c.d`` (deprecated; ``::`` and ``::1`` excluded), the
    NAT64 well-known prefix ``64:ff9b::a.b.c.d`` and 6to4 ``2002:AABB:CCDD::/48``.
    """
    value = int(ip)
    high = value >> 32
    low = IPv4Address(value & 0xFFFF_FFFF)
    if high == _MAPPED:
        return "IPv4-mapped form (::ffff:0:0/96)", low
    if high == _TRANSLATED:
        return "IPv4-translated form (::ffff:0:0:0/96)", low
    if high == 0 and value > 1:
        return "IPv4-compatible form (::/96)", low
    if high == _NAT64:
        return "NAT64 form (64:ff9b::/96)", low
    if ip in _SIX_TO_FOUR:
        return "6to4 form (2002::/16)", IPv4Address((value >> 80) & 0xFFFF_FFFF)
    return None


def _lookup(ip: IPAddress) -> str | None:
    table: tuple[tuple[IPv4Network | IPv6Network, str], ...] = (
        IPV4_SPECIAL if isinstance(ip, IPv4Address) else IPV6_SPECIAL
    )
    for network, name in table:
        if ip in network:
            return f"{name}, {network}"
    return None


def non_public_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public unicast address, or None when it is.

    IPv6 forms that embed an IPv4 address are judged as that address
    (:func:`embedded_ipv4`).
    """
    if isinstance(ip, IPv6Address):
        ip = IPv6Address(int(ip))  # without a zone id
        embedded = embedded_ipv4(ip)
        if embedded is not None:
            form, inner = embedded
            reason = non_public_reason(inner)
            return None if reason is None else f"{form} of {inner}: {reason}"
    reason = _lookup(ip)
    if reason is not None:
        return reason
    if isinstance(ip, IPv6Address) and ip not in _GLOBAL_UNICAST:
        return "outside the global unicast space 2000::/3"
    if not ip.is_global:
        return "not globally reachable"
    return None


#: What a ``blocked_address`` detail ends with: how to allow such an address on purpose.
ALLOW_HINT = (
    "to check it anyway, pass --allow-private (every address) or --allow-network CIDR "
    "(allow_private / allowed_networks)"
)


class BlockedAddressError(Exception):
    """A connection would go to an address that is not public (ends a check as
    ``blocked_address``; never raised to the caller of the checker)."""


class DNSLookupError(Exception):
    """A host name did not resolve (ends a check as ``dns_error``)."""


class AddressPolicy:
    """The address rules of one :class:`CheckConfig`.

    ``allow_private`` allows every address. ``allowed_networks`` allows an address in one
    of them, and an IPv6 form that embeds an IPv4 address in one of them (allowing
    127.0.0.0/8 allows ``::ffff:127.0.0.1``). Everything else must be public
    (:func:`non_public_reason`).
    """

    def __init__(self, config: CheckConfig) -> None:
        self.allow_all = config.allow_private
        self.allowed = [ipaddress.ip_network(n, strict=False) for n in config.allowed_networks]
        self.fixed = {host.strip("[]").lower(): address.strip("[]")
                      for host, address in config.resolve}  # fmt: skip
        self.connect_timeout = config.connect_timeout

    def refusal(self, address: str) -> str | None:
        """Why a connection may not go to the IP ``address``, or None when it may."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if self.allow_all:
            return None
        candidates: list[IPAddress] = [ip]
        if isinstance(ip, IPv6Address) and (embedded := embedded_ipv4(ip)) is not None:
            candidates.append(embedded[1])
        if any(c in network for c in candidates for network in self.allowed):
            return None
        return non_public_reason(ip)

    def permitted(self, address: str) -> bool:
        """Whether a connection may go to the IP ``address``."""
        return self.refusal(address) is None

    def host_refusal(self, host: str) -> str | None:
        """Why the IP literal ``host`` may not be contacted, or None (also for every host
        name: names are checked when they are resolved)."""
        literal = host.strip("[]")
        try:
            ipaddress.ip_address(literal.split("%", 1)[0])
        except ValueError:
            return None
        return self.refusal(literal)

    def permitted_host(self, host: str) -> bool:
        """False for an IP literal that is not allowed; names are checked when resolved."""
        return self.host_refusal(host) is None

    async def resolve(self, host: str, port: int) -> list[str]:
        """Every address ``host`` resolves to, each checked.

        Raises:
            DNSLookupError: the name does not resolve in time.
            BlockedAddressError: any of its addresses is not permitted.
        """
        host = host.strip("[]")
        fixed = self.fixed.get(host.lower())
        try:
            addresses = [str(ipaddress.ip_address(fixed or host))]
        except ValueError:
            loop = asyncio.get_running_loop()
            try:
                infos = await asyncio.wait_for(
                    loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), self.connect_timeout
                )
            except (socket.gaierror, UnicodeError) as error:
                raise DNSLookupError(f"{host}: {error}") from error
            except asyncio.TimeoutError as error:
                raise DNSLookupError(f"{host}: lookup timed out") from error
            addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            reason = self.refusal(address)
            if reason is not None:
                raise BlockedAddressError(
                    f"{host} resolves to non-public address {address} ({reason}); {ALLOW_HINT}"
                )
        return addresses


class GuardedResolver(AbstractResolver):
    """aiohttp resolver that checks every address a host name resolves to.

    aiohttp calls it for each new connection to a named host (never for IP literals,
    which the checker tests with :meth:`AddressPolicy.host_refusal` before each request).
    """

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self.policy.resolve(host, port)
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        return None
