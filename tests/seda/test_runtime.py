"""Runtime: stage registry, lifecycle, draining stop, destroy, stats and the stage graph."""

from __future__ import annotations

import gc
import os
import threading
import weakref

import pytest

import seda

from tests.helpers import WAIT
from tests.helpers.recorder import Recorder


class Forward(seda.EventHandler):
    def __init__(self, target: str) -> None:
        self.target = target

    def init(self, ctx):
        self.out = ctx.runtime.sink(self.target)

    def handle_events(self, events):
        self.out.enqueue_many(events)


def test_lookup_and_duplicate_names(rt, recorder):
    st = rt.add_stage("r", recorder)
    assert rt.stage("r") is st and rt.sink("r") is st.sink and st.name == "r"
    with pytest.raises(ValueError, match="already exists"):
        rt.add_stage("r", Recorder())
    with pytest.raises(KeyError, match="no stage named 'nope'"):
        rt.stage("nope")


@pytest.mark.parametrize("kwargs, error", [
    ({"batch": 0}, ValueError),
    ({"threads": 0}, ValueError),
    ({"blocking": False, "threads": 2}, ValueError),
    ({"blocking": False, "processes": 2}, ValueError),
])
def test_bad_stage_options_are_clear_errors(rt, recorder, kwargs, error):
    with pytest.raises(error, match="'r'"):
        rt.add_stage("r", recorder, **kwargs)


def test_handler_must_be_an_instance(rt):
    with pytest.raises(TypeError, match="instance"):
        rt.add_stage("r", Recorder)
    with pytest.raises(TypeError, match="not an event handler"):
        rt.add_stage("r", object())


def test_context_manager_and_stages_added_while_running(recorder):
    with seda.Runtime() as runtime:
        runtime.add_stage("r", recorder)
        runtime.add_stage("fwd", Forward("r"), blocking=False)
        runtime.sink("fwd").enqueue_many(range(5))
        assert recorder.wait(5) == list(range(5))
    with pytest.raises(RuntimeError, match="stopped"):
        runtime.add_stage("late", Recorder())
    with pytest.raises(RuntimeError):
        runtime.start()


def test_init_failure_stops_the_runtime_and_names_the_stage(recorder):
    class Broken(seda.EventHandler):
        def init(self, ctx):
            raise OSError("no database")

    runtime = seda.Runtime()
    runtime.add_stage("ok", recorder)
    runtime.add_stage("broken", Broken())
    with pytest.raises(RuntimeError, match=r"'broken'.*no database"):
        runtime.start()
    assert recorder.destroyed == 1        # what was started was also destroyed


@pytest.mark.parametrize("blocking", [True, False])
def test_stop_drains_a_pipeline_then_destroys(blocking):
    sink_end = Recorder()
    runtime = seda.Runtime()
    runtime.add_stage("end", sink_end, blocking=blocking)
    runtime.add_stage("mid", Forward("end"), blocking=blocking, batch=4)
    runtime.add_stage("head", Forward("mid"), blocking=blocking, batch=3)
    runtime.start()
    runtime.sink("head").enqueue_many(range(2000))
    runtime.stop(timeout=WAIT)
    assert sink_end.events == list(range(2000))
    assert sink_end.destroyed == 1
    with pytest.raises(seda.StageClosedError):
        runtime.sink("head").enqueue(1)
    assert runtime.sink("head").enqueue_lossy(1) is False


def test_destroying_a_stage_at_run_time(rt, recorder):
    st = rt.add_stage("r", recorder)
    rt.start()
    st.sink.enqueue_many(range(50))
    st.destroy()
    assert recorder.events == list(range(50))       # drained before destroy()
    assert recorder.destroyed == 1
    with pytest.raises(seda.StageClosedError, match="'r'"):
        st.sink.enqueue(1)
    with pytest.raises(KeyError):
        rt.stage("r")
    rt.add_stage("r", Recorder())                   # the name is free again


def test_stop_leaves_no_thread_behind():
    before = set(threading.enumerate())
    runtime = seda.Runtime()
    runtime.add_stage("a", Recorder(), threads=4)
    runtime.add_stage("b", Recorder(), blocking=False)
    runtime.start()
    assert len(set(threading.enumerate()) - before) == 4 + 3   # pool, loop, timer, control
    runtime.stop()
    assert set(threading.enumerate()) == before


def test_stats_and_stage_graph(rt):
    end = Recorder()
    rt.add_stage("end", end, blocking=False)
    rt.add_stage("b", Forward("end"))
    rt.add_stage("a", Forward("b"), threads=2, batch=8, predicate=lambda ev: ev < 100)
    rt.start()
    sink = rt.sink("a")
    sink.enqueue_many(range(100))
    assert not sink.enqueue_lossy(100)
    end.wait(100)
    rt.stop()
    stats = rt.stats()
    assert stats["a"]["processed"] == 100 and stats["a"]["rejected"] == 1
    assert stats["a"]["threads"] == 0 and stats["a"]["batch"] == 8
    assert stats["end"]["manager"] == "loop" and stats["a"]["manager"] == "threads"
    assert stats["end"]["queue"] == 0 and stats["a"]["p90_ms"] > 0
    # enqueues from outside any stage are not edges
    assert rt.stage_graph() == [("a", "b", 100), ("b", "end", 100)]
    dot = rt.graph_dot()
    assert dot.startswith("digraph seda {")
    assert '"a" -> "b" [label="100"];' in dot and '"b" -> "end" [label="100"];' in dot


def test_a_stage_can_destroy_itself_from_its_handler(rt):
    gone = threading.Event()

    class Once(seda.EventHandler):
        def init(self, ctx):
            self.stage = ctx.stage

        def handle_event(self, ev):
            self.stage.destroy(timeout=1.0)

        def destroy(self):
            gone.set()

    st = rt.add_stage("once", Once())
    rt.start()
    st.sink.enqueue("bye")
    assert gone.wait(WAIT)
    with pytest.raises(seda.StageClosedError):
        st.sink.enqueue("again")


def test_a_runtime_that_never_started_releases_its_descriptors():
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        runtime = seda.Runtime()
        runtime.add_stage("r", Recorder())
        runtime.stop()
    assert len(os.listdir("/proc/self/fd")) == before


def test_stop_drops_what_it_cannot_drain_by_the_deadline(caplog):
    import time

    class Slow(seda.EventHandler):
        def handle_event(self, ev):
            time.sleep(0.01)

    runtime = seda.Runtime()
    runtime.add_stage("slow", Slow(), batch=1)
    runtime.add_stage("slow-loop", Slow(), blocking=False, batch=8)
    runtime.start()
    runtime.sink("slow").enqueue_many(range(1000))           # ten seconds of work
    runtime.sink("slow-loop").enqueue_many(range(1000))
    started = time.monotonic()
    runtime.stop(timeout=0.3)
    assert time.monotonic() - started < 2.0
    assert "'slow': queue not drained by the deadline; dropped" in caplog.text
    assert "'slow-loop': queue not drained by the deadline; dropped" in caplog.text
    assert runtime.stats()["slow"]["processed"] < 100


def test_no_event_is_handled_before_every_stage_has_run_init():
    handled = threading.Event()

    class First(seda.EventHandler):
        def handle_event(self, ev):
            handled.set()

    class Second(seda.EventHandler):
        def init(self, ctx):
            self.early = handled.wait(0.2)   # would the loop run First meanwhile?

        def handle_event(self, ev):
            pass

    rt = seda.Runtime()
    rt.add_stage("first", First(), blocking=False)
    second = rt.add_stage("second", Second(), blocking=False).handler
    rt.sink("first").enqueue("waiting before start, like a connection in a listen backlog")
    rt.start()
    try:
        assert handled.wait(WAIT) and second.early is False
    finally:
        rt.stop()


class _MakesACycle(seda.EventHandler):
    """Its init leaves a cycle behind, as an application's startup does."""

    def init(self, ctx):
        cycle: list = []
        cycle.append(cycle)
        self.left = weakref.ref(_Ref(cycle))

    def handle_event(self, ev):
        pass


class _Ref:
    def __init__(self, cycle):
        self.cycle = cycle
        cycle.append(self)


def test_a_service_started_frozen_has_its_startup_garbage_collected_and_the_rest_frozen():
    gc.collect()
    before = gc.get_freeze_count()
    gc.disable()                                  # only the start's collections may run
    try:
        rt = seda.Runtime()
        handler = _MakesACycle()
        rt.add_stage("cycle", handler)
        rt.start(freeze=True)
        try:
            assert handler.left() is None          # its garbage was collected, not frozen
            assert gc.get_freeze_count() > before  # what lives on is out of the collector's sight
        finally:
            rt.stop()
    finally:
        gc.unfreeze()
        gc.enable()
