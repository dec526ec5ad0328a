"""Host addresses as the command line writes them and as the network hands them to us.

``HOST:PORT`` (``[v6]:PORT`` for IPv6) on the command line; hosts learned from pongs and X-Try
headers are IP literals only: the router never resolves a name (that would block the loop
thread), and an address nobody can dial (0.0.0.0, multicast, port 0) is not worth keeping.

API:
  ``parse_address(text, *, any_port=False) -> (host, port)``: raises ``ValueError`` with a
  message fit for a command line; ``any_port`` allows port 0 (bind to a free port)
  ``dialable(host, port) -> bool``: an IP literal and a port a servent could listen on
  ``hostport(host, port) -> str``: the text form, IPv6 in brackets
"""

from __future__ import annotations

import ipaddress

Address = tuple[str, int]


def parse_address(text: str, *, any_port: bool = False) -> Address:
    """``HOST:PORT`` or ``[IPV6]:PORT``: the host as written (a name is resolved later, by
    whoever dials it), the port a number."""
    host, colon, port = text.strip().rpartition(":")
    if not colon or not host:
        raise ValueError(f"{text!r} is not HOST:PORT")
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(f"{text!r}: an IPv6 address goes in brackets, [::1]:6346")
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: write an IPv6 address in brackets, [::1]:6346")
    if not host or any(c.isspace() for c in host):
        raise ValueError(f"{text!r} has no usable host")
    if not port.isdigit() or not (0 if any_port else 1) <= int(port) <= 65535:
        lowest = 0 if any_port else 1
        raise ValueError(f"{text!r}: the port is a number from {lowest} to 65535")
    return host, int(port)


def dialable(host: str, port: int) -> bool:
    """Whether a learned address is worth dialing: an IP literal, a unicast address, a port."""
    if not 0 < port < 65536:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return not (ip.is_unspecified or ip.is_multicast or (ip.is_reserved and not ip.is_loopback))


def hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
