"""Handshake header blocks: one step of the Gnutella 0.6 handshake read and written, and what the
router needs from a peer's headers.

"The Gnutella Protocol Specification v0.6", 2.1: each step is a start line and headers in the
format of RFC 822 (names case-insensitive, continuation lines starting with a space or a tab,
repeated headers joined by commas), each line ended by CRLF and the block by an empty line.
Servents in the field end lines with a bare LF as well (0.4's ``GNUTELLA CONNECT/0.4\\n\\n``
always did), so both are read.

API:
  ``block_end(buf, start=0) -> int``: the offset just past the empty line ending the block, -1
  ``parse_block(block) -> (start_line, headers)``: ``headers`` maps lower-cased names to values
  ``format_block(start_line, headers) -> bytes``: CRLF lines and the empty line
  ``PeerInfo(version, headers)``: ``user_agent``, ``ultrapeer``, ``leaf``, ``listen_ip``,
  ``remote_ip``, ``accepts_deflate``, ``content_encoding``, ``bye``, ``x_try``,
  ``x_try_ultrapeers``
  ``parse_hosts(value) -> list[(host, port)]``: an X-Try style list
  ``ultrapeer_headers(degree, max_ttl) -> list[(name, value)]``: what an ultrapeer must say for
  today's leaves to keep it
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .errors import ProtocolError

_BLOCK_END = re.compile(rb"\n\r?\n")


def block_end(buf: bytes | bytearray, start: int = 0) -> int:
    """Where the header block at the start of ``buf`` ends (just past its empty line), or -1
    while it has not. ``start`` skips what an earlier call already searched."""
    found = _BLOCK_END.search(buf, start)
    return found.end() if found else -1


def parse_block(block: bytes) -> tuple[str, dict[str, str]]:
    """The start line and the headers of one handshake step."""
    lines = block.decode("utf-8", "replace").split("\n")
    start_line = lines[0].strip()
    if not start_line:
        raise ProtocolError("handshake step without a start line")
    headers: dict[str, str] = {}
    name = None
    for line in lines[1:]:
        line = line.rstrip("\r")
        if not line:
            continue
        if line[0] in " \t":
            if name is None:
                raise ProtocolError("handshake continuation line before any header")
            headers[name] = f"{headers[name]} {line.strip()}".strip()
            continue
        key, colon, value = line.partition(":")
        if not colon:
            continue              # not a header: ignored, as servents in the field expect
        name = key.strip().lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return start_line, headers


def format_block(start_line: str, headers: Iterable[tuple[str, str]]) -> bytes:
    lines = [start_line, *(f"{name}: {value}" for name, value in headers), "", ""]
    return "\r\n".join(lines).encode()


def parse_hosts(value: str) -> list[tuple[str, int]]:
    """``host:port`` items separated by commas (X-Try, X-Try-Ultrapeers); some servents add a
    timestamp after a space, which is dropped. Items without a usable port are skipped."""
    hosts = []
    for item in value.split(","):
        token = item.split()[0] if item.strip() else ""
        host, colon, port = token.rpartition(":")
        host = host.strip("[]")
        if colon and host and port.isdigit() and 0 < int(port) < 65536:
            hosts.append((host, int(port)))
    return hosts


def ultrapeer_headers(degree: int, max_ttl: int) -> list[tuple[str, str]]:
    """The headers by which leaves choose an ultrapeer, for every step that carries ours.

    A gtk-gnutella leaf refuses an ultrapeer with X-Degree under 16 or without
    X-Dynamic-Querying (403 "High Outdegree and Dynamic Querying Required", nodes.c,
    node_process_handshake_header); a LimeWire leaf one without X-Degree of at least 15,
    X-Ultrapeer-Query-Routing, X-Dynamic-Querying and X-Max-TTL under 5
    (HandshakeResponse.isGoodUltrapeer), and LimeWire ultrapeers ask the same of ultrapeers
    once their quota of other vendors is used. X-Query-Routing makes a LimeWire leaf send us its
    route table, the sign that it wants queries. LimeWire reads header names case-sensitively
    (java.util.Properties), so they are spelled as it spells them. ``degree`` is how many
    neighbours we keep, ``max_ttl`` the TTL a leaf should give the queries it sends us."""
    return [("X-Query-Routing", "0.1"), ("X-Ultrapeer-Query-Routing", "0.1"),
            ("X-Degree", str(degree)), ("X-Max-TTL", str(max_ttl)),
            ("X-Dynamic-Querying", "0.1"), ("GGEP", "0.5"), ("Bye-Packet", "0.1")]


def _header_bool(value: str | None) -> bool | None:
    if value is None:
        return None
    return {"true": True, "false": False}.get(value.strip().lower())


def _tokens(value: str | None) -> set[str]:
    return {t.split(";")[0].strip().lower() for t in (value or "").split(",")} - {""}


@dataclass(frozen=True)
class PeerInfo:
    """What the other side of a handshake said about itself: its protocol ``version`` ("0.4" or
    "0.6") and its ``headers`` (lower-cased names); the router's questions are properties."""

    version: str
    headers: Mapping[str, str]

    @property
    def user_agent(self) -> str | None:
        return self.headers.get("user-agent")

    @property
    def ultrapeer(self) -> bool | None:
        """``X-Ultrapeer``: True, False, or None for a servent that predates ultrapeers."""
        return _header_bool(self.headers.get("x-ultrapeer"))

    @property
    def leaf(self) -> bool:
        """The peer said it is no ultrapeer: from our ultrapeer, it is a leaf."""
        return self.ultrapeer is False

    @property
    def listen_ip(self) -> tuple[str, int] | None:
        """Where the peer accepts connections: ``Listen-IP`` (LimeWire), ``Node`` (what
        gtk-gnutella sends when it connects), or the older ``X-My-Address``."""
        h = self.headers
        value = h.get("listen-ip") or h.get("node") or h.get("x-my-address")
        hosts = parse_hosts(value) if value else []
        return hosts[0] if hosts else None

    @property
    def remote_ip(self) -> str | None:
        """The address the peer sees us at (``Remote-IP``)."""
        return self.headers.get("remote-ip")

    @property
    def accepts_deflate(self) -> bool:
        return "deflate" in _tokens(self.headers.get("accept-encoding"))

    @property
    def content_encoding(self) -> str | None:
        """How the peer encodes what it sends after the handshake (``deflate``), if at all."""
        tokens = _tokens(self.headers.get("content-encoding")) - {"identity"}
        return ",".join(sorted(tokens)) or None

    @property
    def bye(self) -> bool:
        """The peer reads a Bye before we close (``Bye-Packet``): gtk-gnutella counts a close
        without one against our address and our User-Agent."""
        return "bye-packet" in self.headers

    @property
    def x_try(self) -> list[tuple[str, int]]:
        return parse_hosts(self.headers.get("x-try", ""))

    @property
    def x_try_ultrapeers(self) -> list[tuple[str, int]]:
        return parse_hosts(self.headers.get("x-try-ultrapeers", ""))
