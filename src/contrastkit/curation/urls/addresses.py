"""Which addresses the checker may connect to, checked when a host is resolved.

:class:`AddressPolicy` resolves a host itself (or takes a fixed ``--resolve`` address)
and refuses loopback, private, link-local, multicast, reserved and unspecified addresses
unless the config allows them; :class:`GuardedResolver` plugs it into aiohttp, so every
new connection (first request, every redirect, every new pooled connection) is checked
*at connect time* and DNS rebinding cannot slip a private address past the check.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

from aiohttp.abc import AbstractResolver, ResolveResult

from contrastkit.curation.urls.config import CheckConfig

__all__ = ["AddressPolicy", "BlockedAddressError", "DNSLookupError", "GuardedResolver"]


class BlockedAddressError(Exception):
    """A connection would go to an address that is not public (ends a check as
    ``blocked_address``; never raised to the caller of the checker)."""


class DNSLookupError(Exception):
    """A host name did not resolve (ends a check as ``dns_error``)."""


class AddressPolicy:
    """The address rules of one :class:`CheckConfig`."""

    def __init__(self, config: CheckConfig) -> None:
        self.allow_all = config.allow_private
        self.allowed = [ipaddress.ip_network(n, strict=False) for n in config.allowed_networks]
        self.fixed = {host.strip("[]").lower(): address.strip("[]")
                      for host, address in config.resolve}  # fmt: skip
        self.connect_timeout = config.connect_timeout

    def permitted(self, address: str) -> bool:
        """Whether a connection may go to the IP ``address``."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if self.allow_all or any(ip in network for network in self.allowed):
            return True
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.is_global and not ip.is_multicast

    def permitted_host(self, host: str) -> bool:
        """False for an IP literal that is not allowed; names are checked when resolved."""
        try:
            ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
        except ValueError:
            return True
        return self.permitted(host.strip("[]"))

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
        blocked = [a for a in addresses if not self.permitted(a)]
        if blocked:
            raise BlockedAddressError(f"{host} resolves to non-public address {blocked[0]}")
        return addresses


class GuardedResolver(AbstractResolver):
    """aiohttp resolver that checks every address a host name resolves to.

    aiohttp calls it for each new connection to a named host (never for IP literals,
    which the checker tests with :meth:`AddressPolicy.permitted_host` before each request).
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
