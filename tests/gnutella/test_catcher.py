"""The catcher over loopback: it dials the hosts it is given and keeps its connections up,
learns hosts from pongs and X-Try, backs off from a host that is down, and the hosts it learned
are there again after a restart. The servents here listen; the router dials them."""

from __future__ import annotations

import socket
from pathlib import Path

from gnutella.descriptors import PING, encode_pong
from gnutella.events import CATCHER
from gnutella.handshake import Established

from tests.helpers.servent import Servent, handler_stats, running


def listener() -> socket.socket:
    return socket.create_server(("127.0.0.1", 0))


def address(sock: socket.socket) -> tuple[str, int]:
    return sock.getsockname()[:2]


def test_it_dials_its_peers_pings_them_and_learns_from_their_pongs():
    ear = listener()
    with running(peers=(address(ear),), outgoing=1) as (rt, service):
        up = Servent.accept(ear, deflate=True)
        done = up.handshake()
        assert isinstance(done, Established) and done.deflate_in and done.deflate_out
        assert done.peer.ultrapeer and done.peer.listen_ip == service.address
        ping = up.next()                    # the catcher's ping, to learn hosts
        assert ping.payload_type == PING and ping.hops == 0 and ping.ttl == 3
        up.send(encode_pong(ping.guid, 6346, "10.7.7.7", ttl=3))
        second = Servent.connect(service.address)
        second.join()                       # by then the router has handled the pong
        assert ("10.7.7.7", 6346) in service.hosts
        assert handler_stats(rt, CATCHER)["up"] == 1
        up.close(), second.close()
    ear.close()


def test_a_refusal_with_x_try_sends_it_to_the_hosts_offered():
    full, free = listener(), listener()
    with running(peers=(address(full),), outgoing=1):
        refusing = Servent.accept(full)
        assert refusing.handshake(refuse=[address(free)]).code == 503
        refusing.close()
        taker = Servent.accept(free)        # dialed from the X-Try header
        assert isinstance(taker.handshake(), Established)
        taker.close()
    full.close(), free.close()


def test_a_host_that_is_down_is_retried_later_and_connections_are_kept_up():
    down = socket.socket()
    down.bind(("127.0.0.1", 0))             # a port that refuses connections, for now
    other = listener()
    with running(peers=(address(down), address(other)), outgoing=2,
                 retry=(0.05, 0.2)) as (rt, _):
        first = Servent.accept(other)
        first.handshake()
        down.listen()                       # it comes up: the next retry connects
        late = Servent.accept(down)
        assert isinstance(late.handshake(), Established)
        assert handler_stats(rt, CATCHER)["failed"] >= 1
        first.close()                       # a connection goes: the catcher replaces it
        again = Servent.accept(other)       # (the only host left, once rested)
        assert isinstance(again.handshake(), Established)
        late.close(), again.close()
    down.close(), other.close()


def test_learned_hosts_survive_a_restart(tmp_path):
    cache = str(tmp_path / "hosts")
    with running(hostcache=cache) as (_, service):
        a = Servent.connect(service.address)
        a.join()
        a.send(encode_pong(bytes(16), 6346, "10.8.8.8"))       # a pong routed nowhere
        b = Servent.connect(service.address)
        b.join()
        assert ("10.8.8.8", 6346) in service.hosts
        a.close(), b.close()
    with running(hostcache=cache) as (_, service):
        assert ("10.8.8.8", 6346) in service.hosts
    assert Path(cache).read_text().count("10.8.8.8:6346") == 1


def test_it_never_dials_itself():
    with running(outgoing=2) as (rt, service):
        nobody = listener()
        service.hosts.learn([service.address, address(nobody)])
        Servent.accept(nobody).handshake()
        assert handler_stats(rt, CATCHER)["dialed"] == 1      # in the same round
        nobody.close()
