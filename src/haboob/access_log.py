"""The access log as a stage of its own, fed by lossy enqueue: under overload log lines are
dropped (and counted as the stage's rejections), never the serving slowed."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import seda


class Reopen:
    """To the log stage: close and reopen the file (sent on SIGHUP, after log rotation)."""

    __slots__ = ()


def line(ev: Any) -> str:
    """Common Log Format: host - - [time] "request line" status bytes."""
    req = ev.request
    peer = req.peer or ("-",)
    stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(ev.time))
    return (f'{peer[0]} - - [{stamp}] "{req.method} {req.target} HTTP/{req.version}" '
            f"{ev.status} {ev.length}\n")


@seda.single_threaded
class AccessLog(seda.EventHandler):
    """Appends a line per response to ``path`` ("-" for standard output). Each batch is one
    write() to a file opened O_APPEND, so several worker processes can share the file without
    tearing each other's lines."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None

    def init(self, ctx: Any) -> None:
        self._open()

    def _open(self) -> None:
        self.fd = sys.stdout.fileno() if self.path == "-" else os.open(
            self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def _close(self) -> None:
        if self.fd is not None and self.path != "-":
            os.close(self.fd)
        self.fd = None

    def handle_events(self, events: list) -> None:
        lines = []
        for ev in events:
            if type(ev) is Reopen:
                self._write(lines)
                lines = []
                self._close()
                self._open()
            else:
                lines.append(line(ev))
        self._write(lines)

    def _write(self, lines: list[str]) -> None:
        data = memoryview("".join(lines).encode())
        while data:                          # a pipe (stdout) may take less than all of it
            data = data[os.write(self.fd, data):]

    def destroy(self) -> None:
        self._close()
