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
