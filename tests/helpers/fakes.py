"""A stage stand-in for driving controllers step by step: counters the test sets by hand, and a
fake clock."""

from __future__ import annotations


class FakePool:
    kind = "threads"

    def __init__(self, size: int = 1) -> None:
        self.size = size             # threads it has
        self.cap = size
        self.min_size = size
        self.idle_timeout = None
        self.cpu = 0.0               # CPU seconds its threads have used
        self.busy = 0.0              # seconds its threads spent in batches
        self.grow_on_stall = True

    def limit(self, cap: int, start: bool = False) -> None:
        self.cap = cap

    def thread_count(self) -> int:
        return self.size

    def concurrency(self) -> int:
        return self.size

    started_count = property(thread_count)

    def cpu_time(self) -> float:
        return self.cpu

    def busy_time(self) -> float:
        return self.busy


class FakeSink:
    reserved = 0

    def __init__(self, stage: FakeStage) -> None:
        self.length = lambda: stage.queue

    def __len__(self) -> int:
        return self.length()


class FakeStage:
    name = "fake"

    def __init__(self) -> None:
        self.processed = 0
        self.queue = 0
        self.batch = 64
        self.manager = FakePool()
        self.sink = FakeSink(self)
        self.thread_control = None
        self.observers = []

    def observe(self, fn) -> None:
        self.observers.append(fn)

    def unobserve(self, fn) -> None:
        self.observers.remove(fn)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def drive(controller, stage, rates, queue=None, cpu=0.0, busy=None, process=0.0,
          read=None) -> list:
    """Tick ``controller`` once a second over ``stage``: ``rates`` events handled in each
    second, the pool's threads using ``cpu`` CPU seconds in each, spending ``busy`` seconds in
    batches (as many as ``cpu`` if not given), the whole process ``process``. Returns
    ``read()`` after each tick, by default the pool's cap."""
    spent = [0.0]
    controller.process_clock = lambda: spent[0]
    controller.tick(0.0)
    seen = []
    for t, rate in enumerate(rates, start=1):
        stage.processed += rate
        stage.manager.cpu += cpu
        stage.manager.busy += cpu if busy is None else busy
        spent[0] += process
        if queue is not None:
            stage.queue = queue
        controller.tick(float(t))
        seen.append(stage.manager.cap if read is None else read())
    return seen
