"""A rich progress bar on stderr for runs long enough to wonder about, and nothing otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

MIN_SECONDS = 3.0
Tick = Callable[[float, int, int], None]       # (seconds elapsed, successes, errors)


def wanted(progress: bool | None, duration: float) -> bool:
    """Asked for explicitly, or left to choose: a tty on stderr and a run of a few seconds."""
    if progress is not None:
        return progress
    return duration >= MIN_SECONDS and sys.stderr.isatty()


@contextmanager
def progress_bar(enabled: bool, duration: float) -> Iterator[Tick | None]:
    """Yields a tick to call a few times a second, or None when no bar is wanted."""
    if not enabled:
        yield None
        return
    columns = (TextColumn("[progress.description]{task.description}"), BarColumn(),
               TextColumn("{task.fields[ok]} ok, {task.fields[err]} errors"),
               TimeRemainingColumn())
    # Redrawn only from tick: rich's own refresh thread would share the generator's core.
    with Progress(*columns, console=Console(stderr=True), transient=True,
                  auto_refresh=False) as bar:
        task = bar.add_task("load", total=duration, ok=0, err=0)

        def tick(elapsed: float, ok: int, errors: int) -> None:
            bar.update(task, completed=min(elapsed, duration), ok=ok, err=errors, refresh=True)

        yield tick
