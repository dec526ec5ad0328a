"""Haboob's /_seda/ (seda.status): its traffic, errors, stages and haboob_ metrics; turned off,
or on an address of its own, from the command line. (With workers: test_supervisor.py; the
page itself: tests/seda/status/.)"""

from __future__ import annotations

import json

import pytest

import seda
from haboob.cli import parse
from haboob.server import Options, build
from seda.status import served_at

from tests.helpers.net import fetch, until

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
    edges = [e[:2] for e in doc["graph"]]                  # (routed as the HTTP stage reads)
    assert ["http", "haboob.cache"] in edges and ["http", "haboob.app0:/app"] in edges

    r, body = fetch(address, "/_seda/")
    page = body.decode()
    assert r.status == 200 and 'http-equiv="refresh"' in page
    assert 'id="traffic"' in page and 'id="stages"' in page and "<svg" in page
    assert "haboob.app1:/fail" in page and "handler exceptions" in page and "up <b>" in page
    assert 'id="workers"' not in page                      # one process: no breakdown

    stages = json.loads(fetch(address, "/_seda/stats.json")[1])
    assert stages["haboob.app0:/app"]["processed"] >= 1 and "haboob.recv" not in stages
    assert fetch(address, "/_seda/graph.dot")[1].startswith(b"digraph seda {")
    r, metrics = fetch(address, "/_seda/metrics")
    assert r.status == 200 and r.getheader("content-type").startswith("text/plain")
    assert b'seda_stage_processed_total{stage="haboob.cache"}' in metrics
    assert b'haboob_http_responses_total{code="404"} 1.0' in metrics
    assert b'haboob_http_requests_failed_total{reason="dropped"} 0.0' in metrics
    assert b"haboob_http_connections " in metrics and b"haboob_start_time_seconds " in metrics


def test_haboob_routes_all_of_the_prefix_to_the_page(haboob):
    _, address = haboob()
    r, _ = fetch(address, "/_seda")
    assert r.status in (301, 302) and r.getheader("location") == "/_seda/"
    assert fetch(address, "/_seda/nothing")[0].status == 404     # the page's, not a file's


def test_the_page_can_be_turned_off(haboob):
    rt, address = haboob(status=False)
    assert fetch(address, "/")[0].status == 200
    assert fetch(address, "/_seda/")[0].status == 404
    assert "haboob.status" not in rt.stats() and served_at(rt, "haboob") is None


def test_the_page_on_an_address_of_its_own(haboob):
    rt, address = haboob(status_bind=("127.0.0.1", 0))
    status = served_at(rt, "haboob")
    assert status is not None and status != address
    assert fetch(address, "/")[0].status == 200
    assert fetch(address, "/_seda/")[0].status == 404      # not on the main address
    r, _ = fetch(status, "/")
    assert r.status in (301, 302) and r.getheader("location") == "/_seda/"
    assert fetch(status, "/_seda/")[0].status == 200
    doc = json.loads(fetch(status, "/_seda/status.json")[1])
    assert doc["traffic"]["total"]["responses"] == {"200": 1, "404": 1}  # the main port's only


def test_command_line_options(site):
    options, _ = parse(["--root", str(site)])
    assert options.status and options.status_bind is None and options.status_dir is None
    assert not parse(["--root", str(site), "--no-status"])[0].status
    options = parse(["--root", str(site), "--status-bind", "127.0.0.1:9100"])[0]
    assert options.status and options.status_bind == ("127.0.0.1", 9100)
    for wrong in (["--no-status", "--status-bind", "127.0.0.1:9100"],
                  ["--status-bind", "nowhere"], ["--status-bind", "host:99999"]):
        with pytest.raises(SystemExit):
            parse(["--root", str(site), *wrong])
