"""The address a client is counted under, shared by every per-client cap: the gRPC servers' (referee and
lobby: :class:`referee.streams.PeerStreams`) and the arena web's (:mod:`arena.web.connections`).

An IPv6 client holds a whole /64 (one machine is given one and may use any address in it), so a cap per
address would let it open as many calls or connections as it has addresses, and fill the shared cap all
competitors wait under: it is counted by its /64. Pure (the standard library's :mod:`ipaddress` only).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass


def client_key(host: str) -> str:
    """The address a client's connections are counted under: an IPv4 address itself (``"10.0.0.7"``; an
    IPv4-mapped IPv6 one, ``"::ffff:10.0.0.7"``, as IPv4), an IPv6 address its /64 network
    (``"2001:db8:1:2::5"`` -> ``"2001:db8:1:2::/64"``); anything else (a Unix socket's peer) as given."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


@dataclass(frozen=True)
class BotNetwork:
    """The container sandbox's network (``network``, its ``gateway`` the host): every address in it but the
    gateway is one bot container's own, which no other peer shares. Docker gives each container an address
    of its own; a container cannot take another's (every capability is dropped: no raw packets, no address
    changes), and a TCP connection from a forged address never opens (the answer goes to the address's owner
    or nowhere). A peer there is counted by the per-address caps alone, never by a count all peers share
    (``in_all``, a server's RPC slots): two containers of one entrant at once (a bot's workers, the two
    seats of a side) could signal each other through a shared count held near its limit. The containers
    the arena runs at once are bounded, so their streams are too (each container's caps times their number).
    The gateway's address is the host's own processes' (unsandboxed bots, the arena's calls): counted as
    any other peer."""

    network: ipaddress.IPv4Network
    gateway: ipaddress.IPv4Address

    @classmethod
    def parse(cls, subnet: str, gateway: str) -> BotNetwork:
        """``BotNetwork.parse("172.18.0.0/16", "172.18.0.1")``.

        :raises ValueError: ``not an IPv4 network and gateway: SUBNET GATEWAY`` (one line).
        """
        try:
            network, host = ipaddress.IPv4Network(subnet), ipaddress.IPv4Address(gateway)
        except ValueError:
            raise ValueError(f"not an IPv4 network and gateway: {subnet!r} {gateway!r}") from None
        if host not in network:
            raise ValueError(f"the gateway {gateway} is not in the network {subnet}")
        return cls(network, host)

    def holds(self, key: str) -> bool:
        """Whether the peer counted under ``key`` (:func:`client_key`'s, e.g. ``"172.18.0.5"``) is one
        container's own address: in the network, not the gateway."""
        try:
            ip = ipaddress.ip_address(key)
        except ValueError:
            return False
        return isinstance(ip, ipaddress.IPv4Address) and ip in self.network and ip != self.gateway
