"""What to request: a fixed path, the SPECweb99 static mix, or the WebSTONE mix of the JAWS paper.

A workload turns draws from the generator's seeded ``random.Random`` into URL paths, so a run's
sequence of requests is reproducible; the file-set writers make the files those paths name.
"""

from __future__ import annotations

import random
import re
from bisect import bisect_right
from itertools import accumulate
from pathlib import Path
from typing import Protocol

# SPECweb99: four classes of nine files, file F of class C being (F+1) units of 0.1 KB * 10**C.
SPEC_CLASS_MIX = (0.35, 0.50, 0.14, 0.01)
SPEC_FILES_PER_CLASS = 9
SPEC_DIR = re.compile(r"dir\d{5}")

# WebSTONE as in the JAWS paper (Hu, Pyarali, Schmidt): file name, size, share of requests.
WEBSTONE_FILES = (("file500.html", 500, 0.35), ("file5k.html", 5 * 1024, 0.50),
                  ("file50k.html", 50 * 1024, 0.14), ("file5m.html", 5 * 1024 * 1024, 0.01))


class Workload(Protocol):
    """Anything with a ``name`` and a ``path(rng)`` drawing the next request's path."""

    name: str

    def path(self, rng: random.Random) -> str: ...


class Discrete:
    """Draws index i with probability weights[i] / sum(weights), by bisecting cumulative sums."""

    def __init__(self, weights: list[float] | tuple[float, ...]) -> None:
        self.cum = list(accumulate(weights))
        self.total = self.cum[-1]
        self.last = len(self.cum) - 1

    def draw(self, rng: random.Random) -> int:
        return min(bisect_right(self.cum, rng.random() * self.total), self.last)


def zipf_weights(n: int, alpha: float = 1.0) -> list[float]:
    """Zipf popularity of ranks 1..n: the k-th most popular item is drawn in proportion to 1/k^a."""
    return [1.0 / (k ** alpha) for k in range(1, n + 1)]


def spec_file_size(cls: int, index: int) -> int:
    """Bytes of SPECweb99 file ``class{cls}_{index}``: 102, 204 .. 921 B for class 0, and so on."""
    return (index + 1) * 1024 * 10 ** cls // 10


def _prefix(prefix: str) -> str:
    return prefix if prefix.endswith("/") else prefix + "/"


class Fixed:
    """Every request for the same path: the thesis's measurements of one small file."""

    name = "fixed"

    def __init__(self, path: str = "/") -> None:
        self.target = path

    def path(self, rng: random.Random) -> str:
        return self.target


class SpecWeb99:
    """SPECweb99 static GETs: a directory (Zipf or uniform), a class by mix, a file by Zipf."""

    name = "specweb99"

    def __init__(self, dirs: int, prefix: str = "/", dir_dist: str = "zipf") -> None:
        if dirs < 1:
            raise ValueError("a SPECweb99 file set has at least one directory")
        if dir_dist not in ("zipf", "uniform"):
            raise ValueError(f"dir_dist is 'zipf' or 'uniform', not {dir_dist!r}")
        self.dirs = dirs
        self.prefix = _prefix(prefix)
        self.dir_pick = Discrete(zipf_weights(dirs) if dir_dist == "zipf" else [1.0] * dirs)
        self.class_pick = Discrete(SPEC_CLASS_MIX)
        self.file_pick = Discrete(zipf_weights(SPEC_FILES_PER_CLASS))

    def path(self, rng: random.Random) -> str:
        d = self.dir_pick.draw(rng)
        c = self.class_pick.draw(rng)
        f = self.file_pick.draw(rng)
        return f"{self.prefix}dir{d:05d}/class{c}_{f}"


class WebStone:
    """The four-file WebSTONE mix used to measure JAWS: 500 B, 5 KB, 50 KB and 5 MB."""

    name = "webstone"

    def __init__(self, prefix: str = "/") -> None:
        self.paths = [_prefix(prefix) + name for name, _, _ in WEBSTONE_FILES]
        self.pick = Discrete([share for _, _, share in WEBSTONE_FILES])

    def path(self, rng: random.Random) -> str:
        return self.paths[self.pick.draw(rng)]


def fixed(path: str = "/") -> Fixed:
    """Request ``path`` every time."""
    return Fixed(path)


def specweb99(dirs: int | None = None, *, root: str | Path | None = None, prefix: str = "/",
              dir_dist: str = "zipf") -> SpecWeb99:
    """The SPECweb99 mix over ``dirs`` directories, or over as many as ``root`` holds."""
    if dirs is None:
        if root is None:
            raise ValueError("specweb99 needs dirs or the root of a file set")
        dirs = sum(1 for p in Path(root).iterdir() if p.is_dir() and SPEC_DIR.fullmatch(p.name))
    return SpecWeb99(dirs, prefix, dir_dist)


def webstone(prefix: str = "/") -> WebStone:
    """The WebSTONE mix of the JAWS paper."""
    return WebStone(prefix)


def _write(path: Path, size: int) -> None:
    line = b"pyseda loadgen file-set padding 0123456789abcdefghijklmnopqrstuvwxyz\n"
    path.write_bytes((line * (size // len(line) + 1))[:size])


def make_fileset(root: str | Path, total_bytes: int) -> int:
    """Write SPECweb99 directories dir00000, dir00001, .. of 36 files until they hold at least
    ``total_bytes`` (at least one directory); returns the number of directories."""
    root = Path(root)
    per_dir = sum(spec_file_size(c, f) for c in range(len(SPEC_CLASS_MIX))
                  for f in range(SPEC_FILES_PER_CLASS))
    dirs = max(1, -(-total_bytes // per_dir))
    for d in range(dirs):
        directory = root / f"dir{d:05d}"
        directory.mkdir(parents=True, exist_ok=True)
        for c in range(len(SPEC_CLASS_MIX)):
            for f in range(SPEC_FILES_PER_CLASS):
                _write(directory / f"class{c}_{f}", spec_file_size(c, f))
    return dirs


def make_webstone_fileset(root: str | Path) -> None:
    """Write the four WebSTONE files into ``root``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for name, size, _ in WEBSTONE_FILES:
        _write(root / name, size)
