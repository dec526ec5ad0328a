"""The public surface of seda, pinned (as trio's test_exports): what each public package
exports, and which modules are public at all. A change here is a change to the API: make it
on purpose, and say so in the docs."""

from __future__ import annotations

import importlib
import pkgutil

import seda

EXPORTS = {
    "seda": ["ConfigError", "EventHandler", "ImportObjectError", "RejectedError", "Runtime",
             "Sink", "SinkError", "Stage", "StageClosedError", "StageContext",
             "StagesInitialized", "Stopping", "import_object", "single_threaded"],
    "seda.cluster": ["Codec", "DecodeError", "Delivery", "EncodeError", "RedisQueue",
                     "Unavailable", "deliveries", "delivery"],
    "seda.control": ["RED", "AdaptiveConcurrency", "BatchingController", "Controller",
                     "Degrader", "MulticlassResponseTimeController", "QueueDelay",
                     "QueueThreshold", "ResponseTimeBound", "ResponseTimeController",
                     "ThreadPoolController", "TokenBucket"],
    "seda.io": ["Closed", "Connected", "Connection", "Failed", "FileDone", "FileLayer",
                "FileSegment", "Listener", "Packet", "Send", "SocketLayer", "TLSSession",
                "WriteDone", "bind_socket", "open_nowait", "read_nowait"],
    "seda.http": ["AsgiHandler", "BodyError", "BodyReader", "ClientDisconnected", "Dispatch",
                  "FileBody", "HttpRequest", "LifespanFailed", "Limits", "Logged", "Prepared",
                  "Proxies", "ReadyAnswer", "Response", "ServerProtocol", "StreamBody",
                  "WsgiHandler", "from_asgi2", "is_asgi", "is_asgi2", "mount", "mount_asgi",
                  "prepare_head", "responses", "serve"],
    "seda.model": ["JacksonNetwork", "LoadDependent", "MMm", "SimResult", "StationStats",
                   "simulate"],
    "seda.profile": ["to_dot"],
    "seda.status": ["PREFIX", "Status", "add_status", "forget_worker", "publish_supervisor",
                    "served_at"],
}


def test_each_public_package_exports_exactly_its_pinned_names():
    for name, pinned in EXPORTS.items():
        module = importlib.import_module(name)
        assert sorted(module.__all__) == sorted(pinned), name
        for export in pinned:
            assert getattr(module, export) is not None, f"{name}.{export}"


def test_the_core_modules_are_private():
    """Everything at the top of seda that is not a package is the runtime's own (a leading
    underscore), except the config file format."""
    public = {m.name for m in pkgutil.iter_modules(seda.__path__) if not m.name.startswith("_")}
    assert public == {"cluster", "config", "control", "io", "http", "model", "profile",
                      "status"}


def test_a_stage_cannot_be_run_by_hand():
    """Batches are the thread managers' to run (seda._stage.run_batch), not a Stage method."""
    assert not hasattr(seda.Stage, "run")
