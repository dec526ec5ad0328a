"""Arashi's stage graph on a runtime (thesis 6.3, Fig. 43): mail in,

    seda.io (listen, read) -> arashi.smtp -> arashi.delivery (threads, database pool)
                                          <-                -> seda.io write

and with ``redis``, mail accepted by any node is stored by any node (``cluster.py``):

    arashi.delivery -> arashi.store (a cluster stage on Redis Streams; threads, database pool)

and, with ``web_bind``, the web pages (``router.py``): one stage per request type

    seda.http -> arashi.http -> arashi.{login,logout,folders,messages,show,search,act} (threads)

``build`` adds them to a runtime that has not started and listens; both sides share the store
and its connection pool.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

import seda
from seda.control import QueueThreshold
from seda.io import SocketLayer, bind_socket

from .cluster import add_store_stage
from .db import DatabaseError, Pool, database_url, open_pool
from .delivery import Delivery
from .events import DELIVERY, RECEIVER
from .migrations import LATEST, migrate, version
from .receiver import MAX_CONNECTIONS, SMTPReceiver
from .router import build_web
from .sessions import LIFETIME, Sessions
from .smtp import Limits
from .store import MailStore
from .web import Web


def default_domains() -> tuple[str, ...]:
    """``localhost`` and this machine's host name: the mail we take when no --domain is given."""
    names = ["localhost"]
    host = socket.gethostname().lower()
    if host and host not in names:
        names.append(host)
    return tuple(names)


@dataclass(frozen=True)
class Options:
    data: Path | None = None                          # the data directory, or
    url: str | None = None                            # a database URL
    smtp_bind: tuple[str, int] = ("127.0.0.1", 2525)
    domains: tuple[str, ...] = field(default_factory=default_domains)
    hostname: str = field(default_factory=socket.getfqdn)   # in the greeting
    limits: Limits = field(default_factory=Limits)
    timeout: float = 300.0                            # seconds between commands
    data_timeout: float = 180.0                       # seconds between bytes of a message
    max_connections: int = MAX_CONNECTIONS            # SMTP connections at once; past: 421
    delivery_threads: int = 4                         # and as many database connections
    delivery_queue: int = 1000                        # questions waiting; past it: 451
    web_bind: tuple[str, int] | None = None           # serve the web pages here (None: not)
    web_threads: int = 8                              # most threads per request type's stage
    target_p90: float | None = None                   # seconds: admission control per stage
    class_cookie: str | None = None                   # with target_p90: request class 0-9 from it
    admission: str = "bound"                          # with target_p90: overload.POLICIES
    admission_at: str = "stage"                       # or "front": one stage, one predicate
    degrade: bool = False                             # with target_p90: degrade.py
    session_lifetime: float = LIFETIME                # seconds a session lives unused
    reuse_port: bool = False                          # a worker of several (serve --workers)
    status_dir: str | None = None                     # the workers' shared status snapshots
    redis: str | None = None                          # share delivery with other nodes here
    claim_idle: float = 30.0                          # with redis: a dead node's mail waits so


@dataclass
class Service:
    """What ``build`` made: the SMTP address, the store and its pool (close it after the
    runtime has stopped)."""

    smtp: tuple[str, int]
    store: MailStore
    pool: Pool
    web: tuple[str, int] | None = None

    def close(self) -> None:
        self.pool.close()


def open_store(options: Options) -> tuple[Pool, MailStore]:
    """The store of an initialised database, brought up to the latest schema; DatabaseError
    when it was never initialised."""
    url = database_url(options.data, options.url)
    if options.data is not None and not Path(options.data).is_dir():
        raise DatabaseError(f"{options.data} is no data directory (make one: arashi init DIR)")
    size = options.delivery_threads * (2 if options.redis else 1) + 1
    if options.web_bind is not None:
        size += options.web_threads
    pool = open_pool(url, size=size)
    try:
        if version(pool) == 0:
            raise DatabaseError(f"{options.data} is not initialised (run: arashi init DIR)"
                                if options.data is not None else "the database is not "
                                "initialised (run: arashi init --db URL)")
        if version(pool) < LATEST:
            migrate(pool)
    except BaseException:
        pool.close()
        raise
    return pool, MailStore(pool)


def build(rt: seda.Runtime, options: Options) -> Service:
    """Add the mail-in stages to ``rt`` and listen for SMTP. Raises DatabaseError or OSError
    (one line each) when the store cannot be opened or the address bound."""
    pool, store = open_store(options)
    try:
        try:
            sock = bind_socket(options.smtp_bind, reuse_port=options.reuse_port)
        except OSError as exc:
            host, port = options.smtp_bind
            raise OSError(f"cannot listen for SMTP on {host}:{port}: "
                          f"{exc.strerror or exc}") from None
        try:
            if options.redis is not None:
                add_store_stage(rt, store, options.redis, options.delivery_threads,
                                options.delivery_queue, options.claim_idle)
            rt.add_stage(DELIVERY, Delivery(store), threads=options.delivery_threads, batch=1,
                         predicate=QueueThreshold(options.delivery_queue))
            receiver = SMTPReceiver(options.hostname, frozenset(options.domains),
                                    options.limits, options.timeout, options.data_timeout,
                                    options.max_connections)
            stage = rt.add_stage(RECEIVER, receiver, blocking=False, batch=256)
            SocketLayer.of(rt).listen(options.smtp_bind, stage.sink, sock=sock,
                                      overflow="close")
        except BaseException:
            sock.close()
            raise
        web = None
        if options.web_bind is not None:
            site = Web(store, Sessions(pool, options.session_lifetime))
            try:
                listener = build_web(rt, site, options.web_bind, threads=options.web_threads,
                                     target_p90=options.target_p90,
                                     class_cookie=options.class_cookie,
                                     policy=options.admission,
                                     front=options.admission_at == "front",
                                     degrade=options.degrade,
                                     reuse_port=options.reuse_port,
                                     status_dir=options.status_dir)
            except OSError as exc:
                host, port = options.web_bind
                raise OSError(f"cannot listen for HTTP on {host}:{port}: "
                              f"{exc.strerror or exc}") from None
            web = listener.address[:2]
    except BaseException:
        pool.close()
        raise
    return Service(sock.getsockname()[:2], store, pool, web)
