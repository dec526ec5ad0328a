"""Controllers and admission predicates (thesis 5.4 and chapter 7).

Stage knobs take a constant or a controller: ``threads=ThreadPoolController()``,
``batch=BatchingController()``, ``predicate=ResponseTimeController(0.1)``. Controllers run on the
runtime's control thread; admission predicates add one check per enqueue.
"""

from .batching import BatchingController
from .concurrency import AdaptiveConcurrency
from .degrade import Degrader
from .driver import Controller
from .queue_delay import QueueDelay
from .red import RED
from .response_bound import ResponseTimeBound
from .response_time import MulticlassResponseTimeController, ResponseTimeController
from .thread_pool import ThreadPoolController
from .threshold import QueueThreshold
from .token_bucket import TokenBucket

__all__ = [
    "RED",
    "AdaptiveConcurrency",
    "BatchingController",
    "Controller",
    "Degrader",
    "MulticlassResponseTimeController",
    "QueueDelay",
    "QueueThreshold",
    "ResponseTimeBound",
    "ResponseTimeController",
    "ThreadPoolController",
    "TokenBucket",
]
