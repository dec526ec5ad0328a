"""Capacity planning from a running service's profile: measure each stage's arrival rate,
service time and threads from the profiler's samples, model the stages as M/M/m centres of a
Jackson network, and say which one saturates first, at what entry rate, and how many threads
each needs for a target rate (Little's law, thesis 6.2.3).

Stages on the shared event-loop thread are one server between them: their work adds up on
that one thread, and no thread count can be given to any one of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from os import PathLike
from typing import Any

from ..profile.plot import read_samples
from .network import JacksonNetwork

#: the station standing for every stage on the shared event-loop thread
LOOP = "event loop"


@dataclass(frozen=True)
class StageLoad:
    """One stage as measured between the first and the last sample: events accepted per
    second, how many of those came from outside the stages, rejections per second, the mean
    handler time per event (None if it handled nothing), its threads and thread manager."""

    name: str
    manager: str
    arrival_rate: float
    external_rate: float
    rejected_rate: float
    service_time: float | None
    threads: int


def measure(samples: list[dict[str, Any]]) -> tuple[float, dict[str, StageLoad]]:
    """The seconds the samples span and each stage's load over them. Counters are cumulative,
    so rates are differences between the first and the last sample; the service time is the
    mean of the samples' ``service_ms`` weighted by the events handled since the one before."""
    if len(samples) < 2:
        raise ValueError("a profile needs at least two samples to measure rates")
    first, last = samples[0], samples[-1]
    seconds = last["t"] - first["t"]
    if seconds <= 0:
        raise ValueError("the samples span no time")
    loads = {}
    for name, row in last["stages"].items():
        if "accepted" not in row:
            raise ValueError(f"stage {name!r} has no 'accepted' count: the profile was written "
                             "by a profiler without flow samples; record it again")
        before = first["stages"].get(name, {})
        accepted = row["accepted"] - before.get("accepted", 0)
        internal = (sum(row["sources"].values())
                    - sum(before.get("sources", {}).values()))
        loads[name] = StageLoad(
            name, row.get("manager", "threads"), accepted / seconds,
            max(0, accepted - internal) / seconds,
            (row["rejected"] - before.get("rejected", 0)) / seconds,
            _service_time(samples, name),
            max(1, row["threads"]))         # an idle pool may have shrunk; work brings one back
    return seconds, loads


def _service_time(samples: list[dict[str, Any]], name: str) -> float | None:
    weighted = handled = 0.0
    previous = samples[0]["stages"].get(name, {}).get("processed", 0)
    for sample in samples[1:]:
        row = sample["stages"].get(name)
        if row is None:
            continue
        done, previous = row["processed"] - previous, row["processed"]
        if done > 0 and row.get("service_ms") is not None:
            weighted += done * row["service_ms"] / 1000
            handled += done
    return weighted / handled if handled else None


@dataclass(frozen=True)
class StagePlan:
    """A stage's figures: its measured load, ``busy`` = arrival rate x service time (threads
    busy on average, Little's law), ``utilization`` of its threads, the M/M/m mean response
    time at the measured rate (None if unstable), its ``share`` of the entry rate, and the
    threads it needs at the target rate (None on the shared loop, where threads cannot be
    given)."""

    name: str
    manager: str
    arrival_rate: float
    rejected_rate: float
    service_time: float
    threads: int
    busy: float
    utilization: float
    mean_response: float | None
    share: float
    threads_for_target: int | None


@dataclass(frozen=True)
class Plan:
    """The whole service: the entry rate the stages' rates are relative to (events from
    outside the stages, or arriving at ``entry``), the bottleneck and the largest entry rate at
    which every stage is stable, the shared loop's utilization now and at the target."""

    seconds: float
    entry: str | None
    entry_rate: float
    stages: list[StagePlan]
    bottleneck: str
    max_entry_rate: float
    loop_utilization: float | None
    target: float | None
    loop_utilization_at_target: float | None


def threads_needed(rate: float, service_time: float) -> int:
    """Little's law: ``rate`` x ``service_time`` requests are in service on average, so that
    many threads keep up (thesis 6.2.3: 1000/s x 15 % x 20 ms = 3). Rounded up, after
    forgiving the last bits of floating-point error."""
    return max(1, math.ceil(round(rate * service_time, 9)))


def make_plan(seconds: float, loads: dict[str, StageLoad], target: float | None = None,
              entry: str | None = None) -> Plan:
    """Model the measured stages and plan for ``target`` events per second at the entry."""
    if entry is not None and entry not in loads:
        raise ValueError(f"no stage {entry!r} in the profile; stages: {sorted(loads)}")
    entry_rate = (loads[entry].arrival_rate if entry is not None
                  else math.fsum(s.external_rate for s in loads.values()))
    if entry_rate <= 0:
        raise ValueError("no events entered the stages in this profile; name the stage the "
                         "target rate arrives at with --entry")
    # the stages that handled events, with their service time
    active = [(s, s.service_time) for s in loads.values() if s.arrival_rate > 0 and s.service_time]
    net = JacksonNetwork()
    looped = [(s, t) for s, t in active if s.manager == "loop"]
    for s, t in active:
        if s.manager != "loop":
            net.add_station(s.name, 1 / t, s.threads)
            net.arrive(s.name, s.arrival_rate)
    loop_busy = math.fsum(s.arrival_rate * t for s, t in looped)
    if looped:
        arrivals = math.fsum(s.arrival_rate for s, _ in looped)
        net.add_station(LOOP, arrivals / loop_busy, 1)
        net.arrive(LOOP, arrivals)
    if not net.stations:
        raise ValueError("no stage handled any event in this profile")
    results = net.results()
    stages = []
    for s, t in active:
        model = results[LOOP if s.manager == "loop" else s.name]
        busy = s.arrival_rate * t
        share = s.arrival_rate / entry_rate
        stages.append(StagePlan(
            s.name, s.manager, s.arrival_rate, s.rejected_rate, t, s.threads,
            busy, busy / s.threads, model.mean_response if model.stable else None, share,
            None if target is None or s.manager == "loop"
            else threads_needed(target * share, t)))
    return Plan(seconds, entry, entry_rate, stages, net.bottleneck(),
                net.max_stable_rate() * entry_rate, loop_busy if looped else None, target,
                loop_busy * target / entry_rate if looped and target is not None else None)


def plan_file(path: str | PathLike[str], target: float | None = None,
              entry: str | None = None) -> Plan:
    """:func:`make_plan` for a profiler file (``Runtime.start_profiler``)."""
    samples = read_samples(path)
    return make_plan(*measure(samples), target=target, entry=entry)


def _ms(seconds: float | None) -> str:
    return "unstable" if seconds is None else f"{seconds * 1000:.2f}"


def format_plan(plan: Plan) -> str:
    """The plan as the text ``python -m seda.model plan`` prints."""
    where = f"at stage {plan.entry!r}" if plan.entry else "from outside the stages"
    lines = [f"{plan.seconds:.1f} s profiled; {plan.entry_rate:.1f} events/s entering {where}",
             "",
             f"{'stage':<16} {'manager':<9} {'events/s':>9} {'service ms':>10} {'threads':>7} "
             f"{'busy':>6} {'util':>6} {'M/M/m R ms':>10}"]
    for s in plan.stages:
        lines.append(f"{s.name:<16} {s.manager:<9} {s.arrival_rate:>9.1f} "
                     f"{s.service_time * 1000:>10.2f} {s.threads:>7} {s.busy:>6.2f} "
                     f"{s.utilization:>6.0%} {_ms(s.mean_response):>10}")
        if s.rejected_rate:
            lines.append(f"{'':<16} rejected {s.rejected_rate:.1f}/s: demand is higher than "
                         "measured")
    if plan.loop_utilization is not None:
        lines.append(f"the shared event loop is {plan.loop_utilization:.0%} busy with its "
                     "stages' work")
    now = plan.max_entry_rate / plan.entry_rate
    lines += ["", f"bottleneck: {plan.bottleneck}",
              f"stable up to {plan.max_entry_rate:.1f} events/s entering ({now:.2f}x now)"]
    if plan.target is not None:
        lines += ["", f"threads for {plan.target:g} events/s entering (Little's law: "
                  "arrival rate x service time, rounded up):"]
        for s in plan.stages:
            if s.threads_for_target is not None:
                change = "" if s.threads_for_target == s.threads else f" (now {s.threads})"
                lines.append(f"  {s.name:<16} {s.threads_for_target}{change}")
        if plan.loop_utilization_at_target is not None:
            busy = plan.loop_utilization_at_target
            verdict = ("fits" if busy < 1 else
                       "cannot keep up: move its heaviest stages to thread pools")
            lines.append(f"  the shared event loop would be {busy:.0%} busy: {verdict}")
    return "\n".join(lines)
