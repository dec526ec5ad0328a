"""Cluster stages on Redis Streams (``seda.cluster``, issue 18): events per second through a
cluster stage with 1, 2 and 3 consumer processes; the latency of one hop through Redis against
one through a local queue; and the recovery time after a node dies (from its SIGKILL until the
batches it held have been handled by another node).

    python -m benchmarks.cluster_hop              # 200,000 events per run, 2,000 hops
    python -m benchmarks.cluster_hop --quick      # a short look, seconds: what the test runs
    python -m benchmarks.cluster_hop --redis redis://127.0.0.1:6379/0

Without ``--redis`` a throwaway ``redis-server`` is started (``benchmarks/redis_server.py``).
Each consumer process runs the stage with ``--threads`` threads; its handler adds each batch's
size to a counter in Redis (one round trip per batch), so the rate is the queue's.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import redis

import seda
from seda.cluster import RedisQueue

ROOT = Path(__file__).resolve().parents[1]
STREAM = "bench"


class Count(seda.EventHandler):
    """A consumer node's handler: one INCRBY per batch."""

    def __init__(self, url: str) -> None:
        self.url = url

    def init(self, ctx: seda.StageContext) -> None:
        self.client = redis.Redis.from_url(self.url)

    def handle_events(self, events: list[Any]) -> None:
        self.client.incrby("handled", len(events))

    def destroy(self) -> None:
        self.client.close()


def run_node(name: str, handler: seda.EventHandler, queue: RedisQueue, threads: int) -> None:
    """This process as one node of a cluster stage: runs until SIGTERM; says "ready" on
    stdout once consuming (what ``start_nodes`` waits for)."""
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    rt = seda.Runtime()
    rt.add_stage(name, handler, threads=threads, batch=64, queue=queue)
    with rt:
        print("ready", flush=True)
        done.wait()


def node(url: str, threads: int, claim_idle: float) -> None:
    """A consumer process of the benchmark."""
    run_node("bench", Count(url),
             RedisQueue(url, stream=STREAM, group="bench", claim_idle=claim_idle), threads)


def start_nodes(url: str, count: int, threads: int, claim_idle: float) -> list[Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    procs = [subprocess.Popen([sys.executable, "-m", "benchmarks.cluster_hop", "--node", url,
                               "--threads", str(threads), "--claim-idle", str(claim_idle)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(count)]
    for proc in procs:
        if proc.stdout.readline().strip() != "ready":
            stop_nodes(procs)
            raise RuntimeError("a consumer process did not start")
    return procs


def stop_nodes(procs: list[Any]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def producer(url: str) -> seda.Sink:
    """The stage's sink on a runtime of this process that consumes nothing (an enqueue is an
    XADD whether or not the runtime runs)."""
    return seda.Runtime().add_stage(
        "bench", seda.EventHandler(), queue=RedisQueue(url, stream=STREAM, group="bench")).sink


def wait_until(check: Any, limit: float) -> None:
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("gave up waiting")
        time.sleep(0.005)


def throughput(url: str, processes: int, events: int, threads: int) -> float:
    """Events per second from the first enqueue to the last acknowledgement."""
    client = redis.Redis.from_url(url)
    client.flushall()
    procs = start_nodes(url, processes, threads, 30.0)
    try:
        sink = producer(url)
        start = time.perf_counter()
        for first in range(0, events, 1000):
            sink.enqueue_many(range(first, min(events, first + 1000)))
        wait_until(lambda: int(client.get("handled") or 0) >= events, 600)
        return events / (time.perf_counter() - start)
    finally:
        stop_nodes(procs)
        client.close()


class Hop(seda.EventHandler):
    def __init__(self) -> None:
        self.arrived = threading.Event()

    def handle_event(self, ev: Any) -> None:
        self.arrived.set()


def hop(url: str | None, hops: int) -> list[float]:
    """Microseconds from an enqueue to the handler, one event at a time; through Redis with a
    url, else through a local thread pool's queue."""
    handler = Hop()
    samples = []
    with seda.Runtime() as rt:
        queue = RedisQueue(url, stream="hop") if url else None
        sink = rt.add_stage("hop", handler, queue=queue).sink
        for i in range(hops):
            handler.arrived.clear()
            start = time.perf_counter()
            sink.enqueue(i)
            handler.arrived.wait(10)
            samples.append((time.perf_counter() - start) * 1e6)
    return samples


def recovery(url: str, claim_idle: float) -> float:
    """Seconds from a node's SIGKILL, with batches in hand, until every one of them has been
    handled by the other node (events flow in all along)."""
    client = redis.Redis.from_url(url)
    client.flushall()
    procs = start_nodes(url, 2, 2, claim_idle)
    flowing = threading.Event()
    flowing.set()

    def produce() -> None:
        sink = producer(url)
        while flowing.is_set():
            sink.enqueue_many(range(100))

    feeder = threading.Thread(target=produce)
    feeder.start()
    try:
        victim = f":{procs[0].pid}:"

        def held() -> int:
            consumers = client.xpending(STREAM, "bench")["consumers"]
            return sum(c["pending"] for c in consumers if victim in c["name"].decode())

        def frozen_holding() -> bool:
            """SIGSTOP the node; True if it holds batches then (two looks agreeing: a
            command it sent before stopping reaches Redis before ours), else let it go on."""
            procs[0].send_signal(signal.SIGSTOP)
            if held() > 0 and held() > 0:
                return True
            procs[0].send_signal(signal.SIGCONT)
            return False

        wait_until(frozen_holding, 60)
        procs[0].send_signal(signal.SIGKILL)
        killed = time.perf_counter()
        procs[0].wait()
        wait_until(lambda: held() == 0, 60 + 10 * claim_idle)
        return time.perf_counter() - killed
    finally:
        flowing.clear()
        feeder.join()
        stop_nodes(procs)
        client.close()


def run(url: str, events: int, hops: int, threads: int, claim_idle: float) -> dict[str, Any]:
    rates = {n: throughput(url, n, events, threads) for n in (1, 2, 3)}
    local, cluster = hop(None, hops), hop(url, hops)
    return {"events": events, "threads": threads, "rates": rates,
            "local_us": statistics.median(local), "cluster_us": statistics.median(cluster),
            "claim_idle": claim_idle, "recovery_s": recovery(url, claim_idle)}


def report(result: dict[str, Any]) -> str:
    lines = [f"{result['events']:,} events per run, {result['threads']} threads per process",
             "consumer processes   events/s"]
    lines += [f"{n:>18}   {rate:>8,.0f}" for n, rate in result["rates"].items()]
    lines += [f"one hop, median: local queue {result['local_us']:,.0f} us, "
              f"cluster queue {result['cluster_us']:,.0f} us",
              f"recovery after SIGKILL (claim_idle {result['claim_idle']} s): "
              f"{result['recovery_s']:.2f} s"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="5,000 events, 200 hops: seconds, for the test")
    parser.add_argument("--redis", metavar="URL", help="a Redis to use (default: start one)")
    parser.add_argument("--events", type=int, default=200_000, help="events per run")
    parser.add_argument("--hops", type=int, default=2000, help="single hops timed")
    parser.add_argument("--threads", type=int, default=2, help="threads per consumer process")
    parser.add_argument("--claim-idle", type=float, default=1.0,
                        help="seconds before a dead node's batches are taken over")
    parser.add_argument("--node", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.node:
        node(args.node, args.threads, args.claim_idle)
        return
    events, hops = (5000, 200) if args.quick else (args.events, args.hops)
    if args.redis:
        print(report(run(args.redis, events, hops, args.threads, args.claim_idle)))
        return
    from benchmarks.redis_server import RedisServer
    with RedisServer() as server:
        print(report(run(server.url, events, hops, args.threads, args.claim_idle)))


if __name__ == "__main__":
    main()
