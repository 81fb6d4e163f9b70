"""Export a store to CSV and write a self-contained HTML report (figures embedded as base64).

``results.csv``: one row per run: the factors (study order), then ``l4s_tput_mbps``,
``classic_tput_mbps``, ``l4s_qdelay_ms``, ``classic_qdelay_ms``, then everything else recorded
(seed, key, model version, timings, Jain index, utilisation, per-flow columns
``<flow>_<field>``, bottleneck qdisc columns ``qdisc_<name>_<field>``).
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from l4sim.studies.analysis import VerdictRules, add_verdicts, cells, verdict_table
from l4sim.sweep.store import FLOW_COLUMNS, METRIC_COLUMNS, Store

REFERENCE_ANRW24 = Path(__file__).with_name("presets") / "anrw24_testbed.csv"
_QDISC_FIELDS = (
    "kind",
    "enq_pkts",
    "deq_pkts",
    "drops",
    "marks",
    "sojourn_mean_ms",
    "sojourn_p50_ms",
    "sojourn_p99_ms",
    "max_backlog_pkts",
)


def results_frame(store: Store, design: str | None = None) -> pd.DataFrame:
    """Per-run rows with the study metrics and everything else recorded (see module doc)."""
    df = store.runs(design=design)
    if df.empty:
        return df
    fl = store.flows()
    if not fl.empty:
        fl = fl[fl["run_key"].isin(set(df["key"]))]
        wide = fl.set_index(["run_key", "name"])[[c for c in FLOW_COLUMNS if c != "name"]]
        wide = wide.unstack("name")
        wide.columns = [f"{name}_{col}" for col, name in wide.columns]
        wide = wide[sorted(c for c in wide.columns if c not in df.columns)]
        df = df.merge(wide, left_on="key", right_index=True, how="left")
    qrows = []
    for k in df["key"]:
        try:
            s = store.summary(k)
        except KeyError:
            continue
        r: dict[str, Any] = {"key": k}
        for q in s.get("qdiscs") or []:
            for f in _QDISC_FIELDS:
                r[f"qdisc_{q.get('name')}_{f}"] = q.get(f)
            for ek, ev in (q.get("extra") or {}).items():
                r[f"qdisc_{q.get('name')}_{ek}"] = ev
        for lk in s.get("links") or []:
            r[f"link_{lk.get('name')}_tx_pkts"] = lk.get("tx_pkts")
        r["conservation_ok"] = s.get("conservation_ok")
        qrows.append(r)
    if qrows:
        df = df.merge(pd.DataFrame(qrows), on="key", how="left")
    return df


def export_csv(store_dir: str | Path, csv: str | Path, design: str | None = None) -> int:
    """Write results.csv; returns the number of rows."""
    with _open(store_dir) as st:
        df = results_frame(st, design)
    Path(csv).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(csv, index=False)
    return len(df)


def _open(store_dir: str | Path) -> Store:
    return Store(store_dir)


#: |share sim - share testbed| beyond this is flagged in the comparison (the verdicts' share
#: tolerance, VerdictRules.share_tol: a difference the verdicts would notice).
SHARE_TOLERANCE = 0.1


def reference_comparison(cell_df: pd.DataFrame, reference: str | Path = REFERENCE_ANRW24) -> pd.DataFrame | None:
    """Simulated vs testbed (ANRW'24 reference CSV) share and queueing delays per cell."""
    p = Path(reference)
    if not p.exists() or cell_df.empty:
        return None
    ref = pd.read_csv(p)
    ref = ref.assign(rx_classic_ecn=ref["rx_legacy_ecn"].map({0: "none", 1: "classic"}))
    want: dict[str, Any] = {"btl_capacity": 100, "base_rtt": 10, "ecn_fallback": 0, "cc_classic": "cubic"}
    sim = cell_df
    for k, v in want.items():
        if k in sim:
            sim = sim[sim[k].astype(str).isin([str(v), str(float(v)) if not isinstance(v, str) else v])]
    if sim.empty or "rx_classic_ecn" not in sim:
        return None
    sim = sim.assign(n_bdp=sim["n_bdp"].astype(float))
    ref = ref.assign(n_bdp=ref["n_bdp"].astype(float))
    m = sim.merge(ref, on=["aqm", "n_bdp", "rx_classic_ecn"], how="inner")
    if m.empty:
        return None
    out = pd.DataFrame(
        {
            "aqm": m["aqm"],
            "n_bdp": m["n_bdp"],
            "classic ECN": m["rx_classic_ecn"],
            "share sim": m["share"],
            "share testbed": m["l4s_share"],
            "L4S qdelay sim": m["l4s_qdelay_ms_mean"],
            "L4S qdelay testbed": m["l4s_qdelay_ms"],
            "classic qdelay sim": m["classic_qdelay_ms_mean"],
            "classic qdelay testbed": m["legacy_qdelay_ms"],
        }
    )
    out["share diff"] = out["share sim"] - out["share testbed"]
    # relative delay (Q_c - Q_l) / Q_c, as the study's heatmaps, side by side
    qc, ql = out["classic qdelay testbed"], out["L4S qdelay testbed"]
    out["rel delay sim"] = m["rel_delay"] if "rel_delay" in m else float("nan")
    out["rel delay testbed"] = ((qc - ql) / qc).where(qc > 0)
    out["rel delay diff"] = out["rel delay sim"] - out["rel delay testbed"]
    out["share within tolerance"] = out["share diff"].abs().le(SHARE_TOLERANCE).map({True: "yes", False: "NO"})
    return out


def reference_cells(reference: str | Path = REFERENCE_ANRW24) -> pd.DataFrame | None:
    """The ANRW'24 testbed reference data as a cells table (for side-by-side heatmaps)."""
    p = Path(reference)
    if not p.exists():
        return None
    ref = pd.read_csv(p)
    q_l, q_c = ref["l4s_qdelay_ms"], ref["legacy_qdelay_ms"]
    return pd.DataFrame(
        {
            "aqm": ref["aqm"],
            "n_bdp": ref["n_bdp"].astype(float),
            "rx_classic_ecn": ref["rx_legacy_ecn"].map({0: "none", 1: "classic"}),
            "l4s_tput_mbps_mean": ref["l4s_tput_mean"],
            "classic_tput_mbps_mean": ref["legacy_tput_mean"],
            "l4s_qdelay_ms_mean": q_l,
            "classic_qdelay_ms_mean": q_c,
            "share": ref["l4s_tput_mean"] / (ref["l4s_tput_mean"] + ref["legacy_tput_mean"]),
            "rel_delay": (q_c - q_l) / q_c,
        }
    )


def _rel(p: Path, base: Path) -> str:
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(p.resolve())


def _img(path: Path) -> str:
    b = base64.b64encode(path.read_bytes()).decode()
    return f'<img src="data:image/png;base64,{b}" alt="{html.escape(path.stem)}">'


def _table(df: pd.DataFrame, index: bool = False) -> str:
    return df.to_html(index=index, float_format=lambda x: f"{x:.3f}", na_rep="n/a", border=0, classes="t")


CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}
table.t{border-collapse:collapse;font-size:12px}table.t td,table.t th{padding:2px 6px;
border-bottom:1px solid #ddd;text-align:right}img{max-width:100%}pre{background:#f6f6f6;
padding:.5em;font-size:12px;overflow:auto}h2{border-bottom:1px solid #ccc}"""


def rules_text(r: VerdictRules) -> str:
    """The verdict rules in words, with their thresholds (no Python repr in a report)."""
    return (
        f"favourable if the L4S share is at least the fair share minus {r.share_tol:g}, or at least "
        f"fair minus {r.share_tol_with_delay:g} with a relative delay of {r.delay_benefit:g} or more; "
        f"harmful if the classic share falls more than {r.harm_tol:g} below its fair share, or the "
        f"classic queueing delay rises above the baseline by more than {r.delay_rise_rel:.0%} + "
        f"{r.delay_rise_ms:g} ms"
    )


def write_report(
    store_dir: str | Path,
    out: str | Path,
    *,
    design: str | None = None,
    title: str = "l4sim study report",
    rules: VerdictRules | None = None,
    figures: Mapping[str, Path] | None = None,
    reference: str | Path | None = None,
    notes: str = "",
    max_embedded: int = 16,
) -> Path:
    """Write ``out`` (an .html file) from the store: status, verdicts, figures, cell table."""
    from l4sim.studies import plots

    out = Path(out)
    rules = rules or VerdictRules()
    with _open(store_dir) as st:
        runs = st.runs(design=design)
        status = pd.DataFrame(st.status())
        designs = st.designs()
    c = add_verdicts(cells(runs), rules) if not runs.empty else pd.DataFrame()
    if figures is None:
        figures = plots.study_figures(c, out.parent / "figures") if not c.empty else {}
    mv = sorted(set(runs["model_version"])) if not runs.empty else []
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title><style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p>Generated {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M UTC}; "
        f"model version {html.escape(', '.join(mv) or 'n/a')}; {len(runs)} runs, "
        f"{len(c)} cells.</p>",
    ]
    if notes:
        parts.append(f"<p>{html.escape(notes)}</p>")
    # A partial grid is never presented as complete: say what is missing, give no verdicts.
    shown = status if design is None or status.empty else status[status["design"] == design]
    partial = not shown.empty and bool((shown["missing"] > 0).any())
    if partial:
        have, total = int(shown["done"].sum()), int(shown["total"].sum())
        parts.append(
            f"<p class='partial'><b>Partial results: {have} of {total} planned runs are done.</b> "
            "Figures and the cell table show only the finished runs; no verdicts are given "
            "until the design is complete.</p>"
        )
    parts.append("<h2>Status</h2>" + (_table(status) if not status.empty else "<p>empty</p>"))
    parts.append("<h2>Is it OK to turn on TCP Prague?</h2>")
    if partial:
        parts.append("<p>No verdicts from a partial grid: finish the design (run the same command again).</p>")
    else:
        parts.append(
            "<p>100 Mbit/s, 10 ms, 5 ms threshold; OK = favourable to Prague and not "
            "harmful to the classic flow; n/a = the design has no such cells. Rules: "
            + html.escape(rules_text(rules))
            + " (docs/study-workflow.md in the l4sim repository).</p>"
        )
        parts.append(_table(verdict_table(runs, rules), index=True))
    items = list((figures or {}).items())
    for name, p in items[:max_embedded]:
        parts.append(f"<h2>{html.escape(name.replace('_', ' '))}</h2>{_img(Path(p))}")
    if len(items) > max_embedded:
        parts.append(
            "<h2>More figures</h2><ul>"
            + "".join(
                f"<li><a href='{html.escape(_rel(Path(p), out.parent))}'>{html.escape(name)}</a></li>"
                for name, p in items[max_embedded:]
            )
            + "</ul>"
        )
    ref = reference_comparison(c, reference or REFERENCE_ANRW24) if not c.empty else None
    if ref is not None:
        parts.append(
            "<h2>Simulation vs testbed (ANRW'24 reference data)</h2>"
            f"<p>Mean |share difference| = {ref['share diff'].abs().mean():.3f} "
            f"over {len(ref)} cells; {int((ref['share within tolerance'] == 'NO').sum())} cells differ by more "
            f"than {SHARE_TOLERANCE:g} (flagged NO). How close the model is, metric by metric: "
            "docs/validation.md in the l4sim repository.</p>" + _table(ref)
        )
    if not c.empty:
        cols = [x for x in c.columns if not x.endswith("_std")]
        parts.append("<h2>Cells (mean over trials, 95 % CI)</h2>" + _table(c[cols]))
    for d in designs:
        parts.append(f"<h2>Design {html.escape(d['name'])}</h2><pre>{html.escape(d['content'])}</pre>")
    parts.append("</body></html>")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts))
    return out


def status_lines(store_dir: str | Path) -> list[str]:
    with _open(store_dir) as st:
        rows = st.status()
    if not rows:
        return ["no designs in this store"]
    w = max(len(r["design"]) for r in rows)
    lines = [f"{'design':{w}s}  {'done':>7s} {'total':>7s} {'missing':>7s} {'errors':>7s}"]
    for r in rows:
        lines.append(f"{r['design']:{w}s}  {r['done']:7d} {r['total']:7d} {r['missing']:7d} {r['errors']:7d}")
    return lines


def _json(o: Any) -> str:
    return json.dumps(o, default=str)


__all__ = ["results_frame", "export_csv", "write_report", "reference_comparison", "status_lines", "METRIC_COLUMNS"]
