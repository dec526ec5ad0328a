"""The ``gnutella`` command: a Gnutella 0.6 ultrapeer that routes descriptors, on the SEDA
runtime. Errors are one line that says what is wrong, never a traceback."""

from __future__ import annotations

import argparse
import logging
import queue
import signal
import sys
from collections.abc import Callable
from typing import Any

import seda

from .addresses import hostport, parse_address
from .options import Options
from .service import build

EXAMPLES = """examples:
  gnutella                                       listen on 127.0.0.1:6346, no peers
  gnutella --bind 0.0.0.0:6346 --peer 203.0.113.5:6346 --hostcache ~/.gnutella-hosts
  gnutella --bind 127.0.0.1:6347 --peer 127.0.0.1:6346 --status 127.0.0.1:8001
  gnutella --query-delay-ms 20 --router-threads 1   the thesis's bottleneck, one thread
  gnutella --query-delay-ms 20 --profile router.jsonl   then: python -m seda.model plan router.jsonl

signals: TERM or INT stop it (the host cache is saved first).
"""


def _address(any_port: bool) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse_address(text, any_port=any_port)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def _whole(low: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        if not text.strip().isdigit() or int(text) < low:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= {low}")
        return int(text)
    return convert


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds > 0")
    return value


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="gnutella", description="A Gnutella 0.6 packet router (an ultrapeer) on SEDA "
        "(Welsh's thesis, section 6.2): accepts servents, routes their pings, queries and "
        "answers, and keeps its own connections to the network.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Options()
    cli.add_argument("--bind", type=_address(True), default=defaults.bind, metavar="HOST:PORT",
                     help=f"listen here (default {hostport(*defaults.bind)}; port 0: any "
                     "free port)")
    cli.add_argument("--peer", type=_address(False), action="append", default=[],
                     metavar="HOST:PORT", help="a servent to stay connected to (repeat for "
                     "more); tried first, never forgotten")
    cli.add_argument("--hostcache", metavar="FILE",
                     help="keep the hosts learned (pongs, X-Try) in FILE across restarts")
    cli.add_argument("--max-connections", type=_whole(1), metavar="N",
                     default=defaults.max_connections,
                     help="neighbours at most; past it a servent is refused with 503 and "
                     "hosts to try (default %(default)s)")
    cli.add_argument("--outgoing", type=_whole(0), metavar="N", default=defaults.outgoing,
                     help="connections of our own to keep open (default %(default)s; 0: "
                     "dial none)")
    cli.add_argument("--query-delay-ms", type=_whole(0), metavar="N", default=0,
                     help="each query sleeps N ms in the router: the thesis's bottleneck "
                     "(6.2.3); default 0, off")
    cli.add_argument("--router-threads", type=_whole(1), metavar="N",
                     default=defaults.router_threads,
                     help="the most threads the thread pool controller may give the router "
                     "(default %(default)s; 1: a single thread, no controller)")
    cli.add_argument("--thesis-controller", action="store_true",
                     help="size the router's pool by the thesis's rule alone: a thread more "
                     "each second while 100 descriptors wait (for comparison; the default "
                     "also starts threads as soon as descriptors wait behind blocked ones)")
    cli.add_argument("--max-pending", type=_whole(1), metavar="BYTES",
                     default=defaults.max_pending,
                     help="unsent bytes a connection may hold; past it the neighbour is "
                     "too slow and is closed (default %(default)s)")
    cli.add_argument("--max-forward", type=_whole(1), metavar="BYTES",
                     default=defaults.max_forward,
                     help="the largest payload of a ping, pong, query or push sent on; larger "
                     "ones are dropped (default %(default)s: gtk-gnutella closes a connection "
                     "that sends it a query over 1 KB)")
    cli.add_argument("--handshake-timeout", type=_seconds, metavar="SECONDS",
                     default=defaults.handshake_timeout,
                     help="a connection whose handshake takes longer is closed "
                     "(default %(default)s)")
    cli.add_argument("--status", type=_address(True), metavar="HOST:PORT",
                     help="serve the live status page (/_seda/) and Prometheus metrics "
                     "(/_seda/metrics) here")
    cli.add_argument("--profile", metavar="FILE",
                     help="append the runtime's stats (queues, threads, service times) to FILE "
                     "as JSON lines, for python -m seda.profile plot and python -m seda.model "
                     "plan")
    cli.add_argument("--profile-interval", type=_seconds, metavar="SECONDS", default=1.0,
                     help="seconds between --profile samples (default %(default)s)")
    cli.add_argument("--log-level", default="info",
                     choices=["debug", "info", "warning", "error"],
                     help="what is logged to standard error (default %(default)s: each "
                     "connection closed for bad input and why)")
    return cli


def parse(argv: list[str] | None) -> tuple[Options, argparse.Namespace]:
    """The command line -> (options, the parsed arguments); a bad value exits 2 with its
    message."""
    cli = parser()
    args = cli.parse_args(argv)
    try:
        options = Options(
            host=args.bind[0], port=args.bind[1], peers=tuple(args.peer),
            hostcache=args.hostcache, max_connections=args.max_connections,
            outgoing=args.outgoing, query_delay=args.query_delay_ms / 1000,
            router_threads=args.router_threads, thesis_controller=args.thesis_controller,
            max_pending=args.max_pending, max_forward=args.max_forward,
            handshake_timeout=args.handshake_timeout, status=args.status)
    except seda.ConfigError as exc:
        cli.error(str(exc))
    return options, args


def say(message: str) -> None:
    print(f"gnutella: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    options, args = parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=args.log_level.upper(), format="gnutella: %(levelname)s %(message)s")
    signals: queue.SimpleQueue[int] = queue.SimpleQueue()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _: signals.put(signum))   # put is reentrant
    rt = seda.Runtime()
    try:
        service = build(rt, options)
    except OSError as exc:
        rt.stop()
        say(str(exc))
        return 1
    if args.profile is not None:
        try:
            open(args.profile, "a").close()     # fail here, in one line, not in start()
        except OSError as exc:
            rt.stop()
            say(f"cannot write the profile {args.profile}: {exc.strerror or exc}")
            return 1
        rt.start_profiler(args.profile, args.profile_interval)   # begins with start()
    rt.start()
    try:
        print(f"gnutella routing on {hostport(*service.address)}", flush=True)
        if service.status is not None:
            print(f"stages and metrics: http://{hostport(*service.status)}/_seda/", flush=True)
        while True:
            try:
                signals.get(timeout=1.0)
                break
            except queue.Empty:
                continue
        say("stopping")
    finally:
        rt.stop(timeout=5.0)
    return 0
