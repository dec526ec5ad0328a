"""Service degradation (thesis 7.2.2): trade quality for response time before rejecting."""

from __future__ import annotations

from typing import Any

from .driver import Controller
from .response_time import ResponseTimeController


class Degrader(Controller):
    """Moves ``quality`` (read by the stage's handler, 1.0 = full) against a
    ResponseTimeController's p90 estimate: above target, ``quality *= decrease`` down to
    ``min_quality``; at or below target, ``quality += increase`` up to 1.

    With ``readmit=True``, a stage already at its lowest quality and still over target turns
    the admission controller on; it is turned off again once it has rejected nothing for a
    whole period and the target is met. Give it a controller created with ``enabled=False`` so
    that, at first, quality alone absorbs the load.
    """

    def __init__(self, controller: ResponseTimeController, min_quality: float = 0.1,
                 decrease: float = 0.8, increase: float = 0.05, period: float = 1.0,
                 readmit: bool = True) -> None:
        if not 0 < min_quality <= 1 or not 0 < decrease < 1 or increase <= 0:
            raise ValueError("need 0 < min_quality <= 1, 0 < decrease < 1, increase > 0")
        self.controller, self.min_quality = controller, min_quality
        self.decrease, self.increase = decrease, increase
        self.period, self.readmit = period, readmit
        self.quality = 1.0
        self._rejected = 0

    def tick(self, now: float) -> None:
        ctl = self.controller
        rejected, self._rejected = ctl.rejected - self._rejected, ctl.rejected
        if ctl.p90 is None:
            return
        if ctl.p90 > ctl.target:
            if self.quality > self.min_quality:
                self.quality = max(self.min_quality, self.quality * self.decrease)
            elif self.readmit and not ctl.enabled:
                ctl.enable()
        else:
            if self.readmit and ctl.enabled and not rejected:
                ctl.disable()
            if not ctl.enabled:
                self.quality = min(1.0, self.quality + self.increase)

    def state(self) -> dict[str, Any]:
        return {"quality": self.quality, "admission": self.controller.enabled}
