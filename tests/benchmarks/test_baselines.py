"""The baseline servers of the web-server study, each run as its command on loopback: files,
404, HEAD, keep-alive, the same bytes from all of them, the bounded pool's queue, and AMPED's
helpers."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.baselines import amped
from benchmarks.baselines.launch import listen
from benchmarks.baselines.sped import Connection
from benchmarks.baselines.static_http import Request, plan
from benchmarks.serving import REPO

BASELINES = ["thread_per_conn", "bounded_pool", "sped", "amped"]
BIG = bytes(range(256)) * 1200          # 300 KB: more than one send's worth
WAIT = 5.0                              # the longest any answer may take


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("www")
    (root / "index.html").write_bytes(b"<h1>hello</h1>\n")
    (root / "sub").mkdir()
    (root / "sub" / "big.bin").write_bytes(BIG)
    (root / "sub" / "a file.txt").write_bytes(b"spaced\n")
    return root


def start(module: str, root: Path, *extra: str) -> tuple[subprocess.Popen[str], int]:
    """Start a baseline on a free port and wait for its ready line."""
    proc = subprocess.Popen([sys.executable, "-m", f"benchmarks.baselines.{module}", "--root",
                             str(root), "--bind", "127.0.0.1:0", *extra],
                            cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.fullmatch(r"ready http://127\.0\.0\.1:(\d+)/\n", line)
    assert match, f"{module} printed {line!r}"
    return proc, int(match.group(1))


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(WAIT)
    assert proc.stdout is not None
    proc.stdout.close()


@pytest.fixture(scope="module", params=BASELINES)
def baseline(request: pytest.FixtureRequest, root: Path) -> Iterator[int]:
    proc, port = start(request.param, root)
    yield port
    stop(proc)


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=WAIT)


class Responses:
    """Reads the responses of one connection in turn (pipelined ones too)."""

    def __init__(self, sock: socket.socket) -> None:
        self.stream = sock.makefile("rb")

    def next(self, head: bool = False) -> tuple[bytes, dict[str, str], bytes]:
        """Status line, headers (names lowercased) and the body by Content-Length."""
        status = self.stream.readline().rstrip(b"\r\n")
        assert status, "connection closed before a response"
        headers = {}
        while (line := self.stream.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        body = b"" if head else self.stream.read(int(headers["content-length"]))
        return status, headers, body

    def closed(self) -> bool:
        return self.stream.read(1) == b""


def get(port: int, target: str, method: str = "GET") -> tuple[bytes, dict[str, str], bytes]:
    with connect(port) as sock:
        sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        return Responses(sock).next(head=method == "HEAD")


def test_serves_a_file(baseline: int) -> None:
    status, headers, body = get(baseline, "/index.html")
    assert status == b"HTTP/1.1 200 OK"
    assert body == b"<h1>hello</h1>\n"
    assert headers["content-type"] == "text/html"
    assert headers["content-length"] == str(len(body))


def test_serves_a_large_file_a_directory_index_and_escapes(baseline: int) -> None:
    assert get(baseline, "/sub/big.bin")[2] == BIG
    assert get(baseline, "/")[2] == b"<h1>hello</h1>\n"
    assert get(baseline, "/sub/a%20file.txt?query=1")[2] == b"spaced\n"


@pytest.mark.parametrize("target", ["/missing", "/sub/", "/../../etc/passwd", "/%2e%2e/x"])
def test_404(baseline: int, target: str) -> None:
    status, headers, body = get(baseline, target)
    assert status == b"HTTP/1.1 404 Not Found"
    assert body == b"Not Found\n"
    assert headers["content-type"] == "text/plain"


def test_head_has_the_headers_of_get_and_no_body(baseline: int) -> None:
    with connect(baseline) as sock:
        sock.sendall(b"HEAD /sub/big.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
        responses = Responses(sock)
        status, headers, _ = responses.next(head=True)
        assert status == b"HTTP/1.1 200 OK"
        assert headers["content-length"] == str(len(BIG))
        assert headers["content-type"] == "application/octet-stream"
        # the next bytes are the next response, so HEAD sent no body
        assert responses.next()[::2] == (b"HTTP/1.1 200 OK", b"<h1>hello</h1>\n")


def test_keep_alive_two_requests_on_one_connection(baseline: int) -> None:
    with connect(baseline) as sock:
        responses = Responses(sock)
        for target, want in [("/index.html", b"<h1>hello</h1>\n"), ("/sub/big.bin", BIG)]:
            sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            status, headers, body = responses.next()
            assert (status, body) == (b"HTTP/1.1 200 OK", want)
            assert headers["connection"] == "keep-alive"


def test_connection_close_and_http10_close_after_the_response(baseline: int) -> None:
    for request in [b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    b"GET / HTTP/1.0\r\n\r\n"]:
        with connect(baseline) as sock:
            sock.sendall(request)
            responses = Responses(sock)
            assert responses.next()[1]["connection"] == "close"
            assert responses.closed()


def test_other_methods_405_and_garbage_400(baseline: int) -> None:
    assert get(baseline, "/", "DELETE")[0] == b"HTTP/1.1 405 Method Not Allowed"
    with connect(baseline) as sock:
        sock.sendall(b"\x00\x01 not http\r\n\r\n")
        responses = Responses(sock)
        assert responses.next()[0] == b"HTTP/1.1 400 Bad Request"
        assert responses.closed()


def raw(port: int, request: bytes) -> bytes:
    """Everything the server sends for ``request`` (which asks to close) but the Date line."""
    with connect(port) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return re.sub(rb"\r\nDate: [^\r]*", b"", data)


def test_all_baselines_send_the_same_bytes(root: Path) -> None:
    requests = [f"{m} {t} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
                for m, t in [("GET", "/index.html"), ("GET", "/sub/big.bin"), ("GET", "/nope"),
                             ("HEAD", "/sub/a%20file.txt"), ("PUT", "/")]]
    answers = {}
    for module in BASELINES:
        proc, port = start(module, root)
        try:
            answers[module] = [raw(port, r) for r in requests]
        finally:
            stop(proc)
    first = answers[BASELINES[0]]
    assert first[0].startswith(b"HTTP/1.1 200 OK\r\nServer: pyseda-baseline\r\n")
    for module in BASELINES[1:]:
        assert answers[module] == first, module


def test_bounded_pool_queues_connections_beyond_its_workers(root: Path) -> None:
    """With every worker holding a connection, a new one is not accepted: its request waits
    in the backlog, unanswered, until a worker's connection closes."""
    proc, port = start("bounded_pool", root, "--workers", "2")
    try:
        held = [connect(port) for _ in range(2)]
        for sock in held:           # a response proves a worker holds this connection
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            Responses(sock).next()
        queued = connect(port)      # the handshake completes: the kernel's backlog takes it
        queued.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        queued.settimeout(0.3)
        with pytest.raises(TimeoutError):
            queued.recv(1)          # nobody has accepted it
        held[0].close()             # a worker is free: it accepts the queued connection
        queued.settimeout(WAIT)
        assert Responses(queued).next()[2] == b"<h1>hello</h1>\n"
        queued.close()
        held[1].close()
    finally:
        stop(proc)


def test_amped_sends_misses_through_its_helpers(root: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """As if no file were in memory: every GET waits for a helper, and is answered, in order,
    also when pipelined."""
    asked: list[str] = []
    ask = amped.Helper.ask

    def recording_ask(helper: amped.Helper, conn: Connection, req: Request, path: str) -> None:
        asked.append(path)
        ask(helper, conn, req, path)

    monkeypatch.setattr(amped, "read_nowait", lambda path: None)
    monkeypatch.setattr(amped.Helper, "ask", recording_ask)
    server = amped.AmpedServer(listen("127.0.0.1:0"), str(root), helpers=2)
    port = server.listener.getsockname()[1]
    loop = threading.Thread(target=server.serve_forever)
    loop.start()
    try:
        with connect(port) as sock:
            sock.sendall(b"GET /sub/big.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                         b"GET /missing HTTP/1.1\r\nHost: x\r\n\r\n"
                         b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
            responses = Responses(sock)
            assert responses.next()[2] == BIG
            assert responses.next()[0] == b"HTTP/1.1 404 Not Found"
            assert responses.next()[2] == b"<h1>hello</h1>\n"
        assert [Path(p).name for p in asked] == ["big.bin", "index.html"]
    finally:
        server.stop()
        loop.join(WAIT)
        server.close()
    assert not loop.is_alive()


def test_amped_reads_a_cached_file_without_waiting(root: Path) -> None:
    path = plan(b"GET", b"/sub/big.bin", str(root))
    assert isinstance(path, str)
    assert amped.read_nowait(path) == BIG   # just written: its pages are in the page cache
