"""The sampling profiler: one thread appending the runtime's stats as JSON lines (thesis 5.3.5)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import threading
import time
from collections.abc import Iterable, Mapping
from os import PathLike
from typing import Any, Protocol


class _SinkView(Protocol):
    @property
    def edges(self) -> Mapping[Any, int]: ...      # source stage (or None) -> events


class _StageView(Protocol):
    @property
    def sink(self) -> _SinkView: ...
    @property
    def service_times(self) -> Iterable[float]: ...


class _RuntimeView(Protocol):
    """What the profiler reads of a runtime and its stages, named by their shape rather than
    as ``seda.Runtime`` and ``seda.Stage``: the core imports the profiler, never the reverse."""

    def stats(self) -> dict[str, dict[str, Any]]: ...
    def stage(self, name: str) -> _StageView: ...


def rss_bytes() -> int:
    """Resident set size now (Linux), else the peak the OS reports."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def flow(stage: _StageView) -> dict[str, Any]:
    """What the queueing model (``python -m seda.model plan``) needs beyond ``stats()``: the
    events the stage accepted, how many of them each other stage sent (the rest came from
    outside the stages), and the mean handler time per event over its recent batches."""
    edges = dict(stage.sink.edges)
    times = list(stage.service_times)
    return {"accepted": sum(edges.values()),
            "sources": {src.name: count for src, count in edges.items() if src is not None},
            "service_ms": 1000 * math.fsum(times) / len(times) if times else None}


class Sampler:
    """Every ``interval`` seconds: ``{"t", "rss", "stages": runtime.stats()}`` as one line,
    each stage's entry extended by :func:`flow`."""

    def __init__(self, runtime: _RuntimeView, path: str | PathLike[str],
                 interval: float = 1.0) -> None:
        if interval <= 0:
            raise ValueError(f"the profiler interval is in seconds and > 0, got {interval!r}")
        self.runtime, self.path, self.interval = runtime, path, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="seda:profiler", daemon=True)
        # line-buffered, so a crash loses no sample; closed by stop()
        self._file = open(path, "a", buffering=1)  # noqa: SIM115
        self._t0 = time.monotonic()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._file.close()

    def sample(self) -> dict[str, Any]:
        stages = self.runtime.stats()
        for name, row in stages.items():
            with contextlib.suppress(KeyError):          # destroyed since stats()
                row.update(flow(self.runtime.stage(name)))
        return {"t": round(time.monotonic() - self._t0, 3), "time": time.time(),
                "rss": rss_bytes(), "stages": stages}

    def _run(self) -> None:
        while True:
            self._file.write(json.dumps(self.sample()) + "\n")
            if self._stop.wait(self.interval):
                return
