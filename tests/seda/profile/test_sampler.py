"""The sampling profiler and its plot command."""

from __future__ import annotations

import json
import subprocess
import sys

import seda

from tests.helpers.recorder import Recorder


def test_sampler_writes_json_lines_and_the_plot_command_draws_them(tmp_path):
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

    out = tmp_path / "profile.png"
    done = subprocess.run([sys.executable, "-m", "seda.profile", "plot", str(path), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_command_explains_a_bad_file(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = subprocess.run([sys.executable, "-m", "seda.profile", "plot", str(empty)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "no samples" in done.stderr
