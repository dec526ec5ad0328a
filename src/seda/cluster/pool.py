"""The thread manager of a cluster stage: a node's threads consuming the stage's Redis streams.

Each thread reads a batch (the stage's ``batch``) as a consumer of the stage's group, runs the
handler, and only then acknowledges: at least once. An entry whose handler raised stays pending
and is delivered again; one that failed ``max_deliveries`` times goes to the dead letters with
its error. Entries left pending by a node that died are taken over (XAUTOCLAIM) once idle for
``claim_idle`` seconds; a keeper thread resets the idle time of the batches in hand here, so a
slow handler keeps its batch. With ``key=``, events go to partitions by key hash and a thread
holds a partition's lease while it handles a batch of it: one batch of a partition at a time
across all nodes, in stream order, failures retried before the entries behind them.

The queue's length is the streams' backlog, surveyed by the keeper every ``refresh`` seconds
and raised by this node's own enqueues in between: admission predicates read it on every
enqueue without a round trip to Redis.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
import traceback
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import redis

from .._sink import Cursor, RejectedError, connect, thread_cursor
from .._stage import EventHandler, Stage
from .codec import DecodeError
from .delivery import Delivery, current
from .streams import Entry, Streams

if TYPE_CHECKING:
    from .queue import RedisQueue

log = logging.getLogger("seda.cluster")
_LOG_EVERY = 1.0        # seconds between reports of Redis trouble, per stage
_ERROR_CHARS = 4000     # of a traceback kept with a failed entry
_FORGET_AFTER = 60.0    # seconds a consumer holding nothing must be idle to be forgotten


class Unavailable(RejectedError):
    """Redis could not be reached: the event was not enqueued (a rejection like any other, so
    a caller that sheds load on ``RejectedError`` sheds it here too)."""


def _error_text() -> str:
    """The exception being handled, as a dead letter carries it."""
    return traceback.format_exc()[-_ERROR_CHARS:]


class ClusterPool:
    """``threads`` threads of this node consuming one stage's streams in ``queue``'s group."""

    kind: ClassVar[str] = "cluster"
    local: ClassVar[bool] = True
    stamps: ClassVar[bool] = True      # enqueue times come from the entry ids: no Stamped

    def __init__(self, stage: Stage, queue: RedisQueue, threads: int,
                 key: Callable[[Any], Any] | None) -> None:
        if threads < 1:
            raise ValueError(f"stage {stage.name!r}: threads must be at least 1, got {threads}")
        self.stage, self.threads, self.key = stage, threads, key
        self.codec = queue.codec
        self.claim_idle, self.max_deliveries = queue.claim_idle, queue.max_deliveries
        self.refresh, self.block_ms = queue.refresh, max(1, int(queue.block * 1000))
        partitions = queue.partitions if queue.partitions is not None else (
            16 if key is not None else 1)
        if partitions > 1 and key is None:
            raise ValueError(f"stage {stage.name!r}: partitions spread events by key; give "
                             "key= too")
        self.partitions = partitions
        self.consumer = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self.client = redis.Redis.from_url(queue.url, socket_timeout=queue.timeout,
                                           socket_connect_timeout=queue.timeout)
        self.streams = Streams(self.client, queue.stream or f"seda:{stage.name}",
                               queue.group or stage.name, partitions, self.consumer)
        self.per_event = type(stage.handler).handle_events is EventHandler.handle_events
        self.live: set[threading.Thread] = set()
        self._keeper: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()         # the keeper and backoffs wait on it
        self._closing = False                  # stop(): threads leave once nothing is found
        self._abandon = False                  # discard(): threads leave after their batch
        self._in_hand: dict[int, tuple[str, list[bytes]]] = {}   # thread -> its batch
        self._leases: dict[str, int] = {}      # holder -> the partition it holds
        self._batches = 0                      # batches taken: Runtime.stop watches it move
        self._survey: dict[str, int] = {"backlog": 0, "pending": 0, "oldest_ms": 0,
                                        "dead_letters": 0, "consumers": 0}
        self._surveyed = 0.0                   # when (monotonic); 0: never
        # Enqueued here in all (the producers' count) and as of the start of the last survey
        # (the keeper's): what was added meanwhile is backlog + the difference. Reset to 0 after
        # a survey instead, an event added while the survey was on its way was in neither,
        # and admission let one more in than its limit.
        self._added = 0
        self._added_surveyed = 0
        self._counts = {"redelivered": 0, "dead_lettered": 0, "unavailable": 0}
        self._next_sweep = 0.0
        self._sweep_cursor = b"0-0"
        self._sweeping = threading.Lock()
        self._last_trouble = 0.0
        connect(stage.sink, self.put, self.put_many, self.__len__)

    # -- enqueue: from any thread of any node --------------------------------------------------

    def partition(self, ev: Any) -> int:
        """Where ``ev`` goes: by a hash of its key's encoding, the same on every node."""
        if self.partitions == 1:
            return 0
        assert self.key is not None                # partitions > 1 only with a key
        return zlib.crc32(self.codec.encode(self.key(ev))) % self.partitions

    def put(self, ev: Any) -> None:
        data = self.codec.encode(ev)
        try:
            self.streams.add(self.partition(ev), data)
        except redis.RedisError as exc:
            raise self._unavailable(exc) from exc
        self._added += 1

    def put_many(self, events: list[Any]) -> None:
        items = [(self.partition(ev), self.codec.encode(ev)) for ev in events]
        try:
            self.streams.add_many(items)
        except redis.RedisError as exc:
            raise self._unavailable(exc) from exc
        self._added += len(items)

    def _unavailable(self, exc: Exception) -> Unavailable:
        self._counts["unavailable"] += 1
        return Unavailable(f"stage {self.stage.name!r}: Redis is unavailable: {exc}")

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self.streams.ensure_group()
            self._look()
        except redis.RedisError as exc:
            raise RuntimeError(f"stage {self.stage.name!r}: cannot reach Redis: {exc}") from exc
        name = self.stage.name
        self._keeper = threading.Thread(target=self._keep, name=f"seda:{name}:keeper",
                                        daemon=True)
        self._keeper.start()
        for i in range(self.threads):
            thread = threading.Thread(target=self._work, args=(i,), daemon=True,
                                      name=f"seda:{name}:{i + 1}")
            self.live.add(thread)
            thread.start()

    def stop(self, deadline: float) -> bool:
        """Threads take what the streams hold until they find nothing, then leave; what is
        left at ``deadline`` stays in Redis for the other nodes (it is never dropped)."""
        self._closing = True
        me = threading.current_thread()
        for thread in list(self.live - {me}):
            thread.join(max(0.0, deadline - time.monotonic()))
        if self.live - {me}:
            return False
        self._stop.set()
        if self._keeper is not None and self._keeper is not me:
            self._keeper.join(max(0.1, deadline - time.monotonic()))
        self.client.close()
        return True

    def discard(self) -> int:
        """Past the deadline: threads leave after the batch in hand. Nothing is dropped: the
        events stay in their streams."""
        self._abandon = True
        return 0

    def unwrap_keys(self, unwrap: Callable[[Any], Any]) -> None:
        pass                          # events are never wrapped: see ``stamps``

    # -- observation ---------------------------------------------------------------------------

    def __len__(self) -> int:
        """The cluster-wide backlog as last surveyed, plus what this node added since."""
        return self._survey["backlog"] + self._added - self._added_surveyed

    def thread_count(self) -> int:
        return len(self.live)

    def concurrency(self) -> int:
        """Batches this node can handle at once: its threads (``ResponseTimeBound``'s capacity)."""
        return len(self.live)

    def idle(self) -> bool:
        """No batch in hand here and nothing in the streams (looked at afresh: ``Runtime.stop``
        waits on this to drain). Redis out of reach counts as idle: nothing more can be done."""
        if self._in_hand:
            return False
        if time.monotonic() - self._surveyed > 0.02:
            try:
                self._look()
            except redis.RedisError:
                return True
        return not len(self)

    def progress(self) -> int:
        return self._batches

    def info(self) -> dict[str, Any]:
        """What ``Runtime.stats()`` shows under ``cluster``: the streams' state as last
        surveyed and this node's own counts."""
        return {"stream": self.streams.base, "partitions": self.partitions,
                "consumer": self.consumer, **self._survey, **self._counts}

    # -- the keeper ----------------------------------------------------------------------------

    def _look(self) -> None:
        # taken before the survey: an event added while it is on its way counts twice until
        # the next one (admission refuses early, never late)
        added = self._added
        now_ms = int(time.time() * 1000)
        survey = self.streams.survey(now_ms, int(max(self.claim_idle, 3 * self.refresh) * 1000))
        self._survey, self._added_surveyed = survey, added
        self._surveyed = time.monotonic()

    def _keep(self) -> None:
        """Survey the streams every ``refresh`` s; keep batches and leases in hand ours; now
        and then forget the consumers of nodes long dead."""
        beat = self.claim_idle / 3
        next_beat = time.monotonic() + beat
        next_prune = time.monotonic() + _FORGET_AFTER
        while not self._stop.wait(self.refresh):
            try:
                self._look()
                now = time.monotonic()
                if now >= next_beat:
                    next_beat = now + beat
                    self._heartbeat()
                if now >= next_prune:
                    next_prune = now + _FORGET_AFTER
                    self.streams.prune(int(max(_FORGET_AFTER, 10 * self.claim_idle) * 1000))
            except redis.RedisError as exc:
                self._trouble(exc)

    def _heartbeat(self) -> None:
        ms = int(self.claim_idle * 1000)
        for stream, ids in list(self._in_hand.values()):
            self.streams.touch(stream, ids)
        for holder, partition in list(self._leases.items()):
            self.streams.renew(partition, holder, ms)

    def _trouble(self, exc: Exception) -> None:
        now = time.monotonic()
        if now - self._last_trouble >= _LOG_EVERY:
            self._last_trouble = now
            log.warning("stage %r: Redis: %s", self.stage.name, exc)

    # -- the consuming threads -----------------------------------------------------------------

    def _work(self, index: int) -> None:
        thread_cursor.set(Cursor(self.stage))
        holder = f"{self.consumer}/{index}"
        backoff = 0.05
        take = self._take_keyed if self.key is not None else self._take
        try:
            while not self._abandon:
                try:
                    found = take(index, holder)
                    backoff = 0.05
                except redis.ResponseError as exc:
                    if "NOGROUP" in str(exc):         # Redis lost its data: start afresh
                        self._recover(exc)
                        continue
                    self._trouble(exc)
                    found = False
                    self._stop.wait(backoff)
                except redis.RedisError as exc:
                    self._trouble(exc)
                    if self._closing:
                        break
                    self._stop.wait(backoff)
                    backoff = min(1.0, backoff * 2)
                    continue
                if not found and self._closing:
                    break
        finally:
            self.live.discard(threading.current_thread())

    def _recover(self, exc: Exception) -> None:
        self._trouble(exc)
        try:
            self.streams.ensure_group()
        except redis.RedisError:
            self._stop.wait(0.1)

    def _take(self, index: int, holder: str) -> bool:
        """One batch: entries a dead node left (when a sweep is due), else new ones."""
        stream = self.streams.names[0]
        entries: list[Entry] = []
        if time.monotonic() >= self._next_sweep and self._sweeping.acquire(blocking=False):
            try:
                cursor, entries = self.streams.claim(
                    stream, int(self.claim_idle * 1000), self._sweep_cursor, self.stage.batch)
                self._sweep_cursor = cursor
                if cursor == b"0-0":
                    self._next_sweep = time.monotonic() + self.claim_idle / 2
            finally:
                self._sweeping.release()
        if not entries:
            entries = self.streams.read(stream, self.stage.batch,
                                        None if self._closing else self.block_ms)
        if not entries:
            return False
        self._run(index, entries)
        return True

    def _take_keyed(self, index: int, holder: str) -> bool:
        """One batch of the first partition, from a rotating start, that no one else holds:
        its pending entries first (a dead holder's, or ones that failed), else new ones."""
        n, ms = self.partitions, int(self.claim_idle * 1000)
        start = (index * 7 + self._batches) % n
        lengths = self.streams.lengths()
        for j in range(n):
            p = (start + j) % n
            if not lengths[p] or not self.streams.lease(p, holder, ms):
                continue
            self._leases[holder] = p
            try:
                stream = self.streams.names[p]
                entries = self.streams.claim(stream, 0, b"0-0", self.stage.batch)[1]
                if not entries:
                    entries = self.streams.read(stream, self.stage.batch, None)
                if entries:
                    self._run(index, entries)
            finally:
                del self._leases[holder]
                self.streams.release(p, holder)
            if entries:
                return True
        if not self._closing:
            self.streams.wait(self.block_ms)
        return False

    def _run(self, index: int, entries: list[Entry]) -> None:
        """Handle one batch and settle each entry: done, failed (to be retried) or dead."""
        self._batches += 1
        ready: list[Entry] = []
        for entry in entries:
            if entry.attempt > 1:
                self._counts["redelivered"] += 1
            if entry.data is None:
                continue                      # deleted while pending (acknowledged by claim)
            try:
                entry.event = self.codec.decode(entry.data)
            except DecodeError as exc:
                self._bury(entry, f"DecodeError: {exc}")
                continue
            if entry.attempt > self.max_deliveries:
                why = self.streams.last_error(entry.key) or (
                    f"delivered {entry.attempt - 1} times without an acknowledgement (the node "
                    "handling it died or stalled each time)")
                self._bury(entry, why)
                continue
            ready.append(entry)
        if not ready:
            return
        stream = ready[0].stream
        self._in_hand[index] = (stream, [e.id for e in ready])
        try:
            failed = self._handle(ready)
        finally:
            del self._in_hand[index]
        done = [e for e in ready if e.id not in failed]
        if done:
            self.streams.done(stream, [e.id for e in done],
                              [e.key for e in done if e.attempt > 1])
        retry: dict[str, str] = {}
        for entry in ready:
            error = failed.get(entry.id)
            if error is None:
                continue
            if entry.attempt >= self.max_deliveries:
                self._bury(entry, error)
            else:
                retry[entry.key] = error
        if retry:
            self.streams.failed(retry)

    @staticmethod
    def _delivery(entry: Entry) -> Delivery:
        return Delivery(entry.stream, entry.id.decode(), entry.attempt)

    def _again(self, entries: list[Entry]) -> bool:
        """Count one more delivery of ``entries`` if none has had its ``max_deliveries``."""
        if max(e.attempt for e in entries) >= self.max_deliveries:
            return False
        for entry in entries:
            entry.attempt += 1
        self._counts["redelivered"] += len(entries)
        return True

    def _bury(self, entry: Entry, error: str) -> None:
        self.streams.bury(entry, error)
        self._counts["dead_lettered"] += 1
        log.error("stage %r: entry %s goes to the dead letters after %d deliveries: %s",
                  self.stage.name, entry.key, entry.attempt, error.strip().splitlines()[-1])

    def _handle(self, entries: list[Entry]) -> dict[bytes, str]:
        """Run the handler on the batch; the ids of the entries it failed on, with the error.
        A handler of single events fails event by event; one of whole batches, all at once.
        A key stage retries a failure at once, up to ``max_deliveries``, before the events
        behind it (which are of the same partition: order first)."""
        stage, handler = self.stage, self.stage.handler
        events = [e.event for e in entries]
        failed: dict[bytes, str] = {}
        ends: list[float] = []
        retry = self.key is not None
        start, began = time.perf_counter(), time.time()
        try:
            if self.per_event:
                current.batch = [self._delivery(e) for e in entries]
                for entry in entries:
                    while True:
                        current.event = self._delivery(entry)
                        try:
                            handler.handle_event(entry.event)
                            break
                        except Exception:
                            stage.failed()
                            if not (retry and self._again([entry])):
                                failed[entry.id] = _error_text()
                                break
                    ends.append(time.time())
            else:
                while True:
                    current.batch = [self._delivery(e) for e in entries]
                    try:
                        handler.handle_events(events)
                        break
                    except Exception:
                        stage.failed()
                        if not (retry and self._again(entries)):
                            error = _error_text()
                            failed = {e.id: error for e in entries}
                            break
        finally:
            current.batch = current.event = None
        end = time.time()
        stage.service_times.append((time.perf_counter() - start) / len(entries))
        with self._lock:
            stage.processed += len(entries)
        if stage.observers:
            # the wait and response of each event, from its entry id (Redis's clock) to this
            # node's: across nodes, as good as the clocks' agreement
            borns = [e.born for e in entries]
            ends = ends or [end] * len(entries)
            starts = [began, *ends[:-1]] if self.per_event else [began] * len(entries)
            waits = [max(0.0, s - b) for s, b in zip(starts, borns, strict=True)]
            responses = [max(0.0, t - b) for t, b in zip(ends, borns, strict=True)]
            for observer in stage.observers:
                observer(events, waits, responses)
        return failed
