"""What a proxy in front says of the client: the scheme it was reached by (X-Forwarded-Proto)
and the client's address (X-Forwarded-For), believed only from the proxies named, as uvicorn's
``--proxy-headers`` and ``--forwarded-allow-ips`` and gunicorn's ``forwarded_allow_ips`` do. By
default those are the loopback addresses, where a proxy on the same machine (nginx) connects
from: an application behind it then builds its URLs with ``https`` and sees its clients. A
client that reaches the server directly cannot pass itself off as another that way."""

from __future__ import annotations

import ipaddress
from typing import Any, ClassVar

# what X-Forwarded-Proto may say, as the scheme of an HTTP request (a WebSocket's scope makes
# ws and wss of these)
_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}
_KNOWN_MAX = 1024        # peers whose trust is remembered: a proxy's few, or many clients'


class Proxies:
    """The peers whose X-Forwarded-* fields are believed: ``spec`` is a comma-separated list
    of addresses and networks (``10.0.0.0/8``), or ``*`` for any peer. Raises ValueError, naming
    the item, for one that is neither."""

    __slots__ = ("any", "known", "networks")
    #: the usual proxies: one on the same machine (uvicorn's and gunicorn's default)
    LOOPBACK: ClassVar[str] = "127.0.0.1,::1"

    def __init__(self, spec: str) -> None:
        items = [item.strip() for item in spec.split(",") if item.strip()]
        self.any = "*" in items
        networks = []
        for item in items:
            if item != "*":
                try:
                    networks.append(ipaddress.ip_network(item, strict=False))
                except ValueError:
                    raise ValueError(f"{item!r} is not an IP address or network") from None
        self.networks = tuple(networks)
        # peer -> believed, for the peers seen: a request asks for its peer's every time
        self.known: dict[str, bool] = {}

    def trusts(self, host: str) -> bool:
        if self.any:
            return True
        known = self.known.get(host)
        if known is None:
            try:
                address = ipaddress.ip_address(host)
            except ValueError:                 # (not an address: a Unix socket's path)
                known = False
            else:
                known = any(address in network for network in self.networks)
            if len(self.known) >= _KNOWN_MAX:
                self.known.clear()
            self.known[host] = known
        return known

    def forwarded(self, peer: Any, headers: list[tuple[bytes, bytes]],
                  ) -> tuple[str | None, str | None]:
        """The scheme (``http`` or ``https``) and the client's address a request's proxy says
        (``headers`` lower-case, as parsed), each None where it says nothing or ``peer`` is not
        a proxy believed."""
        if not isinstance(peer, tuple) or not self.trusts(peer[0]):
            return None, None
        scheme = client = None
        for name, value in headers:
            if name == b"x-forwarded-proto":
                scheme = _SCHEMES.get(value.decode("latin-1").strip().lower(), scheme)
            elif name == b"x-forwarded-for":
                client = self._client(value.decode("latin-1"))
        return scheme, client

    def _client(self, hosts: str) -> str | None:
        """The client in an X-Forwarded-For list: each proxy appends the address it was reached
        from, so the nearest address that is not a proxy believed (a client may have put
        anything before it); the first if all are."""
        named = [host.strip() for host in hosts.split(",")]
        for host in reversed(named):
            if host and not self.trusts(host):
                return host
        return named[0] or None
