"""WSGI applications the benchmarks serve (importable by haboob, gunicorn and the rest)."""

from __future__ import annotations

import time

BURN_S = 0.005


def burn(environ, start_response):
    """Spends 5 ms of CPU per request: an application whose capacity is one core's worth."""
    end = time.thread_time() + BURN_S
    while time.thread_time() < end:
        pass
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]


def hello(environ, start_response):
    """The WSGI hello world: what a server costs per request, with no application work."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "13")])
    return [b"Hello, world!"]
