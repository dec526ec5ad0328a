"""``python -m seda.model plan PROFILE.jsonl`` and ``python -m seda.model figures``."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import asdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seda.model",
                                     description="Queueing models of SEDA services (thesis "
                                     "chapter 4).")
    commands = parser.add_subparsers(dest="command", required=True)
    plan_cmd = commands.add_parser(
        "plan", help="bottleneck, maximum stable rate and threads from a profile",
        description="Read a profile written by Runtime.start_profiler, model each stage as an "
        "M/M/m centre at its measured arrival rate, service time and threads, and report the "
        "bottleneck, the largest stable entry rate and the threads each stage needs for a "
        "target rate.")
    plan_cmd.add_argument("profile", help="a JSON-lines file written by Runtime.start_profiler")
    plan_cmd.add_argument("-t", "--target", type=float,
                          help="events per second entering the service to plan threads for")
    plan_cmd.add_argument("--entry", metavar="STAGE",
                          help="the stage the target rate arrives at (default: events from "
                          "outside the stages, wherever they enter)")
    plan_cmd.add_argument("--json", action="store_true", help="print the plan as JSON")
    fig_cmd = commands.add_parser(
        "figures", help="draw the thesis's figures 16, 18, 20, 21 and 23",
        description="Draw the chapter 4 figures as PNGs (needs matplotlib: pip install "
        "'pyseda[plot]'). CPU-heavy for a minute: the simulated points.")
    fig_cmd.add_argument("-o", "--output", default="docs/model", help="directory for the PNGs")
    fig_cmd.add_argument("--jobs", type=int, default=20_000,
                         help="requests simulated per point (default 20000)")
    fig_cmd.add_argument("names", nargs="*", help="figures to draw (default all: fig16 ...)")
    args = parser.parse_args(argv)

    if args.command == "plan":
        from .plan import format_plan, plan_file

        try:
            plan = plan_file(args.profile, args.target, args.entry)
        except (OSError, ValueError, KeyError) as exc:
            print(f"cannot plan from {args.profile}: {exc}", file=sys.stderr)
            return 1
        print(json.dumps(asdict(plan), indent=2) if args.json else format_plan(plan))
        return 0
    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is needed: pip install 'pyseda[plot]'", file=sys.stderr)
        return 2
    from .figures import FIGURES, draw

    unknown = set(args.names) - set(FIGURES)
    if unknown:
        parser.error(f"unknown figure(s) {sorted(unknown)}; choose from {sorted(FIGURES)}")
    for path in draw(args.output, args.names or FIGURES, jobs=args.jobs):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
