"""The Gnutella descriptor codec on one core: descriptors parsed per second, and parsed and
forwarded (new TTL and hops), from a stream read in 4 KiB pieces, plain and deflated.

    python benchmarks/gnutella_codec.py [--count 20000] [--repeat 5]

The mix is the thesis's load (6.2.3: 15 % queries) with the rest split between pings, pongs,
query hits and pushes; queries carry a HUGE urn and a GGEP block, hits three results and a QHD,
as modern servents send them. The router's target (issue 15) is 100k descriptors/s routed on
one core; the codec should take a small part of that budget.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from gnutella.compression import Deflater, Inflater
from gnutella.descriptors import (
    QueryFlags,
    Result,
    encode_ping,
    encode_pong,
    encode_push,
    encode_query,
    encode_query_hit,
    new_guid,
)
from gnutella.extensions import GGEPExtension, encode_ggep
from gnutella.parser import DescriptorParser

READ = 4096


def traffic(count: int, seed: int = 1) -> bytes:
    rnd = random.Random(seed)
    servent = new_guid()
    ggep = encode_ggep([GGEPExtension("H", b"\x01" + bytes(range(1, 21)))])
    out = []
    for k in range(count):
        r = rnd.random()
        if r < 0.15:
            out.append(encode_query(f"artist {k % 97} song", flags=QueryFlags.GGEP_H,
                                    extensions=b"urn:sha1:PLSTHIPQGSSZTS5FJUPAKUZWUGYQYPFB\x1c"
                                    + ggep))
        elif r < 0.50:
            out.append(encode_ping(ttl=rnd.randint(1, 7)))
        elif r < 0.85:
            out.append(encode_pong(new_guid(), 6346, "10.1.2.3", k, 10 * k,
                                   ggep=encode_ggep([GGEPExtension("DU", b"\x10\x01")])))
        elif r < 0.95:
            results = [Result(i, 1 << 20, f"file {k} {i}.mp3") for i in range(3)]
            out.append(encode_query_hit(new_guid(), 6346, "10.1.2.4", 1000, results, servent,
                                        trailer=b"GTKG\x02\x1c\x19"))
        else:
            out.append(encode_push(servent, k, "10.1.2.5", 6346))
    return b"".join(out)


def pieces(data: bytes) -> list[bytes]:
    return [data[i:i + READ] for i in range(0, len(data), READ)]


def parse(reads: list[bytes]) -> int:
    parser, n = DescriptorParser(), 0
    for data in reads:
        n += len(parser.feed(data))
    return n


def parse_forward(reads: list[bytes]) -> int:
    parser, n = DescriptorParser(), 0
    for data in reads:
        for d in parser.feed(data):
            d.forward(d.ttl - 1, d.hops + 1)
            n += 1
    return n


def inflate_parse(reads: list[bytes]) -> int:
    parser, inflater, n = DescriptorParser(), Inflater(), 0
    for data in reads:
        for piece in inflater.decompress(data):
            n += len(parser.feed(piece))
    return n


def rate(fn, reads: list[bytes], count: int, repeat: int) -> float:
    """Median descriptors per second over ``repeat`` runs."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        assert fn(reads) == count
        samples.append(count / (time.perf_counter() - start))
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=20000, help="descriptors in the stream")
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    args = ap.parse_args()
    stream = traffic(args.count)
    deflated = Deflater().compress(stream)
    print(f"{args.count} descriptors, {len(stream) / args.count:.1f} bytes on average, "
          f"deflated to {len(deflated) / len(stream):.0%}")
    for name, fn, data in (("parse", parse, stream), ("parse + forward", parse_forward, stream),
                           ("inflate + parse", inflate_parse, deflated)):
        print(f"{name:>16}: {rate(fn, pieces(data), args.count, args.repeat):>12,.0f} /s")


if __name__ == "__main__":
    main()
