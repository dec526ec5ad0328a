"""Haboob's API for services built on it, pinned: what ``haboob`` exports. A change here is a
change to that API (docs/architecture.md, "Haboob"): make it on purpose."""

from __future__ import annotations

import haboob

EXPORTS = ["CLASSES", "Supervisor", "classifier", "hostport", "reserve"]


def test_haboob_exports_exactly_its_pinned_names():
    assert sorted(haboob.__all__) == EXPORTS
    assert all(getattr(haboob, name) is not None for name in EXPORTS)
