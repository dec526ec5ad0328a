"""``bind_socket``: the socket every listener (and Haboob's supervisor) starts from."""

from __future__ import annotations

import contextlib
import os
import socket

import pytest

from seda.io import bind_socket


def test_a_bound_socket_has_a_real_port_and_the_options_asked_for():
    with bind_socket(("127.0.0.1", 0)) as sock:
        assert sock.family == socket.AF_INET and sock.getsockname()[1] > 0
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR)
        assert not sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT)
    with bind_socket(("127.0.0.1", 0), reuse_addr=False, reuse_port=True) as sock:
        assert not sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT)


def test_reuse_port_lets_two_sockets_share_an_address_and_its_absence_does_not():
    with bind_socket(("127.0.0.1", 0), reuse_port=True) as first:
        address = first.getsockname()
        with bind_socket(address, reuse_port=True) as second:
            assert second.getsockname() == address
        first.listen()
        with pytest.raises(OSError):
            bind_socket(address)


def test_an_ipv6_host_gets_an_ipv6_socket():
    try:
        sock = bind_socket(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    with sock:
        assert sock.family == socket.AF_INET6 and sock.getsockname()[0] == "::1"


def test_a_failed_bind_raises_and_leaves_no_socket_open():
    with bind_socket(("127.0.0.1", 0)) as taken:
        taken.listen()
        before = _open_sockets()
        with pytest.raises(OSError):
            bind_socket(taken.getsockname())
        assert _open_sockets() == before


def _open_sockets() -> int:
    """Sockets open in this process (the directory's own descriptor is gone when read)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_accept_gives_what_the_standard_accept_gives(timeout):
    """The bound socket's own accept (it skips remaking enums) answers as socket.accept does:
    a socket of the listener's family and type, blocking, and the peer's address."""
    with bind_socket(("127.0.0.1", 0)) as sock, socket.socket() as plain:
        plain.bind(("127.0.0.1", 0))
        for listener in (sock, plain):
            listener.listen()
            listener.settimeout(timeout)
        got = []
        for listener in (sock, plain):
            with socket.create_connection(listener.getsockname()) as client:
                accepted, peer = listener.accept()
                with accepted:
                    assert peer == client.getsockname()
                    assert accepted.getpeername() == peer
                    got.append((type(accepted), accepted.family, accepted.type,
                                accepted.proto, accepted.gettimeout(), accepted.getblocking()))
        assert got[0] == got[1] == (socket.socket, socket.AF_INET, socket.SOCK_STREAM,
                                    plain.proto, None, True)
