"""The ``haboob`` command: serve static files, WSGI and ASGI applications on the SEDA runtime."""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import signal
import sys
from collections.abc import Callable
from typing import Any

import seda
from seda import ConfigError
from seda.http import LifespanFailed
from seda.status import served_at

from .access_log import Reopen
from .options import Options
from .server import SERVICE, build
from .settings import ALL, LIMITS, SETTINGS, Setting, combine, load, to_options
from .supervisor import Supervisor, reserve, say

EXAMPLES = """examples:
  haboob --root ./public                       static files on 127.0.0.1:8000
  haboob myproject.wsgi:application            a WSGI application at /
  haboob main:app                              an ASGI one (FastAPI, Starlette, Django's asgi)
  haboob myapp:app --root ./static             files that exist win, the app gets the rest
  haboob --root site --mount /api=api:app --bind 0.0.0.0:8080
  haboob myapp:app --workers 4 --target-p90 100   4 processes, p90 held near 100 ms
  haboob --config haboob.toml --bind 0.0.0.0:80    settings from a file, one of them replaced

signals: TERM or INT stop accepting, give the requests in flight --graceful-timeout seconds to
finish, and exit; HUP reopens the access log (after rotation).
"""


def hostport(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets (as in a URL)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _for_argparse(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """A setting's parser as an argparse type: its message, not argparse's 'invalid value'."""
    def convert(word: str) -> Any:
        try:
            return parse(word)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def _add(parser: Any, setting: Setting) -> None:
    """``setting`` as an option of ``parser``: ``--NAME VALUE``, a switch, or the app."""
    name = setting.name.replace("_", "-")
    flag = f"--no-{name}" if setting.negated else f"--{name}"
    if setting.metavar is None:           # a switch
        parser.add_argument(flag, dest=setting.name,
                            action="store_false" if setting.negated else "store_true",
                            help=setting.help)
    elif setting.name == "app":
        parser.add_argument("app", nargs="?", type=_for_argparse(setting.parse),
                            metavar=setting.metavar, help=setting.help)
    else:
        parser.add_argument(flag, type=_for_argparse(setting.parse), metavar=setting.metavar,
                            action="append" if setting.many else "store", help=setting.help)


def parser() -> argparse.ArgumentParser:
    """The command line: one option per setting (``settings.SETTINGS``), nothing defaulted
    here, so that what was not given is left to the config file, then to ``Options``."""
    cli = argparse.ArgumentParser(
        prog="haboob",
        description="Haboob: the SEDA web server, static files, WSGI and ASGI applications.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=argparse.SUPPRESS)
    cli.add_argument("--config", metavar="FILE",
                     help="read settings from this TOML file: each option below without its "
                     "dashes, '_' for '-' (max_body = \"10M\", mount = [\"/api=api:app\"], "
                     "status = false for --no-status); options on the command line win over "
                     "the file")
    status = cli.add_mutually_exclusive_group()     # the page off, or on its own address
    for setting in SETTINGS.values():
        _add(status if setting.name in ("status", "status_bind") else cli, setting)
    limits = cli.add_argument_group(
        "limits", "what a client may send and how long it may take; past a limit the request "
        "gets its status (413, 414, 431, 408) and the connection closes. SIZE takes K, M, G.")
    for setting in LIMITS.values():
        _add(limits, setting)
    cli.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)   # set by the supervisor
    cli.add_argument("--status-dir", help=argparse.SUPPRESS)           # set by the supervisor
    return cli


def parse(argv: list[str] | None) -> tuple[Options, int | None]:
    """The command line (over the config file, if ``--config``) -> (options, the supervisor's
    ready pipe if this process is one of its workers)."""
    cli = parser()
    args = vars(cli.parse_args(argv))
    ready_fd = args.get("ready_fd")
    try:
        file = load(args["config"]) if "config" in args else {}
        values = combine(file, {name: value for name, value in args.items() if name in ALL})
        options = to_options(values, reuse_port=ready_fd is not None,
                             status_dir=args.get("status_dir"))
    except ConfigError as exc:
        cli.error(str(exc))
    return options, ready_fd


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    options, ready_fd = parse(argv)
    if options.workers > 1 and ready_fd is None:
        return supervise(argv, options)
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
    try:
        rt.start(freeze=True)
    except RuntimeError as exc:             # an application's startup failed: say what it said
        if not isinstance(exc.__cause__, LifespanFailed):
            raise
        say(f"application startup failed: {exc.__cause__}")
        return 1
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


def supervise(argv: list[str], options: Options) -> int:
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
    supervisor = Supervisor(args, options.workers, share_status=options.status,
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

