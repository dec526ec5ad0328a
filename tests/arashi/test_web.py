"""Every request type through HTTP with a real client against ``arashi serve``: log in and
out, sessions that expire, CSRF refused, one user's ids useless to another, hostile mail
rendered inert, pagination and sorting, refile and delete of several, attachments intact."""

from __future__ import annotations

import base64
import hashlib
import re
import time
from email.message import EmailMessage

import pytest
import requests

from arashi.store import INBOX

from tests.helpers import WAIT
from tests.helpers.arashi_env import arashi, new_store
from tests.helpers.arashi_web import csrf, get, log_in, post, serving
from tests.helpers.postgres import BACKENDS, database_url

ATTACHMENT = bytes(range(256)) * 4000          # ~1 MB of every byte value
HOSTILE = (b"From: Mallory <m@evil.test>\r\nSubject: <script>alert(1)</script>\r\n"
           b"Content-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\n"
           b"Content-Type: text/plain\r\n\r\nclick javascript:alert(2) or "
           b"http://ok.test/a?b=1&c=\"><script>x</script> now\r\n--b\r\n"
           b"Content-Type: text/html\r\n\r\n<script>alert(3)</script>"
           b"<a href=\"javascript:alert(4)\">x</a><img src=x onerror=alert(5)>\r\n--b--\r\n")


# a From field that makes the email package's own parser raise (Python 3.11 to 3.13)
TRIPPING = b"From: Trudy <t@[evil.test>\r\nSubject: trips the parser\r\n\r\nstill here\r\n"


def mail(subject: str, sender: str = "a@x.test", date: str = "Mon, 1 Jan 2024 10:00:00 +0000",
         body: str = "hello") -> bytes:
    return (f"From: {sender}\r\nSubject: {subject}\r\nDate: {date}\r\n\r\n{body}\r\n").encode()


def with_attachment() -> bytes:
    msg = EmailMessage()
    msg["From"], msg["Subject"] = "b@x.test", "report attached"
    msg.set_content("see the attachment")
    msg.add_attachment(ATTACHMENT, maintype="application", subtype="pdf", filename="report.pdf")
    msg.add_attachment(b"<script>alert(6)</script>", maintype="text", subtype="html",
                       filename="evil.html")
    return msg.as_bytes()


@pytest.fixture(scope="module", params=BACKENDS)
def site(request, tmp_path_factory):
    """The whole web suite runs once per backend: (server, (data, url), ids)."""
    data = tmp_path_factory.mktemp("arashi-web")
    url = database_url(request.param, data)
    store = new_store(data, url)
    try:
        alice = store.add_user("alice", "alice-pw")
        bob = store.add_user("bob", "bob-pw")
        store.add_user("carol", "carol-pw")
        inbox = store.folder(alice, INBOX)
        store.add_messages(alice, inbox, [
            (mail(f"note {i:02d}", sender=f"s{(7 * i) % 23:02d}@x.test",
                  date=f"Mon, {1 + i % 28} Jan 2024 {i % 24:02d}:00:00 +0000"), "")
            for i in range(23)])
        archive = store.add_folder(alice, "Archive")
        store.add_messages(alice, archive, [(TRIPPING, "")])
        store.deliver([alice], HOSTILE)
        store.deliver([alice], with_attachment())
        bob_secret = store.deliver([bob], mail("bob's secret plan", body="do not tell"))[0]
        bob_attach = store.deliver([bob], with_attachment())[0]
        bob_folder = store.add_folder(bob, "Private")
        ids = {"alice": alice, "bob": bob, "bob_secret": bob_secret, "bob_attach": bob_attach,
               "bob_folder": bob_folder, "bob_inbox": store.folder(bob, INBOX),
               "alice_inbox": inbox}
    finally:
        store.pool.close()
    with serving(data, url=url) as server:
        yield server, (data, url), ids


def found(server, client, query: str, subject: str) -> str:
    """The id of the message with ``subject`` (as the page writes it) that a search for
    ``query`` lists first."""
    page = get(client, server.url + "/search", params={"q": query}).text
    return re.search(rf'<a href="/message/(\d+)">{re.escape(subject)}', page).group(1)


def inbox_page(server, client, ids, query=""):
    return get(client, f"{server.url}/folder/{ids['alice_inbox']}{query}")


def test_login_logout_and_pages_need_a_session(site):
    server, _, _ = site
    anonymous = requests.Session()
    r = get(anonymous, server.url + "/folders")
    assert r.status_code == 303 and r.headers["location"] == "/login"
    r = get(anonymous, server.url + "/login")
    assert r.status_code == 200 and 'name="password"' in r.text
    assert "script-src" not in r.headers["content-security-policy"]
    assert r.headers["content-security-policy"].startswith("default-src 'none'")
    bad = post(anonymous, server.url + "/login", {"name": "alice", "password": "wrong"})
    assert bad.status_code == 200 and "Wrong user name or password" in bad.text
    assert "arashi_session" not in bad.cookies
    client = log_in(server, "alice", "alice-pw")
    cookie = next(c for c in client.cookies if c.name == "arashi_session")
    assert len(base64.urlsafe_b64decode(cookie.value + "==")) >= 16       # >= 128 bits
    assert cookie.has_nonstandard_attr("HttpOnly") and not cookie.secure
    raw = post(requests.Session(), server.url + "/login",
               {"name": "alice", "password": "alice-pw"}).headers["set-cookie"]
    assert "HttpOnly" in raw and "SameSite=Lax" in raw
    # no Max-Age: the browser keeps the key while it runs, the server decides how long it is
    # good for (8 h after its last use), so a session in use does not end 8 h after login
    assert "Max-Age" not in raw and "Expires" not in raw
    folders = get(client, server.url + "/folders")
    assert folders.status_code == 200 and "INBOX" in folders.text and "Archive" in folders.text
    token = csrf(folders.text)
    gone = post(client, server.url + "/logout", {"csrf": token})
    assert gone.status_code == 303
    old = cookie.value
    again = get(requests.Session(), server.url + "/folders", cookies={"arashi_session": old})
    assert again.status_code == 303 and again.headers["location"] == "/login"


def test_a_login_posted_from_another_site_is_refused(site):
    """Login CSRF: another site's page must not log the visitor in (to an account of the
    attacker's); a browser says where a request comes from in Sec-Fetch-Site."""
    server, _, _ = site
    form = {"name": "alice", "password": "alice-pw"}
    for where in ("cross-site", "same-site"):
        r = post(requests.Session(), server.url + "/login", form,
                 headers={"Sec-Fetch-Site": where})
        assert r.status_code == 403 and "set-cookie" not in r.headers, where
    r = post(requests.Session(), server.url + "/login", form,
             headers={"Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 303 and "arashi_session=" in r.headers["set-cookie"]


def test_a_session_expires(site):
    server, data, _ = site
    client = log_in(server, "alice", "alice-pw")
    assert get(client, server.url + "/folders").status_code == 200
    store = new_store(*data)
    try:
        with store.pool.transaction(write=True) as tx:     # its time has come
            tx.execute("UPDATE sessions SET expires = ?", (time.time() - 1,))
    finally:
        store.pool.close()
    r = get(client, server.url + "/folders")
    assert r.status_code == 303 and r.headers["location"] == "/login"


def test_failed_logins_are_slowed_per_account(site):
    server, _, _ = site
    store_user = "carol"
    client = requests.Session()
    codes = [post(client, server.url + "/login", {"name": store_user, "password": "no"}
                  ).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    # even the right password waits now
    right = post(client, server.url + "/login", {"name": store_user, "password": "carol-pw"})
    assert right.status_code == 429 and "try again in" in right.text


def test_csrf_missing_or_wrong_is_refused(site):
    server, _, _ids = site
    client = log_in(server, "alice", "alice-pw")
    token = csrf(get(client, server.url + "/folders").text)
    wrong = token[:-1] + ("B" if token.endswith("A") else "A")      # one character off
    for form in ({"action": "create-folder", "name": "Sneaky"},
                 {"action": "create-folder", "name": "Sneaky", "csrf": "x" * 43},
                 {"action": "create-folder", "name": "Sneaky", "csrf": wrong}):
        r = post(client, server.url + "/act", form)
        assert r.status_code == 403, form
    other = log_in(server, "alice", "alice-pw")          # another session's token is wrong too
    r = post(other, server.url + "/act", {"action": "create-folder", "name": "Sneaky",
                                         "csrf": token})
    assert r.status_code == 403
    assert "Sneaky" not in get(client, server.url + "/folders").text
    assert get(client, server.url + "/act").status_code == 405   # never by GET
    logout = post(client, server.url + "/logout", {})
    assert logout.status_code == 403


def test_message_list_pages_and_sorts(site):
    server, _, ids = site
    client = log_in(server, "alice", "alice-pw")
    first = inbox_page(server, client, ids, "?sort=subject&order=asc")
    subjects = re.findall(r'<a href="/message/\d+">([^<]+)</a>', first.text)
    assert subjects == ["&lt;script&gt;alert(1)&lt;/script&gt;",
                        *(f"note {i:02d}" for i in range(9))]
    assert 'rel="next"' in first.text and 'rel="prev"' not in first.text
    third = inbox_page(server, client, ids, "?sort=subject&order=asc&page=3")
    assert re.findall(r'<a href="/message/\d+">([^<]+)</a>', third.text) == [
        "note 19", "note 20", "note 21", "note 22", "report attached"]
    assert 'rel="prev"' in third.text and "page 3 of 3" in third.text
    by_sender = inbox_page(server, client, ids, "?sort=sender&order=desc")
    senders = re.findall(r"<td>(s\d\d@x\.test)</td>", by_sender.text)
    assert len(senders) == 10 and senders == sorted(senders, reverse=True)
    by_date = inbox_page(server, client, ids, "?sort=date&order=asc")
    dates = re.findall(r'<td class="date">(2024-\d\d-\d\d \d\d:\d\d)</td>', by_date.text)
    assert len(dates) == 8 and dates == sorted(dates)          # after the two without a Date
    assert inbox_page(server, client, ids, "?page=x").status_code == 404


def test_refile_and_delete_several(site):
    server, _data, ids = site
    client = log_in(server, "alice", "alice-pw")
    page = inbox_page(server, client, ids, "?sort=subject&order=asc&page=2")
    token = csrf(page.text)
    picked = re.findall(r'name="id" value="(\d+)"', page.text)[:3]
    archive = re.search(r'<option value="(\d+)">Archive</option>', page.text).group(1)
    r = post(client, server.url + "/act", [("csrf", token), ("action", "refile"), ("to", archive),
                                           ("from", str(ids["alice_inbox"])),
                                           *[("id", i) for i in picked]])
    assert r.status_code == 303 and r.headers["location"] == f"/folder/{ids['alice_inbox']}"
    moved = get(client, f"{server.url}/folder/{archive}")
    assert all(f'value="{i}"' in moved.text for i in picked)
    r = post(client, server.url + "/act", [("csrf", token), ("action", "delete"),
                                           *[("id", i) for i in picked[:2]]])
    assert r.status_code == 303
    left = get(client, f"{server.url}/folder/{archive}")
    assert f'value="{picked[2]}"' in left.text and f'value="{picked[0]}"' not in left.text
    assert get(client, f"{server.url}/message/{picked[0]}").status_code == 404


def test_create_and_delete_a_folder(site):
    server, _, _ = site
    client = log_in(server, "alice", "alice-pw")
    token = csrf(get(client, server.url + "/folders").text)
    r = post(client, server.url + "/act", {"csrf": token, "action": "create-folder",
                                           "name": "<b>Receipts</b>"})
    assert r.status_code == 303
    page = get(client, server.url + "/folders").text
    assert "&lt;b&gt;Receipts&lt;/b&gt;" in page and "<b>Receipts" not in page
    fid = re.search(r'<a href="/folder/(\d+)">&lt;b&gt;Receipts', page).group(1)
    dup = post(client, server.url + "/act", {"csrf": token, "action": "create-folder",
                                             "name": "<b>Receipts</b>"})
    assert dup.status_code == 400 and "already" in dup.text
    r = post(client, server.url + "/act", {"csrf": token, "action": "delete-folder",
                                           "folder": fid})
    assert r.status_code == 303 and "Receipts" not in get(client, server.url + "/folders").text
    inbox = re.search(r'<a href="/folder/(\d+)">INBOX', page).group(1)
    r = post(client, server.url + "/act", {"csrf": token, "action": "delete-folder",
                                           "folder": inbox})
    assert r.status_code == 400


def test_search_one_folder_or_all(site):
    server, _, ids = site
    client = log_in(server, "alice", "alice-pw")
    r = get(client, server.url + "/search", params={"q": "NOTE 2"})
    assert r.status_code == 200            # (notes 10-18 may have been refiled or deleted)
    assert sorted(re.findall(r">(note 2\d)</a>", r.text)) == ["note 20", "note 21", "note 22"]
    r = get(client, server.url + "/search", params={"q": "mallory",
                                                   "folder": ids["alice_inbox"]})
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text and "<script>" not in r.text


def test_another_users_ids_are_not_found(site):
    server, _, ids = site
    client = log_in(server, "alice", "alice-pw")
    missing = get(client, server.url + "/message/999999")
    assert missing.status_code == 404
    for path in (f"/message/{ids['bob_secret']}", f"/message/{ids['bob_attach']}/part/1",
                 f"/folder/{ids['bob_folder']}", f"/folder/{ids['bob_inbox']}",
                 f"/search?q=secret&folder={ids['bob_inbox']}"):
        r = get(client, server.url + path)
        assert r.status_code == 404, path
        assert r.text == missing.text, path                  # the same page as a missing id
        assert "secret" not in r.text.lower().replace("secret&", "")
    everywhere = get(client, server.url + "/search", params={"q": "secret"})
    assert everywhere.status_code == 200 and "plan" not in everywhere.text
    token = csrf(everywhere.text)
    for form in ({"action": "delete", "id": ids["bob_secret"]},
                 {"action": "refile", "id": ids["bob_secret"], "to": ids["alice_inbox"]},
                 {"action": "refile", "id": ids["bob_secret"], "to": ids["bob_folder"]},
                 {"action": "delete-folder", "folder": ids["bob_folder"]}):
        post(client, server.url + "/act", {"csrf": token, **form})
    bob = log_in(server, "bob", "bob-pw")
    assert "do not tell" in get(bob, f"{server.url}/message/{ids['bob_secret']}").text
    assert "Private" in get(bob, server.url + "/folders").text


def test_hostile_mail_is_rendered_inert(site):
    server, _, _ids = site
    client = log_in(server, "alice", "alice-pw")
    mid = found(server, client, "mallory", "&lt;script")
    page = get(client, f"{server.url}/message/{mid}")
    assert page.status_code == 200
    text = page.text
    assert "<script" not in text and "onerror=alert" not in text.replace("onerror=alert(5)&gt;", "")
    assert 'href="javascript:' not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text                      # subject
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in text                      # HTML part as text
    assert "&lt;img src=x onerror=alert(5)&gt;" in text
    assert "click javascript:alert(2) or" in text                               # not a link
    assert ('<a href="http://ok.test/a?b=1&amp;c=" rel="noopener noreferrer nofollow">'
            in text)                                                            # link stops at "
    assert "&lt;script&gt;x&lt;/script&gt;" in text


def test_mail_the_header_parser_trips_over_is_listed_and_shown(site):
    server, _, _ = site
    client = log_in(server, "alice", "alice-pw")
    mid = found(server, client, "trudy", "trips the parser")
    page = get(client, f"{server.url}/message/{mid}")
    assert page.status_code == 200 and "still here" in page.text
    assert "Trudy &lt;t@[evil.test&gt;" in page.text


def test_attachments_download_intact_with_their_type(site):
    server, _, _ = site
    client = log_in(server, "alice", "alice-pw")
    mid = found(server, client, "report", "report attached")
    page = get(client, f"{server.url}/message/{mid}").text
    links = dict(re.findall(r'<a href="(/message/\d+/part/\d+)" download>([^<]+)</a>', page))
    assert sorted(links.values()) == ["evil.html", "report.pdf"]
    for path, name in links.items():
        r = get(client, server.url + path)
        assert r.status_code == 200
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["content-disposition"].startswith(f'attachment; filename="{name}"')
        assert "sandbox" in r.headers["content-security-policy"]
        if name == "report.pdf":
            assert r.headers["content-type"] == "application/pdf" and r.content == ATTACHMENT
        else:
            assert r.headers["content-type"] == "text/html"
    assert get(client, f"{server.url}/message/{mid}/part/99").status_code == 404


def test_unknown_paths_and_the_root(site):
    server, _, _ = site
    client = log_in(server, "alice", "alice-pw")
    assert get(client, server.url + "/").headers["location"] == "/folders"
    assert get(client, server.url + "/nothing/here").status_code == 404
    assert get(client, server.url + "/style.css").headers["content-type"].startswith("text/css")


def test_the_stylesheets_address_changes_with_it(site):
    """Browsers keep the stylesheet (it is cached for long): a page names it by an address
    that holds a digest of its content, so one upgraded never shows with the old one."""
    server, _, _ = site
    for client, path in ((requests.Session(), "/login"),
                         (log_in(server, "alice", "alice-pw"), "/folders")):
        page = get(client, server.url + path).text
        m = re.search(r'<link rel="stylesheet" href="(/style\.css\?v=([0-9a-f]+))">', page)
        assert m, page[:400]
        r = get(client, server.url + m.group(1))
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/css")
        assert hashlib.sha256(r.content).hexdigest().startswith(m.group(2))
        assert len(m.group(2)) >= 12
        assert "immutable" in r.headers["cache-control"]
    # another version's address (a page from a node not yet upgraded, or one upgraded since)
    # gets this version, but not to be kept for ever under that address
    for other in ("/style.css?v=0123456789abcdef", "/style.css"):
        r = get(requests.Session(), server.url + other)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/css")
        assert r.headers["cache-control"] == "no-cache"


def test_too_many_fields_are_a_bad_request_not_a_server_error(site):
    server, _, _ = site
    client = log_in(server, "alice", "alice-pw")
    r = get(client, server.url + "/folders?" + "&".join(f"f{i}=x" for i in range(60)))
    assert r.status_code == 400
    token = csrf(get(client, server.url + "/folders").text)
    r = post(client, server.url + "/act", [("csrf", token), *[("id", "1")] * 3000])
    assert r.status_code == 400


def test_mail_arriving_by_smtp_is_read_on_the_web(site):
    import smtplib
    server, _, _ = site
    with smtplib.SMTP(*server.smtp, timeout=WAIT) as smtp:
        smtp.sendmail("x@else.test", ["alice@example.org"],
                      b"From: x@else.test\r\nSubject: fresh off the wire\r\n"
                      b"Content-Type: text/plain; charset=x-no-such-charset\r\n\r\n"
                      b"caf\xe9 see https://example.org/page.\r\n")
    client = log_in(server, "alice", "alice-pw")
    mid = found(server, client, "fresh", "fresh off the wire")
    text = get(client, f"{server.url}/message/{mid}").text
    assert "unknown charset" in text
    assert '<a href="https://example.org/page" rel="noopener noreferrer nofollow">' in text


def test_a_forwarded_message_and_a_bounce_show_their_own_headers_inert(site):
    """An attached message (message/rfc822) shows its own From, To, Date and Subject, escaped
    as the rest of the page, and its text; a delivery report shows as its text. Headers and
    report fields made to break out of the page stay text."""
    import smtplib
    server, _, _ = site
    inner = EmailMessage()
    inner["From"] = '"</td><script>alert(7)</script>" <m@evil.test>'
    inner["To"] = "victim@x.test"
    inner["Date"] = "Tue, 2 Jan 2024 09:00:00 +0000"
    inner["Subject"] = '</table><img src=x onerror=alert(8)>'
    inner.set_content("the forwarded words")
    outer = EmailMessage()
    outer["From"], outer["To"], outer["Subject"] = "fwd@x.test", "alice@example.org", "fwd nest"
    outer.set_content("see below")
    outer.add_attachment(inner)
    bounce = (b"From: Mail Delivery <mailer-daemon@x.test>\r\nSubject: bounced nest\r\n"
              b"Content-Type: multipart/report; report-type=delivery-status; boundary=r\r\n"
              b"\r\n--r\r\nContent-Type: text/plain\r\n\r\nit failed\r\n"
              b"--r\r\nContent-Type: message/delivery-status\r\n\r\n"
              b"Reporting-MTA: dns; mx.x.test\r\n\r\nFinal-Recipient: rfc822; <script>@x.test\r\n"
              b"Action: failed\r\nStatus: 5.1.1\r\n--r--\r\n")
    with smtplib.SMTP(*server.smtp, timeout=WAIT) as smtp:
        smtp.send_message(outer, "fwd@x.test", ["alice@example.org"])
        smtp.sendmail("", ["alice@example.org"], bounce)
    client = log_in(server, "alice", "alice-pw")
    page = get(client, f"{server.url}/message/{found(server, client, 'fwd nest', 'fwd nest')}")
    assert page.status_code == 200
    text = page.text
    attached = text[text.index('<section class="attached">'):text.index("</section>")]
    assert "<script" not in text and "<img" not in text
    assert ("<tr><th>From</th><td>&#34;&lt;/td&gt;&lt;script&gt;alert(7)&lt;/script&gt;&#34; "
            "&lt;m@evil.test&gt;</td></tr>") in attached
    assert "<tr><th>To</th><td>victim@x.test</td></tr>" in attached
    assert "<tr><th>Date</th><td>Tue, 02 Jan 2024 09:00:00 +0000</td></tr>" in attached
    assert ("<tr><th>Subject</th><td>&lt;/table&gt;&lt;img src=x onerror=alert(8)&gt;</td>"
            in attached)
    assert "the forwarded words" in attached and "see below" not in attached
    page = get(client, f"{server.url}/message/{found(server, client, 'bounced', 'bounced nest')}")
    assert page.status_code == 200 and "<script" not in page.text
    assert ("<pre class=\"text\">Reporting-MTA: dns; mx.x.test\n\nFinal-Recipient: rfc822; "
            "&lt;script&gt;@x.test\nAction: failed\nStatus: 5.1.1</pre>") in page.text


def test_serve_help_names_the_web_options():
    out = arashi("serve", "--help").stdout
    assert "--bind" in out and "--target-p90" in out
