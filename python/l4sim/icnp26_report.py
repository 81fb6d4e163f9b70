"""``l4sim reproduce icnp26``: every scenario of the multi-AS study (``l4sim.icnp26``) for every
trial, in parallel processes, then a markdown report with PNG figures: per scenario the calls'
RTT and rate over time, streaming and transfer completion, the classic flows' goodput and RTT
and the bottleneck queues' counters, with the scenarios side by side."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from l4sim import icnp26
from l4sim.argtypes import count, seconds, usage_error
from l4sim.studies.study import MAX_RUNS

if TYPE_CHECKING:  # imported where used: `l4sim --help` registers this command without it
    import pandas as pd

FULL = {"trials": 8, **icnp26.FULL}
QUICK = {"trials": 1, **icnp26.QUICK}


def register(subparsers: Any) -> None:
    """Add ``icnp26`` under ``l4sim reproduce``."""
    p = subparsers.add_parser(
        "icnp26",
        help="the multi-AS study (ICNP'26): S1, S2a/b, S3a/b, S4a/b -> report.md + figures",
        description="Runs the multi-AS study's scenarios (shared FIFO vs rate-capped priority "
        "queue vs SRv6 path separation at the sender access, an AS core and a peering link) for "
        "every trial and writes OUT/report.md, OUT/summary.csv and OUT/figures/. Default "
        f"{FULL['trials']} trials x {FULL['duration']:g} s at scale {FULL['scale']:g} (core "
        f"rates x scale; docs/icnp26.md); --quick: {QUICK['trials']} trial x "
        f"{QUICK['duration']:g} s at scale {QUICK['scale']:g}.",
    )
    p.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (report.md, summary.csv, queues.csv, figures)"
    )
    p.add_argument("--quick", action="store_true", help="short runs, one trial (CI)")
    p.add_argument("--trials", type=count, help=f"trials per scenario (default {FULL['trials']})")
    p.add_argument("--duration", type=seconds, help="run length, s (the study: 120)")
    p.add_argument("--scale", type=float, help="core/peering/sender-access rate factor, (0, 1]")
    p.add_argument(
        "--heavy-load",
        type=float,
        default=icnp26.HEAVY_LOAD,
        help="with --background load: background offered at the bottleneck, fraction of its rate "
        "(default %(default)g)",
    )
    p.add_argument(
        "--background",
        default="load",
        help="load (default: the heavy pair's load set at the bottleneck) or study (the study's own MGEN "
        "scripts' process at its rates; docs/icnp26.md)",
    )
    p.add_argument("--scenarios", help="comma-separated subset, e.g. S1,S3a,S3b")
    p.add_argument("-j", "--jobs", type=count, default=None, help="worker processes (default: all cores)")
    p.set_defaults(func=cmd_reproduce_icnp26)


def cmd_reproduce_icnp26(args: Any) -> int:
    from concurrent.futures import ProcessPoolExecutor

    from l4sim.sweep.runner import _init_worker

    base = QUICK if args.quick else FULL
    trials = args.trials if args.trials is not None else int(base["trials"])  # a count (FULL, QUICK: dict[str, float])
    duration = args.duration if args.duration is not None else base["duration"]
    scale = args.scale if args.scale is not None else base["scale"]
    names = icnp26.scenario_names()
    if args.scenarios is not None:
        known = {n.lower(): n for n in icnp26.SCENARIOS}  # names are case-insensitive (README)
        given = [s.strip() for s in args.scenarios.split(",") if s.strip()]
        bad = [s for s in given if s.lower() not in known]
        if bad or not given:
            return usage_error(
                f"--scenarios: unknown scenario {', '.join(bad) or '(none given)'}; "
                f"one of {', '.join(icnp26.SCENARIOS)}"
            )
        names = list(dict.fromkeys(known[s.lower()] for s in given))  # S1,s1: S1 once
    if len(names) * trials > MAX_RUNS:
        return usage_error(
            f"--trials: {trials} x {len(names)} scenarios is more than the {MAX_RUNS:,} runs one study holds"
        )
    if not 0 < scale <= 1:
        return usage_error(f"--scale: must be in (0, 1], got {scale:g}")
    if not 0 <= args.heavy_load <= 2:
        return usage_error(f"--heavy-load: must be in [0, 2], got {args.heavy_load:g}")
    background = args.background.strip().lower()
    if background not in icnp26.BACKGROUNDS:
        return usage_error(f"--background: must be one of {', '.join(icnp26.BACKGROUNDS)}, got {args.background!r}")
    if background == "study" and args.heavy_load != icnp26.HEAVY_LOAD:
        return usage_error("--heavy-load: sets --background load's bursts; --background study runs the study's own")
    heavy = args.heavy_load if background == "load" else None
    problem = _check_scenarios(names, trials, duration, scale, heavy)
    if problem:
        return usage_error(problem)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return usage_error(f"cannot create {out}: {e.strerror}")
    jobs = [(n, t, duration, scale, heavy) for n in names for t in range(1, trials + 1)]
    print(f"ICNP'26: {len(names)} scenarios x {trials} trials x {duration:g} s at scale {scale:g} -> {out}")
    t0 = time.time()
    results: list[dict[str, Any]] = []
    try:
        # the workers leave Ctrl-C to this process and end with it (SIGTERM, SIGKILL), as study run's
        with ProcessPoolExecutor(max_workers=args.jobs, initializer=_init_worker, initargs=(os.getpid(),)) as ex:
            for res in ex.map(run_one, jobs):
                results.append(res)
                print(f"  {res['scenario']} trial {res['trial']}: {res['wall_s']:.1f} s wall")
    except KeyboardInterrupt:  # Ctrl-C: the workers ignore it, the pending runs are cancelled
        print(
            f"interrupted: {len(results)} of {len(jobs)} runs done; no report from a part of the runs "
            "(they are not kept: run the command again)",
            file=sys.stderr,
        )
        return 130
    rep = write_report(
        results, out, duration=duration, scale=scale, heavy_load=heavy, wall_s=time.time() - t0
    )
    print(f"wrote {rep}")
    return 0


def _check_scenarios(
    names: list[str], trials: int, duration: float, scale: float, heavy: float | None
) -> str | None:
    """One line if a run of the study would be refused by the simulator, before any runs: the
    options in the user's words (a flow starting after the end: --duration is too short)."""
    from l4sim.scenario import ScenarioError, load

    for name in names:
        for trial in range(1, trials + 1):
            try:
                load(_scenario(name, trial, duration, scale, heavy)).validate()
            except ScenarioError as e:
                if str(getattr(e, "field", "")).endswith((".start", ".stop")):
                    return f"--duration: {duration:g} s is too short for {name}'s traffic ({e})"
                return f"{name} (--duration {duration:g}, --scale {scale:g}, {_bg_option(heavy)}): {e}"
    return None


def _series(r: Any, prefix: tuple[str, ...], variable: str) -> pd.DataFrame:
    s = r.series_flows()
    s = s[(s["variable"] == variable) & s["name"].str.startswith(prefix)]
    return s[["t", "name", "value"]].reset_index(drop=True)


def _queue_series(sq: pd.DataFrame) -> pd.DataFrame:
    """The bottleneck egresses' sojourn over time, one line per queue: DualPI2's L4S and classic
    queues apart (their own series), a queue shared by both classes as one line marked so."""
    import pandas as pd

    split = set(sq.loc[sq["variable"] == "l_sojourn_ms", "name"])
    parts = [sq[(sq["variable"] == "sojourn_ms") & ~sq["name"].isin(split)].assign(name=lambda d: d["name"] + " (all)")]
    for var, cls in (("l_sojourn_ms", "L4S"), ("c_sojourn_ms", "classic")):
        q = sq[(sq["variable"] == var) & sq["name"].isin(split)]
        parts.append(q.assign(name=q["name"] + f" ({cls})"))
    return pd.concat(parts, ignore_index=True)[["t", "name", "value"]]


def _scenario(name: str, trial: int, duration: float, scale: float, heavy: float | None) -> dict[str, Any]:
    """A run's scenario: ``heavy`` the heavy load of ``--background load``, None for ``study``."""
    if heavy is None:
        return icnp26.scenario(name, trial=trial, duration=duration, scale=scale, background="study")
    return icnp26.scenario(name, trial=trial, duration=duration, scale=scale, heavy_load=heavy)


def _bg_option(heavy: float | None) -> str:
    return "--background study" if heavy is None else f"--heavy-load {heavy:g}"


def run_one(job: tuple[str, int, float, float, float | None]) -> dict[str, Any]:
    """Run one (scenario, trial) and keep what the report needs (small, picklable)."""
    import l4sim

    name, trial, duration, scale, heavy = job
    t0 = time.time()
    r = l4sim.run(_scenario(name, trial, duration, scale, heavy))
    bott = icnp26.bottleneck_egresses(name)
    q = r.qdiscs
    cl = r.classes
    sq = r.series_qdiscs()
    conns = r.connections
    return {
        "scenario": name,
        "trial": trial,
        "wall_s": time.time() - t0,
        "flows": r.flows[["name", "goodput_mbps", "bytes_delivered", "start_s", "completion_s", "retrans"]],
        "udp": r.udp,
        "chunks": conns[conns["flow"].str.startswith("l4s_stream")][["flow", "size", "start_s", "fct_s"]],
        "classic_rtt": _series(r, ("classic_long",), "srtt_ms"),
        "classic_tput": _series(r, ("classic_long",), "tput_mbps"),
        "stream_rtt": _series(r, ("l4s_stream",), "srtt_ms"),
        "qdiscs": q[q["name"].isin(bott)][
            [
                "name",
                "kind",
                "enq_pkts",
                "deq_pkts",
                "drops",
                "marks",
                "sojourn_mean_ms",
                "sojourn_p99_ms",
                "max_backlog_bytes",
            ]
        ],
        "classes": cl[cl["qdisc"].isin(bott)].drop(columns=["cdf_ms"], errors="ignore"),
        "qseries": _queue_series(sq[sq["name"].isin(bott)]),
    }


def _summary(res: dict[str, Any]) -> dict[str, Any]:
    f = res["flows"].set_index("name")
    udp = res["udp"]
    x = f[f.index.str.contains("_xfer_")].copy()  # sized bulk flows: done once completion_s is set
    x["fct_s"] = x["completion_s"]  # completion time from the flow's start
    x = x.dropna(subset=["completion_s"])
    l4x = x[x.index.str.startswith("l4s")]
    clx = x[x.index.str.startswith("classic")]
    ch = res["chunks"]
    crtt = res["classic_rtt"]["value"].dropna()
    srtt = res["stream_rtt"]["value"].dropna()
    bq = res["qdiscs"]
    main = bq.iloc[-1] if len(bq) else None
    if len(bq) > 1:  # the scenario's own bottleneck: the busiest shaped egress besides the receiver access
        rest = bq[~bq["name"].str.startswith("r-access-6")]
        main = rest.sort_values("sojourn_mean_ms").iloc[-1] if len(rest) else main
    # Per class at that egress (DualPI2's two queues, the priority queue's two bands; a FIFO's
    # packets by ECN codepoint): no values for a class that sent nothing through it (S3b's L4S).
    cl = res["classes"]
    at = cl[(cl["kind"] == "class") & (cl["qdisc"] == (main["name"] if main is not None else None))]
    at = at[at["deq_pkts"] > 0].set_index("name")
    per_class = {
        f"btl_{k}_sojourn_{q}_ms": at.loc[k, f"sojourn_{q}_ms"] if k in at.index else float("nan")
        for k in ("l4s", "classic")
        for q in ("mean", "p99")
    }
    return {
        "scenario": res["scenario"],
        "trial": res["trial"],
        "call_rtt_p50_ms": udp["rtt_ms"].median() if len(udp) else float("nan"),
        "call_rtt_p95_ms": udp["rtt_ms"].quantile(0.95) if len(udp) else float("nan"),
        "call_rate_mbps": udp["rate_mbps"].mean() if len(udp) else float("nan"),
        "call_loss_frac": udp["loss_frac"].mean() if len(udp) else float("nan"),
        "stream_goodput_mbps": f.loc[f.index.str.startswith("l4s_stream"), "goodput_mbps"].mean(),
        "stream_rtt_p50_ms": srtt.median() if len(srtt) else float("nan"),
        "chunk_fct_p95_s": ch["fct_s"].quantile(0.95) if len(ch) else float("nan"),
        "l4s_xfers_done": len(l4x),
        "l4s_xfer_fct_s": l4x["fct_s"].mean() if len(l4x) else float("nan"),
        "classic_xfers_done": len(clx),
        "classic_xfer_fct_s": clx["fct_s"].mean() if len(clx) else float("nan"),
        "classic_long_goodput_mbps": f.loc[f.index.str.startswith("classic_long"), "goodput_mbps"].sum(),
        "classic_rtt_p50_ms": crtt.median() if len(crtt) else float("nan"),
        # what the study's iperf3 reports of its classic long flows count too (`retransmits`)
        "classic_long_retrans": f.loc[f.index.str.startswith("classic_long"), "retrans"].sum(),
        "bottleneck": main["name"] if main is not None else "",
        "btl_sojourn_mean_ms": main["sojourn_mean_ms"] if main is not None else float("nan"),
        "btl_sojourn_p99_ms": main["sojourn_p99_ms"] if main is not None else float("nan"),
        "btl_drops": main["drops"] if main is not None else 0,
        "btl_marks": main["marks"] if main is not None else 0,
        **per_class,
    }


def _figures(results: list[dict[str, Any]], summ: pd.DataFrame, figdir: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    figdir.mkdir(parents=True, exist_ok=True)
    first: dict[str, dict[str, Any]] = {}  # scenario -> its first trial's result
    for res in results:
        first.setdefault(res["scenario"], res)
    names = list(first)
    figs: dict[str, Path] = {}

    def grid(title: str, fname: str, draw: Any, ylabel: str) -> None:
        n = len(names)
        fig, axes = plt.subplots(n, 1, figsize=(9, 1.9 * n + 0.6), sharex=True, squeeze=False)
        for ax, name in zip(axes[:, 0], names, strict=True):
            draw(ax, first[name])
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=6, loc="upper right", ncol=4, frameon=False)
            ax.set_ylabel(ylabel, fontsize=7)
            ax.set_title(f"{name}: {icnp26.SCENARIOS[name]}", fontsize=8, loc="left")
            ax.tick_params(labelsize=7)
        axes[-1, 0].set_xlabel("time (s)")
        fig.suptitle(title + " (trial 1)", fontsize=10)
        fig.tight_layout()
        p = figdir / f"{fname}.png"
        fig.savefig(p, dpi=90)
        plt.close(fig)
        figs[fname] = p

    def udp_plot(col: str):
        def draw(ax: Any, res: dict[str, Any]) -> None:
            for flow, g in res["udp"].groupby("flow"):
                ax.plot(g["t"], g[col], lw=0.7, label=flow)

        return draw

    def series_plot(key: str, same_colours: bool = False):
        # same_colours: a name (an egress and its class) keeps its colour in every scenario
        every = sorted({n for res in results for n in res[key]["name"]}) if same_colours else []
        colour = {n: f"C{i % 10}" for i, n in enumerate(every)}

        def draw(ax: Any, res: dict[str, Any]) -> None:
            for flow, g in res[key].groupby("name"):
                ax.plot(g["t"], g["value"], lw=0.7, label=flow, color=colour.get(flow))

        return draw

    grid("UDP Prague calls: RTT", "calls_rtt", udp_plot("rtt_ms"), "RTT (ms)")
    grid("UDP Prague calls: received rate", "calls_rate", udp_plot("rate_mbps"), "Mbit/s")
    grid("Classic long flows: throughput", "classic_tput", series_plot("classic_tput"), "Mbit/s")
    grid("Classic long flows: smoothed RTT", "classic_rtt", series_plot("classic_rtt"), "ms")
    queues_title = "Bottleneck queues: mean sojourn per interval (DualPI2: L4S and classic queues apart)"
    grid(queues_title, "queues", series_plot("qseries", same_colours=True), "ms")

    # Side by side: one bar per scenario (mean over trials).
    m = summ.groupby("scenario", sort=False).mean(numeric_only=True).reindex(names)
    cols = [
        ("call_rtt_p95_ms", "call RTT P95 (ms)"),
        ("stream_goodput_mbps", "stream goodput (Mbit/s, of 10)"),
        ("l4s_xfer_fct_s", "L4S 10 MiB transfer, mean (s)"),
        ("classic_long_goodput_mbps", "classic long flows, sum (Mbit/s)"),
        ("classic_rtt_p50_ms", "classic RTT P50 (ms)"),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(12, 6))
    x = np.arange(len(names))
    colors = ["tab:gray" if n == "S1" else "tab:red" if n.endswith("a") else "tab:green" for n in names]
    for ax, (c, label) in zip(axes.flat, cols, strict=False):
        _bars(ax, x, m[c].to_numpy(), 0.8, "none done" if c.endswith("xfer_fct_s") else "no data", color=colors)
        ax.set_title(label, fontsize=9)
    # The bottleneck's sojourn per class: the priority band and DualPI2's L4S queue are what the
    # scenarios are about, and one value for both classes hides them (log scale: 0.05 to 100 ms).
    ax = axes.flat[-1]
    for k, (cls, color) in enumerate((("l4s", "tab:blue"), ("classic", "tab:orange"))):
        v = m[f"btl_{cls}_sojourn_p99_ms"].to_numpy()
        label = {"l4s": "L4S", "classic": "classic"}[cls]
        _bars(ax, x + (k - 0.5) * 0.4, v, 0.4, f"no {label}", color=color, label=label)
    ax.set_yscale("log")
    top = np.nanmax(m[["btl_l4s_sojourn_p99_ms", "btl_classic_sojourn_p99_ms"]].to_numpy(), initial=1.0)
    ax.set_ylim(top=top * 20)  # room for the legend above the bars
    ax.legend(fontsize=7, frameon=False, ncol=2, loc="upper left")
    ax.set_title("bottleneck sojourn P99 per class (ms, log scale)", fontsize=9)
    for ax in axes.flat:
        ax.set_xticks(x, names)
        ax.tick_params(labelsize=8)
    trials = summ["trial"].nunique()
    fig.suptitle(
        f"Scenarios side by side, mean over {_plural(trials, 'trial')} (grey: reference; red: shared FIFO; "
        "green: priority queue / path separation)",
        fontsize=10,
    )
    fig.tight_layout()
    p = figdir / "side_by_side.png"
    fig.savefig(p, dpi=90)
    plt.close(fig)
    figs["side_by_side"] = p
    return figs


def _plural(n: int, word: str) -> str:
    """``1 trial``, ``2 trials``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _bars(ax: Any, x: Any, values: Any, width: float, missing: str, **kw: Any) -> None:
    """Bars at ``x``; where a value is missing (NaN) a hatched column labelled ``missing``, so that
    no value does not read as a bar of height 0."""
    import numpy as np
    from matplotlib.patches import Rectangle

    have = ~np.isnan(values)
    color = kw.pop("color", None)
    if isinstance(color, list):
        color = [c for c, h in zip(color, have, strict=True) if h]
    ax.bar(x[have], values[have], width, color=color, **kw)
    for xi in x[~have]:
        column = ax.get_xaxis_transform()  # x in data, y from the axes' bottom (0) to top (1)
        ax.add_patch(Rectangle((xi - width / 2, 0), width, 1, transform=column, fill=False, hatch="//", ec="0.7", lw=0))
        white = {"fc": "white", "ec": "none", "pad": 1}
        ax.text(xi, 0.5, missing, transform=column, rotation=90, ha="center", va="center", fontsize=7, bbox=white)


# The report's columns: header with its unit, "int" (a count) or "num", and the text of a cell
# without a value.
COLUMNS: dict[str, tuple[str, str, str]] = {
    "scenario": ("scenario", "text", ""),
    "call_rtt_p50_ms": ("call RTT P50 (ms)", "num", "no data"),
    "call_rtt_p95_ms": ("call RTT P95 (ms)", "num", "no data"),
    "call_rate_mbps": ("call rate (Mbit/s, max 5)", "num", "no data"),
    "call_loss_pct": ("call loss (%)", "num", "no data"),
    "stream_goodput_mbps": ("stream goodput (Mbit/s, of 10)", "num", "no data"),
    "stream_rtt_p50_ms": ("stream RTT P50 (ms)", "num", "no data"),
    "chunk_fct_p95_s": ("chunk completion P95 (s)", "num", "none done"),
    "l4s_xfers_done": ("L4S 10 MiB transfers done (of 5)", "int", "no data"),
    "l4s_xfer_fct_s": ("L4S 10 MiB transfer, mean (s)", "num", "none done"),
    "bottleneck": ("bottleneck egress", "text", ""),
    "classic_long_goodput_mbps": ("classic long flows, sum (Mbit/s)", "num", "no data"),
    "classic_rtt_p50_ms": ("classic RTT P50 (ms)", "num", "no data"),
    "classic_long_retrans": ("classic long flows, retransmissions (sum)", "num", "no data"),
    "classic_xfers_done": ("classic 5 MiB transfers done (of 5)", "int", "no data"),
    "classic_xfer_fct_s": ("classic 5 MiB transfer, mean (s)", "num", "none done"),
    "btl_l4s_sojourn_mean_ms": ("L4S sojourn mean (ms)", "num", "no L4S"),
    "btl_l4s_sojourn_p99_ms": ("L4S sojourn P99 (ms)", "num", "no L4S"),
    "btl_classic_sojourn_mean_ms": ("classic sojourn mean (ms)", "num", "no classic"),
    "btl_classic_sojourn_p99_ms": ("classic sojourn P99 (ms)", "num", "no classic"),
    "btl_drops": ("drops (packets)", "int", "no data"),
    "btl_marks": ("marks (packets)", "int", "no data"),
    "egress": ("egress", "text", ""),
    "class": ("class", "text", ""),
    "pkts": ("packets", "int", "no data"),
    "drops": ("drops", "int", "no data"),
    "marks": ("marks", "int", "no data"),
    "sojourn_mean_ms": ("sojourn mean (ms)", "num", "no data"),
    "sojourn_p99_ms": ("sojourn P99 (ms)", "num", "no data"),
}
L4S_COLUMNS = [
    "scenario",
    "call_rtt_p50_ms",
    "call_rtt_p95_ms",
    "call_rate_mbps",
    "call_loss_pct",
    "stream_goodput_mbps",
    "stream_rtt_p50_ms",
    "chunk_fct_p95_s",
    "l4s_xfers_done",
    "l4s_xfer_fct_s",
]
CLASSIC_COLUMNS = [
    "scenario",
    "classic_long_goodput_mbps",
    "classic_rtt_p50_ms",
    "classic_long_retrans",
    "classic_xfers_done",
    "classic_xfer_fct_s",
]
BOTTLENECK_COLUMNS = [
    "scenario",
    "bottleneck",
    "btl_l4s_sojourn_mean_ms",
    "btl_l4s_sojourn_p99_ms",
    "btl_classic_sojourn_mean_ms",
    "btl_classic_sojourn_p99_ms",
    "btl_drops",
    "btl_marks",
]


def _cell(v: Any, kind: str, missing: str) -> str:
    """A count as an integer (a mean over trials with one decimal), a measure to 3 significant
    digits (whole numbers from 100 on), and ``missing`` where there is no value."""
    if kind == "text":
        return str(v)
    if v is None or v != v:  # NaN
        return missing
    if kind == "int":
        return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _md_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    spec = [COLUMNS.get(c, (c, "num", "no data")) for c in cols]
    lines = ["| " + " | ".join(h for h, _, _ in spec) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        cells = [_cell(row[c], kind, missing) for c, (_, kind, missing) in zip(cols, spec, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# What each scenario is: its bottleneck, queue and paths (docs/icnp26.md, "Scenarios").
WHAT = {
    "S1": "The reference: the receiver access `r-access-6->lan-6` (100 Mbit/s, DualPI2) is the only "
    "bottleneck, with light background everywhere; L4S and classic share one path (the core2 planes).",
    "S2a": "The sender access `r-access-5->r-core1-5` is the bottleneck: a 2 x BDP FIFO that the heavy "
    "`eps_to_k` background loads. SRv6 is on, as in the study: L4S leaves AS5 through it, classic by "
    "`r-core2-5` except its ECN set-up SYNs and CWR segments, which the study's ECN rules send with L4S.",
    "S2b": "S2a with a priority queue at the sender access: L4S (DSCP 10) in the first band, capped by a "
    "tbf, with a 1 ms PIE; the background (and classic's CWR segments) in the second band (PIE, 15 ms).",
    "S3a": "The AS4 core `r-core2-4->r-4-3` is the bottleneck: a 2 x BDP FIFO that the heavy `s_to_m` "
    "background loads; L4S and classic share it.",
    "S3b": "S3a with SRv6 path separation: L4S goes AS5-AS4-AS1-AS2-AS6 on the core1 planes, around the "
    "loaded AS4 core; classic stays on it.",
    "S4a": "The AS2-AS6 peering `r-2-6->r-6-2` is the bottleneck: a 2 x BDP FIFO that the heavy `f_to_g` "
    "background loads; L4S and classic share it.",
    "S4b": "S4a with S2b's priority queue at the peering egress (L4S band capped by a tbf, PIE 1 ms).",
}


def _reference(name: str) -> str | None:
    """What a scenario is compared with: S1 for a shared FIFO, the shared FIFO for its fix."""
    return None if name == "S1" else "S1" if name.endswith("a") else name[:2] + "a"


def _narrative(mean: pd.DataFrame) -> list[str]:
    """Per scenario what it is and, from this run's means, what it shows next to its reference."""
    m = mean.set_index("scenario")
    lines = []
    for name in m.index:
        ref = _reference(name)
        ref = ref if ref in m.index else None

        def v(col: str, unit: str, n: str) -> str:
            x = m.loc[n, col]
            return _cell(x, *COLUMNS[col][1:]) + (f" {unit}" if x == x else "")  # none: "no data", no unit

        def xfers(kind: str, n: str) -> str:
            done = m.loc[n, f"{kind}_xfers_done"]
            mean = f", in {v(f'{kind}_xfer_fct_s', 's', n)} on average" if done else ""
            return f"{_cell(done, 'int', '')} of 5 finished{mean}"

        def sojourn(n: str) -> str:
            l4s = m.loc[n, "btl_l4s_sojourn_p99_ms"]
            classic = f"{v('btl_classic_sojourn_p99_ms', 'ms', n)} for classic"
            if l4s != l4s:  # NaN: S3b's L4S flows go around the bottleneck
                return f"none for L4S (no L4S packet crosses it), {classic}"
            return f"{v('btl_l4s_sojourn_p99_ms', 'ms', n)} for L4S, {classic}"

        def vs(what: Any, *a: str) -> str:
            return what(*a, name) + (f" ({ref}: {what(*a, ref)})" if ref else "")

        lead = f"Next to {ref}" if ref else "Its numbers" if name == "S1" else "Its numbers (its reference did not run)"
        lines += [
            f"**{name}**: {WHAT[name]} {lead}: the calls' RTT P95 is {vs(v, 'call_rtt_p95_ms', 'ms')}; the "
            f"streams get {vs(v, 'stream_goodput_mbps', 'Mbit/s')} of their 10; of the L4S 10 MiB transfers "
            f"{vs(xfers, 'l4s')}; the classic long flows get {vs(v, 'classic_long_goodput_mbps', 'Mbit/s')}; of "
            f"the classic 5 MiB transfers {vs(xfers, 'classic')}; the sojourn P99 at its bottleneck is "
            f"{vs(sojourn)}.",
            "",
        ]
    return lines


def _comparable(trials: int, duration: float, scale: float, heavy_load: float | None) -> list[str]:
    """A warning when the run's settings are not those of the table in docs/icnp26.md (``heavy_load``
    None: ``--background study``, which has a table of its own there)."""
    # The study background's table is at the study's rates (scale 1).
    docs = {"duration": (FULL["duration"], duration), "scale": (1.0 if heavy_load is None else FULL["scale"], scale)}
    if heavy_load is not None:
        docs["heavy load"] = (icnp26.HEAVY_LOAD, heavy_load)
    differ = {k: ab for k, ab in docs.items() if ab[0] != ab[1]}
    if not differ:
        return []
    unit = {"duration": " s", "scale": "", "heavy load": ""}
    quick = (trials, duration, scale) == (QUICK["trials"], QUICK["duration"], QUICK["scale"])
    trials_note = ", as there" if trials == FULL["trials"] else f" against {FULL['trials']:g}"
    return [
        f"**Not comparable with the table in docs/icnp26.md**: this {'`--quick` ' if quick else ''}run's "
        + ", ".join(f"{k} {b:g}{unit[k]}" for k, (_, b) in differ.items())
        + " against the table's "
        + ", ".join(f"{k} {a:g}{unit[k]}" for k, (a, _) in differ.items())
        + f" ({_plural(trials, 'trial')}{trials_note}). The traffic's times compress with the "
        "duration (fewer transfers finish, the background runs for less) and the background scales with "
        "the rates, so its numbers differ from the table's.",
        "",
    ]


def write_report(
    results: list[dict[str, Any]],
    out: Path,
    *,
    duration: float,
    scale: float,
    heavy_load: float | None = icnp26.HEAVY_LOAD,
    wall_s: float = 0.0,
) -> Path:
    """Write OUT/summary.csv, OUT/queues.csv, OUT/figures/*.png and OUT/report.md."""
    import pandas as pd

    summ = pd.DataFrame([_summary(r) for r in results])
    summ.to_csv(out / "summary.csv", index=False)
    qrows = []
    for r in results:
        c = r["classes"]
        for _, row in c[c["kind"] == "class"].iterrows():
            qrows.append(
                {
                    "scenario": r["scenario"],
                    "trial": r["trial"],
                    "egress": row["qdisc"],
                    "class": row["name"],
                    "pkts": row["deq_pkts"],
                    "drops": row["drops"],
                    "marks": row["marks"],
                    "sojourn_mean_ms": row["sojourn_mean_ms"],
                    "sojourn_p99_ms": row["sojourn_p99_ms"],
                }
            )
    queues = pd.DataFrame(qrows)
    queues.to_csv(out / "queues.csv", index=False)
    figs = _figures(results, summ, out / "figures")
    trials = summ["trial"].nunique()
    mean = summ.groupby("scenario", sort=False).mean(numeric_only=True).drop(columns=["trial"]).reset_index()
    mean["call_loss_pct"] = 100 * mean["call_loss_frac"]
    mean["bottleneck"] = summ.groupby("scenario", sort=False)["bottleneck"].first().to_numpy()
    qmean = (
        (
            queues.groupby(["scenario", "egress", "class"], sort=False)
            .mean(numeric_only=True)
            .drop(columns=["trial"])
            .reset_index()
        )
        if len(queues)
        else queues
    )
    # An egress or class no packet crossed (S2's second sender-access uplink, S3b's L4S at the
    # AS4 core): all zero, left out of the table and named below it.
    idle = (qmean[["pkts", "drops", "marks"]] == 0).all(axis=1) if len(qmean) else pd.Series(dtype=bool)
    idle_rows = qmean[idle] if len(qmean) else qmean
    lines = [
        "# l4sim: the multi-AS study (ICNP 2026)",
        "",
        f"{_plural(len(summ), 'run')}: {_plural(summ['scenario'].nunique(), 'scenario')} x "
        f"{_plural(trials, 'trial')} x {duration:g} s, core/peering/sender-access rates x {scale:g}, "
        + (
            "the study's own background process (`--background study`)"
            if heavy_load is None
            else f"background at the bottleneck {heavy_load:g} x its rate"
        )
        + f" (docs/icnp26.md); {wall_s:.0f} s wall.",
        "",
        *_comparable(trials, duration, scale, heavy_load),
        "## What each scenario is and shows",
        "",
        *_narrative(mean),
        f"## Side by side (mean over {_plural(trials, 'trial')})",
        "",
        "L4S traffic (TCP Prague streams and transfers, UDP Prague calls):",
        "",
        _md_table(mean[L4S_COLUMNS]),
        "",
        "Classic traffic (CUBIC):",
        "",
        _md_table(mean[CLASSIC_COLUMNS]),
        "",
        "The scenario's bottleneck, per class (DualPI2's L4S and classic queues, the priority queue's "
        "bands; a FIFO's one queue split by the packets' class):",
        "",
        _md_table(mean[BOTTLENECK_COLUMNS]),
        "",
        "![side by side](figures/side_by_side.png)",
        "",
        f"## Queue counters per class at the shaped egresses (mean over {_plural(trials, 'trial')})",
        "",
        _md_table(qmean[~idle]) if len(qmean) else "(none)",
        "",
    ]
    if len(idle_rows):
        lines += [
            "Left out, no packet crossed them: "
            + "; ".join(" ".join(r) for r in idle_rows[["scenario", "egress", "class"]].to_numpy())
            + ".",
            "",
        ]
    lines += ["## Over time (trial 1)", ""]
    for k in ("calls_rtt", "calls_rate", "classic_tput", "classic_rtt", "queues"):
        lines += [f"![{k}](figures/{figs[k].name})", ""]
    lines += ["Per run: `summary.csv`; per class and egress: `queues.csv`.", ""]
    rep = out / "report.md"
    rep.write_text("\n".join(lines))
    return rep
