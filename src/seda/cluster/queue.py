"""``RedisQueue``: what a stage is given to keep its events in Redis Streams, across machines."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .codec import Codec

if TYPE_CHECKING:
    from .._stage import Stage
    from .pool import ClusterPool


class RedisQueue:
    """The events of a stage live in a Redis stream; every node that adds the stage with a
    ``RedisQueue`` of the same ``url`` and ``stream`` consumes it as one group::

        rt.add_stage("deliver", Deliver(), threads=4,
                     queue=seda.cluster.RedisQueue("redis://db:6379/0", codec=codec))

    - ``stream``: the stream's key (default ``seda:<stage name>``); ``group``: the consumer
      group (default the stage name);
    - ``claim_idle``: seconds after which an entry delivered to a node that stopped answering
      (died) is taken over by another; ``max_deliveries``: failed or lost deliveries after
      which an entry goes to the dead letters (``<stream>:dead``) instead;
    - ``codec``: how events are encoded (``seda.cluster.Codec``: plain values and registered
      dataclasses; never pickle);
    - ``partitions``: streams to spread the events over (default 16 with ``key=``, else 1);
    - ``refresh``: seconds between two looks at the backlog, which admission reads;
      ``block``: seconds a thread waits in Redis for new events before looking again;
      ``timeout``: seconds for a Redis command (connecting included) before it counts as down.
    """

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", *, stream: str | None = None,
                 group: str | None = None, claim_idle: float = 30.0, max_deliveries: int = 5,
                 codec: Codec | None = None, partitions: int | None = None,
                 refresh: float = 0.1, block: float = 0.1, timeout: float = 5.0) -> None:
        if claim_idle <= 0 or refresh <= 0 or block <= 0 or timeout <= block:
            raise ValueError("claim_idle, refresh and block are seconds > 0, and timeout must "
                             "exceed block")
        if not isinstance(max_deliveries, int) or max_deliveries < 1:
            raise ValueError(f"max_deliveries is an integer >= 1, got {max_deliveries!r}")
        if partitions is not None and (not isinstance(partitions, int) or partitions < 1):
            raise ValueError(f"partitions is an integer >= 1, got {partitions!r}")
        self.url, self.stream, self.group = url, stream, group
        self.claim_idle, self.max_deliveries = claim_idle, max_deliveries
        self.codec = codec if codec is not None else Codec()
        self.partitions, self.refresh, self.block, self.timeout = (partitions, refresh, block,
                                                                   timeout)

    def manager(self, stage: Stage, threads: int, key: Callable[[Any], Any] | None
                ) -> ClusterPool:
        """The thread manager that consumes the stream for ``stage`` (``Runtime.add_stage``)."""
        from .pool import ClusterPool

        return ClusterPool(stage, self, threads, key)

    def __repr__(self) -> str:
        return f"<RedisQueue {self.url} stream={self.stream!r}>"
