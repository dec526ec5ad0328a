"""The example that `make run` starts must run, show its stats, shed load and stop cleanly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parent.parent / "examples" / "pipeline.py"


def test_pipeline_example_runs_and_sheds_overload():
    done = subprocess.run([sys.executable, str(EXAMPLE), "--seconds", "1.5", "--rate", "2000"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for stage in ("source", "split", "lookup", "tally"):
        assert f"\n{stage} " in out
    assert "most common words:" in out
    shed = int(out.rsplit("sentences shed:", 1)[1].split()[0])
    assert shed > 0, "at 2000 sentences/s the lookup stage must reject some"


def test_pipeline_example_rejects_a_bad_rate():
    done = subprocess.run([sys.executable, str(EXAMPLE), "--rate", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--rate must be at least 1" in done.stderr
