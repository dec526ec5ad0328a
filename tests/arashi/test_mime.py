"""Hostile and broken mail shown safely: escaped, links only for http(s), notices."""

from __future__ import annotations

from email.message import EmailMessage

from arashi import mime


def test_links_only_for_http_and_always_escaped():
    out = str(mime.linkify('x <b> javascript:alert(1) data:text/html,<script> '
                           'https://a.test/p?q=1&r="><script>, http://b.test.'))
    assert "<b>" not in out and "<script>" not in out and 'href="javascript' not in out
    assert '<a href="https://a.test/p?q=1&amp;r=" rel="noopener noreferrer nofollow">' in out
    assert '<a href="http://b.test" rel' in out


def test_broken_and_strange_mail_shows_with_notices():
    shown = mime.show(b"Subject: caf\xe9 \xff\r\nContent-Type: text/plain; charset=klingon\r\n"
                      b"\r\nbody \xff\r\n")
    assert any("unknown charset" in n for n in shown.notices)
    assert all("\udcff" not in v for _, v in shown.headers)   # encodable: no surrogates left
    assert "body \ufffd" in str(shown.texts[0])
    shown = mime.show(b"Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nno end")
    assert shown.notices
    assert [str(t) for t in mime.show(b"").texts] == [""]


def test_a_large_attachment_is_listed_and_returned_whole():
    msg = EmailMessage()
    msg.set_content("hi")
    big = b"\x00\x01" * (10 * 2**20)                          # 20 MB
    msg.add_attachment(big, maintype="application", subtype="octet-stream", filename="b.bin")
    raw = msg.as_bytes()
    (a,) = mime.show(raw).attachments
    assert (a.filename, a.size) == ("b.bin", len(big))
    assert mime.attachment(raw, a.index) == ("b.bin", "application/octet-stream", big)
    assert mime.attachment(raw, 99) is None


def test_headers_and_charsets_the_parser_trips_over_still_show():
    shown = mime.show(b'From: Mallory <m@[evil.test>\r\nTo: a@b, :"x" <c@d>\r\n'
                      b"Content-Type: text/plain; charset=ut\x00f8\r\n\r\nbody\r\n")
    assert ("From", "Mallory <m@[evil.test>") in shown.headers
    assert ("To", 'a@b, :"x" <c@d>') in shown.headers
    assert any("unknown charset" in n for n in shown.notices)
    assert str(shown.texts[0]) == "body\n"


def test_8bit_text_without_a_charset_is_read_as_utf8_if_it_is_that():
    """No charset is US-ASCII by the letter (RFC 2045 5.2); 8-bit text in such a part is read
    as UTF-8 when it is valid UTF-8, as mail clients read it, and with replacements and a
    notice otherwise."""
    utf8 = mime.show("Subject: x\r\n\r\ncaf\u00e9 cr\u00e8me\r\n".encode())
    assert "caf\u00e9 cr\u00e8me" in utf8.texts[0] and not utf8.notices
    latin1 = mime.show(b"Subject: x\r\n\r\ncaf\xe9\r\n")
    assert "caf\ufffd" in latin1.texts[0] and latin1.notices
