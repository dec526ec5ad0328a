"""The engine: one thread, non-blocking sockets and one epoll selector driving every connection.

Closed and open loop differ only in when a request is issued and what a connection does once its
response is in; connecting, sending, framing responses, timeouts, and the single retry of a request
that met a keep-alive connection the server had just closed, are shared here.
"""

from __future__ import annotations

import errno
import heapq
import math
import random
import selectors
import socket
from collections import deque
from time import perf_counter
from typing import Any
from urllib.parse import urlsplit

from .parser import ProtocolError, ResponseParser
from .progress import Tick, progress_bar, wanted
from .report import Report, Stats
from .workloads import Workload, fixed

CONNECTING, SENDING, WAITING, IDLE, CLOSED = range(5)
READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
RECV_SIZE = 64 * 1024
TICK_S = 0.25


class Target:
    """The server's address, resolved once, and the request bytes for each path, built once."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"an http:// URL with a host is needed, not {url!r}")
        info = socket.getaddrinfo(parts.hostname, parts.port or 80, type=socket.SOCK_STREAM)[0]
        self.family, self.addr = info[0], info[4]
        self.path = parts.path or "/"
        self.host = parts.netloc.rpartition("@")[2]
        self.requests: dict[str, bytes] = {}

    def request(self, path: str) -> bytes:
        req = self.requests.get(path)
        if req is None:
            req = f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode()
            self.requests[path] = req
        return req


class Conn:
    """A client socket and the request it carries; ``t_start`` is where its latency counts from."""

    __slots__ = ("client", "out", "parser", "req", "sent", "sock", "state", "t_start")

    def __init__(self, client: int, req: bytes, t_start: float) -> None:
        self.client = client
        self.req = req
        self.t_start = t_start
        self.sent = 0               # requests sent on this connection
        self.state = CONNECTING
        self.parser = ResponseParser()
        self.out = memoryview(b"")
        self.sock: socket.socket


class Engine:
    """The shared event loop; subclasses decide when requests start and what follows a response."""

    def __init__(self, target: Target, workload: Workload, *, clients: int, duration: float,
                 timeout: float, seed: int, max_requests: int | None) -> None:
        self.target = target
        self.workload = workload
        self.duration = duration
        self.timeout = timeout
        self.rng = random.Random(seed)
        self.max_requests = math.inf if max_requests is None else max_requests
        self.issued = 0
        self.open_conns = 0
        self.busy: set[Conn] = set()            # connections with a request in flight
        self.stats = Stats(clients)
        self.sel = selectors.DefaultSelector()

    # -- what the modes decide ------------------------------------------------------------------

    def start(self, now: float) -> None:
        raise NotImplementedError

    def due(self, now: float) -> float:
        """Start whatever is due by ``now``; returns when something next falls due."""
        raise NotImplementedError

    def response_done(self, conn: Conn, keep: bool, now: float) -> None:
        raise NotImplementedError

    def request_failed(self, conn: Conn) -> None:
        """``conn``'s request failed and is counted; the connection is already closed."""
        raise NotImplementedError

    def finished(self) -> bool:
        return self.issued >= self.max_requests and not self.busy

    # -- the loop -------------------------------------------------------------------------------

    def run(self, tick: Tick | None) -> float:
        """Run until the duration is up or every allowed request is done; returns seconds run."""
        scan = min(0.05, self.timeout / 4)
        t0 = perf_counter()
        end = t0 + self.duration
        next_scan = next_tick = t0
        self.start(t0)
        select, on_event, on_readable = self.sel.select, self.on_event, self.on_readable
        try:
            while True:
                now = perf_counter()
                if now >= end or self.finished():
                    break
                if now >= next_scan:
                    self.expire(now)
                    next_scan = now + scan
                if tick is not None and now >= next_tick:
                    tick(now - t0, self.stats.ok, self.stats.errors.total)
                    next_tick = now + TICK_S
                wake = min(self.due(now), next_scan, end)
                for key, mask in select(_poll_timeout(wake - perf_counter())):
                    conn = key.data
                    if conn.state == WAITING:       # the common case, one call shorter
                        on_readable(conn)
                    else:
                        on_event(conn, mask)
        finally:
            for key in list(self.sel.get_map().values()):
                key.fileobj.close()
            self.sel.close()
        return min(perf_counter(), end) - t0

    def next_request(self) -> bytes | None:
        if self.issued >= self.max_requests:
            return None
        self.issued += 1
        return self.target.request(self.workload.path(self.rng))

    # -- one connection -------------------------------------------------------------------------

    def connect(self, client: int, req: bytes, t_start: float) -> Conn | None:
        """Open a connection for ``req``; None if that failed at once (already counted)."""
        conn = Conn(client, req, t_start)
        self.stats.connections += 1
        try:
            sock = socket.socket(self.target.family, socket.SOCK_STREAM)
        except OSError as exc:
            self.connect_failed(conn, exc.errno or 0)
            return None
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = sock.connect_ex(self.target.addr)
        if err not in (0, errno.EINPROGRESS):
            sock.close()
            self.connect_failed(conn, err)
            return None
        conn.sock = sock
        self.open_conns += 1
        self.busy.add(conn)
        self.sel.register(sock, WRITE, conn)
        return conn

    def connect_failed(self, conn: Conn, err: int) -> None:
        conn.state = CLOSED
        if err == errno.ECONNREFUSED:
            self.stats.errors.refused += 1
        else:
            self.stats.errors.connect += 1
        self.request_failed(conn)

    def send(self, conn: Conn, req: bytes, t_start: float) -> None:
        """Send ``req`` on an open connection; a short write finishes when the socket drains."""
        conn.req = req
        conn.t_start = t_start
        conn.sent += 1
        conn.parser.reset()
        conn.state = WAITING
        self.busy.add(conn)
        try:
            n = conn.sock.send(req)
        except BlockingIOError:
            n = 0
        except OSError:
            self.broken(conn)
            return
        if n < len(req):
            conn.out = memoryview(req)[n:]
            conn.state = SENDING
            self.sel.modify(conn.sock, READ | WRITE, conn)

    def close(self, conn: Conn) -> None:
        if conn.state != CLOSED:
            conn.state = CLOSED
            self.sel.unregister(conn.sock)
            conn.sock.close()
            self.open_conns -= 1
            self.busy.discard(conn)

    def on_event(self, conn: Conn, mask: int) -> None:
        state = conn.state
        if state == CONNECTING:
            err = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.close(conn)
                self.connect_failed(conn, err)
            else:
                self.sel.modify(conn.sock, READ, conn)
                self.send(conn, conn.req, conn.t_start)
            return
        if state == SENDING and mask & WRITE:
            try:
                n = conn.sock.send(conn.out)
            except BlockingIOError:
                n = 0
            except OSError:
                self.broken(conn)
                return
            conn.out = conn.out[n:]
            if not conn.out:
                conn.state = WAITING
                self.sel.modify(conn.sock, READ, conn)
        if mask & READ and conn.state != CLOSED:
            self.on_readable(conn)

    def on_readable(self, conn: Conn) -> None:
        try:
            data = conn.sock.recv(RECV_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = None                     # reset: unlike a close, never ends a response
        if conn.state == IDLE:              # closed (or spoken to) between requests: drop it;
            self.close(conn)                # the next request on it will reconnect
            return
        if not data:
            if data is not None and conn.parser.eof():
                self.complete(conn)
            else:
                self.broken(conn)
            return
        self.stats.bytes += len(data)
        try:
            done = conn.parser.feed(data)
        except ProtocolError:
            self.close(conn)
            self.stats.errors.protocol += 1
            self.request_failed(conn)
            return
        if done:
            self.complete(conn)

    def broken(self, conn: Conn) -> None:
        """Reset or closed mid-request. A reused connection that yielded nothing was most likely
        closed by the server while idle: retry once on a new one, latency still counting."""
        self.close(conn)
        if conn.sent > 1 and conn.parser.received == 0:
            self.connect(conn.client, conn.req, conn.t_start)
            return
        self.stats.errors.reset += 1
        self.request_failed(conn)

    def complete(self, conn: Conn) -> None:
        now = perf_counter()
        status = conn.parser.status
        keep = conn.parser.keep_alive and conn.state == WAITING
        self.busy.discard(conn)
        if 200 <= status < 300:
            self.stats.success(now - conn.t_start, conn.client)
        elif status == 503:
            self.stats.rejection(now - conn.t_start)
        else:
            self.stats.errors.status += 1
        self.response_done(conn, keep, now)

    def expire(self, now: float) -> None:
        """Fail every request older than the timeout."""
        limit = now - self.timeout
        for conn in [c for c in self.busy if c.t_start < limit]:
            self.close(conn)
            self.stats.errors.timeout += 1
            self.request_failed(conn)


def _poll_timeout(wait: float) -> float:
    """epoll waits whole milliseconds, rounding up: wait the whole ones, then poll for the rest,
    so that timers and arrivals are not served up to a millisecond late."""
    ms = int(wait * 1000)
    return (ms * 1000 - 1) / 1e6 if ms > 0 else 0.0


class ClosedLoop(Engine):
    """The thesis's clients: request, wait for the response, think, repeat; reconnect after R."""

    def __init__(self, target: Target, workload: Workload, *, clients: int, think: float,
                 requests_per_conn: int, **kw: Any) -> None:
        super().__init__(target, workload, clients=clients, **kw)
        self.clients = clients
        self.think = think
        self.per_conn = requests_per_conn or math.inf
        self.conns: list[Conn | None] = [None] * clients
        self.timers: list[tuple[float, int]] = []

    def start(self, now: float) -> None:
        for client in range(self.clients):
            self.issue(client)

    def due(self, now: float) -> float:
        timers = self.timers
        while timers and timers[0][0] <= now:
            self.issue(heapq.heappop(timers)[1])
        return timers[0][0] if timers else math.inf

    def issue(self, client: int) -> None:
        req = self.next_request()
        if req is None:
            return
        conn = self.conns[client]
        if conn is not None and conn.state == IDLE:
            self.send(conn, req, perf_counter())
        else:
            self.connect(client, req, perf_counter())

    def connect(self, client: int, req: bytes, t_start: float) -> Conn | None:
        conn = super().connect(client, req, t_start)
        self.conns[client] = conn
        return conn

    def response_done(self, conn: Conn, keep: bool, now: float) -> None:
        if keep and conn.sent < self.per_conn:
            conn.state = IDLE
        else:
            self.close(conn)
        if self.think:
            heapq.heappush(self.timers, (now + self.think, conn.client))
        else:
            self.issue(conn.client)

    def request_failed(self, conn: Conn) -> None:
        # Through the timer heap even without think time: a server refusing at once must not
        # recurse connect -> fail -> connect.
        heapq.heappush(self.timers, (perf_counter() + self.think, conn.client))


class OpenLoop(Engine):
    """Poisson arrivals at a fixed rate, each timed from its scheduled instant, over a pool of
    keep-alive sockets that grows (up to a cap) when every socket is busy."""

    def __init__(self, target: Target, workload: Workload, *, rate: float, max_conns: int,
                 **kw: Any) -> None:
        super().__init__(target, workload, clients=0, **kw)
        self.rate = rate
        self.max_conns = max_conns
        self.idle: list[Conn] = []
        self.pending: deque[tuple[float, bytes]] = deque()    # arrivals waiting for a socket
        self.next_arrival = math.inf

    def start(self, now: float) -> None:
        self.next_arrival = now + self.rng.expovariate(self.rate)

    def due(self, now: float) -> float:
        while self.next_arrival <= now:
            req = self.next_request()
            if req is None:
                self.next_arrival = math.inf
                break
            self.dispatch(self.next_arrival, req)
            self.next_arrival += self.rng.expovariate(self.rate)
        pending = self.pending
        while pending and self.open_conns < self.max_conns:
            t, req = pending.popleft()
            self.connect(-1, req, t)
        return self.next_arrival

    def dispatch(self, t: float, req: bytes) -> None:
        while self.idle:
            conn = self.idle.pop()
            if conn.state == IDLE:
                self.send(conn, req, t)
                return
        if self.open_conns < self.max_conns:
            self.connect(-1, req, t)
        else:
            self.pending.append((t, req))

    def response_done(self, conn: Conn, keep: bool, now: float) -> None:
        if not keep:
            self.close(conn)
        elif self.pending:
            t, req = self.pending.popleft()
            self.send(conn, req, t)
        else:
            conn.state = IDLE
            self.idle.append(conn)

    def request_failed(self, conn: Conn) -> None:
        """Nothing to do: ``due`` opens new sockets for waiting arrivals."""

    def finished(self) -> bool:
        return super().finished() and not self.pending

    def expire(self, now: float) -> None:
        super().expire(now)
        limit = now - self.timeout
        while self.pending and self.pending[0][0] < limit:
            self.pending.popleft()
            self.stats.errors.timeout += 1


def closed_loop(url: str, *, clients: int = 1024, think_ms: float = 20.0,
                requests_per_conn: int = 5, duration: float = 30.0,
                workload: Workload | None = None, timeout: float = 10.0, seed: int = 1,
                max_requests: int | None = None, progress: bool | None = None) -> Report:
    """Closed-loop load as in the SEDA thesis (6.1.3): ``clients`` each request, wait, think
    ``think_ms``, and reconnect after ``requests_per_conn`` requests (0: never by choice).

    Latency counts from the start of the connect for a connection's first request. The run stops
    after ``duration`` seconds, or once ``max_requests`` requests have been issued and answered.
    """
    if clients < 1 or duration <= 0 or timeout <= 0:
        raise ValueError("clients, duration and timeout must be positive")
    target = Target(url)
    workload = workload or fixed(target.path)
    engine = ClosedLoop(target, workload, clients=clients, think=think_ms / 1000,
                        requests_per_conn=requests_per_conn, duration=duration, timeout=timeout,
                        seed=seed, max_requests=max_requests)
    with progress_bar(wanted(progress, duration), duration) as tick:
        elapsed = engine.run(tick)
    return Report.from_stats(engine.stats, mode="closed", url=url, workload=workload.name,
                             clients=clients, duration=elapsed)


def open_loop(url: str, *, rate: float, max_conns: int = 1024, duration: float = 30.0,
              workload: Workload | None = None, timeout: float = 10.0, seed: int = 1,
              max_requests: int | None = None, progress: bool | None = None) -> Report:
    """Open-loop load: Poisson arrivals at ``rate`` per second over at most ``max_conns``
    keep-alive sockets; each latency counts from the arrival's scheduled time, so requests that
    wait for a socket inside the generator are not hidden (no coordinated omission).
    """
    if rate <= 0 or max_conns < 1 or duration <= 0 or timeout <= 0:
        raise ValueError("rate, max_conns, duration and timeout must be positive")
    target = Target(url)
    workload = workload or fixed(target.path)
    engine = OpenLoop(target, workload, rate=rate, max_conns=max_conns, duration=duration,
                      timeout=timeout, seed=seed, max_requests=max_requests)
    with progress_bar(wanted(progress, duration), duration) as tick:
        elapsed = engine.run(tick)
    return Report.from_stats(engine.stats, mode="open", url=url, workload=workload.name,
                             clients=max_conns, duration=elapsed, offered_rate=rate)
