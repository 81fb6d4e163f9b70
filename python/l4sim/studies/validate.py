"""``l4sim validate``: the simulator against the testbed reference data, cell by cell.

The references (``testbed_prague_vs_cubic.csv`` and ``testbed_prague_vs_bbr.csv``, copies ship
as ``presets/anrw24_testbed.csv`` and ``presets/pam25_bbr_testbed.csv``; both are used by
default, 315 configurations) hold, per configuration (case, AQM, buffer, rate, RTT,
threshold, fallback, receiver ECN settings, CCs), the mean and standard deviation over 10
trials of 60 s of both flows' throughput and queueing delay, with the study's metric
definitions (docs/study.md). Every configuration becomes a study point (factor names of
``l4sim.studies.study``); trials are seeds (``H + trial``, as every study); the runs go through the
ordinary runner into a results store (resumable, shared with ``reproduce anrw24``: the same
scenario + seed + model version is the same run key), and ``analysis.cells`` averages them.

Comparison, per cell (simulated mean over the trials vs testbed mean):

* throughput and queueing delay of both flows: difference, and two spread checks:
  ``tb_in_sim`` = the testbed mean lies in the simulated trials' range widened to
  mean +- 2 x std (std over trials; 0 when every trial is the same), and ``sim_in_tb`` =
  the simulated mean lies in testbed mean +- 2 x testbed std (the reference gives only
  mean and std, so +- 2 std stands for "the trials' spread" on both sides);
* share error ``S_sim - S_tb`` (S = T_l4s / (T_l4s + T_classic) from the trial means);
* delay error per flow, within tolerance when ``|Q_sim - Q_tb| <= max(1 ms, 25 % of Q_tb)``;
* verdict class (``analysis.verdict``: favourable / harmful / OK) of the simulated and the
  testbed means, side by side.

Summary figures: fraction of the cells with ``|share error| <= 0.05`` and ``<= 0.10``;
fraction of **delay values** within tolerance, counting each flow of each cell separately
(2 per cell: the L4S and the classic flow's queueing delay), also reported per flow; the same
per reference case (Prague vs CUBIC no-ECN / ECN, BBRv1, BBRv2 ECN / no-ECN, BBRv3 ECN /
no-ECN); the study's verdict table (``analysis.verdict_table``) from the simulation and from
the testbed means, and whether its columns vs CUBIC and vs BBRv2 (fallback off) agree by class;
the delay values outside the tolerance counted by the documented pattern their cell type belongs
to (``DELAY_PATTERNS``, ``delay_pattern``), so a new kind of disagreement stands out.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from l4sim.studies.analysis import (
    DELAY_ABS_MS,
    DELAY_REL,
    VerdictRules,
    cells,
    delay_ok,
    relative_delay,
    throughput_share,
    verdict,
    verdict_table,
)
from l4sim.studies.factors import FACTOR_CCS
from l4sim.studies.reference import REFERENCES, load_reference
from l4sim.studies.study import Study

if TYPE_CHECKING:  # numpy and pandas are imported where used: `l4sim --help` registers the validate command
    import pandas as pd

#: Verdict-table columns compared with the testbed's (the ones the references cover).
VERDICT_COLS = ("fallback off, vs CUBIC", "fallback off, vs BBRv2")
#: Reference case -> the study's description of it, in report order.
CASES = {
    "cubic_noecn": "Prague vs CUBIC, no ECN",
    "cubic_ecn": "Prague vs CUBIC, ECN",
    "bbrv1_noecn": "Prague vs BBRv1, no ECN",
    "bbrv2_ecn": "Prague vs BBRv2, ECN",
    "bbrv2_noecn": "Prague vs BBRv2, no ECN",
    "bbrv3_ecn": "Prague vs BBRv3, ECN",
    "bbrv3_noecn": "Prague vs BBRv3, no ECN",
}

#: Tolerances of the summary figures.
SHARE_TOLS = (0.05, 0.10)
# delay tolerance max(DELAY_ABS_MS, DELAY_REL x testbed) and delay_ok: analysis (the report uses them too)
#: Half-width of "the trials' spread" in standard deviations.
SPREAD_STDS = 2.0

#: Documented patterns of delay values outside the tolerance, (key, label): docs/validation.md
#: ("Delay values outside the tolerance") says what was found for each and what was ruled out.
DELAY_PATTERNS = (
    ("starving", "Prague starving"),
    ("bbr-flow-queue", "a BBR flow's own flow queue"),
    ("codel-ecn", "CoDel's ECN marking"),
)
#: Testbed Prague share below which a cell counts as "Prague starves".
STARVING_SHARE = 0.2
_FLOW_QUEUES = frozenset({"FQ", "FQ_Codel", "FQ_Codel_L4S"})
_BBR = frozenset(c for c in FACTOR_CCS if c.startswith("bbr"))  # the BBR family, every build


def delay_pattern(role: str, aqm: str, cc_classic: str, share_tb: float) -> str:
    """The ``DELAY_PATTERNS`` key of a delay value's cell type, "" for none. By mechanism, not
    by the size of the error: Prague's value where the testbed's Prague starves (share below
    ``STARVING_SHARE``: its srtt carries waits for its next paced skb); a BBR classic flow's value
    behind flow queuing (FQ, FQ-CoDel, FQ-CoDel-L4S: the queue it keeps to itself); Prague's
    value under ECN-marking CoDel and FQ-CoDel, and the classic flow's in CoDel's shared queue
    (the queue level CoDel's marking holds Prague at)."""
    if role == "l4s" and share_tb < STARVING_SHARE:
        return "starving"
    if role == "classic" and cc_classic in _BBR and aqm in _FLOW_QUEUES:
        return "bbr-flow-queue"
    if (aqm == "FQ_Codel" and role == "l4s") or aqm == "Codel":
        return "codel-ecn"
    return ""


FULL_TRIALS, FULL_DURATION = 10, 60.0
QUICK_TRIALS, QUICK_DURATION = 2, 20.0

_KEYS = ["aqm", "n_bdp", "rx_classic_ecn", "cc_classic"]
# (our metric, the reference's mean column, the reference's std column)
_METRICS = (
    ("l4s_tput_mbps", "l4s_tput_mean", "l4s_tput_std"),
    ("classic_tput_mbps", "legacy_tput_mean", "legacy_tput_std"),
    ("l4s_qdelay_ms", "l4s_qdelay_ms", "l4s_srtt_std"),
    ("classic_qdelay_ms", "legacy_qdelay_ms", "legacy_srtt_std"),
)


class Interrupted(Exception):
    """Ctrl-C stopped the runs: no comparison is written from a partial grid."""


def reference_study(
    ref: pd.DataFrame, *, trials: int = FULL_TRIALS, duration: float = FULL_DURATION, name: str = "validate"
) -> Study:
    """A study whose points are exactly the reference's configurations.

    Factors are the columns that vary in the reference (AQM, buffer, classic receiver ECN);
    the others must be constant and go to ``[fixed]``. The L4S sender asks for AccECN and the
    classic sender for classic ECN (the receiver decides what is negotiated, docs/study.md).
    """
    cols = ["aqm", "n_bdp", "rx_classic_ecn", "cc_classic"]
    fixed_cols = ["btl_capacity", "base_rtt", "ecn_threshold", "ecn_fallback", "rx_l4s_ecn", "cc_l4s"]
    fixed: dict[str, Any] = {}
    for c in fixed_cols:
        vals = ref[c].dropna().unique()
        if len(vals) != 1:
            raise ValueError(f"reference column {c!r} varies ({list(vals)}); validate handles one such setting")
        v = vals[0]
        fixed[c] = v.item() if hasattr(v, "item") else v
    fixed.update(tx_l4s_ecn="accecn", tx_classic_ecn="classic", duration=float(duration))
    factors = {c: list(dict.fromkeys(ref[c].tolist())) for c in cols}
    doc: dict[str, Any] = {
        "name": name,
        "description": f"validation against the testbed reference ({len(ref)} configurations)",
        "trials": int(trials),
        "factors": factors,
        "fixed": fixed,
    }
    study = Study.from_dict(doc)
    have = {(p["aqm"], float(p["n_bdp"]), p["rx_classic_ecn"], p["cc_classic"]) for p in study.points()}
    want = set(zip(ref["aqm"], ref["n_bdp"].astype(float), ref["rx_classic_ecn"], ref["cc_classic"], strict=True))
    if have != want:  # not a full factorial: pin the reference's combinations
        combos = ", ".join(f"({a!r}, {b!r}, {e!r}, {c!r})" for a, b, e, c in sorted(want))
        doc["constraints"] = [f"(aqm, n_bdp, rx_classic_ecn, cc_classic) in [{combos}]"]
        study = Study.from_dict(doc)
    return study


_RULES = VerdictRules()  # the study's default verdict rules (frozen, shared)


def _within_spread(x: pd.Series, mean: pd.Series, std: pd.Series) -> pd.Series:
    half = SPREAD_STDS * std.fillna(0.0)
    return (x - mean).abs() <= half + 1e-9


def compare(runs: pd.DataFrame, ref: pd.DataFrame, rules: VerdictRules = _RULES) -> pd.DataFrame:
    """Per-cell comparison table (one row per reference configuration; see module doc)."""
    import numpy as np
    import pandas as pd

    c = cells(runs) if not runs.empty else pd.DataFrame(columns=_KEYS)
    c = c.assign(n_bdp=c["n_bdp"].astype(float)) if not c.empty else c
    keep = _KEYS + ["n"] + [f"{m}_{s}" for m, _, _ in _METRICS for s in ("mean", "std")]
    sim = c[[k for k in keep if k in c.columns]] if not c.empty else pd.DataFrame(columns=keep)
    m = ref.merge(sim, on=_KEYS, how="left")
    out = pd.DataFrame(
        {
            "case": m["case"],
            "aqm": m["aqm"],
            "n_bdp": m["n_bdp"],
            "rx_classic_ecn": m["rx_classic_ecn"],
            "cc_classic": m["cc_classic"],
        }
    )
    out["trials"] = m["n"].fillna(0).astype(int) if "n" in m else 0
    for metric, tb_mean, tb_std in _METRICS:
        sm, ss = m.get(f"{metric}_mean"), m.get(f"{metric}_std")
        sm = sm.astype(float) if sm is not None else pd.Series(np.nan, index=m.index)
        ss = ss.astype(float) if ss is not None else pd.Series(np.nan, index=m.index)
        out[f"{metric}_sim"] = sm
        out[f"{metric}_sim_std"] = ss
        out[f"{metric}_tb"] = m[tb_mean].astype(float)
        out[f"{metric}_tb_std"] = m[tb_std].astype(float)
        out[f"{metric}_diff"] = sm - m[tb_mean]
        out[f"{metric}_tb_in_sim"] = _within_spread(m[tb_mean], sm, ss) & sm.notna()
        out[f"{metric}_sim_in_tb"] = _within_spread(sm, m[tb_mean], m[tb_std]) & sm.notna()
    for side in ("sim", "tb"):
        tl, tc = out[f"l4s_tput_mbps_{side}"], out[f"classic_tput_mbps_{side}"]
        out[f"share_{side}"] = [throughput_share(a, b) for a, b in zip(tl, tc, strict=True)]
    out["share_err"] = out["share_sim"] - out["share_tb"]
    for tol in SHARE_TOLS:
        out[f"share_within_{tol:.2f}"] = out["share_err"].abs() <= tol + 1e-12
    for role in ("l4s", "classic"):
        s, t = out[f"{role}_qdelay_ms_sim"], out[f"{role}_qdelay_ms_tb"]
        out[f"{role}_qdelay_ok"] = pd.Series(delay_ok(s, t), index=out.index) & s.notna()
        out[f"{role}_qdelay_pattern"] = [
            delay_pattern(role, a, cc, sh)
            for a, cc, sh in zip(out["aqm"], out["cc_classic"], out["share_tb"], strict=True)
        ]
    for side in ("sim", "tb"):
        ql, qc = out[f"l4s_qdelay_ms_{side}"], out[f"classic_qdelay_ms_{side}"]
        out[f"rel_delay_{side}"] = [relative_delay(c, q) for c, q in zip(qc, ql, strict=True)]  # Q_classic 0: NaN
        v = [verdict(s, d, rules) for s, d in zip(out[f"share_{side}"], out[f"rel_delay_{side}"], strict=True)]
        out[f"class_{side}"] = [_class(x) for x in v]
    out["class_match"] = out["class_sim"] == out["class_tb"]
    out["off"] = ~out["share_within_0.10"] | ~out["l4s_qdelay_ok"] | ~out["classic_qdelay_ok"]
    return out


def _class(v: dict) -> str:
    if v["favourable"] is None:
        return "n/a"
    return ("favourable" if v["favourable"] else "unfavourable") + (", harmful" if v["harmful"] else "")


def verdict_class(entry: str) -> str:
    """The class of a verdict-table entry without its count: "mostly no (1/10 OK)" -> "mostly no"."""
    return str(entry).split(" (")[0]


def _pseudo_runs(ref: pd.DataFrame) -> pd.DataFrame:
    """The testbed means as one 'run' per cell (for ``verdict_table``)."""
    cols = ["aqm", "n_bdp", "btl_capacity", "base_rtt", "ecn_threshold", "ecn_fallback"]
    cols += ["rx_l4s_ecn", "rx_classic_ecn", "cc_l4s", "cc_classic"]
    runs = ref[cols].copy()
    runs["trial"] = 1
    for metric, tb_mean, _ in _METRICS:
        runs[metric] = ref[tb_mean].astype(float)
    return runs


@dataclass
class Summary:
    cells: int
    simulated: int
    share_within: dict[float, float]
    delay_values: int
    delay_within: float
    delay_within_l4s: float
    delay_within_classic: float
    class_match: float
    verdicts_sim: pd.DataFrame
    verdicts_tb: pd.DataFrame
    #: Verdict-table column -> whether every row matches by class (columns with testbed data).
    columns_match: dict[str, bool]
    #: One row per reference case: cells, share within +-0.10, delay values within tolerance.
    per_case: pd.DataFrame
    #: Per ``DELAY_PATTERNS`` key ("" = none): (simulated delay values of that cell type within
    #: the tolerance, simulated delay values of that cell type).
    delay_by_pattern: dict[str, tuple[int, int]]

    def lines(self) -> list[str]:
        out = [
            f"cells: {self.cells} ({self.simulated} simulated)",
            *(f"share within +-{t:.2f}: {f:.1%}" for t, f in self.share_within.items()),
            f"delay values within max({DELAY_ABS_MS:g} ms, {DELAY_REL:.0%}): {self.delay_within:.1%} of "
            f"{self.delay_values} (L4S flow {self.delay_within_l4s:.1%}, classic flow {self.delay_within_classic:.1%})",
            f"verdict class (favourable/harmful) equal per cell: {self.class_match:.1%}",
        ]
        by = self.delay_by_pattern
        if any(n for _, n in by.values()):
            labels = [*DELAY_PATTERNS, ("", "none of these")]
            parts = [f"{label} {by[k][0]}/{by[k][1]}" for k, label in labels if by.get(k, (0, 0))[1]]
            out.append(f"delay values within tolerance by documented pattern (docs/validation.md): {', '.join(parts)}")
        for _, r in self.per_case.iterrows():
            out.append(
                f"  {r['label']}: {r['cells']} cells, share within +-0.10 {r['share_within_0.10']:.0%}, "
                f"delay within {r['delay_within']:.0%} (Prague {r['delay_within_l4s']:.0%}, "
                f"classic {r['delay_within_classic']:.0%}), verdict class equal {r['class_match']:.0%}"
            )
        for col, ok in self.columns_match.items():
            out.append(
                f"study verdict table, column '{col}' (class: yes / mostly yes / mostly no / no): "
                f"{'match' if ok else 'DIFFER'}"
            )
        return out


def summarise(cmp: pd.DataFrame, runs: pd.DataFrame, ref: pd.DataFrame, rules: VerdictRules = _RULES) -> Summary:
    import pandas as pd

    sim_ok = cmp["trials"] > 0
    share_within = {t: float(cmp[f"share_within_{t:.2f}"].mean()) for t in SHARE_TOLS}
    dl, dc = cmp["l4s_qdelay_ok"], cmp["classic_qdelay_ok"]
    vt_sim = verdict_table(runs, rules) if not runs.empty else verdict_table(runs.iloc[:0], rules)
    vt_tb = verdict_table(_pseudo_runs(ref), rules)
    columns_match = {}
    for col in VERDICT_COLS:
        if (vt_tb[col] == "n/a").all():
            continue  # the references do not cover this column
        same = vt_sim[col].map(verdict_class) == vt_tb[col].map(verdict_class)
        columns_match[col] = bool(same.all()) if not runs.empty else False
    return Summary(
        cells=len(cmp),
        simulated=int(sim_ok.sum()),
        share_within=share_within,
        delay_values=2 * len(cmp),
        delay_within=float(pd.concat([dl, dc]).mean()),
        delay_within_l4s=float(dl.mean()),
        delay_within_classic=float(dc.mean()),
        class_match=float(cmp["class_match"].mean()),
        verdicts_sim=vt_sim,
        verdicts_tb=vt_tb,
        columns_match=columns_match,
        per_case=per_case(cmp),
        delay_by_pattern=delay_by_pattern(cmp),
    )


def delay_by_pattern(cmp: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Per pattern key ("" = none): (simulated delay values of that cell type within the
    tolerance, simulated delay values of that cell type)."""
    counts = {k: [0, 0] for k, _ in DELAY_PATTERNS} | {"": [0, 0]}
    for role in ("l4s", "classic"):
        sim = cmp[f"{role}_qdelay_ms_sim"].notna()
        for key, ok in zip(cmp.loc[sim, f"{role}_qdelay_pattern"], cmp.loc[sim, f"{role}_qdelay_ok"], strict=True):
            counts[key][0] += bool(ok)
            counts[key][1] += 1
    return {k: (a, n) for k, (a, n) in counts.items()}


def per_case(cmp: pd.DataFrame) -> pd.DataFrame:
    """Agreement figures per reference case (rows in the order of ``CASES``)."""
    import pandas as pd

    rows = []
    present = list(dict.fromkeys(cmp["case"]))
    cases = [c for c in CASES if c in present] + [c for c in present if c not in CASES]
    for case in cases:
        g = cmp[cmp["case"] == case]
        dl, dc = g["l4s_qdelay_ok"], g["classic_qdelay_ok"]
        rows.append(
            {
                "case": case,
                "label": CASES.get(case, case),
                "cells": len(g),
                "share_within_0.10": float(g["share_within_0.10"].mean()),
                "delay_within": float(pd.concat([dl, dc]).mean()),
                "delay_within_l4s": float(dl.mean()),
                "delay_within_classic": float(dc.mean()),
                "class_match": float(g["class_match"].mean()),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures


def diff_heatmap(cmp: pd.DataFrame, value: str, *, label: str, vmax: float, fmt: str = "{:+.2f}"):
    """Heatmap of a signed difference column: rows AQM, columns buffer, one panel per case."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    from l4sim.studies.study import AQMS

    cases = list(dict.fromkeys(cmp["case"]))
    aqms = [a for a in AQMS if a in set(cmp["aqm"])]
    bufs = sorted(cmp["n_bdp"].unique())
    fig, axes = plt.subplots(
        1,
        len(cases),
        figsize=(1.2 + 1.3 * len(bufs) * len(cases), 0.8 + 0.48 * len(aqms)),
        squeeze=False,
        constrained_layout=True,
    )
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-vmax, vmax=vmax)
    im = None
    for ax, case in zip(axes.flat, cases, strict=True):
        g = cmp[cmp["case"] == case]
        grid = np.full((len(aqms), len(bufs)), np.nan)
        for _, r in g.iterrows():
            grid[aqms.index(r["aqm"]), bufs.index(r["n_bdp"])] = r[value]
        im = ax.imshow(np.ma.masked_invalid(np.clip(grid, -vmax, vmax)), cmap="RdBu_r", norm=norm, aspect="auto")
        for i in range(len(aqms)):
            for j in range(len(bufs)):
                v = grid[i, j]
                ax.text(j, i, fmt.format(v) if np.isfinite(v) else "n/a", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(bufs)), [f"{b:g}" for b in bufs])
        ax.set_yticks(range(len(aqms)), aqms)
        ax.set_xlabel("buffer size, x BDP")
        ax.set_title(case, fontsize=9)
    if im is not None:
        fig.colorbar(im, ax=axes, label=label, shrink=0.9)
    fig.suptitle(f"simulation - testbed: {label}")
    return fig


def figures(cmp: pd.DataFrame, outdir: Path) -> dict[str, Path]:
    from l4sim.studies import plots

    outdir.mkdir(parents=True, exist_ok=True)
    specs = (
        ("share_err", "Prague share error", 0.3, "{:+.2f}"),
        ("l4s_qdelay_ms_diff", "Prague queueing delay error, ms", 10.0, "{:+.1f}"),
        ("classic_qdelay_ms_diff", "classic flow's queueing delay error, ms", 10.0, "{:+.1f}"),
        ("l4s_tput_mbps_diff", "Prague throughput error, Mbit/s", 30.0, "{:+.1f}"),
    )
    out = {}
    for col, label, vmax, fmt in specs:
        fig = diff_heatmap(cmp, col, label=label, vmax=vmax, fmt=fmt)
        out[col] = plots.save(fig, outdir / f"diff_{col}", ("png",))[0]
    return out


# --------------------------------------------------------------------------- report

_SHOW = [
    "case",
    "aqm",
    "n_bdp",
    "trials",
    "share_sim",
    "share_tb",
    "share_err",
    "rel_delay_sim",
    "rel_delay_tb",
    "l4s_tput_mbps_sim",
    "l4s_tput_mbps_tb",
    "classic_tput_mbps_sim",
    "classic_tput_mbps_tb",
    "l4s_qdelay_ms_sim",
    "l4s_qdelay_ms_tb",
    "classic_qdelay_ms_sim",
    "classic_qdelay_ms_tb",
    "l4s_qdelay_ok",
    "classic_qdelay_ok",
    "l4s_qdelay_pattern",
    "classic_qdelay_pattern",
    "l4s_tput_mbps_sim_in_tb",
    "l4s_tput_mbps_tb_in_sim",
    "class_sim",
    "class_tb",
]


def markdown(cmp: pd.DataFrame, s: Summary, *, trials: int, duration: float, model_version: str) -> str:
    import pandas as pd

    from l4sim.studies.report import HEADINGS, fmt_number

    lines = [
        "# l4sim validation against the testbed",
        "",
        f"{trials} trial{'s' * (trials != 1)} x {duration:g} s per cell (testbed: 10 x 60 s); "
        f"model version {model_version}.",
        "",
        *(f"- {x}" for x in s.lines()),
        "",
        "## Study verdict table (simulation | testbed)",
        "",
        "| column | bottleneck | simulation | testbed | class match |",
        "|---|---|---|---|---|",
    ]
    for col in s.columns_match:
        for row in s.verdicts_sim.index:
            a, b = s.verdicts_sim.loc[row, col], s.verdicts_tb.loc[row, col]
            same = "yes" if verdict_class(a) == verdict_class(b) else "NO"
            lines.append(f"| {col} | {row} | {a} | {b} | {same} |")
    off = cmp[cmp["off"]]
    lines += ["", f"## Cells off ({len(off)}): |share error| > 0.10 or a delay outside max(1 ms, 25 %)", ""]
    cols = ["aqm", "n_bdp", "share_sim", "share_tb"]
    cols += [f"{who}_qdelay_ms_{side}" for who in ("l4s", "classic") for side in ("sim", "tb")]
    lines.append("| case | " + " | ".join(HEADINGS[c] for c in cols) + " | delay pattern |")
    lines.append("|---|---|" + "---:|" * (len(cols) - 1) + "---|")
    for _, r in off.iterrows():
        vals = [r["aqm"], f"{r['n_bdp']:g}", *(fmt_number(r[c]) for c in cols[2:])]
        why = ", ".join(
            f"{role}: {r[f'{role}_qdelay_pattern'] or 'none'}"
            for role in ("l4s", "classic")
            if not r[f"{role}_qdelay_ok"] and pd.notna(r[f"{role}_qdelay_ms_sim"])
        )
        lines.append(f"| {CASES.get(r['case'], r['case'])} | " + " | ".join(vals) + f" | {why} |")
    legend = "; ".join(f"`{k}`: {label}" for k, label in DELAY_PATTERNS)
    lines += ["", f"Delay patterns: {legend} (docs/validation.md)."]
    return "\n".join(lines) + "\n"


def side_cells(cmp: pd.DataFrame, side: str) -> pd.DataFrame:
    """One side ("sim" or "tb") of the comparison as a cells table (``analysis.cells`` columns),
    the reference case (its description) in ``case``: for ``plots.compare_figure``."""
    import pandas as pd

    case = cmp["case"].map(lambda c: CASES.get(c, c))
    d = pd.DataFrame({"aqm": cmp["aqm"], "n_bdp": cmp["n_bdp"].astype(float), "case": case})
    for metric, _, _ in _METRICS:
        d[f"{metric}_mean"] = cmp[f"{metric}_{side}"]
    d["share"], d["rel_delay"] = cmp[f"share_{side}"], cmp[f"rel_delay_{side}"]
    d["n"] = cmp["trials"] if side == "sim" else FULL_TRIALS
    return d[cmp["trials"] > 0] if side == "sim" else d


def write_html(cmp: pd.DataFrame, s: Summary, figs: dict[str, Path], path: Path, *, md: str) -> Path:
    import pandas as pd

    from l4sim.studies.report import CSS, VALIDATION_DOC, comparison_blocks, html_table, trials_text

    sides = (("simulation", s.verdicts_sim), ("testbed", s.verdicts_tb))
    vt = pd.DataFrame({f"{side}: {col}": v[col] for col in s.columns_match for side, v in sides})
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>l4sim validation</title><style>{CSS}</style>"
        f"</head><body><h1>l4sim validation against the testbed</h1>",
        f"<p>Generated {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M UTC}.</p>",
        "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in s.lines()) + "</ul>",
        "<h2>Is it OK to turn on TCP Prague? (fallback off)</h2>" + html_table(vt, index=True),
    ]
    sim, tb = side_cells(cmp, "sim"), side_cells(cmp, "tb")
    if not sim.empty:
        n = (trials_text(sim["n"]), str(FULL_TRIALS))
        parts.append(
            "<h2 id='comparison'>Simulation | testbed | difference</h2><p>One row of panels per reference "
            f"case; the testbed has {FULL_TRIALS} trials x {FULL_DURATION:g} s per cell, the simulation {n[0]}. "
            f"Tolerances and what they mean: <a href='{VALIDATION_DOC}'>docs/validation.md</a>.</p>"
            + comparison_blocks(sim, tb, path.parent / "figures", n_trials=n, panels="case")
        )
    if figs:  # the per-case difference heatmaps of figures(), as files
        parts.append(
            "<p class='files'>Differences per case, as figures: "
            + ", ".join(f"<a href='figures/{html.escape(Path(p).name)}'>{html.escape(n)}</a>" for n, p in figs.items())
            + "</p>"
        )
    show = cmp[[c for c in _SHOW if c in cmp.columns]].assign(case=cmp["case"].map(lambda c: CASES.get(c, c)))
    off = pd.DataFrame(False, index=show.index, columns=show.columns)
    off["share_err"] = ~cmp["share_within_0.10"]
    off["l4s_qdelay_ms_sim"] = ~cmp["l4s_qdelay_ok"]
    off["classic_qdelay_ms_sim"] = ~cmp["classic_qdelay_ok"]
    off = off & (cmp["trials"] > 0).to_numpy()[:, None]
    parts.append("<h2>Cells off</h2>" + html_table(show[cmp["off"]], cell_classes=off[cmp["off"]]))
    parts.append("<h2>All cells</h2>" + html_table(show, cell_classes=off))
    parts.append(f"<h2>Summary (markdown)</h2><pre>{html.escape(md)}</pre></body></html>")
    path.write_text("\n".join(parts))
    return path


@dataclass
class Validation:
    comparison: pd.DataFrame
    summary: Summary
    files: dict[str, Path]


def validate(
    out: str | Path,
    *,
    quick: bool = False,
    trials: int | None = None,
    duration: float | None = None,
    store: str | Path | None = None,
    jobs: int | None = None,
    reference: str | Path | Sequence[str | Path] = REFERENCES,
    progress: bool = True,
    cells_filter: Sequence[tuple[str, float, str] | tuple[str, float, str, str]] | None = None,
) -> Validation:
    """Run the reference's configurations (missing runs only) and write the report into ``out``.

    ``cells_filter``: only these (aqm, n_bdp, rx_classic_ecn[, cc_classic]) configurations
    (the test subset; without the CC, every classic CC of that configuration).
    """
    from l4sim.sweep.runner import engine_model_version, run_study
    from l4sim.sweep.store import Store

    out = Path(out)
    trials = trials or (QUICK_TRIALS if quick else FULL_TRIALS)
    duration = duration or (QUICK_DURATION if quick else FULL_DURATION)
    ref = load_reference(reference)  # a bad reference: before --out is made
    if cells_filter is not None:
        want = {(c[0], float(c[1]), c[2], c[3] if len(c) > 3 else None) for c in cells_filter}
        keep = [
            (a, float(b), e, c) in want or (a, float(b), e, None) in want
            for a, b, e, c in zip(ref["aqm"], ref["n_bdp"], ref["rx_classic_ecn"], ref["cc_classic"], strict=True)
        ]
        ref = ref[keep].reset_index(drop=True)
    # The design's name says what it validates against: a store refuses another design under
    # a name it holds, and a validation against other references is another design.
    refs = [Path(reference)] if isinstance(reference, (str, Path)) else [Path(r) for r in reference]
    shipped = [r.resolve() for r in refs] == [r.resolve() for r in REFERENCES]
    against = "" if shipped else "-" + "+".join(r.stem for r in refs)
    name = f"validate-{trials}x{duration:g}s{against}" + ("" if cells_filter is None else f"-{len(ref)}cells")
    study = reference_study(ref, trials=trials, duration=duration, name=name)
    store_dir = Path(store) if store is not None else out / "store"
    outcome = run_study(study, store_dir, jobs=jobs, progress=progress)  # DesignConflictError: nothing made
    if outcome.interrupted:  # the missing cells would count as off
        raise Interrupted(
            f"interrupted: {outcome.already_done + outcome.done} of {outcome.planned} runs are in {store_dir}; "
            "no comparison from a partial grid (run the same command again to complete it)"
        )
    out.mkdir(parents=True, exist_ok=True)
    with Store(store_dir) as st:
        runs = st.runs(design=study.name)
    runs = runs[runs["status"] == "done"] if "status" in runs.columns else runs
    cmp = compare(runs, ref)
    s = summarise(cmp, runs, ref)
    files: dict[str, Path] = {}
    cmp.to_csv(out / "validation.csv", index=False)
    files["csv"] = out / "validation.csv"
    md = markdown(cmp, s, trials=trials, duration=duration, model_version=engine_model_version())
    (out / "summary.md").write_text(md)
    files["summary"] = out / "summary.md"
    figs = figures(cmp, out / "figures")
    files["html"] = write_html(cmp, s, figs, out / "report.html", md=md)
    return Validation(cmp, s, files)
