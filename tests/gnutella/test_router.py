"""Every routing rule through a running router, over loopback, with servents made of the codec:
broadcasts and the answers routed back, pushes by servent id, duplicates, TTL, leaves.

A "nothing arrived" check is made with a sentinel: the router routes one servent's descriptors
in the order sent (one router thread), so when the sentinel sent after a descriptor arrives
first, that descriptor went nowhere.
"""

from __future__ import annotations

import logging

import pytest

from gnutella.descriptors import (
    BYE,
    PING,
    PONG,
    PUSH,
    QUERY,
    QUERY_HIT,
    QueryFlags,
    Result,
    encode,
    encode_ping,
    encode_pong,
    encode_push,
    encode_query,
    encode_query_hit,
    new_guid,
)
from gnutella.events import ROUTER, SERVER

from tests.helpers import qrp
from tests.helpers.gnutella_spec import BYE_RAW
from tests.helpers.net import until
from tests.helpers.servent import Servent, handler_stats, running

SERVENT_ID = bytes(range(0xA0, 0xB0))


@pytest.fixture
def router():
    with running() as (rt, service):
        yield rt, service.address


def join(address, n: int, **kwargs) -> list[Servent]:
    servents = [Servent.connect(address, **kwargs) for _ in range(n)]
    for s in servents:
        s.join()
    return servents


def sentinel(sender: Servent, *receivers: Servent) -> None:
    """``sender``'s next query is the next thing each receiver gets: what ``sender`` sent
    before it went nowhere near them."""
    query = encode_query("sentinel", ttl=2)
    sender.send(query)
    for r in receivers:
        got = r.next()
        assert (got.payload_type, got.guid) == (QUERY, query[:16]), got


def test_a_ping_is_broadcast_and_the_pongs_come_back_to_the_asker(router):
    rt, address = router
    a, b, c = join(address, 3)
    ping = encode_ping(ttl=7, ggep=b"\xc3\x83SCP\x41\x01")       # GGEP asks for packed pongs
    a.send(ping)
    ours = a.next()                                # the router answers at once for itself
    assert (ours.payload_type, ours.guid, ours.files, ours.port) == (PONG, ping[:16], 0,
                                                                     address[1])
    assert ours.ip == "127.0.0.1" and ours.hops == 0
    for s in (b, c):
        got = s.next()
        assert (got.payload_type, got.guid, got.ttl, got.hops) == (PING, ping[:16], 6, 1)
        assert got.ggep == b"\xc3\x83SCP\x41\x01"                  # forwarded byte for byte
    b.send(encode_pong(ping[:16], 6346, "10.0.0.2", files=5, ttl=7, ggep=b"\xc3\x82DU\x42\x10"))
    pong = a.next()
    assert (pong.payload_type, pong.guid, pong.ip, pong.files) == (PONG, ping[:16], "10.0.0.2", 5)
    assert (pong.ttl, pong.hops, pong.ggep) == (6, 1, b"\xc3\x82DU\x42\x10")
    sentinel(a, c)                                  # B's pong went to A alone
    stats = handler_stats(rt, ROUTER)
    assert stats["routed"]["pong"] == 1 and stats["answered"] == 4     # 3 joins, 1 ping
    assert ("10.0.0.2", 6346) in rt.stage("gnutella.catcher").handler.hosts


def test_a_query_is_broadcast_and_its_hits_come_back_to_the_asker(router):
    rt, address = router
    a, b, c = join(address, 3)
    flags = QueryFlags.XML | QueryFlags.GGEP_H | QueryFlags.OOB_REPLY      # the modern kind
    query = encode_query("free music", flags=flags, extensions=b"urn:sha1:\x1c", ttl=4, hops=1)
    a.send(query)
    for s in (b, c):
        got = s.next()
        assert (got.payload_type, got.guid, got.ttl, got.hops) == (QUERY, query[:16], 3, 2)
        assert got.flags == flags | QueryFlags.MARK and got.raw[23:] == query[23:]
    hit = encode_query_hit(query[:16], 6346, "10.0.0.3", 1000,
                           [Result(1, 4096, "free music.mp3")], SERVENT_ID, trailer=b"GTKG\x00")
    c.send(hit)
    got = a.next()
    assert (got.payload_type, got.guid, got.servent_id, got.ttl, got.hops) == (
        QUERY_HIT, query[:16], SERVENT_ID, 6, 1)
    assert got.raw[23:] == hit[23:]
    sentinel(a, b)                                   # the hit went to A alone
    assert handler_stats(rt, ROUTER)["routed"]["query_hit"] == 1


def test_a_push_follows_the_path_of_the_query_hit_that_named_its_servent(router):
    _, address = router
    a, b, c = join(address, 3)
    query = encode_query("x")
    a.send(query)
    b.next(), c.next()
    c.send(encode_query_hit(query[:16], 6346, "10.0.0.3", 10, [Result(7, 1, "x")], SERVENT_ID))
    a.next()
    push = encode_push(SERVENT_ID, 7, "10.0.0.1", 6699, ggep=b"\xc3\x83PSH\x40")
    a.send(push)
    got = c.next()
    assert (got.payload_type, got.servent_id, got.file_index, got.port) == (
        PUSH, SERVENT_ID, 7, 6699)
    assert got.ggep == b"\xc3\x83PSH\x40" and (got.ttl, got.hops) == (6, 1)
    a.send(push)                                           # the same push again: not twice
    a.send(encode_push(bytes(16), 1, "10.0.0.1", 6699))    # a servent nobody answered for
    sentinel(a, b, c)


def test_answers_without_a_path_are_dropped(router):
    rt, address = router
    a, b = join(address, 2)
    a.send(encode_pong(new_guid(), 6346, "10.0.0.9"),
           encode_query_hit(new_guid(), 1, "10.0.0.9", 1, [], SERVENT_ID))
    sentinel(a, b)
    assert handler_stats(rt, ROUTER)["dropped"]["no route"] == 2


def test_duplicates_are_dropped_whichever_way_they_come(router):
    rt, address = router
    a, b, c = join(address, 3)
    query = encode_query("once", ttl=5)
    a.send(query)
    assert b.next().guid == c.next().guid == query[:16]
    b.send(encode_query("once", guid=query[:16], ttl=4, hops=1))   # around a loop
    a.send(query)                                                   # and resent
    sentinel(b, a, c)
    sentinel(a, b, c)
    assert handler_stats(rt, ROUTER)["dropped"]["duplicate"] == 2


def test_ttl_is_spent_hop_by_hop_and_capped(router):
    rt, address = router
    a, b = join(address, 2)
    last = encode_query("last hop", ttl=1, hops=3)
    a.send(last)                                     # TTL 1: it has arrived, goes no further
    sentinel(a, b)
    greedy = encode_query("greedy", ttl=15, hops=2)   # claims more than the cap of 7 allows
    a.send(greedy)
    got = b.next()
    assert (got.guid, got.ttl, got.hops) == (greedy[:16], 4, 3)      # trimmed to 5, then spent
    assert handler_stats(rt, ROUTER)["dropped"]["expired"] >= 1


def test_leaves_get_queries_not_pings(router):
    _, address = router
    up1, up2 = join(address, 2)
    [leaf] = join(address, 1, leaf=True)                # it sends its route table as it joins
    ping = encode_ping(ttl=3)
    up1.send(ping)
    assert up1.next().payload_type == PONG          # ours
    assert up2.next().guid == ping[:16]
    sentinel(up1, up2, leaf)                        # the ping never reached the leaf
    query = encode_query("from a leaf", ttl=3)
    leaf.send(query)                                # a leaf's query goes to the ultrapeers
    assert up1.next().guid == up2.next().guid == query[:16]
    leaf_ping = encode_ping(ttl=3)
    leaf.send(leaf_ping)
    pong = leaf.next()                              # the router answers for the network
    assert (pong.payload_type, pong.guid) == (PONG, leaf_ping[:16])
    assert up1.next().guid == leaf_ping[:16]        # and asks its ultrapeers on


def test_a_leaf_gets_no_query_until_it_sends_a_route_table(router):
    rt, address = router
    [up] = join(address, 1)
    silent, asking = (Servent.connect(address, leaf=True) for _ in range(2))
    silent.handshake()
    silent.send(encode_ping(ttl=1))
    assert silent.next().payload_type == PONG            # a neighbour now, without a table
    asking.join()                                        # sends its table as it joins
    query = encode_query("for the leaves that asked", ttl=3)
    up.send(query)
    assert asking.next().guid == query[:16]
    silent.send(qrp.reset())                             # asks now: an empty table will do
    sentinel(silent, up, asking)                         # which the other leaf gets too
    up.send(query := encode_query("now both", ttl=3))
    assert silent.next().guid == asking.next().guid == query[:16]
    assert handler_stats(rt, SERVER)["connections"]["searched"] == 2
    silent.close(), asking.close()


def test_unknown_descriptors_are_dropped_and_the_connection_stays(router):
    rt, address = router
    a, b = join(address, 2)
    vendor = encode(0x31, b"LIME\x0a\x00\x02\x00" + b"\x00" * 8, ttl=1)   # messages supported
    hsep = encode(0xCD, bytes(24), ttl=1)                                 # horizon size
    a.send(vendor, hsep, qrp.reset())                   # a table from an ultrapeer: no effect
    sentinel(a, b)
    dropped = handler_stats(rt, ROUTER)["dropped"]
    assert (dropped["unknown"], dropped["route table"]) == (2, 1)


def test_a_bye_closes_its_connection_and_says_why_in_the_log(router, caplog):
    caplog.set_level(logging.INFO, logger="gnutella")
    rt, address = router
    a, b = join(address, 2)
    a.send(BYE_RAW)                                     # as gtk-gnutella says goodbye
    assert a.closed_by_router()
    a.close()                                           # as it would: our close is complete
    assert "says Bye: 403 Relayed 12 high TTL (>10) messages" in caplog.text
    until(lambda: handler_stats(rt, SERVER)["closed"], lambda c: c == {"bye from peer": 1})
    with Servent.connect(address) as later:
        later.join()
        query = encode_query("the others still talk", ttl=3)
        b.send(query)
        assert later.next().guid == query[:16]


def test_a_bye_that_claims_to_have_travelled_is_no_bye(router):
    rt, address = router
    a, b = join(address, 2)
    a.send(encode(BYE, b"\xc8\x00bye\x00", ttl=1, hops=1))
    sentinel(a, b)                                      # a is still connected and routed
    assert handler_stats(rt, ROUTER)["dropped"]["unknown"] == 1


def test_only_query_hits_may_be_larger_than_max_forward():
    with running(max_forward=100) as (rt, service):
        a, b = join(service.address, 2)
        big = encode_query("q" * 200, ttl=3)
        a.send(big, encode_ping(ggep=bytes(120), ttl=3))
        sentinel(a, b)
        assert handler_stats(rt, ROUTER)["dropped"]["too large"] == 2
        query = encode_query("small", ttl=3)
        a.send(query)
        assert b.next().guid == query[:16]
        hit = encode_query_hit(query[:16], 6346, "10.0.0.3", 10, [Result(7, 1, "h" * 300)],
                               SERVENT_ID)
        b.send(hit)
        assert a.next().guid == query[:16]
        a.close(), b.close()


@pytest.mark.parametrize("version, deflate", [("0.4", False), ("0.6", False), ("0.6", True)])
def test_every_kind_of_connection_routes_to_every_other(router, version, deflate):
    _, address = router
    [odd] = join(address, 1, version=version, deflate=deflate)
    [plain] = join(address, 1)
    assert odd.done.deflate_in == odd.done.deflate_out == deflate
    query = encode_query("both ways" * 50, ttl=3)    # compresses well
    odd.send(query)
    assert plain.next().guid == query[:16]
    other = encode_query("and back", ttl=3)
    plain.send(other)
    got = odd.next()
    assert got.guid == other[:16] and got.search == "and back"
