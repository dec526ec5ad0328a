"""Routing decisions in memory: every rule of Gnutella 0.6 section 2.3, the TTL cap, and
tables that forget within their bounds."""

from __future__ import annotations

import pytest

from gnutella.routing import LOCAL, PING, PONG, PUSH, QUERY, QUERY_HIT, Drop, Forward, Routes, Seen


def guid(n: int) -> bytes:
    return n.to_bytes(16, "big")


class Conns:
    def __init__(self) -> None:
        self.closed: set = set()

    def alive(self, conn) -> bool:
        return conn not in self.closed


def routes(**options) -> tuple[Routes, Conns]:
    conns = Conns()
    return Routes(conns.alive, **options), conns


def test_pings_and_queries_are_broadcast_once_with_ttl_down_and_hops_up():
    r, _ = routes()
    assert r.route("a", PING, guid(1), 7, 0, 0.0) == Forward(None, 6, 1)
    assert r.route("b", PING, guid(1), 6, 1, 0.0) == Drop("duplicate")   # another path
    assert r.route("a", QUERY, guid(1), 3, 2, 0.0) == Forward(None, 2, 3)  # its own table
    assert r.route("a", QUERY, guid(1), 3, 2, 0.0) == Drop("duplicate")


def test_answers_go_back_along_the_path_of_their_ping_or_query():
    r, _ = routes()
    r.route("a", PING, guid(1), 7, 0, 0.0)
    r.route("b", QUERY, guid(2), 7, 0, 0.0)
    assert r.route("c", PONG, guid(1), 7, 0, 1.0) == Forward("a", 6, 1)
    assert r.route("c", QUERY_HIT, guid(2), 7, 0, 1.0, servent=b"S" * 16) == Forward("b", 6, 1)
    assert r.route("c", PONG, guid(3), 7, 0, 1.0) == Drop("no route")     # no such ping
    assert r.route("c", QUERY_HIT, guid(1), 7, 0, 1.0) == Drop("no route")  # a ping's GUID


def test_a_push_follows_the_query_hit_of_its_servent():
    r, _ = routes()
    r.route("a", QUERY, guid(2), 7, 0, 0.0)
    r.route("c", QUERY_HIT, guid(2), 7, 0, 0.0, servent=b"S" * 16)
    assert r.route("a", PUSH, guid(9), 7, 0, 1.0, servent=b"S" * 16) == Forward("c", 6, 1)
    assert r.route("a", PUSH, guid(8), 7, 0, 1.0, servent=b"T" * 16) == Drop("no route")


def test_a_push_goes_once_however_often_it_comes():
    r, _ = routes()
    r.route("a", QUERY, guid(2), 7, 0, 0.0)
    r.route("c", QUERY_HIT, guid(2), 7, 0, 0.0, servent=b"S" * 16)
    assert r.route("a", PUSH, guid(9), 7, 0, 1.0, servent=b"S" * 16) == Forward("c", 6, 1)
    assert r.route("b", PUSH, guid(9), 6, 1, 1.0, servent=b"S" * 16) == Drop("duplicate")


def test_a_route_through_a_closed_connection_is_a_dead_end():
    r, conns = routes()
    r.route("a", PING, guid(1), 7, 0, 0.0)
    conns.closed.add("a")
    assert r.route("c", PONG, guid(1), 7, 0, 0.0) == Drop("no route")


def test_ttl_runs_out_and_claims_beyond_the_cap_are_trimmed():
    r, _ = routes(max_ttl=7)
    assert r.route("a", PING, guid(1), 1, 3, 0.0) == Drop("expired")    # new, but goes no further
    assert r.route("a", PING, guid(1), 1, 3, 0.0) == Drop("duplicate")
    assert r.route("a", QUERY, guid(2), 50, 2, 0.0) == Forward(None, 4, 3)   # trimmed to 7 - 2
    assert r.route("a", QUERY, guid(3), 3, 9, 0.0) == Drop("expired")    # already past the cap


@pytest.mark.parametrize("kind", [PING, QUERY])
def test_a_copy_that_can_still_travel_goes_on_once_after_a_first_that_arrived_spent(kind):
    """The first copy came the long way round (TTL spent: it went nowhere); the copy that took
    the short way, held up on it, still has TTL to reach the servents beyond: it goes on, once."""
    r, _ = routes()
    assert r.route("long", kind, guid(1), 1, 6, 0.0) == Drop("expired")
    assert r.route("long2", kind, guid(1), 1, 6, 0.0) == Drop("duplicate")   # also spent
    assert r.route("short", kind, guid(1), 3, 2, 0.0) == Forward(None, 2, 3)
    assert r.route("short2", kind, guid(1), 3, 2, 0.0) == Drop("duplicate")  # once only
    # a first copy that went on is never followed by another
    assert r.route("a", kind, guid(2), 2, 1, 0.0) == Forward(None, 1, 2)
    assert r.route("b", kind, guid(2), 5, 1, 0.0) == Drop("duplicate")


def test_answers_to_our_own_pings_and_queries_come_to_us():
    r, _ = routes()
    r.originate(PING, guid(1), 0.0)
    r.originate(QUERY, guid(2), 0.0)
    assert r.route("c", PONG, guid(1), 7, 0, 0.0) == Forward(LOCAL, 7, 0)
    assert r.route("c", QUERY_HIT, guid(2), 7, 0, 0.0) == Forward(LOCAL, 7, 0)
    assert r.route("c", PING, guid(1), 7, 0, 0.0) == Drop("duplicate")   # our ping came back


def test_unknown_types_are_not_routed():
    r, _ = routes()
    assert r.route("a", 0x31, guid(1), 7, 0, 0.0) == Drop("unknown")


def test_seen_forgets_after_its_lifetime_and_stays_within_capacity():
    seen = Seen(lifetime=10.0, capacity=100)
    assert seen.add(b"k", "a", 0.0) and not seen.add(b"k", "b", 4.0)
    assert seen.get(b"k", 9.0) == "a"            # one generation old: still known
    assert seen.get(b"k", 15.1) is None          # two: forgotten
    for n in range(10_000):                      # a flood of fresh keys at one instant
        seen.add(guid(n), "x", 20.0)
        assert len(seen) <= 100
    assert seen.get(guid(9_999), 20.0) == "x"    # the newest are the ones kept
