"""Queue length and threads per stage over time, from a profiler JSON-lines file."""

from __future__ import annotations

import json
from os import PathLike
from typing import Any


def read_samples(path: str | PathLike[str]) -> list[dict[str, Any]]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def plot(path: str | PathLike[str], out: str | PathLike[str]) -> None:
    """Write a PNG with two panels sharing the time axis: queue lengths, then thread counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = read_samples(path)
    if not samples:
        raise ValueError(f"{path}: no samples")
    names = sorted({name for s in samples for name in s["stages"]})
    t = [s["t"] for s in samples]
    fig, (queues, threads) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
    for name in names:
        queues.plot(t, [s["stages"].get(name, {}).get("queue", 0) for s in samples], label=name)
        threads.step(t, [s["stages"].get(name, {}).get("threads", 0) for s in samples],
                     where="post", label=name)
    queues.set_ylabel("queue length (events)")
    threads.set_ylabel("threads")
    threads.set_xlabel("time (s)")
    queues.legend(loc="upper left", fontsize="small")
    rss = [s["rss"] / 2**20 for s in samples]
    queues.set_title(f"{path}  (RSS {min(rss):.0f}-{max(rss):.0f} MB)", fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
