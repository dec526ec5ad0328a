"""The event loop each ASGI application's stage runs on (``--loop``), named as uvicorn names
them: ``auto`` (uvloop's where it is installed, else asyncio's), ``asyncio``, ``uvloop``, or
``module:attribute`` naming a callable that makes a loop (a loop of another library, or one
set up for debugging)."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable

import seda
from seda import ConfigError

LOOPS = ("auto", "asyncio", "uvloop")
LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def loop_factory(name: str) -> LoopFactory | None:
    """What makes the loop ``name`` says; None for ``auto``, the runtime's own choice. Raises
    ConfigError naming the setting if it cannot be had."""
    if name == "auto":
        return None
    if name == "asyncio":
        return asyncio.new_event_loop
    if name == "uvloop":
        try:
            uvloop = importlib.import_module("uvloop")
        except ImportError:
            raise ConfigError("loop: uvloop is not installed (pip install uvloop, or "
                              "pyseda[asgi])") from None
        factory: LoopFactory = uvloop.new_event_loop
        return factory
    if ":" not in name:
        raise ConfigError(f"loop: expected one of {', '.join(LOOPS)} or module:attribute, "
                          f"got {name!r}")
    try:
        made = seda.import_object(name)
    except seda.ImportObjectError as exc:
        raise ConfigError(f"loop: cannot load the loop factory: {exc}") from None
    if not callable(made):
        raise ConfigError(f"loop: {name} is not callable, so it cannot make a loop")
    return made  # type: ignore[no-any-return]  # a callable: the application's word for it
