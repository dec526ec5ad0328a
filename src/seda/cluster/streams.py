"""The Redis side of one cluster stage: its streams, consumer group, dead letters and leases.

Every command the cluster queue sends is here, each method one round trip (a pipeline where
several commands must go together). Keys, for a stage whose stream is ``S``:

- ``S`` (one partition) or ``S:0`` .. ``S:N-1`` (``key=``): the events, one field ``d``;
- ``S:dead``: dead letters, the entry's data with its stream, id, attempts and error;
- ``S:errors``: a hash of the last error of each entry that failed and awaits a retry;
- ``S:lease:P``: who handles partition P now (``key=`` only), with an expiry;
- ``S:nodes``: a sorted set of the consumers seen, by the time they last reported.

A handled entry is acknowledged *and deleted*: one group reads each stream, so an entry it has
acknowledged is of no more use, and the stream's length is exactly the events not yet done (not
yet delivered, or delivered and in hand): the backlog admission control reads.
"""

from __future__ import annotations

from typing import Any

import redis

# Compare-and-set on a lease: only its holder renews or releases it.
_RENEW = """if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"""
# Forget a consumer (a node long gone) only if it holds nothing: its pending entries would be
# dropped from the group's pending list with it, and never delivered again.
_FORGET = """if #redis.call('xpending', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) == 0 then
  redis.call('xgroup', 'delconsumer', KEYS[1], ARGV[1], ARGV[2]) return 1 end return 0"""
# entries of ours that may lie among claimed ones: other threads' batches in hand
_IN_HAND = 4096
_RELEASE = """if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1]) end return 0"""


class Entry:
    """One stream entry taken for handling."""

    __slots__ = ("attempt", "data", "event", "id", "stream")

    def __init__(self, stream: str, id: bytes, data: bytes | None, attempt: int) -> None:
        self.stream = stream
        self.id = id
        self.data = data             # None: deleted while pending
        self.attempt = attempt       # deliveries so far, this one included
        self.event: Any = None       # decoded by the pool

    @property
    def born(self) -> float:
        """When it was added (Redis's clock, seconds since the epoch): the id says."""
        return int(self.id.split(b"-", 1)[0]) / 1000.0

    @property
    def key(self) -> str:
        return f"{self.stream}/{self.id.decode()}"


class Streams:
    """The commands of one stage's consumer ``consumer`` (a node's name) in group ``group``."""

    def __init__(self, client: redis.Redis, base: str, group: str, partitions: int,
                 consumer: str) -> None:
        # redis-py types replies as the union of every protocol version's shapes; RESP2's are read
        self.client: Any = client
        self.base, self.group, self.consumer = base, group, consumer
        self.names = [base] if partitions == 1 else [f"{base}:{i}" for i in range(partitions)]
        self.dead, self.errors, self.nodes = f"{base}:dead", f"{base}:errors", f"{base}:nodes"
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._forget = client.register_script(_FORGET)

    def ensure_group(self) -> None:
        """Create the group on every stream, reading from the start: events added before any
        node consumed are delivered too."""
        for name in self.names:
            try:
                self.client.xgroup_create(name, self.group, "0", mkstream=True)
            except redis.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    # -- producing -----------------------------------------------------------------------------

    def add(self, partition: int, data: bytes) -> None:
        self.client.xadd(self.names[partition], {b"d": data})

    def add_many(self, items: list[tuple[int, bytes]]) -> None:
        """All or none (MULTI/EXEC)."""
        pipe = self.client.pipeline(transaction=True)
        for partition, data in items:
            pipe.xadd(self.names[partition], {b"d": data})
        pipe.execute()

    # -- consuming -----------------------------------------------------------------------------

    def read(self, stream: str, count: int, block_ms: int | None) -> list[Entry]:
        """Up to ``count`` entries never delivered to the group, now ours."""
        reply = self.client.xreadgroup(self.group, self.consumer, {stream: ">"}, count=count,
                                       block=block_ms)
        if not reply:
            return []
        return [Entry(stream, id, fields.get(b"d") if fields else None, 1)
                for id, fields in reply[0][1]]

    def claim(self, stream: str, min_idle_ms: int, start: bytes, count: int
              ) -> tuple[bytes, list[Entry]]:
        """Take over up to ``count`` pending entries idle for ``min_idle_ms`` (a dead node's, or
        ones that failed), with how often each has been delivered; the cursor to go on from
        (``0-0`` once the pending list has been gone through)."""
        reply = self.client.xautoclaim(stream, self.group, self.consumer, min_idle_ms, start,
                                       count=count)
        cursor, claimed = reply[0], reply[1]
        gone = reply[2] if len(reply) > 2 else []      # Redis 7 lists entries deleted meanwhile
        entries = [Entry(stream, id, fields.get(b"d") if fields else None, 0)
                   for id, fields in claimed]
        if gone:                       # deleted while pending: nothing left to deliver
            self.client.xack(stream, self.group, *gone)
        if entries:
            counts = {p["message_id"]: p["times_delivered"] for p in self.client.xpending_range(
                stream, self.group, entries[0].id, entries[-1].id, len(entries) + _IN_HAND,
                consumername=self.consumer)}
            for entry in entries:
                entry.attempt = counts.get(entry.id, 1)
        return cursor, entries

    def touch(self, stream: str, ids: list[bytes]) -> None:
        """Reset the idle time of entries still in hand, so no other node takes them over."""
        self.client.xclaim(stream, self.group, self.consumer, 0, ids, justid=True)

    def done(self, stream: str, ids: list[bytes], retried: list[str]) -> None:
        """Acknowledge and delete handled entries (with the errors of retried ones)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.xack(stream, self.group, *ids)
        pipe.xdel(stream, *ids)
        if retried:
            pipe.hdel(self.errors, *retried)
        pipe.execute()

    def failed(self, errors: dict[str, str]) -> None:
        """Keep the error of each entry that failed, for its dead letter should it come to it."""
        self.client.hset(self.errors, mapping=errors)

    def last_error(self, key: str) -> str | None:
        error = self.client.hget(self.errors, key)
        return error.decode(errors="replace") if isinstance(error, bytes) else None

    def bury(self, entry: Entry, error: str) -> None:
        """Move an entry to the dead letters, with why; it is never delivered again."""
        pipe = self.client.pipeline(transaction=True)
        pipe.xadd(self.dead, {b"stream": entry.stream, b"id": entry.id,
                              b"attempts": entry.attempt, b"error": error,
                              b"d": entry.data or b""})
        pipe.xack(entry.stream, self.group, entry.id)
        pipe.xdel(entry.stream, entry.id)
        pipe.hdel(self.errors, entry.key)
        pipe.execute()

    def lengths(self) -> list[int]:
        """Entries not yet done, per stream (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        for name in self.names:
            pipe.xlen(name)
        return [n if isinstance(n, int) else 0 for n in pipe.execute(raise_on_error=False)]

    def wait(self, block_ms: int) -> None:
        """Return when an entry is added to any of the streams, or after ``block_ms`` (a key
        stage's nodes look for work partition by partition, and wait here when none has any)."""
        self.client.xread({name: "$" for name in self.names}, count=1, block=block_ms)

    # -- partitions (key=): one holder at a time -----------------------------------------------

    def lease(self, partition: int, holder: str, ms: int) -> bool:
        return bool(self.client.set(f"{self.base}:lease:{partition}", holder, nx=True, px=ms))

    def renew(self, partition: int, holder: str, ms: int) -> None:
        self._renew(keys=[f"{self.base}:lease:{partition}"], args=[holder, ms])

    def release(self, partition: int, holder: str) -> None:
        self._release(keys=[f"{self.base}:lease:{partition}"], args=[holder])

    def prune(self, idle_ms: int) -> int:
        """Remove from the group the consumers idle for ``idle_ms`` that hold nothing (nodes
        that died, their entries taken over): how many."""
        gone = 0
        for name in self.names:
            for consumer in self.client.xinfo_consumers(name, self.group):
                if consumer["idle"] >= idle_ms and consumer["pending"] == 0:
                    gone += self._forget(keys=[name], args=[self.group, consumer["name"]]) == 1
        return gone

    # -- observation ---------------------------------------------------------------------------

    def survey(self, now_ms: int, horizon_ms: int) -> dict[str, int]:
        """One round trip: the backlog (entries not yet done), those delivered and in hand, the
        age of the oldest, dead letters, and the consumers seen within ``horizon_ms`` (this one
        reports itself)."""
        pipe = self.client.pipeline(transaction=False)
        for name in self.names:
            pipe.xlen(name)
            pipe.xinfo_groups(name)
            pipe.xrange(name, "-", "+", count=1)
        pipe.xlen(self.dead)
        pipe.zadd(self.nodes, {self.consumer: now_ms})
        pipe.zremrangebyscore(self.nodes, 0, now_ms - 100 * horizon_ms)
        pipe.zcount(self.nodes, now_ms - horizon_ms, "+inf")
        replies: list[Any] = pipe.execute(raise_on_error=False)
        backlog = pending = 0
        oldest = now_ms
        for i in range(len(self.names)):
            length, groups, first = replies[3 * i: 3 * i + 3]
            backlog += length if isinstance(length, int) else 0
            if isinstance(groups, list):
                pending += sum(g["pending"] for g in groups
                               if g["name"] in (self.group, self.group.encode()))
            if isinstance(first, list) and first:
                oldest = min(oldest, int(first[0][0].split(b"-", 1)[0]))
        dead, consumers = replies[-4], replies[-1]
        return {"backlog": backlog, "pending": pending, "oldest_ms": max(0, now_ms - oldest),
                "dead_letters": dead if isinstance(dead, int) else 0,
                "consumers": consumers if isinstance(consumers, int) else 0}
