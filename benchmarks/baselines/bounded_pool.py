"""A bounded pool of workers, each taking one connection at a time: Apache 1.3's model as the
thesis measured it (MaxClients 150, section 6.1.3).

    python -m benchmarks.baselines.bounded_pool --root DIR --bind 127.0.0.1:8000 [--workers 150]

Each worker calls ``accept`` on the shared listening socket, serves that connection with
blocking calls until the client closes it (or leaves it idle for ``--keepalive-timeout``
seconds, Apache's KeepAliveTimeout), and only then accepts again. So when all workers are busy
nobody accepts: a new connection completes its handshake into the kernel's backlog
(``--backlog``, 511 as in Apache) and waits there, its request unanswered, until a worker is
free; once the backlog is full too, the kernel drops further SYNs and clients retry with
exponential back-off. That wait is the long tail and the unfairness of the thesis's Fig. 37-38.
The workers are threads here, not processes: same scheduling, but they share one GIL.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import threading

from benchmarks.baselines.launch import announce, listen, parse_args
from benchmarks.baselines.static_http import serve_blocking


def worker(sock: socket.socket, root: str, keepalive_timeout: float) -> None:
    while True:
        conn, _ = sock.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(keepalive_timeout)
        serve_blocking(conn, root)


def serve(sock: socket.socket, root: str, workers: int, keepalive_timeout: float) -> None:
    threads = [threading.Thread(target=worker, args=(sock, root, keepalive_timeout), daemon=True)
               for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=150, help="pool size (default 150)")
    parser.add_argument("--keepalive-timeout", type=float, default=15.0, metavar="S",
                        help="close a connection idle this long (default 15, as Apache)")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, _options, argv)
    sock = listen(args.bind, args.backlog)
    announce(sock)
    with contextlib.suppress(KeyboardInterrupt):
        serve(sock, args.root, args.workers, args.keepalive_timeout)


if __name__ == "__main__":
    main()
