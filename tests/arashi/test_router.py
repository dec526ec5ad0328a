"""The router: each path to its request type's stage; a refused request is 503 at once."""

from __future__ import annotations

import threading

import requests

import seda
from arashi.router import ROUTES, Router, admission, build_web
from arashi.sessions import Sessions
from arashi.web import Web

from tests.helpers import WAIT
from tests.helpers.arashi_env import add_users, arashi, new_store
from tests.helpers.arashi_web import get, log_in, serving


class Refusing:
    def enqueue(self, ev):
        raise seda.RejectedError("full")


class Taking:
    def __init__(self):
        self.got = []

    def enqueue(self, ev):
        self.got.append(ev)


class Req:
    def __init__(self, path):
        self.path, self.answer = path, None

    def respond(self, response):
        self.answer = response


def test_routes_by_path_and_refuses_with_503():
    kinds = set(ROUTES.values())
    assert kinds == {"login", "logout", "folders", "messages", "show", "search", "act"}
    sinks = {k: Taking() for k in kinds}
    sinks["search"] = Refusing()
    router = Router(sinks)
    for path, kind in (("/login", "login"), ("/logout", "logout"), ("/folder/3", "messages"),
                       ("/message/4/part/1", "show"), ("/act", "act"), ("/", "folders")):
        req = Req(path)
        router.handle_event(req)
        assert sinks[kind].got[-1] is req and req.answer is None
    busy = Req("/search")
    router.handle_event(busy)
    assert busy.answer.status == 503 and b"Busy" in busy.answer.body
    assert busy.answer.header("retry-after") == "1"
    lost = Req("/etc/passwd")
    router.handle_event(lost)
    assert lost.answer.status == 404


def test_router_counts_and_sends_status_requests_to_the_page():
    sinks = {k: Taking() for k in set(ROUTES.values())}
    sinks["act"] = Refusing()
    page = Taking()
    router = Router(sinks, page)
    for path in ("/_seda/", "/_seda", "/_seda/metrics", "/login", "/act", "/nothing"):
        router.handle_event(Req(path))
    assert [r.path for r in page.got] == ["/_seda/", "/_seda", "/_seda/metrics"]
    stats = router.stats()
    assert stats["routed"]["login"] == 1 and stats["busy"]["act"] == 1
    assert stats["not_found"] == 1
    off = Router(sinks)                     # no status page: /_seda/ is not found
    off.handle_event(lost := Req("/_seda/"))
    assert lost.answer.status == 404


def test_the_live_status_page_on_the_web_port(tmp_path):
    add_users(tmp_path, alice="alice-pw")
    with serving(tmp_path) as server:
        client = log_in(server, "alice", "alice-pw")
        assert get(client, server.url + "/folders").status_code == 200
        page = requests.get(server.url + "/_seda/", timeout=WAIT)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        for stage in ("arashi.http", "arashi.login", "arashi.folders", "arashi.show"):
            assert stage in page.text
        stages = requests.get(server.url + "/_seda/stats.json", timeout=WAIT).json()
        routed = stages["arashi.http"]["handler"]["routed"]
        assert routed["login"] >= 1 and routed["folders"] >= 1
        metrics = requests.get(server.url + "/_seda/metrics", timeout=WAIT).text
        assert 'seda_stage_processed_total{stage="arashi.folders"}' in metrics
        assert 'arashi_http_responses_total{code="200"}' in metrics
        assert 'seda_stage_handler{name="routed.login",stage="arashi.http"}' in metrics


class Cookied:
    def __init__(self, cookie=None):
        self.cookie = cookie

    def header(self, name):
        return self.cookie if name.lower() == "cookie" else None


def test_admission_with_request_classes_from_a_cookie():
    assert admission(None, "tier") is None
    assert admission(0.2).classify is None                  # one class
    bound = admission(0.2, "tier")
    assert sorted(bound.classes) == list(range(10))
    assert all(k.target == 0.2 for k in bound.classes.values())
    for cookie, cls in (("arashi_session=k; tier=7", 7), ("tier=9", 9), ("tier=12", 0),
                        ("tier=x", 0), (None, 0), ("\x00broken", 0)):
        assert bound.classify(Cookied(cookie)) == cls, cookie


def test_serve_with_class_cookie(tmp_path):
    add_users(tmp_path, alice="alice-pw")
    bad = arashi("serve", "--data", str(tmp_path), "--class-cookie", "tier")
    assert bad.returncode == 1 and "needs --target-p90" in bad.stderr
    bad = arashi("serve", "--data", str(tmp_path), "--class-cookie", "a b", "--target-p90", "50")
    assert bad.returncode == 1 and "not a cookie name" in bad.stderr
    with serving(tmp_path, "--target-p90", "500", "--class-cookie", "tier") as server:
        client = log_in(server, "alice", "alice-pw")
        client.cookies.set("tier", "9")
        assert get(client, server.url + "/folders").status_code == 200


def test_a_logout_does_not_wait_behind_logins(tmp_path):
    """A login spends tens of milliseconds in scrypt, a logout is one delete: it has a stage of
    its own, so logins queued under load do not hold it up."""
    store = new_store(tmp_path)
    sessions = Sessions(store.pool)
    session = sessions.create(store.add_user("alice", "pw"))
    entered, release = threading.Event(), threading.Event()

    def stuck(name, password):                  # a login that holds the login stage's thread
        entered.set()
        release.wait(WAIT)
        return None
    store.authenticate = stuck
    rt = seda.Runtime()
    listener = build_web(rt, Web(store, sessions), ("127.0.0.1", 0), threads=1, status=False)
    rt.start()
    url = f"http://127.0.0.1:{listener.address[1]}"
    login = threading.Thread(target=requests.post, args=(url + "/login",),
                             kwargs={"data": {"name": "bob", "password": "x"}, "timeout": WAIT})
    try:
        login.start()
        assert entered.wait(WAIT)
        r = requests.post(url + "/logout", data={"csrf": session.csrf}, timeout=WAIT,
                          cookies={"arashi_session": session.key}, allow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert not release.is_set() and sessions.get(session.key) is None
    finally:
        release.set()
        login.join(WAIT)
        rt.stop(timeout=WAIT)
        store.pool.close()
