"""The chapter 4 figures draw (with few simulated requests, to stay quick)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

from seda.model.figures import FIGURES, draw

PNG = b"\x89PNG\r\n\x1a\n"


def test_every_figure_draws(tmp_path):
    written = draw(tmp_path, jobs=300)
    assert [p.name for p in written] == [f"{name}.png" for name in FIGURES]
    assert all(p.read_bytes()[:8] == PNG for p in written)


def test_the_figures_command(tmp_path):
    done = subprocess.run([sys.executable, "-m", "seda.model", "figures", "-o", str(tmp_path),
                           "fig16"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "fig16.png").read_bytes()[:8] == PNG
    bad = subprocess.run([sys.executable, "-m", "seda.model", "figures", "fig99"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "fig99" in bad.stderr
