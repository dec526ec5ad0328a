"""seda: the staged event-driven architecture (Welsh, 2002) for Python services."""

from .config import ConfigError
from .imports import ImportObjectError, import_object
from .runtime import Runtime
from .signals import StagesInitialized, Stopping
from .sink import RejectedError, Sink, SinkError, StageClosedError
from .stage import EventHandler, Stage, StageContext, single_threaded

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
