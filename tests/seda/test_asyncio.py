"""Asyncio stages (``tasks=N``): each event a task on the stage's own event loop, at most N at
once; init and destroy on that loop; stopping waits for the tasks in flight."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

import seda

from tests.helpers import WAIT
from tests.helpers.net import until
from tests.helpers.recorder import Recorder


class Gated(seda.EventHandler):
    """Each event's task waits for the test to open the gate; records who ran and where."""

    def __init__(self) -> None:
        self.started: list = []
        self.done: list = []
        self.threads: set[str] = set()
        self.loops: set = set()
        self.gate: asyncio.Event | None = None
        self.ready = threading.Event()
        self.destroyed: list = []

    async def init(self, ctx):
        self.gate = asyncio.Event()
        self.loop = asyncio.get_running_loop()
        self.init_thread = threading.current_thread().name
        self.ready.set()

    async def handle_event(self, ev):
        self.started.append(ev)
        self.threads.add(threading.current_thread().name)
        self.loops.add(asyncio.get_running_loop())
        await self.gate.wait()
        self.done.append(ev)

    async def destroy(self):
        self.destroyed.append((list(self.done), threading.current_thread().name))

    def open(self):
        self.loop.call_soon_threadsafe(self.gate.set)


def soon(predicate):
    """``predicate()`` becomes true within WAIT (what the stage's thread does next)."""
    until(predicate, bool)


def test_each_event_is_a_task_on_the_stages_own_loop_thread(rt):
    handler = Gated()
    stage = rt.add_stage("a", handler, tasks=100)
    rt.start()
    stage.sink.enqueue_many(list(range(10)))
    soon(lambda: len(handler.started) == 10)        # all ten wait at once
    assert handler.done == []
    handler.open()
    soon(lambda: len(handler.done) == 10)
    assert handler.threads == {"seda:a"} and handler.init_thread == "seda:a"
    assert len(handler.loops) == 1
    soon(lambda: rt.stats()["a"]["processed"] == 10)
    assert rt.stats()["a"]["manager"] == "asyncio"


def test_at_most_tasks_events_are_in_hand_and_the_sink_counts_them_with_the_queue(rt):
    handler = Gated()
    stage = rt.add_stage("a", handler, tasks=3)
    rt.start()
    stage.sink.enqueue_many(list(range(10)))
    soon(lambda: len(handler.started) == 3)
    assert len(stage.sink) == 10                   # 3 in flight and 7 queued
    assert rt.stats()["a"]["queue"] == 7
    handler.open()
    soon(lambda: len(handler.done) == 10)
    assert handler.done == list(range(10))         # in arrival order, three at a time
    soon(lambda: len(stage.sink) == 0)


def test_init_failure_stops_the_start_with_its_exception(rt):
    class Failing(seda.EventHandler):
        async def init(self, ctx):
            await asyncio.sleep(0)
            raise ValueError("no database")

        async def handle_event(self, ev):
            pass

    rt.add_stage("a", Failing(), tasks=4)
    with pytest.raises(RuntimeError, match="no database") as info:
        rt.start()
    assert isinstance(info.value.__cause__, ValueError)


def test_stop_waits_for_the_tasks_in_flight_then_destroys_on_the_loop(rt):
    handler = Gated()
    stage = rt.add_stage("a", handler, tasks=10)
    rt.start()
    stage.sink.enqueue_many([1, 2, 3])
    soon(lambda: len(handler.started) == 3)
    stopper = threading.Thread(target=rt.stop, kwargs={"timeout": WAIT})
    stopper.start()
    handler.open()                                  # while the runtime waits for them
    stopper.join(WAIT + 5)
    assert handler.destroyed == [([1, 2, 3], "seda:a")]


def test_a_spawned_task_holds_no_place_but_stop_waits_for_it(rt):
    """``spawn``: what an event leaves running (an accepted WebSocket) is outside the cap and
    the queue's length, and still waited for by stop."""
    class Spawning(Gated):
        async def handle_event(self, ev):
            self.manager.spawn(super().handle_event(ev))

        async def init(self, ctx):
            await super().init(ctx)
            self.manager = ctx.stage.manager

    handler = Spawning()
    stage = rt.add_stage("a", handler, tasks=1)
    rt.start()
    stage.sink.enqueue_many([1, 2, 3])             # one place, and all three run at once
    soon(lambda: len(handler.started) == 3)
    assert (len(stage.sink), rt.stats()["a"]["processed"]) == (0, 3)
    stopper = threading.Thread(target=rt.stop, kwargs={"timeout": WAIT})
    stopper.start()
    stopper.join(0.5)
    assert stopper.is_alive()                       # waiting for them
    handler.open()
    stopper.join(WAIT + 5)
    assert handler.destroyed == [([1, 2, 3], "seda:a")]


def test_stop_past_the_deadline_cancels_the_tasks(rt):
    handler = Gated()
    stage = rt.add_stage("a", handler, tasks=10)
    rt.start()
    stage.sink.enqueue_many([1, 2])
    soon(lambda: len(handler.started) == 2)
    rt.stop(timeout=0.2)                           # never opened: they are cut off
    assert handler.done == [] and handler.destroyed == [([], "seda:a")]


def test_a_handler_that_raises_is_counted_and_the_stage_goes_on(rt):
    seen = []

    class Flaky(seda.EventHandler):
        async def handle_event(self, ev):
            if ev == "bad":
                raise ValueError(ev)
            seen.append(ev)

    stage = rt.add_stage("a", Flaky(), tasks=2)
    rt.start()
    stage.sink.enqueue_many(["bad", "good"])
    soon(lambda: seen == ["good"] and rt.stats()["a"]["errors"] == 1)


def test_observers_see_the_time_to_the_end_of_each_task(rt):
    handler = Gated()
    stage = rt.add_stage("a", handler, tasks=1)
    seen = []
    stage.observe(lambda events, waits, responses: seen.extend(zip(events, waits, responses,
                                                                   strict=True)))
    rt.start()
    stage.sink.enqueue_many(["first", "second"])
    soon(lambda: handler.started == ["first"])
    time.sleep(0.05)                               # (the time being measured, not a wait)
    handler.open()
    soon(lambda: len(seen) == 2)
    (first, _wait1, response1), (second, wait2, _response2) = seen
    assert (first, second) == ("first", "second")
    assert response1 >= 0.05                       # the task's time counts, not its start
    assert wait2 >= 0.05                           # it waited for the only task slot


def test_tasks_have_contexts_of_their_own_and_enqueue_as_their_stage(rt):
    var = contextvars.ContextVar("var", default=None)
    seen = []
    end = Recorder()

    class Ctx(seda.EventHandler):
        def init(self, ctx):
            self.out = ctx.runtime.sink("end")

        async def handle_event(self, ev):
            seen.append(var.get())
            var.set(ev)
            await asyncio.sleep(0)
            self.out.enqueue(ev)

    rt.add_stage("end", end, blocking=False)
    stage = rt.add_stage("a", Ctx(), tasks=1)     # each task started as the last ends
    rt.start()
    stage.sink.enqueue_many([1, 2, 3])
    end.wait(3)
    assert seen == [None, None, None]
    soon(lambda: ("a", "end", 3) in rt.stage_graph())   # (counted just after each put)


def test_tasks_are_named_after_their_stage_and_a_task_factory_is_used(rt):
    made, names = [], []

    class Named(seda.EventHandler):
        async def init(self, ctx):
            if ctx.params.get("factory"):     # as an application may, in its lifespan startup
                def factory(loop, coro, **kwargs):
                    made.append(coro)
                    return asyncio.Task(coro, loop=loop, **kwargs)
                asyncio.get_running_loop().set_task_factory(factory)

        async def handle_event(self, ev):
            names.append(asyncio.current_task().get_name())

    plain = rt.add_stage("plain", Named(), tasks=4)
    factored = rt.add_stage("factored", Named(), tasks=4, params={"factory": True})
    rt.start()
    plain.sink.enqueue_many([1, 2])
    factored.sink.enqueue_many([3])
    soon(lambda: len(names) == 3)
    assert sorted(names) == ["factored", "plain", "plain"] and len(made) == 1


def test_the_loop_factory_makes_the_loop(rt):
    made = []

    def factory():
        loop = asyncio.new_event_loop()
        made.append(loop)
        return loop

    handler = Gated()
    rt.add_stage("a", handler, tasks=1, loop_factory=factory)
    rt.start()
    assert handler.ready.wait(WAIT)
    assert made == [handler.loop] and type(handler.loop) is type(asyncio.new_event_loop())


def test_an_asyncio_stage_takes_a_coroutine_handler_and_no_other_placement(rt):
    with pytest.raises(TypeError, match="async def handle_event"):
        rt.add_stage("sync", Recorder(), tasks=2)
    for wrong in ({"blocking": False}, {"threads": 2}, {"key": str}, {"processes": 2}):
        with pytest.raises(ValueError, match="asyncio stage"):
            rt.add_stage("a", Gated(), tasks=2, **wrong)
    with pytest.raises(ValueError, match="tasks must be"):
        rt.add_stage("zero", Gated(), tasks=0)


def test_the_stage_measures_how_many_tasks_really_overlap(rt):
    """Tasks that only compute run one after the other; tasks that wait overlap up to the cap.
    (Response-time controllers turn this into capacity; measured each half second.)"""
    class Compute(seda.EventHandler):
        async def handle_event(self, ev):
            end = time.thread_time() + 0.002
            while time.thread_time() < end:
                pass

    class Wait(seda.EventHandler):
        async def handle_event(self, ev):
            await asyncio.sleep(0.2)

    computing = rt.add_stage("compute", Compute(), tasks=100)
    waiting = rt.add_stage("wait", Wait(), tasks=100)
    rt.start()
    assert computing.manager.concurrency() == 100       # the cap, until measured
    for stage in (computing, waiting):
        for _ in range(6):                                # a second or more of work each
            stage.sink.enqueue_many(list(range(100)))
            soon(lambda stage=stage: len(stage.sink) == 0)
    assert computing.manager.concurrency() < 10           # 1, but for other threads' turns
    assert waiting.manager.concurrency() > 40             # 100, but for the loop's own CPU
