"""The haboob command's settings and its errors: limits, the graceful stop, TLS files, the
access log, IPv6; each error a line that says what is wrong, never a traceback."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import textwrap
import threading

import pytest

from haboob.cli import parse
from seda.http import Limits

from tests.helpers import WAIT, certs


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_bytes(b"home")
    return root


def haboob(*args: str, cwd=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "haboob", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd)


def served_port(proc: subprocess.Popen) -> int:
    line = proc.stdout.readline()
    assert line.startswith("haboob serving on "), proc.stderr.read()
    assert proc.stdout.readline().startswith("stages and metrics: ")
    return int(line.rsplit(":", 1)[1].strip(" /\n"))


def test_limits_and_timeouts_are_settings(site):
    options, _ = parse(["--root", str(site), "--max-body", "15M", "--max-request-line", "4K",
                           "--max-header-bytes", "32768", "--max-headers", "50",
                           "--keepalive-timeout", "2.5", "--response-timeout", "120",
                           "--graceful-timeout", "90", "--underscore-headers",
                           "--recheck", "60"])
    assert options.limits == Limits(max_body=15 * 2**20, max_request_line=4096,
                                    max_header_bytes=32768, max_headers=50,
                                    keepalive_timeout=2.5, response_timeout=120)
    assert options.graceful_timeout == 90 and options.underscore_headers
    assert options.recheck == 60
    defaults, _ = parse(["--root", str(site)])
    assert defaults.limits == Limits() and defaults.limits.max_body == 2**30
    assert defaults.recheck == 1.0
    assert parse(["--root", str(site), "--recheck", "0"])[0].recheck == 0


@pytest.mark.parametrize("args, message", [
    (["--max-body", "lots"], "is not a size"), (["--max-body", "0"], "must be > 0"),
    (["--keepalive-timeout", "-1"], "seconds must be > 0"),
    (["--graceful-timeout", "soon"], "is not a number of seconds"),
    (["--recheck", "-1"], "seconds must be >= 0"),
    (["--access-log", "/no/such/dir/access.log"], "cannot write the access log"),
])
def test_bad_settings_say_what_is_wrong(site, args, message):
    done = subprocess.run([sys.executable, "-m", "haboob", "--root", str(site), *args],
                          capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_bad_tls_files_are_named(site, tmp_path):
    _, cert, key = certs.make(tmp_path)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    other = tmp_path / "other"
    other.mkdir()
    _, _, other_key = certs.make(other)
    for certfile, keyfile, message in (
            (garbage, key, f"{garbage} is not a PEM certificate chain"),
            (cert, garbage, f"{garbage} is not a PEM private key"),
            (cert, other_key, f"the key {other_key} is not the key of {cert}"),
            (tmp_path / "missing.pem", key, "cannot read")):
        done = subprocess.run([sys.executable, "-m", "haboob", "--root", str(site),
                               "--certfile", str(certfile), "--keyfile", str(keyfile)],
                              capture_output=True, text=True, timeout=WAIT)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and "PEM lib" not in done.stderr


def test_an_ipv6_address_is_shown_in_brackets(site):
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    proc = haboob("--root", str(site), "--bind", "[::1]:0")
    try:
        line = proc.stdout.readline()
        assert line.startswith("haboob serving on http://[::1]:"), line
    finally:
        proc.terminate()
        assert proc.wait(WAIT) == 0


SLOW_APP = textwrap.dedent("""
    import time

    def app(environ, start_response):
        print("started", flush=True)            # the test sends TERM once it reads this
        time.sleep(float(environ["QUERY_STRING"]))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"finished"]
""")


@pytest.mark.parametrize("grace, finished", [("10", True), ("0.5", False)])
def test_term_lets_requests_in_flight_finish_within_the_graceful_timeout(tmp_path, grace,
                                                                          finished):
    (tmp_path / "slowapp.py").write_text(SLOW_APP)
    proc = haboob("slowapp:app", "--bind", "127.0.0.1:0", "--graceful-timeout", grace,
                  cwd=tmp_path)
    try:
        port = served_port(proc)
        answer: list = []

        def request() -> None:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
            try:
                c.request("GET", "/?2")
                answer.append(c.getresponse().read())
            except (OSError, http.client.HTTPException) as exc:
                answer.append(exc)

        client = threading.Thread(target=request)
        client.start()
        assert proc.stdout.readline() == "started\n"
        proc.terminate()
        client.join(WAIT)
        assert (answer == [b"finished"]) is finished, answer
        assert proc.wait(WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_asgi_settings(site):
    options, _ = parse(["--root", str(site), "--interface", "asgi", "--tasks", "50",
                        "--lifespan", "off", "--ws-max-size", "1M", "--ws-ping-interval", "0",
                        "--ws-ping-timeout", "2.5", "--loop", "asyncio"])
    assert (options.interface, options.tasks, options.lifespan) == ("asgi", 50, "off")
    assert options.loop == "asyncio"
    assert options.ws_max_size == 2**20
    assert (options.ws_ping_interval, options.ws_ping_timeout) == (0, 2.5)
    defaults, _ = parse(["--root", str(site)])
    assert (defaults.interface, defaults.tasks, defaults.lifespan) == ("auto", 1000, "auto")
    assert defaults.loop == "auto"
    assert (defaults.ws_ping_interval, defaults.ws_ping_timeout) == (20, 20)   # uvicorn's
    for args, message in ((["--interface", "cgi"], "one of auto, asgi, asgi2, asgi3, wsgi"),
                          (["--tasks", "0"], "tasks"), (["--lifespan", "maybe"], "lifespan"),
                          (["--loop", "trio"], "loop: expected one of auto, asyncio, uvloop"),
                          (["--ws-ping-interval", "-1"], "seconds must be >= 0 (0: off)"),
                          (["--ws-ping-timeout", "soon"], "is not a number of seconds")):
        done = subprocess.run([sys.executable, "-m", "haboob", "--root", str(site), *args],
                              capture_output=True, text=True, timeout=WAIT)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert done.stderr.splitlines()[-1].startswith("haboob: error: ")   # on one line
        assert "Traceback" not in done.stderr


ASGI2_APP = textwrap.dedent("""
    class App:
        def __init__(self, scope):
            self.scope = scope

        async def __call__(self, receive, send):
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body",
                        "body": b"asgi2 at " + self.scope["path"].encode()})
""")


def served_once(tmp_path, path: str, *args: str) -> tuple[int, bytes]:
    """Start haboob with ``args`` in ``tmp_path``, GET ``path`` and stop it (it must exit with
    0): the response's status and body."""
    proc = haboob(*args, "--bind", "127.0.0.1:0", cwd=tmp_path)
    try:
        port = served_port(proc)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
        c.request("GET", path)
        r = c.getresponse()
        answer = r.status, r.read()
        c.close()
        proc.terminate()
        assert proc.wait(WAIT) == 0
        return answer
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_asgi2_application_is_served_with_interface_asgi2(tmp_path):
    (tmp_path / "asgi2app.py").write_text(ASGI2_APP)
    assert served_once(tmp_path, "/hello", "asgi2app:App", "--interface", "asgi2") == \
        (200, b"asgi2 at /hello")


FREEZE_APP = textwrap.dedent("""
    import gc
    import weakref

    class Cycle:
        def __init__(self):
            self.me = self

    made = {}

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    made["rows"] = [{"row": i} for i in range(1000)]   # kept from its start
                    made["garbage"] = weakref.ref(Cycle())   # dropped: only a collection frees it
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        rows = made["rows"]
        tracked = any(o is rows for o in gc.get_objects())   # (frozen ones are not listed)
        left = made["garbage"]() is not None
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body",
                    "body": b"%s, %s" % (b"tracked" if tracked else b"frozen",
                                         b"garbage kept" if left else b"garbage collected")})
""")


def test_what_the_application_made_at_startup_is_out_of_the_collectors_sight(tmp_path):
    """Kept, it is frozen (full collections skip it); dropped, it was collected first (frozen,
    it never would be)."""
    (tmp_path / "freezeapp.py").write_text(FREEZE_APP)
    assert served_once(tmp_path, "/", "freezeapp:app") == \
        (200, b"frozen, garbage collected")


FAILING_STARTUP = textwrap.dedent("""
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            await receive()
            await send({"type": "lifespan.startup.failed",
                        "message": "cannot reach the database"})
""")


def test_a_failed_asgi_startup_stops_the_server_with_the_applications_message(tmp_path):
    (tmp_path / "failing.py").write_text(FAILING_STARTUP)
    done = subprocess.run([sys.executable, "-m", "haboob", "failing:app", "--bind",
                           "127.0.0.1:0"], capture_output=True, text=True, timeout=WAIT,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "application startup failed: cannot reach the database" in done.stderr
    assert "Traceback" not in done.stderr and "serving on" not in done.stdout
