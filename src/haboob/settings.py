"""Haboob's settings as a person writes them: on the command line (``--max-body 10M``) or in a
config file (``max_body = "10M"``), one name and one parser for both, so the two cannot drift
apart. ``load`` reads a file, ``to_options`` turns settings into the checked ``Options``.

A file's keys are the long options without their dashes (``--cache-mb`` is ``cache_mb``),
``--no-status`` is ``status = false``, a repeatable option (``--mount``) is a list, and the
positional application is ``app``. Relative paths are taken from the working directory, as on
the command line. Sizes take K, M, G; times are seconds, except ``target_p90`` (milliseconds).
"""

from __future__ import annotations

import difflib
import os
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import seda
from seda import ConfigError
from seda.http import Limits

from .options import Options
from .values import (
    address,
    flag,
    megabytes,
    milliseconds,
    mount,
    seconds,
    seconds_or_off,
    seconds_or_zero,
    size,
    text,
    whole,
)


@dataclass(frozen=True)
class Setting:
    """One setting: its file key (on the command line ``--`` and dashes for underscores), how
    a value of it is read, and what it does. ``metavar`` None: a switch (true or false)."""

    name: str
    parse: Callable[[Any], Any]
    help: str
    metavar: str | None = None
    many: bool = False          # repeatable on the command line; a list in a file
    negated: bool = False       # the command line turns it off: --no-NAME


def _default(name: str, unit: bool = False) -> str:
    """A limit's default for --help, as it would be written: 100, 15; with ``unit``, a size:
    1G, 64K."""
    value = getattr(Limits, name)
    for suffix, scale in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if unit and value % scale == 0:
            return f"{value // scale}{suffix}"
    return f"{value:g}"


SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("app", text, "WSGI or ASGI application at /, as module:attribute", "APP"),
    Setting("root", text, "serve static files from this directory", "DIR"),
    Setting("bind", address, f"listen on this address (default {Options.host}:{Options.port})",
            "HOST:PORT"),
    Setting("mount", mount, "another application at PREFIX (repeatable)", "PREFIX=APP",
            many=True),
    Setting("interface", text, "what the applications are: wsgi, asgi (asgi3), asgi2 (a "
            "class called with the scope), or auto (default: ASGI if the application is a "
            "coroutine function or its __call__ is one, ASGI 2 if it is a class, as uvicorn "
            "tells; else WSGI)", "KIND"),
    Setting("cache_mb", megabytes,
            f"page cache budget, MB (default {Options.cache_bytes // 2**20})", "MB"),
    Setting("cache_policy", text,
            f"page cache replacement: lru, lfu or gds (default {Options.cache_policy})",
            "POLICY"),
    Setting("recheck", seconds_or_zero, "trust a cached file this long before looking whether "
            "it changed on disk (nginx's open_file_cache_valid); a file in use goes on being "
            "served for one more period while it is looked at; 0: look on every request "
            f"(default {Options.recheck:g})", "SECONDS"),
    Setting("threads", whole, f"most threads per WSGI application and for disk reads "
            f"(default {Options.threads})", "N"),
    Setting("tasks", whole, "most requests in flight per ASGI application; more wait in its "
            f"queue (default {Options.tasks})", "N"),
    Setting("loop", text, "the event loop ASGI applications run on: auto (uvloop's where it "
            "is installed, else asyncio's), asyncio, uvloop, or module:attribute naming a "
            "callable that makes one (default auto, as uvicorn)", "LOOP"),
    Setting("lifespan", text, "an ASGI application's lifespan: on, off, or auto (default: run "
            "it, and serve without it an application that does not support it)", "MODE"),
    Setting("ws_max_size", size, "the largest WebSocket message an ASGI application receives; "
            "a larger one closes the WebSocket with 1009 "
            f"(default {Options.ws_max_size // 2**20}M)", "SIZE"),
    Setting("ws_ping_interval", seconds_or_off, "ping each WebSocket every SECONDS, which keeps "
            "it open through proxies and finds clients that vanished; 0: no pings "
            f"(default {Options.ws_ping_interval:g}, as uvicorn)", "SECONDS"),
    Setting("ws_ping_timeout", seconds_or_off, "close a WebSocket with 1011 if a ping's Pong "
            f"does not come within SECONDS; 0: wait for ever (default "
            f"{Options.ws_ping_timeout:g})", "SECONDS"),
    Setting("access_log", text, "log requests here ('-': stdout)", "FILE"),
    Setting("certfile", text, "serve HTTPS with this certificate chain (PEM)", "FILE"),
    Setting("keyfile", text, "the certificate's private key (PEM)", "FILE"),
    Setting("workers", whole, "processes sharing the port with SO_REUSEPORT, restarted if they "
            "die (default 1: no supervisor)", "N"),
    Setting("target_p90", milliseconds, "hold each application's 90th-percentile response "
            "time near MS milliseconds; requests over the bound get 503 with Retry-After", "MS"),
    Setting("class_header", text, "with --target-p90: request class 0-9 (9 served first under "
            "load) from header NAME, or from a cookie with cookie:NAME", "NAME"),
    Setting("graceful_timeout", seconds, "on TERM or INT, how long requests in flight may take "
            f"to finish before they are cut (default {Options.graceful_timeout:g})", "SECONDS"),
    Setting("underscore_headers", flag, "pass header names with '_' to applications (dropped "
            "by default: X_Forwarded_For would reach them as X-Forwarded-For)"),
    Setting("proxy_headers", flag, "ignore X-Forwarded-Proto and X-Forwarded-For (believed "
            "by default from the proxies --forwarded-allow-ips names)", negated=True),
    Setting("forwarded_allow_ips", text, "the proxies whose X-Forwarded-Proto (and, for ASGI "
            "applications, X-Forwarded-For) are believed: addresses and networks, "
            "comma-separated, or * (default: $FORWARDED_ALLOW_IPS, else 127.0.0.1,::1)", "IPS"),
    Setting("status", flag, "do not serve /_seda/ (the status page and Prometheus metrics)",
            negated=True),
    Setting("status_bind", address, "serve /_seda/ on this address (plain HTTP), not the main "
            "one", "HOST:PORT"),
)}

#: seda.http.Limits fields a setting sets, under the same name
LIMITS: dict[str, Setting] = {s.name: s for s in (
    Setting("max_body", size,
            f"largest request body (default {_default('max_body', unit=True)})", "SIZE"),
    Setting("max_request_line", size,
            f"longest request target (default {_default('max_request_line', unit=True)})",
            "SIZE"),
    Setting("max_header_bytes", size,
            f"largest header section (default {_default('max_header_bytes', unit=True)})",
            "SIZE"),
    Setting("max_headers", whole, f"most header fields (default {_default('max_headers')})",
            "N"),
    Setting("header_timeout", seconds, "seconds from a request's first byte to its last header "
            f"(default {_default('header_timeout')})", "SECONDS"),
    Setting("body_timeout", seconds, "seconds a request body may stall "
            f"(default {_default('body_timeout')})", "SECONDS"),
    Setting("keepalive_timeout", seconds, "seconds an idle connection stays open "
            f"(default {_default('keepalive_timeout')})", "SECONDS"),
    Setting("response_timeout", seconds, "seconds before a request a WSGI application never "
            f"answers gets 500 (default {_default('response_timeout')}; an ASGI application "
            "answers in its own time)", "SECONDS"),
    Setting("max_connections", whole, "open connections; more get 503 "
            f"(default {_default('max_connections')})", "N"),
)}

ALL = {**SETTINGS, **LIMITS}


def load(path: str | os.PathLike) -> dict[str, Any]:
    """The settings in a TOML file, each parsed; ``ConfigError`` naming the file and the key
    for an unknown key or a value that does not parse."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    values = {}
    for key, value in data.items():
        setting = ALL.get(key)
        if setting is None:
            near = difflib.get_close_matches(key, ALL, n=1)
            raise ConfigError(f"{path}: unknown setting {key!r}"
                              + (f" (did you mean {near[0]!r}?)" if near else "")
                              + "; the settings are haboob's long options, listed by haboob "
                              "--help, with '_' for '-'")
        try:
            if setting.many and not isinstance(value, list):
                raise ValueError(f"expected a list, as {key} = [\"...\"], got {value!r}")
            values[key] = [setting.parse(v) for v in value] if setting.many \
                else setting.parse(value)
        except ValueError as exc:
            raise ConfigError(f"{path}: {key}: {exc}") from None
    return values


#: Settings that say one thing between them (where /_seda/ is: off, or on an address of its
#: own): one given on the command line replaces the file's value of the other as well.
_ONE_THING = {"status": "status_bind", "status_bind": "status"}


def combine(file: dict[str, Any], command_line: dict[str, Any]) -> dict[str, Any]:
    """The file's settings with the command line's over them."""
    values = {k: v for k, v in file.items() if _ONE_THING.get(k) not in command_line}
    values.update(command_line)
    return values


def to_options(values: dict[str, Any], **fields: Any) -> Options:
    """Parsed settings -> ``Options`` (checked as it is made). ``fields`` are Options fields
    that are not settings: what the supervisor tells its workers."""
    kwargs: dict[str, Any] = dict(fields)
    apps, limits = [], {}
    for name, value in values.items():
        if name in LIMITS:
            limits[name] = value
        elif name == "bind":
            kwargs["host"], kwargs["port"] = value
        elif name == "app":
            apps.insert(0, ("/", load_app(value, "app")))
        elif name == "mount":
            apps += [(prefix, load_app(ref, f"mount {prefix}")) for prefix, ref in value]
        else:
            kwargs["cache_bytes" if name == "cache_mb" else name] = value
    if apps:
        kwargs["apps"] = apps
    if limits:
        try:
            kwargs["limits"] = Limits(**limits)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return Options(**kwargs)


def load_app(ref: str, setting: str) -> Callable:
    """``module:attribute`` -> an application, with the working directory importable (as
    uvicorn and gunicorn do); ``ConfigError`` naming the ``setting`` if it cannot be."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        app = seda.import_object(ref)
    except seda.ImportObjectError as exc:
        raise ConfigError(f"{setting}: cannot load the application: {exc}") from None
    if not callable(app):
        raise ConfigError(f"{setting}: {ref} is not callable, so neither a WSGI nor an ASGI "
                          "application")
    return app
