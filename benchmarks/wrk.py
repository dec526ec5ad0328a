"""One wrk measurement on core 1 (the servers run on core 0): requests per second, p99, bytes
per second and errors, for one URL or for a list of paths taken in turn (a Lua script).

    measure("http://127.0.0.1:8000/index.html", conns=64, seconds=6)
    measure("http://127.0.0.1:8000/", 64, 6, script=path_script(paths, Path("/tmp/w")))
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

CORE = 1
_RPS = re.compile(r"Requests/sec:\s+([\d.]+)")
_P99 = re.compile(r"^\s*99%\s+([\d.]+)(us|ms|s)\s*$", re.M)
_DONE = re.compile(r"^\s*(\d+) requests in", re.M)
_BYTES = re.compile(r"Transfer/sec:\s+([\d.]+)(B|KB|MB|GB)")
_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_NON_2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")
_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
_UNIT_B = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}     # wrk's units are binary

# wrk runs this in each thread: the paths, one a line, taken in turn from the place given after
# "--" (args[0] is the URL), so that every server measured with the same list and start gets
# the same sequence of requests.
_LUA = """local paths = {}
for line in io.lines("%s") do paths[#paths + 1] = line end
local i = 0
init = function(args)
  i = (tonumber(args[1]) or 0) %% #paths
end
request = function()
  i = i %% #paths + 1
  return wrk.format("GET", paths[i])
end
"""


@dataclass(frozen=True)
class Measured:
    rps: float
    p99_ms: float
    mib_s: float            # response bytes per second, MiB (headers included)
    requests: int
    errors: dict[str, int]  # socket errors by kind, and non-2xx/3xx responses; zeros left out


def path_script(paths: list[str], directory: Path) -> Path:
    """A wrk script requesting ``paths`` in turn (written with it into ``directory``)."""
    listing = directory / "paths.txt"
    listing.write_text("\n".join(paths) + "\n")
    script = directory / "paths.lua"
    script.write_text(_LUA % listing)
    return script


def parse(out: str) -> Measured:
    """What wrk printed (with --latency), or RuntimeError if it measured nothing."""
    rps, p99, done, rate = (p.search(out) for p in (_RPS, _P99, _DONE, _BYTES))
    if rps is None or p99 is None or done is None or rate is None or float(rps.group(1)) == 0:
        raise RuntimeError(f"wrk measured nothing:\n{out}")
    errors = {}
    if sockets := _SOCKET.search(out):
        errors = dict(zip(("connect", "read", "write", "timeout"),
                          map(int, sockets.groups()), strict=True))
    if non_2xx := _NON_2XX.search(out):
        errors["non-2xx"] = int(non_2xx.group(1))
    return Measured(float(rps.group(1)), float(p99.group(1)) * _UNIT_MS[p99.group(2)],
                    float(rate.group(1)) * _UNIT_B[rate.group(2)] / 2**20, int(done.group(1)),
                    {kind: n for kind, n in errors.items() if n})


# wrk runs this once it is done: the latency percentiles, in milliseconds (100: the longest)
_PERCENTILES_LUA = """done = function(summary, latency, requests)
  for _, p in ipairs({%s}) do
    io.write(string.format("percentile %%g %%.3f\\n", p, latency:percentile(p) / 1000))
  end
  io.write(string.format("percentile 100 %%.3f\\n", latency.max / 1000))
end
"""
_PERCENTILE = re.compile(r"^percentile ([\d.]+) ([\d.]+)$", re.M)


def distribution(url: str, conns: int, seconds: int, directory: Path,
                 points: tuple[float, ...] = (50, 90, 95, 99, 99.9)
                 ) -> tuple[Measured, dict[float, float]]:
    """One run of ``wrk -t1`` on core ``CORE`` as ``measure``, with the whole latency
    distribution: percentile -> milliseconds at ``points`` (and at 100, the longest). Its
    script is written into ``directory``."""
    script = directory / "percentiles.lua"
    script.write_text(_PERCENTILES_LUA % ", ".join(f"{p:g}" for p in points))
    measured, out = _run(url, conns, seconds, ["-s", str(script), url])
    return measured, {float(p): float(ms) for p, ms in _PERCENTILE.findall(out)}


def measure(url: str, conns: int, seconds: int, script: Path | None = None,
            start: int = 0, headers: tuple[str, ...] = ()) -> Measured:
    """One run of ``wrk -t1`` on core ``CORE``, keep-alive (unless ``headers``, sent with
    every request, say ``Connection: close``); ``url`` may be https. With a ``path_script``,
    its paths from index ``start`` on."""
    tail = [url] if script is None else ["-s", str(script), url, "--", str(start)]
    tail = [arg for header in headers for arg in ("-H", header)] + tail
    return _run(url, conns, seconds, tail)[0]


def _run(url: str, conns: int, seconds: int, tail: list[str]) -> tuple[Measured, str]:
    """wrk on core ``CORE`` with ``tail`` (script, URL, script arguments): what it measured,
    and all it printed."""
    command = ["taskset", "-c", str(CORE), "wrk", "-t1", f"-c{conns}", f"-d{seconds}s",
               "--latency", *tail]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    try:
        return parse(done.stdout), done.stdout
    except RuntimeError as e:
        raise RuntimeError(f"{url} ({conns} connections): {e}{done.stderr}") from None
