"""The access log as a stage of its own, fed by lossy enqueue: under overload log lines are
dropped (and counted as the stage's rejections), never the serving slowed."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import seda


def line(ev: Any) -> str:
    """Common Log Format: host - - [time] "request line" status bytes."""
    req = ev.request
    peer = getattr(req.connection.conn, "peer", None) or ("-",)
    stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(ev.time))
    return (f'{peer[0]} - - [{stamp}] "{req.method} {req.target} HTTP/{req.version}" '
            f"{ev.status} {ev.length}\n")


@seda.single_threaded
class AccessLog(seda.EventHandler):
    """Appends a line per response to ``path`` ("-" for standard output)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.file: TextIO | None = None

    def init(self, ctx: Any) -> None:
        self.reopen()

    def reopen(self) -> None:
        """Start a new file handle (after log rotation)."""
        if self.file is not None and self.file is not sys.stdout:
            self.file.close()
        self.file = sys.stdout if self.path == "-" else open(self.path, "a")  # noqa: SIM115

    def handle_events(self, events: list) -> None:
        self.file.write("".join(line(ev) for ev in events))
        self.file.flush()

    def destroy(self) -> None:
        if self.file is not None and self.file is not sys.stdout:
            self.file.close()
