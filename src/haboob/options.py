"""Haboob's configuration: one object behind the Python API, the command line and the config
file, checked when it is made. A wrong value fails here, with the setting's name, rather than
as a traceback from a stage after the server has started."""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

from seda import ConfigError
from seda.config import check, check_whole
from seda.http import Limits, Proxies

from .cache import POLICIES
from .loops import loop_factory
from .tls import tls_context

INTERFACES = ("auto", "asgi", "asgi2", "asgi3", "wsgi")   # asgi3: uvicorn's name for asgi
LIFESPANS = ("auto", "on", "off")     # seda.http.AsgiHandler's, as uvicorn's --lifespan


@dataclass(frozen=True)
class Options:
    """What Haboob serves and how. Sizes in bytes, times in seconds. Raises
    ``seda.ConfigError`` naming the setting when a value is of the wrong type or out of
    range, a path is missing, or two settings contradict each other."""

    root: str | None = None             # serve static files from this directory
    host: str = "127.0.0.1"
    port: int = 8000
    apps: list[tuple[str, Callable]] = field(default_factory=list)   # (prefix, application)
    interface: str = "auto"             # what the applications are (INTERFACES), or told apart
    tasks: int = 1000                   # most requests in flight per ASGI application
    lifespan: str = "auto"              # ASGI lifespan: auto, on or off (as uvicorn's)
    loop: str = "auto"                  # ASGI event loop: auto, asyncio, uvloop, module:attr
    ws_max_size: int = 16 * 2**20       # the largest WebSocket message an ASGI app receives
    ws_ping_interval: float = 20.0      # seconds between keep-alive pings (0: none), as uvicorn
    ws_ping_timeout: float = 20.0       # seconds a ping waits for its Pong (0: for ever)
    workers: int = 1                    # processes sharing the port (haboob.supervisor)
    cache_bytes: int = 200 * 2**20
    cache_policy: str = "lru"
    max_entry: int = 2**20              # larger files are not cached: they go by sendfile
    recheck: float = 1.0                # seconds before a cached file is checked for changes
    allow_outside: bool = False         # follow symlinks out of the root
    threads: int = 16                   # most threads per application / for cache misses
    access_log: str | None = None       # a file, or "-" for standard output
    certfile: str | None = None         # serve TLS with this certificate chain (PEM)...
    keyfile: str | None = None          # ...and its key; or give ssl_context
    ssl_context: ssl.SSLContext | None = None
    reuse_port: bool = False            # share the port with other processes (SO_REUSEPORT)
    target_p90: float | None = None     # seconds: admission control on each application stage
    class_header: str | None = None     # request class from this header ("cookie:NAME": cookie)
    status: bool = True                 # serve /_seda/: the status page and metrics
    status_bind: tuple[str, int] | None = None   # serve /_seda/ here, not on the main port
    status_dir: str | None = None       # workers share their status here (set by the supervisor)
    limits: Limits = field(default_factory=Limits)   # what clients may send (seda.http)
    graceful_timeout: float = 30.0      # seconds requests in flight get to finish on stopping
    underscore_headers: bool = False    # pass header names with "_" to applications
    proxy_headers: bool = True          # believe X-Forwarded-Proto and -For from...
    forwarded_allow_ips: str | None = None   # ...these (None: $FORWARDED_ALLOW_IPS or loopback)

    def __post_init__(self) -> None:
        for name in ("allow_outside", "reuse_port", "status", "underscore_headers",
                     "proxy_headers"):
            check(self, name, isinstance(getattr(self, name), bool), "true or false")
        # read once, now: a bad address fails here, not once serving, and every application
        # shares one (and what it has learnt of its peers)
        object.__setattr__(self, "_proxies", self._read_proxies())
        check(self, "host", isinstance(self.host, str), "a host name or address")
        check_whole(self, "port", 0, 65535)
        check_whole(self, "workers", 1)
        check_whole(self, "threads", 1)
        check_whole(self, "tasks", 1)
        check_whole(self, "ws_max_size", 1)
        check(self, "interface", self.interface in INTERFACES, f"one of {', '.join(INTERFACES)}")
        check(self, "lifespan", self.lifespan in LIFESPANS, f"one of {', '.join(LIFESPANS)}")
        check(self, "loop", isinstance(self.loop, str) and bool(self.loop),
              "auto, asyncio, uvloop or module:attribute")
        loop_factory(self.loop)             # (now, rather than once the server has started)
        check_whole(self, "cache_bytes", 0)
        check_whole(self, "max_entry", 0)
        check(self, "cache_policy", self.cache_policy in POLICIES,
               f"one of {', '.join(sorted(POLICIES))}")
        _seconds(self, "recheck", zero=True)
        _seconds(self, "graceful_timeout")
        _seconds(self, "ws_ping_interval", zero=True)
        _seconds(self, "ws_ping_timeout", zero=True)
        if self.target_p90 is not None:
            _seconds(self, "target_p90")
        check(self, "limits", isinstance(self.limits, Limits), "a seda.http.Limits")
        self._check_apps()
        self._check_paths()
        self._check_tls()
        self._check_status()
        if self.class_header is not None:
            self._check_class_header()

    def proxies(self) -> Proxies | None:
        """The peers whose X-Forwarded-* fields the applications believe (None: nobody's)."""
        proxies: Proxies | None = self._proxies  # type: ignore[attr-defined]  # __post_init__
        return proxies

    def _read_proxies(self) -> Proxies | None:
        if not self.proxy_headers:
            return None
        spec = self.forwarded_allow_ips
        if spec is None:                    # (as uvicorn and gunicorn read it)
            spec = os.environ.get("FORWARDED_ALLOW_IPS", Proxies.LOOPBACK)
        check(self, "forwarded_allow_ips", isinstance(spec, str),
              "addresses and networks, comma-separated, or *")
        try:
            return Proxies(spec)
        except ValueError as exc:
            raise ConfigError(f"forwarded_allow_ips: {exc}") from None

    def _check_apps(self) -> None:
        seen = set()
        for entry in self.apps:
            check(self, "apps", isinstance(entry, tuple) and len(entry) == 2,
                   "a list of (prefix, application) pairs")
            prefix, app = entry
            check(self, "apps", isinstance(prefix, str) and prefix.startswith("/"),
                   "prefixes that start with /")
            if prefix in seen:
                raise ConfigError(f"apps: two applications at {prefix!r}")
            seen.add(prefix)
            if not callable(app):
                raise ConfigError(f"apps: the application at {prefix!r} is not callable, so "
                                  f"neither a WSGI nor an ASGI application: {app!r}")
        if self.root is None and not self.apps:
            raise ConfigError("nothing to serve: give a root directory (--root) or an "
                              "application (APP or --mount; apps= in Python)")

    def _check_class_header(self) -> None:
        header = self.class_header
        kind, sep, name = header.partition(":") if isinstance(header, str) else ("", "", "")
        named = name if sep and kind.lower() == "cookie" else kind and not sep
        check(self, "class_header", named, "a header name, or cookie:NAME")
        if self.target_p90 is None:
            raise ConfigError("class_header needs target_p90: request classes matter only "
                              "under admission control")

    def _check_paths(self) -> None:
        if self.root is not None and not (isinstance(self.root, str | os.PathLike)
                                          and os.path.isdir(self.root)):
            raise ConfigError(f"root: {self.root!r} is not a directory")
        if self.status_dir is not None and not os.path.isdir(self.status_dir):
            raise ConfigError(f"status_dir: {self.status_dir!r} is not a directory")
        if self.access_log not in (None, "-") and not _writable(self.access_log):
            # say so now, not in a traceback from the log stage once requests arrive
            raise ConfigError(f"access_log: cannot write the access log {self.access_log}")

    def _check_tls(self) -> None:
        if (self.certfile is None) != (self.keyfile is None):
            raise ConfigError("certfile and keyfile go together: give both, or neither")
        if self.certfile is None:
            check(self, "ssl_context", self.ssl_context is None
                   or isinstance(self.ssl_context, ssl.SSLContext), "an ssl.SSLContext")
            return
        if self.ssl_context is not None:
            raise ConfigError("ssl_context and certfile/keyfile exclude each other: give one")
        try:
            context = tls_context(self.certfile, self.keyfile)
        except ValueError as exc:
            raise ConfigError(f"certfile, keyfile: cannot serve HTTPS: {exc}") from None
        object.__setattr__(self, "ssl_context", context)      # frozen: derived once, here

    def _check_status(self) -> None:
        if self.status_bind is None:
            return
        if not self.status:
            raise ConfigError("status_bind and status = false exclude each other: the page "
                              "is either off or on its own address")
        host, port = (self.status_bind if isinstance(self.status_bind, tuple)
                      and len(self.status_bind) == 2 else (None, None))
        check(self, "status_bind", isinstance(host, str) and isinstance(port, int)
               and not isinstance(port, bool) and 0 <= port <= 65535, "a (host, port) pair")


def _seconds(options: Options, name: str, zero: bool = False) -> None:
    """A number of seconds > 0 (>= 0 with ``zero``)."""
    value = getattr(options, name)
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    check(options, name, ok and (value >= 0 if zero else value > 0),
           f"a number of seconds {'>=' if zero else '>'} 0")


def _writable(path: str) -> bool:
    """Can a file be appended to at ``path`` (an existing file, or a new one in an existing
    directory)? Asked of the file system without creating anything."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return False
    where = path if os.path.exists(path) else os.path.dirname(path)
    return os.path.isdir(os.path.dirname(path)) and os.access(where, os.W_OK)
