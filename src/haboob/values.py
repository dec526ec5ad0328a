"""How a setting's value is written, on the command line (always text) or in a config file
(TOML: text, numbers, true/false, lists): one parser per kind of value accepts both, and says
in a ValueError what it expected. The range a setting allows is checked by ``Options``."""

from __future__ import annotations

from typing import Any


def text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected text, got {value!r}")
    return value


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def whole(value: Any) -> int:
    """A whole number: ``4`` or ``"4"`` (its range is the setting's, checked by Options)."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    elif isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"{value!r} is not a whole number")


def _number(value: Any, what: str) -> float:
    try:
        if isinstance(value, bool):
            raise ValueError
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not {what}") from None


def size(value: Any) -> int:
    """A size in bytes: ``65536``, ``"64K"``, ``"10M"``, ``"1G"``."""
    number, scale = value, 1
    if isinstance(value, str) and value[-1:].upper() in ("K", "M", "G"):
        number, scale = value[:-1], {"K": 2**10, "M": 2**20, "G": 2**30}[value[-1].upper()]
    result = int(_number(number, "a size (bytes, or 64K, 10M, 1G)") * scale)
    if result <= 0:
        raise ValueError(f"{value!r}: a size must be > 0")
    return result


def seconds(value: Any) -> float:
    result = _number(value, "a number of seconds")
    if result <= 0:
        raise ValueError(f"{value!r}: seconds must be > 0")
    return result


def seconds_or_off(value: Any) -> float:
    """Seconds >= 0, where 0 turns off what they time."""
    return _seconds_from_zero(value, " (0: off)")


def seconds_or_zero(value: Any) -> float:
    """Seconds >= 0, where 0 is a time like any other (no wait at all)."""
    return _seconds_from_zero(value, "")


def _seconds_from_zero(value: Any, zero: str) -> float:
    """Seconds >= 0; ``zero`` says in messages what 0 means, if it means more than none."""
    result = _number(value, f"a number of seconds{zero}")
    if result < 0:
        raise ValueError(f"{value!r}: seconds must be >= 0{zero}")
    return result


def milliseconds(value: Any) -> float:
    """Milliseconds > 0, as seconds."""
    result = _number(value, "a number of milliseconds")
    if result <= 0:
        raise ValueError(f"{value!r}: milliseconds must be > 0")
    return result / 1000


def megabytes(value: Any) -> int:
    """Megabytes >= 0, as bytes."""
    result = _number(value, "a number of megabytes")
    if result < 0:
        raise ValueError(f"{value!r}: megabytes must be >= 0")
    return int(result * 2**20)


def address(value: Any) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets; no host: 127.0.0.1) -> (host, port)."""
    host, sep, port = text(value).rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def mount(value: Any) -> tuple[str, str]:
    """``/PREFIX=module:attribute`` -> (prefix, reference)."""
    prefix, sep, ref = text(value).partition("=")
    if not sep or not prefix.startswith("/") or not ref:
        raise ValueError(f"expected /PREFIX=module:attribute, got {value!r}")
    return prefix, ref
