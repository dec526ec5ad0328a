"""Haboob: the SEDA web server (thesis 6.1), on the seda runtime's public API.

What this package exports is Haboob's API for other services built on it (Arashi uses it), and
they import nothing else of Haboob (tests/seda/test_package_layers.py checks): the request
classes of ``--class-header`` for admission control (``CLASSES``, ``classifier``), and the
*Replicate* pattern of ``--workers`` (``Supervisor``, ``reserve``, ``hostport``). The modules
behind them are Haboob's own and may change."""

from .cli import hostport
from .server import CLASSES, classifier
from .supervisor import Supervisor, reserve

__all__ = ["CLASSES", "Supervisor", "classifier", "hostport", "reserve"]
