"""A streamed body written from an event loop: write_nowait never blocks, and says when to wait
for when_writable (the blocking write is tested through the server in test_server.py). A
prepared answer's Date."""

from __future__ import annotations

import pytest

from seda.http import Prepared, StreamBody
from seda.http import response as response_module


def test_write_nowait_says_when_the_socket_is_behind_and_when_writable_when_it_caught_up():
    body, woken, writable = StreamBody(limit=100), [], []
    body.attach(lambda: woken.append(True))
    assert body.write_nowait(b"a" * 60) is True
    assert body.write_nowait(b"b" * 60) is False           # 120 wait: over the limit
    body.when_writable(lambda: writable.append(True))
    assert writable == []
    pieces, finished = body.take()                         # the socket side took them
    assert b"".join(pieces).count(b"a") == 60 and not finished
    assert writable == [True]
    body.when_writable(lambda: writable.append("at once"))  # nothing waits now
    assert writable == [True, "at once"]


def test_a_gone_connection_wakes_the_waiting_producer_and_refuses_more():
    body, writable = StreamBody(limit=10), []
    body.attach(lambda: None)
    body.write_nowait(b"x" * 20)
    body.when_writable(lambda: writable.append(True))
    body.broken()
    assert writable == [True]
    with pytest.raises(ConnectionError):
        body.write_nowait(b"more")


class _Clock:
    """Wall and monotonic clocks that move together, by hand."""

    def __init__(self, wall: float, mono: float) -> None:
        self.wall, self.mono = wall, mono

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


def test_a_prepared_answer_carries_the_date_of_the_second_it_is_sent_in(monkeypatch):
    clock = _Clock(wall=1_000_000_000.5, mono=50.0)   # half past 01:46:40 UTC, 9 Sep 2001
    monkeypatch.setattr(response_module, "time", clock)
    for name in ("_second", "_next_second", "_stale_at"):   # restored after the test
        monkeypatch.setattr(response_module, name, getattr(response_module, name))
    response_module._stale_at = 0.0
    answer = Prepared(200, b"content-length: 2\r\n", b"hi")
    first = answer.whole(clock.monotonic())
    assert first.startswith(b"HTTP/1.1 200 OK\r\ndate: Sun, 09 Sep 2001 01:46:40 GMT\r\n")
    assert first.endswith(b"\r\n\r\nhi")
    clock.advance(0.4)                                 # the same second: the same bytes
    assert answer.whole(clock.monotonic()) is first
    clock.advance(0.2)                                 # the next one, told by the monotonic clock
    assert b"date: Sun, 09 Sep 2001 01:46:41 GMT\r\n" in answer.whole(clock.monotonic())
    # to a request that said close: the same, with the close said, as encode() makes it
    closing = answer.closing(clock.monotonic())
    assert closing == answer.encode(False, False, False)[0][0]
    assert closing.startswith(b"HTTP/1.1 200 OK\r\ndate: Sun, 09 Sep 2001 01:46:41 GMT\r\n")
    assert b"\r\nconnection: close\r\n" in closing and closing.endswith(b"\r\n\r\nhi")
    clock.advance(1.0)
    assert b"01:46:42 GMT" in answer.closing(clock.monotonic())
