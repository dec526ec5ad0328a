"""Thesis Fig. 35: the asynchronous socket layer against thread-per-connection.

    python benchmarks/sockets_fig35.py [--conns 1,4,16,64,256,1024,4096] [--seconds 3]

Each client connection sends bursts of 1000 packets of 8 KB and waits for the server's 32-byte
acknowledgement before the next burst. The servers: seda's socket layer (one event-loop thread)
and a blocking server with one thread per connection. Server pinned to core 0, the load
generator (one epoll process) to core 1. Writes docs/results/sockets_fig35.{png,md}.
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import subprocess
import sys
import threading
import time

PACKET = 8192
BURST = 1000                       # packets per acknowledgement
ACK = b"a" * 32


# -- servers ----------------------------------------------------------------------------------

def serve_seda(port: int) -> None:
    import seda
    from seda.io import Packet, SocketLayer

    class Counter(seda.EventHandler):
        def handle_event(self, ev):
            if type(ev) is Packet:
                got = (ev.conn.data or 0) + len(ev.data)
                if got >= PACKET * BURST:
                    got -= PACKET * BURST
                    ev.conn.enqueue(ACK)
                ev.conn.data = got

    with seda.Runtime() as rt:
        rt.add_stage("count", Counter(), blocking=False, batch=256)
        SocketLayer.of(rt).listen(("127.0.0.1", port), rt.sink("count"), backlog=4096)
        print("ready", flush=True)
        sys.stdin.read()


def serve_threads(port: int) -> None:
    def client(sock: socket.socket) -> None:
        got = 0
        with sock:
            while data := sock.recv(65536):
                got += len(data)
                if got >= PACKET * BURST:
                    got -= PACKET * BURST
                    sock.sendall(ACK)

    listener = socket.create_server(("127.0.0.1", port), backlog=4096)
    threading.Thread(target=lambda: sys.stdin.read() or os._exit(0), daemon=True).start()
    print("ready", flush=True)
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=client, args=(sock,), daemon=True).start()


# -- load generator -----------------------------------------------------------------------------

def load(port: int, conns: int, seconds: float) -> None:
    """Prints megabytes per second the server acknowledged-or-received over ``seconds``."""
    sel = selectors.DefaultSelector()
    payload = memoryview(b"x" * PACKET * 8)
    state = {}
    opened = 0
    for _ in range(conns):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            break
        s.setblocking(False)
        state[s] = [PACKET * BURST, 0]     # bytes left in this burst, acks seen
        sel.register(s, selectors.EVENT_WRITE)
        opened += 1
    sent_total, start = 0, None
    deadline = time.monotonic() + 1.0 + seconds       # one second of warm-up
    while (now := time.monotonic()) < deadline:
        if start is None and now > deadline - seconds:
            start, sent_total = now, 0
        for key, mask in sel.select(0.1):
            s = key.fileobj
            st = state[s]
            if mask & selectors.EVENT_READ:
                try:
                    data = s.recv(4096)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(s)
                    continue
                st[1] += len(data)
                if st[1] >= len(ACK):
                    st[1] -= len(ACK)
                    st[0] = PACKET * BURST
                    sel.modify(s, selectors.EVENT_WRITE)
            elif mask & selectors.EVENT_WRITE:
                try:
                    n = s.send(payload[:min(st[0], len(payload))])
                except BlockingIOError:
                    continue
                except OSError:
                    sel.unregister(s)
                    continue
                st[0] -= n
                sent_total += n
                if st[0] == 0:
                    sel.modify(s, selectors.EVENT_READ)
    elapsed = time.monotonic() - start
    print(f"{opened} {sent_total / elapsed / 2**20:.1f}", flush=True)


# -- driver -----------------------------------------------------------------------------------

def measure(kind: str, conns: int, seconds: float, port: int) -> tuple[int, float]:
    server = subprocess.Popen(["taskset", "-c", "0", sys.executable, __file__, "serve", kind,
                               str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        out = subprocess.run(["taskset", "-c", "1", sys.executable, __file__, "load", str(port),
                              str(conns), str(seconds)], capture_output=True, text=True,
                             timeout=120 + seconds)
        opened, rate = out.stdout.split()
        return int(opened), float(rate)
    except (ValueError, subprocess.TimeoutExpired):
        return 0, 0.0
    finally:
        server.stdin.close()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conns", default="1,4,16,64,256,1024,4096")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(__file__))
    from overload import figure, save, write_table

    counts = [int(c) for c in args.conns.split(",")]
    results: dict[str, list] = {"seda": [], "threads": []}
    port = 19500
    for conns in counts:
        for kind in results:
            port += 1
            opened, rate = measure(kind, conns, args.seconds, port)
            results[kind].append((opened, rate))
            print(f"{kind:8} {conns:5} connections: {opened:5} opened, {rate:8.1f} MB/s",
                  flush=True)
    rows = [[c, results["seda"][i][1], results["threads"][i][1],
             f"{results['threads'][i][0]}/{c}"] for i, c in enumerate(counts)]
    write_table("sockets_fig35", ["connections", "seda MB/s", "thread-per-connection MB/s",
                                  "threads: connections opened"], rows,
                f"Bursts of {BURST} x {PACKET // 1024} KB packets, a 32-byte ack per burst; "
                f"{args.seconds:.0f} s per point after 1 s of warm-up; server on core 0, one "
                "epoll load generator on core 1.")
    fig, (ax,) = figure(1, "Fig. 35: asynchronous sockets vs thread per connection")
    for kind, label in (("seda", "seda socket layer (one loop thread)"),
                        ("threads", "blocking, thread per connection")):
        ax.plot(counts, [r for _, r in results[kind]], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("connections")
    ax.set_ylabel("MB/s received")
    ax.set_ylim(bottom=0)
    ax.legend()
    save(fig, "sockets_fig35")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        (serve_seda if sys.argv[2] == "seda" else serve_threads)(int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "load":
        load(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    else:
        main()
