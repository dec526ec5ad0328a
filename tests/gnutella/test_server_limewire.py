"""LimeWire against a running router, byte for byte as its source writes (the profile in
tests/helpers/limewire.py): a leaf and an ultrapeer that connect to us, and an ultrapeer the
catcher dials. Our answer is read as LimeWire reads it (header names case-sensitive) and
checked by the rules that would make it close; then its first messages, its searches and
their hits."""

from __future__ import annotations

import socket

import pytest

from gnutella.descriptors import PING, PONG, QUERY, QUERY_HIT, Result, encode_query_hit
from gnutella.events import SERVER

from tests.helpers import limewire
from tests.helpers.servent import WAIT, Servent, handler_stats, running

LISTEN = ("127.0.0.1", 6349)
SERVENT_ID = bytes(range(0x50, 0x60))


def hit(query: bytes) -> bytes:
    return encode_query_hit(query[:16], 6346, "10.0.0.4", 100, [Result(3, 4096, "lime.txt")],
                            SERVENT_ID, ttl=4)


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "ultrapeer"])
def test_limewire_connects_stays_and_its_searches_are_answered(leaf):
    with running() as (rt, service), Servent.connect(service.address) as up:
        up.join()
        sock = socket.create_connection(service.address, timeout=WAIT)
        sock.sendall(limewire.hello("127.0.0.1", LISTEN, leaf=leaf))
        line, headers, rest = limewire.read_block(sock)
        assert limewire.refuses_answer(line, headers, leaf=leaf) is None, (line, headers)
        assert limewire.is_good_ultrapeer(headers)      # what its leaves insist on
        assert headers["X-Query-Routing"] == "0.1"      # so a leaf sends its table
        sock.sendall(limewire.final(deflate=True))
        lime = Servent.shaken(sock, deflate_in=limewire.deflates(headers), deflate_out=True,
                              extra=rest)
        *table, ping = limewire.first_messages()
        lime.send(*table, ping)
        pong = lime.next()                              # its watchdog is answered at once
        assert (pong.payload_type, pong.guid, pong.hops) == (PONG, ping[:16], 0)
        query = limewire.query("lime")
        lime.send(query)
        got = up.next()
        assert (got.payload_type, got.guid, got.ttl, got.hops) == (QUERY, query[:16], 2, 1)
        up.send(hit(query))
        got = lime.next()
        assert (got.payload_type, got.guid, got.hops) == (QUERY_HIT, query[:16], 1)
        other = limewire.query("for the leaf")
        up.send(other)
        assert lime.next().guid == other[:16]
        stats = handler_stats(rt, SERVER)
        assert stats["connections"]["searched"] == (1 if leaf else 0)
        assert stats["closed"] == {}
        lime.close()


def test_we_dial_a_limewire_ultrapeer_as_the_catcher_does():
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(WAIT)
    where = listener.getsockname()[:2]
    with running(peers=(where,), outgoing=1) as (rt, service):
        sock, _ = listener.accept()
        sock.settimeout(WAIT)
        line, hello, _ = limewire.read_block(sock)
        assert line == "GNUTELLA CONNECT/0.6"
        assert limewire.refuses_hello(hello) is None, hello
        assert hello["Accept-Encoding"] == "deflate"
        sock.sendall(limewire.welcome("127.0.0.1", where, deflate=True))
        line, third, rest = limewire.read_block(sock)
        assert line == "GNUTELLA/0.6 200 OK"            # anything else: NoGnutellaOk, closed
        lime = Servent.shaken(sock, deflate_in=limewire.deflates(third), deflate_out=True,
                              extra=rest)
        *table, ping = limewire.first_messages()        # an ultrapeer's table, to us too
        lime.send(*table)
        greeting = lime.next()
        assert (greeting.payload_type, greeting.ttl) == (PING, 3)
        lime.send(ping)
        assert lime.next().guid == ping[:16]
        with Servent.connect(service.address) as other:
            other.join()
            query = limewire.query("dialed")
            other.send(query)
            assert lime.next().guid == query[:16]
            lime.send(hit(query))
            assert other.next().payload_type == QUERY_HIT
            assert handler_stats(rt, SERVER)["closed"] == {}
        lime.close()
    listener.close()
