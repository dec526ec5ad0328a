"""``seda.status`` served by a service of its own (not Haboob): mounted in the service's HTTP
routing or on an address of its own, counting the service's HTTP stage, or none; then the
page in a real browser. (Haboob's use of it: tests/haboob/test_server_status.py; with workers:
tests/haboob/test_supervisor.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

import seda
from seda.http import Response, responses, serve
from seda.status import PREFIX, add_status, served_at

from tests.helpers.net import fetch, until

WAIT = 10.0


class Service(seda.EventHandler):
    """A service's own routing: the status page's requests to it, the rest answered here
    (/missing 404, /fail 500, anything else 200)."""

    def __init__(self, status: seda.Sink) -> None:
        self.status = status

    def handle_event(self, req):
        if req.path == PREFIX[:-1] or req.path.startswith(PREFIX):
            self.status.enqueue(req)
        elif req.path == "/missing":
            req.respond(responses.not_found())
        else:
            req.respond(Response(500 if req.path == "/fail" else 200, b"service"))


class Boom(seda.EventHandler):
    def handle_event(self, ev):
        raise RuntimeError("a handler exception, for the page to count")


@pytest.fixture
def runtime():
    """A runtime the test adds stages to and starts; stopped after it."""
    rt = seda.Runtime()
    yield rt
    rt.stop()


def start(rt, own_address=False):
    """A service 'svc' with its status page mounted at /_seda/ or, with ``own_address``, on
    an address of its own; returns (the service's address, the status handle)."""
    status = add_status(rt, "svc")
    rt.add_stage("svc", Service(status.sink), blocking=False)
    rt.add_stage("boom", Boom())
    if own_address:
        status.serve(("127.0.0.1", 0))
    listener = serve(rt, ("127.0.0.1", 0), rt.sink("svc"))
    rt.start()
    return listener.address[:2], status


def test_mounted_in_a_service_it_counts_the_services_requests(runtime):
    address, status = start(runtime)
    for path in ("/", "/x", "/missing", "/fail"):
        fetch(address, path)
    runtime.sink("boom").enqueue("go")
    until(lambda: runtime.stats()["boom"]["errors"], lambda n: n == 1)

    doc = json.loads(fetch(address, "/_seda/status.json")[1])
    assert (doc["service"], doc["http"]) == ("svc", "http")
    traffic = doc["traffic"]
    assert traffic["total"]["responses"] == {"200": 2, "404": 1, "500": 1}
    assert traffic["total"]["errors"]["handler"] == 1 and traffic["total"]["errors"]["5xx"] == 1
    assert traffic["connections"] >= 1 and "svc.status" in doc["stages"]
    assert status.address is None and served_at(runtime, "svc") is None

    r, page = fetch(address, "/_seda/")
    assert r.status == 200 and b"<title>svc: status</title>" in page and b"requests/s" in page
    r, metrics = fetch(address, "/_seda/metrics")
    assert r.status == 200
    assert b'svc_http_responses_total{code="404"} 1.0' in metrics
    assert b"svc_start_time_seconds " in metrics and b"haboob" not in metrics
    assert b'seda_stage_errors_total{stage="boom"} 1.0' in metrics


def test_the_page_answers_only_what_it_knows(runtime):
    address, _ = start(runtime)
    r, _ = fetch(address, "/_seda")
    assert r.status in (301, 302) and r.getheader("location") == "/_seda/"
    assert fetch(address, "/_seda/nothing")[0].status == 404
    assert fetch(address, "/_seda/", method="POST")[0].status == 405
    assert fetch(address, "/_seda/graph.dot")[1].startswith(b"digraph seda {")
    assert "svc" in json.loads(fetch(address, "/_seda/stats.json")[1])


def test_on_an_address_of_its_own_it_counts_the_service_not_itself(runtime):
    address, status = start(runtime, own_address=True)
    own = served_at(runtime, "svc")
    assert own == status.address and own is not None and own != address
    assert fetch(address, "/")[0].status == 200
    r, _ = fetch(own, "/")
    assert r.status in (301, 302) and r.getheader("location") == "/_seda/"
    assert "svc.status.http" in runtime.stats()
    doc = json.loads(fetch(own, "/_seda/status.json")[1])
    assert doc["traffic"]["total"]["responses"] == {"200": 1}      # the service's port only


def test_a_service_without_http_shows_its_stages_and_errors(runtime):
    status = add_status(runtime, "router", http=None)
    runtime.add_stage("boom", Boom())
    status.serve(("127.0.0.1", 0))
    runtime.start()
    runtime.sink("boom").enqueue("go")
    until(lambda: runtime.stats()["boom"]["errors"], lambda n: n == 1)
    doc = json.loads(fetch(status.address, "/_seda/status.json")[1])
    assert doc["http"] is None and doc["traffic"]["total"]["errors"]["handler"] == 1
    assert doc["traffic"]["total"]["responses"] == {}   # the page's own requests do not count
    page = fetch(status.address, "/_seda/")[1]
    assert b"<h2>Errors</h2>" in page and b"requests/s" not in page
    metrics = fetch(status.address, "/_seda/metrics")[1]
    assert b"router_start_time_seconds " in metrics and b"router_http_" not in metrics


class Counting(seda.EventHandler):
    """A handler with counters of its own, nested, and values that are no numbers."""

    def stats(self):
        return {"routed": {"query": 3, "ping": 1}, "connections": 2, "mode": "fast", "up": True}


def test_a_handlers_own_counters_are_on_the_page_and_in_the_metrics(runtime):
    status = add_status(runtime, "router", http=None)
    runtime.add_stage("router.core", Counting())
    status.serve(("127.0.0.1", 0))
    runtime.start()
    metrics = fetch(status.address, "/_seda/metrics")[1]
    assert b'seda_stage_handler{name="routed.query",stage="router.core"} 3.0' in metrics
    assert b'seda_stage_handler{name="connections",stage="router.core"} 2.0' in metrics
    assert b'name="mode"' not in metrics and b'name="up"' not in metrics
    page = fetch(status.address, "/_seda/")[1]
    assert b"<h2>Counters</h2>" in page
    assert b"<td>router.core</td><td>routed.query</td><td>3</td>" in page


@pytest.mark.parametrize("service", ["my-service", "9lives", "", "a.b"])
def test_a_service_name_must_prefix_metric_names(runtime, service):
    with pytest.raises(ValueError, match="prefixes the Prometheus metric names"):
        add_status(runtime, service)
    assert runtime.stats() == {}


def test_no_status_page_no_address(runtime):
    assert served_at(runtime, "svc") is None


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="Debian's chromium is not installed (make test installs it as root)")
def test_the_page_renders_in_headless_chromium(runtime, tmp_path):
    address, _ = start(runtime)
    for _ in range(3):
        fetch(address, "/")
        fetch(address, "/missing")
    done = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
         f"http://{address[0]}:{address[1]}/_seda/"],
        capture_output=True, text=True, timeout=90)
    dom = done.stdout
    assert '<table id="stages">' in dom and '<table id="traffic">' in dom, done.stderr[-2000:]
    stages = list(runtime.stats())
    assert dom.count("<rect") >= len(stages)            # a box per stage in the graph
    assert dom.count('class="label"') >= 4               # and a label per edge
    for stage in stages:
        assert f">{stage}<" in dom


def test_a_status_page_added_to_a_running_runtime_keeps_sampling(runtime, tmp_path):
    """Its init runs inside add_stage there, before add_status returns: it must find its own
    sink and the share stage's by itself (sampling once stopped after the first sample)."""
    runtime.start()
    status = add_status(runtime, "late", http=None, share_dir=str(tmp_path))
    stage = runtime.stage("late.status")
    until(lambda: stage.processed, lambda n: n >= 2)    # a sample a second, through its sink
    assert status.share is not None and list(tmp_path.iterdir())   # its snapshot was shared
