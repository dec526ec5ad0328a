"""The ``haboob`` command: serve static files and WSGI applications on the SEDA runtime."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import ssl
import sys
import threading
from typing import Any

import seda

from .cache import POLICIES
from .server import Options, build

EXAMPLES = """examples:
  haboob --root ./public                       static files on 127.0.0.1:8000
  haboob myproject.wsgi:application            a WSGI application at /
  haboob myapp:app --root ./static             files that exist win, the app gets the rest
  haboob --root site --mount /api=api:app --bind 0.0.0.0:8080
"""


def load_app(ref: str) -> Any:
    """``module:attribute`` -> the object, with the working directory importable (as uvicorn
    and gunicorn do)."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"an application is given as module:attribute, not {ref!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{ref} is not callable, so not a WSGI application")
    return obj


def parse(argv: list[str] | None) -> Options:
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
    args = parser.parse_args(argv)
    host, sep, port = args.bind.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        parser.error(f"--bind takes HOST:PORT, not {args.bind!r}")
    if args.root is not None and not os.path.isdir(args.root):
        parser.error(f"--root {args.root!r} is not a directory")
    if args.app is None and args.root is None and not args.mount:
        parser.error("nothing to serve: give an APP, --root or --mount")
    if args.cache_mb < 0 or args.threads < 1:
        parser.error("--cache-mb must be >= 0 and --threads >= 1")
    context = None
    if (args.certfile is None) != (args.keyfile is None):
        parser.error("--certfile and --keyfile go together")
    if args.certfile is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(args.certfile, args.keyfile)
        except (OSError, ssl.SSLError) as exc:
            parser.error(f"cannot load the certificate: {exc}")
    apps = []
    try:
        if args.app is not None:
            apps.append(("/", load_app(args.app)))
        for spec in args.mount:
            prefix, sep, ref = spec.partition("=")
            if not sep or not prefix.startswith("/"):
                parser.error(f"--mount takes /PREFIX=module:attribute, not {spec!r}")
            apps.append((prefix, load_app(ref)))
    except (ImportError, AttributeError, ValueError) as exc:
        parser.error(f"cannot load the application: {exc}")
    return Options(root=args.root, host=host.strip("[]") or "127.0.0.1", port=int(port),
                   cache_bytes=int(args.cache_mb * 2**20), cache_policy=args.cache_policy,
                   apps=apps, threads=args.threads, access_log=args.access_log,
                   ssl_context=context)


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    rt = seda.Runtime()
    try:
        listener = build(rt, options)       # the whole stage graph first, then start
    except OSError as exc:
        rt.stop()
        print(f"haboob: cannot listen on {options.host}:{options.port}: {exc.strerror}",
              file=sys.stderr)
        return 1
    rt.start()
    try:
        host, port = listener.address[:2]
        scheme = "https" if options.ssl_context is not None else "http"
        print(f"haboob serving on {scheme}://{host}:{port}/", flush=True)
        print(f"stages and metrics: {scheme}://{host}:{port}/_seda/", flush=True)
        stop.wait()
        print("haboob: stopping (draining requests in flight)", flush=True)
    finally:
        rt.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
