"""A streamed body written from an event loop: write_nowait never blocks, and says when to wait
for when_writable (the blocking write is tested through the server in test_server.py)."""

from __future__ import annotations

import pytest

from seda.http import StreamBody


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
