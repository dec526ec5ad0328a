"""LimeWire (4.x and 5.x) towards an ultrapeer, as its source has it: the headers it writes in
each role, the rules by which it refuses what it reads, and what it sends first. Played against
a running router by tests/gnutella/test_server_limewire.py.

Sources (components/gnutella-core/src/main/java/com/limegroup/gnutella/): handshaking/
DefaultHeaders, LeafHeaders, UltrapeerHeaders (what it sends), HandshakeResponse (how it reads
the other side: isGoodUltrapeer, isDeflateEnabled), LeafHandshakeResponder and
UltrapeerHandshakeResponder (its answers), HandshakeSupport (header names read as written:
java.util.Properties is case-sensitive), ReadHandshakeState; ConnectionManagerImpl
(allowConnection); MessageRouterImpl (when it sends route tables); ConnectionWatchdog
(the TTL 1 ping that decides a connection is dead).
"""

from __future__ import annotations

import socket

from gnutella.descriptors import QueryFlags, encode_ping, encode_query

from tests.helpers import qrp
from tests.helpers.servent import handshake_lines

USER_AGENT = "LimeWire/5.5.16"
SOFT_MAX = 3                  # its X-Max-TTL, and the TTL of its leaves' queries


def _common(remote_ip: str, listen: tuple[str, int]) -> str:
    """DefaultHeaders, in the order it puts them (a Properties table writes them in hash
    order: any order is its order)."""
    return (f"Listen-IP: {listen[0]}:{listen[1]}\r\n"
            f"Remote-IP: {remote_ip}\r\n"
            "X-Query-Routing: 0.1\r\n"
            f"User-Agent: {USER_AGENT}\r\n"
            "GGEP: 0.5\r\nX-Guess: 0.1\r\nVendor-Message: 0.2\r\nX-Requeries: false\r\n"
            "X-Degree: 32\r\nX-Ultrapeer-Query-Routing: 0.1\r\n"
            f"X-Max-TTL: {SOFT_MAX}\r\nX-Dynamic-Querying: 0.1\r\nX-Locale-Pref: en\r\n"
            "Accept-Encoding: deflate\r\nPong-Caching: 0.1\r\n")


def hello(remote_ip: str, listen: tuple[str, int], *, leaf: bool) -> bytes:
    """Its CONNECT: the common headers and X-Ultrapeer (LeafHeaders, UltrapeerHeaders)."""
    role = "X-Ultrapeer: False\r\n" if leaf else "X-Ultrapeer: True\r\nX-Ext-Probes: 0.1\r\n"
    return ("GNUTELLA CONNECT/0.6\r\n" + _common(remote_ip, listen) + role + "\r\n").encode()


def welcome(remote_ip: str, listen: tuple[str, int], *, deflate: bool) -> bytes:
    """Its 200 to an ultrapeer's CONNECT (UltrapeerHandshakeResponder.respondToIncoming) when
    it needs ultrapeers, so without leaf guidance."""
    return ("GNUTELLA/0.6 200 OK\r\n" + _common(remote_ip, listen)
            + "X-Ultrapeer: True\r\nX-Ext-Probes: 0.1\r\nX-Ultrapeer-Needed: true\r\n"
            + "X-Try-Ultrapeers: \r\n"
            + ("Content-Encoding: deflate\r\n" if deflate else "") + "\r\n").encode()


def final(*, deflate: bool) -> bytes:
    """Its third step (respondToOutgoing): 200, and Content-Encoding if it will compress."""
    return b"GNUTELLA/0.6 200 OK\r\n" + (b"Content-Encoding: deflate\r\n" if deflate else b"") \
        + b"\r\n"


def read_block(sock: socket.socket) -> tuple[str, dict[str, str], bytes]:
    """One step as it reads one (HandshakeSupport.processReadHeader): the name exactly as
    written up to the first colon, the value trimmed."""
    line, lines, rest = handshake_lines(sock)
    headers = {}
    for h in lines:
        i = h.find(":")
        if i > 0:
            headers[h[:i]] = h[i + 1:].strip()
    return line, headers, rest


def _float(value: str | None) -> float:
    try:
        return float(value) if value is not None else 0.0
    except ValueError:
        return 0.0


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def is_good_ultrapeer(headers: dict[str, str]) -> bool:
    """HandshakeResponse: a high degree (X-Degree, 6 when absent, at least 15), ultrapeer
    query routing, X-Max-TTL under 5 (4 when absent) and dynamic querying."""
    return (_int(headers.get("X-Degree"), 6) >= 15
            and _float(headers.get("X-Ultrapeer-Query-Routing")) >= 0.1
            and _int(headers.get("X-Max-TTL"), 4) < 5
            and _float(headers.get("X-Dynamic-Querying")) >= 0.1)


def refuses_answer(line: str, headers: dict[str, str], *, leaf: bool) -> str | None:
    """Why it would close after our answer to its CONNECT, or None (ReadResponseState,
    LeafHandshakeResponder and UltrapeerHandshakeResponder.respondToOutgoing,
    ConnectionManagerImpl.allowConnection). Not modelled: a LimeWire leaf takes only other
    LimeWires for its first few attempts and while idle (STARTING_LIMEWIRE, IDLE_LIMEWIRE)."""
    if not line.startswith("GNUTELLA/0.6") or line.split()[1:2] != ["200"]:
        return f"status {line!r}"
    said = headers.get("X-Ultrapeer", "").lower()
    if leaf and said != "true":
        return "WE_ARE_LEAVES: not an ultrapeer"
    if said not in ("true", "false"):
        return "NO_X_ULTRAPEER"
    if not is_good_ultrapeer(headers):
        return "NOT_GOOD_UP"        # for an ultrapeer, once its share of other vendors is used
    if not headers.get("User-Agent"):
        return "no User-Agent: not allowed as ultrapeer"
    return None


def refuses_hello(headers: dict[str, str]) -> str | None:
    """Why it, an ultrapeer, would refuse our CONNECT: no User-Agent, no X-Ultrapeer, or
    not a good ultrapeer once its quota of other vendors is used."""
    if not headers.get("User-Agent"):
        return "no User-Agent"
    if headers.get("X-Ultrapeer", "").lower() not in ("true", "false"):
        return "NO_X_ULTRAPEER"
    if not is_good_ultrapeer(headers):
        return "NOT_GOOD_UP"
    return None


def deflates(headers: dict[str, str]) -> bool:
    """isDeflateEnabled: Content-Encoding equal to "deflate", whatever the case."""
    return headers.get("Content-Encoding", "").lower() == "deflate"


def first_messages() -> list[bytes]:
    """A leaf, once connected to an ultrapeer that said X-Query-Routing, sends its route
    table (MessageRouterImpl.forwardQueryRouteTables: a RESET, then PATCHes, 4-bit entries,
    infinity 7), and its watchdog pings a connection that has been quiet (TTL 1)."""
    return [qrp.reset(), qrp.patch({9, 300, 65535}), encode_ping(ttl=1)]


def query(words: str) -> bytes:
    """A leaf's search: XML and GGEP "H" understood, out-of-band replies wanted, TTL
    SOFT_MAX, hops 0."""
    flags = QueryFlags.XML | QueryFlags.GGEP_H | QueryFlags.OOB_REPLY
    return encode_query(words, flags=flags, ttl=SOFT_MAX)
