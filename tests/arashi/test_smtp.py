"""The SMTP state machine case by case: bytes in, events out, no sockets."""

from __future__ import annotations

import pytest

from arashi.smtp import Close, Limits, Mail, Recipient, Reply, SMTPServer


def machine(**limits: int) -> SMTPServer:
    return SMTPServer("mx.example.org", ["example.org", "localhost"], Limits(**limits))


def codes(events: list) -> list:
    return [e.code if type(e) is Reply else type(e).__name__ for e in events]


def ready(**limits: int) -> SMTPServer:
    m = machine(**limits)
    assert codes(m.start()) == [220]
    assert codes(m.receive(b"EHLO client.test\r\n")) == [250]
    return m


def in_transaction(m: SMTPServer, rcpt: str = "alice@example.org") -> None:
    assert codes(m.receive(b"MAIL FROM:<bob@else.test>\r\n")) == [250]
    (ask,) = m.receive(f"RCPT TO:<{rcpt}>\r\n".encode())
    assert type(ask) is Recipient and ask.local == rcpt.split("@")[0]
    assert codes(m.recipient(1)) == [250]


def test_ehlo_advertises_size_8bitmime_and_pipelining():
    m = machine()
    m.start()
    (reply,) = m.receive(b"EHLO client.test\r\n")
    assert reply.data.startswith(b"250-mx.example.org greets client.test\r\n")
    assert b"250-SIZE 33554432\r\n" in reply.data and b"8BITMIME" in reply.data
    assert b"PIPELINING" in reply.data and reply.data.endswith(b"\r\n")


def test_helo_works_and_commands_need_a_greeting_first():
    m = machine()
    assert codes(m.receive(b"MAIL FROM:<a@b.c>\r\n")) == [503]
    assert codes(m.receive(b"HELO client\r\n")) == [250]
    assert codes(m.receive(b"EHLO\r\n")) == [501]


def test_a_whole_transaction_asks_for_the_recipient_then_the_message():
    m = ready()
    in_transaction(m)
    assert codes(m.receive(b"DATA\r\n")) == [354]
    (mail,) = m.receive(b"Subject: x\r\n\r\nhello\r\n.\r\n")
    assert type(mail) is Mail and mail.sender == "bob@else.test" and mail.recipients == [1]
    assert mail.data == b"Subject: x\r\n\r\nhello\r\n"
    assert m.receive(b"NOOP\r\n") == []              # waits for the answer: kept, not read
    assert codes(m.stored()) == [250, 250]           # the 250 for DATA, then NOOP's


def test_dot_stuffing_is_undone_and_the_end_may_come_in_pieces():
    m = ready()
    in_transaction(m)
    m.receive(b"DATA\r\n")
    events = []
    for piece in (b"..first\r\nmid", b"dle\r\n...two\r\n.", b"\r", b"\n"):
        events += m.receive(piece)
    (mail,) = events
    assert mail.data == b".first\r\nmiddle\r\n..two\r\n"


def test_an_empty_message_and_the_null_sender():
    m = ready()
    assert codes(m.receive(b"MAIL FROM:<>\r\n")) == [250]
    m.receive(b"RCPT TO:<alice@example.org>\r\n")
    m.recipient(1)
    m.receive(b"DATA\r\n")
    (mail,) = m.receive(b".\r\n")
    assert mail.data == b"" and mail.sender == ""


def test_recipients_outside_our_domains_are_refused_and_unknown_users_too():
    m = ready()
    m.receive(b"MAIL FROM:<bob@else.test>\r\n")
    (reply,) = m.receive(b"RCPT TO:<alice@elsewhere.test>\r\n")
    assert reply.code == 550 and b"relaying denied" in reply.data
    (ask,) = m.receive(b"RCPT TO:<Nobody@EXAMPLE.org>\r\n")
    assert ask.domain == "example.org"
    assert codes(m.recipient(None)) == [550]
    assert codes(m.receive(b"DATA\r\n")) == [554]      # no valid recipient


def test_too_many_recipients_is_452():
    m = ready(max_recipients=2)
    in_transaction(m)
    m.receive(b"RCPT TO:<carol@example.org>\r\n")
    m.recipient(2)
    assert codes(m.receive(b"RCPT TO:<dave@example.org>\r\n")) == [452]


def test_size_is_checked_at_mail_from_and_in_data():
    m = ready(max_size=100)
    assert codes(m.receive(b"MAIL FROM:<a@b.c> SIZE=101\r\n")) == [552]
    assert codes(m.receive(b"MAIL FROM:<a@b.c> SIZE=100 BODY=8BITMIME\r\n")) == [250]
    m.receive(b"RCPT TO:<alice@example.org>\r\n")
    m.recipient(1)
    m.receive(b"DATA\r\n")
    events = []
    for _ in range(100):                               # 6 KB: far past the limit, all read
        events += m.receive(b"x" * 58 + b"\r\n")
    assert events == []
    assert codes(m.receive(b".\r\nNOOP\r\n")) == [552, 250]
    assert m.sender is None                            # the transaction is over


def test_unknown_mail_parameters_are_555():
    m = ready()
    assert codes(m.receive(b"MAIL FROM:<a@b.c> XTEST\r\n")) == [555]
    assert codes(m.receive(b"MAIL FROM:<a@b.c> BODY=BINARYMIME\r\n")) == [501]


def test_a_command_line_over_1000_bytes_is_500_and_the_next_line_is_read():
    m = ready()
    assert codes(m.receive(b"NOOP " + b"x" * 995 + b"\r\n")) == [500]    # 1002 bytes
    assert codes(m.receive(b"NOOP " + b"x" * 2000)) == []
    assert codes(m.receive(b"x" * 2000 + b"\r\nNOOP\r\n")) == [500, 250]
    assert codes(m.receive(b"NOOP " + b"x" * 993 + b"\r\n")) == [250]    # 1000: allowed


def test_a_text_line_over_1000_bytes_is_taken_whole_and_a_stuffed_dot_undone():
    """RFC 5321 4.5.3.1 asks for no limit where there can be none: HTML mail often has lines
    past 998 characters, and refusing them loses the mail. The dot a client doubles at a
    line's start is still undone (4.5.2)."""
    m = ready()
    in_transaction(m)
    m.receive(b"DATA\r\n")
    events = m.receive(b"<p>" + b"a" * 20_000 + b"\r\n..x\r\n.\r\n")
    assert codes(events) == ["Mail"]
    assert events[0].data == b"<p>" + b"a" * 20_000 + b"\r\n.x\r\n"


def test_the_size_limit_counts_the_message_without_its_doubled_dots():
    """RFC 1870 4: a message of SIZE bytes is taken though stuffing made it larger on the
    wire (here a third larger: every line a lone dot)."""
    m = ready(max_size=30_000)
    in_transaction(m)
    m.receive(b"DATA\r\n")
    events = []
    for _ in range(100):                               # 30,000 bytes stored, 40,000 sent
        events += m.receive(b"..\r\n" * 100)
    events += m.receive(b".\r\n")
    assert codes(events) == ["Mail"] and events[0].data == b".\r\n" * 10_000


def test_pipelined_commands_are_answered_in_order():
    m = machine()
    m.start()
    events = m.receive(b"EHLO c\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<alice@example.org>\r\n"
                       b"RCPT TO:<bob@localhost>\r\nDATA\r\nhi\r\n.\r\nQUIT\r\n")
    assert codes(events) == [250, 250, "Recipient"]
    assert codes(m.recipient(1)) == [250, "Recipient"]
    events = m.recipient(2)
    assert codes(events) == [250, 354, "Mail"] and events[-1].data == b"hi\r\n"
    assert codes(m.stored()) == [250, 221, "Close"]
    assert m.closed and m.receive(b"NOOP\r\n") == []


def test_rset_noop_vrfy_help_and_unknown_commands():
    m = ready()
    m.receive(b"MAIL FROM:<a@b.c>\r\n")
    assert codes(m.receive(b"MAIL FROM:<a@b.c>\r\n")) == [503]
    assert codes(m.receive(b"RSET\r\n")) == [250]
    assert codes(m.receive(b"MAIL FROM:<a@b.c>\r\n")) == [250]
    commands = b"noop\r\nVRFY alice\r\nVRFY\r\nHELP\r\nEXPN x\r\nFOO\r\n"
    assert codes(m.receive(commands)) == [250, 252, 501, 214, 502, 500]


def test_a_refused_message_ends_its_transaction():
    m = ready()
    in_transaction(m)
    m.receive(b"DATA\r\n")
    m.receive(b"x\r\n.\r\n")
    assert codes(m.refuse(451, "4.3.0 later")) == [451]
    assert codes(m.receive(b"RCPT TO:<alice@example.org>\r\n")) == [503]


def test_timeout_and_too_many_errors_close_with_421():
    m = ready()
    assert codes(m.timed_out()) == [421, "Close"] and m.closed
    m = ready(max_errors=3)
    assert codes(m.receive(b"X\r\nY\r\nZ\r\nNOOP\r\n")) == [500, 500, 421, "Close"]


def test_smtputf8_is_advertised_and_a_transaction_that_declares_it_may_use_utf8_paths():
    """Postfix bounces (5.6.7) mail it marks SMTPUTF8 (any 8-bit header, from its sendmail)
    when the next hop does not offer it: it is offered, and UTF-8 paths are taken after it."""
    m = machine()
    m.start()
    (reply,) = m.receive(b"EHLO client.test\r\n")
    assert b"250 SMTPUTF8\r\n" in reply.data
    assert codes(m.receive("MAIL FROM:<jörg@b.test>\r\n".encode())) == [553]
    assert codes(m.receive(b"MAIL FROM:<a@b.test> SMTPUTF8=yes\r\n")) == [501]
    assert codes(m.receive("MAIL FROM:<jörg@bücher.test> BODY=8BITMIME SMTPUTF8\r\n"
                           .encode())) == [250]
    assert m.sender == "jörg@bücher.test" and "SMTPUTF8" in m.params
    (ask,) = m.receive("RCPT TO:<\"jö rg\"@example.org>\r\n".encode())
    assert type(ask) is Recipient and ask.local == "jö rg"
    assert codes(m.recipient(None)) == [550]
    (ask,) = m.receive(b"RCPT TO:<alice@example.org>\r\n")
    assert codes(m.recipient(1)) == [250]
    m.receive(b"DATA\r\n")
    (mail,) = m.receive("Subject: Grüße\r\n\r\nhi\r\n.\r\n".encode())
    assert mail.sender == "jörg@bücher.test"
    assert mail.data == "Subject: Grüße\r\n\r\nhi\r\n".encode()
    m.stored()
    assert codes(m.receive(b"MAIL FROM:<a@b.test>\r\n")) == [250]     # no SMTPUTF8 now:
    assert codes(m.receive("RCPT TO:<jörg@example.org>\r\n".encode())) == [553]
    assert codes(m.receive("NOOP jörg\r\n".encode())) == [500]         # only in paths
    assert codes(m.receive(b"RSET\r\nMAIL FROM:<\xff@b.test> SMTPUTF8\r\n")) == [250, 500]


def test_8bit_commands_are_refused_and_8bit_data_is_kept():
    m = ready()
    assert codes(m.receive("NOOP é\r\n".encode())) == [500]
    in_transaction(m)
    m.receive(b"DATA\r\n")
    (mail,) = m.receive("Subject: café\r\n\r\nnaïve\r\n.\r\n".encode())
    assert mail.data == "Subject: café\r\n\r\nnaïve\r\n".encode()


@pytest.mark.parametrize("rcpt", ["<postmaster>", "<@relay.test:alice@example.org>"])
def test_postmaster_and_source_routes(rcpt):
    m = ready()
    m.receive(b"MAIL FROM:<a@b.c>\r\n")
    (ask,) = m.receive(f"RCPT TO:{rcpt}\r\n".encode())
    assert type(ask) is Recipient and ask.local in ("postmaster", "alice")


def test_close_is_an_event_after_quit():
    m = ready()
    events = m.receive(b"QUIT\r\n")
    assert codes(events) == [221, "Close"] and isinstance(events[1], Close)


def test_postmaster_of_another_domain_is_relaying_denied():
    """Only the bare <postmaster> needs no domain (RFC 5321 4.5.1); postmaster@elsewhere is
    mail for a domain that is not ours."""
    m = ready()
    m.receive(b"MAIL FROM:<a@b.c>\r\n")
    (reply,) = m.receive(b"RCPT TO:<postmaster@elsewhere.test>\r\n")
    assert reply.code == 550 and b"relaying denied" in reply.data
    (ask,) = m.receive(b"RCPT TO:<Postmaster@example.org>\r\n")
    assert type(ask) is Recipient and ask.local == "Postmaster"


def test_control_characters_in_a_command_are_500_never_echoed_or_kept():
    m = ready()
    assert codes(m.receive(b"EHLO a\rb\r\n")) == [500]
    assert codes(m.receive(b"MAIL FROM:<a\x00@b.c>\r\n")) == [500]
    assert m.sender is None
    assert codes(m.receive(b"MAIL FROM:<a@b.c>\r\n")) == [250]


def test_a_quoted_local_part_is_taken_with_its_quoted_pairs():
    """RFC 5321 4.1.2's Quoted-string: spaces, brackets and escaped quotes inside; the
    recipient's local part comes with its quoting undone, so "alice" is alice."""
    m = ready()
    assert codes(m.receive(b'MAIL FROM:<"john doe"@else.test> SIZE=100\r\n')) == [250]
    (ask,) = m.receive(b'RCPT TO:<"alice"@example.org>\r\n')
    assert type(ask) is Recipient and (ask.local, ask.domain) == ("alice", "example.org")
    assert ask.address == '"alice"@example.org'
    assert codes(m.recipient(1)) == [250]
    (ask,) = m.receive(b'RCPT TO:<"a\\"b <c>\\\\ d"@example.org>\r\n')
    assert ask.local == 'a"b <c>\\ d'
    assert codes(m.recipient(None)) == [550]
    (ask,) = m.receive(b'RCPT TO:<@relay.test:"al\\ice"@example.org>\r\n')  # a quoted-pair: i
    assert ask.local == "alice"
    m.recipient(1)
    m.receive(b"DATA\r\n")
    (mail,) = m.receive(b"x\r\n.\r\n")
    assert mail.sender == '"john doe"@else.test'


@pytest.mark.parametrize("path", [
    b'<"john doe@example.org>',            # the quote never ends
    b'<"john"doe"@example.org>',           # a quote inside, not escaped
    b'<"john\tdoe"@example.org>',          # a tab is no qtextSMTP
    b'<john doe@example.org>',             # a space outside quotes
    b'<john@"example.org">',               # quotes in the domain
    b'<john@doe@example.org>',             # two mailboxes' worth
    b'<john@>',                            # no domain after the @
    b'"john"@example.org',                 # no brackets
])
def test_a_path_that_breaks_the_grammar_is_still_501(path):
    m = ready()
    assert codes(m.receive(b"MAIL FROM:" + path + b"\r\n")) == [501]
    assert codes(m.receive(b"MAIL FROM:<a@else.test>\r\n")) == [250]
    assert codes(m.receive(b"RCPT TO:" + path + b"\r\n")) == [501]


@pytest.mark.parametrize("path", [b"<first..last@x.test>", b"<m@[evil.test>", b"<foo>",
                                  b'<"john".doe@x.test>', b"<u@[IPv6:::1]>", b"<a:b@x.test>"])
def test_a_sender_taken_before_quoted_strings_still_is(path):
    """Unquoted paths are read as leniently as before (as Postfix's default): a sender that
    breaks a dot-string's or a domain's rules is still taken."""
    m = ready()
    assert codes(m.receive(b"MAIL FROM:" + path + b"\r\n")) == [250]
    assert m.sender == path[1:-1].decode()
