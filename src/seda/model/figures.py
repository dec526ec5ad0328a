"""The thesis's chapter 4 figures (16, 18, 20, 21, 23) redrawn from this package: lines are
the analysis, markers the simulator, and where the thesis had only simulation (a stage that
combines several steps) the simulator alone. ``python -m seda.model figures`` writes them."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable
from functools import partial
from os import PathLike
from pathlib import Path
from typing import Any, Protocol

from .network import JacksonNetwork
from .simulate import Service, simulate

#: a function building the network for an arrival rate
Build = Callable[[float], JacksonNetwork]


def _network(stations: Iterable[tuple[Any, ...]], routes: Iterable[tuple[str, str, float]] = (),
             lam: float = 1.0) -> JacksonNetwork:
    """Requests arrive at the first station."""
    net = JacksonNetwork()
    for name, mu, servers, *extra in stations:
        net.add_station(name, mu, servers, **(extra[0] if extra else {}))
    for src, dst, p in routes:
        net.route(src, dst, p)
    net.arrive(next(iter(net.stations)), lam)
    return net


def pipeline(mu: float | tuple[float, ...], threads: tuple[int, ...],
             lam: float) -> JacksonNetwork:
    """Stages in tandem (Pipeline, 4.4.1; Fig. 23a), with one rate for all or one each."""
    names = [f"s{i}" for i in range(len(threads))]
    mus = mu if isinstance(mu, tuple) else (mu,) * len(threads)
    return _network([(n, r, m) for n, r, m in zip(names, mus, threads, strict=True)],
                    [(a, b, 1.0) for a, b in itertools.pairwise(names)], lam=lam)


def tree(root: tuple[float, int], leaves: list[tuple[float, int]], lam: float) -> JacksonNetwork:
    """A root stage sending each request to one of its leaf stages, all equally likely
    (Partition, 4.4.2; Replicate, 4.4.3)."""
    stations = [("root", *root)] + [(f"leaf{i}", *leaf) for i, leaf in enumerate(leaves)]
    p = 1 / len(leaves)
    return _network(stations, [("root", f"leaf{i}", p) for i in range(len(leaves))], lam=lam)


def _rates(lam_max: float, points: int = 60, upto: float = 0.98) -> list[float]:
    return [lam_max * upto * k / points for k in range(1, points + 1)]


class Figure:
    """One figure of one or two panels, sharing the y axis, with a legend per panel."""

    def __init__(self, panels: int, title: str) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt = plt
        self.fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.2), sharey=True,
                                      squeeze=False)
        self.axes = list(axes[0])
        self.fig.suptitle(title, fontsize="medium")
        for ax in self.axes:
            ax.set_xlabel("arrival rate $\\lambda$")
            ax.grid(alpha=0.3)
        self.axes[0].set_ylabel("mean response time")
        self._colours = [0] * panels

    def curve(self, panel: int, label: str, build: Build, lam_max: float, *,
              sim: Iterable[float] = (), sim_only: bool = False, service: Service = "exponential",
              jobs: int = 20_000) -> None:
        """The analysis of ``build(lam)`` up to ``lam_max`` as a line (or, ``sim_only``, the
        simulator on a grid), and simulated points at the fractions ``sim`` of ``lam_max``."""
        ax, colour = self.axes[panel], f"C{self._colours[panel]}"
        self._colours[panel] += 1
        if sim_only:
            lams = _rates(lam_max, points=12, upto=0.95)
            ys = [simulate(build(lam), jobs / lam, 1, service).mean_response for lam in lams]
            ax.plot(lams, ys, "o-", color=colour, label=label, markersize=3)
        else:
            lams = _rates(lam_max)
            ax.plot(lams, [build(lam).mean_response() for lam in lams], color=colour,
                    label=label)
            for frac in sim:
                lam = lam_max * frac
                r = simulate(build(lam), jobs / lam, 1, service)
                ax.plot([lam], [r.mean_response], "o", color=colour, markersize=4,
                        markerfacecolor="none")
        ax.axvline(lam_max, color=colour, linestyle=":", linewidth=0.8)

    def save(self, path: str | PathLike[str], ylim: tuple[float, float], note: str = "") -> None:
        for ax in self.axes:
            ax.set_ylim(*ylim)
            ax.legend(fontsize="small", loc="upper left")
        if note:
            self.fig.text(0.5, 0.005, note, ha="center", fontsize="x-small")
        self.fig.tight_layout(rect=(0, 0.03, 1, 1))
        self.fig.savefig(path, dpi=90)
        self.plt.close(self.fig)


MARKERS = "lines: analysis; o: simulator"


def fig16(path: str | PathLike[str], **_: Any) -> None:
    """M/M/m with mu = 3 and 1, 2, 3 threads: response time explodes as lam -> m mu."""
    f = Figure(1, "Fig. 16: M/M/m, $\\mu$ = 3")
    for m in (1, 2, 3):
        f.curve(0, f"{m} thread{'s' * (m > 1)}", partial(pipeline, 3.0, (m,)),
                3.0 * m)
    f.save(path, (0, 2))


def fig18(path: str | PathLike[str], jobs: int = 20_000) -> None:
    """The load-dependent stage (mu = 0.05, alpha = 4, m' = 15, beta = 0.01) over threads and
    arrival rate: too few threads underprovision it, too many drown it in overhead."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    params = {"alpha": 4, "m_prime": 15, "beta": 0.01}

    def build(lam: float, m: int) -> JacksonNetwork:
        return _network([("s", 0.05, m, params)], lam=lam)

    fig, (left, right) = plt.subplots(1, 2, figsize=(10.4, 4.2), sharey=True)
    fig.suptitle("Fig. 18: load-dependent M/M/m, $\\mu$ = 0.05, $\\alpha$ = 4, m' = 15, "
                 "$\\beta$ = 0.01", fontsize="medium")
    threads = list(range(1, 36))
    for k, lam in enumerate((0.02, 0.05, 0.1, 0.15, 0.18)):
        ys = [build(lam, m).mean_response() for m in threads]
        left.plot(threads, ys, color=f"C{k}", label=f"$\\lambda$ = {lam}")
        for m in (2, 6, 12, 19, 22):
            if build(lam, m).station("s").utilization < 0.85:
                r = simulate(build(lam, m), jobs / lam, 1)
                left.plot([m], [r.mean_response], "o", color=f"C{k}", markersize=4,
                          markerfacecolor="none")
    left.set_xlabel("threads")
    left.set_ylabel("mean response time")
    for k, m in enumerate((1, 2, 4, 16, 20, 24, 28)):
        cap = build(0.0, m).capacities()["s"]
        lams = _rates(cap)
        right.plot(lams, [build(lam, m).mean_response() for lam in lams], color=f"C{k}",
                   label=f"{m} threads")
    right.set_xlabel("arrival rate $\\lambda$")
    for ax in (left, right):
        ax.set_yscale("log")
        ax.set_ylim(10, 2000)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small")
    fig.text(0.5, 0.005, MARKERS + "; a stage with 20 or more threads never empties: a lone "
             "request waits for company (see docs/model.md)", ha="center", fontsize="x-small")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def fig20(path: str | PathLike[str], jobs: int = 20_000) -> None:
    """Combine (one stage doing two exponential steps: Erlang-2 service) against Pipeline
    (two stages in tandem), mu = 0.07 per step."""
    mu = 0.07
    f = Figure(2, "Fig. 20: (a) Combine, one $M/E_2/m$ stage; (b) Pipeline, two M/M/m stages;"
               " $\\mu$ = 0.07 per step")
    for m in (1, 2, 3, 4):
        f.curve(0, f"{m} thread{'s' * (m > 1)}", partial(pipeline, mu / 2, (m,)),
                m * mu / 2, sim_only=True, service="erlang", jobs=jobs)
    for ms in ((1, 1), (1, 2), (2, 2)):     # (2, 1) is (1, 2): the product form is symmetric
        f.curve(1, f"{ms[0]} and {ms[1]} threads", partial(pipeline, mu, ms),
                min(ms) * mu, sim=(0.4, 0.7), jobs=jobs)
    f.save(path, (0, 200), MARKERS)


def fig21(path: str | PathLike[str], jobs: int = 20_000) -> None:
    """Partition: step A (mu 0.9), then half the requests a slow step B (0.02), the others a
    fast step C (0.07); one stage for all of it against a tree of three stages."""
    mu_a, mu_b, mu_c = 0.9, 0.02, 0.07

    def combined(rng: random.Random) -> float:
        slow = rng.random() < 0.5
        return rng.expovariate(mu_a) + rng.expovariate(mu_b if slow else mu_c)

    mean = 1 / mu_a + 0.5 / mu_b + 0.5 / mu_c
    f = Figure(2, "Fig. 21: (a) one stage does A and then B or C; (b) Partition: A, then B or C"
               " in their own stages ($\\mu_A$ = 0.9, $\\mu_B$ = 0.02, $\\mu_C$ = 0.07)")
    for m in (1, 2, 4, 6):
        f.curve(0, f"{m} thread{'s' * (m > 1)}",
                partial(pipeline, 1 / mean, (m,)), m / mean, sim_only=True,
                service=combined, jobs=jobs)
    for mb, mc in ((1, 1), (2, 1), (4, 1), (4, 2)):
        def build(lam: float, mb: int = mb, mc: int = mc) -> JacksonNetwork:
            return tree((mu_a, 1), [(mu_b, mb), (mu_c, mc)], lam)

        f.curve(1, f"B {mb}, C {mc} thread{'s' * (mc > 1)}", build,
                build(1.0).max_stable_rate(), sim=(0.4, 0.7), jobs=jobs)
    f.save(path, (0, 400), MARKERS)


def fig23(path: str | PathLike[str], jobs: int = 20_000) -> None:
    """Replicate: a fast stage (mu 2.9) feeding one slow stage (mu 0.02) of k threads, against
    k single-threaded replicas of it, each given 1/k of the requests."""
    mu1, mu2 = 2.9, 0.02
    f = Figure(2, "Fig. 23: (a) one stage of k threads; (b) k one-thread replicas "
               "($\\mu_1$ = 2.9, $\\mu_2$ = 0.02)")
    for k in (2, 4, 8):
        f.curve(0, f"{k} threads", partial(pipeline, (mu1, mu2), (1, k)),
                k * mu2, sim=(0.5,), jobs=jobs)
    for k in (2, 4, 8):
        f.curve(1, f"{k} replicas", partial(tree, (mu1, 1), [(mu2, 1)] * k),
                k * mu2, sim=(0.5,), jobs=jobs)
    f.save(path, (0, 500), MARKERS)


class _Drawing(Protocol):
    """A figure: drawn into ``path``, with ``jobs`` requests per simulated point."""

    def __call__(self, path: str | PathLike[str], *, jobs: int) -> None: ...


FIGURES: dict[str, _Drawing] = {"fig16": fig16, "fig18": fig18, "fig20": fig20, "fig21": fig21,
                                "fig23": fig23}


def draw(out: str | PathLike[str], names: Iterable[str] = FIGURES,
         jobs: int = 20_000) -> list[Path]:
    """Write the named figures as PNGs into ``out``; ``jobs`` requests per simulated point."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        path = out / f"{name}.png"
        FIGURES[name](path, jobs=jobs)
        written.append(path)
    return written

