"""The ASGI lifespan protocol: an application's startup and shutdown, with the ``state`` it
hands every request (a shallow copy per request, as uvicorn does).

``mode`` as uvicorn's ``--lifespan``: "auto" runs it and takes an application that raises at
once (Django's, which serves only HTTP) as one without a lifespan; "on" takes that as a
failure; "off" does not run it. A ``lifespan.startup.failed`` (or, with "on", an exception)
is ``LifespanFailed`` with the application's message: the server does not start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

log = logging.getLogger("seda.asgi")

Message = MutableMapping[str, Any]
Application = Callable[[Message, Callable[[], Awaitable[Message]],
                        Callable[[Message], Awaitable[None]]], Awaitable[None]]
MODES = ("auto", "on", "off")


class LifespanFailed(Exception):
    """The application said its startup (or shutdown) failed; the message is its own."""


class Lifespan:
    """One application's lifespan: ``await startup()`` before the first request, ``await
    shutdown()`` after the last. ``state`` is what the application put in its scope."""

    def __init__(self, app: Application, mode: str = "auto") -> None:
        if mode not in MODES:
            raise ValueError(f"lifespan mode is one of {', '.join(MODES)}, got {mode!r}")
        self.app, self.mode = app, mode
        self.state: dict[str, Any] = {}
        self.supported = mode != "off"
        self._inbox: asyncio.Queue[Message] | None = None
        self._started: asyncio.Event | None = None
        self._stopped: asyncio.Event | None = None
        self._failure: str | None = None          # the application's message
        self._error = False                       # the application raised
        self._task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        """Run the application's startup; ``LifespanFailed`` if it failed."""
        if not self.supported:
            return
        self._inbox = asyncio.Queue()
        self._started, self._stopped = asyncio.Event(), asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._main())
        await self._inbox.put({"type": "lifespan.startup"})
        await self._started.wait()
        if self._failure is not None or (self._error and self.mode == "on"):
            raise LifespanFailed(self._failure or "the application's lifespan raised (see the "
                                 "log above)")

    async def shutdown(self) -> None:
        """Run the application's shutdown; a failure is logged with its message."""
        if not self.supported or self._error or self._inbox is None:
            return
        assert self._stopped is not None           # made with the inbox
        await self._inbox.put({"type": "lifespan.shutdown"})
        await self._stopped.wait()
        if self._failure is not None or self._error:
            log.error("asgi: application shutdown failed: %s",
                      self._failure or "its lifespan raised")

    async def _main(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"},
                 "state": self.state}
        try:
            await self.app(scope, self._receive, self._send)
        except BaseException as exc:
            self._error = True
            if self._failure is not None:          # it said so first: its message is enough
                pass
            elif self.mode == "auto" and not self._started.is_set():  # type: ignore[union-attr]  # set in startup
                self.supported = False
                log.info("asgi: the application does not support the lifespan protocol "
                         "(it raised %r); serving without it", exc)
            else:
                log.error("asgi: the application's lifespan raised", exc_info=exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._started.set()                    # type: ignore[union-attr]  # set in startup
            self._stopped.set()                    # type: ignore[union-attr]

    async def _receive(self) -> Message:
        return await self._inbox.get()             # type: ignore[union-attr]  # set in startup

    async def _send(self, message: Message) -> None:
        kind = message["type"]
        started, stopped = self._started, self._stopped
        assert started is not None and stopped is not None
        if kind == "lifespan.startup.complete" and not started.is_set():
            started.set()
        elif kind == "lifespan.startup.failed" and not started.is_set():
            self._failure = message.get("message") or "startup failed"
            started.set()
        elif kind == "lifespan.shutdown.complete" and started.is_set() and not stopped.is_set():
            stopped.set()
        elif kind == "lifespan.shutdown.failed" and started.is_set() and not stopped.is_set():
            self._failure = message.get("message") or "shutdown failed"
            stopped.set()
        else:
            raise RuntimeError(f"unexpected ASGI lifespan message {kind!r}")
