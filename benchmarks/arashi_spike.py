"""Emulated Arashi users over time (issue 17): groups of users whose numbers follow a schedule
of phases (3 users, then 1000, then 3 again), each user the Markov model of
``benchmarks/arashi_load.py`` that backs off after a refusal as the thesis's client did (7.3:
wait 5 s, then log in again; or reload the refused page), every completion recorded with its
time, request type, group and status, and the server's stages sampled from
``/_seda/stats.json`` once a second.

    phases = [(30, {"users": 3}), (60, {"users": 1000}), (30, {"users": 3})]
    timeline = asyncio.run(drive(port, [Group("users")], phases, accounts=128, backoff=5))
    summary(timeline.rows, 35, 90, capacity)     # p90, refusals, goodput ... over [35 s, 90 s)

``arashi_overload.py`` runs the experiments with it.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from dataclasses import dataclass
from typing import Any

from benchmarks.arashi_load import TYPES, Conn, Page, User
from seda.control.response_time import p90

REFUSED = 503
STATS = "/_seda/stats.json"


# -- what happened ----------------------------------------------------------------------------

class Timeline:
    """Every completion as ``(done, group, kind, status, seconds)`` (``done`` from the start of
    the run), the refusals whose page was not the promised one, and the stage samples."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.rows: list[tuple[float, str, str, int, float]] = []
        self.refusals = 0                # 503s whose page was looked at
        self.bad_refusals = 0            # a 503 without Retry-After or an HTML page saying so
        self.samples: list[tuple[float, dict[str, Any]]] = []

    def recorder(self, group: str) -> _Tagged:
        return _Tagged(self, group)

    def refusal(self, headers: dict[str, str], body: bytes) -> None:
        page = (headers.get("retry-after", "").isdigit()
                and headers.get("content-type", "").startswith("text/html")
                and b"try again" in body.lower())
        self.refusals += 1
        self.bad_refusals += not page


class _Tagged:
    """A Recorder for arashi_load's User: each completion goes into the timeline, tagged."""

    def __init__(self, timeline: Timeline, group: str) -> None:
        self.timeline, self.group = timeline, group

    def record(self, kind: str, sent: float, done: float, status: int) -> None:
        self.timeline.rows.append((done - self.timeline.start, self.group, kind, status,
                                   done - sent))


class Emulated(User):
    """arashi_load's user, whose refusals' pages are checked as well."""

    rec: _Tagged

    async def fetch(self, kind: str, method: str, path: str,
                    form: list[tuple[str, str]] | None = None
                    ) -> tuple[int, dict[str, str], bytes]:
        status, headers, data = await super().fetch(kind, method, path, form)
        if status == REFUSED:
            self.rec.timeline.refusal(headers, data)
        return status, headers, data


class Searcher(Emulated):
    """A user who only searches, in all folders, for three letters of a subject or sender on
    the last results page: after login the dearest request type (1-3 ms in the handler, where
    a message list takes 0.4 ms), over and over."""

    async def do_folders(self) -> str:          # after logging in: no folder list, a search
        self.page = Page("")
        return "search"

    def after(self, page: Page, state: str) -> str:
        return "search"


# -- who is there when ------------------------------------------------------------------------

@dataclass(frozen=True)
class Group:
    """Users alike: their model (a ``User`` class), a cookie each sends (``tier=9``), and
    whether they log in again after a refusal (None: as the run says)."""

    name: str
    user: type[User] = Emulated
    cookie: str = ""
    relogin: bool | None = None


Phases = list[tuple[float, dict[str, int]]]


def intervals(phases: Phases, group: str) -> list[tuple[float, float]]:
    """When each of ``group``'s users is there: user i is there in every phase with more than i
    of them, and one stretch of consecutive phases is one visit (one login)."""
    visits: list[tuple[float, float]] = []
    most = max((counts.get(group, 0) for _, counts in phases), default=0)
    for i in range(most):
        t, start = 0.0, None
        for seconds, counts in phases:
            if counts.get(group, 0) > i and start is None:
                start = t
            elif counts.get(group, 0) <= i and start is not None:
                visits.append((start, t))
                start = None
            t += seconds
        if start is not None:
            visits.append((start, t))
    return visits


# -- the run ----------------------------------------------------------------------------------

async def _visit(user: User, start: float, end: float) -> None:
    """``user`` logs in at ``start`` and is gone at ``end``, even mid-request (it closes the
    page: the server's work goes on, its answer goes nowhere)."""
    await asyncio.sleep(max(0.0, start - time.perf_counter()))
    try:
        await asyncio.wait_for(user.run(end), max(0.0, end - time.perf_counter()))
    except TimeoutError:
        pass
    finally:
        user.conn.close()


def _compact(stages: dict[str, Any]) -> dict[str, Any]:
    """Of each request type's stage: queue, threads, refusals and its admission state."""
    return {name: {"queue": s["queue"], "threads": s["threads"], "rejected": s["rejected"],
                   "processed": s["processed"],
                   "admission": s.get("control", {}).get("admission", {})}
            for name, s in stages.items()
            if name.startswith("arashi.") and name != "arashi.http"}


async def _sample(port: int, timeline: Timeline, end: float) -> None:
    """The stages' state once a second, on a connection of its own."""
    conn = Conn("127.0.0.1", port)
    try:
        while (now := time.perf_counter()) < end:
            try:
                status, _, data = await asyncio.wait_for(conn.request("GET", STATS), 1.0)
                if status == 200:
                    timeline.samples.append((now - timeline.start, _compact(json.loads(data))))
            except (TimeoutError, OSError, ValueError, IndexError, asyncio.IncompleteReadError):
                conn.close()
            await asyncio.sleep(max(0.0, 1.0 - (time.perf_counter() - now)))
    finally:
        conn.close()


async def drive(port: int, groups: list[Group], phases: Phases, accounts: int,
                backoff: float, seed: int = 1, arrival: float = 1.0,
                relogin: bool = True) -> Timeline:
    """Run ``phases`` against the server on ``port``: users arrive within ``arrival`` seconds
    of the start of their visit, and are all gone at its end; after a refusal they wait
    ``backoff`` s, then log in again (``relogin``) or reload the page."""
    start = time.perf_counter()
    timeline = Timeline(start)
    end = start + sum(seconds for seconds, _ in phases)
    rng = random.Random(seed)
    visits = []
    n = 0
    for group in groups:
        for first, last in intervals(phases, group.name):
            user = group.user(n, accounts, "127.0.0.1", port, timeline.recorder(group.name),
                              random.Random(rng.random()), backoff=backoff, cookie=group.cookie,
                              relogin=relogin if group.relogin is None else group.relogin)
            visits.append(_visit(user, start + first + rng.random() * arrival, start + last))
            n += 1
    await asyncio.gather(_sample(port, timeline, end), *visits)
    return timeline


# -- what it comes to -------------------------------------------------------------------------

Row = tuple[float, str, str, int, float]


def _p90_ms(seconds: list[float]) -> float | None:
    return p90(list(seconds)) * 1000 if seconds else None


def _fraction(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def summary(rows: list[Row], first: float, last: float, capacity: float | None,
            group: str | None = None) -> dict[str, Any]:
    """Over completions in [first, last) (of one group, or all): p90 of the admitted (every
    answer but a refusal), the fraction refused, how fast a refusal came, goodput (successful
    answers per second; against ``capacity`` if known), other errors, and the same per type."""
    mine = [r for r in rows if first <= r[0] < last and (group is None or r[1] == group)]
    admitted = [r[4] for r in mine if r[3] != REFUSED]
    refused = [r[4] for r in mine if r[3] == REFUSED]
    good = sum(1 for r in mine if r[3] < 400)
    seconds = max(last - first, 1e-9)
    errors: dict[str, int] = {}
    for r in mine:
        if r[3] >= 400 and r[3] != REFUSED:
            errors[str(r[3])] = errors.get(str(r[3]), 0) + 1
    types = {}
    for kind in TYPES:
        of = [r for r in mine if r[2] == kind]
        if of:
            types[kind] = {"count": len(of),
                           "p90_ms": _p90_ms([r[4] for r in of if r[3] != REFUSED]),
                           "refused": _fraction(sum(r[3] == REFUSED for r in of), len(of))}
    return {"requests": len(mine), "p90_ms": _p90_ms(admitted),
            "refused": _fraction(len(refused), len(mine)), "refusal_p90_ms": _p90_ms(refused),
            "goodput": good / seconds,
            "goodput_c": good / seconds / capacity if capacity else None,
            "errors": errors, "types": types}


def series(rows: list[Row], seconds: float, group: str | None = None,
           kind: str | None = None) -> dict[str, list[Any]]:
    """Per second of the run: p90 of the admitted (ms), the fraction refused, and successful
    answers per second."""
    n = math.ceil(seconds)
    admitted: list[list[float]] = [[] for _ in range(n)]
    refused, good = [0] * n, [0] * n
    for done, g, k, status, took in rows:
        i = int(done)
        if i >= n or (group is not None and g != group) or (kind is not None and k != kind):
            continue
        if status == REFUSED:
            refused[i] += 1
        else:
            admitted[i].append(took)
        good[i] += status < 400
    return {"t": list(range(n)), "p90_ms": [_p90_ms(a) for a in admitted],
            "refused": [_fraction(refused[i], refused[i] + len(admitted[i])) for i in range(n)],
            "goodput": good}
