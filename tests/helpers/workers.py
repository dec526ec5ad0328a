"""Handlers for the process-pool tests, in a module that worker processes can import."""

from __future__ import annotations

import os

import seda


class Square(seda.EventHandler):
    """Sends (n, n*n, pid) downstream; a rejected result is reported to 'overflow' instead."""

    def init(self, ctx):
        self.out = ctx.runtime.sink(ctx.params.get("to", "collect"))
        self.overflow = ctx.runtime.sink("overflow") if ctx.params.get("overflow") else None

    def handle_event(self, n):
        if n == "crash":
            os._exit(3)
        if n == "raise":
            raise ValueError("asked to raise")
        try:
            self.out.enqueue((n, n * n, os.getpid()))
        except seda.RejectedError:
            self.overflow.enqueue(n)


class BadInit(seda.EventHandler):
    def init(self, ctx):
        ctx.runtime.sink("no-such-stage")
