"""The sampling profiler: a JSON line per interval with every stage's counters and the RSS."""

from __future__ import annotations

import json

import seda

from tests.helpers.recorder import Recorder


def test_sampler_writes_json_lines(tmp_path):
    path = tmp_path / "profile.jsonl"
    with seda.Runtime() as rt:
        rt.add_stage("a", Recorder(), threads=2)
        rt.start_profiler(path, interval=0.01)
        rt.sink("a").enqueue_many(range(10))
        rt.stage("a").handler.wait(10)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines, "the sampler writes one sample at once"
    sample = lines[-1]
    assert sample["rss"] > 1_000_000
    assert set(sample["stages"]["a"]) >= {"queue", "threads", "batch", "processed", "rejected"}
