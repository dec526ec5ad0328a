"""How events cross the network: msgpack of plain values and of registered dataclasses.

Never pickle: a Redis that others can reach must not mean code execution. Decoding only ever
builds msgpack's plain values (None, bool, int, float, str, bytes, list, dict) and instances of
the dataclasses registered with the codec, from their fields; an unknown type name is an error,
not an import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

import msgpack

_T = TypeVar("_T", bound=type)
_DATACLASS = 1          # msgpack extension type of a registered dataclass: [name, {field: value}]


class EncodeError(TypeError):
    """An event the cluster queue cannot send: not a plain value nor a registered dataclass."""


class DecodeError(ValueError):
    """A stream entry that is not an event this codec knows (it goes to the dead letters)."""


class Codec:
    """msgpack of plain values (None, bool, int, float, str, bytes, lists, tuples, dicts) and of
    dataclasses registered with ``register``, nested as deep as msgpack allows.

    Tuples arrive as lists. Every node must register the same classes under the same names.
    """

    def __init__(self, *types: type) -> None:
        self._names: dict[type, str] = {}
        self._types: dict[str, type] = {}
        for cls in types:
            self.register(cls)

    def register(self, cls: _T, name: str | None = None) -> _T:
        """Let instances of the dataclass ``cls`` cross, under ``name`` (default: its module
        and qualified name). Returns ``cls``, so it also works as a class decorator."""
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"only dataclasses can be registered, not {cls!r}")
        name = name or f"{cls.__module__}.{cls.__qualname__}"
        known = self._types.get(name)
        if known is not None and known is not cls:
            raise ValueError(f"{name!r} already names {known!r}")
        self._names[cls] = name
        self._types[name] = cls
        return cls

    def encode(self, ev: Any) -> bytes:
        """The bytes of ``ev``; EncodeError, naming what could not be encoded, if it cannot."""
        try:
            data: bytes = msgpack.packb(ev, default=self._default, use_bin_type=True)
        except EncodeError:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise EncodeError(f"cannot encode {_show(ev)} for a cluster queue: {exc}") from exc
        return data

    def decode(self, data: bytes) -> Any:
        try:
            return msgpack.unpackb(data, ext_hook=self._ext, raw=False, strict_map_key=False)
        except DecodeError:
            raise
        except Exception as exc:
            raise DecodeError(f"not an encoded event: {exc}") from exc

    def _default(self, obj: Any) -> msgpack.ExtType:
        name = self._names.get(type(obj))
        if name is None:
            raise EncodeError(
                f"cannot encode {_show(obj)} for a cluster queue: send plain values (None, "
                "bool, int, float, str, bytes, lists, dicts) or a dataclass registered with "
                "the queue's codec (codec.register(cls))")
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
        return msgpack.ExtType(_DATACLASS, msgpack.packb([name, fields], default=self._default,
                                                         use_bin_type=True))

    def _ext(self, code: int, data: bytes) -> Any:
        if code != _DATACLASS:
            raise DecodeError(f"unknown msgpack extension type {code}")
        name, fields = msgpack.unpackb(data, ext_hook=self._ext, raw=False,
                                       strict_map_key=False)
        cls: Callable[..., Any] | None = self._types.get(name)
        if cls is None:
            raise DecodeError(f"event type {name!r} is not registered with this codec")
        try:
            return cls(**fields)
        except TypeError as exc:
            raise DecodeError(f"{name}: {exc}") from exc


def _show(obj: Any) -> str:
    text = repr(obj)
    return f"{text[:60]}... ({type(obj).__name__})" if len(text) > 60 else \
        f"{text} ({type(obj).__name__})"
