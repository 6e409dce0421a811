"""The client address as the per-address limits count it (connections, login delays,
SUBS, guests): an IPv4 address alone, an IPv6 address as its network block. One IPv6
subscriber usually holds a whole /64 (RFC 6177), so counting single IPv6 addresses would
give one client 2^64 fresh ones; OpenSSH's ``PerSourceNetBlockSize`` does the same.
"""

from __future__ import annotations

import ipaddress

IPV6_BLOCK_SIZE = 64  # the default prefix length (the ipv6_block_size setting)


def client_key(address: str, ipv6_block_size: int = IPV6_BLOCK_SIZE) -> str:
    """``2001:db8:1:2::/64`` for any address of that /64 (with the default size); an
    IPv4 address, or an IPv4-mapped IPv6 one (``::ffff:192.0.2.1``), as ``192.0.2.1``;
    anything that is no IP address (a Unix socket's peer) as given."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # without an IPv6 zone
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        if ipv6_block_size < 128:
            return str(ipaddress.IPv6Network((ip, ipv6_block_size), strict=False))
    return str(ip)
