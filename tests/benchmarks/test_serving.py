"""Servers under test: one that cannot start says why, in the error."""

from __future__ import annotations

import sys

import pytest

from benchmarks.serving import free_port, server


def test_a_server_that_exits_is_reported_with_what_it_wrote():
    failing = [sys.executable, "-c",
               "import sys; print('cannot bind: in use', file=sys.stderr); sys.exit(3)"]
    with pytest.raises(RuntimeError, match=r"did not start \(exited\): cannot bind: in use"), \
            server(failing, free_port()):
        pass
