"""System-wide signals (thesis 5.3.4): events published to every sink subscribed to their type."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._sink import Sink


class StagesInitialized:
    """Published once, when every stage present at ``Runtime.start`` has run ``init``."""

    __slots__ = ("stages",)

    def __init__(self, stages: tuple[str, ...]) -> None:
        self.stages = stages

    def __repr__(self) -> str:
        return f"StagesInitialized({self.stages!r})"


class Stopping:
    """Published once when ``Runtime.stop`` begins, before queues drain: the moment for
    sources (listeners, readers) to stop taking new work."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Stopping()"


class Signals:
    """``subscribe(kind, sink)``; ``publish(ev)`` reaches subscribers of ``type(ev)`` and of its
    base classes, each sink at most once. Delivery is lossy: a rejecting sink misses the signal."""

    def __init__(self) -> None:
        self._subscribers: dict[type, list[Sink]] = {}
        self._lock = threading.Lock()

    def subscribe(self, kind: type, sink: Sink) -> None:
        if not isinstance(kind, type):
            raise TypeError(f"signals are subscribed to by type, got {kind!r}")
        with self._lock:
            subs = self._subscribers.setdefault(kind, [])
            if sink not in subs:
                subs.append(sink)

    def unsubscribe(self, kind: type, sink: Sink) -> None:
        with self._lock:
            subs = self._subscribers.get(kind, [])
            if sink in subs:
                subs.remove(sink)

    def publish(self, ev: Any) -> int:
        """Deliver ``ev``; returns how many sinks accepted it."""
        with self._lock:
            targets: dict[int, Sink] = {}
            for kind in type(ev).__mro__:
                for sink in self._subscribers.get(kind, ()):
                    targets.setdefault(id(sink), sink)
        return sum(sink.enqueue_lossy(ev) for sink in targets.values())
