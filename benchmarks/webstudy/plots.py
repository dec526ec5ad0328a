"""The study's figures, drawn as the thesis drew them: throughput and fairness against clients
on a log axis (Fig. 37), and response-time CDFs on a log time axis (Fig. 38 and 40)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")                   # headless, before pyplot is imported
import matplotlib.pyplot as plt


def throughput(results: dict[str, Any], path: Path) -> None:
    fig, (bw, fair) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, entry in results["servers"].items():
        runs = entry["runs"]
        clients = [r["clients"] for r in runs]
        bw.plot(clients, [r["mbit_s"] for r in runs], marker="o", label=name)
        fair.plot(clients, [r["fairness"] for r in runs], marker="o", label=name)
    measured = results["settings"]["clients"]
    for ax in (bw, fair):
        ax.set_xscale("log", base=2)
        ax.set_xticks(measured, [str(c) for c in measured])
        ax.set_xlabel("clients")
        ax.grid(True, alpha=0.3)
    bw.set_ylabel("throughput, Mbit/s")
    bw.set_ylim(bottom=0)
    bw.set_title("Throughput (thesis Fig. 37)")
    fair.set_ylabel("Jain fairness index")
    fair.set_ylim(0, 1.05)
    fair.set_title("Fairness across clients")
    fair.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cdf(results: dict[str, Any], clients: int, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, entry in results["servers"].items():
        for r in entry["runs"]:
            if r["clients"] == clients and r["cdf"]:
                ms, frac = zip(*r["cdf"], strict=True)
                ax.step(ms, frac, where="post", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("response time, ms (log)")
    ax.set_ylabel("fraction of responses")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Response times with {clients} clients")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
