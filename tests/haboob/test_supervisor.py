"""The haboob command as processes: workers sharing a port, restarts, draining on SIGTERM,
log reopening on SIGHUP, one status page for all the workers."""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

WAIT = 15.0

SLOW_APP = '''
import sys, time

def app(environ, start_response):
    print("handling", environ["PATH_INFO"], file=sys.stderr, flush=True)
    time.sleep(0.5)                       # the work in flight when SIGTERM arrives
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"finished"]
'''

FLAGS_APP = '''
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"multiprocess=%r" % environ["wsgi.multiprocess"]]
'''


class Haboob:
    """A haboob process whose standard error is read line by line as it comes."""

    def __init__(self, cwd, *args):
        self.proc = subprocess.Popen([sys.executable, "-m", "haboob", *args,
                                      "--bind", "127.0.0.1:0"], cwd=cwd, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        banner = self.proc.stdout.readline()
        assert banner.startswith("haboob serving on http://127.0.0.1:"), banner
        self.port = int(banner.rsplit(":", 1)[1].strip(" /\n"))

    def _read(self):
        for line in self.proc.stderr:
            self.lines.put(line)

    def expect(self, text):
        """The next stderr line containing ``text`` (earlier lines are skipped)."""
        deadline = time.monotonic() + WAIT
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if text in line:
                return line

    def get(self, path, port=None):
        c = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=WAIT)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()

    def status_until(self, ok, port=None):
        """/_seda/status.json, polled until ``ok`` of it: workers publish once a second."""
        deadline = time.monotonic() + WAIT
        while True:
            doc = json.loads(self.get("/_seda/status.json", port)[1])
            if ok(doc):
                return doc
            assert time.monotonic() < deadline, doc
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(WAIT)


@pytest.fixture
def run(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_bytes(b"home")
    (tmp_path / "slow_app.py").write_text(SLOW_APP)
    (tmp_path / "flags_app.py").write_text(FLAGS_APP)
    started = []

    def start(*args):
        started.append(Haboob(tmp_path, "--root", "site", *args))
        return started[-1]

    yield start
    for h in started:
        if h.proc.poll() is None:
            h.proc.kill()
            h.proc.wait()


def pid_of(line):
    return int(line.split("worker ")[1].split()[0])


def test_workers_share_the_port_and_a_dead_one_is_replaced(run):
    h = run("--workers", "2")
    pids = {pid_of(h.expect("listening")), pid_of(h.expect("listening"))}
    assert len(pids) == 2
    assert all(h.get("/") == (200, b"home") for _ in range(20))
    victim = pids.pop()
    os.kill(victim, signal.SIGKILL)
    assert pid_of(h.expect("exited")) == victim
    replacement = pid_of(h.expect("listening"))
    assert replacement not in (victim, *pids)
    assert all(h.get("/") == (200, b"home") for _ in range(20))
    assert h.stop() == 0


@pytest.mark.parametrize(("workers", "flag"), [("1", b"False"), ("2", b"True")])
def test_wsgi_multiprocess_says_whether_other_workers_run_the_application(run, workers, flag):
    """PEP 3333: true when another process may run the same application at once (gunicorn
    says so with more than one worker), so that it knows a process-local cache is not shared."""
    h = run("--workers", workers, "--mount", "/app=flags_app:app")
    assert h.get("/app/") == (200, b"multiprocess=" + flag)
    assert h.stop() == 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_finishes_requests_in_flight_then_exits(run, workers):
    h = run("--mount", "/slow=slow_app:app", "--workers", workers)
    c = http.client.HTTPConnection("127.0.0.1", h.port, timeout=WAIT)
    c.request("GET", "/slow/x")
    h.expect("handling /x")                 # the request is in the application now
    h.proc.send_signal(signal.SIGTERM)
    r = c.getresponse()
    assert (r.status, r.read()) == (200, b"finished")
    assert h.proc.wait(WAIT) == 0
    with pytest.raises(ConnectionRefusedError):
        h.get("/")


def test_sigterm_the_instant_the_banner_is_out_drains_and_exits_0(run):
    """The supervisor catches signals before its workers start: a SIGTERM right after the
    banner once found the default action still in place, killed the supervisor (status -15)
    and left its workers to notice they were orphans."""
    for _ in range(3):
        h = run("--workers", "2")
        h.proc.send_signal(signal.SIGTERM)
        assert h.proc.wait(WAIT) == 0


def test_sighup_reopens_the_access_log(run, tmp_path):
    h = run("--access-log", "access.log")
    log, rotated = tmp_path / "access.log", tmp_path / "access.log.1"
    assert h.get("/") == (200, b"home")
    log.rename(rotated)
    h.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + WAIT
    while not log.exists():                 # the reopened file appears
        assert time.monotonic() < deadline, "SIGHUP did not reopen the log"
        time.sleep(0.01)
    assert h.get("/nothing")[0] == 404
    assert h.stop() == 0                    # stopping drains the log stage
    assert '"GET / HTTP/1.1" 200' in rotated.read_text()
    assert '"GET /nothing HTTP/1.1" 404' in log.read_text()
    assert "/nothing" not in rotated.read_text()


def test_a_worker_that_cannot_start_stops_the_supervisor(tmp_path):
    (tmp_path / "fails_in_workers.py").write_text(
        "import sys\n"
        "if '--ready-fd' in sys.argv:\n"
        "    raise RuntimeError('no database')\n"
        "def app(environ, start_response): pass\n")
    done = subprocess.run([sys.executable, "-m", "haboob", "fails_in_workers:app",
                           "--workers", "2", "--bind", "127.0.0.1:0"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 1 and "a worker failed to start" in done.stderr
    assert "no database" in done.stderr


def pids_of(doc):
    return {w["pid"] for w in doc["workers"]}


def test_the_status_page_shows_every_worker_and_forgets_dead_ones(run, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))   # where the supervisor keeps the snapshots
    h = run("--workers", "2")
    pids = {pid_of(h.expect("listening")), pid_of(h.expect("listening"))}
    assert all(h.get("/missing")[0] == 404 for _ in range(10))
    doc = h.status_until(lambda d: pids_of(d) == pids
                         and d["traffic"]["total"]["responses"].get("404") == 10)
    assert sum(w["traffic"]["total"]["responses"].get("404", 0) for w in doc["workers"]) == 10
    assert doc["supervisor"]["workers"] == 2 and doc["supervisor"]["restarts"] == 0
    assert doc["stages"]["http"]["threads"] == 2                 # a loop thread each
    page = h.get("/_seda/")[1].decode()
    assert 'id="workers"' in page and all(f"<td>{pid}</td>" in page for pid in pids)
    metrics = h.get("/_seda/metrics")[1].decode()
    assert all(f'haboob_http_connections{{worker="{pid}"}}' in metrics for pid in pids)
    [shared] = tmp_path.glob("haboob-status-*")

    victim = pids.pop()
    os.kill(victim, signal.SIGKILL)
    assert pid_of(h.expect("exited")) == victim
    replacement = pid_of(h.expect("listening"))
    doc = h.status_until(lambda d: pids_of(d) == {*pids, replacement})
    assert doc["supervisor"]["restarts"] == 1
    assert not (shared / f"worker-{victim}.json").exists()
    assert h.stop() == 0
    assert not shared.exists()


def test_the_status_page_on_its_own_port_with_workers(run):
    h = run("--workers", "2", "--status-bind", "127.0.0.1:0")
    line = h.proc.stdout.readline()
    assert line.startswith("stages and metrics: http://127.0.0.1:"), line
    port = int(line.rsplit(":", 1)[1].split("/")[0])
    pids = {pid_of(h.expect("listening")), pid_of(h.expect("listening"))}
    assert h.get("/_seda/")[0] == 404                         # not on the main port
    assert h.get("/")[0] == 200
    # the main port's requests, whichever worker had them; not the status port's
    h.status_until(lambda d: pids_of(d) == pids
                   and d["traffic"]["total"]["responses"] == {"200": 1, "404": 1}, port)
    assert h.stop() == 0


def test_the_status_page_can_be_turned_off(run):
    h = run("--no-status")
    assert h.get("/_seda/")[0] == 404
    assert h.stop() == 0
    assert h.proc.stdout.read() == ""                         # no status line in the banner
