"""A Gnutella load generator (issue 15; thesis 6.2.3): N connections to a router, each through
the 0.6 handshake, sending descriptors open loop at a fixed rate with the thesis's mix, and the
latency of each type through the router, from the generator's send to the first copy that
comes back out on another connection (GUIDs matched, timestamps kept here).

    python -m benchmarks.gnutella_load run --rate 1000 --duration 10 [--address HOST:PORT]
    python -m benchmarks.gnutella_load peak [--quick]

``run`` loads one router (its own on core 0 unless ``--address`` names one); ``peak`` steps the
rate up on a router pinned to core 0 (this process on core 1) and reports the routed rate,
losses and p99 at each step, writing docs/results/gnutella_peak.md.

The mix: the thesis gives only its query share (15 %); the rest follows the traffic the
Gnutella measurements of its time describe, mostly discovery (pings and their pongs) and the
answers to queries: 40 % pings, 30 % pongs, 15 % queries, 10 % query hits, 5 % pushes. An
answer needs a request to answer: a pong goes out on the connection a ping reached, with its
GUID, and comes back along the ping's path; a query hit likewise; a push names the servent id of
a connection whose hits went through the router. When no request is waiting to be answered, a
ping or query goes instead (counted as such). Every connection is an ultrapeer and reads
everything it is sent: a broadcast reaches the N - 1 others, and the first copy counts.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import selectors
import socket
import statistics
import sys
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from benchmarks.results import result_path
from benchmarks.serving import free_port, server
from gnutella.descriptors import (
    PING,
    PONG,
    PUSH,
    QUERY,
    QUERY_HIT,
    Result,
    encode_ping,
    encode_pong,
    encode_push,
    encode_query,
    encode_query_hit,
)
from gnutella.handshake import Connector, Established, Send, Settings

NAMES = {PING: "ping", PONG: "pong", QUERY: "query", QUERY_HIT: "query_hit", PUSH: "push"}
MIX = {PING: 0.40, PONG: 0.30, QUERY: 0.15, QUERY_HIT: 0.10, PUSH: 0.05}
ANSWER_PORT = 1               # our pongs say so; the router's own pongs carry its port
ANSWER_IP = "192.0.2.1"       # TEST-NET: learned by the router's host cache, never dialed
TICK = 0.001                  # the generator sends what is due at most this often
RECV = 256 * 1024
# The generator is one Python thread reading 2.5 descriptors for each it sends: a hiccup of
# tens of ms on a shared core would make it the router's slow reader (closed past 256 KB).
PEAK_ROUTER = ["--max-pending", str(32 << 20)]


def percentiles(h: HdrHistogram) -> dict[str, float]:
    """Milliseconds, from a histogram of microseconds."""
    if not h.get_total_count():
        return {"mean": float("nan"), "p50": float("nan"), "p90": float("nan"),
                "p99": float("nan"), "max": float("nan")}
    return {"mean": h.get_mean_value() / 1000, "p50": h.get_value_at_percentile(50) / 1000,
            "p90": h.get_value_at_percentile(90) / 1000,
            "p99": h.get_value_at_percentile(99) / 1000, "max": h.get_max_value() / 1000}


@dataclass
class LoadResult:
    """One run: what was offered and sent, what came back, by type, and the router's view."""

    rate: float
    duration: float
    connections: int
    sent: dict[str, int] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)
    latency: dict[str, dict[str, float]] = field(default_factory=dict)
    lag_ms: float = 0.0           # the most the generator fell behind its schedule
    cpu: float = 0.0              # the generator's CPU time / elapsed: near 1, it is the limit
    router: dict[str, Any] = field(default_factory=dict)   # deltas of its counters

    @property
    def sent_total(self) -> int:
        return sum(self.sent.values())

    @property
    def lost(self) -> dict[str, int]:
        return {k: self.sent[k] - self.received.get(k, 0) for k in self.sent}

    @property
    def loss(self) -> float:
        return sum(self.lost.values()) / max(1, self.sent_total)

    def summary(self) -> str:
        parts = [f"offered {self.rate:,.0f}/s, sent {self.sent_total / self.duration:,.0f}/s, "
                 f"lost {self.loss:.2%}, generator lag {self.lag_ms:.0f} ms, "
                 f"generator CPU {self.cpu:.0%}"]
        for name, p in self.latency.items():
            parts.append(f"  {name:>9}: {self.sent[name]:>8} sent, {self.lost[name]:>6} lost, "
                         f"mean {p['mean']:.2f} p50 {p['p50']:.2f} p90 {p['p90']:.2f} "
                         f"p99 {p['p99']:.2f} max {p['max']:.1f} ms")
        if self.router:
            parts.append(f"  router: {self.router}")
        return "\n".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "duration": self.duration, "connections": self.connections,
                "sent": self.sent, "received": self.received, "lost": self.lost,
                "latency": self.latency, "lag_ms": self.lag_ms, "cpu": self.cpu,
                "router": self.router}


class Conn:
    """One connection: its socket, what waits to be sent, what was read and not yet cut."""

    __slots__ = ("inbuf", "index", "out", "outbuf", "servent", "sock")

    def __init__(self, index: int, sock: socket.socket, servent: bytes) -> None:
        self.index, self.sock, self.servent = index, sock, servent
        self.out: list[bytes] = []
        self.outbuf = b""
        self.inbuf = bytearray()


def handshake(sock: socket.socket, hs: Connector) -> bytes:
    """Run the connecting side's handshake on a blocking socket; the bytes that followed it
    (the start of the descriptor stream). Refused or cut short: ConnectionError."""
    events = deque(hs.start())
    while True:
        while events:
            ev = events.popleft()
            if isinstance(ev, Send):
                sock.sendall(ev.data)
            elif isinstance(ev, Established):
                return ev.extra
            else:
                raise ConnectionError(f"handshake: {ev}")
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("closed during the handshake")
        events.extend(hs.receive(data))


def connect(address: tuple[str, int], index: int, timeout: float = 10.0) -> Conn:
    """A 0.6 handshake as an ultrapeer without deflate, then a ping of TTL 1 that only the
    router answers: once its pong is back, the router routes for this connection."""
    sock = socket.create_connection(address, timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    hs = Connector(Settings(user_agent="pyseda-gnutella-load/1", ultrapeer=True, deflate=False))
    extra = handshake(sock, hs)
    probe = encode_ping(ttl=1)
    sock.sendall(probe)
    buf = bytearray(extra)
    while True:
        pos = 0
        while len(buf) - pos >= 23:
            size = 23 + int.from_bytes(buf[pos + 19:pos + 23], "little")
            if len(buf) - pos < size:
                break
            if buf[pos + 16] == PONG and buf[pos:pos + 16] == probe[:16]:
                sock.setblocking(False)
                conn = Conn(index, sock, index.to_bytes(2, "big") * 8)
                conn.inbuf = buf[pos + size:]
                return conn
            pos += size
        del buf[:pos]
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("closed before the router answered")
        buf += data


class Generator:
    """The open-loop schedule, the descriptors it makes and the GUIDs it waits for."""

    def __init__(self, conns: list[Conn], rate: float, *, seed: int, router_port: int,
                 mix: dict[int, float] | None = None) -> None:
        self.conns, self.rate, self.router_port = conns, rate, router_port
        self.rng = random.Random(seed)
        mix = mix or MIX
        self.kinds, self.weights = list(mix), list(mix.values())
        self.prefix = os.urandom(8)
        self.counter = 0
        self.pending: dict[bytes, float] = {}       # guid + type -> when sent
        self.hist = {k: HdrHistogram(1, 600_000_000, 3) for k in NAMES}
        self.sent = dict.fromkeys(NAMES, 0)
        self.received = dict.fromkeys(NAMES, 0)
        self.pings: deque[tuple[bytes, Conn]] = deque(maxlen=100_000)    # to answer
        self.queries: deque[tuple[bytes, Conn]] = deque(maxlen=100_000)
        self.hitters: list[Conn] = []                # their servent ids are routable
        self.hit_from: dict[bytes, Conn] = {}        # a hit's GUID -> who sent it, until it
        #                                              comes back: the router knows its route
        self.rr = 0
        self.ping_tail = encode_ping(ttl=7)[16:]
        self.query_tail = encode_query("pyseda load", ttl=7)[16:]
        self.pong_tail = encode_pong(bytes(16), ANSWER_PORT, ANSWER_IP, 10, 1000)[16:]
        self.hit_tail = {c.index: encode_query_hit(
            bytes(16), ANSWER_PORT, ANSWER_IP, 1000, [Result(1, 1 << 20, "song.mp3")],
            c.servent)[16:] for c in conns}
        self.push_tail = {c.index: encode_push(c.servent, 1, ANSWER_IP, ANSWER_PORT)[16:]
                          for c in conns}

    def guid(self) -> bytes:
        self.counter += 1
        return self.prefix + self.counter.to_bytes(8, "little")

    def next_conn(self) -> Conn:
        self.rr = (self.rr + 1) % len(self.conns)
        return self.conns[self.rr]

    def issue(self, n: int, now: float) -> None:
        """``n`` descriptors, each on its connection's output list, stamped ``now``."""
        pending, sent = self.pending, self.sent
        for kind in self.rng.choices(self.kinds, self.weights, k=n):
            if kind == PONG and self.pings:
                guid, conn = self.pings.popleft()
                data = guid + self.pong_tail
            elif kind == QUERY_HIT and self.queries:
                guid, conn = self.queries.popleft()
                data = guid + self.hit_tail[conn.index]
                self.hit_from[guid] = conn
            elif kind == PUSH and len(self.hitters) > 1:
                target = self.rng.choice(self.hitters)
                conn = self.next_conn()
                if conn is target:
                    conn = self.next_conn()
                guid = self.guid()
                data = guid + self.push_tail[target.index]
            else:
                if kind != QUERY:
                    kind = PING
                conn = self.next_conn()
                guid = self.guid()
                data = guid + (self.ping_tail if kind == PING else self.query_tail)
            pending[guid + bytes((kind,))] = now
            sent[kind] += 1
            conn.out.append(data)

    def arrived(self, conn: Conn, now: float) -> None:
        """Cut what ``conn`` read into descriptors; the first copy of each one we sent
        records its latency."""
        buf, pending = conn.inbuf, self.pending
        pos, end = 0, len(buf)
        while end - pos >= 23:
            size = 23 + int.from_bytes(buf[pos + 19:pos + 23], "little")
            if end - pos < size:
                break
            kind = buf[pos + 16]
            if not (kind == PONG and int.from_bytes(buf[pos + 23:pos + 25], "little")
                    == self.router_port):             # the router's own pong: not ours
                key = bytes(buf[pos:pos + 17])
                t = pending.pop(key, None)
                if t is not None:
                    self.received[kind] += 1
                    self.hist[kind].record_value(max(1, int((now - t) * 1e6)))
                    if kind == PING:
                        self.pings.append((key[:16], conn))
                    elif kind == QUERY:
                        self.queries.append((key[:16], conn))
                    elif kind == QUERY_HIT:
                        # a push for its servent is routable only once the router has seen
                        # the hit: pushed any sooner, one may overtake it on another connection
                        hitter = self.hit_from.pop(key[:16], None)
                        if hitter is not None and hitter not in self.hitters:
                            self.hitters.append(hitter)
            pos += size
        del buf[:pos]


def load(address: tuple[str, int], rate: float, duration: float, *, connections: int = 4,
         drain: float = 2.0, seed: int = 1, status: tuple[str, int] | None = None,
         mix: dict[int, float] | None = None) -> LoadResult:
    """Offer ``rate`` descriptors/s for ``duration`` s over ``connections`` connections, then
    wait up to ``drain`` s for the stragglers. With ``status`` (the router's status address)
    the router's own counters are read before and after."""
    conns = [connect(address, i) for i in range(connections)]
    gen = Generator(conns, rate, seed=seed, router_port=address[1], mix=mix)
    sel = selectors.DefaultSelector()
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)
    before = router_counters(status) if status else None
    start, cpu0 = time.perf_counter(), time.process_time()
    stop = start + duration
    issued, lag = 0, 0.0
    try:
        while True:
            now = time.perf_counter()
            if now < stop:
                due = int((now - start) * rate) - issued
                if due > 0:
                    lag = max(lag, due / rate)
                    gen.issue(due, now)
                    issued += due
            elif not gen.pending or now > stop + drain:
                break
            for c in conns:
                if c.out or c.outbuf:
                    _flush(sel, c)
            for key, _ in sel.select(TICK):
                c = key.data
                if key.events & selectors.EVENT_WRITE and c.outbuf:
                    _flush(sel, c)
                _read(c)
                gen.arrived(c, time.perf_counter())
    finally:
        elapsed = min(time.perf_counter(), stop) - start
        cpu = (time.process_time() - cpu0) / (time.perf_counter() - start)
        after = router_counters(status) if status else None
        for c in conns:
            c.sock.close()
        sel.close()
    result = LoadResult(rate, elapsed, connections,
                     sent={NAMES[k]: v for k, v in gen.sent.items() if v},
                     received={NAMES[k]: v for k, v in gen.received.items() if gen.sent[k]},
                     latency={NAMES[k]: percentiles(h) for k, h in gen.hist.items()
                              if gen.sent[k]},
                     lag_ms=lag * 1000, cpu=cpu)
    if before is not None and after is not None:
        result.router = {k: after[k] - before[k] for k in after}
    return result


def _flush(sel: selectors.BaseSelector, c: Conn) -> None:
    data = c.outbuf + b"".join(c.out)
    c.out.clear()
    try:
        n = c.sock.send(data)
    except BlockingIOError:
        n = 0
    except OSError as exc:
        raise ConnectionError(f"the router closed connection {c.index} ({exc}): if it read "
                              "too slowly, raise the router's --max-pending") from None
    c.outbuf = data[n:]
    sel.modify(c.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if c.outbuf else 0), c)


def _read(c: Conn) -> None:
    while True:
        try:
            data = c.sock.recv(RECV)
        except BlockingIOError:
            return
        if not data:
            raise ConnectionError(f"the router closed connection {c.index}: if it read too "
                                  "slowly, raise the router's --max-pending")
        c.inbuf += data
        if len(data) < RECV:
            return


def router_counters(status: tuple[str, int]) -> dict[str, int]:
    """The router stage's counters from the status page: descriptors it took off its queue
    (``processed``), routed, dropped and sent on, and the server's ``shed`` (queue full)."""
    conn = http.client.HTTPConnection(*status, timeout=10)
    try:
        conn.request("GET", "/_seda/status.json")
        stages = json.loads(conn.getresponse().read())["stages"]
    finally:
        conn.close()
    router, srv = stages["gnutella.router"], stages["gnutella.server"]["handler"]
    handler = router["handler"]
    return {"processed": router["processed"], "routed": sum(handler["routed"].values()),
            "dropped": sum(handler["dropped"].values()), "sent": handler["sent"],
            "shed": srv.get("shed", 0)}


@contextlib.contextmanager
def router(*args: str) -> Iterator[tuple[tuple[str, int], tuple[str, int]]]:
    """A ``gnutella`` process on core 0 with ``args``, dialing no one, with a status page;
    yields its routing and status addresses."""
    port, sport = free_port(), free_port()
    cmd = [sys.executable, "-m", "gnutella", "--bind", f"127.0.0.1:{port}", "--outgoing", "0",
           "--status", f"127.0.0.1:{sport}", "--log-level", "warning", *args]
    with server(cmd, port):
        yield ("127.0.0.1", port), ("127.0.0.1", sport)


def pin_to_core_1() -> None:
    with contextlib.suppress(OSError, ValueError):
        os.sched_setaffinity(0, {1})


def peak(rates: list[float], duration: float, connections: int, repeat: int,
         extra: list[str]) -> list[dict[str, Any]]:
    """Each rate ``repeat`` times on a fresh router: the router's rate over the window (its
    processed count / time), the loss and the p99 of all types, medians over the repeats."""
    rows = []
    for rate in rates:
        runs = []
        for k in range(repeat):
            with router(*extra) as (address, status):
                r = load(address, rate, duration, connections=connections, seed=k,
                         status=status)
            p99 = max(p["p99"] for p in r.latency.values())
            runs.append({"routed": r.router["processed"] / r.duration,
                         "sent_on": r.router["sent"] / r.duration,
                         "sent": r.sent_total / r.duration, "loss": r.loss, "p99": p99,
                         "lag_ms": r.lag_ms, "shed": r.router["shed"]})
            print(f"{rate:>9,.0f}/s #{k + 1}: {r.summary()}", flush=True)
        row = {"rate": rate, "runs": runs}
        for key in runs[0]:
            row[key] = statistics.median(run[key] for run in runs)
        rows.append(row)
    return rows


def peak_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| offered /s | sent /s | routed /s (router) | sent on /s | lost | p99 ms (worst "
             "type) | generator lag ms | runs: routed /s |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        each = ", ".join(f"{run['routed']:,.0f}" for run in r["runs"])
        lines.append(f"| {r['rate']:,.0f} | {r['sent']:,.0f} | {r['routed']:,.0f} | "
                     f"{r['sent_on']:,.0f} | {r['loss']:.2%} | {r['p99']:.1f} | "
                     f"{r['lag_ms']:.0f} | {each} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m benchmarks.gnutella_load",
                                  description=__doc__.split("\n\n")[0])
    sub = cli.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="one rate against one router")
    one.add_argument("--rate", type=float, default=1000, help="descriptors/s (default 1000)")
    one.add_argument("--duration", type=float, default=10, help="seconds (default 10)")
    one.add_argument("--connections", type=int, default=4, help="connections (default 4)")
    one.add_argument("--address", help="HOST:PORT of a running router (default: start one "
                     "on core 0)")
    one.add_argument("--status", help="HOST:PORT of that router's status page, for its "
                     "counters")
    one.add_argument("--json", action="store_true", help="print the result as JSON")
    one.add_argument("router_args", nargs="*", help="after --: options for the router "
                     "started here (e.g. -- --query-delay-ms 20)")
    pk = sub.add_parser("peak", help="the routing rate on one core, rate stepped up")
    pk.add_argument("--rates", default="25000,50000,75000,100000,125000",
                    help="offered rates, comma-separated")
    pk.add_argument("--duration", type=float, default=5, help="seconds per step")
    pk.add_argument("--repeat", type=int, default=3, help="runs per rate (medians reported)")
    pk.add_argument("--connections", type=int, default=4)
    pk.add_argument("--quick", action="store_true", help="two low rates, 1 s each, once, "
                    "nothing written (a smoke test)")
    args = cli.parse_args(argv)
    pin_to_core_1()
    if args.command == "run":
        if args.address:
            host, _, port = args.address.rpartition(":")
            st = None
            if args.status:
                shost, _, sport = args.status.rpartition(":")
                st = (shost, int(sport))
            r = load((host, int(port)), args.rate, args.duration,
                     connections=args.connections, status=st)
        else:
            with router(*args.router_args) as (address, status):
                r = load(address, args.rate, args.duration, connections=args.connections,
                         status=status)
        print(json.dumps(r.as_dict(), indent=1) if args.json else r.summary())
        return 0
    if args.quick:
        rows = peak([500, 1000], 1.0, args.connections, 1, PEAK_ROUTER)
        print(peak_table(rows))
        return 0
    rates = [float(x) for x in args.rates.split(",")]
    rows = peak(rates, args.duration, args.connections, args.repeat, PEAK_ROUTER)
    text = (f"# Gnutella router: routing rate on one core\n\nRouter (`gnutella`, default "
            f"options, no query delay) on core 0, this generator on core 1; "
            f"{args.connections} connections, each an ultrapeer that sends and reads; router "
            f"started with `{' '.join(PEAK_ROUTER)}`; "
            f"{args.duration:g} s per step, {args.repeat} runs per rate, medians. "
            f"`routed /s` is the router stage's processed count over the window; `sent on` "
            f"the descriptors it queued on connections.\n\n{peak_table(rows)}\n")
    result_path("gnutella_peak.md").write_text(text)
    result_path("gnutella_peak.json").write_text(json.dumps(rows, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
