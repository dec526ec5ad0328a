"""Servers under test: one that cannot start says why, in the error."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchmarks.serving import cpu_seconds, free_port, server

from tests.helpers import WAIT


def test_a_server_that_exits_is_reported_with_what_it_wrote():
    failing = [sys.executable, "-c",
               "import sys; print('cannot bind: in use', file=sys.stderr); sys.exit(3)"]
    with pytest.raises(RuntimeError, match=r"did not start \(exited\): cannot bind: in use"), \
            server(failing, free_port()):
        pass


def test_cpu_seconds_counts_what_a_process_has_computed():
    before = cpu_seconds(os.getpid())
    deadline = time.process_time() + 0.1
    while time.process_time() < deadline:          # a tenth of a second of work
        pass
    assert 0.05 <= cpu_seconds(os.getpid()) - before <= 5.0


def test_cpu_seconds_counts_the_children_too():
    busy = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                             "end = time.process_time() + 0.3\n"
                             "while time.process_time() < end: pass\n"
                             "print('done', flush=True); sys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout.readline() == "done\n"    # its work is done, and it is still alive
        assert cpu_seconds(os.getpid()) - time.process_time() >= 0.2   # (ours alone)
    finally:
        busy.stdin.close()
        busy.wait(WAIT)
