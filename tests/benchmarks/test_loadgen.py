"""The load generator against a small threaded HTTP server on loopback, and its parts alone."""

from __future__ import annotations

import json
import math
import random
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from benchmarks.loadgen import (
    closed_loop,
    fixed,
    jain,
    make_fileset,
    make_webstone_fileset,
    open_loop,
    specweb99,
    webstone,
)
from benchmarks.loadgen.__main__ import main
from benchmarks.loadgen.parser import ProtocolError, ResponseParser
from benchmarks.loadgen.workloads import SPEC_CLASS_MIX, WEBSTONE_FILES, spec_file_size

SLOW_S = 0.02                   # service time of /slow
STALL_S = 5.0                   # /stall holds a request at most this long (or until teardown)


class Handler(BaseHTTPRequestHandler):
    """Routes by path: /ok, /status/<n>, /chunked, /slow, /stall, /close (Connection: close), and
    /drop (answers, then closes the connection without saying so, as a server timing out idle
    keep-alives does)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True      # headers and body are separate writes
    server: Server

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections.append(0)
            self.conn_index = len(self.server.connections) - 1

    def log_message(self, format: str, *args: object) -> None:
        pass

    def reply(self, status: int, body: bytes = b"hello") -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.connections[self.conn_index] += 1
        path = self.path
        if path == "/ok":
            self.reply(200)
        elif path.startswith("/status/"):
            self.reply(int(path.rsplit("/", 1)[1]), b"no")
        elif path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (b"5\r\nhello\r\n", b"1", b"0;ext=1\r\n", b"0123456789abcdef\r\n",
                          b"0\r\nX-Trailer: y\r\n", b"\r\n"):
                self.wfile.write(piece)     # unbuffered: each piece its own send
        elif path == "/slow":
            time.sleep(SLOW_S)              # the service time under test, not synchronisation
            self.reply(200)
        elif path == "/stall":
            self.server.stop.wait(STALL_S)
            self.close_connection = True
        elif path == "/drop":
            self.reply(200)
            self.close_connection = True
        elif path == "/close":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"ok")
            self.close_connection = True
        else:
            self.reply(404, b"no")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: type = Handler) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.lock = threading.Lock()
        self.connections: list[int] = []      # requests seen on each connection
        self.stop = threading.Event()

    def url(self, path: str = "/ok") -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


@pytest.fixture
def server():
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield srv
    srv.stop.set()
    srv.shutdown()
    srv.server_close()
    thread.join()


def run_closed(url: str, **kw):
    kw = {"clients": 4, "think_ms": 0, "duration": 5, "timeout": 3, "progress": False} | kw
    return closed_loop(url, **kw)


# -- fairness and reports -------------------------------------------------------------------------

def test_jain_index_of_known_counts():
    assert jain([5, 5, 5, 5]) == 1.0
    assert jain([1, 0, 0, 0]) == 0.25
    assert jain([1, 2, 3]) == pytest.approx(36 / 42)
    assert jain([]) == 1.0 and jain([0, 0]) == 1.0


def test_closed_loop_counts_add_up_and_reconnects_after_r_requests(server):
    report = run_closed(server.url(), clients=4, requests_per_conn=5, max_requests=200)
    assert report.requests == 200 and report.errors.total == 0
    assert len(report.per_client) == 4 and sum(report.per_client) == 200
    assert report.fairness == pytest.approx(jain(report.per_client))
    assert sum(server.connections) == 200
    # Each client closes after 5 requests: its n requests took ceil(n/5) connections.
    assert len(server.connections) == sum(math.ceil(n / 5) for n in report.per_client)
    assert report.connections == len(server.connections)
    assert max(server.connections) == 5
    assert 0 < report.p50_ms <= report.p90_ms <= report.p99_ms <= report.max_ms


def test_think_time_bounds_each_clients_rate(server):
    report = run_closed(server.url(), clients=2, think_ms=50, duration=0.5)
    # A client can at most request, then think 50 ms, ten times in half a second (plus one).
    assert 2 <= report.requests <= 2 * 11
    assert report.errors.total == 0


def test_503_is_a_rejection_and_other_statuses_are_errors(server):
    rejected = run_closed(server.url("/status/503"), max_requests=40)
    assert rejected.requests == 0
    assert rejected.errors.rejected == 40 and rejected.errors.total == 40
    assert 0 < rejected.rejected_p90_ms <= rejected.rejected_max_ms   # timed apart from 2xx
    missing = run_closed(server.url("/status/404"), max_requests=40)
    assert missing.errors.status == 40 and missing.errors.rejected == 0


def test_chunked_responses_are_framed(server):
    report = run_closed(server.url("/chunked"), clients=2, requests_per_conn=0, max_requests=30)
    assert report.requests == 30 and report.errors.total == 0
    assert len(server.connections) == 2          # the connections were kept: framing was exact


@pytest.mark.parametrize(("path", "think_ms"), [("/drop", 0), ("/drop", 5), ("/close", 0)])
def test_server_closing_connections_is_handled(server, path, think_ms):
    """/drop closes unannounced: without think time the next request races the close and is
    retried on a new connection; with it the close is seen while idle. /close says
    Connection: close, so the client reconnects at once. Either way nothing fails."""
    report = run_closed(server.url(path), clients=2, think_ms=think_ms, max_requests=40)
    assert report.requests == 40 and report.errors.total == 0
    assert len(server.connections) == 40 and set(server.connections) == {1}


def test_stalled_server_times_out(server):
    started = time.monotonic()
    report = run_closed(server.url("/stall"), clients=2, timeout=0.3, max_requests=2)
    assert report.errors.timeout == 2 and report.requests == 0
    assert time.monotonic() - started < 2


def test_refused_connections_are_counted():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # closed again: nothing listens there
    report = run_closed(f"http://127.0.0.1:{port}/", clients=2, think_ms=10, duration=0.3)
    assert report.errors.refused > 0 and report.requests == 0
    assert report.errors.total == report.errors.refused


def test_open_loop_completes_every_arrival(server):
    report = open_loop(server.url(), rate=500, max_requests=100, duration=5, progress=False)
    assert report.requests == 100 and report.errors.total == 0
    assert report.offered_rate == 500 and report.fairness is None
    assert len(server.connections) <= 100


def test_open_loop_counts_queueing_in_the_generator(server):
    """Two sockets serving 20 ms requests offered 200/s: arrivals wait for a socket, and that
    wait is in their latency rather than hidden (no coordinated omission)."""
    report = open_loop(server.url("/slow"), rate=200, max_conns=2, max_requests=30, duration=5,
                       progress=False)
    assert report.requests == 30 and report.errors.total == 0
    assert len(server.connections) <= 2
    assert report.max_ms > 3 * SLOW_S * 1000


def test_report_serialises(server, tmp_path):
    report = run_closed(server.url(), clients=2, max_requests=50, progress=True)
    data = report.to_dict()
    assert data["requests"] == 50 and data["errors"]["total"] == 0
    assert json.loads(json.dumps(data))["per_client"] == report.per_client
    fractions = [f for _, f in report.cdf]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert "req/s" in report.summary() and "fairness" in report.summary()
    report.write_cdf(tmp_path / "cdf.csv")
    lines = (tmp_path / "cdf.csv").read_text().splitlines()
    assert lines[0] == "ms,fraction" and len(lines) == len(report.cdf) + 1


def test_cli_closed_writes_json_and_cdf(server, tmp_path, capsys):
    out, cdf = tmp_path / "r.json", tmp_path / "c.csv"
    assert main(["closed", "--url", server.url(), "--clients", "2", "--think-ms", "0",
                 "--max-requests", "20", "--duration", "5", "--json", str(out),
                 "--cdf", str(cdf), "--no-progress"]) == 0
    assert "closed fixed x2" in capsys.readouterr().out
    assert json.loads(out.read_text())["requests"] == 20
    assert cdf.read_text().startswith("ms,fraction")


# -- response framing -----------------------------------------------------------------------------

def feed_bytewise(parser: ResponseParser, data: bytes) -> int:
    """Feeds one byte at a time; returns how many bytes it took to complete."""
    for i in range(len(data)):
        if parser.feed(data[i:i + 1]):
            return i + 1
    return -1


def test_parser_frames_split_responses():
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;x=y\r\nhello\r\nA\r\n0123456789\r\n0\r\nTrailer: 1\r\n\r\n")
    p = ResponseParser()
    assert feed_bytewise(p, chunked) == len(chunked)
    assert p.status == 200 and p.keep_alive
    length = b"HTTP/1.0 201 Created\r\ncontent-length: 3\r\nConnection: Keep-Alive\r\n\r\nabc"
    p.reset()
    assert feed_bytewise(p, length) == len(length) and p.status == 201 and p.keep_alive
    p.reset()
    assert p.feed(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")
    assert p.status == 204
    p.reset()
    assert not p.feed(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody until close")
    assert p.eof() and not p.keep_alive
    p.reset()
    assert p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    assert not p.keep_alive
    p.reset()
    with pytest.raises(ProtocolError):
        p.feed(b"SSH-2.0-OpenSSH\r\n\r\n")


# -- workloads ------------------------------------------------------------------------------------

def test_specweb99_fileset_has_the_class_sizes(tmp_path):
    dirs = make_fileset(tmp_path, 12 * 1024 * 1024)
    assert dirs == 3                          # a directory holds about 5 MB
    for d in range(dirs):
        for c in range(4):
            for f in range(9):
                size = (tmp_path / f"dir{d:05d}" / f"class{c}_{f}").stat().st_size
                assert size == spec_file_size(c, f) == (f + 1) * 1024 * 10 ** c // 10
    assert spec_file_size(0, 0) == 102 and spec_file_size(3, 8) == 921600
    assert specweb99(root=tmp_path).dirs == 3


def test_specweb99_mix_is_close_to_35_50_14_1():
    work = specweb99(20)
    rng = random.Random(7)
    draws = [work.path(rng) for _ in range(100_000)]
    classes = Counter(p.split("/")[2][5] for p in draws)
    for c, share in enumerate(SPEC_CLASS_MIX):
        assert classes[str(c)] / len(draws) == pytest.approx(share, abs=0.01 if share > 0.1
                                                             else 0.003)
    dirs = Counter(p.split("/")[1] for p in draws)
    assert dirs.most_common(1)[0][0] == "dir00000"          # Zipf: the first is the favourite
    assert dirs["dir00000"] / dirs["dir00001"] == pytest.approx(2, rel=0.1)
    files = Counter(p.rsplit("_", 1)[1] for p in draws)
    assert files["0"] / files["2"] == pytest.approx(3, rel=0.1)
    uniform = specweb99(20, dir_dist="uniform")
    rng = random.Random(7)
    spread = Counter(uniform.path(rng).split("/")[1] for _ in range(20_000))
    assert max(spread.values()) / min(spread.values()) < 1.3
    again = random.Random(7)
    assert [work.path(again) for _ in range(1000)] == draws[:1000]   # deterministic by seed


def test_webstone_mix_and_fileset(tmp_path):
    make_webstone_fileset(tmp_path)
    for name, size, _ in WEBSTONE_FILES:
        assert (tmp_path / name).stat().st_size == size
    rng = random.Random(3)
    counts = Counter(webstone("/w").path(rng) for _ in range(50_000))
    for name, _, share in WEBSTONE_FILES:
        assert counts["/w/" + name] / 50_000 == pytest.approx(share, abs=0.01)
    assert fixed("/x").path(rng) == "/x"


def test_specweb99_against_a_file_server(tmp_path):
    make_fileset(tmp_path, 1)

    class Files(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def __init__(self, *args, **kw):
            super().__init__(*args, directory=str(tmp_path), **kw)

        def log_message(self, format: str, *args: object) -> None:
            pass

    srv = Server(Files)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        report = run_closed(srv.url("/"), workload=specweb99(root=tmp_path), max_requests=200)
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join()
    assert report.requests == 200 and report.errors.total == 0
    assert report.workload == "specweb99" and report.mbit_s > 0


def test_cli_writes_a_fileset(tmp_path, capsys):
    assert main(["fileset", "--kind", "specweb99", "--root", str(tmp_path / "s"),
                 "--total-mb", "1"]) == 0
    assert "1 directories" in capsys.readouterr().out
    assert len(list(Path(tmp_path / "s" / "dir00000").iterdir())) == 36
