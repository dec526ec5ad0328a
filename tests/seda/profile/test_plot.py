"""``python -m seda.profile plot``: a PNG from a file the profiler wrote, or a line saying why
not."""

from __future__ import annotations

import subprocess
import sys

import seda

from tests.helpers.recorder import Recorder


def plot(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seda.profile", "plot", *args],
                          capture_output=True, text=True, timeout=120)


def test_the_plot_command_draws_what_the_profiler_wrote(tmp_path):
    path = tmp_path / "profile.jsonl"
    with seda.Runtime() as rt:
        rt.add_stage("a", Recorder())
        rt.start_profiler(path, interval=60)           # the first sample is written at once
    out = tmp_path / "profile.png"
    done = plot(str(path), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_command_explains_a_bad_file(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = plot(str(empty))
    assert done.returncode == 1 and "no samples" in done.stderr
