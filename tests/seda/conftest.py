"""Helpers shared by the runtime tests: a recording handler and a check for leaked threads."""

from __future__ import annotations

import multiprocessing
import socket
import threading

import pytest

import seda

WAIT = 10.0   # generous upper bound for anything a test waits on; normally milliseconds


def raw(address, data: bytes, timeout: float = WAIT) -> bytes:
    """Send ``data``, close our side, and read everything the server says until it closes."""
    with socket.create_connection(address, timeout=timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


class Recorder(seda.EventHandler):
    """Keeps every event it handles and the batches they came in; ``wait(n)`` blocks until n."""

    def __init__(self) -> None:
        self.events: list = []
        self.batches: list[list] = []
        self.threads: set[str] = set()
        self.destroyed = 0
        self._cond = threading.Condition()

    def handle_events(self, events: list) -> None:
        with self._cond:
            self.batches.append(list(events))
            self.events.extend(events)
            self.threads.add(threading.current_thread().name)
            self._cond.notify_all()

    def destroy(self) -> None:
        self.destroyed += 1

    def wait(self, count: int, timeout: float = WAIT) -> list:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.events) >= count, timeout):
                raise AssertionError(f"got {len(self.events)} of {count} events: {self.events!r}")
            return list(self.events)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(autouse=True)
def no_leaks():
    """Every test must leave no runtime thread and no worker process behind."""
    yield
    left = [t.name for t in threading.enumerate() if t.name.startswith("seda:")]
    assert not left, f"threads left running: {left}"
    assert not multiprocessing.active_children(), "worker processes left running"


@pytest.fixture
def rt():
    runtime = seda.Runtime()
    yield runtime
    runtime.stop()
