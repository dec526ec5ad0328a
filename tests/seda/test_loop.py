"""The shared event-loop thread: non-blocking stages, cross-thread wake-ups, socket readiness."""

from __future__ import annotations

import asyncio
import random
import socket
import threading
import time

import pytest

import seda
import seda._loop
from seda._loop import EventLoop, RoundWakeups

from tests.helpers import WAIT
from tests.helpers.recorder import Recorder


class Hop(seda.EventHandler):
    def __init__(self, target: str) -> None:
        self.target = target
        self.threads: set = set()

    def init(self, ctx):
        self.out = ctx.runtime.sink(self.target)

    def handle_events(self, events):
        self.threads.add(threading.get_ident())
        self.out.enqueue_many(events)


def test_non_blocking_stages_share_one_thread(rt):
    end = Recorder()
    hops = [Hop("end")] + [Hop(f"h{i}") for i in range(4)]
    rt.add_stage("end", end, blocking=False)
    for i, hop in enumerate(hops):
        rt.add_stage(f"h{i}", hop, blocking=False)
    rt.start()
    rt.sink("h4").enqueue_many(range(300))
    assert end.wait(300) == list(range(300))
    assert len(set.union(*(h.threads for h in hops))) == 1
    assert end.threads == {"seda:loop"}


def test_enqueue_from_other_threads_wakes_the_sleeping_loop(rt):
    end = Recorder()
    rt.add_stage("end", end, blocking=False)
    rt.add_stage("pool", Hop("end"), threads=2, batch=1)
    rt.start()
    total = 0
    for round_ in range(20):              # each round finds the loop asleep in select()
        rt.sink("pool").enqueue_many(range(round_ * 10, round_ * 10 + 10))
        total += 10
        end.wait(total)
    assert sorted(end.events) == list(range(200))


def test_socket_readiness_callbacks_run_on_the_loop(rt):
    rt.start()
    left, right = socket.socketpair()
    left.setblocking(False)
    got, where, done = [], [], threading.Event()

    def readable():
        got.append(left.recv(100))
        where.append(threading.current_thread().name)
        rt.loop.remove_reader(left)
        done.set()

    try:
        rt.loop.call_soon_threadsafe(rt.loop.add_reader, left, readable)
        right.send(b"ping")
        assert done.wait(WAIT)
        assert got == [b"ping"] and where == ["seda:loop"]
    finally:
        left.close()
        right.close()


def test_after_poll_runs_once_a_round_after_its_readiness_callbacks(rt):
    rt.start()
    pairs = [socket.socketpair() for _ in range(3)]
    seen, rounds, done = [], [], threading.Event()

    def readable(sock):
        def callback():
            seen.append(sock.recv(100))
            rt.loop.remove_reader(sock)
        return callback

    def after():
        if seen:                               # (rounds before ours may pass with nothing)
            rounds.append(list(seen))
            seen.clear()
            if sum(map(len, rounds)) == 3:
                done.set()

    def watch():
        for left, _ in pairs:
            rt.loop.add_reader(left, readable(left))
        for _, right in pairs:                 # all three readable before the next poll
            right.send(b"x")

    try:
        rt.loop.call_soon_threadsafe(rt.loop.after_poll, after)
        rt.loop.call_soon_threadsafe(watch)
        assert done.wait(WAIT)
        assert rounds == [[b"x", b"x", b"x"]]    # one call, after every callback of the round
    finally:
        for left, right in pairs:
            left.close()
            right.close()


def test_sockets_are_served_in_the_order_they_became_ready(rt):
    """epoll reports ready sockets first come, first served (and a socket still ready goes
    to the back of the line): the fairness across sockets that thesis 5.6.1 got by shuffling
    what select() reported in descriptor order. The loop keeps the kernel's order."""
    rt.start()
    pairs = [socket.socketpair() for _ in range(20)]
    order = list(range(20))
    random.Random(7).shuffle(order)
    served, done = [], threading.Event()

    def readable(i):
        def callback():
            pairs[i][0].recv(100)
            rt.loop.remove_reader(pairs[i][0])
            served.append(i)
            if len(served) == len(pairs):
                done.set()
        return callback

    def watch():
        for i, (left, _) in enumerate(pairs):
            rt.loop.add_reader(left, readable(i))
        for i in order:                        # all readable before the next poll
            pairs[i][1].send(b"x")

    try:
        rt.loop.call_soon_threadsafe(watch)
        assert done.wait(WAIT)
        assert served == order
    finally:
        for left, right in pairs:
            left.close()
            right.close()


def test_an_edge_triggered_reader_hears_of_new_data_once_in_the_order_it_came(rt):
    """Data left unread is not reported again round after round (level-triggered, it would
    be, in the order of the last report): only new data is, first come first served. What a
    reader left behind is reported again once it asks (``rearm``)."""
    rt.start()
    pairs = {name: socket.socketpair() for name in "ab"}
    heard: list[str] = []
    cond = threading.Condition()

    def readable(name):
        def callback():                        # reads nothing: the data stays
            with cond:
                heard.append(name)
                cond.notify_all()
        return callback

    def heard_after(action, count):
        with cond:
            action()
            assert cond.wait_for(lambda: len(heard) >= count, WAIT), heard
            return list(heard)

    def rounds_pass(n):                        # n rounds of the loop, each after a wake-up
        for _ in range(n):
            passed = threading.Event()
            rt.loop.call_soon_threadsafe(passed.set)
            assert passed.wait(WAIT)

    def watch():
        for name, (left, _) in pairs.items():
            rt.loop.add_reader(left, readable(name), edge=True)

    try:
        rt.loop.call_soon_threadsafe(watch)
        rounds_pass(1)
        assert heard_after(lambda: (pairs["a"][1].send(b"x"), pairs["b"][1].send(b"x")), 2) \
            == ["a", "b"]
        rounds_pass(5)
        assert heard == ["a", "b"]             # unread, and not told again
        assert heard_after(lambda: (pairs["b"][1].send(b"y"), pairs["a"][1].send(b"y")), 4) \
            == ["a", "b", "b", "a"]
        assert heard_after(lambda: rt.loop.call_soon_threadsafe(
            rt.loop.rearm, pairs["a"][0].fileno()), 5) == ["a", "b", "b", "a", "a"]
        rounds_pass(5)
        assert len(heard) == 5
    finally:
        for left, right in pairs.values():
            left.close()
            right.close()


def test_a_failing_callback_does_not_stop_the_loop(rt, caplog):
    end = Recorder()
    rt.add_stage("end", end, blocking=False)
    rt.start()
    rt.loop.call_soon_threadsafe(lambda: 1 / 0)
    rt.sink("end").enqueue("after")
    assert end.wait(1) == ["after"]
    rt.stop()
    assert "ZeroDivisionError" in caplog.text


def test_destroying_a_loop_stage_drains_it(rt):
    end = Recorder()
    st = rt.add_stage("end", end, blocking=False)
    rt.start()
    st.sink.enqueue_many(range(1000))
    st.destroy()
    assert end.events == list(range(1000)) and end.destroyed == 1


class Ring(seda.EventHandler):
    """Passes each token to the next stage until it has gone round ``laps`` times."""

    def __init__(self, target: str, laps: int, done: threading.Event) -> None:
        self.target, self.laps, self.done = target, laps, done

    def init(self, ctx):
        self.out = ctx.runtime.sink(self.target)
        self.first = ctx.stage.name == "r0"

    def handle_event(self, lap):
        if self.first:
            lap += 1
            if lap > self.laps:
                self.done.set()
                return
        self.out.enqueue(lap)


def test_every_stage_of_a_ring_gets_timed(rt):
    """Service times are sampled per stage: with one count shared by the loop, every
    sixteenth batch of a ring of ten stages fell on the same few stages, and half of them
    showed a p90 of 0 for ever."""
    done = threading.Event()
    size = 10
    for i in range(size):
        rt.add_stage(f"r{i}", Ring(f"r{(i + 1) % size}", 40, done), blocking=False)
    rt.start()
    rt.sink("r0").enqueue(0)
    assert done.wait(WAIT)
    stats = rt.stats()
    assert all(stats[f"r{i}"]["p90_ms"] > 0 for i in range(size)), stats


# -- wake-ups from a thread that runs a loop of its own (an asyncio stage's) ----------------------

def asleep(loop: EventLoop) -> EventLoop:
    """``loop``, once it sleeps in select() (a poll of its flag: nothing announces it)."""
    deadline = time.monotonic() + WAIT
    while not loop.sleeping:
        assert time.monotonic() < deadline, "the loop never slept"
        time.sleep(0.001)
    return loop


@pytest.fixture
def loop():
    loop = EventLoop()
    loop.start()
    yield asleep(loop)
    loop.stop(WAIT)


def counted(monkeypatch, loop: EventLoop) -> list[int]:
    """The wake-up bytes ``loop`` is sent, counted."""
    writes: list[int] = []
    real = loop.wake_now

    def wake_now():
        writes.append(1)
        real()
    monkeypatch.setattr(loop, "wake_now", wake_now)
    return writes


def test_wake_ups_from_one_round_of_an_asyncio_loop_go_as_one(loop, monkeypatch):
    writes = counted(monkeypatch, loop)
    ran, done = [], threading.Event()

    async def a_round():
        with RoundWakeups(asyncio.get_running_loop().call_soon):
            for i in range(3):                 # each finds the loop asleep
                loop.call_soon(ran.append, i)
            loop.call_soon(done.set)
            assert writes == []                # the round goes on: nothing written yet
            await asyncio.sleep(0)             # the round ends
            assert writes == [1]

    asyncio.run(a_round())
    assert done.wait(WAIT) and ran == [0, 1, 2]


def test_a_wake_up_waits_no_longer_than_the_limit_once_a_step_ends(loop, monkeypatch):
    writes = counted(monkeypatch, loop)
    done = threading.Event()
    never = []                                 # a round that does not end
    with RoundWakeups(never.append) as wakeups:
        loop.call_soon(done.set)
        limit = seda._loop.DEFER_LIMIT
        wakeups.due_by_now(wakeups.since + limit / 2)   # within the limit: it waits
        assert writes == [] and not done.is_set()
        wakeups.due_by_now(wakeups.since + limit * 2)   # past it
        assert writes == [1] and done.wait(WAIT)


def test_what_waits_when_the_loop_stops_is_woken_then(loop):
    done = threading.Event()
    with RoundWakeups(lambda fn: None):        # its rounds never get to run the wake-up
        loop.call_soon(done.set)
    assert done.wait(WAIT)


def test_a_call_its_caller_may_wait_for_wakes_the_loop_at_once(loop):
    done = threading.Event()
    with RoundWakeups(lambda fn: None):        # a round that would never end
        loop.call_soon_threadsafe(done.set)
        assert done.wait(WAIT)                 # (as Runtime.stop waits for a loop stage)


class Pinger(seda.EventHandler):
    """Asks ``loop`` to run a callback per event; notes the wake-up bytes sent before each.
    It never waits for those callbacks, as a WSGI application's answers do not."""

    waits_on_loop = False

    def __init__(self, loop: EventLoop, writes: list[int], events: int) -> None:
        self.loop, self.writes, self.events = loop, writes, events
        self.seen: list[int] = []
        self.ran: list[int] = []
        self.done = threading.Event()

    def handle_event(self, ev):
        self.seen.append(len(self.writes))
        self.loop.call_soon(self.run, ev)

    def run(self, ev):                             # on the loop
        self.ran.append(ev)
        if len(self.ran) == self.events:
            self.done.set()


@pytest.mark.parametrize("computes", [True, False])
def test_a_pool_thread_whose_handlers_compute_wakes_the_loop_once_its_queue_is_empty(
        rt, loop, monkeypatch, computes):
    monkeypatch.setattr(seda._loop, "DEFER_LIMIT", 60.0)   # only the empty queue lets it go
    writes = counted(monkeypatch, loop)
    pinger = Pinger(loop, writes, 5)
    stage = rt.add_stage("pool", pinger, threads=1, batch=1)
    stage.manager.grow_on_stall = not computes     # as the controller sets it
    stage.sink.enqueue_many(range(5))              # all queued before the thread starts
    rt.start()
    assert pinger.done.wait(WAIT) and pinger.ran == [0, 1, 2, 3, 4]
    if computes:                                   # held back until the last was handled
        assert pinger.seen == [0] * 5 and writes == [1]
    else:                                          # a handler that may block: at once
        assert pinger.seen[1] >= 1
