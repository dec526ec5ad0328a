"""The host cache on its own: bounded, the named hosts first, backoff that doubles, a file that
is replaced whole and read forgivingly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gnutella.hostcache import HostCache

A, B, C = ("10.0.0.1", 6346), ("10.0.0.2", 6346), ("10.0.0.3", 6347)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_only_addresses_that_can_be_dialed_are_learned():
    hosts = HostCache()
    assert hosts.learn([A, ("0.0.0.0", 6346), ("224.0.0.1", 6346), ("example.org", 6346),
                        ("10.0.0.9", 0), ("240.0.0.1", 1), ("::1", 6346), A]) == 2
    assert A in hosts and ("::1", 6346) in hosts and len(hosts) == 2


def test_it_keeps_the_most_recently_seen_and_never_drops_a_pinned_host():
    hosts = HostCache(capacity=2)
    hosts.pin(C)
    hosts.learn([A])
    hosts.learn([B])                        # full: A, the oldest unpinned, goes
    assert C in hosts and B in hosts and A not in hosts
    hosts.learn([A])
    assert A in hosts and B not in hosts


def test_pinned_hosts_come_first_then_the_freshest():
    hosts = HostCache()
    hosts.learn([A, B])
    hosts.pin(C)
    assert hosts.ready(0.0, 10) == [C, B, A]
    assert hosts.ready(0.0, 2, exclude={C}) == [B, A]
    assert hosts.sample(1) == [C] and hosts.sample(5, exclude={C}) == [B, A]


def test_a_failing_host_waits_twice_as_long_each_time_then_is_forgotten():
    hosts = HostCache(retry=(1.0, 3.0), forget_after=4)
    hosts.learn([A])
    hosts.pin(B)
    waits = []
    for _ in range(3):
        hosts.failed(A, 100.0)
        hosts.failed(B, 100.0)
        assert hosts.ready(100.0, 5) == []
        waits.append(hosts.next_retry(100.0) - 100.0)
    assert waits == [1.0, 2.0, 3.0]         # doubling, up to the longest
    hosts.failed(A, 100.0)
    hosts.failed(B, 100.0)
    assert A not in hosts and B in hosts     # named on the command line: kept
    hosts.succeeded(B, 100.0)
    assert hosts.ready(100.0, 5) == [B]
    hosts.succeeded(B, 100.0, rest=10.0)     # it worked and went: not straight back
    assert hosts.ready(105.0, 5) == [] and hosts.ready(110.0, 5) == [B]


def test_the_file_survives_a_restart_and_is_replaced_whole(tmp_path):
    path = str(tmp_path / "hosts")
    clock = Clock()
    hosts = HostCache(wall=clock)
    hosts.learn([A])
    clock.now += 60
    hosts.learn([B, ("::1", 6346)])
    assert hosts.dirty
    hosts.save(path)
    assert not hosts.dirty and os.listdir(tmp_path) == ["hosts"]     # no temporary left
    text = Path(path).read_text()
    assert text.splitlines()[1:] == ["10.0.0.1:6346 1700000000", "10.0.0.2:6346 1700000060",
                                     "[::1]:6346 1700000060"]
    again = HostCache()
    assert again.load(path) == 3
    assert again.sample(3) == [("::1", 6346), B, A]


def test_a_damaged_file_gives_what_can_be_read(tmp_path):
    path = tmp_path / "hosts"
    path.write_bytes(b"# comment\n10.0.0.1:6346 1\ngarbage\n\xff\xfe:1 2\n10.0.0.2:99999 3\n"
                     b"example.org:6346 4\n10.0.0.3:6347 notatime\n10.0.0.2:6346 5 extra\n"
                     b"10.0.0.3:6347 6")
    hosts = HostCache()
    assert hosts.load(str(path)) == 2
    assert hosts.sample(5) == [C, A]
    assert HostCache().load(str(tmp_path / "missing")) == 0


def test_a_file_that_cannot_be_written_leaves_the_old_one(tmp_path):
    path = tmp_path / "hosts"
    hosts = HostCache()
    hosts.learn([A])
    hosts.save(str(path))
    hosts.learn([B])
    (tmp_path / f"hosts.{os.getpid()}.tmp").mkdir()        # where the new file would go
    with pytest.raises(OSError):
        hosts.save(str(path))
    assert hosts.dirty and "10.0.0.2" not in path.read_text()
