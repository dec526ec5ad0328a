"""The router's stage graph on a runtime (thesis 6.2.1, the socket layer's stages besides):

    seda.io (listen, read) -> gnutella.server -> gnutella.router -> connections (seda.io write)
                       gnutella.catcher -Dial-> gnutella.server -Up/Down-> gnutella.catcher

``build`` adds it to a runtime that has not started and listens; ``gnutella.status`` (the
/_seda/ page and metrics) joins it when ``options.status`` is set.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

import seda
from seda.control import QueueThreshold, ThreadPoolController
from seda.io import SocketLayer, bind_socket
from seda.status import add_status

from .addresses import Address, hostport
from .catcher import GnutellaCatcher
from .events import CATCHER, ROUTER, SERVER
from .hostcache import HostCache
from .neighbours import Neighbours
from .options import Options
from .router import GnutellaRouter
from .server import GnutellaServer

SERVICE = "gnutella"          # names the status page and prefixes its metrics


@dataclass(frozen=True)
class Service:
    """What ``build`` made: where it listens, where its status page is (if it has one)."""

    address: Address
    status: Address | None
    hosts: HostCache


def resolve(address: Address) -> Address:
    """A named host as an IP address (at start-up, once: the loop thread never resolves).
    Raises OSError naming the host when it cannot be resolved."""
    host, port = address
    try:
        ipaddress.ip_address(host)
        return address
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise OSError(f"cannot resolve {hostport(host, port)}: {exc.strerror}") from None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)     # IPv4 first: pongs carry it
    return infos[0][4][0], port


def build(rt: seda.Runtime, options: Options) -> Service:
    """Add the router's stages to ``rt`` and listen. Raises OSError when an address cannot be
    bound or a ``--peer`` resolved, or the host cache file cannot be read."""
    peers = [resolve(p) for p in options.peers]
    hosts = HostCache(options.hostcache_size, retry=options.retry)
    for peer in peers:
        hosts.pin(peer)
    if options.hostcache is not None:
        try:
            hosts.load(options.hostcache)
        except OSError as exc:
            raise OSError(f"cannot read the host cache {options.hostcache}: "
                          f"{exc.strerror}") from None
    sock = _bind(options.bind, "listen")  # first: the port (maybe 0) is needed below
    try:
        address = sock.getsockname()[:2]
        neighbours = Neighbours(options.max_connections)
        server = GnutellaServer(options, neighbours, hosts, address[1])
        router = GnutellaRouter(neighbours, hosts, port=address[1],
                                query_delay=options.query_delay, max_ttl=options.max_ttl,
                                max_forward=options.max_forward)
        threads = (1 if options.router_threads == 1
                   else ThreadPoolController(max=options.router_threads,
                                             thesis=options.thesis_controller))
        # A query that sleeps holds its whole batch: with a delay the router takes one
        # descriptor at a time, so that what waits behind a sleeping query is in the queue,
        # where the pool sees it and another thread takes it.
        rt.add_stage(ROUTER, router, threads=threads, batch=1 if options.query_delay else 64,
                     predicate=QueueThreshold(options.router_queue))
        stage = rt.add_stage(SERVER, server, blocking=False, batch=256)
        rt.add_stage(CATCHER, GnutellaCatcher(hosts, neighbours, outgoing=options.outgoing,
                                              own=address, path=options.hostcache),
                     blocking=False)
        SocketLayer.of(rt).listen(options.bind, stage.sink, sock=sock,
                                  max_pending=options.max_pending, overflow="close")
    except BaseException:
        sock.close()
        raise
    status = None
    if options.status is not None:
        page = add_status(rt, SERVICE, http=None)
        status = page.serve(options.status, sock=_bind(options.status, "serve the status page")
                            ).address[:2]
    return Service(address, status, hosts)


def _bind(address: Address, what: str) -> socket.socket:
    try:
        return bind_socket(address)
    except OSError as exc:
        raise OSError(f"cannot {what} on {hostport(*address)}: "
                      f"{exc.strerror or exc}") from None
