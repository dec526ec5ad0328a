"""A request body read on an event loop: read_nowait and when_readable, with the backpressure
the blocking reads have (tests/seda/http/test_server.py has those)."""

from __future__ import annotations

import pytest

from seda.http import BodyError, BodyReader


def test_read_nowait_takes_what_has_come_and_says_where_the_body_ends():
    reader = BodyReader(lambda: None)
    assert reader.read_nowait() == (b"", False)
    reader.feed(b"ab")
    reader.feed(b"c")
    assert reader.read_nowait() == (b"abc", False)
    reader.feed(b"d")
    reader.finish()
    assert reader.read_nowait() == (b"d", True)
    assert reader.read_nowait() == (b"", True)


def test_when_readable_calls_back_once_data_or_the_end_or_an_error_is_there():
    reader, calls = BodyReader(lambda: None), []
    reader.when_readable(lambda: calls.append("data"))
    assert calls == []
    reader.feed(b"x")
    reader.feed(b"y")                          # once only
    assert calls == ["data"]
    reader.when_readable(lambda: calls.append("at once"))   # something is there already
    assert calls == ["data", "at once"]
    assert reader.read_nowait() == (b"xy", False)
    reader.when_readable(lambda: calls.append("error"))
    reader.finish(BodyError(413, "too large"))
    assert calls[-1] == "error"
    with pytest.raises(BodyError, match="too large"):
        reader.read_nowait()


def test_a_failed_body_gives_what_came_before_the_error():
    reader = BodyReader(lambda: None)
    reader.feed(b"part")
    reader.finish(BodyError(400, "cut short"))
    assert reader.read_nowait() == (b"part", False)
    with pytest.raises(BodyError):
        reader.read_nowait()


def test_reading_what_came_lets_a_paused_connection_read_again():
    drained = []
    reader = BodyReader(lambda: drained.append(True), limit=100)
    reader.feed(b"a" * 120)                    # over the limit: the stage stops reading
    assert reader.paused and not drained
    assert reader.read_nowait() == (b"a" * 120, False)
    assert not reader.paused and drained == [True]
