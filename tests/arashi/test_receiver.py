"""SMTP end to end: Python's smtplib, unchanged, delivers to the running stages over loopback,
and what arrives in the store is what was sent."""

from __future__ import annotations

import select
import smtplib
import socket
import struct
from email import policy
from email.message import EmailMessage

import pytest

from arashi import mime
from arashi.events import RECEIVER
from arashi.smtp import Limits
from arashi.store import INBOX

from tests.helpers import WAIT
from tests.helpers.arashi_env import add_users, running, started
from tests.helpers.net import until


@pytest.fixture
def data(tmp_path):
    add_users(tmp_path / "data", alice="pw", bob="pw")
    return tmp_path / "data"


def inbox(service, user: str) -> list:
    store = service.store
    uid = store.user_id(user)
    folder = store.folder(uid, INBOX)
    return [store.message(uid, m.id) for m in store.messages(uid, folder, limit=1000)]


def client(service) -> smtplib.SMTP:
    return smtplib.SMTP(*service.smtp, timeout=WAIT)


def read_line(sock: socket.socket) -> bytes:
    """One reply line, byte by byte (nothing after it is taken)."""
    sock.settimeout(WAIT)
    line = b""
    while not line.endswith(b"\n"):
        byte = sock.recv(1)
        assert byte, line
        line += byte
    return line


def read_to_end(sock: socket.socket) -> bytes:
    """Everything the server says until it closes (within WAIT: a hang fails the test)."""
    sock.settimeout(WAIT)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_plain_8bit_multipart_and_dot_stuffed_mail_arrive_whole(data):
    with running(data) as service, client(service) as smtp:
        smtp.sendmail("x@else.test", ["alice@example.org"],
                      b"Subject: plain\r\n\r\n.leading dot\r\n..two\r\n.\r\nend\r\n")
        smtp.sendmail("x@else.test", ["alice@example.org"],
                      "Subject: 8-bit\r\n\r\ncafé naïve\r\n".encode(),
                      mail_options=["BODY=8BITMIME"])
        m = EmailMessage()
        m["From"], m["To"], m["Subject"] = "Bob <bob@else.test>", "alice@example.org", "parts"
        m.set_content("text part")
        m.add_attachment(b"\x00\x01" * 500, maintype="application", subtype="octet-stream",
                         filename="a.bin")
        smtp.send_message(m)
        got = {msg.subject: msg for msg in inbox(service, "alice")}
    assert got["plain"].raw == b"Subject: plain\r\n\r\n.leading dot\r\n..two\r\n.\r\nend\r\n"
    assert got["8-bit"].raw.endswith("café naïve\r\n".encode())
    assert got["parts"].sender == "Bob <bob@else.test>" and b"a.bin" in got["parts"].raw


def test_a_20_mb_attachment_and_malformed_mail(data):
    attached = EmailMessage()
    attached["Subject"] = "big"
    attached.set_content("see the attachment")
    payload = bytes(range(256)) * (20 * 2**20 // 256)                      # 20 MB
    attached.add_attachment(payload, maintype="application", subtype="octet-stream",
                            filename="big.bin")
    big = attached.as_bytes(policy=policy.SMTP)                          # 27 MB in base64
    broken = b"Subject: \xff\xfe broken\r\nDate: never\r\nContent-Type: multipart/mixed\r\n\r\n--"
    tripping = b"From: Mallory <m@[evil.test>\r\nSubject: trips the parser\r\n\r\nx\r\n"
    with running(data) as service, client(service) as smtp:
        smtp.sendmail("x@else.test", ["bob@localhost"], big)
        smtp.sendmail("x@else.test", ["bob@localhost"], broken)
        smtp.sendmail("x@else.test", ["bob@localhost"], tripping)
        trips, bad, whole = sorted(inbox(service, "bob"), key=lambda m: m.size)
    assert whole.raw == big and whole.subject == "big" and whole.size == len(big)
    (listed,) = mime.show(whole.raw).attachments
    assert (listed.filename, listed.size) == ("big.bin", len(payload))
    assert bad.raw == broken + b"\r\n" and bad.date is None        # smtplib ends the last line
    assert trips.raw == tripping and trips.sender == "Mallory <m@[evil.test>"


def test_one_message_to_two_users_and_a_refused_recipient(data):
    with running(data) as service, client(service) as smtp:
        refused = smtp.sendmail("x@else.test", ["alice@example.org", "nobody@example.org",
                                                "bob@elsewhere.test", "BOB@localhost"],
                                b"Subject: both\r\n\r\nhi\r\n")
        assert {k: v[0] for k, v in refused.items()} == {"nobody@example.org": 550,
                                                         "bob@elsewhere.test": 550}
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            smtp.sendmail("x@else.test", ["nobody@example.org"], b"x")
        assert [m.subject for m in inbox(service, "alice")] == ["both"]
        assert [m.subject for m in inbox(service, "bob")] == ["both"]


def test_a_message_over_the_size_limit_is_refused(data):
    from arashi.smtp import Limits
    with running(data, limits=Limits(max_size=10_000)) as service, client(service) as smtp:
        smtp.ehlo()
        assert smtp.esmtp_features["size"] == "10000"
        with pytest.raises(smtplib.SMTPSenderRefused) as caught:   # smtplib sends SIZE=
            smtp.sendmail("x@else.test", ["alice@example.org"], b"x" * 20_000)
        assert caught.value.smtp_code == 552
        smtp.rset()
        assert smtp.mail("x@else.test")[0] == 250      # without SIZE=: refused after the data
        assert smtp.rcpt("alice@example.org")[0] == 250
        assert smtp.data((b"x" * 70 + b"\r\n") * 300)[0] == 552
        assert inbox(service, "alice") == []


def test_pipelined_commands_in_one_write(data):
    with running(data) as service, socket.create_connection(service.smtp, WAIT) as sock:
        sock.sendall(b"EHLO c\r\nMAIL FROM:<x@else.test>\r\nRCPT TO:<alice@example.org>\r\n"
                     b"RCPT TO:<ghost@example.org>\r\nDATA\r\nSubject: piped\r\n\r\nhi\r\n.\r\n"
                     b"QUIT\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        codes = [line[:3] for line in received.split(b"\r\n") if line[3:4] == b" "]
        assert codes == [b"220", b"250", b"250", b"250", b"550", b"354", b"250", b"221"]
        assert [m.subject for m in inbox(service, "alice")] == ["piped"]


def test_a_command_sent_a_byte_at_a_time_has_the_timeout_in_all(data):
    """The clock runs from a command's first byte, not from each byte: a client trickling
    one (a byte every 0.1 s) is closed with 421 while it is still sending, once the timeout
    (0.5 s here) has passed."""
    with running(data, timeout=0.5, data_timeout=0.5) as service, \
            socket.create_connection(service.smtp, WAIT) as sock:
        sock.settimeout(WAIT)
        assert sock.recv(65536).startswith(b"220 ")
        trickle = b"NOOP" + b" and on" * 30        # 21 s at this pace
        for byte in trickle:
            sock.sendall(bytes([byte]))
            # the client's pace: a byte each 0.1 s, unless the server speaks first
            if select.select([sock], [], [], 0.1)[0]:
                break
        else:
            pytest.fail("the server waited for the whole trickled command")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        assert received.startswith(b"421 4.4.2")


def test_past_the_bytes_held_over_all_connections_the_next_message_gets_421(data):
    """Messages being read count against one bound over all connections (Limits.max_held):
    the client whose message passes it gets 421 and is closed, to send it again later, and
    the one before it is still taken whole."""
    limits = Limits(max_size=200_000, max_held=150_000)
    with running(data, limits=limits) as service, \
            smtplib.SMTP(*service.smtp, timeout=WAIT) as first:
        first.ehlo()
        first.mail("x@else.test")
        first.rcpt("alice@example.org")
        assert first.docmd("DATA")[0] == 354
        first.send(b"Subject: first\r\n\r\n" + (b"y" * 98 + b"\r\n") * 1000)   # 100 KB
        with smtplib.SMTP(*service.smtp, timeout=WAIT) as second:
            second.ehlo()                      # (its round trips: the first's bytes are read)
            second.mail("x@else.test")
            second.rcpt("alice@example.org")
            assert second.docmd("DATA")[0] == 354
            second.send((b"z" * 98 + b"\r\n") * 1000)
            code, text = second.getreply()
            assert code == 421 and b"too much mail" in text
        first.send(b".\r\n")
        assert first.getreply()[0] == 250
        assert [m.subject for m in inbox(service, "alice")] == ["first"]


def test_a_silent_client_gets_421_and_is_closed(data):
    with running(data, timeout=0.2, data_timeout=0.2) as service, \
            socket.create_connection(service.smtp, WAIT) as sock:
        sock.settimeout(WAIT)
        received = b""
        while chunk := sock.recv(65536):       # the greeting, then 421, then the close
            received += chunk
        assert received.startswith(b"220 ") and b"\r\n421 4.4.2" in received


def test_past_the_connection_bound_one_more_is_told_421_and_closed(data):
    """A connection past ``max_connections`` gets 421 4.7.0 with our name and is closed at
    once, whatever it sends (never a hang); the connections under the bound go on as if
    nothing happened."""
    full = b"421 4.7.0 mx.example.org too many connections, try again later\r\n"
    with running(data, max_connections=2) as service, client(service) as first, \
            client(service) as second:               # (each has had its 220: both counted)
        with pytest.raises(smtplib.SMTPConnectError) as caught:
            client(service)
        assert caught.value.smtp_code == 421
        assert caught.value.smtp_error == full[4:-2]
        with socket.create_connection(service.smtp, WAIT) as sock:
            sock.sendall(b"EHLO pipelined.test\r\nMAIL FROM:<x@else.test>\r\n")
            assert read_to_end(sock) == full
        for smtp, subject in ((first, b"first"), (second, b"second")):
            smtp.sendmail("x@else.test", ["alice@example.org"], b"Subject: " + subject +
                          b"\r\n\r\nunder the bound\r\n")
        assert sorted(m.subject for m in inbox(service, "alice")) == ["first", "second"]


def test_every_way_a_connection_ends_gives_its_place_back(data):
    """With room for one connection: after QUIT, a client that leaves without it, one that
    resets the connection, one closed for too many errors and one that leaves while its
    message is being stored, the next is taken; refused ones are never counted."""
    with started(data, max_connections=1) as (rt, service):
        def open_now() -> int:
            return rt.stats()[RECEIVER]["handler"]["open"]

        def place_given_back() -> None:
            until(open_now, lambda n: n == 0)

        with client(service) as smtp:                                  # QUIT
            smtp.sendmail("x@else.test", ["alice@example.org"], b"Subject: one\r\n\r\nx\r\n")
        place_given_back()
        smtp = client(service)                                         # gone without QUIT
        smtp.ehlo()
        smtp.close()
        place_given_back()
        with socket.create_connection(service.smtp, WAIT) as sock:    # a reset
            assert read_line(sock).startswith(b"220 ")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        place_given_back()
        with socket.create_connection(service.smtp, WAIT) as sock:    # too many errors
            sock.sendall(b"BOGUS\r\n" * 20)
            assert b"\r\n421 4.7.0 too many errors" in read_to_end(sock)
        place_given_back()
        with socket.create_connection(service.smtp, WAIT) as sock:    # gone before its 250
            sock.sendall(b"HELO c\r\nMAIL FROM:<x@else.test>\r\nRCPT TO:<alice@example.org>\r\n"
                         b"DATA\r\n")
            while not read_line(sock).startswith(b"354 "):
                pass
            sock.sendall(b"Subject: two\r\n\r\nx\r\n.\r\n")
        place_given_back()
        with client(service) as smtp:                                  # refused: not counted
            for _ in range(3):
                with pytest.raises(smtplib.SMTPConnectError):
                    client(service)
            assert open_now() == 1
            assert smtp.noop()[0] == 250
        place_given_back()
        with client(service), pytest.raises(smtplib.SMTPConnectError):
            client(service)                        # still room for one, and only one
        stats = rt.stats()[RECEIVER]["handler"]
        assert stats["refused"] == 4 and stats["accepted"] == 7


def test_a_connection_closed_for_its_timeout_gives_its_place_back(data):
    """(A second connection is tried within the first's second of silence: refused.)"""
    with started(data, max_connections=1, timeout=1.0, data_timeout=1.0) as (rt, service):
        with socket.create_connection(service.smtp, WAIT) as sock:
            assert read_line(sock).startswith(b"220 ")
            with pytest.raises(smtplib.SMTPConnectError):
                client(service)
            assert read_line(sock).startswith(b"421 4.4.2")       # silent: the timeout
            assert read_to_end(sock) == b""
        until(lambda: rt.stats()[RECEIVER]["handler"]["open"], lambda n: n == 0)
        with client(service) as smtp:              # its 220: taken
            assert smtp.noop()[0] == 250


def test_quoted_local_parts_through_smtplib(data):
    """smtplib sends a quoted local part as written: "john doe" may send, "alice" is alice
    (RFC 5321 4.1.2: the quotes do not make another mailbox), "no body" is nobody (550)."""
    with running(data) as service, client(service) as smtp:
        refused = smtp.sendmail('"john doe"@else.test', ['"alice"@example.org',
                                                         '"no body"@example.org'],
                                b"Subject: quoted\r\n\r\nhi\r\n")
        assert {k: v[0] for k, v in refused.items()} == {'"no body"@example.org': 550}
        assert [m.subject for m in inbox(service, "alice")] == ["quoted"]


def test_smtputf8_mail_as_postfix_relays_it(data):
    """Postfix marks a message with 8-bit headers SMTPUTF8 and bounces it (5.6.7) to a next
    hop that does not offer the extension: smtplib sends it the same way, and it arrives."""
    raw = "Subject: Grüße aus Köln\r\nFrom: jörg@bücher.test\r\n\r\nHallo\r\n".encode()
    with running(data) as service, client(service) as smtp:
        smtp.ehlo()
        assert smtp.has_extn("smtputf8")
        smtp.sendmail("jörg@bücher.test", ["alice@example.org"], raw,
                      mail_options=["BODY=8BITMIME", "SMTPUTF8"])
        (got,) = inbox(service, "alice")
    assert got.raw == raw and got.subject == "Grüße aus Köln"
