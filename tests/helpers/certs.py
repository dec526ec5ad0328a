"""TLS contexts for tests, from the throwaway certificates of ``benchmarks.certs``."""

from __future__ import annotations

import ssl
from pathlib import Path

from benchmarks.certs import make

__all__ = ["contexts", "make"]


def contexts(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context, client context trusting the test CA)."""
    ca, cert, key = make(directory)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=str(ca))
    return server, client
