"""The ``arashi`` command: make a data directory, add users, import mailboxes, and serve
(web pages and SMTP in, together). Errors are one line that says what
is wrong, never a traceback."""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import queue
import re
import signal
import sys
from pathlib import Path

import seda
from haboob import Supervisor, hostport, reserve

from .db import DatabaseError, database_url, open_pool
from .importer import MailboxError, import_mailbox
from .migrations import LATEST, migrate
from .overload import PLACES, POLICIES, check
from .receiver import MAX_CONNECTIONS
from .service import Options, build, default_domains, open_store
from .smtp import Limits
from .store import NotFound, StoreError, check_user_name

EXAMPLES = """examples:
  arashi init mail                                  a data directory with an empty store
  arashi adduser alice --data mail                  asks for alice's password twice
  echo secret | arashi adduser bob --data mail --password-stdin
  arashi import --user alice --data mail --mbox ~/old.mbox
  arashi serve --data mail --smtp-bind 127.0.0.1:2525 --domain example.org
  arashi init --db postgresql://arashi@/mail?host=/run/postgresql   the store in PostgreSQL
  arashi serve --db postgresql://arashi@/mail?host=/run/postgresql  (--db URL wherever --data)
"""


_COOKIE_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")     # a token (RFC 6265)


class Failure(Exception):
    """What the command says before exiting 1."""


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number > 0")
    return value


def _store_options(command: argparse.ArgumentParser) -> None:
    """``--data DATA_DIR`` (SQLite) or ``--db URL``, one of them."""
    where = command.add_mutually_exclusive_group(required=True)
    where.add_argument("--data", metavar="DATA_DIR", help="the store in this data directory")
    where.add_argument("--db", metavar="URL", help="the store in this database: "
                       "postgresql://USER@HOST/DBNAME or sqlite:///PATH")


def _options(args: argparse.Namespace, **more: object) -> Options:
    if args.db is not None:
        return Options(url=args.db, **more)  # type: ignore[arg-type]
    return Options(data=Path(args.data), **more)  # type: ignore[arg-type]


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="arashi", description="Arashi, a web e-mail service on SEDA (Welsh's thesis, "
        "section 6.3): a mail store, SMTP in, and mail read in a browser.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = cli.add_subparsers(dest="command", required=True, metavar="COMMAND")

    init = sub.add_parser("init", help="make a data directory with an empty mail store",
                          description="Make DATA_DIR (if missing) and its database, or bring "
                          "an existing one's schema up to date; or the tables in the database "
                          "--db URL names (which must exist).")
    init.add_argument("data", metavar="DATA_DIR", nargs="?")
    init.add_argument("--db", metavar="URL", help="instead of DATA_DIR: a database URL, "
                      "postgresql://USER@HOST/DBNAME or sqlite:///PATH")

    add = sub.add_parser("adduser", help="add a user (with an INBOX)",
                         description="Add user NAME, who receives mail for NAME@DOMAIN. The "
                         "password is asked twice, or read from standard input.")
    add.add_argument("name", metavar="NAME")
    _store_options(add)
    add.add_argument("--password-stdin", action="store_true",
                     help="read the password from the first line of standard input")

    imp = sub.add_parser("import", help="import an mbox file or a Maildir",
                         description="Import every message of a mailbox into a user's folder, "
                         "all or nothing.")
    imp.add_argument("--user", required=True, metavar="NAME")
    _store_options(imp)
    imp.add_argument("--folder", default="INBOX", help="into this folder, made if missing "
                     "(default %(default)s)")
    which = imp.add_mutually_exclusive_group(required=True)
    which.add_argument("--mbox", metavar="FILE")
    which.add_argument("--maildir", metavar="DIR")

    serve = sub.add_parser("serve", help="serve the web pages and receive mail by SMTP",
                           description="Serve web mail to the users of DATA_DIR and receive "
                           "their mail by SMTP. TERM or INT stop it.")
    _store_options(serve)
    serve.add_argument("--bind", type=_address, default=("127.0.0.1", 8080),
                       metavar="HOST:PORT",
                       help="serve the web pages here (default 127.0.0.1:8080; port 0: any)")
    serve.add_argument("--target-p90", type=_positive, metavar="MS",
                       help="admission control: hold each request type's 90th-percentile "
                       "response time near MS milliseconds, refusing (503) what would not be")
    serve.add_argument("--class-cookie", metavar="NAME",
                       help="with --target-p90: the request's class 0-9 from cookie NAME (9 "
                       "served first under load; missing or other values: class 0)")
    serve.add_argument("--admission", choices=POLICIES, metavar="NAME",
                       help="with --target-p90: the admission controller on each stage, one of "
                       f"{', '.join(POLICIES)} (default bound: ResponseTimeBound; rtc: the "
                       "thesis's ResponseTimeController; none: no admission control)")
    serve.add_argument("--admission-at", choices=PLACES,
                       help="with --target-p90: stage (default), a controller per request "
                       "type's stage; front: one stage and one controller for every request")
    serve.add_argument("--degrade", action="store_true",
                       help="with --target-p90: shorter message lists and no search while "
                       "those pages are over the target (quality first, then admission "
                       "control on them unless --admission none)")
    serve.add_argument("--threads", type=int, default=8, metavar="N",
                       help="most threads of each request type's stage (default %(default)s)")
    serve.add_argument("--smtp-bind", type=_address, default=("127.0.0.1", 2525),
                       metavar="HOST:PORT",
                       help="listen for SMTP here (default 127.0.0.1:2525; port 0: any)")
    serve.add_argument("--domain", action="append", metavar="NAME",
                       help="take mail for NAME@DOMAIN (repeat for more; default: "
                       f"{' and '.join(default_domains())})")
    serve.add_argument("--hostname", metavar="NAME",
                       help="the server's name in its SMTP greeting and replies, as clients "
                       "and logs see it (default: this machine's, socket.getfqdn())")
    serve.add_argument("--max-size", type=int, default=32 * 2**20, metavar="BYTES",
                       help="largest message taken (default %(default)s)")
    serve.add_argument("--smtp-timeout", type=_positive, default=300.0, metavar="SECONDS",
                       help="close a client silent this long, between commands or "
                       "inside a message (default %(default)s)")
    serve.add_argument("--smtp-max-connections", type=int, default=MAX_CONNECTIONS,
                       metavar="N",
                       help="SMTP connections at once (per worker); one more is told 421 and "
                       "closed, to try again later (default %(default)s)")
    serve.add_argument("--redis", metavar="URL",
                       help="share mail delivery with every node given the same Redis "
                       "(redis://HOST:6379/0): mail accepted here may be stored by any node, "
                       "and none is lost when a node dies (needs pyseda[cluster])")
    serve.add_argument("--workers", type=int, default=1, metavar="N",
                       help="run N worker processes sharing the web and SMTP ports "
                       "(SO_REUSEPORT), restarted if they die (default 1: no supervisor)")
    serve.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)     # set by the
    serve.add_argument("--status-dir", help=argparse.SUPPRESS)             # supervisor
    serve.add_argument("--log-level", default="info",
                       choices=["debug", "info", "warning", "error"])
    return cli


def say(message: str) -> None:
    print(f"arashi: {message}", file=sys.stderr, flush=True)


def _init(args: argparse.Namespace) -> None:
    if (args.data is None) == (args.db is None):
        raise Failure("init: give a DATA_DIR or --db URL, one of them")
    if args.db is None:
        data = Path(args.data)
        try:
            data.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Failure(f"cannot make {data}: {exc.strerror}") from None
    pool = open_pool(database_url(args.data, args.db))
    try:
        applied = migrate(pool)
    finally:
        pool.close()
    what = "initialised" if applied and applied[0].version == 1 else "up to date"
    print(f"{args.data or 'the database'}: {what}, schema version {LATEST}")


def _password(from_stdin: bool) -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise Failure("the passwords differ")
    if not password:
        raise Failure("the password is empty")
    return password


def _adduser(args: argparse.Namespace) -> None:
    pool, store = open_store(_options(args, delivery_threads=1))
    try:
        if store.user_id(args.name) is not None:
            raise Failure(f"there is a user {args.name.lower()} already")
        name = check_user_name(args.name)
        store.add_user(name, _password(args.password_stdin))
    finally:
        pool.close()
    print(f"added {name}")


def _import(args: argparse.Namespace) -> None:
    pool, store = open_store(_options(args, delivery_threads=1))
    try:
        user = store.user_id(args.user)
        if user is None:
            raise Failure(f"no user {args.user}")
        n = import_mailbox(store, user, mbox=args.mbox, maildir=args.maildir,
                           folder=args.folder)
    finally:
        pool.close()
    print(f"imported {n} messages into {args.user.lower()}'s {args.folder}")


def _serve(args: argparse.Namespace) -> None:
    if args.class_cookie is not None:
        if args.target_p90 is None:
            raise Failure("--class-cookie needs --target-p90: request classes matter only "
                          "under admission control")
        if not _COOKIE_NAME.fullmatch(args.class_cookie):
            raise Failure(f"--class-cookie {args.class_cookie!r} is not a cookie name")
    for name, value in (("--admission", args.admission), ("--admission-at", args.admission_at),
                        ("--degrade", args.degrade or None)):
        if value is not None and args.target_p90 is None:
            raise Failure(f"{name} needs --target-p90: the target is what it holds")
    try:
        check(args.admission or "bound", args.class_cookie, front=args.admission_at == "front",
              degrade=args.degrade)
    except ValueError as exc:
        raise Failure(str(exc)) from None
    if args.threads < 1:
        raise Failure(f"--threads {args.threads}: at least 1")
    if args.workers < 1:
        raise Failure(f"--workers {args.workers}: at least 1")
    if args.smtp_max_connections < 1:
        raise Failure(f"--smtp-max-connections {args.smtp_max_connections}: at least 1")
    if args.workers > 1 and args.ready_fd is None:
        _supervise(args)
        return
    logging.basicConfig(level=args.log_level.upper(), format="arashi: %(levelname)s %(message)s")
    # as Haboob's: a 503 the router gives on the loop thread should not wait behind the page
    # threads' 5 ms slices of the GIL (refusals in under 10 ms, issue 17)
    sys.setswitchinterval(0.001)
    worker = args.ready_fd is not None
    parent = os.getppid()
    options = _options(args, smtp_bind=args.smtp_bind,
                       domains=tuple(args.domain or default_domains()),
                       limits=Limits(max_size=args.max_size), timeout=args.smtp_timeout,
                       data_timeout=args.smtp_timeout,
                       max_connections=args.smtp_max_connections,
                       **({"hostname": args.hostname} if args.hostname else {}),
                       web_bind=args.bind, target_p90=None if args.target_p90 is None
                       else args.target_p90 / 1000, class_cookie=args.class_cookie,
                       admission=args.admission or "bound",
                       admission_at=args.admission_at or "stage", degrade=args.degrade,
                       web_threads=args.threads,
                       reuse_port=worker, status_dir=args.status_dir, redis=args.redis)
    signals: queue.SimpleQueue[int] = queue.SimpleQueue()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _: signals.put(signum))   # put is reentrant
    rt = seda.Runtime()
    try:
        service = build(rt, options)
    except RuntimeError as exc:                # --redis without the cluster extra
        rt.stop()
        raise Failure(str(exc)) from None
    except BaseException:
        rt.stop()
        raise
    try:
        rt.start(freeze=True)                  # as Haboob's: full collections skip the imports
    except RuntimeError as exc:                # --redis: Redis out of reach
        service.close()
        raise Failure(str(exc)) from None
    try:
        if worker:
            os.write(args.ready_fd, b"1")
            os.close(args.ready_fd)
        else:
            _banner(service.smtp, service.web, options.domains)
        while True:
            try:
                signals.get(timeout=1.0)
                break
            except queue.Empty:
                if worker and os.getppid() != parent:
                    break                     # the supervisor is gone: do not linger
                continue
        if not worker:
            say("stopping")
    finally:
        rt.stop(timeout=5.0)
        service.close()


def _banner(smtp: tuple[str, int], web: tuple[str, int] | None,
            domains: tuple[str, ...]) -> None:
    host, port = smtp
    print(f"arashi receiving mail on {host}:{port} for {', '.join(domains)}", flush=True)
    if web is not None:
        host, port = web
        print(f"arashi serving web mail on http://{host}:{port}/", flush=True)


def _supervise(args: argparse.Namespace) -> None:
    """``--workers N``: hold both ports, and keep N ``arashi serve`` workers on them (Haboob's
    supervisor, ``haboob.Supervisor``, running ``python -m arashi``)."""
    open_store(_options(args, delivery_threads=1))[0].close()  # fail here, once
    held = []
    try:
        for what, address in (("HTTP", args.bind), ("SMTP", args.smtp_bind)):
            try:
                held.append(reserve(*address))
            except OSError as exc:
                raise Failure(f"cannot listen for {what} on {address[0]}:{address[1]}: "
                              f"{exc.strerror or exc}") from None
        web, smtp = (sock.getsockname()[:2] for sock in held)
        argv = [*args.argv, "--bind", hostport(*web), "--smtp-bind", hostport(*smtp)]
        supervisor = Supervisor(argv, args.workers, share_status=True, grace=10.0,
                                program="arashi")
        if not supervisor.start():
            raise Failure("a worker could not start")
        _banner(smtp, web, tuple(args.domain or default_domains()))
        supervisor.run()
    finally:
        for sock in held:
            sock.close()


COMMANDS = {"init": _init, "adduser": _adduser, "import": _import, "serve": _serve}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    args.argv = argv
    try:
        COMMANDS[args.command](args)
    except (Failure, DatabaseError, StoreError, NotFound, MailboxError, OSError) as exc:
        say(str(exc))
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    return 0
