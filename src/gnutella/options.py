"""The router's configuration, for the Python API and the command line alike, checked when it
is made: a wrong value fails here, naming the setting, not later in a stage."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from seda import ConfigError
from seda.config import check, check_whole

from .addresses import Address
from .parser import DEFAULT_MAX_PAYLOAD


@dataclass(frozen=True)
class Options:
    """Where the router listens and what it bounds. Sizes in bytes, times in seconds."""

    host: str = "127.0.0.1"
    port: int = 6346                    # 0: any free port
    peers: tuple[Address, ...] = ()     # hosts to keep connections to (dialed first, kept)
    hostcache: str | None = None        # a file the known hosts survive restarts in
    hostcache_size: int = 1000          # hosts remembered at most
    max_connections: int = 32           # neighbours (and handshakes in progress) at most
    outgoing: int = 4                   # connections the catcher keeps open (0: dial none)
    retry: tuple[float, float] = (2.0, 600.0)   # first and longest wait to redial a host
    query_delay: float = 0.0            # seconds each query sleeps (thesis 6.2.3; 0: off)
    router_threads: int = 20            # the controller's most threads; 1: one thread
    thesis_controller: bool = False     # the thesis's thread pool rule alone (for Fig. 41/42)
    router_queue: int = 10_000          # descriptors waiting for the router before shedding
    max_pending: int = 256 * 1024       # unsent bytes a connection may hold before it closes
    max_payload: int = DEFAULT_MAX_PAYLOAD   # a larger descriptor closes its connection
    max_forward: int = 1024             # a larger ping, pong, query or push is not sent on
    max_ttl: int = 7                    # TTL + hops above it are trimmed
    handshake_timeout: float = 10.0     # a handshake must finish within this
    alive_period: float = 20.0          # a neighbour quiet this long is pinged (TTL 1)
    idle_timeout: float = 180.0         # a neighbour quiet this long is closed
    deflate: bool = True                # compress connections whose peer accepts deflate
    user_agent: str = "pyseda-gnutella/0.1"
    status: Address | None = None       # serve /_seda/ (page and metrics) here

    def __post_init__(self) -> None:
        check(self, "host", isinstance(self.host, str) and bool(self.host), "an address")
        check_whole(self, "port", 0, 65535)
        check(self, "peers", isinstance(self.peers, tuple)
               and all(_is_address(p) for p in self.peers), "a tuple of (host, port) pairs")
        check_whole(self, "hostcache_size", 1)
        check_whole(self, "max_connections", 1)
        check_whole(self, "outgoing", 0)
        check(self, "retry", isinstance(self.retry, tuple) and len(self.retry) == 2
               and all(_number(t) and t > 0 for t in self.retry)
               and self.retry[0] <= self.retry[1], "(first, longest) seconds > 0")
        check(self, "query_delay", _number(self.query_delay) and self.query_delay >= 0,
               "seconds >= 0")
        check_whole(self, "router_threads", 1)
        check(self, "thesis_controller", isinstance(self.thesis_controller, bool),
              "true or false")
        check_whole(self, "router_queue", 1)
        check_whole(self, "max_pending", 1)
        check_whole(self, "max_payload", 1, 2**32 - 1)
        check_whole(self, "max_forward", 1, 2**32 - 1)
        check_whole(self, "max_ttl", 1, 255)
        check(self, "handshake_timeout", _number(self.handshake_timeout)
               and self.handshake_timeout > 0, "seconds > 0")
        check(self, "alive_period", _number(self.alive_period) and self.alive_period > 0,
              "seconds > 0")
        check(self, "idle_timeout", _number(self.idle_timeout)
              and self.idle_timeout > self.alive_period, "seconds > alive_period")
        check(self, "deflate", isinstance(self.deflate, bool), "true or false")
        check(self, "user_agent", isinstance(self.user_agent, str) and self.user_agent
               and self.user_agent.isprintable(), "a printable name")
        check(self, "status", self.status is None or _is_address(self.status, any_port=True),
               "a (host, port) pair")
        if self.hostcache is not None:
            self._check_hostcache()

    def _check_hostcache(self) -> None:
        path = os.path.abspath(self.hostcache)
        if os.path.isdir(path):
            raise ConfigError(f"hostcache: {self.hostcache} is a directory, not a file")
        folder = os.path.dirname(path)
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            # it is saved by renaming a new file over it: the directory must be writable
            raise ConfigError(f"hostcache: cannot write in {folder} (the host cache is "
                              "replaced atomically there)")

    @property
    def bind(self) -> Address:
        return self.host, self.port


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_address(value: Any, any_port: bool = False) -> bool:
    return (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], int) and not isinstance(value[1], bool)
            and (0 if any_port else 1) <= value[1] <= 65535)
