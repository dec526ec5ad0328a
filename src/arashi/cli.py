"""The ``arashi`` command: make a data directory, add users, import mailboxes, and serve
(web pages and SMTP in, together). Errors are one line that says what
is wrong, never a traceback."""

from __future__ import annotations

import argparse
import getpass
import logging
import queue
import re
import signal
import sys
from pathlib import Path

import seda

from .db import DatabaseError, database_url, open_pool
from .importer import MailboxError, import_mailbox
from .migrations import LATEST, migrate
from .service import Options, build, default_domains, open_store
from .smtp import Limits
from .store import NotFound, StoreError, check_user_name

EXAMPLES = """examples:
  arashi init mail                                  a data directory with an empty store
  arashi adduser alice --data mail                  asks for alice's password twice
  echo secret | arashi adduser bob --data mail --password-stdin
  arashi import --user alice --data mail --mbox ~/old.mbox
  arashi serve --data mail --smtp-bind 127.0.0.1:2525 --domain example.org
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


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="arashi", description="Arashi, a web e-mail service on SEDA (Welsh's thesis, "
        "section 6.3): a mail store, SMTP in, and mail read in a browser.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = cli.add_subparsers(dest="command", required=True, metavar="COMMAND")

    init = sub.add_parser("init", help="make a data directory with an empty mail store",
                          description="Make DATA_DIR (if missing) and its database, or bring "
                          "an existing one's schema up to date.")
    init.add_argument("data", metavar="DATA_DIR")

    add = sub.add_parser("adduser", help="add a user (with an INBOX)",
                         description="Add user NAME, who receives mail for NAME@DOMAIN. The "
                         "password is asked twice, or read from standard input.")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--data", required=True, metavar="DATA_DIR")
    add.add_argument("--password-stdin", action="store_true",
                     help="read the password from the first line of standard input")

    imp = sub.add_parser("import", help="import an mbox file or a Maildir",
                         description="Import every message of a mailbox into a user's folder, "
                         "all or nothing.")
    imp.add_argument("--user", required=True, metavar="NAME")
    imp.add_argument("--data", required=True, metavar="DATA_DIR")
    imp.add_argument("--folder", default="INBOX", help="into this folder, made if missing "
                     "(default %(default)s)")
    which = imp.add_mutually_exclusive_group(required=True)
    which.add_argument("--mbox", metavar="FILE")
    which.add_argument("--maildir", metavar="DIR")

    serve = sub.add_parser("serve", help="serve the web pages and receive mail by SMTP",
                           description="Serve web mail to the users of DATA_DIR and receive "
                           "their mail by SMTP. TERM or INT stop it.")
    serve.add_argument("--data", required=True, metavar="DATA_DIR")
    serve.add_argument("--bind", type=_address, default=("127.0.0.1", 8080),
                       metavar="HOST:PORT",
                       help="serve the web pages here (default 127.0.0.1:8080; port 0: any)")
    serve.add_argument("--target-p90", type=_positive, metavar="MS",
                       help="admission control: hold each request type's 90th-percentile "
                       "response time near MS milliseconds, refusing (503) what would not be")
    serve.add_argument("--class-cookie", metavar="NAME",
                       help="with --target-p90: the request's class 0-9 from cookie NAME (9 "
                       "served first under load; missing or other values: class 0)")
    serve.add_argument("--smtp-bind", type=_address, default=("127.0.0.1", 2525),
                       metavar="HOST:PORT",
                       help="listen for SMTP here (default 127.0.0.1:2525; port 0: any)")
    serve.add_argument("--domain", action="append", metavar="NAME",
                       help="take mail for NAME@DOMAIN (repeat for more; default: "
                       f"{' and '.join(default_domains())})")
    serve.add_argument("--max-size", type=int, default=32 * 2**20, metavar="BYTES",
                       help="largest message taken (default %(default)s)")
    serve.add_argument("--smtp-timeout", type=_positive, default=300.0, metavar="SECONDS",
                       help="close a client silent this long (default %(default)s)")
    serve.add_argument("--log-level", default="info",
                       choices=["debug", "info", "warning", "error"])
    return cli


def say(message: str) -> None:
    print(f"arashi: {message}", file=sys.stderr, flush=True)


def _init(args: argparse.Namespace) -> None:
    data = Path(args.data)
    try:
        data.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Failure(f"cannot make {data}: {exc.strerror}") from None
    pool = open_pool(database_url(data))
    try:
        applied = migrate(pool)
    finally:
        pool.close()
    what = "initialised" if applied and applied[0].version == 1 else "up to date"
    print(f"{data}: {what}, schema version {LATEST}")


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
    pool, store = open_store(Options(data=Path(args.data), delivery_threads=1))
    try:
        if store.user_id(args.name) is not None:
            raise Failure(f"there is a user {args.name.lower()} already")
        name = check_user_name(args.name)
        store.add_user(name, _password(args.password_stdin))
    finally:
        pool.close()
    print(f"added {name}")


def _import(args: argparse.Namespace) -> None:
    pool, store = open_store(Options(data=Path(args.data), delivery_threads=1))
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
    logging.basicConfig(level=args.log_level.upper(), format="arashi: %(levelname)s %(message)s")
    options = Options(data=Path(args.data), smtp_bind=args.smtp_bind,
                      domains=tuple(args.domain or default_domains()),
                      limits=Limits(max_size=args.max_size), timeout=args.smtp_timeout,
                      web_bind=args.bind, target_p90=None if args.target_p90 is None
                      else args.target_p90 / 1000, class_cookie=args.class_cookie)
    signals: queue.SimpleQueue[int] = queue.SimpleQueue()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _: signals.put(signum))   # put is reentrant
    rt = seda.Runtime()
    try:
        service = build(rt, options)
    except BaseException:
        rt.stop()
        raise
    rt.start()
    try:
        host, port = service.smtp
        print(f"arashi receiving mail on {host}:{port} for {', '.join(options.domains)}",
              flush=True)
        if service.web is not None:
            host, port = service.web
            print(f"arashi serving web mail on http://{host}:{port}/", flush=True)
        while True:
            try:
                signals.get(timeout=1.0)
                break
            except queue.Empty:
                continue
        say("stopping")
    finally:
        rt.stop(timeout=5.0)
        service.close()


COMMANDS = {"init": _init, "adduser": _adduser, "import": _import, "serve": _serve}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        COMMANDS[args.command](args)
    except (Failure, DatabaseError, StoreError, NotFound, MailboxError, OSError) as exc:
        say(str(exc))
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    return 0
