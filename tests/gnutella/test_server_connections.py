"""The server stage over loopback: the handshakes we answer (0.6 with its headers, 0.4, a
LimeWire-era leaf as sent on the wire), the refusal with X-Try when full, and bad input of each
kind, which costs its own connection and nothing else.

Counters are read after a later servent has joined: the server handles its events in order,
so by then it has handled every close that came before.
"""

from __future__ import annotations

import socket
import time
import zlib

import pytest

from gnutella.descriptors import HEADER, QUERY, encode_query
from gnutella.events import SERVER
from gnutella.handshake import Refused
from gnutella.headers import parse_block

from tests.helpers.servent import WAIT, Servent, handler_stats, running

LISTEN = ("127.0.0.1", 7001)


def raw(address) -> socket.socket:
    sock = socket.create_connection(address, timeout=WAIT)
    sock.settimeout(WAIT)
    return sock


def read_block(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data and b"\n\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"closed after {data!r}"
        data += chunk
    return data


def closed(sock: socket.socket) -> bool:
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True


def test_the_06_answer_says_who_we_are_and_where_to_go():
    with running() as (_, service):
        address = service.address
        with Servent.connect(address, listen=LISTEN) as first:
            first.join()
            with Servent.connect(address) as second:
                done = second.join()
                peer = done.peer
                assert peer.ultrapeer and peer.user_agent.startswith("pyseda-gnutella/")
                assert peer.listen_ip == address and peer.remote_ip == "127.0.0.1"
                assert peer.x_try_ultrapeers == [LISTEN]    # the ultrapeers we know


def test_a_limewire_leaf_as_on_the_wire_with_vendor_messages_at_once():
    with running() as (rt, service), Servent.connect(service.address) as other:
        other.join()
        sock = raw(service.address)
        sock.sendall(b"GNUTELLA CONNECT/0.6\r\nUser-Agent: LimeWire/4.18.8\r\n"
                     b"X-Ultrapeer: False\r\nX-Query-Routing: 0.2\r\nX-Max-TTL: 3\r\n"
                     b"X-Dynamic-Querying: 0.1\r\nX-Ext-Probes: 0.1\r\nVendor-Message: 0.2\r\n"
                     b"GGEP: 0.5\r\nPong-Caching: 0.1\r\nAccept-Encoding: deflate\r\n"
                     b"Listen-IP: 127.0.0.1:6350\r\n\r\n")
        _, headers = parse_block(read_block(sock))
        assert headers["content-encoding"] == "deflate"     # it accepts deflate
        z = zlib.compressobj()
        vendor = HEADER.pack(b"V" * 16, 0x31, 1, 0, 8) + b"LIME\x0a\x00\x02\x00"
        query = encode_query("from a leaf", ttl=2)
        # the final 200 OK and, in the same segment, the first compressed descriptors
        sock.sendall(b"GNUTELLA/0.6 200 OK\r\nContent-Encoding: deflate\r\n\r\n"
                     + z.compress(vendor + query) + z.flush(zlib.Z_SYNC_FLUSH))
        got = other.next()
        assert (got.payload_type, got.guid) == (QUERY, query[:16])
        assert handler_stats(rt, SERVER)["connections"]["leaves"] == 1
        sock.close()


def test_a_04_servent_is_answered_gnutella_ok():
    with running() as (_, service):
        sock = raw(service.address)
        sock.sendall(b"GNUTELLA CONNECT/0.4\n\n")
        assert read_block(sock) == b"GNUTELLA OK\n\n"
        sock.close()


def test_when_full_a_servent_is_refused_with_hosts_to_try(tmp_path):
    cache = tmp_path / "hosts"
    cache.write_text("10.1.1.1:6346 1700000000\n10.2.2.2:6347 1700000001\n")
    with running(max_connections=2, hostcache=str(cache)) as (rt, service):
        a = Servent.connect(service.address, listen=LISTEN)
        b = Servent.connect(service.address)
        a.join(), b.join()
        with Servent.connect(service.address) as third:
            refused = third.handshake()
            assert isinstance(refused, Refused) and refused.code == 503
            assert refused.peer.x_try == [("10.2.2.2", 6347), ("10.1.1.1", 6346)]
            assert refused.peer.x_try_ultrapeers == [LISTEN]
            assert third.closed_by_router()
        b.send(HEADER.pack(b"G" * 16, QUERY, 1, 0, 10**6))          # b goes: a slot is free
        assert b.closed_by_router()
        with Servent.connect(service.address) as fourth:
            fourth.join()
            assert handler_stats(rt, SERVER)["refused"] == 1
        a.close(), b.close()


def test_a_handshake_that_never_finishes_is_closed_at_its_deadline():
    with running(handshake_timeout=0.3) as (rt, service):
        sock = raw(service.address)
        start = time.monotonic()
        sock.sendall(b"GNUTELLA CONNECT/0.6\r\nUser-Agent: slowpoke\r\n")   # and no more
        assert closed(sock)
        assert 0.25 <= time.monotonic() - start < WAIT
        with Servent.connect(service.address) as later:
            later.join()
            assert handler_stats(rt, SERVER)["closed"] == {"handshake timeout": 1}


@pytest.mark.parametrize("garbage, reason", [
    (b"GET / HTTP/1.1\r\nHost: example\r\n\r\n", "bad handshake"),      # not Gnutella
    (b"GNUTELLA CONNECT/0.6\r\n" + b"X-Pad: " + b"a" * 20000, "bad handshake"),  # endless
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(300), "bad handshake"),  # TLS
])
def test_a_handshake_that_is_no_handshake_costs_its_connection(garbage, reason):
    with running() as (rt, service):
        a, b = Servent.connect(service.address), Servent.connect(service.address)
        a.join(), b.join()
        sock = raw(service.address)
        sock.sendall(garbage)
        assert closed(sock)
        query = encode_query("still here")
        a.send(query)
        assert b.next().guid == query[:16]
        with Servent.connect(service.address) as later:
            later.join()
            assert handler_stats(rt, SERVER)["closed"] == {reason: 1}
        a.close(), b.close()


@pytest.mark.parametrize("bad", [
    HEADER.pack(b"L" * 16, QUERY, 7, 0, 10**6),          # a length over the limit
    HEADER.pack(b"L" * 16, 0x01, 7, 0, 5),               # a pong too short for its fields
    encode_query("x" * 2000),                            # a real payload over max_payload
], ids=["lying length", "short pong", "oversize"])
def test_a_garbled_stream_costs_its_connection_and_what_came_before_is_routed(bad):
    with running(max_payload=1024) as (rt, service):
        a, b, c = (Servent.connect(service.address) for _ in range(3))
        for s in (a, b, c):
            s.join()
        good = encode_query("before the fault", ttl=3)
        a.send(good + bad)
        assert a.closed_by_router()
        assert b.next().guid == c.next().guid == good[:16]
        query = encode_query("the others still talk", ttl=3)
        b.send(query)
        assert c.next().guid == query[:16]
        with Servent.connect(service.address) as later:
            later.join()
            assert handler_stats(rt, SERVER)["closed"] == {"bad descriptor": 1}
        for s in (a, b, c):
            s.close()


def test_a_corrupt_deflate_stream_costs_its_connection():
    with running() as (rt, service):
        with Servent.connect(service.address, deflate=True) as a:
            a.join()
            a.sock.sendall(b"\xff" * 64)             # not what its deflater would say
            assert a.closed_by_router()
        with Servent.connect(service.address) as later:
            later.join()
            assert handler_stats(rt, SERVER)["closed"] == {"bad descriptor": 1}


def test_handshakes_in_progress_are_bounded():
    with running(max_connections=2) as (rt, service):    # at least 16 handshakes at once
        idle = [raw(service.address) for _ in range(16)]
        with Servent.connect(service.address) as late, pytest.raises(ConnectionError):
            late.handshake()
        for sock in idle:
            sock.close()
        assert handler_stats(rt, SERVER)["busy"] == 1
