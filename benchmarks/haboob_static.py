"""Haboob beside nginx and uvicorn on the static workloads refbench's 1 KB file leaves out
(issue 20): a 100 KB and a 1 MiB file, refbench's 1 KB file with a new connection for every
request, TLS with 1 KB and 1 MiB files, and a SPECweb99 file set larger than Haboob's page
cache, so that its miss path works. Each server alone on core 0, wrk -t1 on core 1,
keep-alive connections (but for ``close``), every point repeated for medians.

    python -m benchmarks.haboob_static [--runs 5] [--seconds 6] [--conns 64,1024]
        [--workloads 100k,1m,close,tls-1k,tls-1m,specweb] [--servers nginx,uvicorn,haboob]
        [--fileset-mb 2000] [--cache-mb 200] [--out DIR]

The servers run as refbench.sh runs them: Haboob with its defaults over the files (``--root``),
nginx with one worker, sendfile and an open-file cache, uvicorn (uvloop, httptools) with
refbench's application answering from memory (``benchmarks.asgi_apps:file_answer``). Over TLS
all three use one throwaway ECDSA P-256 certificate (``benchmarks.certs``). The
SPECweb99 mix (the file set and path draws of ``benchmarks.loadgen``, taken in turn by a wrk
script) is measured on Haboob and nginx: refbench's uvicorn serves one file from memory.

Reports each server's median requests per second and p99, the medians of Haboob's per-run
ratios to the others, and for the mix MiB/s and how many events per request went to Haboob's
``haboob.miss`` stage's threads (the loads and rechecks that would have waited for the disk:
what the kernel has cached is loaded and rechecked on the loop).
Writes haboob_static.md and haboob_static.json in docs/results/ (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shlex
import shutil
import socket
import ssl
import statistics
import sys
import tempfile
import time
import urllib.request
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import certs, wrk
from benchmarks.asgi_apps import BODY
from benchmarks.loadgen import make_fileset, specweb99
from benchmarks.results import RESULTS
from benchmarks.serving import free_port, server
from benchmarks.steal import Steal, describe
from benchmarks.webstudy.servers import nginx_binary, nginx_command

SERVERS = ("nginx", "uvicorn", "haboob")
LOCAL = "127.0.0.1"
MIX_PATHS = 600_000         # enough that no run of a point repeats the sequence another ran
SEED = 7
MAX_ENTRY = 2**20           # Haboob caches files up to this size (Options.max_entry)


@dataclass(frozen=True)
class Workload:
    label: str                      # as the table names it
    tls: bool
    file: str | None                # the one file requested; None: the SPECweb99 mix
    size: int                       # its bytes
    servers: tuple[str, ...]        # the servers it applies to
    close: bool = False             # each request on a new connection (Connection: close)


WORKLOADS = {
    "100k": Workload("100 KB file", False, "100k.html", 100 * 1024, SERVERS),
    "1m": Workload("1 MiB file", False, "1m.html", 2**20, SERVERS),
    "close": Workload("1 KB file, a connection each", False, "1k.html", len(BODY), SERVERS,
                      close=True),
    "tls-1k": Workload("TLS, 1 KB file", True, "1k.html", len(BODY), SERVERS),
    "tls-1m": Workload("TLS, 1 MiB file", True, "1m.html", 2**20, SERVERS),
    "specweb": Workload("SPECweb99 mix", False, None, 0, ("nginx", "haboob")),
}


@dataclass(frozen=True)
class Settings:
    workloads: list[str]
    servers: list[str]
    conns: list[int]
    runs: int
    seconds: int
    warmup: int                     # seconds of load before a server's first point (0: none)
    fileset_mb: float
    cache_mb: float

    def points(self) -> int:
        """Measurements per run: the servers each workload applies to, times connections."""
        return sum(len(set(WORKLOADS[w].servers) & set(self.servers))
                   for w in self.workloads) * len(self.conns)

    def estimate_s(self) -> float:
        """The whole run: every point, and per server start about 2 s and the warm-up."""
        starts = self.points() // len(self.conns)
        return self.runs * (self.points() * self.seconds + starts * (2 + self.warmup))


@dataclass(frozen=True)
class Site:
    work: Path
    root: Path                      # the files: the single ones, and specweb/ for the mix
    cert: tuple[Path, Path]         # certificate and key (PEM)
    script: Path | None             # wrk's script taking the mix's paths in turn


def letters(size: int, seed: int = SEED) -> bytes:
    """``size`` random letters, as refbench's 1 KB file is made."""
    return bytes(random.Random(seed).choices(b"abcdefghij", k=size))


def lru_misses(paths: list[str], root: Path, budget: int) -> tuple[float, float]:
    """The share of requests and of bytes an LRU cache of ``budget`` bytes (files up to
    MAX_ENTRY) misses over ``paths`` taken in turn, once around to fill it and once counted:
    how far the file set exceeds the cache for this sequence, apart from Haboob's details."""
    sizes = {p: (root / p.lstrip("/")).stat().st_size for p in set(paths)}
    cache: OrderedDict[str, int] = OrderedDict()
    used = missed = missed_bytes = total_bytes = 0
    for counted in (False, True):
        for p in paths:
            size = sizes[p]
            total_bytes += size * counted
            if p in cache:
                cache.move_to_end(p)
                continue
            missed, missed_bytes = missed + counted, missed_bytes + size * counted
            if size <= min(MAX_ENTRY, budget):
                while used + size > budget:
                    used -= cache.popitem(last=False)[1]
                cache[p] = size
                used += size
    return missed / len(paths), missed_bytes / total_bytes


def build_site(work: Path, settings: Settings) -> tuple[Site, dict[str, Any]]:
    """The files, the certificate and the mix's wrk script; and what the mix is (for the
    results: its size, the cache's, the LRU misses of its sequence)."""
    work.chmod(0o755)               # nginx's worker runs as nobody and must read the files
    root = work / "www"
    root.mkdir()
    for w in WORKLOADS.values():
        if w.file is not None:
            (root / w.file).write_bytes(BODY if w.file == "1k.html" else letters(w.size))
    script, mix = None, {}
    if "specweb" in settings.workloads:
        dirs = make_fileset(root / "specweb", int(settings.fileset_mb * 2**20))
        rng = random.Random(SEED)
        draw = specweb99(dirs, prefix="/specweb/").path
        paths = [draw(rng) for _ in range(MIX_PATHS)]
        script = wrk.path_script(paths, work)
        fileset = sum(f.stat().st_size for f in (root / "specweb").rglob("*") if f.is_file())
        requests, volume = lru_misses(paths, root, int(settings.cache_mb * 2**20))
        mix = {"fileset_mb": fileset / 2**20, "dirs": dirs, "cache_mb": settings.cache_mb,
               "paths": MIX_PATHS, "lru_request_misses": requests, "lru_byte_misses": volume}
    _, cert, key = certs.make(work)
    return Site(work, root, (cert, key), script), mix


def command(name: str, w: Workload, site: Site, port: int, cache_mb: float
            ) -> tuple[list[str], dict[str, str] | None]:
    """A server's command line and environment (None: this one's) for workload ``w``."""
    tls = site.cert if w.tls else None
    if name == "haboob":
        cmd = [sys.executable, "-m", "haboob", "--root", str(site.root),
               "--bind", f"{LOCAL}:{port}", "--cache-mb", f"{cache_mb:g}"]
        return cmd + (["--certfile", str(tls[0]), "--keyfile", str(tls[1])] if tls else []), None
    if name == "nginx":
        return nginx_command(str(site.root), port, site.work, tls=tls, open_files=1000), None
    assert w.file is not None, "uvicorn answers one file"
    cmd = [sys.executable, "-m", "uvicorn", "benchmarks.asgi_apps:file_answer", "--factory",
           "--host", LOCAL, "--port", str(port), "--loop", "uvloop", "--http", "httptools",
           "--no-access-log", "--log-level", "warning"]
    if tls:
        cmd += ["--ssl-certfile", str(tls[0]), "--ssl-keyfile", str(tls[1])]
    return cmd, dict(os.environ, BENCH_FILE=str(site.root / w.file))


def negotiated(port: int) -> str:
    """The protocol and cipher a default client agrees on with the server on ``port``."""
    client = ssl.create_default_context()
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection((LOCAL, port), 5) as raw, \
            client.wrap_socket(raw) as tls:
        return f"{tls.version()} {tls.cipher()[0]}"


def miss_events(port: int) -> int:
    """Events Haboob's haboob.miss stage has handled so far."""
    with urllib.request.urlopen(f"http://{LOCAL}:{port}/_seda/stats.json", timeout=10) as r:
        return int(json.load(r)["haboob.miss"]["processed"])


def measure_server(name: str, key: str, site: Site, settings: Settings,
                   tls: dict[str, str]) -> list[dict[str, Any]]:
    """Start ``name`` for workload ``key``, warm it up, and measure each connection count;
    the mix's points each start at their own place in its sequence of paths."""
    w = WORKLOADS[key]
    port = free_port()
    cmd, env = command(name, w, site, port, settings.cache_mb)
    url = f"{'https' if w.tls else 'http'}://{LOCAL}:{port}/{w.file or ''}"
    script = None if w.file else site.script
    stride = MIX_PATHS // (len(settings.conns) + 1)
    records = []
    with server(cmd, port, env):
        if w.tls and name not in tls:
            tls[name] = negotiated(port)
        headers = ("Connection: close",) if w.close else ()
        if settings.warmup:                  # (as measured: a server may keep what it saw)
            wrk.measure(url, 16, settings.warmup, script, headers=headers)
        for i, conns in enumerate(settings.conns, 1):
            counting = name == "haboob" and w.file is None
            before = miss_events(port) if counting else 0
            m = wrk.measure(url, conns, settings.seconds, script, start=i * stride,
                            headers=headers)
            record = {"workload": key, "server": name, "conns": conns, **asdict(m)}
            if counting:
                record["miss_events"] = miss_events(port) - before
            records.append(record)
    return records


def _median(runs: list[list[dict[str, Any]]], key: str, server: str, conns: int,
            field: str) -> float | None:
    values = [r[field] for run in runs for r in run
              if (r["workload"], r["server"], r["conns"]) == (key, server, conns)]
    return statistics.median(values) if values else None


def _ratio(runs: list[list[dict[str, Any]]], key: str, other: str, conns: int) -> float | None:
    """The median over runs of Haboob's requests/s over ``other``'s in the same run."""
    ratios = []
    for run in runs:
        rps = {r["server"]: r["rps"] for r in run if (r["workload"], r["conns"]) == (key, conns)}
        if "haboob" in rps and other in rps:
            ratios.append(rps["haboob"] / rps[other])
    return statistics.median(ratios) if ratios else None


def markdown(results: dict[str, Any]) -> str:
    """The results file: medians of every point, Haboob's ratios, the mix's details, errors."""
    s, runs = results["settings"], results["runs"]
    names = [n for n in SERVERS if n in s["servers"]]
    others = [n for n in names if n != "haboob"] if "haboob" in names else []
    lines = [
        "# Haboob on static files beside nginx and uvicorn (issue 20)", "",
        f"Measured {results['date']} on {results['machine']}, with", "",
        f"    {results['command']}", "",
        f"Medians of {s['runs']} runs of {s['seconds']} s per point; each server alone on core "
        f"0, wrk -t1 on core 1, keep-alive connections, {s['warmup']} s of warm-up per server "
        f"start. Cells are requests/s (p99 ms); ratios are medians of Haboob's per-run ratios. "
        + describe(results.get("steal")),
        "", "| workload | connections | " + " | ".join(f"{n} req/s (p99 ms)" for n in names)
        + "".join(f" | haboob / {n}" for n in others) + " |",
        "|---|---:|" + "---:|" * (len(names) + len(others))]
    for key in s["workloads"]:
        for conns in s["conns"]:
            cells = []
            for n in names:
                rps = _median(runs, key, n, conns, "rps")
                p99 = _median(runs, key, n, conns, "p99_ms")
                cells.append("-" if rps is None or p99 is None else f"{rps:,.0f} ({p99:.1f})")
            for n in others:
                ratio = _ratio(runs, key, n, conns)
                cells.append("-" if ratio is None else f"{ratio:.2f}x")
            lines.append(f"| {WORKLOADS[key].label} | {conns} | " + " | ".join(cells) + " |")
    if results["tls"]:
        lines += ["", "TLS as a default Python client negotiates it: " + "; ".join(
            f"{n} {v}" for n, v in results["tls"].items()) + "."]
    if mix := results["mix"]:
        lines += [
            "", "## The SPECweb99 mix", "",
            f"{mix['fileset_mb']:.0f} MiB in {mix['dirs']} directories of 36 files (102 B to "
            f"900 KiB), Haboob's page cache {mix['cache_mb']:g} MiB; {mix['paths']:,} paths "
            f"drawn as SPECweb99 does (Zipf over directories, seed {SEED}), taken in turn. Over "
            f"this sequence an LRU cache of that size misses {mix['lru_request_misses']:.1%} "
            f"of the requests and {mix['lru_byte_misses']:.1%} of the bytes. Haboob reads a "
            f"miss whole and caches it, on its loop when the kernel has the file cached and in "
            f"its haboob.miss stage's threads otherwise; nginx sends every file with "
            f"sendfile.", "",
            "| connections | " + " | ".join(f"{n} MiB/s" for n in names if n != "uvicorn")
            + " | haboob.miss events / request |",
            "|---:|" + "---:|" * (len([n for n in names if n != "uvicorn"]) + 1)]
        for conns in s["conns"]:
            cells = []
            for n in names:
                if n != "uvicorn":
                    rate = _median(runs, "specweb", n, conns, "mib_s")
                    cells.append("-" if rate is None else f"{rate:,.1f}")
            events = [r["miss_events"] / r["requests"] for run in runs for r in run
                      if r["workload"] == "specweb" and r["conns"] == conns
                      and "miss_events" in r]
            cells.append(f"{statistics.median(events):.3f}" if events else "-")
            lines.append(f"| {conns} | " + " | ".join(cells) + " |")
    faults = [f"{r['server']}, {WORKLOADS[r['workload']].label}, {r['conns']} connections, run "
              f"{i}: " + ", ".join(f"{k} {v}" for k, v in r["errors"].items())
              for i, run in enumerate(runs, 1) for r in run if r["errors"]]
    lines += ["", "## Errors", ""] + ([f"- {f}" for f in faults] or ["None in any run."])
    return "\n".join(lines) + "\n"


def _raise_fd_limit() -> None:
    """1024 connections need more descriptors than a default soft limit; servers inherit it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def parse(argv: list[str] | None) -> tuple[Settings, Path]:
    def names(text: str) -> list[str]:
        return [x for x in text.split(",") if x]

    parser = argparse.ArgumentParser(prog="python -m benchmarks.haboob_static",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=6, help="per point (whole seconds; 6)")
    parser.add_argument("--conns", type=lambda t: [int(x) for x in names(t)], default=[64, 1024],
                        help="connection counts (64,1024)")
    parser.add_argument("--workloads", type=names, default=list(WORKLOADS),
                        help=f"some of {','.join(WORKLOADS)} (all)")
    parser.add_argument("--servers", type=names, default=list(SERVERS),
                        help=f"some of {','.join(SERVERS)} (all)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="seconds of load before a server's first point (1)")
    parser.add_argument("--fileset-mb", type=float, default=2000.0,
                        help="the SPECweb99 file set, MiB (2000)")
    parser.add_argument("--cache-mb", type=float, default=200.0,
                        help="Haboob's page cache, MiB (200, its default)")
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help="directory for haboob_static.md and .json (docs/results)")
    args = parser.parse_args(argv)
    for what, given, known in (("workload", args.workloads, WORKLOADS),
                               ("server", args.servers, SERVERS)):
        if not given or set(given) - set(known):
            parser.error(f"{what}s are some of {', '.join(known)}")
    if args.runs < 1 or args.seconds < 1 or args.warmup < 0 or not args.conns \
            or min(args.conns) < 1:
        parser.error("--runs, --seconds and --conns must be positive")
    for tool in ("wrk", "taskset"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is needed (Debian: apt-get install {tool})")
    if "nginx" in args.servers and nginx_binary() is None:
        parser.error("nginx is not installed (apt-get install nginx-light), or leave it out "
                     "with --servers")
    settings = Settings([w for w in WORKLOADS if w in args.workloads],
                        [n for n in SERVERS if n in args.servers], args.conns, args.runs,
                        args.seconds, args.warmup, args.fileset_mb, args.cache_mb)
    args.out.mkdir(parents=True, exist_ok=True)
    return settings, args.out


def main(argv: list[str] | None = None) -> int:
    settings, out = parse(argv)
    print(f"{settings.runs} runs x {settings.points()} points x {settings.seconds} s: about "
          f"{settings.estimate_s() / 60:.0f} min, after writing the files", flush=True)
    _raise_fd_limit()
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Linux "
                   f"{platform.release()}, Python {platform.python_version()}",
        "command": shlex.join(["python", "-m", "benchmarks.haboob_static",
                               *(argv if argv is not None else sys.argv[1:])]),
        "settings": asdict(settings), "tls": {}, "mix": {}, "runs": []}
    with tempfile.TemporaryDirectory(prefix="haboob-static-") as tmp, Steal() as steal:
        site, results["mix"] = build_site(Path(tmp), settings)
        for i in range(settings.runs):
            run: list[dict[str, Any]] = []
            for key in settings.workloads:
                for name in settings.servers:
                    if name in WORKLOADS[key].servers:
                        run += measure_server(name, key, site, settings, results["tls"])
            results["runs"].append(run)
            print(f"run {i + 1}: " + ", ".join(f"{r['server']}/{r['workload']}@{r['conns']}="
                                               f"{r['rps']:.0f}" for r in run), flush=True)
    results["steal"] = steal.share
    (out / "haboob_static.json").write_text(json.dumps(results, indent=1) + "\n")
    text = markdown(results)
    (out / "haboob_static.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
