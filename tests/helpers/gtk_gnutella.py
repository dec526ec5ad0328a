"""gtk-gnutella (1.2) towards an ultrapeer, as its source has it: the handshake it writes in
each role, the rules by which it refuses what it reads, and what it sends in its first seconds.
The tests play it against a running router (tests/gnutella/test_server_gtk_gnutella.py); the
rules are what would make the real client close, not our reading of the specification.

Sources (github.com/gtk-gnutella/gtk-gnutella, src/core/): nodes.c, node_init_outgoing (the
CONNECT it sends), node_process_handshake_header (what it checks in a CONNECT or in the answer
to its own, and the welcome it writes), node_process_handshake_ack and node_finalize_3way (the
third step), node_is_now_connected (its first messages); pcache.c (pings), alive.c (alive
pings), qrp.c (route tables).
"""

from __future__ import annotations

import re
import socket

from gnutella.descriptors import QueryFlags, encode, encode_ping, encode_query

from tests.helpers import qrp
from tests.helpers.servent import handshake_lines

USER_AGENT = "gtk-gnutella/1.2.2 (2022-02-25; GTK2; Linux x86_64)"
GUID_HEX = "5C3E1A8F0B6D4E27FF11A9C0D2B37E00"
LIVE_SINCE = "Sat, 26 Feb 2022 10:00:00 GMT"
FEATURES = "X-Features: browse/0.1, sflag/0.1\r\n"
DEGREE = 36                   # its ultrapeer X-Degree: (up_connections 32 + max 40) / 2
MY_TTL = 4                    # the TTL of its own pings and queries (gnet_props.ag, my_ttl)
SCP = b"\xc3\x83SCP\x41\x01"  # GGEP "SCP" (ultrapeers wanted): pcache.c, build_ping_msg


def hello(node: tuple[str, int], remote_ip: str, *, leaf: bool) -> bytes:
    """The CONNECT it sends (node_init_outgoing), header for header, in its order."""
    if leaf:      # its "special hack for LimeWire": fixed headers a leaf must show
        role = ("X-Ultrapeer: False\r\nX-Dynamic-Querying: 0.1\r\n"
                "X-Ultrapeer-Query-Routing: 0.1\r\nX-Degree: 32\r\nX-Max-TTL: 4\r\n")
    else:
        role = (f"X-Ultrapeer: True\r\nX-Ultrapeer-Query-Routing: 0.1\r\n"
                f"X-Degree: {DEGREE}\r\nX-Max-TTL: {MY_TTL}\r\nX-Dynamic-Querying: 0.1\r\n"
                f"X-Ext-Probes: 0.1\r\nX-Guess: 0.2\r\n")
    return ("GNUTELLA CONNECT/0.6\r\n"
            f"Node: {node[0]}:{node[1]}\r\n"
            f"Remote-IP: {remote_ip}\r\n"
            f"User-Agent: {USER_AGENT}\r\n"
            "Pong-Caching: 0.1\r\nBye-Packet: 0.1\r\nGGEP: 0.5\r\n"
            f"GUID: {GUID_HEX}\r\n"
            "Vendor-Message: 0.2\r\nX-Query-Routing: 0.2\r\nX-Requeries: False\r\n"
            "Accept-Encoding: deflate\r\n"
            "X-Token: 1a2b3c4d5e6f\r\n"
            f"X-Live-Since: {LIVE_SINCE}\r\n"
            + role + FEATURES + "\r\n").encode()


def welcome(remote_ip: str, *, deflate: bool) -> bytes:
    """The 200 it answers a CONNECT from an ultrapeer with, as an ultrapeer with room
    (node_process_handshake_header, incoming); no X-Token for a peer that is no gtk-gnutella."""
    return ("GNUTELLA/0.6 200 OK\r\n"
            f"User-Agent: {USER_AGENT}\r\n"
            "Pong-Caching: 0.1\r\nBye-Packet: 0.1\r\nGGEP: 0.5\r\n"
            f"GUID: {GUID_HEX}\r\n"
            "Vendor-Message: 0.2\r\n"
            f"Remote-IP: {remote_ip}\r\n"
            "X-Ultrapeer: True\r\nX-Requeries: False\r\n"
            "Accept-Encoding: deflate\r\n"
            + ("Content-Encoding: deflate\r\n" if deflate else "")
            + "X-Ultrapeer-Needed: True\r\n"
            "X-Query-Routing: 0.1\r\nX-Ultrapeer-Query-Routing: 0.1\r\n"
            f"X-Degree: {DEGREE}\r\nX-Max-TTL: {MY_TTL}\r\n"
            "X-Dynamic-Querying: 0.1\r\nX-Ext-Probes: 0.1\r\nX-Guess: 0.2\r\n"
            f"X-Live-Since: {LIVE_SINCE}\r\n" + FEATURES + "\r\n").encode()


def final(*, deflate: bool) -> bytes:
    """Its third step after a 200 to its CONNECT: Content-Encoding when it will compress, and
    no X-Query-Routing while the peer's is 0.2 or less."""
    return b"GNUTELLA/0.6 200 OK\r\n" + (b"Content-Encoding: deflate\r\n" if deflate else b"") \
        + b"\r\n"


def read_block(sock: socket.socket) -> tuple[str, dict[str, str], bytes]:
    """One handshake step as it reads one (header names case-insensitive): the status line,
    the headers, what came after."""
    line, lines, rest = handshake_lines(sock)
    headers = {}
    for h in lines:
        name, _, value = h.partition(":")
        headers[name.strip().lower()] = value.strip()
    return line, headers, rest


def _version(value: str | None) -> tuple[int, int]:
    found = re.match(r"\s*(\d+)\.(\d+)", value or "")
    return (int(found[1]), int(found[2])) if found else (0, 0)


def refuses_answer(line: str, headers: dict[str, str], *, leaf: bool) -> str | None:
    """Why it would close after our answer to its CONNECT, or None: its checks of that answer
    (node_process_handshake_header, outgoing), as a leaf or as an ultrapeer."""
    if not re.fullmatch(r"GNUTELLA/0\.6 2\d\d .*", line) or line.startswith("GNUTELLA/0.6 204"):
        return f"status {line!r}"                                  # analyse_status
    accept = headers.get("accept")
    if accept and "application/x-gnutella-packets" not in accept.lower():
        return "Accept without Gnutella (406)"
    if headers.get("connection", "").lower() == "upgrade":
        return "an upgrade to TLS it did not offer (409)"
    if "x-auth-challenge" in headers or "fp-auth-challenge" in headers:
        return "a closed network (403)"
    if not headers.get("user-agent"):
        return "no vendor string supplied (403, node_is_bad)"
    ultra = headers.get("x-ultrapeer", "").lower() == "true"
    if leaf:
        if not ultra:
            return "not an ultrapeer: a shielded leaf (204)"      # node_can_accept_connection
        degree = int(headers.get("x-degree", "8") or 0)            # NODE_LEGACY_DEGREE
        if degree < 16 or "x-dynamic-querying" not in headers:
            return "High Outdegree and Dynamic Querying Required (403)"
    elif headers.get("x-ultrapeer-needed", "").lower() == "false":
        return "Not becoming a leaf node (403)"                   # leaf guidance refused
    if "deflate" not in headers.get("accept-encoding", "").lower():
        return "Compressed connection preferred (403, once it has enough uncompressed)"
    return None


def refuses_hello(headers: dict[str, str]) -> str | None:
    """Why it, an ultrapeer with room, would refuse our CONNECT (node_process_handshake_header,
    incoming), or None."""
    if not headers.get("user-agent"):
        return "no vendor string supplied (403)"
    if headers.get("x-ultrapeer", "").lower() != "true" and "x-ultrapeer-needed" not in headers:
        return "a normal node: none wanted (403)"
    if "deflate" not in headers.get("accept-encoding", "").lower():
        return "Gnet connection not compressed (403, once it has enough connections)"
    return None


def refuses_final(line: str, headers: dict[str, str], hello: dict[str, str]) -> str | None:
    """Why it would close after our third step (node_process_handshake_ack,
    node_finalize_3way): not a 200, or a query routing version above its 0.2."""
    if not line.startswith("GNUTELLA/0.6 200"):
        return f"status {line!r}"
    if _version(headers.get("x-query-routing") or hello.get("x-query-routing")) > (0, 2):
        return "Query Routing protocol not supported (Bye 505)"
    return None


def first_messages(*, accepted: bool) -> list[bytes]:
    """What it sends as soon as the connection is up (node_is_now_connected): its query routing
    table (a leaf to its ultrapeer always, an ultrapeer to one that said
    X-Ultrapeer-Query-Routing), then a ping: an alive ping when it ``accepted`` the connection,
    else its handshaking ping (TTL my_ttl with "SCP" while it wants hosts)."""
    table = [qrp.reset(infinity=2), qrp.patch({17, 4242, 65000}, infinity=2)]
    return [*table, alive_ping() if accepted else encode_ping(ggep=SCP, ttl=MY_TTL)]


def alive_ping() -> bytes:
    """An alive ping (alive.c, alive_send_ping): TTL 1, hops 0, no payload; unanswered six
    times in a row (four from a leaf), the connection is closed with Bye 406."""
    return encode_ping(ttl=1)


def query(words: str) -> bytes:
    """A search as it sends one: the flags mark, GGEP "H" understood, TTL my_ttl, hops 0."""
    return encode_query(words, flags=QueryFlags.GGEP_H, ttl=MY_TTL)


def bye(code: int, reason: str) -> bytes:
    """The Bye it sends before it closes (nodes.c, node_bye_v): the code, the reason, and for
    anything but 200 a Server header after a CRLF."""
    text = reason if code == 200 else f"{reason}\r\nServer: {USER_AGENT}\r\n\r\n"
    return encode(0x02, code.to_bytes(2, "little") + text.encode() + b"\0", ttl=1)
