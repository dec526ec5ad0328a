"""Hostile and broken mail shown safely: escaped, links only for http(s), notices."""

from __future__ import annotations

import email
from email.message import EmailMessage
from pathlib import Path
from types import SimpleNamespace

import pytest

from arashi import mime
from arashi.web import templates


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


@pytest.mark.parametrize("control", ["\u202e", "\u202d", "\u202a", "\u202b", "\u202c",
                                     "\u2066", "\u2067", "\u2068", "\u2069"])
def test_an_attachment_name_cannot_turn_its_text_around(control):
    """A right-to-left override in a file name showed "invoice\u202efdp.exe" as
    "invoiceexe.pdf" and turned round the type and size after it: bidi controls are replaced,
    in the list and in the name the download is offered under."""
    msg = EmailMessage()
    msg.set_content("see attached")
    msg.add_attachment(b"MZ", maintype="application", subtype="octet-stream",
                       filename=f"invoice{control}fdp.exe")
    raw = msg.as_bytes()
    (a,) = mime.show(raw).attachments
    assert a.filename == "invoice\ufffdfdp.exe"
    assert mime.attachment(raw, a.index)[0] == "invoice\ufffdfdp.exe"


def test_right_to_left_names_are_kept():
    msg = EmailMessage()
    msg.set_content("x")
    name = "\u05e7\u05d5\u05d1\u05e5.txt\u200f"        # Hebrew letters and a RLM mark
    msg.add_attachment(b"x", maintype="text", subtype="plain", filename=name)
    (a,) = mime.show(msg.as_bytes()).attachments
    assert a.filename == name


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


# a bounce as an MTA sends it (the shape of CPython's test_email/data/msg_16.txt): a text
# part, a delivery report, and the returned message with its own header fields
BOUNCE = b"""\
From: Internet Mail Delivery <postmaster@ucla.edu>
Subject: Delivery Notification: Delivery has failed
To: scr-admin@socal-raves.org
Date: Sun, 23 Sep 2001 20:14:35 -0700 (PDT)
MIME-version: 1.0
Content-Type: multipart/report; boundary="Boundary_(ID_PGS2F2a+z+/jL7hupKgRhA)"


--Boundary_(ID_PGS2F2a+z+/jL7hupKgRhA)
Content-type: text/plain; charset=ISO-8859-1

Your message cannot be delivered to the following recipients:

  Recipient address: jangel1@cougar.noc.ucla.edu
  Reason: recipient reached disk quota

--Boundary_(ID_PGS2F2a+z+/jL7hupKgRhA)
Content-type: message/DELIVERY-STATUS

Original-envelope-id: 0GK500B4HD0888@cougar.noc.ucla.edu
Reporting-MTA: dns; cougar.noc.ucla.edu

Action: failed
Status: 5.0.0 (recipient reached disk quota)
Final-recipient: rfc822;jangel1@cougar.noc.ucla.edu

--Boundary_(ID_PGS2F2a+z+/jL7hupKgRhA)
Content-type: MESSAGE/RFC822

Return-path: scr-admin@socal-raves.org
Received: from babylon.socal-raves.org by panther.noc.ucla.edu (8.9.1a/8.9.1)
 with ESMTP id UAA09793; Sun, 23 Sep 2001 20:14:32 -0700 (PDT)
Date: Sun, 23 Sep 2001 20:10:55 -0700
From: "Ian T. Henry" <henryi@oxy.edu>
Subject: [scr] yeah for Ians!!
To: SoCal Raves <scr@socal-raves.org>
MIME-version: 1.0
Content-type: text/plain; charset=us-ascii

I always love to find more Ian's that are over 3 years old!!

--Boundary_(ID_PGS2F2a+z+/jL7hupKgRhA)--
""".replace(b"\n", b"\r\n")


def forward(inner: EmailMessage, text: str = "see below") -> bytes:
    """``inner`` forwarded as an attachment (message/rfc822), after a line of text."""
    outer = EmailMessage()
    outer["From"], outer["To"], outer["Subject"] = "fwd@x.test", "alice@example.org", "Fwd"
    outer.set_content(text)
    outer.add_attachment(inner)                 # an EmailMessage: a message/rfc822 part
    return outer.as_bytes()


def test_a_bounce_shows_its_report_and_the_returned_message_with_its_own_headers():
    shown = mime.show(BOUNCE)
    assert ("Subject", "Delivery Notification: Delivery has failed") in shown.headers
    assert not shown.notices and not shown.attachments
    text, report = (str(t) for t in shown.texts)
    assert "reached disk quota" in text
    assert report == ("Original-envelope-id: 0GK500B4HD0888@cougar.noc.ucla.edu\n"
                      "Reporting-MTA: dns; cougar.noc.ucla.edu\n\nAction: failed\n"
                      "Status: 5.0.0 (recipient reached disk quota)\n"
                      "Final-recipient: rfc822;jangel1@cougar.noc.ucla.edu")
    (returned,) = shown.messages
    assert returned.headers == [("From", '"Ian T. Henry" <henryi@oxy.edu>'),
                                ("To", "SoCal Raves <scr@socal-raves.org>"),
                                ("Date", "Sun, 23 Sep 2001 20:10:55 -0700"),
                                ("Subject", "[scr] yeah for Ians!!")]
    assert [str(t) for t in returned.texts] == [
        "I always love to find more Ian&#39;s that are over 3 years old!!\n"]


def test_a_forwarded_message_keeps_its_headers_parts_and_attachments():
    inner = EmailMessage()
    inner["From"], inner["To"] = "Bob <bob@y.test>", "carol@z.test"
    inner["Date"], inner["Subject"] = "Tue, 2 Jan 2024 09:00:00 +0000", "the plan"
    inner.set_content("the inner text")
    inner.add_attachment(b"PDF", maintype="application", subtype="pdf", filename="plan.pdf")
    raw = forward(inner)
    shown = mime.show(raw)
    assert [str(t) for t in shown.texts] == ["see below\n"] and not shown.attachments
    (attached,) = shown.messages
    assert dict(attached.headers) == {"From": "Bob <bob@y.test>", "To": "carol@z.test",
                                      "Date": "Tue, 02 Jan 2024 09:00:00 +0000",
                                      "Subject": "the plan"}
    assert [str(t) for t in attached.texts] == ["the inner text\n"]
    (pdf,) = attached.attachments
    assert mime.attachment(raw, pdf.index) == ("plan.pdf", "application/pdf", b"PDF")


def test_messages_attached_very_deep_are_shown_without_failing():
    inner = EmailMessage()
    inner["Subject"] = "innermost"
    inner.set_content("at the bottom")
    for level in range(30):
        outer = EmailMessage()
        outer["Subject"] = f"level {level}"
        outer.set_content("x")
        outer.add_attachment(inner)
        inner = outer
    shown = mime.show(inner.as_bytes())
    depth, at = 0, shown
    while at.messages:
        depth, at = depth + 1, at.messages[0]
    assert depth == mime.MAX_DEPTH and any("deep" in n for n in shown.notices)
    assert "at the bottom\n" in [str(t) for t in at.texts]



def test_a_multipart_whose_boundary_is_lost_is_shown_as_its_text():
    """A bounce whose Content-Type lost its boundary parameter (the shape of CPython's
    test_email/data/msg_25.txt): its body is what can be read, so it is shown as text, not
    offered as a file called part-0; an empty one shows nothing."""
    cut = (b"From: Mail Delivery Subsystem <MAILER-DAEMON@zinfandel.lacita.com>\r\n"
           b"Subject: Returned mail: Too many hops\r\n"
           b"Content-Type: multipart/report; report-type=delivery-status;\r\n\tbo\r\n\r\n"
           b"--JAB03225.986577786/zinfandel.lacita.com\r\n\r\n"
           b"554 Too many hops 19 (17 max): to <scoffman@wellpartner.com>\r\n")
    shown = mime.show(cut)
    assert shown.notices and not shown.attachments
    assert "554 Too many hops 19 (17 max): to &lt;scoffman@wellpartner.com&gt;" in shown.texts[0]
    empty = mime.show(b"Content-Type: multipart/mixed\r\n\r\n")
    assert not empty.texts and not empty.attachments


# CPython's email test corpus: with this Python's standard library where it is whole (Debian's
# leaves the tests out), or with a pyenv-built one
CORPUS = next((p for p in [Path(email.__file__).parent.parent / "test/test_email/data",
                           *sorted(Path.home().glob(".pyenv/versions/*/lib/python3*/test/"
                                                    "test_email/data"))]
               if p.is_dir()), Path("/nonexistent"))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="CPython's email test corpus is not installed")
def test_every_message_of_cpythons_email_corpus_shows():
    """Real-shaped mail, broken mail included: each makes a message page, and a report's
    fields are text."""
    page = templates().get_template("message.html")
    message = SimpleNamespace(id=1, subject="s", folder_id=1)
    paths = sorted(CORPUS.glob("msg_*.txt"))
    assert len(paths) > 40
    for path in paths:
        shown = mime.show(path.read_bytes())
        html = page.render(message=message, shown=shown, folder=None, folders=[],
                           session=SimpleNamespace(csrf="x"))
        assert html.count("<section") == html.count("</section>"), path.name
    banned = mime.show((CORPUS / "msg_43.txt").read_bytes())    # 25 recipients in its report
    report = str(banned.texts[1])
    assert report.startswith("Reporting-MTA: dns; sacspam01.dot.ca.gov\n")
    assert report.count("Final-Recipient: rfc822;") == 25


def test_a_raw_latin1_header_is_shown_in_latin1_and_the_body_is_untouched():
    raw = (b"Subject: caf\xe9\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n"
           b"--B\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\nCaf\xe9\r\n"
           b"--B\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment;"
           b" filename=a.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n/wD+\r\n--B--\r\n")
    shown = mime.show(raw)
    assert ("Subject", "caf\u00e9") in shown.headers
    assert "Caf\u00e9" in str(shown.texts[0])
    assert mime.attachment(raw, 1) == ("a.bin", "application/octet-stream", b"\xff\x00\xfe")
