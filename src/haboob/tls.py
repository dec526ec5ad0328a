"""The server's TLS context from certificate and key files, with errors that name the file at
fault: OpenSSL itself says only 'PEM lib'."""

from __future__ import annotations

import ssl


def tls_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    """A server context, or ValueError naming the file that is wrong."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(certfile, keyfile)
    except OSError as exc:
        if not isinstance(exc, ssl.SSLError):
            raise ValueError(f"cannot read {exc.filename or certfile}: {exc.strerror}") from None
        with open(certfile, "rb") as f:
            is_certificate = b"-----BEGIN CERTIFICATE-----" in f.read()
        if not is_certificate:
            raise ValueError(f"{certfile} is not a PEM certificate chain") from None
        if "MISMATCH" in (exc.reason or ""):
            raise ValueError(f"the key {keyfile} is not the key of {certfile}") from None
        raise ValueError(f"{keyfile} is not a PEM private key for {certfile}") from None
    return context
