"""``python -m seda.profile plot FILE -o out.png``: draw a profiler file."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seda.profile",
                                     description="Tools for seda profiler files (JSON lines).")
    commands = parser.add_subparsers(dest="command", required=True)
    plot_cmd = commands.add_parser("plot", help="queue length and threads per stage over time",
                                   description="Draw queue length and threads per stage "
                                   "over time as a PNG (needs matplotlib: pip install "
                                   "'pyseda[plot]').")
    plot_cmd.add_argument("file", help="a file written by Runtime.start_profiler")
    plot_cmd.add_argument("-o", "--output", default="profile.png", help="PNG to write")
    args = parser.parse_args(argv)
    try:
        from .plot import plot
        plot(args.file, args.output)
    except ImportError:
        print("matplotlib is needed: pip install 'pyseda[plot]'", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as exc:
        print(f"cannot plot {args.file}: {exc}", file=sys.stderr)
        return 1
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
