"""Haboob end to end: the haboob command's stages against real HTTP clients."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
import time

import pytest

import seda
from haboob.server import Options, build
from seda.io import SocketLayer, open_nowait

from tests.helpers import WAIT, certs
from tests.helpers.epoll import CountingEpoll
from tests.helpers.net import ask, fetch, raw
from tests.helpers.net import until as polled


def hello_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"app saw " + environ["PATH_INFO"].encode()]


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    (root / "dir").mkdir(parents=True)
    (root / "index.html").write_bytes(b"<h1>home</h1>")
    (root / "dir" / "index.html").write_bytes(b"dir index")
    (root / "big.bin").write_bytes(os.urandom(3 * 2**20))
    (tmp_path / "secret").write_text("outside the root")
    return root


@pytest.fixture
def haboob(site):
    runtimes = []

    def start(**options):
        rt = seda.Runtime()
        listener = build(rt, Options(root=str(site), port=0, **options))
        rt.start()
        runtimes.append(rt)
        return listener.address

    yield start
    for rt in runtimes:
        rt.stop()


def test_a_connection_per_request_costs_one_epoll_change(site):
    """A client that says close gets a cached file and the close, and its connection costs one
    change to what epoll watches: its registration (no pause before the close, and no
    unregistering before the socket's close, which ends its watch)."""
    rt = seda.Runtime()
    rt.loop._epoll = counting = CountingEpoll(rt.loop._epoll)
    try:
        address = build(rt, Options(root=str(site), port=0)).address
        rt.start()
        open_now = SocketLayer.of(rt).connections
        assert fetch(address, "/index.html")[1] == b"<h1>home</h1>"   # cached from now on
        polled(lambda: len(open_now), lambda n: n == 0)   # (that connection's end, lingering)
        before = len(counting.changes())
        for _ in range(3):                     # (never half-closing: a FIN seen with the
            #                                        request would rearm the descriptor)
            got = ask(address, b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"<h1>home</h1>")
        polled(lambda: len(open_now), lambda n: n == 0)
        changes = counting.changes()[before:]
    finally:
        rt.loop._epoll = counting.epoll
        rt.stop()
    assert changes == ["register"] * 3


def test_static_files_cache_and_validators(haboob, site):
    address = haboob()
    r, body = fetch(address, "/")
    assert r.status == 200 and body == b"<h1>home</h1>"
    assert r.getheader("content-type") == "text/html; charset=utf-8"
    tag, modified = r.getheader("etag"), r.getheader("last-modified")
    assert fetch(address, "/", {"If-None-Match": tag})[0].status == 304
    assert fetch(address, "/", {"If-Modified-Since": modified})[0].status == 304
    assert fetch(address, "/", {"If-Match": '"not it"'})[0].status == 412
    assert fetch(address, "/", {"If-Match": tag})[0].status == 200
    old = "Sat, 01 Jan 2000 00:00:00 GMT"
    assert fetch(address, "/", {"If-Unmodified-Since": old})[0].status == 412
    assert fetch(address, "/", {"If-Unmodified-Since": modified})[0].status == 200
    r, body = fetch(address, "/index.html", method="HEAD")
    assert r.status == 200 and body == b"" and r.getheader("content-length") == "13"
    r, body = fetch(address, "/", {"Range": "bytes=4-7"})
    assert r.status == 206 and body == b"home" and r.getheader("content-range") == "bytes 4-7/13"
    assert fetch(address, "/", {"Range": "Bytes=4-7"})[1] == b"home"     # any case
    assert fetch(address, "/", {"Range": "bytes=100-"})[0].status == 416
    r, _ = fetch(address, "/dir")
    assert r.status == 301 and r.getheader("location") == "/dir/"
    assert fetch(address, "/dir/")[1] == b"dir index"
    assert fetch(address, "/missing")[0].status == 404
    assert fetch(address, "/", method="POST")[0].status == 405


@pytest.mark.parametrize("kernel_caches", [True, False], ids=["opened at once", "resolved"])
def test_a_file_with_a_trailing_slash_is_not_found(haboob, monkeypatch, kernel_caches):
    from haboob import server
    if not kernel_caches:
        monkeypatch.setattr(server, "open_cached", lambda *a, **k: None)
    address = haboob()
    assert fetch(address, "/index.html/")[0].status == 404
    assert fetch(address, "/index.html")[1] == b"<h1>home</h1>"
    assert fetch(address, "/index.html/")[0].status == 404     # nor once cached


@pytest.mark.parametrize("path", ["/../secret", "/%2e%2e/secret", "/dir/..%2f..%2fsecret",
                                  "/..%5csecret"])
def test_traversal_is_refused(haboob, path):
    with socket.create_connection(haboob(), timeout=WAIT) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 403") and b"outside the root" not in answer


def test_large_files_go_by_sendfile_and_ranges_work(site):
    before = len(os.listdir("/proc/self/fd"))
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0)).address
    rt.start()
    try:
        data = (site / "big.bin").read_bytes()
        r, body = fetch(address, "/big.bin")
        assert r.status == 200 and body == data
        for unit in ("bytes", "BYTES"):
            r, body = fetch(address, "/big.bin", {"Range": f"{unit}=1000-1999"})
            assert r.status == 206 and body == data[1000:2000]
        assert fetch(address, "/big.bin", method="HEAD")[0].status == 200
    finally:
        rt.stop()                            # drains the closer's queue too
    assert len(os.listdir("/proc/self/fd")) == before    # every descriptor closed


@pytest.mark.parametrize("wanted", ["bytes=\xb2-5", "bytes=-\xb9", "bytes=0-\xb3"])
def test_a_range_of_superscript_digits_is_ignored_at_once(site, wanted):
    """A superscript digit passes str.isdigit, not int: such a Range is no range (RFC 9110
    14.2), so the whole file, at once; a large file's descriptor is closed as for any answer."""
    before = len(os.listdir("/proc/self/fd"))
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0)).address
    rt.start()
    try:
        for path in ("/index.html", "/big.bin"):
            for _ in range(2):                  # (loaded, then cached: the two ways)
                r, body = fetch(address, path, {"Range": wanted})
                assert r.status == 200 and body == (site / path[1:]).read_bytes()
    finally:
        rt.stop()
    assert len(os.listdir("/proc/self/fd")) == before


class Asked:
    """A request handed to a stage directly, as the HTTP stage hands one: its answer is kept
    and waited for."""

    method, query = "GET", ""

    def __init__(self, path, headers=()):
        self.path = self.target = path
        self.headers = list(headers)
        self.answered = threading.Event()
        self.response = None

    def respond(self, response):
        self.response = response
        self.answered.set()


def failing_ranges(monkeypatch):
    """Any Range has the handler raise, as a bug of its own would."""
    import haboob.server

    def byte_range(header, size):
        if header is not None:
            raise ValueError("a bug in byte_range")
    monkeypatch.setattr(haboob.server, "byte_range", byte_range)


def test_a_request_that_fails_is_answered_500_and_its_batch_mates_at_once(site, monkeypatch):
    """One request the page cache fails on costs that request a 500 and nothing else: the
    others of its batch (after it, by size) are answered at once, not at the response
    timeout."""
    (site / "small.txt").write_bytes(b"s")
    failing_ranges(monkeypatch)
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0, recheck=60.0)).address
    rt.start()
    try:
        cache = rt.stage("haboob.cache").handler.cache
        for path in ("/small.txt", "/index.html"):
            until(lambda path=path: fetch(address, path)[0].status == 200
                  and path in cache.entries, "the file was never cached")
        bad = Asked("/small.txt", [(b"range", b"bytes=0-0")])
        good = [Asked("/index.html") for _ in range(3)]
        rt.sink("haboob.cache").enqueue_many([bad, *good])    # one batch
        for req in (bad, *good):
            assert req.answered.wait(WAIT)
        assert bad.response.status == 500
        assert [req.response.status for req in good] == [200] * 3
        assert rt.stats()["haboob.cache"]["errors"] == 1
    finally:
        rt.stop()


def test_a_failure_on_a_large_file_is_answered_500_and_closes_its_descriptor(site, monkeypatch):
    """CacheMiss opens a file too large to cache before it answers: a failure while
    answering costs the request a 500 (not the response timeout's) and the descriptor is
    closed all the same."""
    failing_ranges(monkeypatch)
    before = len(os.listdir("/proc/self/fd"))
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0)).address
    rt.start()
    try:
        for method in ("GET", "GET", "HEAD"):
            r, _ = fetch(address, "/big.bin", {"Range": "bytes=0-9"}, method)
            assert r.status == 500
        r, body = fetch(address, "/big.bin")
        assert r.status == 200 and body == (site / "big.bin").read_bytes()
    finally:
        rt.stop()
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_range_of_an_empty_file_gets_it_whole(haboob, site):
    (site / "empty.txt").write_bytes(b"")
    address = haboob()
    for _ in range(2):                          # (loaded, then cached)
        r, body = fetch(address, "/empty.txt", {"Range": "bytes=0-9"})
        assert (r.status, body, r.getheader("content-length")) == (200, b"", "0")


@pytest.mark.parametrize("target, location", [
    ("//dir", "/dir/"), ("///dir", "/dir/"), ("//dir?x=1", "/dir/?x=1"), ("/dir?x=1", "/dir/?x=1"),
])
def test_a_directory_redirect_stays_on_this_host(haboob, target, location):
    """The Location of a directory's redirect never starts with "//": that is a
    network-path reference, which a browser follows to the host named "dir"."""
    r, _ = fetch(haboob(), target)
    assert r.status == 301 and r.getheader("location") == location


def test_a_changed_file_is_seen(haboob, site):
    address = haboob(recheck=0.0)
    assert fetch(address, "/")[1] == b"<h1>home</h1>"
    (site / "index.html").write_bytes(b"<h1>changed</h1>")
    os.utime(site / "index.html", (time.time() + 5, time.time() + 5))
    assert fetch(address, "/")[1] == b"<h1>changed</h1>"


def test_cached_files_are_answered_by_the_http_stage_until_their_recheck(site):
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0, recheck=1.0, cache_policy="lfu")).address
    rt.start()
    try:
        stage = rt.stage("haboob.cache").handler
        for _ in range(3):
            assert fetch(address, "/index.html")[1] == b"<h1>home</h1>"
        ready = stage.answers[b"/index.html"]
        assert ready.hits >= 1                  # the first fetch loaded it; later ones were ready
        (site / "index.html").write_bytes(b"<h1>changed</h1>")
        os.utime(site / "index.html", (time.time() + 5, time.time() + 5))
        deadline = time.monotonic() + WAIT
        while fetch(address, "/index.html")[1] != b"<h1>changed</h1>":
            assert time.monotonic() < deadline, "the change was never seen"
        # the reload credited what the ready answer served to the replacement policy
        assert stage.cache.policy.hits["/index.html"] >= 1 + ready.hits
    finally:
        rt.stop()


def test_a_file_served_from_its_ready_answer_is_not_evicted_as_unused(site):
    """Its requests never reach the page cache (the HTTP stage answers them), yet it is the
    most used file: the cache must keep it while colder files come and go."""
    for i in range(8):
        (site / f"cold{i}.html").write_bytes(b"c" * 1000)
    (site / "hot.html").write_bytes(b"h" * 1000)
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0, cache_bytes=3500, recheck=60.0,
                                cache_policy="lru")).address
    rt.start()
    try:
        cache = rt.stage("haboob.cache").handler.cache
        assert fetch(address, "/hot.html")[1] == b"h" * 1000
        until(lambda: "/hot.html" in cache.entries, "hot.html was never cached")
        entry = cache.entries["/hot.html"][0]
        for i in range(8):
            assert fetch(address, "/hot.html")[1] == b"h" * 1000      # a ready answer
            assert fetch(address, f"/cold{i}.html")[1] == b"c" * 1000
            until(lambda i=i: f"/cold{i}.html" in cache.entries, "a cold file was not cached")
        assert cache.evictions >= 5                 # the cold files pushed each other out...
        assert cache.entries["/hot.html"][0] is entry   # ...and never the hot one
    finally:
        rt.stop()


def until(check, what):
    """Repeat ``check`` (which makes a request: rechecks go by the clock) until it holds."""
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, what


def test_an_unchanged_file_is_renewed_and_a_deleted_one_forgotten(site):
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0, recheck=0.05, cache_policy="lfu"),
                    ).address
    rt.start()
    try:
        stage = rt.stage("haboob.cache").handler
        until(lambda: fetch(address, "/index.html")[1] == b"<h1>home</h1>"
              and "/index.html" in stage.cache, "the file was never cached")
        entry = stage.cache.entries["/index.html"][0]
        checked = entry.checked
        # past its recheck the same entry is served and renewed, not read again
        until(lambda: fetch(address, "/index.html")[1] == b"<h1>home</h1>"
              and entry.checked > checked, "the entry was never renewed")
        assert stage.cache.entries["/index.html"][0] is entry
        assert stage.cache.policy.hits["/index.html"] > 1    # LFU kept its count
        (site / "index.html").unlink()
        until(lambda: fetch(address, "/index.html")[0].status == 404, "still served")
        assert "/index.html" not in stage.cache and b"/index.html" not in stage.answers
    finally:
        rt.stop()


class LossySink:
    """A sink that keeps what it is given (enqueue_lossy only)."""

    def __init__(self):
        self.events = []

    def enqueue_lossy(self, ev):
        self.events.append(ev)
        return True


def test_a_stale_entry_is_served_while_one_recheck_is_under_way(site, monkeypatch):
    import haboob.server
    monkeypatch.setattr(haboob.server, "open_cached", lambda *a, **k: None)   # the kernel must
    #                                                                           read the disk
    from haboob.server import Entry, PageCacheStage

    stage = PageCacheStage(Options(root=str(site), recheck=1.0), {})
    stage.miss = LossySink()
    path = site / "index.html"
    entry = Entry("/index.html", str(path), path.stat(), path.read_bytes())
    now = entry.checked + 1.5                   # due for its recheck, within one more period
    assert stage._stale(entry, now) is entry and stage._stale(entry, now) is entry
    assert len(stage.miss.events) == 1          # one recheck, however many requests
    assert stage._stale(entry, entry.checked + 2.5) is None   # too old: wait for the disk


def test_a_recheck_counts_from_when_the_file_was_looked_at_and_once(site, monkeypatch):
    """CacheMiss's answer renews the entry from when it looked (not from when the answer came
    back); a _Due for an entry renewed meanwhile looks at nothing."""
    import haboob.server
    from haboob.server import Entry, PageCacheStage, _Due, _Fresh

    looks = []
    monkeypatch.setattr(haboob.server, "open_cached", lambda *a, **k: looks.append(a))
    stage = PageCacheStage(Options(root=str(site), recheck=1.0), {})
    stage.own = stage.miss = LossySink()
    path = site / "index.html"
    entry = Entry("/index.html", str(path), path.stat(), path.read_bytes())
    stage.cache.put(entry.key, entry, entry.size)
    looked = entry.checked + 5.0
    stage.handle_events([_Fresh(entry, looked)])
    assert entry.checked == looked
    stage.handle_events([_Due(entry)])          # due by the clock of its answer, not now
    assert not looks and entry.checked == looked and not stage.miss.events


NOWAIT = pytest.mark.skipif(open_nowait(__file__) is None,
                            reason="this kernel (or its sandbox) has no openat2 RESOLVE_CACHED")


@NOWAIT
def test_a_file_in_use_is_renewed_with_no_request_sent_the_slow_way(site):
    """Past its recheck a file's ready answer goes on answering while the page cache renews
    it, told by the HTTP stage (``_Due``): its requests never come to the page cache."""
    from haboob.server import _Due

    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0, recheck=0.2)).address
    stage = rt.stage("haboob.cache")
    handler, handle = stage.handler, stage.handle_batch
    renewals = []                           # per renewal: whether only _Due events were handled

    def watched(events):
        held = handler.cache.entries.get("/index.html")
        checked = held and held[0].checked
        handle(events)
        held = handler.cache.entries.get("/index.html")
        if checked and held and held[0].checked > checked:
            renewals.append(all(type(ev) is _Due for ev in events))

    stage.handle_batch = watched
    rt.start()
    try:
        until(lambda: fetch(address, "/index.html")[1] == b"<h1>home</h1>" and any(renewals),
              "the file in use was never renewed on the HTTP stage's word")
    finally:
        rt.stop()


@NOWAIT
def test_misses_and_rechecks_the_kernel_has_cached_stay_on_the_loop(site):
    """A file just written has its path and pages in the kernel's caches: it is loaded, and
    rechecked, by the page cache stage itself, and CacheMiss's threads never hear of it."""
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0, recheck=0.0)).address
    rt.start()
    try:
        for _ in range(3):                      # (recheck 0: each request is a recheck)
            assert fetch(address, "/index.html")[1] == b"<h1>home</h1>"
        (site / "index.html").write_bytes(b"<h1>changed</h1>")
        os.utime(site / "index.html", (time.time() + 5, time.time() + 5))
        until(lambda: fetch(address, "/index.html")[1] == b"<h1>changed</h1>",
              "the change was never seen")      # (and read again here: recheck 0)
        assert fetch(address, "/dir/")[1] == b"dir index"    # a directory: CacheMiss's
        stats = rt.stats()
        assert stats["haboob.cache"]["processed"] >= 5
        assert stats["haboob.miss"]["processed"] <= 1         # the directory at most
    finally:
        rt.stop()


@pytest.mark.parametrize("nowait", [True, False])
def test_a_file_replaced_by_one_of_the_same_size_and_time_is_seen(site, monkeypatch, nowait):
    """Another file at the path (a deploy renaming a new one into place) is told apart by
    the file itself, not by its size and time alone: on the loop's recheck as on CacheMiss's."""
    if nowait and open_nowait(__file__) is None:
        pytest.skip("this kernel (or its sandbox) has no openat2 RESOLVE_CACHED")
    if not nowait:
        import haboob.server
        monkeypatch.setattr(haboob.server, "open_cached", lambda *a, **k: None)
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0, recheck=0.2)).address
    rt.start()
    try:
        page = site / "index.html"
        assert fetch(address, "/index.html")[1] == b"<h1>home</h1>"
        st = page.stat()
        (site / "new.html").write_bytes(b"<h1>HOME</h1>")
        os.utime(site / "new.html", ns=(st.st_atime_ns, st.st_mtime_ns))
        os.rename(site / "new.html", page)
        until(lambda: fetch(address, "/index.html")[1] == b"<h1>HOME</h1>",
              "the file put in its place was never seen")
    finally:
        rt.stop()


def test_a_root_renamed_away_serves_nothing_more_and_its_successor_is_served(tmp_path):
    """A deploy renames the site away and puts a new one in its place: what is served comes
    from the new one (once rechecked), and nothing from the old one any more."""
    old = tmp_path / "www"
    old.mkdir()
    (old / "a.txt").write_bytes(b"old a")
    rt = seda.Runtime()
    address = build(rt, Options(root=str(old), port=0, recheck=0.2)).address
    rt.start()
    try:
        assert fetch(address, "/a.txt")[1] == b"old a"
        os.rename(old, tmp_path / "private")
        (tmp_path / "www").mkdir()
        (tmp_path / "www" / "a.txt").write_bytes(b"new a")
        (tmp_path / "private" / "secret.txt").write_bytes(b"private")
        until(lambda: fetch(address, "/a.txt")[1] == b"new a", "the new site was never served")
        assert fetch(address, "/secret.txt")[0].status == 404
    finally:
        rt.stop()


@pytest.mark.parametrize("nowait", [True, False])
def test_a_link_is_typed_by_its_own_name_as_nginx_types_it(site, monkeypatch, nowait):
    """The same Content-Type whichever way the file was loaded: the name in the URL's."""
    if not nowait:
        import haboob.server
        monkeypatch.setattr(haboob.server, "open_cached", lambda *a, **k: None)
    os.symlink("index.html", site / "notes.txt")
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0)).address
    rt.start()
    try:
        for _ in range(2):                      # loaded, then from its ready answer
            r, body = fetch(address, "/notes.txt")
            assert body == b"<h1>home</h1>"
            assert r.getheader("content-type") == "text/plain; charset=utf-8"
        assert fetch(address, "/dir/")[0].getheader("content-type") == \
            "text/html; charset=utf-8"          # a directory's index: its own name's
    finally:
        rt.stop()


def test_a_fifo_under_the_root_is_refused_and_holds_nothing_up(site):
    """Opening a FIFO for reading waits for a writer: the loop must never be the one to."""
    os.mkfifo(site / "pipe")
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0)).address
    rt.start()
    try:
        assert fetch(address, "/pipe")[0].status == 403
        assert fetch(address, "/index.html")[1] == b"<h1>home</h1>"
    finally:
        # (had anything opened it to read, this writer lets it go, and the runtime stop)
        with contextlib.suppress(OSError):
            os.close(os.open(site / "pipe", os.O_WRONLY | os.O_NONBLOCK))
        rt.stop()


def test_an_evicted_file_loses_its_ready_answer(site):
    (site / "a.txt").write_bytes(b"a" * 600)
    (site / "b.txt").write_bytes(b"b" * 600)
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0, cache_bytes=1000)).address
    rt.start()
    try:
        answers = rt.stage("haboob.cache").handler.answers
        assert fetch(address, "/a.txt")[1] == b"a" * 600
        deadline = time.monotonic() + WAIT
        while b"/a.txt" not in answers:         # CacheMiss hands the entry back as an event
            assert time.monotonic() < deadline
            fetch(address, "/a.txt")
        assert fetch(address, "/b.txt")[1] == b"b" * 600
        while b"/b.txt" not in answers:
            assert time.monotonic() < deadline
            fetch(address, "/b.txt")
        assert b"/a.txt" not in answers and fetch(address, "/a.txt")[1] == b"a" * 600
    finally:
        rt.stop()


def test_files_win_and_the_root_app_gets_the_rest(haboob):
    address = haboob(apps=[("/", hello_app), ("/api", hello_app)])
    assert fetch(address, "/")[1] == b"<h1>home</h1>"
    assert fetch(address, "/no/such/file")[1] == b"app saw /no/such/file"
    assert fetch(address, "/api/x")[1] == b"app saw /x"
    # a form posted to the root app is the app's, even where a file of that name exists
    assert fetch(address, "/index.html", method="POST")[1] == b"app saw /index.html"


def test_requests_no_stage_takes_are_answered_by_the_routing_in_their_turn():
    rt = seda.Runtime()
    address = build(rt, Options(port=0, apps=[("/api", hello_app)])).address[:2]
    rt.start()
    try:
        h = b" HTTP/1.1\r\nHost: x\r\n\r\n"
        out = raw(address, b"GET /api/x" + h + b"OPTIONS *" + h + b"GET /nothing" + h
                  + b"GET *" + h + b"GET /api/y HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    finally:
        rt.stop()
    statuses = re.findall(rb"HTTP/1.1 (\d+) ", out)
    assert statuses == [b"200", b"200", b"404", b"400", b"200"]    # in the order asked
    assert out.index(b"app saw /x") < out.index(b"allow: GET, HEAD, OPTIONS") \
        < out.index(b"app saw /y")


def test_options_star_goes_to_the_application_at_the_root(haboob):
    address = haboob(apps=[("/", hello_app)])
    out = raw(address, b"OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200") and b"app saw" in out


def test_the_command(site):
    proc = subprocess.Popen([sys.executable, "-m", "haboob", "--root", str(site),
                             "--bind", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("haboob serving on http://127.0.0.1:")
        port = int(line.rsplit(":", 1)[1].strip(" /\n"))
        assert fetch(("127.0.0.1", port), "/")[1] == b"<h1>home</h1>"
    finally:
        proc.terminate()
        assert proc.wait(WAIT) == 0


@pytest.mark.parametrize("args, message", [
    ([], "nothing to serve"), (["--root", "/no/such/dir"], "is not a directory"),
    (["--bind", "nowhere"], "HOST:PORT"), (["no_such_module:app"], "cannot load"),
])
def test_command_line_errors(args, message):
    done = subprocess.run([sys.executable, "-m", "haboob", *args], capture_output=True,
                          text=True, timeout=WAIT)
    assert done.returncode == 2 and message in done.stderr


def test_access_log_lines(site, tmp_path):
    log = tmp_path / "access.log"
    rt = seda.Runtime()
    address = build(rt, Options(root=str(site), port=0, access_log=str(log))).address
    rt.start()
    try:
        fetch(address, "/")
        fetch(address, "/missing")
    finally:
        rt.stop()                            # drains the log stage
    lines = log.read_text().splitlines()
    assert lines[0].startswith("127.0.0.1 - - [") and '"GET / HTTP/1.1" 200 ' in lines[0]
    assert '"GET /missing HTTP/1.1" 404 ' in lines[1]


def test_https(site, tmp_path):
    ca, cert, key = certs.make(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "haboob", "--root", str(site),
                             "--bind", "127.0.0.1:0", "--certfile", str(cert),
                             "--keyfile", str(key)], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("haboob serving on https://127.0.0.1:")
        port = int(line.rsplit(":", 1)[1].strip(" /\n"))
        context = ssl.create_default_context(cafile=str(ca))
        c = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=WAIT)
        c.request("GET", "/")
        assert c.getresponse().read() == b"<h1>home</h1>"
        c.close()
    finally:
        proc.terminate()
        assert proc.wait(WAIT) == 0
