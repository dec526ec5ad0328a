"""Service degradation on Arashi's pages: each degradable stage's quality follows its own p90
against the target (shorter lists, then search paused), admission control comes on only at the
lowest quality when asked, and the pages show what the quality allows."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace

import requests

import seda
from arashi.degrade import MIN_QUALITY, SEARCH_FROM, degrade, list_size
from arashi.sessions import Sessions
from arashi.store import INBOX
from arashi.web import COOKIE, PAGE, Web, messages, search

from tests.helpers import WAIT
from tests.helpers.arashi_env import arashi, new_store
from tests.helpers.arashi_web import get, log_in, serving
from tests.helpers.fakes import FakeStage


def over(guard, seconds, t):
    """One round of the guard's measurement: 100 answers that took ``seconds``."""
    for _ in range(100):
        guard.report(seconds)
    guard.tick(t)


def test_quality_follows_each_stage_and_admission_comes_on_at_the_bottom():
    web = SimpleNamespace(list_size=PAGE, searching=True)
    guards = degrade(seda.Runtime(), web, target=0.1, readmit=True)
    for guard in guards.values():
        guard.attach(FakeStage())
        guard.tick(0.0)
    lists, searches = guards["messages"], guards["search"]
    over(lists, 1.0, 0.01)                       # the message list is slow, search is not
    over(searches, 0.01, 0.01)
    lists.degrader.tick(0.5)
    searches.degrader.tick(0.5)
    assert web.list_size == PAGE // 2 and web.searching
    assert not lists.admitting                    # quality first, admission still off
    for t in (1.0, 1.5):
        lists.degrader.tick(t)
    assert web.list_size == list_size(MIN_QUALITY) == 2 and not lists.enabled
    lists.degrader.tick(2.0)                      # lowest quality, still over: admission on
    assert lists.enabled and lists.state()["quality"] == MIN_QUALITY
    over(searches, 1.0, 0.02)                     # now search is slow too
    for t in (1.0, 1.5):
        searches.degrader.tick(t)
    assert not web.searching and searches.state()["quality"] < SEARCH_FROM


def test_without_readmit_quality_alone_answers_the_load():
    web = SimpleNamespace(list_size=PAGE, searching=True)
    guards = degrade(seda.Runtime(), web, target=0.1, readmit=False)
    lists = guards["messages"]
    lists.attach(FakeStage())
    lists.tick(0.0)
    over(lists, 1.0, 0.01)
    for t in range(10):
        lists.degrader.tick(t)
    assert web.list_size == 2 and not lists.enabled and lists.accept(None)
    for t in range(1, 20):                        # fast again: back to full quality
        over(lists, 0.01, t)
        lists.degrader.tick(10.0 + t)
    assert web.list_size == PAGE


def page(app, path, key, query=""):
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query,
               "HTTP_COOKIE": f"{COOKIE}={key}", "wsgi.input": io.BytesIO()}
    got = []
    body = b"".join(app(environ, lambda status, headers: got.append(status)))
    assert got == ["200 OK"], got
    return body.decode()


def test_the_pages_show_what_the_quality_allows(tmp_path):
    store = new_store(tmp_path)
    try:
        alice = store.add_user("alice", "alice-pw")
        inbox = store.folder(alice, INBOX)
        store.add_messages(alice, inbox, [(f"From: a@x.test\r\nSubject: note {i}\r\n\r\nhi\r\n"
                                           .encode(), "") for i in range(12)])
        web = Web(store, Sessions(store.pool))
        key = web.sessions.create(alice).key
        lists, finds = web.app(messages), web.app(search)

        def shown(text):
            return len(re.findall(r'href="/message/\d+"', text))
        assert shown(page(lists, f"/folder/{inbox}", key)) == PAGE
        assert "note" in page(finds, "/search", key, "q=note")
        web.list_size, web.searching = 3, False
        assert shown(page(lists, f"/folder/{inbox}", key)) == 3
        assert shown(page(lists, f"/folder/{inbox}", key, "page=4")) == 3   # 12 in 4 pages
        paused = page(finds, "/search", key, "q=note")
        assert "Search is paused" in paused and shown(paused) == 0
    finally:
        store.pool.close()


def test_serve_with_degrade(tmp_path):
    store = new_store(tmp_path)
    try:
        store.add_user("alice", "alice-pw")
    finally:
        store.pool.close()
    bad = arashi("serve", "--data", str(tmp_path), "--degrade")
    assert bad.returncode == 1 and "--degrade needs --target-p90" in bad.stderr
    bad = arashi("serve", "--data", str(tmp_path), "--degrade", "--target-p90", "500",
                 "--admission-at", "front")
    assert bad.returncode == 1 and "each request type's stage" in bad.stderr
    with serving(tmp_path, "--target-p90", "500", "--degrade") as server:
        client = log_in(server, "alice", "alice-pw")
        assert get(client, server.url + "/search?q=x").status_code == 200
        stages = requests.get(server.url + "/_seda/stats.json", timeout=WAIT).json()
    for stage in ("arashi.messages", "arashi.search"):
        state = stages[stage]["control"]["admission"]
        assert state["quality"] == 1.0 and state["admitting"] is False, state
    assert "shares" in stages["arashi.show"]["control"]["admission"]   # the others: bound
