"""``haboob --workers N``: the thesis's *Replicate* pattern. N worker processes each run the whole
stage graph and listen on the same address with ``SO_REUSEPORT`` (the kernel spreads
connections over them); this process only starts them, restarts one that dies, and passes
signals on: SIGTERM/SIGINT drain and stop every worker, SIGHUP makes them reopen their logs.

Workers are fresh interpreters (``python -m haboob ... --ready-fd FD``), not forks: the
supervisor loads nothing a worker could inherit half-initialised, and a restart is a clean
start. Each worker writes a byte to its ready pipe once it is listening.

The workers' /_seda/ pages show the whole server: the supervisor makes a directory for their
snapshots (``--status-dir``, see ``seda.status``), writes its own start and worker count
there, deletes a dead worker's snapshot when it reaps it, and the directory when it stops.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from seda.io import bind_socket
from seda.status import forget_worker, publish_supervisor

STOP_GRACE = 35.0        # seconds a worker has to drain before it is killed (by default)
READY_TIMEOUT = 60.0     # seconds a worker has to start listening
_RESTART_BACKOFF = (0.1, 10.0)     # first and longest wait before restarting a crashing worker
_QUICK_DEATH = 5.0       # a worker dying this soon after starting is crashing, not unlucky


def say(message: str, program: str = "haboob") -> None:
    print(f"{program}: {message}", file=sys.stderr, flush=True)


def reserve(host: str, port: int) -> socket.socket:
    """Bind (but do not listen on) the address with SO_REUSEPORT: port 0 becomes a real port
    every worker can join, and the port stays ours between worker restarts. A socket that is
    not listening receives no connections. Without SO_REUSEADDR: with it, while no worker
    listens (all restarting), another program could bind the port with SO_REUSEADDR too."""
    return bind_socket((host, port), reuse_addr=False, reuse_port=True)


class Worker:
    __slots__ = ("proc", "ready", "started")

    def __init__(self, argv: list[str], program: str = "haboob") -> None:
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", program, *argv,
                                          "--ready-fd", str(w)], pass_fds=(w,))
        finally:
            os.close(w)
        self.ready: int | None = r      # readable once the worker listens (or has died)
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def confirm(self) -> bool:
        """Read the ready pipe (it is readable): True if the worker is listening."""
        assert self.ready is not None
        try:
            return os.read(self.ready, 1) == b"1"
        finally:
            os.close(self.ready)
            self.ready = None


class Supervisor:
    """Keeps ``count`` workers running ``python -m PROGRAM argv`` (``program``: a service
    whose command takes ``--ready-fd`` and, with ``share_status``, ``--status-dir`` as
    haboob's does; Arashi's is one); with ``share_status``, their status pages show the whole
    server (a directory for their snapshots)."""

    def __init__(self, argv: list[str], count: int, share_status: bool = False,
                 grace: float = STOP_GRACE, program: str = "haboob") -> None:
        self.argv, self.count, self.grace, self.program = argv, count, grace, program
        self.workers: dict[int, Worker] = {}
        self.restarts: list[float] = []         # when to start a replacement for a dead worker
        self.backoff = _RESTART_BACKOFF[0]
        self.started, self.replaced = time.time(), 0
        self.status_dir = tempfile.mkdtemp(prefix=f"{program}-status-") if share_status else None
        self._wake_r = -1                     # signals as bytes (from start until stop)
        self._wake_w: int | None = None
        if self.status_dir is not None:
            self.argv = [*argv, "--status-dir", self.status_dir]
            self._publish()

    def _publish(self) -> None:
        """What the workers' status pages show of the supervisor: since when it serves, how
        many workers it keeps and how many it has replaced."""
        assert self.status_dir is not None
        publish_supervisor(self.status_dir, self.started, self.count, self.replaced)

    def start(self) -> bool:
        """Start every worker and wait until all listen; False (all stopped) if one cannot."""
        self._catch_signals()
        for _ in range(self.count):
            self._spawn()
        deadline = time.monotonic() + READY_TIMEOUT
        for worker in list(self.workers.values()):
            left = max(0.0, deadline - time.monotonic())
            if not (select.select([worker.ready], [], [], left)[0] and worker.confirm()):
                say("a worker failed to start; stopping", self.program)
                self.stop()
                return False
            say(f"worker {worker.pid} listening", self.program)
        return True

    def run(self) -> None:
        """Until SIGTERM or SIGINT: restart dead workers, pass SIGHUP on, then stop them all."""
        while self._serve_round(self._wake_r):
            pass
        say("stopping: draining the workers", self.program)
        self.stop()

    def _catch_signals(self) -> None:
        """From here on a signal is a byte on a pipe that ``run`` reads: one that arrives while
        the workers start (or the instant the banner is out) is acted on, never the default
        that would kill the supervisor and orphan its workers."""
        self._wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        self._wake_w = wake_w
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, lambda *_: None)     # the wakeup fd carries the signal number

    def _release_signals(self) -> None:
        if self._wake_w is not None:
            signal.set_wakeup_fd(-1)
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_w = None

    def _serve_round(self, wake_r: int) -> bool:
        """Wait for a signal, a worker becoming ready or a restart falling due; False to stop."""
        starting = {w.ready: w for w in self.workers.values() if w.ready is not None}
        timeout = min([1.0, *(due - time.monotonic() for due in self.restarts)])
        readable, _, _ = select.select([wake_r, *starting], [], [], max(0.0, timeout))
        for fd in readable:
            if fd == wake_r:
                for signum in os.read(wake_r, 64):
                    if signum in (signal.SIGTERM, signal.SIGINT):
                        return False
                    if signum == signal.SIGHUP:
                        self._send_all(signal.SIGHUP)
            elif starting[fd].confirm():
                say(f"worker {starting[fd].pid} listening", self.program)
        self._reap()
        now = time.monotonic()
        for due in [d for d in self.restarts if d <= now]:
            self.restarts.remove(due)
            self._spawn()
        return True

    def _spawn(self) -> None:
        worker = Worker(self.argv, self.program)
        self.workers[worker.pid] = worker

    def _reap(self) -> None:
        """Schedule a replacement for each worker that died; one that keeps dying young waits
        longer each time, so a crash loop does not spin the machine."""
        for pid, worker in list(self.workers.items()):
            code = worker.proc.poll()
            if code is None:
                continue
            del self.workers[pid]
            if worker.ready is not None:
                os.close(worker.ready)
            self.replaced += 1
            if self.status_dir is not None:           # its numbers died with it
                forget_worker(self.status_dir, pid)
                self._publish()
            young = time.monotonic() - worker.started < _QUICK_DEATH
            self.backoff = (min(self.backoff * 2, _RESTART_BACKOFF[1]) if young
                            else _RESTART_BACKOFF[0])
            say(f"worker {pid} exited with status {code}; restarting it", self.program)
            self.restarts.append(time.monotonic() + (self.backoff if young else 0.0))

    def _send_all(self, sig: int) -> None:
        for worker in self.workers.values():
            with contextlib.suppress(ProcessLookupError):
                worker.proc.send_signal(sig)

    def stop(self) -> None:
        """SIGTERM every worker (each stops accepting and drains), then wait; kill stragglers."""
        self._send_all(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for worker in self.workers.values():
            if worker.ready is not None:
                os.close(worker.ready)
            try:
                worker.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"worker {worker.pid} did not stop in {self.grace:.0f} s; killing it",
                    self.program)
                worker.proc.kill()
                worker.proc.wait()
        self.workers.clear()
        if self.status_dir is not None:
            shutil.rmtree(self.status_dir, ignore_errors=True)
        self._release_signals()
