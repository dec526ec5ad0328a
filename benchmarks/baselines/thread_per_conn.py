"""Thread per connection, unbounded: the accept loop starts a thread for every connection it
takes, and that thread serves the connection with blocking calls until it closes.

    python -m benchmarks.baselines.thread_per_conn --root DIR --bind 127.0.0.1:8000

The design the thesis argues against (chapter 2): simple, and every connection is accepted at
once, but each costs a thread, and with many clients the threads contend for the GIL and the
scheduler rather than queueing where the server can see them.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from benchmarks.baselines.launch import announce, listen, parse_args
from benchmarks.baselines.static_http import serve_blocking


def serve(sock: socket.socket, root: str) -> None:
    while True:
        conn, _ = sock.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve_blocking, args=(conn, root), daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv=argv)
    sock = listen(args.bind, args.backlog)
    announce(sock)
    with contextlib.suppress(KeyboardInterrupt):
        serve(sock, args.root)


if __name__ == "__main__":
    main()
