"""gtk-gnutella against a running router, byte for byte as its source writes (the profile in
tests/helpers/gtk_gnutella.py): as a leaf and as an ultrapeer that connects to us, and as the
ultrapeer the catcher dials. Each test checks our answer by the rules that would make the real
client close, then plays its first messages and asserts that it stays and that its searches
travel and their hits come back; and that it gets a Bye when we stop."""

from __future__ import annotations

import socket

import pytest

from gnutella.descriptors import (
    BYE,
    PING,
    PONG,
    QUERY,
    QUERY_HIT,
    Result,
    encode_pong,
    encode_query_hit,
)
from gnutella.events import CATCHER, SERVER

from tests.helpers import gtk_gnutella as gtkg
from tests.helpers.net import until
from tests.helpers.servent import WAIT, Servent, handler_stats, running

NODE = ("127.0.0.1", 6348)    # where the gtk-gnutella that connects to us says it listens
SERVENT_ID = bytes(range(0x30, 0x40))


def connect(address, *, leaf: bool) -> tuple[Servent, dict[str, str]]:
    """gtk-gnutella connects to the router: its CONNECT, our answer checked by its rules, its
    third step; then the connection as a servent, and our answer's headers."""
    sock = socket.create_connection(address, timeout=WAIT)
    sock.sendall(gtkg.hello(NODE, address[0], leaf=leaf))
    line, headers, rest = gtkg.read_block(sock)
    assert gtkg.refuses_answer(line, headers, leaf=leaf) is None, (line, headers)
    sock.sendall(gtkg.final(deflate=True))          # we accept deflate: it compresses
    deflate_in = headers.get("content-encoding") == "deflate"
    return Servent.shaken(sock, deflate_in=deflate_in, deflate_out=True, extra=rest), headers


def answered(servent: Servent, ping: bytes) -> None:
    pong = servent.next()
    assert (pong.payload_type, pong.guid, pong.hops) == (PONG, ping[:16], 0)


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "ultrapeer"])
def test_gtk_gnutella_connects_stays_and_its_searches_are_answered(leaf):
    with running() as (rt, service), Servent.connect(service.address) as up:
        up.join()
        gtk, headers = connect(service.address, leaf=leaf)
        assert headers["x-query-routing"] == "0.1"      # it may send its table (it will)
        first = gtkg.first_messages(accepted=False)     # its table, then its SCP ping
        gtk.send(*first)
        answered(gtk, first[-1])                        # we answer it for the network...
        got = up.next()                                 # ...and ask our ultrapeers on
        assert (got.payload_type, got.guid, got.raw[23:]) == (PING, first[-1][:16], gtkg.SCP)
        query = gtkg.query("free software")
        gtk.send(query)
        got = up.next()
        assert (got.payload_type, got.guid, got.ttl, got.hops) == (QUERY, query[:16], 3, 1)
        assert got.raw[23:25] == query[23:25]           # its flags, untouched
        up.send(hit := up_hit(query))
        got = gtk.next()
        assert (got.payload_type, got.guid, got.servent_id) == (QUERY_HIT, query[:16], SERVENT_ID)
        assert got.raw[23:] == hit[23:]
        other = gtkg.query("from the network")
        up.send(other)
        assert gtk.next().guid == other[:16]            # it sent its table: it gets queries
        alive = gtkg.alive_ping()                       # what it sends after quiet
        gtk.send(alive)
        answered(gtk, alive)
        stats = handler_stats(rt, SERVER)
        assert stats["connections"]["leaves" if leaf else "ultrapeers"] == (1 if leaf else 2)
        assert stats["closed"] == {}
        gtk.close()


def up_hit(query: bytes) -> bytes:
    """A hit for ``query`` from a servent one hop beyond our other neighbour."""
    return encode_query_hit(query[:16], 6346, "10.0.0.3", 100, [Result(1, 2048, "gnu.iso")],
                            SERVENT_ID, ttl=4)


def test_we_dial_a_gtk_gnutella_ultrapeer_as_the_catcher_does():
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(WAIT)
    where = listener.getsockname()[:2]
    with running(peers=(where,), outgoing=1) as (rt, service):
        sock, _ = listener.accept()
        sock.settimeout(WAIT)
        line, hello, _ = gtkg.read_block(sock)
        assert line == "GNUTELLA CONNECT/0.6"
        assert gtkg.refuses_hello(hello) is None, hello
        sock.sendall(gtkg.welcome("127.0.0.1", deflate=True))
        line, third, rest = gtkg.read_block(sock)
        assert gtkg.refuses_final(line, third, hello) is None, (line, third)
        gtk = Servent.shaken(sock, deflate_in=third.get("content-encoding") == "deflate",
                             deflate_out=True, extra=rest)
        first = gtkg.first_messages(accepted=True)      # its table, then an alive ping
        gtk.send(*first)
        greeting = gtk.next()                           # the catcher's ping, to learn hosts
        assert (greeting.payload_type, greeting.ttl, greeting.hops) == (PING, 3, 0)
        answered(gtk, first[-1])
        gtk.send(encode_pong(greeting.guid, where[1], "127.0.0.1", ttl=1))     # its own pong
        with Servent.connect(service.address) as other:
            other.join()
            query = gtkg.query("what the catcher found")
            other.send(query)
            assert gtk.next().guid == query[:16]
            gtk.send(up_hit(query))
            assert other.next().payload_type == QUERY_HIT
            assert handler_stats(rt, CATCHER)["up"] == 1
            assert handler_stats(rt, SERVER)["closed"] == {}
        gtk.close()
    listener.close()


def test_a_gtk_gnutella_that_says_bye_is_let_go_and_one_that_stays_gets_a_bye_when_we_stop():
    with running() as (rt, service):
        leaving, _ = connect(service.address, leaf=False)
        staying, _ = connect(service.address, leaf=True)
        leaving.send(gtkg.bye(202, "User manual removal"))
        assert leaving.closed_by_router()
        leaving.close()
        until(lambda: handler_stats(rt, SERVER)["closed"], lambda c: c == {"bye from peer": 1})
        rt.stop(timeout=WAIT)
        got = staying.next()
        assert (got.payload_type, got.ttl, got.hops) == (BYE, 1, 0)
        assert (got.code, got.message) == (200, "Servent shutdown")
        assert staying.closed_by_router()
        staying.close()
