"""Thesis 6.2.2: a neighbour that stops reading must not make the router's memory grow. One
servent never reads while another floods queries; the silent one is closed once its outgoing
queue passes ``max_pending``, counted, and everyone else is served throughout, every query
delivered; the process's memory grows by far less than what was sent its way."""

from __future__ import annotations

import threading

from gnutella.descriptors import QUERY, encode_query
from gnutella.events import SERVER

from tests.helpers.servent import WAIT, Servent, handler_stats, running

QUERIES = 6000
PAYLOAD = 16 * 1024           # 96 MB of queries in all, each one also due to the silent servent
WINDOW = 8                    # queries sent before waiting for them to arrive
# Queries this large are not sent on by default (gtk-gnutella closes a connection that sends it
# a query over 1 kB); here they are, to fill the silent servent's queue fast.
LARGE = {"max_forward": 2 * PAYLOAD}


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_a_servent_that_never_reads_is_closed_and_the_others_are_served():
    with running(max_pending=256 * 1024, **LARGE) as (rt, service):
        silent = Servent.connect(service.address, rcvbuf=4096)
        flooder, reader = Servent.connect(service.address), Servent.connect(service.address)
        for s in (silent, flooder, reader):
            s.join()
        queries = [encode_query("x" * PAYLOAD, ttl=2) for _ in range(QUERIES)]
        received: list[bytes] = []
        arrived = threading.Condition()

        def read() -> None:
            while len(received) < QUERIES:
                got = reader.next()
                if got.payload_type == QUERY:
                    with arrived:
                        received.append(got.guid)
                        arrived.notify()

        threading.Thread(target=read, daemon=True).start()
        before = rss()
        # As fast as the reader reads (a window of WINDOW queries): it is never the slow one.
        for i in range(0, QUERIES, WINDOW):
            flooder.send(*queries[i:i + WINDOW])
            with arrived:
                assert arrived.wait_for(lambda n=i + WINDOW: len(received) >= n, WAIT), (
                    f"{len(received)} of {i + WINDOW} queries arrived")
        grown = rss() - before
        assert received == [q[:16] for q in queries]          # all of them, in order
        assert grown < QUERIES * PAYLOAD / 3, f"RSS grew {grown / 2**20:.0f} MB"
        assert silent.closed_by_router()
        with Servent.connect(service.address) as later:
            later.join()
            stats = handler_stats(rt, SERVER)
            assert stats["closed"] == {"slow reader": 1}
            assert stats["connections"]["ultrapeers"] == 3     # flooder, reader, later
        for s in (silent, flooder, reader):
            s.close()


def test_the_bytes_waiting_for_a_slow_reader_are_in_the_servers_counters():
    """What the figure of the slow-reader benchmark plots: ``pending`` in the server's stats."""
    count, size = 800, 16 * 1024          # 12.8 MB, all of it kept for the silent servent
    with running(max_pending=2**40, **LARGE) as (rt, service):
        silent = Servent.connect(service.address, rcvbuf=4096)
        flooder, reader = Servent.connect(service.address), Servent.connect(service.address)
        for s in (silent, flooder, reader):
            s.join()
        assert handler_stats(rt, SERVER)["pending"] == {"bytes": 0, "largest": 0}
        queries = [encode_query("x" * size, ttl=2) for _ in range(count)]
        for i in range(0, count, WINDOW):
            flooder.send(*queries[i:i + WINDOW])
            for _ in queries[i:i + WINDOW]:
                assert reader.next().payload_type == QUERY
        pending = handler_stats(rt, SERVER)["pending"]
        # all but what the kernel took (loopback buffers grow to a few MB) and the last batch
        assert count * size // 2 < pending["largest"] <= pending["bytes"] <= count * size
        for s in (silent, flooder, reader):
            s.close()
