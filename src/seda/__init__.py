"""seda: the staged event-driven architecture (Welsh, 2002) for Python services."""

from ._imports import ImportObjectError, import_object
from ._runtime import Runtime
from ._signals import StagesInitialized, Stopping
from ._sink import RejectedError, Sink, SinkError, StageClosedError
from ._stage import EventHandler, Stage, StageContext, single_threaded
from .config import ConfigError

__all__ = [
    "ConfigError",
    "EventHandler",
    "ImportObjectError",
    "RejectedError",
    "Runtime",
    "Sink",
    "SinkError",
    "Stage",
    "StageClosedError",
    "StageContext",
    "StagesInitialized",
    "Stopping",
    "import_object",
    "single_threaded",
]
