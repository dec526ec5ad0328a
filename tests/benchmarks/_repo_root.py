"""Imported first by the tests here: puts the repository root on sys.path so `benchmarks.loadgen`
imports however pytest is started. Not a conftest.py: a second module named conftest would shadow
tests/seda's, which its tests import by that name."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
