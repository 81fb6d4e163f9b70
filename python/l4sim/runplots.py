"""Figures of single runs (matplotlib, Agg backend): what ``l4sim run --plot`` draws.

:func:`run_figure`: one run on one page: per-flow throughput and the bottleneck's queue delay
over time, the L4S and classic classes' mark and drop probabilities over time, the queue-delay
CDF per traffic class and per flow, and, when the run has web-like transfers, their completion
times against size (log-log, the demo's scatter).
:func:`compare_figure`: several runs side by side (the IETF-106 per-AQM table as a figure):
per-class queue delay P50/P99 and the web transfers' median and P99 completion time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

if TYPE_CHECKING:  # RunResult.plot() calls in here: no import of l4sim.api at run time
    from l4sim.api import RunResult

__all__ = ["compare_figure", "run_figure", "save"]

_CLASS_COLOR = {"l4s": "tab:blue", "classic": "tab:orange"}
#: Flows take the other colours of the cycle, each its own in every panel, so blue and orange
#: always mean the L4S and classic classes.
_FLOW_COLORS = [f"C{k}" for k in range(2, 10)]


def save(fig: plt.Figure, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (format from the suffix; PNG if none) and close it."""
    p = Path(path)
    if not p.suffix:
        p = p.with_suffix(".png")
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return p


def _class_rows(r: RunResult, qdisc: str | None = None):
    cls = r.classes
    if cls.empty:
        return cls
    cls = cls[cls["kind"] == "class"]
    return cls[cls["qdisc"] == (qdisc or cls["qdisc"].iloc[0])]


def run_figure(r: RunResult, *, title: str | None = None) -> plt.Figure:
    """The one-page figure of a run (see the module docs)."""
    conns = r.connections
    ncols = 3 if not conns.empty else 2
    fig, axes = plt.subplots(2, ncols, figsize=(5.0 * ncols, 7.0), constrained_layout=True)
    s = r.raw.get("series") or {}
    t = np.asarray(s.get("t", []), dtype=float)

    names = [f["name"] for f in s.get("flows", [])]
    names += sorted(set(conns["flow"]) - set(names)) if not conns.empty else []
    color = {n: _FLOW_COLORS[i % len(_FLOW_COLORS)] for i, n in enumerate(names)}

    ax = axes[0, 0]
    for f in s.get("flows", []):
        v = np.asarray([np.nan if x is None else x for x in f["tput_mbps"]], dtype=float)
        ax.plot(t[: len(v)], v[: len(t)], label=f["name"], lw=1, color=color[f["name"]])
    ax.set(xlabel="time, s", ylabel="throughput, Mbit/s", title="per-flow throughput")
    ax.legend(fontsize=7)

    ax = axes[1, 0]
    for q in s.get("qdiscs", []):
        v = np.asarray([np.nan if x is None else x for x in q["sojourn_ms"]], dtype=float)
        ax.plot(t[: len(v)], v[: len(t)], label=f"{q['name']} (mean sojourn)", lw=1, color="0.3")
    ax.set(xlabel="time, s", ylabel="queue delay, ms", title="queue delay over time")
    ax.legend(fontsize=7)

    ax = axes[0, 1]
    q0 = (s.get("qdiscs") or [None])[0]
    if q0 is not None:
        from l4sim.classes import class_probabilities

        for cls in ("l4s", "classic"):
            c = q0[cls]
            mark, drop = class_probabilities(c["pkts"], c["marks"], c["drops"])
            ax.plot(t[: len(mark)], 100 * mark, color=_CLASS_COLOR[cls], label=f"{cls} marks", lw=1)
            ax.plot(t[: len(drop)], 100 * drop, color=_CLASS_COLOR[cls], ls="--", label=f"{cls} drops", lw=1)
        ax.set(title=f"{q0['name']}: mark / drop probability per class")
    ax.set(xlabel="time, s", ylabel="% of packets")
    ax.legend(fontsize=7)

    ax = axes[1, 1]
    quantiles = np.linspace(0, 1, 101)
    for _, row in _class_rows(r).iterrows():
        if len(row["cdf_ms"]):
            ax.plot(row["cdf_ms"], quantiles, color=_CLASS_COLOR.get(row["name"]), lw=2, label=f"class {row['name']}")
    flows = r.classes[r.classes["kind"] == "flow"] if not r.classes.empty else r.classes
    for _, row in flows.iterrows():
        if len(row["cdf_ms"]):
            ax.plot(row["cdf_ms"], quantiles, lw=0.8, ls=":", label=row["name"], color=color.get(row["name"]))
    ax.set(xlabel="queue delay, ms", ylabel="fraction of packets", title="queue-delay CDF", ylim=(0, 1))
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlim(left=0)
    ax.legend(fontsize=7)

    if not conns.empty:
        ax = axes[0, 2]
        for name, g in conns.groupby("flow"):
            ax.scatter(g["size"], 1e3 * g["fct_s"], s=3, alpha=0.4, label=name, color=color.get(name))
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="size, bytes",
            ylabel="completion time, ms",
            title="web transfers: completion time",
        )
        ax.legend(fontsize=7, markerscale=3)
        ax = axes[1, 2]
        summ = r.fct_summary()
        labels = [str(c) for c in summ["size_bin"].cat.categories]  # every bin, in order
        for name, g in summ.groupby("flow"):
            x = [labels.index(str(b)) for b in g["size_bin"]]
            ax.plot(x, g["fct_p50_ms"], marker="o", color=color.get(name), label=f"{name} median")
            ax.plot(x, g["fct_p99_ms"], marker="^", ls="--", color=color.get(name), label=f"{name} P99")
        ax.set_xticks(range(len(labels)), labels, fontsize=7)
        ax.set(yscale="log", ylabel="completion time, ms", title="completion time per size bin")
        ax.legend(fontsize=7)
    fig.suptitle(title or f"{r.name}: {r.sim_seconds:g} s simulated (seed {r.seed})", fontsize=10)
    return fig


def compare_figure(results: Sequence[RunResult], *, title: str | None = None) -> plt.Figure:
    """Several runs side by side: per-class queue delay (median, P99) and, if there are web
    transfers, each source's median and P99 completion time."""
    names = [r.name for r in results]
    has_fct = any(not r.connections.empty for r in results)
    fig, axes = plt.subplots(
        1, 2 if has_fct else 1, figsize=(11 if has_fct else 6, 4), constrained_layout=True, squeeze=False
    )
    ax = axes[0, 0]
    x = np.arange(len(results))
    w = 0.2
    for i, cls in enumerate(("l4s", "classic")):
        p50, p99 = [], []
        for r in results:
            rows = _class_rows(r)
            row = rows[rows["name"] == cls]
            p50.append(float(row["sojourn_p50_ms"].iloc[0]) if len(row) else np.nan)
            p99.append(float(row["sojourn_p99_ms"].iloc[0]) if len(row) else np.nan)
        ax.bar(x + (2 * i - 1.5) * w, p50, w, color=_CLASS_COLOR[cls], alpha=0.5, label=f"{cls} median")
        ax.bar(x + (2 * i - 0.5) * w, p99, w, color=_CLASS_COLOR[cls], label=f"{cls} P99")
    ax.set_xticks(x, names, rotation=20, ha="right", fontsize=8)
    ax.set(ylabel="queue delay, ms", title="queue delay per traffic class")
    ax.set_yscale("symlog", linthresh=1)
    ax.legend(fontsize=7)
    if has_fct:
        ax = axes[0, 1]
        flows = sorted({f for r in results for f in r.connections["flow"].unique()})
        w = 0.8 / (2 * max(len(flows), 1))
        for i, f in enumerate(flows):
            med, p99 = [], []
            for r in results:
                c = r.connections
                v = 1e3 * c.loc[c["flow"] == f, "fct_s"]
                med.append(v.median() if len(v) else np.nan)
                p99.append(v.quantile(0.99) if len(v) else np.nan)
            ax.bar(x + (2 * i) * w - 0.4, med, w, alpha=0.5, color=_FLOW_COLORS[i % len(_FLOW_COLORS)], label=f"{f} median")
            ax.bar(x + (2 * i + 1) * w - 0.4, p99, w, color=_FLOW_COLORS[i % len(_FLOW_COLORS)], label=f"{f} P99")
        ax.set_xticks(x, names, rotation=20, ha="right", fontsize=8)
        ax.set(ylabel="completion time, ms", title="web transfers: completion time", yscale="log")
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
