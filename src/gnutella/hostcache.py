"""The host cache: servents we may connect to, learned from pongs and X-Try headers, kept across
restarts in a file.

It is bounded (the most recently seen ``capacity`` hosts stay; a pong flood replaces hosts, it
does not add memory) and it remembers failures: a host that does not answer is retried after a
delay that doubles each time, and forgotten after ``forget_after`` failures in a row. Hosts
given on the command line (``pin``) are never forgotten and are tried first.

Several stages use it at once (the router learns from pongs on its threads, the server from
handshakes, the catcher dials), so every method takes its lock; none does I/O but ``load`` and
``save``, which the catcher calls at its start, now and then, and at its end.

The file is plain text, a host a line, oldest first: ``1.2.3.4:6346 1718000000`` (the host,
and when it was last seen, Unix time). It is written to a temporary file and renamed, so a crash
leaves the old file or the new one, never half of one; lines that do not parse are skipped.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable

from .addresses import Address, dialable, hostport, parse_address

HEADER = "# pyseda gnutella host cache: HOST:PORT LAST-SEEN (Unix time), oldest first\n"


class _Host:
    __slots__ = ("failures", "retry_at", "seen")

    def __init__(self, seen: float) -> None:
        self.seen = seen              # wall-clock time it was last heard of
        self.failures = 0             # failed connection attempts in a row
        self.retry_at = 0.0           # monotonic time before which it is not dialed again


class HostCache:
    """Up to ``capacity`` hosts with their backoff; ``retry`` is the first and the longest
    delay before dialing a host that failed."""

    def __init__(self, capacity: int = 1000, *, retry: tuple[float, float] = (2.0, 600.0),
                 forget_after: int = 4, wall: Callable[[], float] = time.time) -> None:
        if capacity < 1:
            raise ValueError("a host cache holds at least one host")
        self.capacity, self.retry, self.forget_after, self.wall = (
            capacity, retry, forget_after, wall)
        self._hosts: OrderedDict[Address, _Host] = OrderedDict()   # least recently seen first
        self._pinned: dict[Address, None] = {}                     # in the order given
        self._lock = threading.Lock()
        self.dirty = False            # changed since the last load or save

    def __len__(self) -> int:
        return len(self._hosts)

    def __contains__(self, address: object) -> bool:
        return address in self._hosts

    def pin(self, address: Address) -> None:
        """A host the operator named: dialed first, never forgotten, saved like the others."""
        with self._lock:
            self._pinned[address] = None
            self._hosts.setdefault(address, _Host(self.wall()))

    def learn(self, hosts: Iterable[Address]) -> int:
        """Remember ``hosts`` as seen now; addresses nobody can dial are ignored. Returns how
        many were new."""
        now, new = self.wall(), 0
        with self._lock:
            for address in hosts:
                if not dialable(*address):
                    continue
                host = self._hosts.get(address)
                if host is None:
                    self._hosts[address] = _Host(now)
                    new += 1
                else:
                    host.seen = now
                    self._hosts.move_to_end(address)
            self._evict()
            self.dirty = self.dirty or new > 0
        return new

    def _evict(self) -> None:
        hosts = self._hosts
        while len(hosts) > self.capacity:
            for address in hosts:             # the least recently seen that is not pinned
                if address not in self._pinned:
                    del hosts[address]
                    break
            else:
                return                        # only pinned hosts: they stay

    def ready(self, now: float, n: int, exclude: Collection[Address] = ()) -> list[Address]:
        """Up to ``n`` hosts to dial at monotonic time ``now``: pinned first, then the most
        recently seen, none in its backoff or in ``exclude``."""
        with self._lock:
            hosts = self._hosts
            order = [*self._pinned, *(a for a in reversed(hosts) if a not in self._pinned)]
            picked = []
            for address in order:
                if len(picked) == n:
                    break
                host = hosts.get(address)
                if host is not None and host.retry_at <= now and address not in exclude:
                    picked.append(address)
            return picked

    def next_retry(self, now: float) -> float | None:
        """The earliest monotonic time after ``now`` a host in its backoff may be dialed."""
        with self._lock:
            waiting = [h.retry_at for h in self._hosts.values() if h.retry_at > now]
        return min(waiting, default=None)

    def failed(self, address: Address, now: float) -> None:
        """A connection attempt failed: back off (doubling), or forget the host."""
        with self._lock:
            host = self._hosts.get(address)
            if host is None:
                return
            host.failures += 1
            if host.failures >= self.forget_after and address not in self._pinned:
                del self._hosts[address]
                self.dirty = True
                return
            first, longest = self.retry
            host.retry_at = now + min(longest, first * 2 ** (host.failures - 1))

    def succeeded(self, address: Address, now: float, rest: float = 0.0) -> None:
        """A connection worked (``rest``: it has since closed; wait that long before dialing
        it again, so that a host that accepts then hangs up is not dialed in a loop)."""
        with self._lock:
            host = self._hosts.get(address)
            if host is not None:
                host.failures, host.retry_at, host.seen = 0, now + rest, self.wall()
                self._hosts.move_to_end(address)
                self.dirty = True

    def sample(self, n: int, exclude: Collection[Address] = ()) -> list[Address]:
        """The ``n`` most recently seen hosts: what an X-Try header offers."""
        with self._lock:
            picked = []
            for address in reversed(self._hosts):
                if len(picked) == n:
                    break
                if address not in exclude:
                    picked.append(address)
            return picked

    # -- the file -------------------------------------------------------------------------------

    def load(self, path: str) -> int:
        """Add the hosts saved in ``path`` (none if it does not exist yet); returns how many.
        Raises OSError if the file exists but cannot be read."""
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.readlines()
        except FileNotFoundError:
            return 0
        entries = []
        for line in lines[-self.capacity * 2:]:      # a huge file costs its tail only
            words = line.split()
            if len(words) != 2 or line.startswith("#"):
                continue
            try:
                address, seen = parse_address(words[0]), float(words[1])
            except ValueError:
                continue
            if dialable(*address):
                entries.append((address, seen))
        with self._lock:
            for address, seen in entries:
                host = self._hosts.pop(address, None) or _Host(seen)
                host.seen = seen
                self._hosts[address] = host
            self._evict()
            self.dirty = False
        return len(entries)

    def save(self, path: str) -> None:
        """Write every host to ``path`` atomically (a temporary file renamed over it).
        Raises OSError (the old file untouched) if it cannot be written."""
        with self._lock:
            lines = [f"{hostport(*a)} {h.seen:.0f}\n" for a, h in self._hosts.items()]
            self.dirty = False
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(HEADER)
                f.writelines(lines)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            self.dirty = True
            raise
