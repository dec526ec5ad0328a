"""Sink: enqueue forms, admission predicates, transactional enqueue."""

from __future__ import annotations

import threading

import pytest

import seda
from seda.control import QueueDelay, TokenBucket

from tests.helpers.recorder import Recorder


def test_error_hierarchy():
    assert issubclass(seda.RejectedError, seda.SinkError)
    assert issubclass(seda.StageClosedError, seda.SinkError)


def test_enqueue_delivers_in_order(rt, recorder):
    sink = rt.add_stage("r", recorder).sink
    rt.start()
    for i in range(100):
        sink.enqueue(i)
    assert recorder.wait(100) == list(range(100))


def test_callable_predicate_rejects_and_counts(rt, recorder):
    sink = rt.add_stage("r", recorder, predicate=lambda ev: ev % 2 == 0).sink
    rt.start()
    sink.enqueue(0)
    with pytest.raises(seda.RejectedError, match="'r'"):
        sink.enqueue(1)
    assert sink.enqueue_lossy(3) is False
    assert sink.enqueue_lossy(2) is True
    assert recorder.wait(2) == [0, 2]
    assert rt.stats()["r"]["rejected"] == 2


def test_predicate_object_with_accept_is_attached_to_its_stage(rt, recorder):
    class Limit:
        stage = None

        def attach(self, stage):
            self.stage = stage

        def accept(self, ev):
            return len(self.stage.sink) + self.stage.sink.reserved < 3

    gate = Limit()
    st = rt.add_stage("r", recorder, predicate=gate)     # not started: events stay queued
    assert gate.stage is st and st.sink.predicate is gate
    st.sink.enqueue_many([1, 2])
    st.sink.enqueue_prepare([3])                          # the reservation counts against the limit
    with pytest.raises(seda.RejectedError):
        st.sink.enqueue(4)
    st.sink.predicate = None
    st.sink.enqueue(4)
    assert len(st.sink) == 3


def test_bad_predicate_is_a_type_error(rt, recorder):
    with pytest.raises(TypeError, match="predicate"):
        rt.add_stage("r", recorder, predicate=42)


def test_enqueue_many_is_all_or_nothing(rt, recorder):
    sink = rt.add_stage("r", recorder, predicate=lambda ev: ev != "bad").sink
    with pytest.raises(seda.RejectedError):
        sink.enqueue_many(["a", "b", "bad", "c"])
    assert len(sink) == 0
    sink.enqueue_many(iter(["a", "b"]))
    assert len(sink) == 2
    rt.start()
    assert recorder.wait(2) == ["a", "b"]


def test_transaction_commit_and_abort_across_two_stages(rt):
    first, second = Recorder(), Recorder()
    q1 = rt.add_stage("one", first).sink
    q2 = rt.add_stage("two", second, predicate=lambda ev: ev != "no").sink
    rt.start()

    # All or nothing across both queues (thesis Fig. 27): the second refuses, the first aborts.
    token1 = q1.enqueue_prepare(["x", "no"])
    assert q1.reserved == 2
    with pytest.raises(seda.RejectedError):
        q2.enqueue_prepare(["x", "no"])
    q1.enqueue_abort(token1)
    assert q1.reserved == 0

    token1 = q1.enqueue_prepare(["a", "b"])
    token2 = q2.enqueue_prepare(["a", "b"])
    q1.enqueue("marker")                        # handled while the prepared batch is pending
    assert first.wait(1) == ["marker"]
    q1.enqueue_commit(token1)
    q2.enqueue_commit(token2)
    assert first.wait(3) == ["marker", "a", "b"]
    assert second.wait(2) == ["a", "b"]
    assert q1.reserved == q2.reserved == 0


def test_transaction_tokens_are_checked(rt, recorder):
    a = rt.add_stage("a", recorder).sink
    b = rt.add_stage("b", Recorder()).sink
    token = a.enqueue_prepare([1])
    with pytest.raises(ValueError, match="not prepared by sink 'b'"):
        b.enqueue_commit(token)
    a.enqueue_commit(token)
    with pytest.raises(ValueError, match="already settled"):
        a.enqueue_abort(token)


def test_commit_to_a_destroyed_stage_raises(rt, recorder):
    st = rt.add_stage("r", recorder)
    rt.start()
    token = st.sink.enqueue_prepare([1])
    st.destroy()
    with pytest.raises(seda.StageClosedError):
        st.sink.enqueue_commit(token)


def test_many_producers_exactly_once(rt, recorder):
    sink = rt.add_stage("r", recorder, threads=3, batch=16).sink
    rt.start()
    producers, per = 4, 5000

    def produce(p: int) -> None:
        for i in range(per):
            sink.enqueue((p, i))

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = recorder.wait(producers * per)
    assert sorted(got) == [(p, i) for p in range(producers) for i in range(per)]
    assert all(len(b) <= 16 for b in recorder.batches)


def test_predicates_can_be_swapped_at_run_time(rt):
    end = Recorder()
    stage = rt.add_stage("end", end)
    rt.start()
    qd = QueueDelay()
    stage.sink.predicate = qd
    assert qd.observe in stage.observers and qd in rt.control
    stage.sink.enqueue("timed")
    assert end.wait(1) == ["timed"]             # observed stages still deliver the event
    stage.sink.predicate = TokenBucket(rate=0, depth=1)
    assert qd.observe not in stage.observers and qd.stage is None and qd not in rt.control
    assert stage.sink.enqueue_lossy("one") and not stage.sink.enqueue_lossy("two")
    assert end.wait(2) == ["timed", "one"]
