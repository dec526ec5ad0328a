"""Arashi's web pages: one handler and one template per request type (thesis 6.3.1-6.3.2,
Jinja2 in the role of PyTeC), each a WSGI application that runs in a stage of its own
(``router.py`` builds the stages). What every page shares is here too: the session from its
cookie, the CSRF check on every POST, security headers, and 404 for any id that is not the
user's (the store answers NotFound alike for another user's ids and for missing ones)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import jinja2
from markupsafe import Markup

from . import mime
from .sessions import Session, Sessions
from .store import INBOX, SORTS, MailStore, NotFound, StoreError
from .throttle import LoginThrottle

log = logging.getLogger("arashi.web")

COOKIE = "arashi_session"
PAGE = 10                       # messages per page (thesis 6.3.1)
MAX_FORM = 64 * 1024            # bytes of a form body read
LIST_SORTS = ("date", "sender", "subject")
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = [
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
]
HTML = "text/html; charset=utf-8"
STYLE = (Path(__file__).parent / "templates" / "style.css").read_bytes()
# the address pages name the stylesheet by: a digest of it, so that a browser that keeps it
# (for a year: it is immutable under that address) gets the new one after an upgrade
STYLE_URL = "/style.css?v=" + hashlib.sha256(STYLE).hexdigest()[:16]

_STATUS = {200: "200 OK", 303: "303 See Other", 400: "400 Bad Request", 403: "403 Forbidden",
           404: "404 Not Found", 405: "405 Method Not Allowed", 429: "429 Too Many Requests",
           500: "500 Internal Server Error", 503: "503 Service Unavailable"}
WSGIApp = Callable[[dict, Callable], Iterable[bytes]]


def _date(when: float | None) -> str:
    return "" if when is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(when))


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} KB" if n < 2**20 else f"{n / 2**20:.1f} MB"


def _clean(value: Any) -> Any:
    if isinstance(value, Markup):       # made safe already; cleaning adds no markup
        return Markup(mime.clean(value))
    return mime.clean(value) if isinstance(value, str) else value


def templates() -> jinja2.Environment:
    """Autoescaping on for every template; every value passes ``mime.clean`` on its way out
    (a stray surrogate from 8-bit mail would otherwise fail the page)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined,
        finalize=_clean)
    env.filters["date"], env.filters["size"] = _date, _size
    env.globals["style_url"] = STYLE_URL
    return env


class Reply(Exception):
    """A page other than the handler's own: an error or a redirect, raised from anywhere."""

    def __init__(self, status: int, message: str = "", location: str | None = None,
                 headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.location = status, message, location
        self.headers = headers or []


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    form: dict[str, list[str]]
    cookies: dict[str, str]
    address: str
    secure: bool
    cross_site: bool            # a browser says it comes from another site (Sec-Fetch-Site)
    session: Session | None = None

    def arg(self, name: str, default: str = "") -> str:
        values = self.query.get(name) or self.form.get(name)
        return values[0] if values else default

    def ids(self, name: str) -> list[int]:
        return [int(v) for v in self.form.get(name, []) if v.isdigit()][:1000]

    @property
    def user(self) -> int:
        assert self.session is not None
        return self.session.user


def _fields(text: str, most: int) -> dict[str, list[str]]:
    """A query string or form; more than ``most`` fields is a bad request."""
    try:
        return parse_qs(text, max_num_fields=most)
    except ValueError:
        raise Reply(400, "Too many fields.") from None


def number(text: str) -> int:
    """A whole number from the URL; anything else is a 404, like a missing id."""
    if not text.isdigit() or len(text) > 18:
        raise Reply(404)
    return int(text)


class Web:
    """What every page needs: the store, sessions, the login throttle, the templates."""

    def __init__(self, store: MailStore, sessions: Sessions,
                 throttle: LoginThrottle | None = None) -> None:
        self.store, self.sessions = store, sessions
        self.throttle = throttle or LoginThrottle()
        self.env = templates()
        # what service degradation (degrade.py) lowers under load, read by the pages
        self.list_size = PAGE           # messages a list page shows
        self.searching = True           # False: a search answers that it is paused

    # -- plumbing -----------------------------------------------------------------------------

    def request(self, environ: dict) -> Request:
        method = environ["REQUEST_METHOD"]
        form: dict[str, list[str]] = {}
        if method == "POST":
            ctype = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
            length = environ.get("CONTENT_LENGTH") or "0"
            if not length.isdigit() or int(length) > MAX_FORM or (
                    int(length) and ctype != "application/x-www-form-urlencoded"):
                raise Reply(400, "A form is expected here.")
            body = environ["wsgi.input"].read(int(length))
            form = _fields(body.decode("utf-8", "replace"), 2000)
        cookie = SimpleCookie()
        with contextlib.suppress(CookieError):
            cookie.load(environ.get("HTTP_COOKIE", ""))
        cookies = {k: m.value for k, m in cookie.items()}
        path = environ.get("PATH_INFO", "/")
        path = path.encode("latin-1").decode("utf-8", "replace")
        return Request(method, path, _fields(environ.get("QUERY_STRING", ""), 50),
                       form, cookies, environ.get("REMOTE_ADDR", ""),
                       environ.get("wsgi.url_scheme") == "https",
                       environ.get("HTTP_SEC_FETCH_SITE") in ("cross-site", "same-site"))

    def page(self, template: str, req: Request, **values: Any) -> bytes:
        return self.env.get_template(template).render(session=req.session, **values).encode()

    def app(self, handler: Callable[[Web, Request], Any], *, login: bool = True,
            methods: tuple[str, ...] = ("GET", "HEAD")) -> WSGIApp:
        """``handler`` as a WSGI application: it gets a Request (with its session when
        ``login``) and returns page bytes, or a (content type, bytes, headers) triple."""
        def application(environ: dict, start_response: Callable) -> Iterable[bytes]:
            headers = list(SECURITY_HEADERS)
            req: Request | None = None
            try:
                req = self.request(environ)
                if req.method not in methods:
                    raise Reply(405)
                req.session = self.sessions.get(req.cookies.get(COOKIE))
                if login and req.session is None:
                    if req.method == "POST":
                        raise Reply(403, "Your session has ended: log in again.")
                    raise Reply(303, location="/login")
                if req.method == "POST" and req.session is not None and not \
                        req.session.csrf_ok(req.form.get("csrf", [None])[0]):
                    raise Reply(403, "This form is stale or not from this site: reload the "
                                "page and try again.")
                result = handler(self, req)
                status = 200
                if isinstance(result, tuple):
                    ctype, body, extra = result
                    headers += extra
                else:
                    ctype, body = HTML, result
            except Reply as reply:
                status, ctype = reply.status, HTML
                if reply.location is not None:
                    headers.append(("Location", reply.location))
                    body = b""
                else:
                    body = self.error_page(req, reply.status, reply.message)
                headers += reply.headers
            except Exception:                           # DatabaseError among them
                log.exception("arashi: %s %s failed", environ.get("REQUEST_METHOD"),
                              environ.get("PATH_INFO"))
                status, ctype = 500, HTML
                body = self.error_page(req, 500, "Something went wrong on our side.")
            headers += [("Content-Type", ctype), ("Content-Length", str(len(body)))]
            start_response(_STATUS.get(status, f"{status} Error"), headers)
            return [body]
        return application

    def error_page(self, req: Request | None, status: int, message: str) -> bytes:
        titles = {400: "Bad request", 403: "Forbidden", 404: "Not found",
                  405: "Method not allowed", 429: "Too many attempts", 500: "Server error"}
        return self.env.get_template("error.html").render(
            session=req.session if req else None, status=status,
            title=titles.get(status, "Error"), message=message).encode()

    def cookie(self, req: Request, value: str, max_age: int | None = None) -> tuple[str, str]:
        """The session cookie. Without ``max_age`` it lasts while the browser runs: the
        server's expiry, renewed as the session is used, is the one that counts."""
        secure = "; Secure" if req.secure else ""
        age = "" if max_age is None else f"; Max-Age={max_age}"
        return ("Set-Cookie", f"{COOKIE}={value}; Path=/{age}; HttpOnly; SameSite=Lax{secure}")


def redirect(location: str, headers: list[tuple[str, str]] | None = None) -> Reply:
    return Reply(303, location=location, headers=headers)


# -- login ------------------------------------------------------------------------------------

def login(web: Web, req: Request) -> bytes:
    """GET /login: the form; POST /login: check the password (scrypt: tens of ms)."""
    if req.path != "/login":
        raise Reply(404)
    if req.method != "POST":
        if req.session is not None:
            raise redirect("/folders")
        return web.page("login.html", req, name="", error="")
    if req.cross_site:      # login CSRF: no session yet, so no token; the browser says where from
        raise Reply(403, "Log in from Arashi's own login page.")
    name = req.arg("name")[:100]
    wait = web.throttle.wait(name, req.address)
    if wait > 0:
        raise Reply(429, f"Too many failed logins: try again in {math.ceil(wait)} s.")
    user = web.store.authenticate(name, req.arg("password"))
    if user is None:
        web.throttle.failed(name, req.address)
        return web.page("login.html", req, name=name, error="Wrong user name or password.")
    web.throttle.succeeded(name, req.address)
    if req.session is not None:
        web.sessions.end(req.session.key)
    session = web.sessions.create(user)
    raise redirect("/folders", [web.cookie(req, session.key)])


def logout(web: Web, req: Request) -> bytes:
    """POST /logout: end the session. One delete, so a stage of its own: it never waits
    behind password checks in the login stage's queue."""
    if req.path != "/logout":
        raise Reply(404)
    if req.session is not None:                      # (its CSRF token checked already)
        web.sessions.end(req.session.key)
    raise redirect("/login", [web.cookie(req, "", 0)])


# -- folder list ------------------------------------------------------------------------------

def folders(web: Web, req: Request) -> bytes:
    """GET /folders (and /): the user's folders, with forms to make and delete them."""
    if req.path == "/":
        raise redirect("/folders")
    if req.path != "/folders":
        raise Reply(404)
    return web.page("folders.html", req, folders=web.store.folders(req.user), inbox=INBOX)


# -- message list -----------------------------------------------------------------------------

_FOLDER_PATH = re.compile(r"/folder/(\d{1,18})")


def messages(web: Web, req: Request) -> bytes:
    """GET /folder/ID?page=N&sort=date|sender|subject&order=asc|desc: ten messages."""
    m = _FOLDER_PATH.fullmatch(req.path)
    if m is None:
        raise Reply(404)
    folder_id = int(m.group(1))
    mine = {f.id: f for f in web.store.folders(req.user)}
    folder = mine.get(folder_id)
    if folder is None:
        raise Reply(404)
    sort = req.arg("sort", "date")
    if sort not in LIST_SORTS:
        sort = "date"
    order = "asc" if req.arg("order") == "asc" else "desc"
    size = web.list_size
    pages = max(1, math.ceil(folder.count / size))
    page = min(max(1, number(req.arg("page", "1"))), pages)
    rows = web.store.messages(req.user, folder_id, sort=SORTS[sort], descending=order == "desc",
                              offset=(page - 1) * size, limit=size)
    return web.page("messages.html", req, folder=folder, folders=list(mine.values()),
                    messages=rows, page=page, pages=pages, sort=sort, order=order,
                    sorts=LIST_SORTS)


# -- show message (and its attachments) -------------------------------------------------------

_MESSAGE_PATH = re.compile(r"/message/(\d{1,18})(?:/part/(\d{1,6}))?")


def show(web: Web, req: Request) -> Any:
    """GET /message/ID: the message; GET /message/ID/part/N: attachment N, downloaded."""
    m = _MESSAGE_PATH.fullmatch(req.path)
    if m is None:
        raise Reply(404)
    try:
        message = web.store.message(req.user, int(m.group(1)))
    except NotFound:
        raise Reply(404) from None
    if m.group(2) is not None:
        found = mime.attachment(message.raw, int(m.group(2)))
        if found is None:
            raise Reply(404)
        filename, ctype, data = found
        ascii_name = re.sub(r'[^A-Za-z0-9._ -]', "_", filename)[:100] or "attachment"
        disposition = (f'attachment; filename="{ascii_name}"; '
                       f"filename*=UTF-8''{quote(filename, safe='')}")
        return ctype, data, [("Content-Disposition", disposition),
                             ("Content-Security-Policy", "sandbox; default-src 'none'")]
    folders = web.store.folders(req.user)
    folder = next((f for f in folders if f.id == message.folder_id), None)
    return web.page("message.html", req, message=message, shown=mime.show(message.raw),
                    folder=folder, folders=folders)


# -- search -----------------------------------------------------------------------------------

def search(web: Web, req: Request) -> bytes:
    """GET /search?q=TEXT&folder=ID: messages whose sender or subject holds TEXT, in one of
    the user's folders or all of them."""
    if req.path != "/search":
        raise Reply(404)
    folders = web.store.folders(req.user)
    text = req.arg("q")[:200]
    chosen = req.arg("folder")
    folder = None
    if chosen:
        folder = next((f for f in folders if str(f.id) == chosen), None)
        if folder is None:
            raise Reply(404)
    paused = not web.searching
    results = web.store.search(req.user, text, folder.id if folder else None) \
        if text and not paused else []
    return web.page("search.html", req, q=text, folder=folder, folders=folders,
                    results=results, paused=paused)


# -- delete, refile, create folder, delete folder (one coalesced stage) -----------------------

def act(web: Web, req: Request) -> bytes:
    """POST /act with ``action``: delete or refile the checked messages (``id``, back to
    folder ``from``), create a folder (``name``) or delete one (``folder``)."""
    if req.path != "/act":
        raise Reply(404)
    action, user = req.arg("action"), req.user
    back = req.arg("from")
    back_to = f"/folder/{int(back)}" if back.isdigit() and len(back) < 19 else "/folders"
    try:
        if action == "delete":
            web.store.delete_messages(user, req.ids("id"))
        elif action == "refile":
            target = req.arg("to")
            if not target.isdigit() or len(target) > 18:
                raise Reply(400, "Choose a folder to move the messages to.")
            web.store.move_messages(user, req.ids("id"), int(target))
        elif action == "create-folder":
            web.store.add_folder(user, req.arg("name"))
            back_to = "/folders"
        elif action == "delete-folder":
            target = req.arg("folder")
            if not target.isdigit() or len(target) > 18:
                raise Reply(404)
            web.store.delete_folder(user, int(target))
            back_to = "/folders"
        else:
            raise Reply(400, "Unknown action.")
    except NotFound:
        raise Reply(404) from None
    except StoreError as exc:
        raise Reply(400, str(exc)) from None
    raise redirect(back_to)


# the request types: (stage suffix, handler, needs a session, methods)
REQUEST_TYPES: dict[str, tuple[Callable[[Web, Request], Any], bool, tuple[str, ...]]] = {
    "login": (login, False, ("GET", "HEAD", "POST")),
    "logout": (logout, False, ("POST",)),
    "folders": (folders, True, ("GET", "HEAD")),
    "messages": (messages, True, ("GET", "HEAD")),
    "show": (show, True, ("GET", "HEAD")),
    "search": (search, True, ("GET", "HEAD")),
    "act": (act, True, ("POST",)),
}
