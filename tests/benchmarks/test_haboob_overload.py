"""The overload experiment's servers: Haboob three ways, and gunicorn from the bench extra."""

from __future__ import annotations

import sys

import pytest

from benchmarks import haboob_overload


def test_gunicorn_is_the_one_installed_beside_this_python():
    pytest.importorskip("gunicorn", reason="the bench extra is not installed")
    command = haboob_overload.servers(8000, 100)["gunicorn (1 sync worker)"]
    assert command[:3] == [sys.executable, "-m", "gunicorn"] and haboob_overload.APP in command


def test_the_asgi_spike_puts_haboob_beside_uvicorn():
    pytest.importorskip("uvicorn", reason="the bench extra is not installed")
    commands = haboob_overload.asgi_servers(8000, 100)
    assert set(commands) == {"haboob --target-p90 100", "haboob (no admission control)",
                             "uvicorn (uvloop, httptools)"}
    assert all(haboob_overload.ASGI_APP in c for c in commands.values())
