"""TLSSession on its own: a server session and a client made of the ssl module's own SSLObject,
trading ciphertext in memory, so that the records can be cut anywhere."""

from __future__ import annotations

import contextlib
import ssl

import pytest

from seda.io import TLSSession

from tests.helpers import certs


class Client:
    """The ssl module's client over memory BIOs."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = context.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")

    def step(self, ciphertext: bytes) -> bytes:
        """Take the server's records; return what the client has to send."""
        self.incoming.write(ciphertext)
        with contextlib.suppress(ssl.SSLWantReadError):   # (until the server's next records)
            self.obj.do_handshake()
        return self.outgoing.read()

    def records(self, messages: list[bytes]) -> bytes:
        """The ciphertext of ``messages``, each in its own record (records, past 16 KB)."""
        for message in messages:
            if message:
                self.obj.write(message)
        return self.outgoing.read()

    def close_notify(self) -> bytes:
        with contextlib.suppress(ssl.SSLWantReadError):   # it waits for the server's alert
            self.obj.unwrap()                              # (its own is out)
        return self.outgoing.read()


@pytest.fixture
def pair(tmp_path) -> tuple[Client, TLSSession]:
    """A client and a server session, handshaken."""
    server_ctx, client_ctx = certs.contexts(tmp_path)
    client, server = Client(client_ctx), TLSSession(server_ctx, server_side=True)
    wire = client.step(b"")
    for _ in range(10):                        # records go back and forth until both are done
        server.receive(wire)
        wire = client.step(server.send(b""))
        if server.handshaken and not wire:
            break
    assert server.handshaken
    return client, server


@pytest.mark.parametrize("piece", [1, 7, 100, 1000, 10**9], ids=lambda n: f"{n}-byte pieces")
def test_every_plaintext_byte_arrives_however_the_records_are_cut(pair, piece):
    client, server = pair
    messages = [b"GET / HTTP/1.1\r\n\r\n", b"x" * 40_000, b"last"]
    wire = client.records(messages)
    got = b"".join(server.receive(wire[i:i + piece]) for i in range(0, len(wire), piece))
    assert got == b"".join(messages)


def test_a_record_cut_short_gives_nothing_of_it_until_the_rest_comes(pair):
    client, server = pair
    wire = client.records([b"whole", b"cut"])
    assert server.receive(wire[:-3]) == b"whole"     # the second record lacks its last bytes
    assert server.receive(wire[-3:]) == b"cut"


def test_what_the_server_sends_the_client_reads(pair):
    client, server = pair
    client.incoming.write(server.send(memoryview(b"answer " * 5000)))
    got = b""
    while len(got) < 35_000:
        got += client.obj.read(65536)
    assert got == b"answer " * 5000


def test_after_the_peers_close_notify_the_answer_still_goes(pair):
    client, server = pair
    assert server.receive(client.records([b"last request"]) + client.close_notify()) == \
        b"last request"
    client.incoming.write(server.send(b"its answer"))
    assert client.obj.read(100) == b"its answer"
