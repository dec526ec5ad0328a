"""A Gnutella overlay on loopback (issue 15): N router processes (`python -m gnutella`) joined
as a random graph of degree D, a test servent attached at every node. One servent (the asker,
at node 0) sends pings and queries; the others answer every query with a query hit and every
ping with a pong. Checked, for every descriptor the asker sent:

- reach: a query of TTL t reaches the servents at exactly the nodes within t - 2 hops of the
  asker's router, each exactly once (with TTL 7, all of them), and each router routes it once
  (its ``routed.query`` counter) and drops the other copies as duplicates;
- answers: each query hit comes back to the asker exactly once, and each pong (one per router,
  one per servent) likewise;
- memory: over a long run of queries with fresh GUIDs, the routers' RSS and routing tables
  (their ``tables`` counters) sampled now and then.

    python -m benchmarks.gnutella_overlay --quick        # 6 nodes, a few hundred queries
    python -m benchmarks.gnutella_overlay                # 20 nodes, degree 4, 20 000 queries

Writes docs/results/gnutella_overlay.md (``--out`` to change) and prints the same.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter, defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from benchmarks.gnutella_load import handshake
from benchmarks.results import result_path
from benchmarks.serving import REPO
from gnutella.descriptors import (
    PING,
    PONG,
    QUERY,
    QUERY_HIT,
    Result,
    encode_ping,
    encode_pong,
    encode_query,
    encode_query_hit,
    new_guid,
)
from gnutella.handshake import Connector, Settings
from gnutella.parser import DescriptorParser

WAIT = 20.0                   # the longest any single step waits
# servent i's pongs and hits claim port SERVENT_PORT + i, the asker tells pongs apart by port:
# below Linux's ephemeral range (32768-60999), so that no router, bound to port 0, has one
# of them (a router on 40003 made its pong and servent 3's one, and the check failed)
SERVENT_PORT = 20000


# -- the graph ---------------------------------------------------------------------------------

def regular_graph(n: int, degree: int, rng: random.Random) -> list[tuple[int, int]]:
    """A connected simple graph on ``n`` nodes, every node of ``degree`` (the pairing model,
    redrawn until simple and connected)."""
    if n * degree % 2 or degree >= n:
        raise ValueError(f"no simple {degree}-regular graph on {n} nodes")
    for _ in range(10_000):
        stubs = [v for v in range(n) for _ in range(degree)]
        rng.shuffle(stubs)
        edges = {tuple(sorted(stubs[i:i + 2])) for i in range(0, len(stubs), 2)}
        if len(edges) == n * degree // 2 and all(a != b for a, b in edges):
            graph = sorted(edges)
            if max(distances(n, graph, 0)) < n:
                return graph
    raise RuntimeError("no graph found")


def distances(n: int, edges: list[tuple[int, int]], source: int) -> list[int]:
    """Hops from ``source`` to every node (``n`` where unreachable)."""
    links: dict[int, list[int]] = defaultdict(list)
    for a, b in edges:
        links[a].append(b)
        links[b].append(a)
    dist = [n] * n
    dist[source] = 0
    todo = deque([source])
    while todo:
        v = todo.popleft()
        for w in links[v]:
            if dist[w] == n:
                dist[w] = dist[v] + 1
                todo.append(w)
    return dist


# -- the routers -------------------------------------------------------------------------------

@dataclass
class Router:
    proc: subprocess.Popen
    port: int
    status: int
    degree: int

    def stats(self, stage: str = "gnutella.router") -> dict:
        url = f"http://127.0.0.1:{self.status}/_seda/status.json"
        with urllib.request.urlopen(url, timeout=WAIT) as answer:
            return json.load(answer)["stages"][stage]["handler"]

    def rss(self) -> int:
        with open(f"/proc/{self.proc.pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def router_env() -> dict[str, str]:
    """This checkout's sources first, so that the routers run the code under test."""
    path = [str(REPO / "src"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def start_router(peers: list[int], extra: list[str]) -> Router:
    """One ``python -m gnutella`` on a free port that dials ``peers`` (ports) and no one else."""
    cmd = [sys.executable, "-m", "gnutella", "--bind", "127.0.0.1:0", "--status",
           "127.0.0.1:0", "--outgoing", str(len(peers)), "--router-threads", "1",
           "--log-level", "warning", *[a for p in peers for a in ("--peer", f"127.0.0.1:{p}")],
           *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=router_env(), cwd=REPO)
    try:
        # "gnutella routing on 127.0.0.1:P", then "stages and metrics: http://127.0.0.1:S/_seda/"
        lines = [proc.stdout.readline() for _ in range(2)]     # type: ignore[union-attr]
        port = int(lines[0].rsplit(":", 1)[1])
        status = int(lines[1].rsplit(":", 1)[1].split("/")[0])
    except (ValueError, IndexError):
        stop([proc])
        raise RuntimeError(f"a router did not start: {lines!r}") from None
    return Router(proc, port, status, degree=0)


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@contextlib.contextmanager
def overlay(n: int, degree: int, seed: int, extra: list[str] = ()
            ) -> Iterator[tuple[list[Router], list[tuple[int, int]]]]:
    """The routers joined as a random ``degree``-regular graph: router i dials its neighbours
    below i (all listening already), so the graph is exactly the one drawn."""
    edges = regular_graph(n, degree, random.Random(seed))
    routers: list[Router] = []
    try:
        for i in range(n):
            lower = [routers[a].port for a, b in edges if b == i]
            routers.append(start_router(lower, list(extra)))
        for a, b in edges:
            routers[a].degree += 1
            routers[b].degree += 1
        wait_for_neighbours(routers, extra=0)
        yield routers, edges
    finally:
        stop([r.proc for r in routers])


def wait_for_neighbours(routers: list[Router], extra: int) -> None:
    """Until every router has its graph neighbours (and ``extra`` servents) as ultrapeers."""
    deadline = time.monotonic() + WAIT * 3
    for r in routers:
        while True:
            up = r.stats("gnutella.server")["connections"]["ultrapeers"]
            if up == r.degree + extra:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"router :{r.port} has {up} neighbours, not "
                                   f"{r.degree + extra}")
            time.sleep(0.05)


# -- the servents ------------------------------------------------------------------------------

@dataclass
class Servent:
    """A servent at one node: reads in a thread of its own, answers queries with a hit and
    pings with a pong, and counts what it gets by GUID."""

    index: int
    sock: socket.socket
    answer: bool = True
    servent_id: bytes = field(default_factory=new_guid)
    queries: Counter = field(default_factory=Counter)            # query GUID -> copies
    hits: dict = field(default_factory=lambda: defaultdict(Counter))    # GUID -> id -> n
    pongs: dict = field(default_factory=lambda: defaultdict(Counter))   # GUID -> port -> n
    changed: threading.Condition = field(default_factory=threading.Condition)
    lock: threading.Lock = field(default_factory=threading.Lock)
    error: BaseException | None = None

    @classmethod
    def join(cls, index: int, port: int, *, read: bool = True,
             rcvbuf: int | None = None) -> Servent:
        """Connect and handshake; ``read=False``: never read a byte after the handshake (a
        slow reader, with a receive window of ``rcvbuf`` bytes)."""
        sock = socket.socket()
        if rcvbuf is not None:            # before connecting, so that the window stays small
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.settimeout(WAIT)
        sock.connect(("127.0.0.1", port))
        hs = Connector(Settings(user_agent="overlay-servent/1", deflate=False))
        try:
            rest = handshake(sock, hs)
        except ConnectionError as exc:
            raise RuntimeError(f"servent {index} refused: {exc}") from None
        sock.settimeout(None)
        servent = cls(index, sock)
        if read:
            threading.Thread(target=servent._read, args=(rest,), daemon=True).start()
        return servent

    def send(self, data: bytes) -> None:
        with self.lock:
            self.sock.sendall(data)

    def _read(self, first: bytes) -> None:
        parser = DescriptorParser()
        data = first
        try:
            while True:
                out = []
                descs = parser.feed(data)
                with self.changed:
                    for d in descs:
                        kind = d.payload_type
                        if kind == QUERY:
                            self.queries[d.guid] += 1
                            if self.answer:
                                out.append(encode_query_hit(
                                    d.guid, SERVENT_PORT + self.index, "127.0.0.1", 1000,
                                    [Result(self.index, 1, f"file{self.index}.txt")],
                                    self.servent_id, ttl=d.hops + 2))
                        elif kind == QUERY_HIT:
                            self.hits[d.guid][d.raw[-16:]] += 1
                        elif kind == PING:
                            out.append(encode_pong(d.guid, SERVENT_PORT + self.index,
                                                   "127.0.0.1", ttl=d.hops + 2))
                        elif kind == PONG:
                            self.pongs[d.guid][d.port] += 1
                    if descs:
                        self.changed.notify_all()
                if out:
                    self.send(b"".join(out))
                data = self.sock.recv(262144)
                if not data:
                    raise ConnectionError("the router closed the connection")
        except BaseException as exc:          # reported by the main thread
            with self.changed:
                self.error = exc
                self.changed.notify_all()

    def wait(self, done, timeout: float = WAIT) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: done() or self.error is not None, timeout)


def attach(routers: list[Router]) -> list[Servent]:
    servents = [Servent.join(i, r.port) for i, r in enumerate(routers)]
    servents[0].answer = False                 # the asker
    wait_for_neighbours(routers, extra=1)
    quiet(routers)
    return servents


def quiet(routers: list[Router], period: float = 0.3) -> None:
    """Until the routers' counters stand still for ``period``: the pings each router sends
    its new neighbours (TTL 3) have died out, and do not count in what is measured next."""
    deadline = time.monotonic() + WAIT
    last = None
    while time.monotonic() < deadline:
        now = [json.dumps(r.stats(), sort_keys=True) for r in routers]
        if now == last:
            return
        last = now
        time.sleep(period)


def expected_duplicates(edges: list[tuple[int, int]], dist: list[int], ttl: int) -> int:
    """Copies of one query the routers drop as duplicates when each copy takes a shortest
    path: every router within ``ttl - 2`` hops sends it to all its neighbours but the one it
    came from, and each router within ``ttl - 1`` keeps the first copy only."""
    degree = Counter(v for e in edges for v in e)
    sent = sum(degree[v] - (v != 0) for v in degree if dist[v] <= ttl - 2)
    return sent - sum(1 for d in dist if 1 <= d <= ttl - 1)


# -- the checks --------------------------------------------------------------------------------

def check_reach(routers: list[Router], servents: list[Servent], edges: list[tuple[int, int]],
                dist: list[int], ttl: int, count: int) -> dict:
    """``count`` queries of TTL ``ttl`` from the asker: who got each, how many times."""
    asker = servents[0]
    reached = [i for i in range(1, len(servents)) if dist[i] <= ttl - 2]
    before = [r.stats() for r in routers]
    guids = []
    for _ in range(count):
        q = encode_query("overlay reach", ttl=ttl)
        guids.append(q[:16])
        asker.send(q)
    expected = len(reached)
    asker.wait(lambda: sum(len(asker.hits[g]) for g in guids) >= expected * count)
    # hits come only from servents that got the query; let stragglers (there should be
    # none) arrive before counting: a ping of TTL 1 round trip through every router
    settle(servents)
    after = [r.stats() for r in routers]
    copies = Counter()
    wrong = 0
    for i, s in enumerate(servents):
        for g in guids:
            n = s.queries.get(g, 0)
            copies[n] += 1 if i in reached else 0
            if (n != 1) if i in reached else n:
                wrong += 1
    hit_counts = Counter(n for g in guids for n in asker.hits[g].values())
    hits_from = {g: set(asker.hits[g]) for g in guids}
    ids = {servents[i].servent_id for i in reached}
    routed = [a["routed"].get("query", 0) - b["routed"].get("query", 0)
              for a, b in zip(after, before, strict=True)]
    dups = sum(a["dropped"].get("duplicate", 0) - b["dropped"].get("duplicate", 0)
               for a, b in zip(after, before, strict=True))
    expired = sum(a["dropped"].get("expired", 0) - b["dropped"].get("expired", 0)
                  for a, b in zip(after, before, strict=True))
    return {"ttl": ttl, "queries": count, "nodes_in_reach": len(reached),
            "servents_wrong": wrong, "copies": dict(copies),
            "hits_once": all(n == 1 for n in hit_counts) and all(
                hits_from[g] == ids for g in guids),
            "hit_copies": dict(hit_counts),
            "routers_routing_each_once": sum(1 for n in routed if n == count),
            "routers_routing_none": sum(1 for n in routed if n == 0),
            "duplicates_dropped": dups,
            "duplicates_expected": count * expected_duplicates(edges, dist, ttl),
            # a copy that took a longer path and arrived first, spent, is an expiry, and lets
            # the shortest path's copy go on: one duplicate fewer (gnutella.routing)
            "expired": expired}


def check_pongs(routers: list[Router], servents: list[Servent], count: int) -> dict:
    """``count`` pings of TTL 7 from the asker: a pong from every router and every other
    servent, each exactly once."""
    asker = servents[0]
    expected = {r.port for r in routers} | {SERVENT_PORT + s.index for s in servents[1:]}
    guids = []
    for _ in range(count):
        p = encode_ping(ttl=7)
        guids.append(p[:16])
        asker.send(p)
    asker.wait(lambda: all(len(asker.pongs[g]) >= len(expected) for g in guids))
    settle(servents)
    ok = all(set(asker.pongs[g]) == expected and set(asker.pongs[g].values()) == {1}
             for g in guids)
    return {"pings": count, "pongs_expected": len(expected),
            "pongs_each_once": ok,
            "pong_copies": dict(Counter(n for g in guids for n in asker.pongs[g].values()))}


def settle(servents: list[Servent]) -> None:
    """A ping of TTL 1 to each router and its pong back: what the routers had queued for our
    servents before it has been delivered (one connection is one ordered stream)."""
    for s in servents:
        p = encode_ping(ttl=1)
        s.send(p)
        s.wait(lambda s=s, g=p[:16]: bool(s.pongs.get(g)))


def long_run(routers: list[Router], servents: list[Servent], total: int, batch: int,
             samples: int) -> dict:
    """``total`` queries with fresh GUIDs in batches of ``batch`` (each batch's hits awaited),
    the routers' RSS and routing tables sampled ``samples`` times."""
    asker, others = servents[0], servents[1:]
    rows = []
    every = max(1, total // batch // samples)
    start = time.monotonic()
    sent = late = 0
    all_guids: list[bytes] = []

    def sample() -> None:
        stats = [r.stats() for r in routers]
        rss = [r.rss() for r in routers]
        rows.append({"queries": sent, "seconds": round(time.monotonic() - start, 1),
                     "rss_mb_mean": round(sum(rss) / len(rss) / 2**20, 2),
                     "rss_mb_max": round(max(rss) / 2**20, 2),
                     "query_table_max": max(s["tables"]["queries"] for s in stats),
                     "servent_table_max": max(s["tables"]["servents"] for s in stats)})

    before = [r.stats() for r in routers]
    sample()
    for b in range(0, total, batch):
        guids = []
        out = []
        for _ in range(min(batch, total - b)):
            q = encode_query("overlay long run", ttl=7)
            guids.append(q[:16])
            out.append(q)
        asker.send(b"".join(out))
        sent += len(guids)
        all_guids.extend(guids)
        want = len(others) * len(guids)
        if not asker.wait(lambda g=guids, w=want: sum(len(asker.hits[x]) for x in g) >= w):
            late += 1
        if (b // batch + 1) % every == 0:
            sample()
    settle(servents)
    if rows[-1]["queries"] != sent:
        sample()
    seconds = time.monotonic() - start
    wrong_hits = sum(1 for g in all_guids
                     if len(asker.hits[g]) != len(others)
                     or any(n != 1 for n in asker.hits[g].values()))
    wrong_queries = sum(1 for s in others for g in all_guids if s.queries.get(g) != 1)
    copies = {s.index: Counter(s.queries.get(g, 0) for g in all_guids) for s in others}
    hits = {s.index: Counter(asker.hits[g].get(s.servent_id, 0) for g in all_guids)
            for s in others}
    after = [r.stats() for r in routers]
    dropped: Counter = Counter()
    for a, b in zip(after, before, strict=True):
        dropped.update({k: n - b["dropped"].get(k, 0) for k, n in a["dropped"].items()})
    twice = sum(1 for s in others for g in all_guids if s.queries.get(g, 0) > 1)
    twice += sum(1 for g in all_guids for n in asker.hits[g].values() if n > 1)
    missed = sum(1 for s in others for g in all_guids if g not in s.queries)
    lost = sum(1 for s in others for g in all_guids
               if s.queries.get(g) == 1 and asker.hits[g].get(s.servent_id) != 1)
    return {"queries": sent, "seconds": round(seconds, 1),
            "delivered_twice": twice, "deliveries_missed": missed, "hits_lost": lost,
            "copies_by_servent": {i: dict(c) for i, c in copies.items() if set(c) != {1}},
            "routers_dropped": dict(dropped),
            "hits_by_servent": {i: dict(c) for i, c in hits.items() if set(c) != {1}},
            "queries_per_s": round(sent / seconds, 1), "batches_late": late,
            "queries_with_wrong_hits": wrong_hits, "deliveries_not_once": wrong_queries,
            "samples": rows}


def run(n: int, degree: int, seed: int, reach: int, total: int, batch: int,
        samples: int) -> dict:
    with overlay(n, degree, seed) as (routers, edges):
        servents = attach(routers)
        try:
            dist = distances(n, edges, 0)
            result = {"nodes": n, "degree": degree, "seed": seed, "edges": edges,
                      "distances": dist}
            result["reach"] = [check_reach(routers, servents, edges, dist, ttl, reach)
                               for ttl in (7, 3, 2)]
            result["pongs"] = check_pongs(routers, servents, reach)
            result["long_run"] = long_run(routers, servents, total, batch, samples)
            errors = [repr(s.error) for s in servents if s.error is not None]
            result["servent_errors"] = errors
            closed: Counter = Counter()
            for r in routers:
                closed.update(r.stats("gnutella.server")["closed"])
            result["connections_closed"] = sum(closed.values())
            result["closed_by_reason"] = dict(closed)
            return result
        finally:
            for s in servents:
                s.sock.close()


def report(result: dict) -> str:
    lines = [f"# Gnutella overlay: {result['nodes']} routers, degree {result['degree']} "
             f"(seed {result['seed']})", "",
             f"Hops from the asker's router: {Counter(result['distances'])}", "",
             "| TTL | queries | servents in reach | deliveries not exactly once | "
             "each hit back once | routers routing each once | duplicates dropped (expected) |",
             "|---|---|---|---|---|---|---|"]
    for r in result["reach"]:
        lines.append(f"| {r['ttl']} | {r['queries']} | {r['nodes_in_reach']} | "
                     f"{r['servents_wrong']} | {r['hits_once']} | "
                     f"{r['routers_routing_each_once']} | {r['duplicates_dropped']} "
                     f"({r['duplicates_expected']}) |")
    p = result["pongs"]
    lines += ["", f"Pings: {p['pings']}, each answered by {p['pongs_expected']} pongs "
              f"(routers and servents), each back exactly once: {p['pongs_each_once']}", ""]
    lr = result["long_run"]
    lines += [f"Long run: {lr['queries']} queries with fresh GUIDs in {lr['seconds']} s "
              f"({lr['queries_per_s']} queries/s through the overlay); delivered twice "
              f"(queries or hits): {lr['delivered_twice']}; hits lost: {lr['hits_lost']}; "
              f"deliveries missed: {lr['deliveries_missed']}; queries whose hits were "
              f"not each back exactly once: {lr['queries_with_wrong_hits']}; deliveries to "
              f"servents not exactly once: {lr['deliveries_not_once']}; batches late: "
              f"{lr['batches_late']}; connections closed: {result['connections_closed']} "
              f"{result['closed_by_reason'] or ''}; the routers dropped {lr['routers_dropped']}"
              + (f"; servents that did not get every query exactly once (copies: queries): "
                 f"{lr['copies_by_servent']}" if lr["copies_by_servent"] else "")
              + (f"; servents whose hits did not each come back once (copies: queries): "
                 f"{lr['hits_by_servent']}" if lr["hits_by_servent"] else ""), "",
              "| queries sent | s | router RSS mean MB | max MB | query table max | "
              "servent table max |", "|---|---|---|---|---|---|"]
    for s in lr["samples"]:
        lines.append(f"| {s['queries']} | {s['seconds']} | {s['rss_mb_mean']} | "
                     f"{s['rss_mb_max']} | {s['query_table_max']} | "
                     f"{s['servent_table_max']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--quick", action="store_true",
                        help="6 nodes of degree 3, 20 queries per check, 600 in the long run")
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--degree", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1, help="draws the graph")
    parser.add_argument("--reach", type=int, default=100, help="queries per reach check")
    parser.add_argument("--queries", type=int, default=20_000, help="in the long run")
    parser.add_argument("--batch", type=int, default=100, help="queries sent at once")
    parser.add_argument("--samples", type=int, default=20, help="memory samples")
    parser.add_argument("--out", default="gnutella_overlay.md",
                        help="file name in docs/results/ ('-': none)")
    args = parser.parse_args(argv)
    if args.quick:
        args.nodes, args.degree, args.reach, args.queries, args.batch, args.samples = (
            6, 3, 20, 600, 50, 4)
    result = run(args.nodes, args.degree, args.seed, args.reach, args.queries, args.batch,
                 args.samples)
    text = report(result)
    print(text, end="")
    if args.out != "-":
        result_path(args.out).write_text(text)
        result_path(args.out.rsplit(".", 1)[0] + ".json").write_text(json.dumps(result))
    ok = ok_result(result)
    return 0 if ok else 1


def ok_result(result: dict) -> bool:
    """What the router promises: nothing delivered twice, no hit lost on the way back, and a
    servent missing a query only where a router got its copy with its TTL spent (counted
    ``expired``): a first copy that came the long way round with some TTL left is routed as it
    came, and a later one with more is dropped as a duplicate (a spent first copy does not
    stop the later one: see ``gnutella.routing.Routes``)."""
    lr = result["long_run"]
    return (all(r["servents_wrong"] == 0 and r["hits_once"] for r in result["reach"])
            and result["pongs"]["pongs_each_once"] and lr["delivered_twice"] == 0
            and lr["hits_lost"] == 0
            and lr["deliveries_missed"] <= lr["routers_dropped"].get("expired", 0)
            and not result["servent_errors"])


if __name__ == "__main__":
    sys.exit(main())
