"""The slow reader (thesis 6.2.2, issue 15): the router's memory while one neighbour stops
reading and others flood queries, with the threshold on each connection's unsent bytes
(``--max-pending``, 256 KiB by default) and without it (``--max-pending`` of 1 TiB). Without
it the router keeps every byte due to the silent neighbour, the thesis's out-of-memory bug;
with it the silent neighbour is closed once 256 KiB wait for it, and memory stays flat.

One router process (``python -m gnutella``); servents on loopback: one that never reads (a
4 KiB receive window), two that flood queries of 16 KiB at a fixed rate and read what comes
to them, and one that only reads and counts every query. The router's RSS and the bytes
queued for its slowest connection (``pending.largest`` in the server's counters) are sampled
every ``--every`` seconds.

    python -m benchmarks.gnutella_slow_reader --quick     # 3 s each, a small flood
    python -m benchmarks.gnutella_slow_reader             # 30 s each at 8 MB/s

Writes docs/results/gnutella_slow_reader.{md,json,png} (``--out`` to change the name).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

from benchmarks.gnutella_overlay import Router, Servent, start_router, stop
from benchmarks.results import result_path
from gnutella.descriptors import encode_query

PAYLOAD = 16 * 1024
NO_LIMIT = 2**40
MIB = 2**20


def experiment(max_pending: int, seconds: float, rate: float, every: float) -> dict:
    """One router with ``--max-pending max_pending``; ``rate`` queries/s from each of two
    flooders for ``seconds``; samples of RSS and pending bytes over time."""
    # queries of 16 KiB are not sent on by default (gtk-gnutella closes a connection that
    # sends it one over 1 KB): here they are, to fill the silent neighbour's queue
    router = start_router([], ["--max-pending", str(max_pending),
                               "--max-forward", str(2 * PAYLOAD)])
    servents: list[Servent] = []
    try:
        silent = Servent.join(0, router.port, read=False, rcvbuf=4096)
        flooders = [Servent.join(1, router.port), Servent.join(2, router.port)]
        reader = Servent.join(3, router.port)
        servents = [silent, *flooders, reader]
        for s in servents:
            s.answer = False
        wait_for(router, 4)
        samples: list[dict] = []
        done = threading.Event()
        start = time.monotonic()
        sampler = threading.Thread(target=sample, args=(router, start, every, samples, done),
                                   daemon=True)
        sampler.start()
        sent = flood(flooders, seconds, rate)
        # the tail: what is queued drains to the readers; the silent one's stays (or is gone)
        reader.wait(lambda: len(reader.queries) >= sent, timeout=30)
        time.sleep(min(2.0, seconds / 3))
        done.set()
        sampler.join(10)
        server = router.stats("gnutella.server")
        return {"max_pending": max_pending, "seconds": seconds, "rate_per_flooder": rate,
                "queries_sent": sent, "bytes_sent": sent * (PAYLOAD + 26),
                "reader_got": len(reader.queries),
                "reader_got_each_once": set(reader.queries.values()) <= {1},
                "flooders_errors": [repr(f.error) for f in flooders if f.error],
                "closed": server["closed"], "samples": samples}
    finally:
        for s in servents:
            s.sock.close()
        stop([router.proc])


def wait_for(router: Router, count: int) -> None:
    deadline = time.monotonic() + 20
    while router.stats("gnutella.server")["connections"]["ultrapeers"] < count:
        if time.monotonic() > deadline:
            raise RuntimeError("the servents did not all join")
        time.sleep(0.05)


def flood(flooders: list[Servent], seconds: float, rate: float) -> int:
    """Queries of PAYLOAD bytes from each flooder, ``rate`` a second each, paced every 10 ms;
    how many were sent in all."""
    tick = 0.01
    per_tick = rate * tick
    start = time.monotonic()
    sent = 0
    owed = 0.0
    while (now := time.monotonic()) - start < seconds:
        owed += per_tick
        n = int(owed)
        owed -= n
        for f in flooders:
            if n:
                f.send(b"".join(encode_query(b"x" * PAYLOAD, ttl=2) for _ in range(n)))
                sent += n
        time.sleep(max(0.0, start + (now - start) + tick - time.monotonic()))
    return sent


def sample(router: Router, start: float, every: float, out: list[dict],
           done: threading.Event) -> None:
    while not done.is_set():
        t = time.monotonic() - start
        try:
            server = router.stats("gnutella.server")
            out.append({"t": round(t, 2), "rss": router.rss(),
                        "pending": server["pending"]["largest"],
                        "pending_all": server["pending"]["bytes"],
                        "connections": server["connections"]["ultrapeers"]})
        except OSError:
            pass
        done.wait(every)


def plot(runs: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for run, style in zip(runs, ("-", "--"), strict=False):
        label = ("no threshold" if run["max_pending"] >= NO_LIMIT
                 else f"--max-pending {run['max_pending'] // 1024} KiB")
        ts = [s["t"] for s in run["samples"]]
        top.plot(ts, [s["rss"] / MIB for s in run["samples"]], style, label=label)
        bottom.plot(ts, [s["pending"] / MIB for s in run["samples"]], style, label=label)
    top.set_ylabel("router RSS (MiB)")
    bottom.set_ylabel("bytes queued for the\nslow connection (MiB)")
    bottom.set_xlabel("seconds")
    top.set_title("Gnutella router, one neighbour that never reads, two that flood")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(runs: list[dict]) -> str:
    lines = ["# Gnutella router: a neighbour that never reads (thesis 6.2.2)", "",
             "| --max-pending | flood | queries sent | reader got | RSS start MiB | "
             "RSS peak MiB | queued for the slow one, peak MiB | closed | at s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        s = r["samples"]
        limit = "none (1 TiB)" if r["max_pending"] >= NO_LIMIT else f"{r['max_pending']}"
        lines.append(
            f"| {limit} | {r['bytes_sent'] / MIB / r['seconds']:.1f} MiB/s x {r['seconds']:g} s "
            f"| {r['queries_sent']} | {r['reader_got']} | {s[0]['rss'] / MIB:.1f} | "
            f"{max(x['rss'] for x in s) / MIB:.1f} | {max(x['pending'] for x in s) / MIB:.2f} "
            f"| {r['closed'] or '-'} | {closed_at(s)} |")
    return "\n".join(lines) + "\n"


def closed_at(samples: list[dict]) -> str:
    """When the slow neighbour went: the first sample with fewer connections than the first."""
    for x in samples:
        if x["connections"] < samples[0]["connections"]:
            return f"{x['t']:g}"
    return "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--quick", action="store_true", help="3 s each at 50 queries/s")
    parser.add_argument("--seconds", type=float, default=30.0, help="of flood, each run")
    parser.add_argument("--rate", type=float, default=250.0,
                        help="queries/s from each of the two flooders (16 KiB each)")
    parser.add_argument("--every", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--max-pending", type=int, default=256 * 1024,
                        help="the threshold of the run with one")
    parser.add_argument("--out", default="gnutella_slow_reader",
                        help="file names in docs/results/ ('-': none)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.rate, args.every = 3.0, 50.0, 0.1
    runs = [experiment(limit, args.seconds, args.rate, args.every)
            for limit in (args.max_pending, NO_LIMIT)]
    text = report(runs)
    print(text, end="")
    if args.out != "-":
        result_path(f"{args.out}.md").write_text(text)
        result_path(f"{args.out}.json").write_text(json.dumps(runs))
        plot(runs, str(result_path(f"{args.out}.png")))
    ok = all(r["reader_got"] == r["queries_sent"] and r["reader_got_each_once"]
             for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
