"""Service description files (TOML), as Sandstorm's configuration file (thesis 5.3.2).

```toml
[stages.upper]
handler = "mypkg.handlers:Upper"   # a class, instantiated with no arguments
threads = 2                        # or blocking = false, or processes = 4
batch = 64
key = "mypkg.handlers:by_user"     # optional: keyed dispatch
predicate = "mypkg.admission:gate" # optional: a callable, an object with accept(), or a class
[stages.upper.params]
greeting = "hi"

[profile]                          # optional: the sampling profiler
path = "profile.jsonl"
interval = 1.0
```
Every error names the file and the key at fault.
"""

from __future__ import annotations

import tomllib
from os import PathLike
from typing import TYPE_CHECKING, Any

from ._imports import ImportObjectError, import_object

if TYPE_CHECKING:
    from ._runtime import Runtime

_STAGE_KEYS = {"handler", "threads", "batch", "blocking", "processes", "key", "predicate",
               "params"}
_TYPES = {"threads": int, "batch": int, "blocking": bool, "processes": int, "params": dict}


class ConfigError(ValueError):
    """A service description that cannot be loaded; the message names the file and key."""


def _import(ref: Any, where: str) -> Any:
    """``import_object``, its errors (and any the module raises on import) named by file and key."""
    try:
        return import_object(ref)
    except ImportObjectError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except Exception as exc:
        raise ConfigError(f"{where}: importing {ref!r} raised {exc!r}") from exc


def _instantiate(cls: Any, where: str) -> Any:
    try:
        return cls()
    except Exception as exc:
        raise ConfigError(f"{where}: {cls!r}() raised {exc!r}") from exc


def load(runtime: Runtime, path: str | PathLike[str]) -> Runtime:
    """Add the stages (and the profiler settings) that ``path`` describes to ``runtime``."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    unknown = set(data) - {"stages", "profile"}
    if unknown:
        raise ConfigError(f"{path}: unknown table(s) {', '.join(sorted(unknown))}")
    stages = data.get("stages", {})
    if not isinstance(stages, dict) or not stages:
        raise ConfigError(f"{path}: needs at least one [stages.NAME] table")
    for name, spec in stages.items():
        runtime_args = _stage_args(spec, f"{path}: stages.{name}")
        try:
            runtime.add_stage(name, **runtime_args)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{path}: stages.{name}: {exc}") from exc
    profile = data.get("profile")
    if profile is not None:
        where = f"{path}: profile"
        if not isinstance(profile, dict) or not isinstance(profile.get("path"), str):
            raise ConfigError(f"{where}: needs path = \"FILE\"")
        interval = profile.get("interval", 1.0)
        if not isinstance(interval, (int, float)) or interval <= 0:
            raise ConfigError(f"{where}.interval: a number of seconds > 0, got {interval!r}")
        runtime.start_profiler(profile["path"], float(interval))    # begun by start()
    return runtime


def _stage_args(spec: Any, where: str) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: expected a table")
    unknown = set(spec) - _STAGE_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    if "handler" not in spec:
        raise ConfigError(f"{where}: 'handler' is missing")
    for key, kind in _TYPES.items():
        if key in spec and (not isinstance(spec[key], kind)
                            or (kind is int and isinstance(spec[key], bool))):
            raise ConfigError(f"{where}.{key}: expected {kind.__name__}, got {spec[key]!r}")
    args = {k: v for k, v in spec.items() if k in _TYPES}
    args["handler"] = _instantiate(_import(spec["handler"], f"{where}.handler"), f"{where}.handler")
    if "key" in spec:
        args["key"] = _import(spec["key"], f"{where}.key")
    if "predicate" in spec:
        predicate = _import(spec["predicate"], f"{where}.predicate")
        if isinstance(predicate, type):
            predicate = _instantiate(predicate, f"{where}.predicate")
        args["predicate"] = predicate
    return args


# -- checking a service's options where they live (haboob.options, gnutella.options) ------------

def check(options: Any, name: str, ok: Any, expected: str) -> None:
    """Raise ConfigError naming setting ``name`` of ``options`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{name}: expected {expected}, got {getattr(options, name)!r}")


def check_whole(options: Any, name: str, low: int, high: int | None = None) -> None:
    """Setting ``name`` is a whole number (not a bool) from ``low`` (to ``high``)."""
    value = getattr(options, name)
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
    check(options, name, ok and (high is None or value <= high),
          f"a whole number from {low} to {high}" if high is not None
          else f"a whole number >= {low}")
