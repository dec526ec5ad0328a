"""How much of the machine its neighbours took during a benchmark: the steal time of a virtual
machine's CPUs (``/proc/stat``). On the project's shared VM it comes in bursts of 10 % and
more, and the servers' rates wander with it; a run that saw more than a little is not to be
compared with a quiet one, and its results file says so. It is a lower bound of the
disturbance: neighbours also take caches and memory bandwidth, which steal does not count
(runs that saw 1.4 % of steal had nginx 25 % below a quiet run's rate).

    with Steal() as steal:
        ...                                    # the runs
    print(steal.sentence())
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Past this share of stolen time a run is called noisy in its sentence.
NOISY = 0.005


class Steal:
    """Reads the CPU times at ``__enter__`` and ``__exit__``; ``share`` is the part of them
    stolen in between (None where ``/proc/stat`` has no steal column, as off Linux)."""

    def __init__(self, stat: str | Path = "/proc/stat") -> None:
        self.stat = Path(stat)
        self.start: tuple[int, int] | None = None
        self.end: tuple[int, int] | None = None

    def __enter__(self) -> Steal:
        self.start = self._read()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end = self._read()

    @property
    def share(self) -> float | None:
        if self.start is None or self.end is None or self.end[1] <= self.start[1]:
            return None
        return (self.end[0] - self.start[0]) / (self.end[1] - self.start[1])

    def sentence(self) -> str:
        """One line for a results file."""
        return describe(self.share)

    def _read(self) -> tuple[int, int] | None:
        """(steal, all) in clock ticks, summed over the CPUs."""
        try:
            fields = self.stat.read_text().split("\n", 1)[0].split()
        except OSError:
            return None
        if len(fields) < 9 or fields[0] != "cpu":
            return None
        # user nice system idle iowait irq softirq steal (guest time is counted in user)
        ticks = [int(f) for f in fields[1:9]]
        return ticks[7], sum(ticks)


def describe(share: float | None) -> str:
    """What a share of stolen time means for the runs, in a sentence."""
    if share is None:
        return "The machine's steal time could not be read."
    said = (f"The machine's neighbours took {share * 100:.1f} % of its CPU time during these runs "
            "(steal, /proc/stat)")
    return said + (": noisy, not to be compared with a quiet run." if share > NOISY else ".")
