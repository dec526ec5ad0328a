"""ASGI 2 applications, the "double callable" form: called with the scope, the application
(usually a class) returns what is awaited with ``receive`` and ``send``. The server speaks
ASGI 3; ``from_asgi2`` adapts the older form as uvicorn's ``--interface asgi2`` does.

asgiref's ``guarantee_single_callable`` does the same, but asgiref is no dependency of pyseda
(only Django brings it), and the adapter is three lines.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from .lifespan import Application, Message


def is_asgi2(app: Any) -> bool:
    """Whether ``app`` looks like an ASGI 2 application, as uvicorn's ``--interface auto``
    tells: a class (one whose instances are awaitable is an ASGI 3 one, see ``is_asgi``).
    A class that cannot be called with the scope alone is taken for PEP 3333's WSGI
    application class, constructed with ``environ`` and ``start_response``."""
    if not inspect.isclass(app) or hasattr(app, "__await__"):
        return False
    try:
        signature = inspect.signature(app)
    except (TypeError, ValueError):        # nothing to read (a builtin): a class, as uvicorn
        return True
    try:
        signature.bind(None)
    except TypeError:
        return False
    return True


def from_asgi2(app: Any) -> Application:
    """``app``, an ASGI 2 application, as an ASGI 3 one."""
    async def asgi3(scope: Message, receive: Callable[[], Awaitable[Message]],
                    send: Callable[[Message], Awaitable[None]]) -> None:
        instance = app(scope)
        await instance(receive, send)
    return asgi3
