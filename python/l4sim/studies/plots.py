"""Figures of the study (matplotlib, Agg backend): heatmaps, N vs M bars, per-run time series.

Heatmaps follow the study's layout: rows = AQM in the study's order, columns = buffer size
(x BDP), one panel per value of the panel factors (e.g. (RTT, threshold) or the competitor /
ECN case). Cells are annotated with the L4S value and the classic value in parentheses for
per-flow metrics, or the value alone for the share and the relative delay. The share uses a
diverging colormap centred at 0.5, the relative delay one centred at 0.
Every ``save`` writes PNG and PDF (or the formats asked for).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

from l4sim.studies.study import AQMS  # noqa: E402

# value -> (title, colorbar label, per-flow pair columns or None, norm builder, cmap)
VARIANTS: dict[str, dict[str, Any]] = {
    "share": dict(
        label="L4S throughput share  T_l4s / (T_l4s + T_classic)",
        pair=None,
        cmap="RdBu_r",
        center=0.5,
        vmin=0.0,
        vmax=1.0,
        fmt="{:.2f}",
        math=r"L4S share $S = T_\mathrm{L4S} / (T_\mathrm{L4S} + T_\mathrm{C})$",
        name="L4S throughput share",
        dmath=r"$\Delta S$",
    ),
    "rel_delay": dict(
        label="classic relative queueing delay  (Q_c - Q_l) / Q_c",
        pair=None,
        cmap="PuOr",
        center=0.0,
        vmin=-2.0,
        vmax=1.0,
        fmt="{:.2f}",
        math=r"relative delay $D = (Q_\mathrm{C} - Q_\mathrm{L4S}) / Q_\mathrm{C}$",
        name="classic relative queueing delay",
        dmath=r"$\Delta D$",
    ),
    "tput": dict(
        label="throughput, Mbit/s (colour: L4S; text: L4S (classic))",
        pair=("l4s_tput_mbps_mean", "classic_tput_mbps_mean"),
        cmap="viridis",
        fmt="{:.1f}",
        math=r"throughput $T$, Mbit/s",
        name="per-flow throughput, L4S (classic)",
        dmath=r"$\Delta T$, Mbit/s",
    ),
    "qdelay": dict(
        label="queueing delay, ms, log scale (colour: L4S; text: L4S (classic))",
        pair=("l4s_qdelay_ms_mean", "classic_qdelay_ms_mean"),
        cmap="magma_r",
        fmt="{:.1f}",
        # 0.2 ms and 100 ms share one figure: a log scale keeps 1 ms and 10 ms apart
        log_floor=0.1,
        math=r"queueing delay $Q$, ms (log)",
        name="per-flow queueing delay, L4S (classic)",
        dmath=r"$\Delta Q$, ms (symmetric log)",
    ),
}

PRETTY = {
    "base_rtt": "RTT {} ms",
    "ecn_threshold": "T = {} ms",
    "btl_capacity": "{} Mbit/s",
    "rx_classic_ecn": "classic receiver ECN: {}",
    "rx_l4s_ecn": "L4S receiver ECN: {}",
    "tx_classic_ecn": "classic sender ECN: {}",
    "tx_l4s_ecn": "L4S sender ECN: {}",
    "trial": "trial {}",
    "duration": "{} s",
    "cc_classic": "vs {}",
    "cc_l4s": "{}",
    "ecn_fallback": "fallback {}",
    "n_l4s": "N = {}",
    "n_classic": "M = {}",
}


def _fmt_val(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def panel_title(keys: Sequence[str], values: Sequence[Any]) -> str:
    parts = []
    for k, v in zip(keys, values, strict=True):
        if k == "ecn_fallback":
            parts.append("fallback " + ("on" if v in (1, 1.0, True) else "off"))
        else:
            parts.append(PRETTY.get(k, k + " = {}").format(_fmt_val(v)))
    return ", ".join(parts)


def run_title(key: str, factors: Mapping[str, Any], width: int = 100) -> str:
    """A stored run's figure title: its key's first 12 characters, then its factors as the
    heatmaps' panels name them (the AQM and buffer first), wrapped to ``width``."""
    import textwrap

    order = ["aqm", "n_bdp", *(k for k in factors if k not in ("aqm", "n_bdp"))]
    parts = []
    for k in (k for k in order if k in factors):
        v = factors[k]
        if k == "aqm":
            parts.append(str(v))
        elif k == "n_bdp":
            parts.append(f"{_fmt_val(v)} x BDP")
        else:
            parts.append(panel_title([k], [v]))
    return textwrap.fill(f"run {key[:12]}: " + ", ".join(parts), width)


def save(fig: plt.Figure, path: str | Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Save ``fig`` as ``path`` with each suffix in ``formats``; returns the files."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for f in formats:
        p = path.with_suffix("." + f)
        fig.savefig(p, dpi=150 if f == "png" else None, bbox_inches="tight")
        out.append(p)
    plt.close(fig)
    return out


def _spread_fifo(df: pd.DataFrame, split: Sequence[str]) -> pd.DataFrame:
    """FIFO has no threshold: when the threshold splits panels or figures, show the FIFO cells
    in every threshold's panel (as the study's heatmaps do)."""
    if "ecn_threshold" not in split or "ecn_threshold" not in df:
        return df
    thr = df["ecn_threshold"]
    missing = thr.isna()
    values = sorted(thr.dropna().unique())
    if not missing.any() or not values:
        return df
    spread = [df[missing].assign(ecn_threshold=v) for v in values]
    return pd.concat([df[~missing], *spread], ignore_index=True)


def heatmap(
    cells: pd.DataFrame,
    value: str = "share",
    *,
    panels: Sequence[str] | None = None,
    title: str | None = None,
    ncols: int | None = None,
) -> plt.Figure:
    """Heatmap figure of per-cell results (``analysis.cells``).

    value: "share", "rel_delay", "tput" or "qdelay". panels: factors that split the figure
    (default: every varying factor other than aqm and n_bdp).
    """
    if value not in VARIANTS:
        raise ValueError(f"unknown heatmap value {value!r} (one of {list(VARIANTS)})")
    var = VARIANTS[value]
    df = cells.copy()
    if panels is None:
        skip = {"aqm", "n_bdp", "trial", "duration"}
        panels = [c for c in df.columns if c in PRETTY and c not in skip and df[c].dropna().nunique() > 1]
    panels = list(panels)
    df = _spread_fifo(df, panels)
    groups = list(df.groupby(panels, sort=True, dropna=False)) if panels else [((), df)]
    n = len(groups)
    ncols = ncols or min(n, 3)
    nrows = math.ceil(n / ncols)
    aqms = [a for a in AQMS if a in set(df["aqm"])]
    bufs = sorted(df["n_bdp"].dropna().unique())
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(
            max(1.0 + 1.3 * len(bufs) * ncols, 5.0 if title else 0),  # room for the title
            0.6 + (0.35 if title else 0) + 0.48 * max(len(aqms), 2) * nrows,
        ),
        squeeze=False,
        constrained_layout=True,
    )
    norm: matplotlib.colors.Normalize
    if var["pair"] is None:
        norm = TwoSlopeNorm(vcenter=var["center"], vmin=var["vmin"], vmax=var["vmax"])
    else:
        allv = pd.concat([df[var["pair"][0]], df[var["pair"][1]]]).astype(float)
        lo, hi = np.nanmin(allv) if allv.notna().any() else 0, np.nanmax(allv) if allv.notna().any() else 1
        if var.get("log_floor"):
            lo = max(lo, var["log_floor"])
            norm = matplotlib.colors.LogNorm(vmin=lo, vmax=hi if hi > lo else lo * 10, clip=True)
        else:
            norm = matplotlib.colors.Normalize(vmin=lo, vmax=hi if hi > lo else lo + 1)
    im = None
    for ax, (key, g) in zip(axes.flat, groups, strict=False):
        key = key if isinstance(key, tuple) else (key,)
        grid = np.full((len(aqms), len(bufs)), np.nan)
        text = [["n/a"] * len(bufs) for _ in aqms]
        for _, r in g.iterrows():
            if r["aqm"] not in aqms or pd.isna(r["n_bdp"]):
                continue
            i, j = aqms.index(r["aqm"]), bufs.index(r["n_bdp"])
            if var["pair"] is None:
                v = r[value]
                grid[i, j] = v
                text[i][j] = var["fmt"].format(v) if pd.notna(v) else "n/a"
            else:
                a, b = r[var["pair"][0]], r[var["pair"][1]]
                grid[i, j] = a
                text[i][j] = f"{var['fmt'].format(a)}\n({var['fmt'].format(b)})"
        im = ax.imshow(np.ma.masked_invalid(grid), cmap=var["cmap"], norm=norm, aspect="auto")
        for i in range(len(aqms)):
            for j in range(len(bufs)):
                v = grid[i, j]
                dark = False
                if np.isfinite(v):  # white text on dark cells (relative luminance)
                    r_, g_, b_, _ = plt.get_cmap(var["cmap"])(norm(v))
                    dark = 0.2126 * r_ + 0.7152 * g_ + 0.0722 * b_ < 0.45
                ax.text(
                    j,
                    i,
                    text[i][j],
                    ha="center",
                    va="center",
                    fontsize=7 if var["pair"] else 8,
                    color="white" if dark else "black",
                )
        ax.set_xticks(range(len(bufs)), [_fmt_val(float(b)) for b in bufs])
        ax.set_yticks(range(len(aqms)), aqms)
        ax.set_xlabel("buffer size, x BDP")
        ax.set_ylabel("AQM")
        if panels:
            ax.set_title(panel_title(panels, key), fontsize=9)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    if im is not None:
        fig.colorbar(im, ax=axes, label=var["math"], shrink=0.9)
    if title:
        fig.suptitle(title)
    return fig


def flows_bars(
    cells: pd.DataFrame, *, capacity: float | None = None, panels: Sequence[str] = ("aqm",), ncols: int = 3
) -> plt.Figure:
    """N vs M flows: mean per-flow throughput of each side, with the fair-share line.

    x = (N, M); bars = per-flow throughput of the L4S and classic senders (sender total over
    its flow count) with 95 % CI; dashed line = fair share capacity / (N + M).
    """
    df = cells.copy()
    groups: list[tuple[Any, pd.DataFrame]] = list(df.groupby(list(panels), sort=False)) if panels else [((), df)]
    if "aqm" in panels:
        order = {a: i for i, a in enumerate(AQMS)}
        at = list(panels).index("aqm")  # the AQM's place in a group's key (not always the first)

        def by_aqm(group: tuple[Any, pd.DataFrame]) -> int:
            key = group[0] if isinstance(group[0], tuple) else (group[0],)
            return order.get(key[at], 99)

        groups.sort(key=by_aqm)
    n = len(groups)
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.0 * nrows), squeeze=False, constrained_layout=True)
    for ax, (key, g) in zip(axes.flat, groups, strict=False):
        key = key if isinstance(key, tuple) else (key,)
        g = g.sort_values(["n_l4s", "n_classic"])
        nl = g["n_l4s"].astype(float).to_numpy()
        nc = g["n_classic"].astype(float).to_numpy()
        x = np.arange(len(g))
        tl = g["l4s_tput_mbps_mean"].to_numpy() / np.maximum(nl, 1)
        tc = g["classic_tput_mbps_mean"].to_numpy() / np.maximum(nc, 1)
        el = np.nan_to_num(g["l4s_tput_mbps_ci95"].to_numpy() / np.maximum(nl, 1))
        ec = np.nan_to_num(g["classic_tput_mbps_ci95"].to_numpy() / np.maximum(nc, 1))
        ax.bar(x - 0.2, tl, 0.4, yerr=el, label="L4S (per flow)", color="tab:blue")
        ax.bar(x + 0.2, tc, 0.4, yerr=ec, label="classic (per flow)", color="tab:orange")
        cap = capacity
        if cap is None and "btl_capacity" in g:
            cap = float(g["btl_capacity"].iloc[0])
        if cap:
            fair = cap / (nl + nc)
            ax.hlines(fair, x - 0.45, x + 0.45, colors="k", linestyles="--", label="fair share")
        ax.set_xticks(x, [f"{int(a)} vs {int(b)}" for a, b in zip(nl, nc, strict=True)], rotation=60, fontsize=7)
        ax.set_xlabel("N L4S vs M classic flows")
        ax.set_ylabel("throughput per flow, Mbit/s")
        ax.set_title(
            panel_title(list(panels), key) if panels and tuple(panels) != ("aqm",) else str(key[0]) if key else "",
            fontsize=9,
        )
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    return fig


def timeseries(series: pd.DataFrame, *, title: str | None = None, base_rtt_ms: float | None = None) -> plt.Figure:
    """Per-run time series from a stored run (``Store.series(key)``): throughput, cwnd, srtt,
    queueing delay (bottleneck sojourn, or srtt - base RTT) and cumulative CE marks."""
    t = series["t"].to_numpy()
    names = {c.split(".")[1] for c in series.columns if c.startswith("flow.")}
    flows = [n for n in ("l4s", "classic") if n in names] + sorted(names - {"l4s", "classic"})
    qd = sorted({c.split(".")[1] for c in series.columns if c.startswith("qdisc.")})
    cycle = ["tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink"]
    color = {"l4s": "tab:blue", "classic": "tab:orange"}
    for idx, other in enumerate(n for n in flows if n not in color):
        color[other] = cycle[idx % len(cycle)]
    panels = [
        ("tput_mbps", "throughput, Mbit/s"),
        ("cwnd", "cwnd, segments"),
        ("srtt_ms", "smoothed RTT, ms"),
        ("qdelay", "queueing delay, ms"),
        ("marks", "cumulative CE marks"),
    ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.0 * len(panels)), sharex=True, constrained_layout=True)
    for ax, (k, label) in zip(axes, panels, strict=True):
        if k == "qdelay":
            drawn = False
            for q in qd:
                c = f"qdisc.{q}.sojourn_ms"
                if c in series:
                    ax.plot(t, series[c], label=f"{q} sojourn", color="0.3")
                    drawn = True
            if not drawn and base_rtt_ms is not None:
                for f in flows:
                    c = f"flow.{f}.srtt_ms"
                    if c in series:
                        ax.plot(t, series[c] - base_rtt_ms, label=f, color=color[f])
        elif k == "marks":
            for f in flows:
                c = f"flow.{f}.ce_fed_back"
                if c in series:
                    ax.plot(t, series[c], label=f"{f} (fed back)", color=color[f])
            for q in qd:
                c = f"qdisc.{q}.marks"
                if c in series:
                    ax.plot(t, series[c], label=f"{q} marks", linestyle="--", color="0.3")
        else:
            for f in flows:
                c = f"flow.{f}.{k}"
                if c in series:
                    ax.plot(t, series[c], label=f, color=color[f])
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time, s")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


# Factors that split heatmaps, in priority order: the first two varying ones become panels of
# one figure, the others give separate figures.
SPLIT_ORDER = (
    "base_rtt",
    "ecn_threshold",
    "rx_classic_ecn",
    "cc_classic",
    "cc_l4s",
    "rx_l4s_ecn",
    "ecn_fallback",
    "btl_capacity",
    "tx_classic_ecn",
    "tx_l4s_ecn",
    "n_l4s",
    "n_classic",
    "duration",
)


def _slug(keys: Sequence[str], values: Sequence[Any]) -> str:
    return "__" + "_".join(f"{k}-{_fmt_val(v)}" for k, v in zip(keys, values, strict=True))


def _trials(cells: pd.DataFrame) -> str:
    """ "10 trials" or "1-3 trials": the trials per cell of a cells table."""
    n = sorted({int(x) for x in cells["n"].dropna()}) if "n" in cells else []
    if not n:
        return "? trials"
    return f"{n[0]} trial" + ("" if n == [1] else "s") if len(n) == 1 else f"{n[0]}-{n[-1]} trials"


def study_figures(
    cells: pd.DataFrame,
    out: str | Path,
    *,
    prefix: str = "",
    formats: Sequence[str] = ("png", "pdf"),
    max_panels: int = 2,
) -> dict[str, Path]:
    """The standard figures of a study's cells; returns {heading: PNG path}.

    Heatmaps (share, relative delay, throughput, queueing delay) with one panel per value of
    the first ``max_panels`` varying factors of :data:`SPLIT_ORDER` (e.g. RTT x threshold),
    and one figure per combination of the remaining varying factors. N vs M designs get the
    per-flow throughput bars instead.
    """
    out = Path(out)
    figs: dict[str, Path] = {}
    if cells.empty:
        return figs
    varying = [c for c in SPLIT_ORDER if c in cells and cells[c].dropna().nunique() > 1]
    if "n_l4s" in varying or "n_classic" in varying:
        rest = [c for c in ("cc_classic", "cc_l4s", "n_bdp") if c in cells and cells[c].nunique() > 1]
        f = flows_bars(cells, panels=["aqm"] + rest)
        figs["Per-flow throughput"] = save(f, out / f"{prefix}flows_per_flow_throughput", formats)[0]
        return figs
    panels, pages = varying[:max_panels], varying[max_panels:]
    cells = _spread_fifo(cells, pages)
    page_groups = list(cells.groupby(pages, sort=True, dropna=False)) if pages else [((), cells)]
    for key, g in page_groups:
        key = key if isinstance(key, tuple) else (key,)
        suffix = _slug(pages, key) if pages else ""
        page = panel_title(pages, key) if pages else None
        for value, name in (
            ("share", "heatmap_share"),
            ("rel_delay", "heatmap_rel_delay"),
            ("tput", "heatmap_throughput"),
            ("qdelay", "heatmap_qdelay"),
        ):
            ttl = f"{VARIANTS[value]['name']}: simulation, {_trials(g)} per cell" + (f"; {page}" if page else "")
            f = heatmap(g, value, panels=panels, title=ttl)
            heading = VARIANTS[value]["name"] + (f", {page}" if page else "")
            figs[heading] = save(f, out / f"{prefix}{name}{suffix}", formats)[0]
    return figs


# --------------------------------------------------------------------------- sim | testbed | difference

#: The sides of a comparison figure, in order: (key, heading).
SIDES = (("sim", "simulation"), ("testbed", "testbed"), ("diff", "difference (sim - testbed)"))
#: Figure sizes: "full" (a page) or "column" (one paper column, 3.5 in wide).
COLUMN_WIDTH_IN = 3.5


def _grids(df: pd.DataFrame, value: str, aqms: list, bufs: list) -> tuple[np.ndarray, np.ndarray]:
    """(colour values, second values) on the AQM x buffer grid: for per-flow metrics the L4S
    and the classic flow's value, else the value and NaN."""
    var = VARIANTS[value]
    a, b = np.full((len(aqms), len(bufs)), np.nan), np.full((len(aqms), len(bufs)), np.nan)
    for _, r in df.iterrows():
        if r["aqm"] not in aqms or pd.isna(r["n_bdp"]) or float(r["n_bdp"]) not in bufs:
            continue
        i, j = aqms.index(r["aqm"]), bufs.index(float(r["n_bdp"]))
        if var["pair"] is None:
            a[i, j] = r.get(value, np.nan)
        else:
            a[i, j], b[i, j] = r.get(var["pair"][0], np.nan), r.get(var["pair"][1], np.nan)
    return a, b


def _value_norm(value: str, arrays: Sequence[np.ndarray]) -> matplotlib.colors.Normalize:
    var = VARIANTS[value]
    if var["pair"] is None:
        return TwoSlopeNorm(vcenter=var["center"], vmin=var["vmin"], vmax=var["vmax"])
    allv = np.concatenate([x.ravel() for x in arrays])
    allv = allv[np.isfinite(allv)]
    lo, hi = (float(allv.min()), float(allv.max())) if allv.size else (1.0, 10.0)
    if var.get("log_floor"):
        lo = max(lo, var["log_floor"])
        return matplotlib.colors.LogNorm(vmin=lo, vmax=max(hi, lo * 10), clip=True)
    return matplotlib.colors.Normalize(vmin=lo, vmax=hi if hi > lo else lo + 1)


def _diff_norm(value: str, diff: np.ndarray) -> matplotlib.colors.Normalize:
    """Diverging, centred at 0; delays on a symmetric log scale (1 ms and 100 ms apart)."""
    d = np.abs(diff[np.isfinite(diff)])
    m = float(d.max()) if d.size and d.max() > 0 else 1.0
    if value == "qdelay":
        return matplotlib.colors.SymLogNorm(linthresh=1.0, vmin=-max(m, 2.0), vmax=max(m, 2.0), base=10)
    # a floor per metric: rounding noise (1e-16) is no reason for a full-strength colour
    m = max(m, {"share": 0.1, "rel_delay": 0.1, "tput": 2.0}.get(value, 0.0))
    return TwoSlopeNorm(vcenter=0.0, vmin=-m, vmax=m)


def _draw(ax, a: np.ndarray, b: np.ndarray, cmap: str, norm, fmt: str, fontsize: float, signed: bool = False):
    im = ax.imshow(np.ma.masked_invalid(a), cmap=cmap, norm=norm, aspect="auto")
    f = fmt.replace("{:", "{:+") if signed else fmt
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            v, w = a[i, j], b[i, j]
            if not np.isfinite(v):
                continue  # no data: left blank (masked), never "n/a" text
            r_, g_, b_, _ = plt.get_cmap(cmap)(norm(v))
            dark = 0.2126 * r_ + 0.7152 * g_ + 0.0722 * b_ < 0.45
            t = f.format(v) + (f"\n({f.format(w)})" if np.isfinite(w) else "")
            ax.text(j, i, t, ha="center", va="center", fontsize=fontsize, color="white" if dark else "black")
    return im


def compare_figure(
    sim: pd.DataFrame,
    testbed: pd.DataFrame,
    value: str,
    *,
    sides: Sequence[str] = ("sim", "testbed", "diff"),
    panels: str | None = "rx_classic_ecn",
    trials: tuple[Any, Any] = (None, None),
    size: str = "full",
    title: str | None = None,
) -> plt.Figure:
    """Simulation | testbed | difference heatmaps of one metric (rows AQM, columns buffer).

    ``sim`` and ``testbed`` are cells tables (``analysis.cells`` / ``report.reference_cells``);
    ``panels``: the factor splitting each side (default the classic receiver's ECN).
    Simulation and testbed share one colour scale (log for delays); the difference (sim -
    testbed, per cell present in both) uses a diverging scale centred at 0. Per-flow metrics
    are annotated "L4S (classic)". ``size``: "full" (sides side by side) or "column" (3.5 in
    wide, sides stacked, for one paper column). ``trials``: (sim, testbed) trials per cell, in
    the titles. Labels use matplotlib math text.
    """
    if value not in VARIANTS:
        raise ValueError(f"unknown heatmap value {value!r} (one of {list(VARIANTS)})")
    if size not in ("full", "column"):
        raise ValueError(f"unknown figure size {size!r} (full or column)")
    var = VARIANTS[value]
    both = pd.concat([sim, testbed], ignore_index=True)
    aqms = [a for a in AQMS if a in set(both["aqm"])]
    bufs = sorted({float(b) for b in both["n_bdp"].dropna()})
    if panels and panels in sim and panels in testbed:
        in_sim = set(sim[panels].dropna())  # in the testbed's order (the reference cases)
        keys = [k for k in dict.fromkeys(testbed[panels].dropna()) if k in in_sim]
    else:
        keys, panels = [None], None
    grids: dict[tuple[str, Any], tuple[np.ndarray, np.ndarray]] = {}
    for k in keys:
        s = sim if panels is None else sim[sim[panels] == k]
        t = testbed if panels is None else testbed[testbed[panels] == k]
        (sa, sb), (ta, tb) = _grids(s, value, aqms, bufs), _grids(t, value, aqms, bufs)
        grids[("sim", k)], grids[("testbed", k)], grids[("diff", k)] = (sa, sb), (ta, tb), (sa - ta, sb - tb)
    vnorm = _value_norm(value, [grids[(sd, k)][x] for sd in ("sim", "testbed") for k in keys for x in (0, 1)])
    dnorm = _diff_norm(value, np.concatenate([grids[("diff", k)][0].ravel() for k in keys]))
    column = size == "column"
    n_sim, n_tb = trials

    def per_cell(n: Any) -> str:
        return "" if n is None else f", {n} trial{'' if str(n) == '1' else 's'}/cell"

    heads = {
        "sim": ("sim." if column else "simulation") + per_cell(n_sim),
        "testbed": "testbed" + per_cell(n_tb),
        "diff": "sim. - testbed" if column else dict(SIDES)["diff"],
    }
    nb, na, ns, nk = len(bufs), len(aqms), len(sides), len(keys)
    fs = 4.5 if column else (7 if var["pair"] else 8)
    if column:  # sides stacked, panels side by side
        nrows, ncols = ns, nk
        figsize = (COLUMN_WIDTH_IN, 0.5 + ns * (0.55 + 0.18 * na * (1.25 if var["pair"] else 1.0)))
    else:
        nrows, ncols = nk, ns
        figsize = (1.6 + 1.25 * nb * ns, 0.7 + 0.48 * na * nk * (1.15 if var["pair"] else 1.0))
    with plt.rc_context({"font.size": 6 if column else 9, "axes.titlesize": 6 if column else 9}):
        fig, axes = plt.subplots(nrows, ncols, figsize=figsize, squeeze=False, constrained_layout=True)
        ims: dict[str, Any] = {}
        for si, side in enumerate(sides):
            for ki, k in enumerate(keys):
                ax = axes[si, ki] if column else axes[ki, si]
                a, b = grids[(side, k)]
                if side == "diff":
                    cmap, norm = "RdBu_r", dnorm
                else:
                    cmap, norm = var["cmap"], vnorm
                ims[side] = _draw(ax, a, b, cmap, norm, var["fmt"], fs, signed=side == "diff")
                ax.set_xticks(range(nb), [_fmt_val(float(x)) for x in bufs])
                ax.set_yticks(range(na), aqms if (ki == 0 if column else si == 0) else [""] * na)
                ax.tick_params(labelsize=fs + 0.5 if column else 7, length=2)
                if (si == ns - 1) if column else (ki == nk - 1):
                    ax.set_xlabel(r"buffer, $\times$ BDP")
                sub = PRETTY.get(panels, "{}").format(_fmt_val(k)) if panels else ""
                if column and panels == "rx_classic_ecn":
                    sub = f"classic ECN: {k}"
                ax.set_title(heads[side] + (f"\n{sub}" if sub else ""))
        value_axes = [ax for side in sides if side != "diff" for ax in _side_axes(axes, sides, side, column)]
        if value_axes:
            fig.colorbar(
                ims[next(s for s in sides if s != "diff")],
                ax=value_axes,
                label=var["math"],
                shrink=0.9,
                pad=0.01,
                aspect=30,
            )
        if "diff" in sides:
            fig.colorbar(
                ims["diff"],
                ax=_side_axes(axes, sides, "diff", column),
                label=var["dmath"],
                shrink=0.9,
                pad=0.01,
                aspect=30,
            )
        if title is None:
            title = var["name"]
            if n_sim is not None and n_tb is not None:
                title += f": simulation ({n_sim}) vs testbed ({n_tb} trials per cell)"
        fig.suptitle(title)
    return fig


def _side_axes(axes: np.ndarray, sides: Sequence[str], side: str, column: bool) -> list:
    i = list(sides).index(side)
    return list(axes[i, :]) if column else list(axes[:, i])
