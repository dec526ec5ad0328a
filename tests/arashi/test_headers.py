"""The listed fields of a message, from well-formed and malformed mail alike."""

from arashi.headers import summarize


def test_date_sender_and_subject():
    s = summarize(b"From: =?utf-8?q?Ren=C3=A9?= <r@x.test>\r\nSubject: Hello\r\n  again\r\n"
                  b"Date: Mon, 1 Jan 2024 10:00:00 +0000\r\n\r\nbody")
    assert s.sender == "René <r@x.test>" and s.subject == "Hello again"
    assert s.date == 1704103200.0


def test_malformed_mail_gets_what_can_be_read():
    assert summarize(b"").sender == "" and summarize(b"\xff\xfe garbage").date is None
    s = summarize(b"Subject: caf\xe9 8-bit\r\nDate: yesterday\r\nFrom: <<<>>>\r\n\r\n")
    assert s.date is None and "caf" in s.subject
    s = summarize(b"Subject: " + b"x" * 5000 + b"\r\n\r\n")
    assert len(s.subject) == 998


# fields the email package's own parser trips over (IndexError, AttributeError in
# email._header_value_parser, Python 3.11 to 3.13): kept as written, never an error
TRIPPING = [(b"From: Mallory <m@[evil.test>\r\n\r\nx", "Mallory <m@[evil.test>"),
            (b'From: a@b, :"x" <c@d>\r\n\r\nx', 'a@b, :"x" <c@d>'),
            (b"From: x <\r\n r@[x.test>\r\n\r\nx", "x < r@[x.test>")]


def test_fields_the_parser_trips_over_are_kept_as_written():
    for raw, sender in TRIPPING:
        assert summarize(raw).sender == sender


def test_only_the_header_block_is_read():
    head = b"From: a@x.test\r\nSubject: big\r\nDate: Mon, 1 Jan 2024 10:00:00 +0000\r\n\r\n"
    body = b"Subject: not a header\r\n\r\n" + b"y" * 1000
    assert summarize(head + body) == summarize(head) == summarize(head.replace(b"\r\n", b"\n"))
    assert summarize(head + body).subject == "big"
    assert summarize(b"\r\nSubject: a body line\r\n\r\n").subject == ""      # no header block


def test_raw_8bit_header_fields_in_another_charset_than_utf8_are_read_in_it():
    """A Latin-1 Subject relayed as it was written (Postfix passes 8-bit headers on) is
    shown in Latin-1 (windows-1252, or the Content-Type's charset), not as U+FFFD."""
    assert summarize(b"From: J\xf6rg <j@x.test>\r\nSubject: caf\xe9 \x93cr\xe8me\x94\r\n\r\n"
                     b"body \xff\r\n").subject == "caf\u00e9 \u201ccr\u00e8me\u201d"
    hello = "\u041f\u0440\u0438\u0432\u0435\u0442"
    assert summarize(b"Subject: " + hello.encode("koi8-r") + b"\r\nContent-Type: text/plain;"
                     b'\r\n charset="KOI8-R"\r\n\r\nx\r\n').subject == hello
    for charset in (b"utf-8", b"utf-16", b"no-such-charset"):    # named wrongly
        assert summarize(b"Subject: caf\xe9\r\nContent-Type: text/plain; charset=" + charset
                         + b"\r\n\r\n").subject == "caf\u00e9"
    assert summarize("Subject: Gr\u00fc\u00dfe\r\n\r\n".encode()).subject == "Gr\u00fc\u00dfe"
