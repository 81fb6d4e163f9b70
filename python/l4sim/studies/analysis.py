"""The study's metrics, aggregation over trials, and verdicts.

Per run (exactly as the study computed them):

- ``l4s_tput_mbps`` / ``classic_tput_mbps``: the flow's iperf3-style receiver goodput over the
  whole run, summed over its parallel streams (the engine's ``goodput_mbps`` of the flow named
  ``l4s`` / ``classic``);
- ``l4s_qdelay_ms`` / ``classic_qdelay_ms``: mean of the once-per-second srtt samples of the
  flow's first stream minus the base RTT (the engine's ``qdelay_ms``).

Per cell (a point without its trial): trials are averaged first, then

- Prague (L4S) throughput share ``S = T_l4s / (T_l4s + T_classic)`` (0.5 = equal shares);
- classic relative queueing delay ``D = (Q_classic - Q_l4s) / Q_classic`` (near 1: only the
  classic flow queues; can be well below -1);

plus mean, standard deviation and a 95 % confidence interval (Student t) of every metric over
the trials, Jain's index of the two mean throughputs, and mean bottleneck utilisation.

Verdicts (rules documented in docs/study-workflow.md, thresholds are :class:`VerdictRules`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from l4sim.api import jain
from l4sim.studies.study import AQMS, EXTRA_SETTINGS, FACTOR_ORDER

if TYPE_CHECKING:  # imported where used: the store's per-run metrics need neither
    import pandas as pd

METRICS = ("l4s_tput_mbps", "classic_tput_mbps", "l4s_qdelay_ms", "classic_qdelay_ms")

# Two-sided 95 % Student t quantiles t_{0.975, df} for df = 1..30.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


#: A simulated queueing delay agrees with the testbed's within max(DELAY_ABS_MS, DELAY_REL x it).
DELAY_ABS_MS = 1.0
DELAY_REL = 0.25


def delay_ok(sim: pd.Series | float, tb: pd.Series | float) -> Any:
    """``|Q_sim - Q_tb| <= max(1 ms, 25 % of Q_tb)``."""
    import numpy as np

    tol = np.maximum(DELAY_ABS_MS, DELAY_REL * np.abs(tb))
    return np.abs(np.asarray(sim) - np.asarray(tb)) <= tol


def t975(df: int) -> float:
    """t_{0.975} quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        return float("nan")
    if df <= 30:
        return _T975[df - 1]
    # Cornish-Fisher expansion around z = 1.959964 (error < 1e-4 for df > 30).
    z = 1.959963985
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_ci(values: Sequence[float]) -> tuple[float, float, float, int]:
    """(mean, sample std, 95 % CI half-width, n) of the finite values."""
    import numpy as np

    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    n = len(x)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    m = float(x.mean())
    if n == 1:
        return m, float("nan"), float("nan"), 1
    s = float(x.std(ddof=1))
    return m, s, t975(n - 1) * s / math.sqrt(n), n


def throughput_share(t_l4s: float, t_classic: float) -> float:
    tot = t_l4s + t_classic
    return t_l4s / tot if tot > 0 else float("nan")


def relative_delay(q_classic: float, q_l4s: float) -> float:
    return (q_classic - q_l4s) / q_classic if q_classic != 0 else float("nan")


def _flow(result: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for f in result.get("flows") or []:
        if f.get("name") == name:
            return f
    return None


def run_metrics(result: Mapping[str, Any], l4s: str = "l4s", classic: str = "classic") -> dict:
    """The study's per-run metrics from one run's result dict (results.rs schema), in the
    order of :data:`METRICS`, then Jain's index and the bottleneck's utilisation (the results
    store keeps them per run and shows them as columns in this order)."""
    fl, fc = _flow(result, l4s) or {}, _flow(result, classic) or {}
    links = result.get("links") or []
    link = next((lk for lk in links if lk.get("name") == "bottleneck"), links[0] if links else {})
    return {
        "l4s_tput_mbps": fl.get("goodput_mbps"),
        "classic_tput_mbps": fc.get("goodput_mbps"),
        "l4s_qdelay_ms": fl.get("qdelay_ms"),
        "classic_qdelay_ms": fc.get("qdelay_ms"),
        "jain_index": result.get("jain_index"),
        "utilisation": link.get("utilisation"),
    }


def cell_columns(df: pd.DataFrame) -> list[str]:
    """The factor columns that identify a cell (all factors present, except trial)."""
    return [c for c in FACTOR_ORDER + EXTRA_SETTINGS if c in df.columns and c != "trial"]


def cells(df: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Per-cell aggregation of per-run rows (as ``Store.runs()`` or ``results.csv``).

    Columns: the cell's factors, ``n`` (trials), ``<metric>_mean/_std/_ci95`` for the four study
    metrics, ``share`` and ``rel_delay`` (from the trial means, as the study), ``share_ci95``
    (t-interval over per-trial shares), ``jain`` (Jain's index of the mean per-stream
    throughputs: each sender's mean split over its ``n_l4s`` / ``n_classic`` streams),
    ``utilisation``.
    """
    import numpy as np
    import pandas as pd

    by = list(by) if by is not None else cell_columns(df)
    if df.empty:
        return pd.DataFrame(columns=by + ["n", "share", "rel_delay"])
    keyed = df.copy()
    for c in by:  # NaN (FIFO's threshold) would vanish from groupby: use a marker
        keyed[c] = keyed[c].astype(object).where(keyed[c].notna(), "-")
    rows = []
    for key, g in keyed.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        r: dict[str, Any] = {c: (None if v == "-" else v) for c, v in zip(by, key, strict=True)}
        r["n"] = len(g)
        for m in METRICS:
            mean, std, ci, _ = mean_ci(g[m].astype(float).tolist()) if m in g else (np.nan,) * 4
            r[f"{m}_mean"], r[f"{m}_std"], r[f"{m}_ci95"] = mean, std, ci
        tl, tc = r["l4s_tput_mbps_mean"], r["classic_tput_mbps_mean"]
        ql, qc = r["l4s_qdelay_ms_mean"], r["classic_qdelay_ms_mean"]
        r["share"] = throughput_share(tl, tc)
        r["rel_delay"] = relative_delay(qc, ql)
        per_trial = [
            throughput_share(a, b)
            for a, b in zip(g["l4s_tput_mbps"].astype(float), g["classic_tput_mbps"].astype(float), strict=True)
        ]
        _, r["share_std"], r["share_ci95"], _ = mean_ci(per_trial)
        # Jain's index over the senders' streams (each sender's mean split evenly over them)
        nl = int(r.get("n_l4s") or 1)
        nc = int(r.get("n_classic") or 1)
        r["jain"] = jain([tl / nl] * nl + [tc / nc] * nc) if nl + nc else float("nan")
        r["utilisation"] = float(g["utilisation"].astype(float).mean()) if "utilisation" in g else np.nan
        rows.append(r)
    out = pd.DataFrame(rows)
    if "aqm" in out:
        order = {a: i for i, a in enumerate(AQMS)}
        out = out.sort_values(
            by=["aqm"] + [c for c in ("n_bdp",) if c in out],
            key=lambda s: s.map(order) if s.name == "aqm" else s,
            kind="stable",
        ).reset_index(drop=True)
    return out


# --------------------------------------------------------------------------- verdicts


@dataclass(frozen=True)
class VerdictRules:
    """Thresholds of the verdict rules (see docs/study-workflow.md).

    favourable: share >= fair - share_tol, or (rel_delay >= delay_benefit and
                share >= fair - share_tol_with_delay)
    harmful:    classic share (1 - share) < (1 - fair) - harm_tol, or, when a baseline classic
                queueing delay is known, classic_qdelay > baseline * (1 + delay_rise_rel)
                + delay_rise_ms
    OK:         favourable and not harmful
    with fair = 0.5 for one flow each, N / (N + M) for N L4S vs M classic streams.
    """

    share_tol: float = 0.1
    delay_benefit: float = 0.5
    share_tol_with_delay: float = 0.25
    harm_tol: float = 0.1
    delay_rise_rel: float = 0.5
    delay_rise_ms: float = 1.0


def verdict(
    share: float,
    rel_delay: float,
    rules: VerdictRules = VerdictRules(),
    classic_qdelay: float | None = None,
    baseline_qdelay: float | None = None,
    fair: float = 0.5,
) -> dict:
    """favourable / harmful / ok of one cell (NaN share: no verdict).

    ``fair``: the L4S sender's fair share, 0.5 for 1 vs 1, N / (N + M) for N vs M streams.
    """
    import numpy as np

    if share is None or not np.isfinite(share):
        return {"favourable": None, "harmful": None, "ok": None}
    rd = rel_delay if rel_delay is not None and np.isfinite(rel_delay) else -np.inf
    fav = share >= fair - rules.share_tol or (rd >= rules.delay_benefit and share >= fair - rules.share_tol_with_delay)
    harm = (1 - share) < (1 - fair) - rules.harm_tol
    if (
        classic_qdelay is not None
        and baseline_qdelay is not None
        and np.isfinite(classic_qdelay)
        and np.isfinite(baseline_qdelay)
    ):
        harm = harm or classic_qdelay > baseline_qdelay * (1 + rules.delay_rise_rel) + rules.delay_rise_ms
    return {"favourable": bool(fav), "harmful": bool(harm), "ok": bool(fav and not harm)}


def add_verdicts(cell_df: pd.DataFrame, rules: VerdictRules = VerdictRules()) -> pd.DataFrame:
    import pandas as pd

    out = cell_df.copy()
    n_l = out["n_l4s"].astype(float) if "n_l4s" in out else pd.Series(1.0, index=out.index)
    n_c = out["n_classic"].astype(float) if "n_classic" in out else pd.Series(1.0, index=out.index)
    fair = n_l / (n_l + n_c)  # the L4S sender's fair share: its streams over all streams
    v = [verdict(s, d, rules, fair=f) for s, d, f in zip(out["share"], out["rel_delay"], fair.fillna(0.5), strict=True)]
    for k in ("favourable", "harmful", "ok"):
        out[k] = [x[k] for x in v]
    return out


# Rows of the study's "Is it OK to turn on TCP Prague?" table: (label, AQMs, classic ECN).
VERDICT_ROWS: tuple[tuple[str, tuple[str, ...], str | None], ...] = (
    ("single queue, no ECN", ("FIFO",), None),
    ("single queue + ECN", ("single_queue_FQ", "Codel"), "classic"),
    ("FQ + ECN", ("FQ", "FQ_Codel"), "classic"),
    ("DualPI2", ("DualPI2",), None),
)
VERDICT_COLUMNS: tuple[tuple[str, int, str], ...] = (
    ("fallback off, vs CUBIC", 0, "cubic"),
    ("fallback off, vs BBRv2", 0, "bbr2"),
    ("fallback on, vs CUBIC", 1, "cubic"),
    ("fallback on, vs BBRv2", 1, "bbr2"),
)
VERDICT_SCOPE = {"btl_capacity": 100, "base_rtt": 10, "ecn_threshold": 5, "rx_l4s_ecn": "accecn", "cc_l4s": "prague"}


def scope_misses(runs: pd.DataFrame, scope: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The factors of ``scope`` whose value no run has, each with the values the runs have
    (why a verdict table of these runs would be all "n/a"). Empty when some run matches every
    scope value the runs vary, or when there are no runs."""
    if runs.empty:
        return {}
    out = {}
    for k, v in scope.items():
        if k not in runs.columns or (k == "ecn_threshold" and "aqm" in runs and (runs["aqm"] == "FIFO").all()):
            continue
        present = runs[k].dropna().unique().tolist()
        if present and not any(_eq(x, v) for x in present):
            try:
                out[k] = sorted(present)
            except TypeError:
                out[k] = sorted(present, key=str)
    return out


def verdict_table(
    runs: pd.DataFrame, rules: VerdictRules = VerdictRules(), scope: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """The study's verdict table from per-run rows.

    Cells are restricted to ``scope`` (default: 100 Mbit/s, 10 ms, 5 ms threshold, Prague with
    AccECN; FIFO is matched whatever the threshold). A table entry is "yes" when every matching
    cell (all buffer sizes and AQMs of the row) is OK, "no" when none is, "mostly yes (k/n OK)"
    or "mostly no (k/n OK)" otherwise,
    and "n/a" without data. A factor the design does not vary takes its study default
    (fallback 0, classic CC cubic, classic receiver ECN classic when the row needs it).
    """
    import pandas as pd

    scope = dict(VERDICT_SCOPE if scope is None else scope)
    cdf = add_verdicts(cells(runs), rules) if not runs.empty else pd.DataFrame()
    defaults = {
        "ecn_fallback": 0,
        "cc_classic": "cubic",
        "rx_classic_ecn": "classic",
        "rx_l4s_ecn": "accecn",
        "cc_l4s": "prague",
    }
    table: dict[str, dict[str, str]] = {}
    for label, aqms, cecn in VERDICT_ROWS:
        row = {}
        for col, fb, cc in VERDICT_COLUMNS:
            if cdf.empty:
                row[col] = "n/a"
                continue
            m = cdf["aqm"].isin(aqms)
            want = dict(scope, ecn_fallback=fb, cc_classic=cc)
            if cecn is not None:
                want["rx_classic_ecn"] = cecn
            for k, v in want.items():
                if k == "ecn_threshold" and aqms == ("FIFO",):
                    continue
                if k in cdf.columns:
                    col_v = cdf[k]
                    m &= col_v.apply(lambda x, v=v: _eq(x, v))
                elif not _eq(defaults.get(k, v), v):
                    m &= False
            sel = cdf[m]
            oks = [x for x in sel["ok"] if x is not None]
            if not oks:
                row[col] = "n/a"
            elif all(oks):
                row[col] = "yes"
            elif not any(oks):
                row[col] = "no"
            else:
                k = sum(oks)
                row[col] = f"{'mostly yes' if 2 * k > len(oks) else 'mostly no'} ({k}/{len(oks)} OK)"
        table[label] = row
    out = pd.DataFrame.from_dict(table, orient="index")[[c for c, _, _ in VERDICT_COLUMNS]]
    out.index.name = "bottleneck"
    return out


def _eq(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)
