"""The ``gnutella`` command as a user runs it: it starts, routes, serves its status page and
metrics, stops cleanly on TERM and INT (saving its host cache), and says what is wrong with a
bad command line in one line, never a traceback."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys

import pytest

from gnutella.descriptors import encode_query

from tests.helpers.servent import WAIT, Servent


def gnutella(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gnutella", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def address_in(line: str, prefix: str) -> tuple[str, int]:
    assert line.startswith(prefix), line
    host, port = line[len(prefix):].strip().removeprefix("http://").split("/")[0].split(":")
    return host, int(port)


def get(address: tuple[str, int], path: str) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection(*address, timeout=WAIT)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.getheader("content-type"), response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_it_routes_serves_its_status_and_stops_cleanly(tmp_path, stop):
    cache = tmp_path / "hosts"
    proc = gnutella("--bind", "127.0.0.1:0", "--status", "127.0.0.1:0", "--hostcache",
                    str(cache), "--outgoing", "0")
    try:
        address = address_in(proc.stdout.readline(), "gnutella routing on ")
        status = address_in(proc.stdout.readline(), "stages and metrics: ")
        a, b = Servent.connect(address), Servent.connect(address)
        a.join(), b.join()
        query = encode_query("through the command", ttl=3)
        a.send(query)
        assert b.next().guid == query[:16]
        code, ctype, page = get(status, "/_seda/")
        assert code == 200 and ctype.startswith("text/html")
        assert b"<td>gnutella.router</td><td>routed.query</td><td>1</td>" in page   # its own
        code, _, body = get(status, "/_seda/status.json")
        router = json.loads(body)["stages"]["gnutella.router"]["handler"]
        assert router["routed"]["query"] == 1 and router["answered"] == 2
        code, _, metrics = get(status, "/_seda/metrics")
        assert code == 200 and b'seda_stage_processed_total{stage="gnutella.router"}' in metrics
        assert (b'seda_stage_handler{name="routed.query",stage="gnutella.router"} 1.0'
                in metrics)
        a.close(), b.close()
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "stopping" in err
    assert cache.read_text().startswith("# pyseda gnutella host cache")


def test_profile_samples_the_router_stage_for_the_model(tmp_path):
    profile = tmp_path / "router.jsonl"
    proc = gnutella("--bind", "127.0.0.1:0", "--outgoing", "0", "--profile", str(profile),
                    "--profile-interval", "0.05")
    try:
        address = address_in(proc.stdout.readline(), "gnutella routing on ")
        a, b = Servent.connect(address), Servent.connect(address)
        a.join(), b.join()
        a.send(encode_query("profiled", ttl=3))
        b.next()
        a.close(), b.close()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    samples = [json.loads(line) for line in profile.read_text().splitlines()]
    assert samples and all("gnutella.router" in s["stages"] for s in samples)
    assert {"queue", "threads"} <= samples[-1]["stages"]["gnutella.router"].keys()
    planned = subprocess.run([sys.executable, "-m", "seda.model", "plan", str(profile)],
                             capture_output=True, text=True, timeout=WAIT)
    assert planned.returncode == 0 and "gnutella.router" in planned.stdout, planned.stderr


def test_help_shows_every_option():
    done = subprocess.run([sys.executable, "-m", "gnutella", "--help"], capture_output=True,
                          text=True, timeout=WAIT)
    assert done.returncode == 0
    for option in ("--bind", "--peer", "--hostcache", "--max-connections", "--query-delay-ms",
                   "--status", "--router-threads", "--max-pending", "--max-forward",
                   "--handshake-timeout",
                   "--profile", "--profile-interval"):
        assert option in done.stdout


@pytest.mark.parametrize("args, code, message", [
    (["--bind", "localhost"], 2, "'localhost' is not HOST:PORT"),
    (["--bind", "127.0.0.1:99999"], 2, "the port is a number from 0 to 65535"),
    (["--bind", "::1:6346"], 2, "write an IPv6 address in brackets"),
    (["--peer", "10.0.0.1:0"], 2, "the port is a number from 1 to 65535"),
    (["--max-connections", "0"], 2, "'0' is not a whole number >= 1"),
    (["--query-delay-ms", "soon"], 2, "'soon' is not a whole number >= 0"),
    (["--max-forward", "0"], 2, "'0' is not a whole number >= 1"),
    (["--handshake-timeout", "-1"], 2, "'-1' is not a number of seconds > 0"),
    (["--hostcache", "/no/such/dir/hosts"], 2, "hostcache: cannot write in /no/such/dir"),
    (["--profile", "/no/such/dir/p.jsonl"], 1, "cannot write the profile /no/such/dir"),
    (["--profile-interval", "0"], 2, "'0' is not a number of seconds > 0"),
    (["--bind", "192.0.2.1:6346"], 1, "cannot listen on 192.0.2.1:6346"),
    (["--peer", "no-such-host.invalid:6346"], 1, "cannot resolve no-such-host.invalid:6346"),
])
def test_a_bad_command_line_is_one_clear_line(args, code, message):
    done = subprocess.run([sys.executable, "-m", "gnutella", "--bind", "127.0.0.1:0", *args],
                          capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == code and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_an_address_in_use_is_said_so():
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    try:
        done = subprocess.run([sys.executable, "-m", "gnutella", "--bind", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=WAIT)
    finally:
        taken.close()
    assert done.returncode == 1
    assert done.stderr == f"gnutella: cannot listen on 127.0.0.1:{port}: Address already in use\n"
