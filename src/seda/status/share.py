"""How the worker processes of one service see each other (Haboob's ``--workers N``): their
supervisor creates a directory and gives it to every worker (``add_status(share_dir=...)``);
each worker writes its snapshot there once a second (atomically: a reader finds the whole file
or the one before) and reads the others', so whichever worker answers /_seda/ shows the whole
service. Files block, so this is a stage of its own, off the loop thread.

The supervisor writes its own file (``publish_supervisor``), deletes a dead worker's
(``forget_worker``) when it reaps it, and the directory when it stops; a file not rewritten for
``STALE`` seconds (a hung worker, a supervisor killed outright) is ignored, so no dead worker's
numbers linger.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any

import seda

SERVER = "server.json"      # the supervisor's: when it started, how many workers it keeps
STALE = 3.0                 # seconds after which a worker's file is no longer believed


def worker_file(directory: str, pid: int) -> str:
    return os.path.join(directory, f"worker-{pid}.json")


def write_json(path: str, doc: Any) -> None:
    """Write ``path`` whole or not at all: a temporary file renamed over it."""
    temporary = f"{path}.tmp"
    with open(temporary, "w") as f:
        json.dump(doc, f)
    os.replace(temporary, path)


def publish_supervisor(directory: str, started: float, workers: int, restarts: int) -> None:
    """The supervisor's part of every worker's page: since when the service has run (Unix
    time), how many workers it keeps and how many it has replaced."""
    write_json(os.path.join(directory, SERVER), {"pid": os.getpid(), "started": started,
                                                 "workers": workers, "restarts": restarts})


def forget_worker(directory: str, pid: int) -> None:
    """A worker is dead: its numbers leave the page with it, not ``STALE`` seconds later."""
    with contextlib.suppress(OSError):
        os.remove(worker_file(directory, pid))


def read_server(directory: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(directory, SERVER)) as f:
            server: dict[str, Any] = json.load(f)
            return server
    except (OSError, ValueError):
        return None


def read_workers(directory: str, skip: int) -> list[dict[str, Any]]:
    """Every worker's snapshot but ``skip``'s, if written in the last ``STALE`` seconds."""
    found, now = [], time.time()
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if (not entry.name.startswith("worker-") or not entry.name.endswith(".json")
                    or entry.path == worker_file(directory, skip)):
                continue
            try:
                if now - entry.stat().st_mtime > STALE:
                    continue
                with open(entry.path) as f:
                    found.append(json.load(f))
            except (OSError, ValueError):   # removed meanwhile: that worker is gone
                continue
    return found


class Publish:
    """Status -> Share: this worker's snapshot, to write."""

    __slots__ = ("snapshot",)

    def __init__(self, snapshot: dict[str, Any]) -> None:
        self.snapshot = snapshot


class Peers:
    """Share -> Status: the supervisor's file and the other workers' snapshots."""

    __slots__ = ("server", "snapshots")

    def __init__(self, server: dict[str, Any] | None, snapshots: list[dict[str, Any]]) -> None:
        self.server, self.snapshots = server, snapshots


class Share(seda.EventHandler):
    """Writes this worker's snapshot, reads the others', and sends them to ``reply_to``."""

    def __init__(self, directory: str, reply_to: str) -> None:
        self.directory, self.reply_to = directory, reply_to
        self.path = worker_file(directory, os.getpid())

    def init(self, ctx: seda.StageContext) -> None:
        self.reply = ctx.runtime.sink(self.reply_to)

    def handle_events(self, events: list[Publish]) -> None:
        try:
            write_json(self.path, events[-1].snapshot)      # only the latest matters
        except OSError:
            return                            # the directory is gone: the supervisor stopped
        self.reply.enqueue_lossy(Peers(read_server(self.directory),
                                       read_workers(self.directory, os.getpid())))

    def destroy(self) -> None:
        with contextlib.suppress(OSError):
            os.remove(self.path)
