"""The ``haboob`` command: serve static files and WSGI applications on the SEDA runtime."""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import signal
import ssl
import sys
from typing import Any

import seda
from seda.http import Limits
from seda.status import served_at

from .access_log import Reopen
from .cache import POLICIES
from .server import SERVICE, Options, build
from .supervisor import Supervisor, reserve, say

EXAMPLES = """examples:
  haboob --root ./public                       static files on 127.0.0.1:8000
  haboob myproject.wsgi:application            a WSGI application at /
  haboob myapp:app --root ./static             files that exist win, the app gets the rest
  haboob --root site --mount /api=api:app --bind 0.0.0.0:8080
  haboob myapp:app --workers 4 --target-p90 100   4 processes, p90 held near 100 ms

signals: TERM or INT stop accepting, give the requests in flight --graceful-timeout seconds to
finish, and exit; HUP reopens the access log (after rotation).
"""


def load_app(ref: str) -> Any:
    """``module:attribute`` -> the object, with the working directory importable (as uvicorn
    and gunicorn do)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    obj = seda.import_object(ref)
    if not callable(obj):
        raise ValueError(f"{ref} is not callable, so not a WSGI application")
    return obj


def size(text: str) -> int:
    """A size in bytes for the command line: ``65536``, ``64K``, ``10M``, ``1G``."""
    number, unit = text[:-1], text[-1:].upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(unit)
    if scale is None:
        number, scale = text, 1
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (bytes, or 64K, 10M, 1G)") \
            from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a size must be > 0")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds must be > 0")
    return value


def tls_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    """A server context, or ValueError naming the file that is wrong (OpenSSL says only
    'PEM lib')."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(certfile, keyfile)
    except OSError as exc:
        if not isinstance(exc, ssl.SSLError):
            raise ValueError(f"cannot read {exc.filename or certfile}: {exc.strerror}") from None
        with open(certfile, "rb") as f:
            is_certificate = b"-----BEGIN CERTIFICATE-----" in f.read()
        if not is_certificate:
            raise ValueError(f"{certfile} is not a PEM certificate chain") from None
        if "MISMATCH" in (exc.reason or ""):
            raise ValueError(f"the key {keyfile} is not the key of {certfile}") from None
        raise ValueError(f"{keyfile} is not a PEM private key for {certfile}") from None
    return context


def hostport(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets (as in a URL)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# seda.http.Limits fields the command line sets: (field, type, help)
LIMIT_FLAGS = (
    ("max_body", size, "largest request body (default 1G)"),
    ("max_request_line", size, "longest request target (default 8K)"),
    ("max_header_bytes", size, "largest header section (default 64K)"),
    ("max_headers", int, "most header fields (default 100)"),
    ("header_timeout", seconds, "seconds from a request's first byte to its last header "
     "(default 10)"),
    ("body_timeout", seconds, "seconds a request body may stall (default 60)"),
    ("keepalive_timeout", seconds, "seconds an idle connection stays open (default 15)"),
    ("response_timeout", seconds, "seconds before a request the application never answers "
     "gets 500 (default 60)"),
    ("max_connections", int, "open connections; more get 503 (default 16384)"),
)


def parse(argv: list[str] | None) -> tuple[Options, int, int | None]:
    """The command line -> (options, worker processes, the supervisor's ready pipe if this
    process is one of its workers)."""
    parser = argparse.ArgumentParser(
        prog="haboob", description="Haboob: the SEDA web server, static files and WSGI.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("app", nargs="?", help="WSGI application at /, as module:attribute")
    parser.add_argument("--root", help="serve static files from this directory")
    parser.add_argument("--bind", default="127.0.0.1:8000", help="HOST:PORT (default %(default)s)")
    parser.add_argument("--mount", action="append", default=[], metavar="PREFIX=APP",
                        help="another WSGI application at PREFIX (repeatable)")
    parser.add_argument("--cache-mb", type=float, default=200, help="page cache budget, MB "
                        "(default %(default)s)")
    parser.add_argument("--cache-policy", choices=sorted(POLICIES), default="lru",
                        help="page cache replacement (default %(default)s)")
    parser.add_argument("--threads", type=int, default=16,
                        help="most threads per application and for disk reads (default 16)")
    parser.add_argument("--access-log", metavar="FILE", help="log requests here ('-': stdout)")
    parser.add_argument("--certfile", help="serve HTTPS with this certificate chain (PEM)")
    parser.add_argument("--keyfile", help="the certificate's private key (PEM)")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes sharing the port with SO_REUSEPORT, restarted if they "
                        "die (default 1: no supervisor)")
    parser.add_argument("--target-p90", type=float, metavar="MS",
                        help="hold each application's 90th-percentile response time near MS "
                        "milliseconds; requests over the bound get 503 with Retry-After")
    parser.add_argument("--class-header", metavar="NAME",
                        help="with --target-p90: request class 0-9 (9 served first under load) "
                        "from header NAME, or from a cookie with cookie:NAME")
    parser.add_argument("--graceful-timeout", type=seconds, default=30.0, metavar="SECONDS",
                        help="on TERM or INT, how long requests in flight may take to finish "
                        "before they are cut (default %(default)s)")
    parser.add_argument("--underscore-headers", action="store_true",
                        help="pass header names with '_' to applications (dropped by default: "
                        "X_Forwarded_For would reach them as X-Forwarded-For)")
    defaults = Limits()
    limits = parser.add_argument_group(
        "limits", "what a client may send and how long it may take; past a limit the request "
        "gets its status (413, 414, 431, 408) and the connection closes. SIZE takes K, M, G.")
    for name, kind, help_text in LIMIT_FLAGS:
        limits.add_argument("--" + name.replace("_", "-"), type=kind,
                            default=getattr(defaults, name),
                            metavar={size: "SIZE", seconds: "SECONDS", int: "N"}[kind],
                            help=help_text)
    status = parser.add_mutually_exclusive_group()
    status.add_argument("--no-status", action="store_true",
                        help="do not serve /_seda/ (the status page and Prometheus metrics)")
    status.add_argument("--status-bind", metavar="HOST:PORT",
                        help="serve /_seda/ on this address (plain HTTP), not the main one")
    parser.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)   # set by the supervisor
    parser.add_argument("--status-dir", help=argparse.SUPPRESS)           # set by the supervisor
    args = parser.parse_args(argv)
    host, sep, port = args.bind.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        parser.error(f"--bind takes HOST:PORT, not {args.bind!r}")
    status_bind = None
    if args.status_bind is not None:
        status_host, sep, status_port = args.status_bind.rpartition(":")
        if not sep or not status_port.isdigit() or int(status_port) > 65535:
            parser.error(f"--status-bind takes HOST:PORT, not {args.status_bind!r}")
        status_bind = (status_host.strip("[]") or "127.0.0.1", int(status_port))
    if args.root is not None and not os.path.isdir(args.root):
        parser.error(f"--root {args.root!r} is not a directory")
    if args.app is None and args.root is None and not args.mount:
        parser.error("nothing to serve: give an APP, --root or --mount")
    if args.cache_mb < 0 or args.threads < 1 or args.workers < 1:
        parser.error("--cache-mb must be >= 0, --threads and --workers >= 1")
    if args.target_p90 is not None and args.target_p90 <= 0:
        parser.error("--target-p90 takes milliseconds > 0")
    if args.class_header is not None and args.target_p90 is None:
        parser.error("--class-header needs --target-p90 (classes matter under admission control)")
    try:
        limits = Limits(**{name: getattr(args, name) for name, _, _ in LIMIT_FLAGS})
    except ValueError as exc:
        parser.error(str(exc))
    if args.access_log not in (None, "-"):
        try:
            open(args.access_log, "a").close()       # say so now, not in a traceback later
        except OSError as exc:
            parser.error(f"cannot write the access log {args.access_log}: {exc.strerror}")
    context = None
    if (args.certfile is None) != (args.keyfile is None):
        parser.error("--certfile and --keyfile go together")
    if args.certfile is not None:
        try:
            context = tls_context(args.certfile, args.keyfile)
        except ValueError as exc:
            parser.error(f"cannot serve HTTPS: {exc}")
    apps = []
    try:
        if args.app is not None:
            apps.append(("/", load_app(args.app)))
        for spec in args.mount:
            prefix, sep, ref = spec.partition("=")
            if not sep or not prefix.startswith("/"):
                parser.error(f"--mount takes /PREFIX=module:attribute, not {spec!r}")
            apps.append((prefix, load_app(ref)))
    except (seda.ImportObjectError, ValueError) as exc:
        parser.error(f"cannot load the application: {exc}")
    return Options(root=args.root, host=host.strip("[]") or "127.0.0.1", port=int(port),
                   cache_bytes=int(args.cache_mb * 2**20), cache_policy=args.cache_policy,
                   apps=apps, threads=args.threads, access_log=args.access_log,
                   ssl_context=context, reuse_port=args.ready_fd is not None,
                   target_p90=None if args.target_p90 is None else args.target_p90 / 1000,
                   class_header=args.class_header, status=not args.no_status,
                   status_bind=status_bind, status_dir=args.status_dir, limits=limits,
                   graceful_timeout=args.graceful_timeout,
                   underscore_headers=args.underscore_headers), args.workers, args.ready_fd


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    options, workers, ready_fd = parse(argv)
    if workers > 1 and ready_fd is None:
        return supervise(argv, options, workers)
    return serve(options, ready_fd)


def serve(options: Options, ready_fd: int | None = None) -> int:
    """One process: the whole stage graph; a worker if the supervisor gave a ``ready_fd``."""
    # The loop thread answers every socket; CPU-bound application threads would hold the GIL
    # for CPython's default 5 ms slices each, and a 503 that should be immediate would wait
    # behind all of them. A 1 ms slice keeps the loop responsive.
    sys.setswitchinterval(0.001)
    signals: queue.SimpleQueue[int] = queue.SimpleQueue()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _: signals.put(signum))   # put is reentrant
    worker = ready_fd is not None
    parent = os.getppid()
    rt = seda.Runtime()
    try:
        listener = build(rt, options)       # the whole stage graph first, then start
    except OSError as exc:
        rt.stop()
        say(f"cannot listen on {hostport(options.host, options.port)}: {exc.strerror}")
        return 1
    rt.start()
    try:
        if worker:
            os.write(ready_fd, b"1")
            os.close(ready_fd)
        else:
            banner(options, *listener.address[:2], served_at(rt, SERVICE))
        while True:
            try:
                signum = signals.get(timeout=1.0)
            except queue.Empty:
                if worker and os.getppid() != parent:
                    break                     # the supervisor is gone: do not linger
                continue
            if signum == signal.SIGHUP:
                with contextlib.suppress(KeyError, seda.SinkError):
                    rt.sink("haboob.log").enqueue(Reopen())
            else:
                break
        if not worker:
            say("stopping (draining requests in flight)")
    finally:
        rt.stop(timeout=options.graceful_timeout)
    return 0


def supervise(argv: list[str], options: Options, workers: int) -> int:
    """Several workers: hold the port, start them, restart them, stop them."""
    try:
        held = reserve(options.host, options.port)
    except OSError as exc:
        say(f"cannot listen on {hostport(options.host, options.port)}: {exc.strerror}")
        return 1
    port = held.getsockname()[1]
    args, status = [*argv, "--bind", hostport(options.host, port)], None
    if options.status_bind is not None:        # hold the status page's port too
        try:
            held_status = reserve(*options.status_bind)
        except OSError as exc:
            held.close()
            say(f"cannot listen on {hostport(*options.status_bind)}: {exc.strerror}")
            return 1
        status = (options.status_bind[0], held_status.getsockname()[1])
        args += ["--status-bind", hostport(*status)]
    # the workers drain for --graceful-timeout; give them a little more before killing them
    supervisor = Supervisor(args, workers, share_status=options.status,
                            grace=options.graceful_timeout + 5)
    try:
        if not supervisor.start():
            return 1
        banner(options, options.host, port, status)
        supervisor.run()
    finally:
        held.close()
        if status is not None:
            held_status.close()
    return 0


def banner(options: Options, host: str, port: int,
           status: tuple[str, int] | None = None) -> None:
    """Where to connect; ``status``: the status page's own address, if it has one."""
    scheme = "https" if options.ssl_context is not None else "http"
    print(f"haboob serving on {scheme}://{hostport(host, port)}/", flush=True)
    if status is not None:
        print(f"stages and metrics: http://{hostport(*status)}/_seda/", flush=True)
    elif options.status:
        print(f"stages and metrics: {scheme}://{hostport(host, port)}/_seda/", flush=True)

