"""Quiet neighbours: one silent for ``alive_period`` gets an alive ping (TTL 1, hops 0, as
gtk-gnutella sends them), one that answers stays however long it is otherwise quiet, and one
that says nothing for ``idle_timeout`` is closed and counted. Short periods here; the defaults
are gtk-gnutella's (20 s between pings, 180 s of silence)."""

from __future__ import annotations

import time

from gnutella.descriptors import PING, encode_pong
from gnutella.events import SERVER

from tests.helpers.net import until
from tests.helpers.servent import WAIT, Servent, handler_stats, running

PERIOD, IDLE = 0.1, 1.0


def test_a_quiet_neighbour_is_pinged_and_stays_while_it_answers():
    with (running(alive_period=PERIOD, idle_timeout=IDLE) as (rt, service),
          Servent.connect(service.address) as s):
        s.join()
        start = time.monotonic()
        pinged = 0
        while time.monotonic() - start < 2 * IDLE:       # quiet but for its answers
            ping = s.next()
            assert (ping.payload_type, ping.ttl, ping.hops, ping.payload) == (PING, 1, 0, b"")
            s.send(encode_pong(ping.guid, 6346, "127.0.0.1", ttl=1))
            pinged += 1
        assert pinged >= 2
        stats = handler_stats(rt, SERVER)
        assert stats["closed"] == {} and stats["connections"]["ultrapeers"] == 1


def test_a_neighbour_that_says_nothing_is_closed_after_idle_timeout():
    with running(alive_period=PERIOD, idle_timeout=IDLE) as (rt, service):
        with Servent.connect(service.address) as s:
            start = time.monotonic()                     # before the last word it says
            s.join()
            assert s.closed_by_router()                  # reads our pings, answers none
            assert IDLE <= time.monotonic() - start < WAIT
        until(lambda: handler_stats(rt, SERVER)["closed"], lambda c: c == {"idle": 1})
