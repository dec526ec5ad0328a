"""A stand-in for the loop's epoll object that notes every call made to it."""

from __future__ import annotations

from typing import Any

_CHANGES = ("register", "modify", "unregister")


class CountingEpoll:
    """Passes each call to ``epoll`` and notes it in ``calls`` as (method name, first argument:
    the descriptor, or poll's timeout; None for none). Set it as ``rt.loop._epoll`` before the
    loop starts to see its polls too, and put the real one back before the runtime stops."""

    def __init__(self, epoll: Any) -> None:
        self.epoll, self.calls = epoll, []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.epoll, name)

        def call(*args: Any) -> Any:
            self.calls.append((name, args[0] if args else None))
            return method(*args)
        return call

    def changes(self) -> list[str]:
        """The names of the calls that changed what epoll watches, in order."""
        return [name for name, _ in self.calls if name in _CHANGES]
