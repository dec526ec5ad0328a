"""What the baselines share on their command line: the options, the listening socket and the
ready line, so the study starts any of them the same way."""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Callable

BACKLOG = 511       # the listen backlog of Apache (ListenBacklog) and nginx on Linux


def parse_args(doc: str, add: Callable[[argparse.ArgumentParser], None] | None = None,
               argv: list[str] | None = None) -> argparse.Namespace:
    """``--root``, ``--bind`` and ``--backlog``, plus what ``add`` puts on the parser."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--root", required=True, help="directory whose files are served")
    parser.add_argument("--bind", default="127.0.0.1:8000", metavar="HOST:PORT")
    parser.add_argument("--backlog", type=int, default=BACKLOG,
                        help=f"listen backlog (default {BACKLOG})")
    if add:
        add(parser)
    args = parser.parse_args(argv)
    args.root = os.path.abspath(args.root)
    return args


def listen(bind: str, backlog: int = BACKLOG) -> socket.socket:
    host, _, port = bind.rpartition(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(backlog)
    return sock


def announce(sock: socket.socket) -> None:
    """Print the ready line: the socket is listening, connections will be accepted."""
    host, port = sock.getsockname()[:2]
    print(f"ready http://{host}:{port}/", flush=True)
