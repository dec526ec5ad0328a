"""A longer fuzz run of the HTTP server stage than the test suite's: random and mutated
requests from hypothesis, checked for a clean answer (a status line or a close) and a stage
that never raises.

    python benchmarks/http_fuzz.py [--examples 20000]
"""

from __future__ import annotations

import argparse
import os
import sys

import pytest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=20000)
    args = parser.parse_args()
    os.environ["SEDA_FUZZ_EXAMPLES"] = str(args.examples)
    tests = os.path.join(os.path.dirname(__file__), "..", "tests", "seda", "http",
                         "test_server.py")
    return pytest.main(["-q", "-p", "no:cacheprovider", tests, "-k", "never_crash",
                        "--timeout", "0"])


if __name__ == "__main__":
    sys.exit(main())
