"""Haboob's stages (thesis 6.1, Fig. 36): HttpRecv dispatches, PageCache answers from memory,
CacheMiss reads from disk, and each WSGI or ASGI application runs in a stage of its own.

    http (seda.http, routing with HttpRecv) -> haboob.cache -> haboob.miss (pool)
                                           \\-> one stage per mounted application (a pool
                                               for WSGI, an asyncio loop for ASGI)

Only the PageCache stage touches the cache: CacheMiss sends what it loaded back as an event.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
import traceback
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import unquote

import seda
from seda.control import ResponseTimeBound, ThreadPoolController
from seda.http import (
    FileBody,
    Prepared,
    ReadyAnswer,
    Response,
    from_asgi2,
    is_asgi,
    is_asgi2,
    mount,
    mount_asgi,
    prepare_head,
    responses,
    serve,
)
from seda.io import WriteDone, read_nowait
from seda.status import PREFIX, add_status

from .access_log import AccessLog
from .cache import PageCache
from .loops import loop_factory
from .options import Options
from .static import (
    UNSATISFIABLE,
    Refused,
    RootDir,
    byte_range,
    content_type,
    etag,
    identity,
    last_modified,
    open_cached,
    precondition_failed,
    resolve,
)
from .static import not_modified as is_not_modified

_GET_HEAD = ("GET", "HEAD")
SERVICE = "haboob"      # names its status page and prefixes its metrics (haboob_http_...)


CLASSES = range(10)     # request classes 0 (default, lowest) to 9 (highest priority)


def classifier(spec: str) -> Any:
    """``NAME`` -> the request's class from header NAME; ``cookie:NAME`` -> from that cookie.
    A missing or malformed value is class 0."""
    kind, sep, name = spec.partition(":")
    if sep and kind.lower() == "cookie":
        # a request is classified on its way in and again when its time is measured: parse
        # each Cookie header once (clients send the same one request after request, too)
        @functools.lru_cache(maxsize=256)
        def from_cookie(header: str) -> str | None:
            cookie = SimpleCookie()
            with contextlib.suppress(CookieError):
                cookie.load(header)
            morsel = cookie.get(name)
            return None if morsel is None else morsel.value

        def value(req: Any) -> str | None:
            return from_cookie(req.header("cookie") or "")
    else:
        def value(req: Any) -> str | None:
            return req.header(spec)

    def classify(req: Any) -> int:
        v = value(req)
        if v is None:
            return 0
        v = v.strip()                        # (str.isdigit takes "²" too, which int refuses)
        return int(v) if v.isascii() and v.isdigit() and int(v) in CLASSES else 0

    return classify


def admission(options: Options) -> Any:
    """The predicate of an application stage: None, or a response-time bound (per class)."""
    if options.target_p90 is None:
        return None
    if options.class_header is None:
        return ResponseTimeBound(options.target_p90)
    return ResponseTimeBound(classify=classifier(options.class_header),
                             targets={c: options.target_p90 for c in CLASSES})


class Entry:
    """A cached file: its validators and its 200 and 304 responses, prepared once."""

    __slots__ = ("body", "checked", "ctype", "etag", "file", "key", "modified", "mtime",
                 "not_modified", "ok", "rechecking", "size")

    def __init__(self, key: str, path: str, st: os.stat_result, body: bytes) -> None:
        self.key, self.body, self.size = key, body, st.st_size
        self.file = identity(st)            # which file: a path may come to name another
        self.mtime, self.etag, self.modified = st.st_mtime, etag(st), last_modified(st)
        # typed by the name in its URL, as nginx does (a link's, not its target's); a
        # directory's index by its own
        self.ctype = content_type(path if key.endswith("/") else unquote(key))
        self.checked = time.monotonic()
        self.rechecking = False             # CacheMiss is looking at the file again
        validators = [("etag", self.etag), ("last-modified", self.modified)]
        self.ok = Prepared(200, prepare_head([("content-type", self.ctype),
                                              ("content-length", str(len(body))),
                                              ("accept-ranges", "bytes"), *validators]), body)
        self.not_modified = Prepared(304, prepare_head(validators))


_CONDITIONS = {b"if-match": 0, b"if-unmodified-since": 1, b"if-none-match": 2,
               b"if-modified-since": 3, b"range": 4, b"if-range": 5}


def conditions(req: Any) -> list[str | None]:
    """If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since, Range and If-Range, in
    one pass over the headers (most requests have none of them: this is on every cache hit)."""
    found: list[str | None] = [None] * len(_CONDITIONS)
    for name, value in req.headers:
        i = _CONDITIONS.get(name)
        if i is not None and found[i] is None:
            found[i] = value.decode("latin-1")
    return found


def answer(req: Any, entry: Entry, body: Any = None) -> None:
    """Answer a GET or HEAD for a known file: 412, 304, 206, 416 or 200 (``body`` for files
    that are not in memory: a FileBody factory ``body(offset, count)``)."""
    match, unmodified_since, none_match, modified_since, wanted, if_range = conditions(req)
    if (match is not None or unmodified_since is not None) and precondition_failed(
            match, unmodified_since, entry.etag, entry.mtime):
        req.respond(responses.error(412))
        return
    if (none_match is not None or modified_since is not None) and is_not_modified(
            none_match, modified_since, entry.etag, entry.mtime):
        req.respond(entry.not_modified)
        return
    if wanted is None:
        if body is None:
            req.respond(entry.ok)
            return
    elif if_range not in (None, entry.etag, entry.modified):
        wanted = None                        # the client's copy is stale: send it all
    span = byte_range(wanted, entry.size)
    if span == UNSATISFIABLE:
        req.respond(responses.range_not_satisfiable(entry.size))
        return
    headers = [("etag", entry.etag), ("last-modified", entry.modified)]
    if span is not None:
        first, last = span
        part = (body(first, last - first + 1) if body is not None
                else entry.body[first:last + 1])
        req.respond(responses.partial_content(part, first, last, entry.size, entry.ctype,
                                              headers))
    elif body is not None:
        req.respond(Response(200, body(0, entry.size), [("accept-ranges", "bytes"), *headers],
                             entry.ctype))
    else:
        req.respond(entry.ok)


def failed(stage: Any, ev: Any) -> None:
    """Handling ``ev`` raised: counted and logged as the runtime counts a handler's error
    (``Stage.failed``), and a request answered 500 at once, where it would otherwise wait for
    the response timeout. The caller goes on with the rest of its batch."""
    stage.failed(f"{ev!r}\n{traceback.format_exc().rstrip()}")
    if not isinstance(ev, _Loaded):
        # (a second answer to a request answered already is dropped by its connection; one
        # whose connection itself fails has nobody left to tell)
        with contextlib.suppress(Exception):
            ev.respond(responses.server_error())


def forward(sink: Any, req: Any) -> None:
    """Pass ``req`` on; a stage that refuses it (overload) has it answered 503 at once."""
    try:
        sink.enqueue(req)
    except seda.SinkError:
        req.respond(responses.service_unavailable())


class HttpRecv:
    """Sends each request to the application mounted at the longest matching prefix, or to
    the page cache. With files to serve, an application mounted at / gets what no file
    answers (through CacheMiss) and every request that is not a GET or HEAD.

    Not a stage of its own: the HTTP stage calls ``enqueue`` as it dispatches each request,
    on the loop thread. A prefix match is too little work to be worth a hop (the thesis's
    Combine, 3.3.2); the stage a request is routed to still decides whether it takes it, and
    a refusal is answered 503 by the HTTP stage."""

    def __init__(self, routes: list[tuple[str, Any]], cache: Any = None) -> None:
        self.root = dict(routes).get("/")
        static = cache is not None
        self.root_app = self.root if static else None
        # longest prefix first, each with the form a path below it starts with
        self.routes = [(prefix, prefix.rstrip("/") + "/", sink)
                       for prefix, sink in sorted(routes, key=lambda r: -len(r[0]))
                       if not (static and prefix == "/")]
        self.cache = cache

    def enqueue(self, req: Any) -> None:
        path = req.path
        if path == "*":                      # OPTIONS *: a question about the server itself
            if self.root is not None:        # which the application at / knows best
                self.root.enqueue(req)
            else:
                req.respond(Response(200 if req.method == "OPTIONS" else 400, b"",
                                     [("allow", "GET, HEAD, OPTIONS")]))
            return
        for prefix, below, sink in self.routes:
            if path == prefix or path.startswith(below):
                sink.enqueue(req)
                return
        if self.root_app is not None and req.method not in _GET_HEAD:
            self.root_app.enqueue(req)
        elif self.cache is not None:
            self.cache.enqueue(req)
        else:
            req.respond(responses.not_found())


class _Loaded:
    """CacheMiss -> PageCache: a file read from disk, to keep."""

    __slots__ = ("entry",)

    def __init__(self, entry: Entry) -> None:
        self.entry = entry


class _Recheck(_Loaded):
    """PageCache -> CacheMiss: has this cached file changed?"""


class _Fresh(_Loaded):
    """CacheMiss -> PageCache: the file is as cached at ``checked`` (when CacheMiss looked);
    trust the entry for another period from then."""

    __slots__ = ("checked",)

    def __init__(self, entry: Entry, checked: float) -> None:
        super().__init__(entry)
        self.checked = checked


class _Gone(_Loaded):
    """CacheMiss -> PageCache: the file is no longer there (or no longer ours to serve)."""


class _Due(_Loaded):
    """HTTP stage -> PageCache: this file's ready answer is due for its recheck (and answers
    on meanwhile)."""


class PageCacheStage(seda.EventHandler):
    """Answers hits from memory, hits before misses and short before long in each batch (SCF,
    thesis 6.1.1); misses and stale entries go to CacheMiss.

    Every cached file's 200 answer is also published in ``answers`` (target -> ReadyAnswer),
    good until the file is due for a recheck: the HTTP stage answers plain GETs from it and
    never sends them here. What it served is credited to the replacement policy when the file
    is renewed or reloaded, and when the policy would evict it (a popular file is served from
    its answer almost only: it would look unused); eviction takes the answer away with the
    entry."""

    def __init__(self, options: Options, answers: dict[bytes, ReadyAnswer]) -> None:
        self.options, self.answers = options, answers
        self.cache = PageCache(options.cache_bytes, options.cache_policy, options.max_entry,
                               on_remove=self._unpublish, served=self._served)
        self.root: RootDir | None = None       # (open_cached looks beneath it)

    def init(self, ctx: Any) -> None:
        self.miss = ctx.runtime.sink("haboob.miss")
        self.stage, self.own = ctx.stage, ctx.stage.sink
        if not self.options.allow_outside:
            self.root = RootDir(self.options.root)  # type: ignore[arg-type]  # static: set

    def destroy(self) -> None:
        if self.root is not None:
            self.root.close()

    def _unpublish(self, key: str) -> ReadyAnswer | None:
        # A cache key is a request's raw path, so it equals the raw target of exactly the plain
        # requests (no query) that the slow path would answer with this entry.
        return self.answers.pop(key.encode("latin-1"), None)

    def _served(self, key: str) -> int:
        """Requests the entry's answer served since last asked (see PageCache's ``served``)."""
        ready = self.answers.get(key.encode("latin-1"))
        if ready is None:
            return 0
        hits, ready.hits = ready.hits, 0
        return hits

    def _keep(self, entry: Entry) -> None:
        """A file read from disk: cache it and publish its answer."""
        served = self._unpublish(entry.key)
        if self.cache.put(entry.key, entry, entry.size):
            self._publish(entry, served)

    def _renew(self, entry: Entry, checked: float) -> None:
        """The file had not changed when looked at, at ``checked``: trust the entry, and its
        ready answer, another period from then."""
        entry.checked, entry.rechecking = checked, False
        self._publish(entry, self._unpublish(entry.key))

    def _publish(self, entry: Entry, served: ReadyAnswer | None) -> None:
        """Publish the entry's answer until its next recheck, and for one period more while
        the first request past it has it rechecked (``_Due``): as ``_stale`` serves the entry,
        without the request coming here. Credit what the last answer served."""
        recheck = self.options.recheck
        self.answers[entry.key.encode("latin-1")] = ReadyAnswer(
            entry.ok, entry.checked + recheck,
            renew=functools.partial(self.own.enqueue_lossy, _Due(entry)), grace=recheck)
        if served is not None:
            self.cache.credit(entry.key, served.hits)

    def _open_cached(self, key: str, now: float) -> tuple[int, os.stat_result, str] | None:
        """``open_cached`` for ``key``, beneath the root made sure of once per batch (``now``)."""
        options = self.options
        return open_cached(options.root, key, allow_outside=options.allow_outside,
                           root_fd=self.root.at(now) if self.root is not None else None)

    def _load_nowait(self, key: str, now: float) -> Entry | None:
        """A file missing from the cache, read here if the kernel has its path and its pages
        in its caches (nothing here waits for the disk): no hop to CacheMiss's threads and
        back. None when it has not, or for anything but a regular file small enough to keep:
        CacheMiss then takes the request."""
        opened = self._open_cached(key, now)
        if opened is None:
            return None
        fd, st, path = opened
        try:
            body = (read_nowait(fd, st.st_size, 0) if st.st_size <= self.options.max_entry
                    else None)
        except OSError:
            body = None
        finally:
            os.close(fd)
        if body is None or len(body) != st.st_size:
            return None
        entry = Entry(key, path, st, body)
        self._keep(entry)
        return entry

    def _unchanged_nowait(self, entry: Entry, now: float) -> bool:
        """Whether a cached file is still the one cached, if the kernel can tell from its
        caches; False if it cannot, or the file changed (CacheMiss then looks)."""
        opened = self._open_cached(entry.key, now)
        if opened is None:
            return False
        fd, st, _ = opened
        os.close(fd)
        return identity(st) == entry.file and etag(st) == entry.etag

    def _stale(self, entry: Entry, now: float) -> Entry | None:
        """An entry due for its recheck: look here if that needs no disk, else ask CacheMiss
        once and serve the entry meanwhile for at most one more period, so that a popular
        file's recheck is one stat, not every request of that moment queueing for the disk.
        Past that (or with recheck 0), None: the request waits for the disk."""
        if not entry.rechecking and self._unchanged_nowait(entry, now):
            self._renew(entry, now)
            return entry
        if now - entry.checked > 2 * self.options.recheck:
            return None
        if not entry.rechecking:
            entry.rechecking = self.miss.enqueue_lossy(_Recheck(entry))
        return entry if entry.rechecking else None

    def handle_events(self, events: list) -> None:
        # Each event is handled on its own (a try each, free in Python 3.11 until it raises):
        # one that raises is answered 500 and its batch-mates are still answered, at once.
        hits, now, cache = [], time.monotonic(), self.cache
        for ev in events:
            try:
                kind = type(ev)
                if kind is _Loaded:
                    self._keep(ev.entry)
                    continue
                if kind is _Fresh or kind is _Gone or kind is _Due:
                    held = cache.entries.get(ev.entry.key)
                    if held is not None and held[0] is ev.entry:   # not replaced meanwhile
                        if kind is _Fresh:
                            self._renew(ev.entry, ev.checked)
                        elif kind is _Gone:
                            cache.remove(ev.entry.key)
                        elif now - ev.entry.checked > self.options.recheck:  # (not renewed)
                            self._stale(ev.entry, now)
                    continue
                if ev.method not in _GET_HEAD:
                    ev.respond(responses.method_not_allowed(_GET_HEAD))
                    continue
                entry = cache.get(ev.path)
                if entry is not None and now - entry.checked > self.options.recheck:
                    entry = self._stale(entry, now)
                if entry is None:
                    entry = self._load_nowait(ev.path, now)
                if entry is None:
                    forward(self.miss, ev)
                else:
                    hits.append((entry.size, entry, ev))
            except Exception:
                failed(self.stage, ev)
        if len(hits) > 1:
            hits.sort(key=lambda h: h[0])
        for _, entry, req in hits:
            try:
                answer(req, entry)
            except Exception:
                failed(self.stage, req)


class CacheMiss(seda.EventHandler):
    """Resolves, stats and reads files (blocking calls: this stage has its own pool)."""

    def __init__(self, options: Options, fallback: Any = None) -> None:
        self.options, self.fallback = options, fallback

    def init(self, ctx: Any) -> None:
        self.stage = ctx.stage
        self.cache = ctx.runtime.sink("haboob.cache")
        self.closer = ctx.runtime.sink("haboob.close")

    def handle_event(self, req: Any) -> None:
        if type(req) is _Recheck:
            self._recheck(req.entry)
            return
        try:
            self._serve(req)
        except Exception:
            failed(self.stage, req)

    def _serve(self, req: Any) -> None:
        options = self.options
        try:
            kind, path = resolve(options.root, req.path, allow_outside=options.allow_outside)
        except Refused as refusal:
            if refusal.status == 404 and self.fallback is not None:
                forward(self.fallback, req)
            else:
                req.respond(responses.not_found() if refusal.status == 404
                            else responses.forbidden())
            return
        if kind == "redirect":
            location = path + ("?" + req.query if req.query else "")
            req.respond(responses.redirect(location, permanent=True))
            return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            req.respond(responses.not_found())
            return
        # The descriptor is closed here, whatever happens, unless an answer that carries it
        # went out: then haboob.close closes it once sent (or abandoned with its connection).
        handed = False
        try:
            st = os.fstat(fd)
            if st.st_size > options.max_entry:   # too big to keep: sendfile from it
                sending = []
                head = req.method == "HEAD"

                def body(offset: int, count: int) -> FileBody:
                    if head:
                        # no byte of it is sent: closed here, and nothing to tell haboob.close
                        # (an answer that went unsent would, and it would close it twice)
                        return FileBody(fd, offset, count)
                    sending.append(True)
                    return FileBody(fd, offset, count, self.closer, fd)

                answer(req, Entry(req.path, path, st, b""), body)
                handed = bool(sending)           # (not so for 304, 416 and HEAD)
                return
            data = os.pread(fd, st.st_size, 0)
        finally:
            if not handed:
                os.close(fd)
        entry = Entry(req.path, path, st, data)
        self.cache.enqueue_lossy(_Loaded(entry))
        answer(req, entry)


    def _recheck(self, entry: Entry) -> None:
        """Tell PageCache whether a cached file is unchanged, changed (read it again) or
        gone: the same resolution as a request's, so a file moved out of reach goes too."""
        options, looked = self.options, time.monotonic()
        try:
            kind, path = resolve(options.root, entry.key, allow_outside=options.allow_outside)
            st = os.stat(path)
        except (Refused, OSError):
            kind = "gone"
        if kind != "file" or st.st_size > options.max_entry:
            self.cache.enqueue_lossy(_Gone(entry))
        elif identity(st) == entry.file and etag(st) == entry.etag:
            self.cache.enqueue_lossy(_Fresh(entry, looked))
        else:
            try:
                with open(path, "rb") as f:
                    fresh = Entry(entry.key, path, os.fstat(f.fileno()), f.read())
            except OSError:
                self.cache.enqueue_lossy(_Gone(entry))
                return
            self.cache.enqueue_lossy(_Loaded(fresh))


class Closer(seda.EventHandler):
    """Closes descriptors of uncached files once their response is sent (WriteDone)."""

    def handle_event(self, ev: Any) -> None:
        if type(ev) is WriteDone:
            os.close(ev.tag)


def served_as(app: Any, interface: str) -> str:
    """How to serve ``app``: "asgi" (3), "asgi2" or "wsgi". As ``interface`` says ("asgi3" is
    uvicorn's name for "asgi"), or (auto) ASGI 3 or 2 as uvicorn tells them apart, and WSGI
    for any other callable (which uvicorn would take for ASGI 2, but it never guesses WSGI)."""
    if interface == "auto":
        return "asgi" if is_asgi(app) else "asgi2" if is_asgi2(app) else "wsgi"
    return "asgi" if interface == "asgi3" else interface


def add_app(rt: seda.Runtime, i: int, prefix: str, app: Any, options: Options) -> Any:
    """The stage of one application, WSGI on a thread pool or ASGI on an asyncio loop, with
    the same admission; returns its sink."""
    name = f"haboob.app{i}:{prefix}"
    kind = served_as(app, options.interface)
    if kind != "wsgi":
        if kind == "asgi2":
            app = from_asgi2(app)
        return mount_asgi(rt, app, name=name, root_path=prefix, tasks=options.tasks,
                          predicate=admission(options), server_name=options.host,
                          server_port=options.port, lifespan=options.lifespan,
                          loop_factory=loop_factory(options.loop),
                          ws_max_size=options.ws_max_size,
                          ws_ping_interval=options.ws_ping_interval,
                          ws_ping_timeout=options.ws_ping_timeout, proxies=options.proxies())
    return mount(rt, app, name=name, script_name=prefix,
                 threads=ThreadPoolController(max=options.threads, queue_threshold=4),
                 predicate=admission(options), server_name=options.host,
                 server_port=options.port, underscore_headers=options.underscore_headers,
                 proxies=options.proxies(), multiprocess=options.workers > 1)


def build(rt: seda.Runtime, options: Options) -> Any:
    """Add Haboob's stages to ``rt`` and listen; returns the listener."""
    routes, fallback = [], None
    for i, (prefix, app) in enumerate(options.apps):
        sink = add_app(rt, i, prefix, app, options)
        routes.append((prefix, sink))
        if prefix == "/":
            fallback = sink
    if options.status:
        status = add_status(rt, SERVICE, share_dir=options.status_dir)
        if options.status_bind is None:
            routes.append((PREFIX.rstrip("/"), status.sink))
        else:                           # plain HTTP, for a private address
            status.serve(options.status_bind, reuse_port=options.reuse_port)
    static = options.root is not None
    answers: dict[bytes, ReadyAnswer] | None = {} if static else None
    if static:
        rt.add_stage("haboob.close", Closer(), blocking=False)
        rt.add_stage("haboob.miss", CacheMiss(options, fallback),
                     threads=ThreadPoolController(max=options.threads, queue_threshold=4),
                     batch=1)
        rt.add_stage("haboob.cache", PageCacheStage(options, answers), blocking=False, batch=256)
    log = None
    if options.access_log is not None:
        log = rt.add_stage("haboob.log", AccessLog(options.access_log), batch=256).sink
    recv = HttpRecv(routes, rt.sink("haboob.cache") if static else None)
    return serve(rt, (options.host, options.port), recv, log=log,
                 answers=answers, limits=options.limits, ssl_context=options.ssl_context,
                 reuse_port=options.reuse_port)
