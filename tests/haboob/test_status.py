"""/_seda/: traffic and errors over the last minute, the stage table and graph, JSON, DOT and
Prometheus; turned off, or on an address of its own. (With workers: test_supervisor.py.)"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import time

import pytest

import seda
from haboob.cli import parse
from haboob.server import Options, build
from haboob.status import served_at
from haboob.status.aggregate import merge, merge_graph
from haboob.status.traffic import Traffic, counters, tally

WAIT = 10.0


def hello_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"app saw " + environ["PATH_INFO"].encode()]


def failing_app(environ, start_response):
    start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
    return [b"broken"]


class Boom(seda.EventHandler):
    def handle_event(self, ev):
        raise RuntimeError("a handler exception, for the page to count")


@pytest.fixture
def site(tmp_path):
    (tmp_path / "index.html").write_bytes(b"<h1>home</h1>")
    return tmp_path


@pytest.fixture
def haboob(site):
    """Start Haboob on port 0 with these options; returns (runtime, address)."""
    runtimes = []

    def start(**options):
        rt = seda.Runtime()
        rt.add_stage("boom", Boom())
        listener = build(rt, Options(root=str(site), port=0, **options))
        rt.start()
        runtimes.append(rt)
        return rt, listener.address[:2]

    yield start
    for rt in runtimes:
        rt.stop()


def fetch(address, path, method="GET"):
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request(method, path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r, body


def until(value, ok):
    """Poll ``value()`` until ``ok`` of it (what a timer or another thread does next)."""
    deadline = time.monotonic() + WAIT
    while not ok(v := value()):
        assert time.monotonic() < deadline, v
        time.sleep(0.01)
    return v


def test_the_page_counts_requests_responses_and_errors(haboob):
    rt, address = haboob(apps=[("/app", hello_app), ("/fail", failing_app)])
    for path in ("/", "/", "/app/x", "/missing", "/fail/x"):
        fetch(address, path)
    rt.sink("boom").enqueue("go")
    until(lambda: rt.stats()["boom"]["errors"], lambda n: n == 1)

    doc = json.loads(fetch(address, "/_seda/status.json")[1])
    traffic = doc["traffic"]
    assert traffic["total"]["responses"] == {"200": 3, "404": 1, "500": 1}
    assert traffic["total"]["classes"] == {"2xx": 3, "4xx": 1, "5xx": 1}
    errors = traffic["total"]["errors"]
    assert (errors["5xx"], errors["dropped"], errors["handler"], errors["total"]) == (1, 0, 1, 2)
    assert traffic["recent"] == traffic["total"]           # less than a minute since the start
    assert 0 < traffic["window_s"] < 60 and traffic["requests_per_s"] > 0
    assert traffic["connections"] >= 1 and 0 <= doc["uptime_s"] < 60
    assert [w["pid"] for w in doc["workers"]] == [doc["workers"][0]["pid"]]
    assert "supervisor" not in doc
    assert doc["stages"]["haboob.cache"]["processed"] >= 2
    assert ["http", "haboob.recv"] in [e[:2] for e in doc["graph"]]

    r, body = fetch(address, "/_seda/")
    page = body.decode()
    assert r.status == 200 and 'http-equiv="refresh"' in page
    assert 'id="traffic"' in page and 'id="stages"' in page and "<svg" in page
    assert "haboob.app1:/fail" in page and "handler exceptions" in page and "up <b>" in page
    assert 'id="workers"' not in page                      # one process: no breakdown

    stages = json.loads(fetch(address, "/_seda/stats.json")[1])
    assert stages["haboob.recv"]["processed"] >= 5 and "haboob.app0:/app" in stages
    assert fetch(address, "/_seda/graph.dot")[1].startswith(b"digraph seda {")
    r, metrics = fetch(address, "/_seda/metrics")
    assert r.status == 200 and r.getheader("content-type").startswith("text/plain")
    assert b'seda_stage_processed_total{stage="haboob.recv"}' in metrics
    assert b'haboob_http_responses_total{code="404"} 1.0' in metrics
    assert b'haboob_http_requests_failed_total{reason="dropped"} 0.0' in metrics
    assert b"haboob_http_connections " in metrics and b"haboob_start_time_seconds " in metrics


def test_the_page_answers_only_what_it_knows(haboob):
    _, address = haboob()
    r, _ = fetch(address, "/_seda")
    assert r.status in (301, 302) and r.getheader("location") == "/_seda/"
    assert fetch(address, "/_seda/nothing")[0].status == 404
    assert fetch(address, "/_seda/", method="POST")[0].status == 405


def test_the_page_can_be_turned_off(haboob):
    rt, address = haboob(status=False)
    assert fetch(address, "/")[0].status == 200
    assert fetch(address, "/_seda/")[0].status == 404
    assert "haboob.status" not in rt.stats() and served_at(rt) is None


def test_the_page_on_an_address_of_its_own(haboob):
    rt, address = haboob(status_bind=("127.0.0.1", 0))
    status = served_at(rt)
    assert status is not None and status != address
    assert fetch(address, "/")[0].status == 200
    assert fetch(address, "/_seda/")[0].status == 404      # not on the main address
    r, _ = fetch(status, "/")
    assert r.status in (301, 302) and r.getheader("location") == "/_seda/"
    assert fetch(status, "/_seda/")[0].status == 200
    doc = json.loads(fetch(status, "/_seda/status.json")[1])
    assert doc["traffic"]["total"]["responses"] == {"200": 1, "404": 1}  # the main port's only


def test_rates_are_over_the_last_minute_of_samples():
    traffic = Traffic()
    for t in range(0, 121):                                 # 10 responses a second, 2 minutes
        traffic.sample(float(t), {"200": 10.0 * t, "dropped": float(t // 60)})
    now = {"200": 1200.0, "dropped": 2.0}
    summary = traffic.summary(120.0, now, 7)
    assert summary["window_s"] == 60 and summary["requests_per_s"] == 10
    assert summary["recent"]["responses"] == {"200": 600} and summary["connections"] == 7
    assert summary["recent"]["errors"]["dropped"] == 1 and summary["total"]["requests"] == 1200

    fresh = Traffic()
    fresh.sample(0.0, {"200": 0.0})
    assert fresh.summary(0.0, {"200": 0.0}, 0)["requests_per_s"] == 0      # no time yet


def test_lost_responses_and_unknown_counters():
    stats = {"http": {"errors": 1, "handler": {
        "connections": 3, "responses": {"200": 900, "503": 4}, "shed": 4, "dropped": 742,
        "aborted": 2, "streams": 1, "mode": "fast", "draining": True}},
        "haboob.miss": {"errors": 2}}
    flat = counters(stats, "http")
    assert "connections" not in flat and "mode" not in flat and "draining" not in flat
    counted = tally(flat)
    assert counted["errors"] == {"5xx": 4, "dropped": 742, "aborted": 2, "handler": 3,
                                 "total": 751}
    assert counted["counts"] == {"shed": 4, "dropped": 742, "aborted": 2, "streams": 1}
    assert counted["requests"] == 904
    assert counters({}, "http") == {"handler errors": 0}   # no HTTP stage (yet)


def test_workers_add_up():
    a = {"http": {"queue": 1, "threads": 1, "p90_ms": 2.0, "batch": 64, "manager": "loop",
                  "handler": {"responses": {"200": 5}}}}
    b = {"http": {"queue": 2, "threads": 1, "p90_ms": 9.0, "batch": 32, "manager": "loop",
                  "handler": {"responses": {"200": 1, "404": 1}}},
         "haboob.status.share": {"queue": 0}}
    assert merge([a, b]) == {
        "http": {"queue": 3, "threads": 2, "p90_ms": 9.0, "batch": 64, "manager": "loop",
                 "handler": {"responses": {"200": 6, "404": 1}}},
        "haboob.status.share": {"queue": 0}}
    assert merge_graph([[("a", "b", 1)], [["a", "b", 2], ["b", "a", 1]]]) == [
        ("a", "b", 3), ("b", "a", 1)]


def test_command_line_options(site):
    options, _, _ = parse(["--root", str(site)])
    assert options.status and options.status_bind is None and options.status_dir is None
    assert not parse(["--root", str(site), "--no-status"])[0].status
    options = parse(["--root", str(site), "--status-bind", "127.0.0.1:9100"])[0]
    assert options.status and options.status_bind == ("127.0.0.1", 9100)
    for wrong in (["--no-status", "--status-bind", "127.0.0.1:9100"],
                  ["--status-bind", "nowhere"], ["--status-bind", "host:99999"]):
        with pytest.raises(SystemExit):
            parse(["--root", str(site), *wrong])


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="Debian's chromium is not installed (make test installs it as root)")
def test_the_page_renders_in_headless_chromium(haboob, tmp_path):
    _, address = haboob(apps=[("/app", hello_app)])
    for _ in range(3):
        fetch(address, "/")
        fetch(address, "/app/x")
        fetch(address, "/missing")
    done = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
         f"http://{address[0]}:{address[1]}/_seda/"],
        capture_output=True, text=True, timeout=90)
    dom = done.stdout
    assert '<table id="stages">' in dom and '<table id="traffic">' in dom, done.stderr[-2000:]
    assert dom.count("<rect") >= 8                       # a box per stage in the graph
    assert dom.count('class="label"') >= 5                # and a label per edge
    for stage in ("haboob.recv", "haboob.cache", "haboob.app0:/app", "http", "seda.io.read"):
        assert f">{stage}<" in dom
