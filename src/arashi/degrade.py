"""Service degradation on Arashi's pages (thesis 7.2.2, Figs. 56-57; ``arashi serve --degrade``):
under load the message list shows fewer messages a page and search pauses, rather than
requests being refused.

Each of the two stages watches its own 90th-percentile response time, as the thesis's stage
did: its admission controller (the thesis's ``ResponseTimeController``) starts switched off and
only measures, and a ``seda.control.Degrader`` lowers the stage's quality while that p90 is over
the target and raises it again below. With ``readmit``, a stage at its lowest quality and still
over the target switches its admission controller on (Fig. 57); without, quality alone
answers the load (Fig. 56). Quality 1 is the full service: ten messages a page, and search;
below it the list shrinks in proportion down to two messages, and below ``SEARCH_FROM`` a search
answers at once that it is paused (a page, not a refusal).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import seda
from seda.control import Degrader, ResponseTimeController

from .web import PAGE, Web

MIN_QUALITY = 0.2       # two messages a page
SEARCH_FROM = 0.5       # search runs at or above this quality
# A spike of users queues work fast: halve the quality twice a second, from full to the floor
# in 1.5 s, and win it back a tenth at a time (4 s up), so one good second does not undo it.
DECREASE, INCREASE, PERIOD = 0.5, 0.1, 0.5


class Guard(ResponseTimeController):
    """A degradable stage's admission controller: off until its degrader turns it on, and
    showing the stage's quality with its own state (on /_seda/)."""

    degrader: Degrader | None = None

    def state(self) -> dict[str, Any]:
        quality = self.degrader.quality if self.degrader is not None else 1.0
        return {**super().state(), "quality": quality}


class _Applied(Degrader):
    """A Degrader that hands each new quality to the pages."""

    def __init__(self, guard: Guard, apply: Callable[[float], None], readmit: bool) -> None:
        super().__init__(guard, min_quality=MIN_QUALITY, decrease=DECREASE, increase=INCREASE,
                         period=PERIOD, readmit=readmit)
        self.apply = apply
        guard.degrader = self

    def tick(self, now: float) -> None:
        super().tick(now)
        self.apply(self.quality)


def list_size(quality: float) -> int:
    return max(round(PAGE * MIN_QUALITY), round(PAGE * quality))


def degrade(rt: seda.Runtime, web: Web, target: float, readmit: bool) -> dict[str, Guard]:
    """Degrade ``web``'s message list and search under load, on ``rt``'s control thread: the
    admission controllers to put on the ``messages`` and ``search`` stages, by request type."""
    guards = {kind: Guard(target, enabled=False) for kind in ("messages", "search")}

    def lists(quality: float) -> None:
        web.list_size = list_size(quality)

    def searches(quality: float) -> None:
        web.searching = quality >= SEARCH_FROM

    rt.add_controller(_Applied(guards["messages"], lists, readmit))
    rt.add_controller(_Applied(guards["search"], searches, readmit))
    return guards
