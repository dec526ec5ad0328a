"""Capacity planning from profiler samples: the thesis's Little's-law example (6.2.3), the
shared event loop as one server, a profile recorded from a real run, and a fresh recording."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from seda.model.plan import LOOP, make_plan, measure, plan_file, threads_needed

from tests.helpers import profiled_pipeline

DATA = profiled_pipeline.DATA


def row(accepted: int, service_ms: float | None, sources: dict | None = None,
        threads: int = 1, manager: str = "threads", rejected: int = 0) -> dict:
    return {"queue": 0, "threads": threads, "processed": accepted, "rejected": rejected,
            "manager": manager, "accepted": accepted, "sources": sources or {},
            "service_ms": service_ms}


def two_samples(seconds: float, stages: dict[str, dict]) -> list[dict]:
    start = {name: row(0, None, {src: 0 for src in r["sources"]}, r["threads"], r["manager"])
             for name, r in stages.items()}
    return [{"t": 0.0, "stages": start}, {"t": seconds, "stages": stages}]


def gnutella() -> list[dict]:
    """10 s at 100 packets/s; 15 % are queries that the router serves in 20 ms each."""
    return two_samples(10.0, {"reader": row(1000, 0.1),
                              "router": row(150, 20.0, {"reader": 150})})


def test_thesis_6_2_3_three_threads_for_1000_packets_a_second():
    plan = make_plan(*measure(gnutella()), target=1000)
    router = next(s for s in plan.stages if s.name == "router")
    assert router.share == pytest.approx(0.15) and router.busy == pytest.approx(0.3)
    assert router.threads_for_target == 3                    # 1000 x 0.15 x 20 ms
    assert plan.bottleneck == "router"
    assert plan.max_entry_rate == pytest.approx(1 / (0.15 * 0.020))   # 333 packets/s


def test_the_target_can_be_the_rate_at_a_named_stage():
    plan = make_plan(*measure(gnutella()), target=150, entry="router")
    assert plan.entry_rate == pytest.approx(15.0)
    assert next(s for s in plan.stages if s.name == "router").threads_for_target == 3
    with pytest.raises(ValueError, match="no stage"):
        make_plan(*measure(gnutella()), entry="nowhere")


def test_little_forgives_rounding_but_not_real_excess():
    assert threads_needed(1000 * 0.15, 0.020) == 3           # 3.0000000000000004 in floats
    assert threads_needed(150.0, 0.0201) == 4
    assert threads_needed(0.001, 0.001) == 1


def test_stages_on_the_event_loop_share_one_thread():
    samples = two_samples(10.0, {
        "recv": row(1000, 3.0, manager="loop"),               # 0.3 of the loop
        "send": row(1000, 4.0, {"work": 1000}, manager="loop"),   # 0.4 of it
        "work": row(1000, 1.0, {"recv": 1000}, threads=2)})      # 0.1 busy of 2 threads
    plan = make_plan(*measure(samples), target=200)
    assert plan.loop_utilization == pytest.approx(0.7)
    assert plan.bottleneck == LOOP
    assert plan.max_entry_rate == pytest.approx(100 / 0.7)
    assert plan.loop_utilization_at_target == pytest.approx(1.4)
    by_name = {s.name: s for s in plan.stages}
    assert by_name["recv"].threads_for_target is None and by_name["work"].threads_for_target == 1


def test_profiles_without_flow_samples_or_traffic_are_explained():
    old = gnutella()
    for sample in old:
        for r in sample["stages"].values():
            del r["accepted"]
    with pytest.raises(ValueError, match="record it again"):
        measure(old)
    with pytest.raises(ValueError, match="two samples"):
        measure(gnutella()[:1])
    idle = two_samples(5.0, {"a": row(0, None)})
    with pytest.raises(ValueError, match="no events entered"):
        make_plan(*measure(idle))


def test_plan_of_the_recorded_run():
    """data/pipeline.jsonl: 10 s of profiled_pipeline at 100 events/s, recorded on a 2-core
    VM. The query stage (18 ms sleeps, one thread) limits the service to about 360/s; at
    1000/s it needs 3 threads, as the thesis's router did."""
    plan = plan_file(DATA, target=1000)
    by_name = {s.name: s for s in plan.stages}
    assert plan.entry_rate == pytest.approx(102.6, abs=0.1)
    assert by_name["query"].service_time == pytest.approx(0.0182, abs=1e-4)
    assert by_name["query"].share == pytest.approx(0.15, abs=0.01)
    assert by_name["route"].manager == "loop"
    assert plan.bottleneck == "query"
    assert plan.max_entry_rate == pytest.approx(360.1, abs=0.1)
    assert (by_name["query"].threads_for_target, by_name["parse"].threads_for_target) == (3, 2)
    assert plan.loop_utilization_at_target == pytest.approx(0.43, abs=0.01)


def run_plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seda.model", "plan", *args],
                          capture_output=True, text=True, timeout=60)


def test_the_plan_command():
    done = run_plan(str(DATA), "--target", "1000")
    assert done.returncode == 0, done.stderr
    assert "bottleneck: query" in done.stdout
    assert "query            3 (now 1)" in done.stdout
    as_json = json.loads(run_plan(str(DATA), "--json").stdout)
    assert as_json["bottleneck"] == "query" and as_json["target"] is None


def test_the_plan_command_explains_a_bad_file(tmp_path):
    done = run_plan(str(tmp_path / "missing.jsonl"))
    assert done.returncode == 1 and "cannot plan" in done.stderr


def test_a_fresh_recording_finds_the_same_bottleneck(tmp_path):
    """Record 1.5 s of the real pipeline again and plan from it: the profiler's flow fields
    are there and the measured service times are the sleeps'."""
    path = tmp_path / "profile.jsonl"
    sent = profiled_pipeline.record(path, rate=100, seconds=1.5, interval=0.1, seed=3)
    last = json.loads(path.read_text().splitlines()[-1])["stages"]
    assert set(last["query"]) >= {"accepted", "sources", "service_ms"}
    assert last["query"]["sources"]["parse"] == last["query"]["accepted"]
    plan = plan_file(path, target=1000)
    by_name = {s.name: s for s in plan.stages}
    assert plan.bottleneck == "query"
    assert plan.entry_rate == pytest.approx(sent / plan.seconds, rel=0.25)
    assert 0.018 <= by_name["query"].service_time < 0.030
    assert 0.0015 <= by_name["parse"].service_time < 0.005
    assert by_name["query"].share == pytest.approx(0.15, abs=0.05)
    query = by_name["query"]
    assert query.threads_for_target == threads_needed(1000 * query.share, query.service_time)
