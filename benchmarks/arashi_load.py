"""Arashi under load (thesis 6.3.4-6.3.5, Figs. 46-48; issue 16): emulated users drive
``arashi serve`` (SQLite, or PostgreSQL with ``--backend postgresql``) by the Markov model of
Fig. 46, with 20 ms think time, following the links and forms of the pages they get back, as
the thesis's client did.

A data directory is made once: ``--accounts`` users (password ``load-pw``), each with an INBOX of
1 to ``--max-messages`` generated messages (log-uniform, so most are small and a few have
thousands, as the thesis's 1 to 12794) and two more folders of up to a quarter and a tenth of
that. Emulated user ``i`` logs in as account ``i % accounts`` (users sharing an account may
find a message gone that another deleted: a 404 counted as an error). For each point (a number of
users) the database is copied fresh, ``arashi serve`` is started pinned to core 0 and the
users (one asyncio task each, one keep-alive connection each, this process pinned to core 1)
run for ``--warmup`` + ``--seconds``; only requests that complete in the last ``--seconds``
count. Latency is from sending a request (connecting first when need be) to its last byte,
in an HdrHistogram per request type.

With ``--backend postgresql`` a throwaway server is started as the tests start one
(``benchmarks/pg_server.py``: initdb in a temporary directory, Unix socket only, fsync off, as
the unprivileged user ``arashi-pg`` when run as root), pinned to core 0 with ``arashi serve``;
the same generated mail (same seed) is loaded once into a database that each point copies
(``CREATE DATABASE ... TEMPLATE``), and ``arashi serve --db URL`` serves the copy. The server is
stopped and its directory removed at the end.

The states and Fig. 46's transition probabilities (rows sum to 1; the figure's ``_`` cells are 0):

    login        -> list folders 1.0
    list folders -> list msgs 1.0                  (a folder link of the page, at random)
    list msgs    -> login .27, show msg .68, delete .02, refile .02, search .01
    show msg     -> login .03, list msgs .58, delete .18, refile .20, search .01
    search       -> login .27, show msg .68, delete .02, refile .02, search .01
    delete, refile -> back to the list the server redirects to (the previous list page)

"login" from a logged-in state is ``POST /logout`` (counted as its own type) then ``POST
/login``. Where a transition's link is missing from the page (an empty folder has no message
links; the search page has no checkboxes, so no delete or refile) the others are renormalised.

    python -m benchmarks.arashi_load --quick            # a few seconds: 1 and 4 users
    python -m benchmarks.arashi_load                    # Fig. 47's points and Fig. 48
    python -m benchmarks.arashi_load --backend postgresql   # the same on a throwaway PostgreSQL

Writes docs/results/arashi_load.{md,json} and arashi_fig47.png, arashi_fig48.png (PostgreSQL:
arashi_load_pg.{md,json}, arashi_pg_fig47.png, arashi_pg_fig48.png; ``--out`` to change the
base name).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from hdrh.histogram import HdrHistogram

from benchmarks.pg_server import PgServer
from benchmarks.results import result_path
from benchmarks.serving import REPO, free_port, server

PASSWORD = "load-pw"
THINK = 0.020
TYPES = ("login", "logout", "folders", "messages", "show", "delete", "refile", "search")
# Fig. 46: state -> [(next state, probability)]
MARKOV: dict[str, list[tuple[str, float]]] = {
    "login": [("folders", 1.0)],
    "folders": [("messages", 1.0)],
    "messages": [("login", .27), ("show", .68), ("delete", .02), ("refile", .02),
                 ("search", .01)],
    "show": [("login", .03), ("messages", .58), ("delete", .18), ("refile", .20),
             ("search", .01)],
    "search": [("login", .27), ("show", .68), ("delete", .02), ("refile", .02),
               ("search", .01)],
}
FULL_USERS = (1, 4, 16, 64, 256, 1024)
TEMPLATE = "arashi_load"            # PostgreSQL: the loaded database each run copies
_RUNS = itertools.count(1)

# -- generated mail ---------------------------------------------------------------------------

WORDS = [
    "meeting", "budget", "review", "draft", "thesis", "paper", "deadline", "lunch", "server",
    "build", "release", "patch", "kernel", "network", "storage", "seminar", "travel", "invoice",
    "report", "update", "question", "answer", "schedule", "party", "project", "outcome",
    "benchmark", "cluster", "database", "query", "index", "cache", "slides", "notes", "minutes",
    "agenda", "proposal", "grant", "summer", "visit", "talk", "demo", "bug", "fix", "crash"
]
NAMES = [
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
    "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter"
]
DOMAINS = ("cs.example.edu", "example.org", "mail.example.com", "lists.example.net")


def make_message(rng: random.Random, when: datetime) -> bytes:
    name = rng.choice(NAMES)
    sender = f"{name.title()} {rng.choice(NAMES).title()} <{name}@{rng.choice(DOMAINS)}>"
    subject = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7))).capitalize()
    if rng.random() < 0.3:
        subject = "Re: " + subject
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
             for _ in range(rng.randint(3, 40))]
    if rng.random() < 0.2:
        lines.append(f"http://www.{rng.choice(DOMAINS)}/{rng.choice(WORDS)}.html")
    return (f"From: {sender}\r\nTo: user@example.org\r\nSubject: {subject}\r\n"
            f"Date: {format_datetime(when)}\r\nMessage-ID: <{rng.getrandbits(64):x}@load>\r\n"
            f"\r\n" + "\r\n".join(lines) + "\r\n").encode()


def folder_sizes(rng: random.Random, most: int) -> dict[str, int]:
    def logu(top: int) -> int:
        return max(1, int(math.exp(rng.uniform(0, math.log(max(top, 1) + 1)))))
    return {"INBOX": logu(most), "Archive": logu(most // 4), "Lists": logu(most // 10)}


def make_data(data: Path, accounts: int, most: int, seed: int = 1, url: str | None = None
              ) -> int:
    """A data directory (or the empty PostgreSQL database ``url``) with ``accounts`` users
    ``user0``... and their mail; how many messages. The same seed gives the same mail on both
    backends."""
    sys.path.insert(0, str(REPO / "src"))
    from arashi.db import database_url, open_pool
    from arashi.migrations import migrate
    from arashi.passwords import hash_password
    from arashi.store import MailStore

    if url is None:
        data.mkdir(parents=True, exist_ok=True)
    pool = open_pool(database_url(data, url))
    total = 0
    try:
        migrate(pool)
        store = MailStore(pool)
        hashed = hash_password(PASSWORD)      # one slow hash, shared: setup in seconds
        rng = random.Random(seed)
        start = datetime(2023, 1, 1, tzinfo=UTC)
        for a in range(accounts):
            with pool.transaction(write=True) as tx:
                user = tx.execute("INSERT INTO users (name, password, created) VALUES (?, ?, ?)"
                                  " RETURNING id", (f"user{a}", hashed, time.time())
                                  ).fetchone()[0]
                tx.execute("INSERT INTO folders (user_id, name) VALUES (?, 'INBOX')", (user,))
            for name, n in folder_sizes(rng, most).items():
                folder = store.folder(user, name) if name == "INBOX" else store.add_folder(
                    user, name)
                total += store.add_messages(user, folder, [
                    (make_message(rng, start + timedelta(minutes=rng.randrange(2 * 525600))), "")
                    for _ in range(n)])
    finally:
        pool.close()
    if url is None:
        with contextlib.closing(sqlite3.connect(data / "arashi.db")) as db:  # all in one file
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    else:
        import psycopg
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
    return total


# -- pages ------------------------------------------------------------------------------------

@dataclass
class Form:
    action: str
    method: str
    fields: list[tuple[str, str]] = field(default_factory=list)     # hidden inputs
    checkboxes: list[str] = field(default_factory=list)             # their values (name "id")
    options: list[str] = field(default_factory=list)                # select "to"
    buttons: list[tuple[str, str]] = field(default_factory=list)


class Page(HTMLParser):
    """The links and forms of a page, and the text of its message links (for search words)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.links: list[str] = []
        self.forms: list[Form] = []
        self.words: list[str] = []
        self._select: str | None = None
        self._in_link = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
            self._in_link = a["href"].startswith("/message/")
        elif tag == "form":
            self.forms.append(Form(a.get("action", ""), a.get("method", "get").lower()))
        elif self.forms and tag == "input":
            kind = a.get("type", "text")
            if kind == "hidden":
                self.forms[-1].fields.append((a.get("name", ""), a.get("value", "")))
            elif kind == "checkbox":
                self.forms[-1].checkboxes.append(a.get("value", ""))
        elif self.forms and tag == "select":
            self._select = a.get("name")
        elif self.forms and tag == "option" and self._select == "to":
            self.forms[-1].options.append(a.get("value", ""))
        elif self.forms and tag == "button" and "name" in a:
            self.forms[-1].buttons.append((a["name"], a.get("value", "")))

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "a":
            self._in_link = False

    def handle_data(self, data: str) -> None:
        if self._in_link:
            self.words.extend(w for w in re.findall(r"[a-z]{3,}", data.lower()))

    def matching(self, prefix: str) -> list[str]:
        return [h for h in self.links if h.startswith(prefix)]

    def act_form(self) -> Form | None:
        return next((f for f in self.forms if f.action == "/act"
                     and ("action", "delete") in f.buttons), None)


# -- a small HTTP/1.1 client --------------------------------------------------------------------

class Closed(Exception):
    pass


class Conn:
    """One keep-alive connection and a cookie jar, reopened when the server closes it."""

    def __init__(self, host: str, port: int, fixed_cookie: str = "") -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.cookie = ""                  # the session, as the server last set it
        self.fixed_cookie = fixed_cookie  # sent always (a request class, as a proxy sets it)

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, dict, bytes]:
        for attempt in (0, 1):
            try:
                if self.writer is None:
                    self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
                    attempt = 1                                   # a fresh one: no retry
                return await self._exchange(method, path, body)
            except (Closed, ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _exchange(self, method: str, path: str, body: bytes) -> tuple[int, dict, bytes]:
        assert self.reader is not None and self.writer is not None
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        cookie = "; ".join(c for c in (self.fixed_cookie, self.cookie) if c)
        if cookie:
            head += f"Cookie: {cookie}\r\n"
        if method == "POST":
            head += ("Content-Type: application/x-www-form-urlencoded\r\n"
                     f"Content-Length: {len(body)}\r\n")
        self.writer.write(head.encode() + b"\r\n" + body)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                k = k.strip().lower()
                if k == "set-cookie":
                    pair = v.strip().split(";", 1)[0]
                    self.cookie = "" if pair.endswith("=") else pair
                headers[k] = v.strip()
        if "content-length" in headers:
            data = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                parts.append(await self.reader.readexactly(size + 2))
                if size == 0:
                    break
            data = b"".join(p[:-2] for p in parts)
        else:
            data = await self.reader.read()
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


# -- the emulated users -----------------------------------------------------------------------

class Recorder:
    def __init__(self, start: float, warmup: float, seconds: float) -> None:
        self.begin, self.end = start + warmup, start + warmup + seconds
        self.hists = {t: HdrHistogram(1, 120_000_000, 3) for t in TYPES}
        self.all = HdrHistogram(1, 120_000_000, 3)
        self.errors: dict[str, int] = {}
        self.busy = 0

    def record(self, kind: str, sent: float, done: float, status: int) -> None:
        if not self.begin <= done < self.end:
            return
        if status == 503:
            self.busy += 1
        elif status >= 400:
            self.errors[str(status)] = self.errors.get(str(status), 0) + 1
        us = max(1, int((done - sent) * 1e6))
        self.hists[kind].record_value(us)
        self.all.record_value(us)


class User:
    """One emulated user. With ``backoff``, after a refused request (503) the user waits
    ``backoff`` seconds, then logs in afresh as the thesis's client did (7.3), or with
    ``relogin=False`` asks again for the page it was refused (a reload: its session is still
    good); without, it goes on after the think time. ``cookie`` is sent with every request
    (``name=value``, e.g. a request class)."""

    def __init__(self, n: int, accounts: int, host: str, port: int, rec: Any,
                 rng: random.Random, backoff: float | None = None, cookie: str = "",
                 relogin: bool = True) -> None:
        self.name = f"user{n % accounts}"
        self.conn = Conn(host, port, cookie)
        self.rec, self.rng = rec, rng          # rec: anything with Recorder's record()
        self.backoff, self.relogin = backoff, relogin
        self.refused = False
        self.page: Page | None = None
        self.logged_in = False
        self.csrf = ""

    async def fetch(self, kind: str, method: str, path: str,
                    form: list[tuple[str, str]] | None = None) -> tuple[int, dict, bytes]:
        body = urlencode(form).encode() if form is not None else b""
        sent = time.perf_counter()
        try:
            status, headers, data = await asyncio.wait_for(
                self.conn.request(method, path, body), 120)
        except (TimeoutError, OSError, Closed, asyncio.IncompleteReadError, ValueError, IndexError):
            self.conn.close()
            status, headers, data = 599, {}, b""
        self.rec.record(kind, sent, time.perf_counter(), status)
        if status == 503 and self.backoff is not None:
            self.refused = True
            await asyncio.sleep(self.backoff)
        else:
            await asyncio.sleep(THINK)
        return status, headers, data

    def parse(self, data: bytes) -> Page:
        page = Page(data.decode("utf-8", "replace"))
        m = re.search(rb'name="csrf" value="([^"]+)"', data)
        if m:
            self.csrf = m.group(1).decode()
        return page

    async def run(self, stop: float) -> None:
        state = "login"
        while time.perf_counter() < stop:
            step = state
            state = await getattr(self, "do_" + step)()
            if self.refused:                 # backed off already
                self.refused = False
                if self.relogin:             # start again from the login page
                    self.logged_in = False
                    self.conn.cookie = ""
                    state = "login"
                else:
                    state = step

    def choose(self, state: str, possible: set[str]) -> str:
        options = [(s, p) for s, p in MARKOV[state] if s in possible]
        if not options:
            return "login"
        r = self.rng.random() * sum(p for _, p in options)
        for s, p in options:
            r -= p
            if r <= 0:
                return s
        return options[-1][0]

    async def do_login(self) -> str:
        if self.logged_in:
            status, _, _ = await self.fetch("logout", "POST", "/logout", [("csrf", self.csrf)])
            if status == 503:
                return "login"            # still logged in: log out again, with the same form
            self.conn.cookie = ""
        status, headers, _ = await self.fetch("login", "POST", "/login",
                                              [("name", self.name), ("password", PASSWORD)])
        self.logged_in = status == 303 and headers.get("location", "").endswith("/folders")
        return "folders" if self.logged_in else "login"

    async def do_folders(self) -> str:
        status, _, data = await self.fetch("folders", "GET", "/folders")
        self.page = self.parse(data) if status == 200 else None
        links = self.page.matching("/folder/") if self.page else []
        if not links:
            return "login"
        self.next_list = self.rng.choice(links)
        return "messages"

    async def do_messages(self) -> str:
        status, _, data = await self.fetch("messages", "GET", self.next_list)
        if status != 200:
            return "login"
        self.list_url, self.page = self.next_list, self.parse(data)
        return self.after(self.page, "messages")

    def after(self, page: Page, state: str) -> str:
        possible = {"login", "search"}
        if page.matching("/message/"):
            possible.add("show")
        form = page.act_form()
        if form is not None and (form.checkboxes or ("id", "") not in form.fields):
            possible.add("delete")
            if form.options:
                possible.add("refile")
        if state == "show":
            possible.add("messages")
        return self.choose(state, possible)

    async def do_show(self) -> str:
        assert self.page is not None
        url = self.rng.choice([u for u in self.page.matching("/message/") if "/part/" not in u])
        status, _, data = await self.fetch("show", "GET", url)
        if status != 200:
            return "messages" if hasattr(self, "list_url") else "login"
        self.page = self.parse(data)
        back = self.page.matching("/folder/")
        if back:
            self.next_list = back[0]
        return self.after(self.page, "show")

    async def act(self, action: str) -> str:
        assert self.page is not None
        form = self.page.act_form()
        assert form is not None
        fields = list(form.fields)
        if form.checkboxes:
            fields.append(("id", self.rng.choice(form.checkboxes)))
        fields.append(("action", action))
        if action == "refile":
            fields.append(("to", self.rng.choice(form.options)))
        status, headers, _ = await self.fetch(action, "POST", form.action, fields)
        location = headers.get("location", "")
        if status == 303 and "/folder/" in location:
            self.next_list = location[location.index("/folder/"):]
        return "messages"

    async def do_delete(self) -> str:
        return await self.act("delete")

    async def do_refile(self) -> str:
        return await self.act("refile")

    async def do_search(self) -> str:
        assert self.page is not None
        words = self.page.words or ["re"]
        word = self.rng.choice(words)
        start = self.rng.randrange(max(1, len(word) - 2))
        query = [("q", word[start:start + 3])]
        folder = re.match(r"/folder/(\d+)", getattr(self, "next_list", ""))
        if folder and self.rng.random() < 0.5:
            query.append(("folder", folder.group(1)))
        status, _, data = await self.fetch("search", "GET", "/search?" + urlencode(query))
        if status != 200:
            return "login"
        self.page = self.parse(data)
        return self.after(self.page, "search")


async def drive(port: int, users: int, accounts: int, warmup: float, seconds: float,
                seed: int) -> Recorder:
    start = time.perf_counter()
    rec = Recorder(start, warmup, seconds)
    stop = start + warmup + seconds
    rng = random.Random(seed)

    async def one(n: int) -> None:
        await asyncio.sleep(rng.random() * min(1.0, warmup))      # not all at once
        user = User(n, accounts, "127.0.0.1", port, rec, random.Random(rng.random()))
        try:
            await user.run(stop)
        finally:
            user.conn.close()

    await asyncio.gather(*(one(n) for n in range(users)))
    return rec


@contextlib.contextmanager
def arashi_server(db: Path, pg: PgServer | None = None, template: str = TEMPLATE,
                  options: tuple[str, ...] = ()) -> Iterator[int]:
    """``arashi serve`` (with ``options``) on a fresh copy of the database (SQLite: of
    ``db/arashi.db``; PostgreSQL: of the database ``template`` on ``pg``) until the block
    ends; yields its web port."""
    with tempfile.TemporaryDirectory(prefix="arashi-load-") as tmp:
        data = Path(tmp)
        port = free_port()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")]))
        if pg is None:
            shutil.copy(db / "arashi.db", data / "arashi.db")
            where = ["--data", str(data)]
        else:
            name = f"arashi_run_{os.getpid()}_{next(_RUNS)}"
            where = ["--db", pg.new_database(name, template=template)]
        cmd = [sys.executable, "-m", "arashi", "serve", *where, "--bind",
               f"127.0.0.1:{port}", "--smtp-bind", "127.0.0.1:0", "--domain", "example.org",
               *options]
        try:
            with server(cmd, port, env):
                yield port
        finally:
            if pg is not None:
                pg.drop_database(name)


def measure(db: Path, users: int, accounts: int, warmup: float, seconds: float,
            seed: int = 1, pg: PgServer | None = None, template: str = TEMPLATE,
            options: tuple[str, ...] = ()) -> dict[str, Any]:
    """One point: a fresh copy of the database, a fresh server (``arashi serve`` with
    ``options``), ``users`` emulated users."""
    with arashi_server(db, pg, template, options) as port:
        rec = asyncio.run(drive(port, users, accounts, warmup, seconds, seed))
    per = {t: {"count": h.get_total_count(), "p90_ms": h.get_value_at_percentile(90) / 1e3,
               "mean_ms": h.get_mean_value() / 1e3}
           for t, h in rec.hists.items() if h.get_total_count()}
    return {"users": users, "seconds": seconds, "requests": rec.all.get_total_count(),
            "throughput": rec.all.get_total_count() / seconds,
            "p90_ms": rec.all.get_value_at_percentile(90) / 1e3,
            "p50_ms": rec.all.get_value_at_percentile(50) / 1e3,
            "busy_503": rec.busy, "errors": rec.errors, "types": per}


# -- report -----------------------------------------------------------------------------------

def report(runs: list[dict], setup: dict) -> str:
    backend = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}[setup.get("backend", "sqlite")]
    large = (f" ({setup['warmup_large']:g} s from 256 users on)"
             if setup.get("warmup_large") is not None else "")
    out = [f"Arashi under load ({backend}): {setup['accounts']} accounts, {setup['messages']} "
           f"messages, {setup['warmup']:g} s warm-up{large} + {setup['seconds']:g} s measured "
           "per run, "
           f"20 ms think time; server on core 0, users on core 1.", "",
           "| users | run | requests/s | p50 ms | p90 ms | 503 | errors |",
           "|---:|---:|---:|---:|---:|---:|---|"]
    for r in runs:
        out.append(f"| {r['users']} | {r['run']} | {r['throughput']:.1f} | {r['p50_ms']:.1f} | "
                   f"{r['p90_ms']:.1f} | {r['busy_503']} | {r['errors'] or '-'} |")
    out += ["", "p90 (ms) per request type (requests in the measured window):", "",
            "| users | run | " + " | ".join(TYPES) + " |", "|---:|---:|" + "---:|" * len(TYPES)]
    for r in runs:
        cells = [f"{r['types'][t]['p90_ms']:.1f} ({r['types'][t]['count']})"
                 if t in r["types"] else "-" for t in TYPES]
        out.append(f"| {r['users']} | {r['run']} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def plot(runs: list[dict], fig47: str, fig48: str, fig48_users: tuple[int, ...],
         backend: str = "SQLite") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    users = sorted({r["users"] for r in runs})
    fig, ax = plt.subplots(figsize=(7, 4))
    ax2 = ax.twinx()
    for i, u in enumerate(users):
        pts = [r for r in runs if r["users"] == u]
        ax.scatter([u] * len(pts), [r["throughput"] for r in pts], color="C0", marker="o",
                   label="throughput" if i == 0 else None)
        ax2.scatter([u] * len(pts), [r["p90_ms"] for r in pts], color="C3", marker="x",
                    label="p90" if i == 0 else None)

    def mean(key: str) -> list[float]:
        return [sum(r[key] for r in runs if r["users"] == u)
                / len([r for r in runs if r["users"] == u]) for u in users]
    ax.plot(users, mean("throughput"), color="C0")
    ax2.plot(users, mean("p90_ms"), color="C3")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("emulated users")
    ax.set_ylabel("requests/s", color="C0")
    ax2.set_ylabel("90th-percentile response time (ms)", color="C3")
    ax.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    fig.legend(loc="upper left", bbox_to_anchor=(0.12, 0.88))
    ax.set_title(f"Arashi on {backend} (cf. thesis Fig. 47)")
    fig.tight_layout()
    fig.savefig(fig47, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    shown = [u for u in fig48_users if u in users]
    width = 0.8 / max(1, len(shown))
    for i, u in enumerate(shown):
        pts = [r for r in runs if r["users"] == u]
        vals = [max((r["types"].get(t, {}).get("p90_ms", 0.0) for r in pts), default=0.0)
                for t in TYPES]
        ax.bar([j + i * width for j in range(len(TYPES))], vals, width, label=f"{u} users")
    ax.set_xticks([j + width * (len(shown) - 1) / 2 for j in range(len(TYPES))], TYPES)
    ax.set_yscale("log")
    ax.set_ylabel("90th-percentile response time (ms)")
    ax.set_title(f"{backend}: p90 per request type (cf. thesis Fig. 48; the worse of the runs)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(fig48, dpi=110)
    plt.close(fig)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.arashi_load",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, nargs="+", default=list(FULL_USERS))
    p.add_argument("--runs", type=int, default=2, help="runs of each point (default 2)")
    p.add_argument("--first-run", type=int, default=1,
                   help="number (and seed) of the first run, to add runs in another invocation")
    p.add_argument("--seconds", type=float, default=20.0, help="measured seconds a run")
    p.add_argument("--warmup", type=float, default=8.0, help="seconds before measuring")
    p.add_argument("--warmup-large", type=float, metavar="SECONDS",
                   help="warm-up from 256 users on (default --warmup); a login storm there"
                   " takes tens of seconds to drain")
    p.add_argument("--accounts", type=int, default=128)
    p.add_argument("--max-messages", type=int, default=4000)
    p.add_argument("--fig48", type=int, nargs="+", default=[16, 1024])
    p.add_argument("--data", help="reuse (or make) this data directory (SQLite only)")
    p.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite",
                   help="postgresql: a throwaway server (initdb in a temporary directory, Unix"
                   " socket, on core 0 with arashi), the same generated mail loaded once, each"
                   " run on a fresh copy of it (CREATE DATABASE ... TEMPLATE)")
    p.add_argument("--out", help="base name in docs/results/ or a path (default arashi_load,"
                   " arashi_load_pg for PostgreSQL)")
    p.add_argument("--append", action="store_true",
                   help="keep the runs already in the output's .json (other run numbers) and"
                   " report and plot them with these")
    p.add_argument("--quick", action="store_true",
                   help="1 and 4 users, 4 accounts of up to 40 messages, 2 s runs")
    return p


def two_cores() -> bool:
    """Whether there are two cores to split: the server on 0, the users on 1."""
    return hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.quick:
        args.users, args.runs, args.seconds, args.warmup = [1, 4], 1, 1.5, 0.5
        args.accounts, args.max_messages, args.fig48 = 4, 40, [1, 4]
    on_two_cores = two_cores()
    if on_two_cores:
        os.sched_setaffinity(0, {1})
    if args.out is None:
        args.out = "arashi_load_pg" if args.backend == "postgresql" else "arashi_load"
    tmp = None
    pg = None
    if args.data and args.backend == "sqlite":
        data = Path(args.data)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="arashi-data-")
        data = Path(tmp.name)
    try:
        if args.backend == "postgresql":
            pg = PgServer(cores="0" if on_two_cores else None)
            t = time.perf_counter()
            n = make_data(data, args.accounts, args.max_messages, url=pg.new_database(TEMPLATE))
            print(f"made {args.accounts} accounts with {n} messages in PostgreSQL in "
                  f"{time.perf_counter() - t:.1f} s", flush=True)
        elif not (data / "arashi.db").exists():
            t = time.perf_counter()
            n = make_data(data, args.accounts, args.max_messages)
            print(f"made {args.accounts} accounts with {n} messages in "
                  f"{time.perf_counter() - t:.1f} s", flush=True)
        else:
            with contextlib.closing(sqlite3.connect(data / "arashi.db")) as db:
                n = db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        runs = []
        for run in range(args.first_run, args.first_run + args.runs):
            for users in args.users:
                warmup = args.warmup if users < 256 or args.warmup_large is None \
                    else args.warmup_large
                r = measure(data, users, args.accounts, warmup, args.seconds, seed=run, pg=pg)
                r["warmup"] = warmup
                r["run"] = run
                runs.append(r)
                print(f"{users:5d} users run {run}: {r['throughput']:7.1f} req/s, "
                      f"p90 {r['p90_ms']:8.1f} ms, 503s {r['busy_503']}, errors {r['errors']}",
                      flush=True)
    finally:
        if pg is not None:
            pg.stop()
        if tmp is not None:
            tmp.cleanup()
    base = Path(args.out) if os.sep in args.out else result_path(args.out)
    if args.append and base.with_suffix(".json").exists():
        mine = {(r["users"], r["run"]) for r in runs}
        runs += [r for r in json.loads(base.with_suffix(".json").read_text())["runs"]
                 if (r["users"], r["run"]) not in mine]
    runs.sort(key=lambda r: (r["users"], r["run"]))
    setup = {"accounts": args.accounts, "messages": n, "max_messages": args.max_messages,
             "seconds": args.seconds, "warmup": args.warmup, "think_ms": THINK * 1e3,
             "warmup_large": args.warmup_large,
             "backend": args.backend}
    text = report(runs, setup)
    print(text)
    base.with_suffix(".md").write_text(text)
    base.with_suffix(".json").write_text(json.dumps({"setup": setup, "runs": runs}, indent=1))
    stem = base.with_name(base.name.replace("_load", ""))
    plot(runs, f"{stem}_fig47.png", f"{stem}_fig48.png", tuple(args.fig48),
         "PostgreSQL" if args.backend == "postgresql" else "SQLite")
    return 0


if __name__ == "__main__":
    sys.exit(main())
