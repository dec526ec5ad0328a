"""Stage queues that span machines, on Redis Streams (the thesis's *Replicate* past one host).

``rt.add_stage(name, handler, queue=RedisQueue(url, codec=...))``: the stage's events live in
a Redis stream, every node running the stage consumes it as one group, and a node that dies
loses nothing (docs/cluster.md). Needs the ``cluster`` extra (``redis``, ``msgpack``).
"""

from .codec import Codec, DecodeError, EncodeError
from .delivery import Delivery, deliveries, delivery
from .pool import Unavailable
from .queue import RedisQueue

__all__ = ["Codec", "DecodeError", "Delivery", "EncodeError", "RedisQueue", "Unavailable",
           "deliveries", "delivery"]
