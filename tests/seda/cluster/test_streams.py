"""The Redis commands of a cluster stage, on their own: what the pool relies on."""

from __future__ import annotations

from seda.cluster.streams import Streams


def test_a_consumer_is_forgotten_only_if_it_holds_nothing(client):
    streams = Streams(client, "s", "g", 1, "me")
    streams.ensure_group()
    streams.ensure_group()                                 # twice: BUSYGROUP is no error
    streams.add(0, b"x")
    client.xreadgroup("g", "holder", {"s": ">"}, count=1)   # holds the entry
    client.xgroup_createconsumer("s", "g", "empty")         # holds nothing
    assert streams.prune(0) == 1
    names = {c["name"] for c in client.xinfo_consumers("s", "g")}
    assert names == {b"holder"}


def test_claim_reports_attempts_and_acknowledges_deleted_entries(client):
    streams = Streams(client, "s", "g", 1, "me")
    streams.ensure_group()
    streams.add_many([(0, b"a"), (0, b"b")])
    first, second = (e.id for e in streams.read("s", 2, None))
    client.xdel("s", second)                               # gone while pending
    cursor, entries = streams.claim("s", 0, b"0-0", 10)
    assert cursor == b"0-0"
    assert [(e.id, e.data, e.attempt) for e in entries] == [(first, b"a", 2)]
    assert client.xpending("s", "g")["pending"] == 1       # the deleted one acknowledged


def test_a_survey_counts_backlog_pending_and_dead_letters(client):
    streams = Streams(client, "s", "g", 2, "me")
    streams.ensure_group()
    streams.add_many([(0, b"a"), (1, b"b"), (1, b"c")])
    entry = streams.read("s:1", 1, None)[0]
    streams.bury(entry, "broken")
    survey = streams.survey(int(entry.born * 1000) + 50, 1000)
    assert survey["backlog"] == 2 and survey["pending"] == 0 and survey["dead_letters"] == 1
    assert survey["consumers"] == 1 and survey["oldest_ms"] >= 50
    assert streams.lengths() == [1, 1]
