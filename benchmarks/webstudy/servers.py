"""The servers the study can measure: how to start each on a port over a file root, and why one
cannot be started here (not installed), so the study skips it with that reason."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.baselines.static_http import DEFAULT_TYPE, TYPES

PY = sys.executable
LOCAL = "127.0.0.1"


@dataclass(frozen=True)
class Candidate:
    name: str
    what: str                                       # one line for the results table
    command: Callable[[str, int, Path], list[str]]  # (root, port, work dir) -> argv
    needs: tuple[str, ...] = ()                     # Python modules it imports

    def missing(self) -> str | None:
        """Why this server cannot start here, or None."""
        absent = [m for m in self.needs if importlib.util.find_spec(m) is None]
        return f"{', '.join(absent)} not installed (pip install -e '.[bench]')" if absent else None


def _baseline(module: str) -> Callable[[str, int, Path], list[str]]:
    return lambda root, port, work: [PY, "-m", f"benchmarks.baselines.{module}", "--root", root,
                                     "--bind", f"{LOCAL}:{port}"]


def nginx_binary() -> str | None:
    """nginx on the PATH, or where Debian puts it (/usr/sbin is not on every user's PATH)."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")


def nginx_conf(root: str, port: int, work: Path, *, tls: tuple[Path, Path] | None = None,
               open_files: int = 0) -> str:
    """One worker, no access log, sendfile, and the baselines' content types; with ``tls``
    (certificate, key) HTTPS, with ``open_files`` a cache of that many open descriptors (as
    refbench.sh configures nginx)."""
    types = " ".join(f"{ctype} {ext[1:]};" for ext, ctype in TYPES.items())
    temp = " ".join(f"{kind}_temp_path {work};" for kind in
                    ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    listen = f"listen {LOCAL}:{port};"
    if tls is not None:
        # nginx 1.22 offers TLS 1.0-1.2 unless told; Python's servers offer 1.2 and 1.3
        listen = (f"listen {LOCAL}:{port} ssl; ssl_certificate {tls[0]}; "
                  f"ssl_certificate_key {tls[1]}; ssl_protocols TLSv1.2 TLSv1.3;")
    files = f" open_file_cache max={open_files};" if open_files else ""
    return (f"worker_processes 1; daemon off; pid {work}/nginx.pid; error_log {work}/nginx.err;\n"
            f"worker_rlimit_nofile 20000;\nevents {{ worker_connections 8192; }}\n"
            f"http {{ access_log off; sendfile on; tcp_nopush on; tcp_nodelay on;\n"
            f"  keepalive_requests 1000000;{files} {temp}\n  types {{ {types} }}\n"
            f"  default_type {DEFAULT_TYPE};\n"
            f"  server {{ {listen} root {root}; }} }}\n")


def nginx_command(root: str, port: int, work: Path, *, tls: tuple[Path, Path] | None = None,
                  open_files: int = 0) -> list[str]:
    """nginx in the foreground over ``root``, its configuration (``nginx_conf``) in ``work``."""
    conf = work / "nginx.conf"
    conf.write_text(nginx_conf(root, port, work, tls=tls, open_files=open_files))
    return [nginx_binary() or "nginx", "-e", str(work / "nginx.err"), "-p", str(work),
            "-c", str(conf)]


class Nginx(Candidate):
    def missing(self) -> str | None:
        return None if nginx_binary() else "nginx not installed (apt-get install nginx-light)"


APPS = "benchmarks.baselines.apps"

CANDIDATES: dict[str, Candidate] = {c.name: c for c in [
    Candidate("haboob", "Haboob (SEDA), defaults: 200 MB page cache",
              lambda root, port, work: [PY, "-m", "haboob", "--root", root,
                                        "--bind", f"{LOCAL}:{port}"]),
    Candidate("thread_per_conn", "a thread per connection, unbounded",
              _baseline("thread_per_conn")),
    Candidate("bounded_pool", "150 workers, accept only when one is free (Apache 1.3)",
              _baseline("bounded_pool")),
    Candidate("sped", "one event loop, blocking file reads inline (Flash without helpers)",
              _baseline("sped")),
    Candidate("amped", "one event loop and 4 helper processes for disk reads (Flash)",
              _baseline("amped")),
    Nginx("nginx", "nginx, one worker, access log off, sendfile", nginx_command),
    Candidate("uvicorn", "uvicorn + uvloop + httptools, the ASGI app in baselines/apps.py",
              lambda root, port, work: [PY, "-m", "uvicorn", f"{APPS}:asgi", "--host", LOCAL,
                                        "--port", str(port), "--loop", "uvloop", "--http",
                                        "httptools", "--lifespan", "off", "--no-access-log",
                                        "--log-level", "warning"],
              ("uvicorn", "uvloop")),
    Candidate("gunicorn", "gunicorn, 3 sync workers (2 x cores + 1), no keep-alive",
              lambda root, port, work: [PY, "-m", "gunicorn", "--workers", "3",
                                        "--worker-class", "sync", "--bind", f"{LOCAL}:{port}",
                                        f"{APPS}:wsgi"],
              ("gunicorn",)),
    Candidate("waitress", "waitress, 4 threads, 100 connections at most (its defaults)",
              lambda root, port, work: [PY, "-m", "waitress", f"--listen={LOCAL}:{port}",
                                        f"{APPS}:wsgi"],
              ("waitress",)),
]}
