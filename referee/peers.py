"""The address a client is counted under, shared by every per-client cap: the gRPC servers' (referee and
lobby: :class:`referee.streams.PeerStreams`) and the arena web's (:mod:`arena.web.connections`).

An IPv6 client holds a whole /64 (one machine is given one and may use any address in it), so a cap per
address would let it open as many calls or connections as it has addresses, and fill the shared cap all
competitors wait under: it is counted by its /64. Pure (the standard library's :mod:`ipaddress` only).
"""

from __future__ import annotations

import ipaddress


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
