"""Fixtures of the runtime tests: a runtime stopped after the test, a recording handler, and a
check that no thread or worker process outlives its test."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

import seda

from tests.helpers.recorder import Recorder


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(autouse=True)
def no_leaks():
    """Every test must leave no runtime thread and no worker process behind."""
    yield
    left = [t.name for t in threading.enumerate() if t.name.startswith("seda:")]
    assert not left, f"threads left running: {left}"
    assert not multiprocessing.active_children(), "worker processes left running"


@pytest.fixture
def rt():
    runtime = seda.Runtime()
    yield runtime
    runtime.stop()
