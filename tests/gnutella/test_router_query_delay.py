"""Thesis 6.2.3: with ``query_delay`` each query sleeps in the router, and the thread pool
controller gives the router threads while queries wait behind sleeping ones; one thread is the
thesis's Fig. 41(a). Only what does not depend on the machine's speed is asserted: a lower bound
on one query's time, and that threads were added (they stay until idle for seconds)."""

from __future__ import annotations

import time

from gnutella.descriptors import QUERY, encode_ping, encode_query
from gnutella.events import ROUTER

from tests.helpers.servent import Servent, running

DELAY = 0.05


def test_each_query_sleeps_on_a_single_thread():
    with running(query_delay=DELAY) as (rt, service):
        a, b = Servent.connect(service.address), Servent.connect(service.address)
        a.join(), b.join()
        start = time.monotonic()
        a.send(encode_query("slow", ttl=2))
        assert b.next().payload_type == QUERY
        assert time.monotonic() - start >= DELAY
        assert rt.stats()[ROUTER]["threads"] == 1
        a.close(), b.close()


def test_the_controller_adds_threads_while_queries_wait():
    with running(query_delay=DELAY, router_threads=8) as (rt, service):
        a, b = Servent.connect(service.address), Servent.connect(service.address)
        a.join(), b.join()
        queries = [encode_query(f"q{i}", ttl=2) for i in range(40)]
        ping = encode_ping(ttl=2)
        a.send(*queries, ping)
        got = {b.next().guid for _ in range(41)}        # in whatever order the threads finish
        assert got == {q[:16] for q in [*queries, ping]}
        # (the threads may have left again by now, idle: count those started)
        assert rt.stats()[ROUTER]["control"]["threads"]["started"] > 1
        a.close(), b.close()
