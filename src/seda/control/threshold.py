"""The simplest admission predicate: refuse while the queue is full (thesis 5.3.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._sink import Sink
    from .._stage import Stage


class QueueThreshold:
    """Admit an event only while queued plus reserved events are fewer than ``limit``."""

    def __init__(self, limit: int) -> None:
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"a queue threshold is an integer >= 1, got {limit!r}")
        self.limit = limit
        self._sink: Sink                     # both set by attach
        self._length: Callable[[], int]

    def attach(self, stage: Stage) -> None:
        self._sink = stage.sink
        self._length = stage.sink.length     # the queue's own len(): one C call, no wrapper

    def accept(self, ev: Any) -> bool:
        return self._length() + self._sink.reserved < self.limit

    def state(self) -> dict[str, Any]:
        return {"limit": self.limit}
