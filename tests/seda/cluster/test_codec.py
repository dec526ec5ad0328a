"""The cluster codec: plain values and registered dataclasses round-trip; nothing else crosses,
and decoding builds nothing it was not told about."""

from __future__ import annotations

import dataclasses
import pickle

import msgpack
import pytest

from seda.cluster import Codec, DecodeError, EncodeError


@dataclasses.dataclass
class Mail:
    sender: str
    rcpt: list[str]
    body: bytes


@dataclasses.dataclass(frozen=True)
class Wrapped:
    mail: Mail
    attempt: int = 1


def test_plain_values_round_trip():
    codec = Codec()
    for value in (None, True, 3, -2**63, 2.5, "é", b"\x00\xff", [1, "a"], {"k": [b"v"]},
                  {1: "int keys too"}):
        assert codec.decode(codec.encode(value)) == value
    assert codec.decode(codec.encode((1, 2))) == [1, 2]        # tuples arrive as lists


def test_registered_dataclasses_round_trip_nested():
    codec = Codec(Mail, Wrapped)
    ev = Wrapped(Mail("a@x", ["b@y"], b"hi"), attempt=2)
    assert codec.decode(codec.encode(ev)) == ev
    assert codec.decode(codec.encode([ev, {"m": ev.mail}])) == [ev, {"m": ev.mail}]


def test_register_works_as_a_decorator_and_under_a_name():
    codec = Codec()

    @codec.register
    @dataclasses.dataclass
    class Ping:
        n: int

    assert codec.decode(codec.encode(Ping(1))) == Ping(1)
    other = Codec()
    other.register(Mail, name="mail")
    with pytest.raises(ValueError, match="already names"):
        other.register(Wrapped, name="mail")
    with pytest.raises(TypeError, match="only dataclasses"):
        other.register(dict)


def test_an_unregistered_or_unencodable_event_is_a_clear_error():
    codec = Codec()
    with pytest.raises(EncodeError, match=r"Mail\).*codec.register"):
        codec.encode(Mail("a", [], b""))
    with pytest.raises(EncodeError, match="object"):
        codec.encode({"x": object()})
    with pytest.raises(EncodeError):
        codec.encode(2**70)
    assert issubclass(EncodeError, TypeError)


def test_decoding_an_unknown_type_or_garbage_is_a_decode_error():
    data = Codec(Mail).encode(Mail("a", [], b""))
    with pytest.raises(DecodeError, match="not registered"):
        Codec().decode(data)
    with pytest.raises(DecodeError):
        Codec().decode(b"\xc1")                     # never used in msgpack
    with pytest.raises(DecodeError, match="extension type 7"):
        Codec().decode(msgpack.packb(msgpack.ExtType(7, b"")))


def test_a_pickle_is_not_loaded():
    """Pickled bytes are just bytes to msgpack: at worst garbage, never code run."""
    evil = pickle.dumps(Mail("a", [], b""))
    with pytest.raises(DecodeError):
        Codec(Mail).decode(evil)
