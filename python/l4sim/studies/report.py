"""Export a store to CSV and write a self-contained HTML report (figures embedded as base64).

``results.csv``: one row per run: the factors (study order), then the study's per-run metrics
(``analysis.run_metrics``: ``l4s_tput_mbps``, ``classic_tput_mbps``, ``l4s_qdelay_ms``,
``classic_qdelay_ms``, ``jain_index``, ``utilisation``), then everything else recorded (seed,
key, model version, backend, timings, per-flow columns ``<flow>_<field>``, bottleneck qdisc
columns ``qdisc_<name>_<field>``).
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from l4sim.studies.analysis import (
    METRICS,
    VERDICT_SCOPE,
    VerdictRules,
    add_verdicts,
    cells,
    delay_ok,
    relative_delay,
    scope_misses,
    throughput_share,
    verdict_table,
)
from l4sim.studies.reference import REFERENCE as REFERENCE_ANRW24
from l4sim.studies.reference import load_reference
from l4sim.studies.study import FACTOR_ORDER
from l4sim.sweep.store import FLOW_COLUMNS, Store

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


def results_frame(store: Store, design: str | None = None, *, superseded: bool = False) -> pd.DataFrame:
    """Per-run rows with the study metrics and everything else recorded (see module doc):
    the runs the store's designs plan now (``superseded``: also earlier model versions')."""
    df = store.runs(design=design, superseded=superseded)
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


#: |share sim - share testbed| beyond this is flagged in the comparison: the verdicts' share
#: tolerance (a difference the verdicts would notice), not ``validate.SHARE_TOLS``, the
#: validation's summary bands.
VERDICT_SHARE_TOL = VerdictRules.share_tol


def _reference_conditions(cell_df: pd.DataFrame) -> pd.DataFrame:
    """The simulated cells under the reference's conditions (100 Mbit/s, 10 ms, fallback off,
    Prague vs CUBIC), with a float buffer size."""
    want: dict[str, Any] = {"btl_capacity": 100, "base_rtt": 10, "ecn_fallback": 0, "cc_classic": "cubic"}
    sim = cell_df
    for k, v in want.items():
        if k in sim:
            sim = sim[sim[k].astype(str).isin([str(v), str(float(v)) if not isinstance(v, str) else v])]
    return sim.assign(n_bdp=sim["n_bdp"].astype(float)) if "n_bdp" in sim else sim


def reference_comparison(cell_df: pd.DataFrame, reference: str | Path = REFERENCE_ANRW24) -> pd.DataFrame | None:
    """Simulated vs testbed (ANRW'24 reference CSV) share, relative delay and queueing delays per cell."""
    if not Path(reference).exists() or cell_df.empty:
        return None
    sim = _reference_conditions(cell_df)
    if sim.empty or "rx_classic_ecn" not in sim:
        return None
    ref = load_reference(reference)
    ref = ref[["aqm", "n_bdp", "rx_classic_ecn", "l4s_share", "l4s_qdelay_ms", "legacy_qdelay_ms"]]
    m = sim.merge(ref, on=["aqm", "n_bdp", "rx_classic_ecn"], how="inner")
    if m.empty:
        return None
    out = pd.DataFrame(
        {
            "aqm": m["aqm"],
            "n_bdp": m["n_bdp"],
            "rx_classic_ecn": m["rx_classic_ecn"],
            "trials": m["n"] if "n" in m else float("nan"),
            "share_sim": m["share"],
            "share_tb": m["l4s_share"],
        }
    )
    out["share_diff"] = out["share_sim"] - out["share_tb"]
    # relative delay (Q_c - Q_l) / Q_c, as the study's heatmaps, side by side
    qc, ql = m["legacy_qdelay_ms"], m["l4s_qdelay_ms"]
    out["rel_delay_sim"] = m["rel_delay"] if "rel_delay" in m else float("nan")
    out["rel_delay_tb"] = [relative_delay(c, q) for c, q in zip(qc, ql, strict=True)]
    out["rel_delay_diff"] = out["rel_delay_sim"] - out["rel_delay_tb"]
    out["l4s_qdelay_ms_sim"] = m["l4s_qdelay_ms_mean"]
    out["l4s_qdelay_ms_tb"] = m["l4s_qdelay_ms"]
    out["classic_qdelay_ms_sim"] = m["classic_qdelay_ms_mean"]
    out["classic_qdelay_ms_tb"] = m["legacy_qdelay_ms"]
    out["share_ok"] = out["share_diff"].abs().le(VERDICT_SHARE_TOL).map({True: "yes", False: "NO"})
    return out


def out_of_tolerance(ref: pd.DataFrame) -> pd.DataFrame:
    """Booleans, the shape of ``reference_comparison``: the share difference beyond
    :data:`VERDICT_SHARE_TOL`, a queueing delay outside ``validate``'s max(1 ms, 25 %)."""
    off = pd.DataFrame(False, index=ref.index, columns=ref.columns)
    bad = ref["share_diff"].abs() > VERDICT_SHARE_TOL
    off["share_diff"] = off["share_ok"] = bad
    for who in ("l4s", "classic"):
        s, t = ref[f"{who}_qdelay_ms_sim"], ref[f"{who}_qdelay_ms_tb"]
        off[f"{who}_qdelay_ms_sim"] = ~pd.Series(delay_ok(s, t), index=ref.index) & s.notna()
    return off


def reference_cells(reference: str | Path = REFERENCE_ANRW24) -> pd.DataFrame | None:
    """The ANRW'24 testbed reference data as a cells table (for side-by-side heatmaps)."""
    if not Path(reference).exists():
        return None
    ref = load_reference(reference)
    tl, tc = ref["l4s_tput_mean"], ref["legacy_tput_mean"]
    q_l, q_c = ref["l4s_qdelay_ms"], ref["legacy_qdelay_ms"]
    return pd.DataFrame(
        {
            "aqm": ref["aqm"],
            "n_bdp": ref["n_bdp"],
            "rx_classic_ecn": ref["rx_classic_ecn"],
            "l4s_tput_mbps_mean": tl,
            "classic_tput_mbps_mean": tc,
            "l4s_qdelay_ms_mean": q_l,
            "classic_qdelay_ms_mean": q_c,
            "share": [throughput_share(a, b) for a, b in zip(tl, tc, strict=True)],
            "rel_delay": [relative_delay(c, q) for c, q in zip(q_c, q_l, strict=True)],
            "n": ref["l4s_tput_n"] if "l4s_tput_n" in ref else 10,
        }
    )


def _rel(p: Path, base: Path) -> str:
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(p.resolve())


def _img(path: Path, alt: str | None = None) -> str:
    b = base64.b64encode(path.read_bytes()).decode()
    return f'<img src="data:image/png;base64,{b}" alt="{html.escape(alt or path.stem)}">'


def fmt_number(x: Any) -> str:
    """A table entry: integers as such, other numbers in fixed point to about three digits
    (0.454, 4.53, 45.3, 453), booleans as yes / no, missing values empty."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, str):
        return x
    if isinstance(x, (int,)) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e6):
        return f"{int(x):d}"
    if isinstance(x, float):  # fixed point, never an exponent: 0.005, 4.53, 45.3, 453
        a = abs(x)
        t = f"{x:,.0f}" if a >= 100 else f"{x:.1f}" if a >= 10 else f"{x:.2f}" if a >= 1 else f"{x:.3f}"
        return t[1:] if t.startswith("-") and not t.strip("-0.") else t  # no "-0.000"
    return str(x)


#: The study's quantities: column stem -> (what, unit).
_QUANTITIES = {
    "share": ("L4S share", ""),
    "rel_delay": ("relative delay", ""),
    "l4s_tput_mbps": ("L4S throughput", "Mbit/s"),
    "classic_tput_mbps": ("classic throughput", "Mbit/s"),
    "l4s_qdelay_ms": ("L4S queueing delay", "ms"),
    "classic_qdelay_ms": ("classic queueing delay", "ms"),
}
_SIDE_NAMES = {"sim": "sim", "tb": "testbed", "diff": "difference", "err": "difference"}


def _heading(what: str, *notes: str) -> str:
    """ "L4S throughput (sim, Mbit/s)": the quantity, then its side and unit if any."""
    notes = tuple(n for n in notes if n)
    return f"{what} ({', '.join(notes)})" if notes else what


#: Table headings: column name -> what a reader sees (every table of the reports).
HEADINGS: dict[str, str] = {
    "aqm": "AQM",
    "n_bdp": "buffer (x BDP)",
    "btl_capacity": "bottleneck (Mbit/s)",
    "base_rtt": "base RTT (ms)",
    "ecn_threshold": "ECN threshold (ms)",
    "ecn_fallback": "Prague ECN fallback",
    "tx_l4s_ecn": "L4S sender ECN",
    "rx_l4s_ecn": "L4S receiver ECN",
    "tx_classic_ecn": "classic sender ECN",
    "rx_classic_ecn": "classic receiver ECN",
    "cc_l4s": "L4S CC",
    "cc_classic": "classic CC",
    "rx_l4s_cc": "L4S receiver CC",
    "rx_classic_cc": "classic receiver CC",
    "n_l4s": "L4S flows",
    "n_classic": "classic flows",
    "tree_level": "tree bottleneck level",
    "duration": "duration (s)",
    "sample_interval": "sample interval (s)",
    "n": "trials",
    "jain": "Jain's index",
    "ok": "OK",
    "total": "planned runs",
    "class_sim": "verdict class (sim)",
    "class_tb": "verdict class (testbed)",
    **{q: _heading(w, u) for q, (w, u) in _QUANTITIES.items()},
    **{f"{q}_mean": _heading(w, u) for q, (w, u) in _QUANTITIES.items()},
    **{f"{q}_{s}": _heading(w, side, u) for q, (w, u) in _QUANTITIES.items() for s, side in _SIDE_NAMES.items()},
    "share_ok": f"L4S share within {VERDICT_SHARE_TOL:g}",
    "l4s_qdelay_ok": "L4S queueing delay within tolerance",
    "classic_qdelay_ok": "classic queueing delay within tolerance",
    "l4s_qdelay_pattern": "L4S delay off: documented pattern",
    "classic_qdelay_pattern": "classic delay off: documented pattern",
    **{f"{q}_sim_in_tb": f"{w}: sim within testbed spread" for q, (w, _) in _QUANTITIES.items()},
    **{f"{q}_tb_in_sim": f"{w}: testbed within sim spread" for q, (w, _) in _QUANTITIES.items()},
}
#: Columns holding a factor's value: shown as written (0.5, 100), not to three digits.
_AS_WRITTEN = set(FACTOR_ORDER)


def html_table(
    df: pd.DataFrame, index: bool = False, *, cell_classes: pd.DataFrame | None = None, css: str = "t"
) -> str:
    """An HTML table in a horizontally scrolling wrapper, headed by :data:`HEADINGS`; columns
    with no value at all (every entry missing or "n/a") are left out; ``cell_classes``:
    booleans, True adds class "off"."""

    def empty(v: Any) -> bool:
        return v is None or (isinstance(v, str) and v == "n/a") or (isinstance(v, float) and not math.isfinite(v))

    keep = [c for c in df.columns if not df[c].map(empty).all()]
    d = df[keep]
    head = ([html.escape(str(d.index.name or ""))] if index else []) + [
        html.escape(HEADINGS.get(str(c), str(c))) for c in d.columns
    ]
    rows = []
    for pos, (idx, r) in enumerate(d.iterrows()):
        flagged = [c for c in keep if c in cell_classes] if cell_classes is not None else []
        off_row = cell_classes is not None and bool(flagged) and bool(cell_classes.iloc[pos][flagged].any())
        tds = [f"<th>{html.escape(str(idx))}</th>"] if index else []
        for c in keep:
            v = r[c]
            x = v.item() if hasattr(v, "item") else v
            off = cell_classes is not None and c in cell_classes and bool(cell_classes.iloc[pos][c])
            cls = " class='off'" if off else ""
            text = _as_written(x) if c in _AS_WRITTEN and isinstance(x, float) and math.isfinite(x) else fmt_number(x)
            tds.append(f"<td{cls}>{html.escape(text)}</td>")
        tr = "<tr class='out-of-tolerance'>" if off_row else "<tr>"
        rows.append(tr + "".join(tds) + "</tr>")
    return (
        f"<div class='scroll'><table class='{css}'><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}
div.scroll{overflow-x:auto;max-width:100%}
table.t{border-collapse:collapse;font-size:12px}table.t td,table.t th{padding:2px 6px;
border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
table.t thead th{white-space:normal;vertical-align:bottom;max-width:8em}img{max-width:100%}pre{background:#f6f6f6;
padding:.5em;font-size:12px;overflow:auto}h2{border-bottom:1px solid #ccc}
tr.out-of-tolerance{background:#fff4e5}td.off{background:#f8c9c4;font-weight:bold}
div.panels{display:flex;flex-wrap:wrap;gap:.5em;align-items:flex-start}
figure.panel{margin:0;flex:1 1 30%;min-width:260px}figure.panel figcaption{font-size:12px;text-align:center}
p.files{font-size:12px}"""


def rules_text(r: VerdictRules) -> str:
    """The verdict rules in words, with their thresholds (no Python repr in a report)."""
    return (
        f"favourable if the L4S share is at least the fair share minus {r.share_tol:g}, or at least "
        f"fair minus {r.share_tol_with_delay:g} with a relative delay of {r.delay_benefit:g} or more; "
        f"harmful if the classic share falls more than {r.harm_tol:g} below its fair share, or the "
        f"classic queueing delay rises above the baseline by more than {r.delay_rise_rel:.0%} + "
        f"{r.delay_rise_ms:g} ms"
    )


#: The metrics compared with the testbed: (heatmap value, heading).
COMPARED = (
    ("share", "L4S throughput share"),
    ("rel_delay", "classic relative queueing delay"),
    ("tput", "per-flow throughput"),
    ("qdelay", "per-flow queueing delay"),
)
_DOC = Path(__file__).resolve().parents[3] / "docs" / "validation.md"
#: Link target of "docs/validation.md": the file of this source checkout, else the repository path.
VALIDATION_DOC = _DOC.as_uri() if _DOC.exists() else "docs/validation.md"


def _per_cell(n: str) -> str:
    """ "1 trial per cell", "10 trials per cell"."""
    return f"{n} trial{'' if n == '1' else 's'} per cell"


def trials_text(n: pd.Series | Any) -> str:
    """ "10" or "1-3": the number of trials per cell."""
    vals = sorted({int(x) for x in pd.Series(n).dropna()}) if n is not None else []
    if not vals:
        return "?"
    return f"{vals[0]}" if len(vals) == 1 else f"{vals[0]}-{vals[-1]}"


_SIZES = {"full": "full page", "column": "one paper column, 3.5 in"}


def comparison_blocks(
    sim: pd.DataFrame,
    tb: pd.DataFrame,
    out_dir: Path,
    *,
    n_trials: tuple[str, str],
    panels: str = "rx_classic_ecn",
    prefix: str = "compare_",
) -> str:
    """HTML: per metric of :data:`COMPARED`, a ``<section class="comparison" id="compare-<metric>">``
    titled with the trials per cell, holding the simulation | testbed | difference heatmaps side by
    side (``<figure class="panel panel-<side>">``, PNG) and links to the three as one figure in two
    sizes (full page; one paper column, 3.5 in) as vector PDF, all written into ``out_dir``."""
    from l4sim.studies import plots

    n_sim, n_tb = n_trials
    parts = []
    for value, heading in COMPARED:
        files = {}
        for size in ("full", "column"):
            f = plots.compare_figure(sim, tb, value, panels=panels, trials=(n_sim, n_tb), size=size)
            files[size] = plots.save(f, out_dir / f"{prefix}{value}_{size}", ("pdf",))  # vector, for papers
        title = f"{heading}: simulation ({_per_cell(n_sim)}) | testbed ({_per_cell(n_tb)}) | difference"
        shown = []
        for side, label in plots.SIDES:
            f = plots.compare_figure(
                sim, tb, value, sides=(side,), panels=panels, trials=(n_sim, n_tb), title=f"{heading}: {label}"
            )
            png = plots.save(f, out_dir / f"{prefix}{value}_{side}", ("png",))[0]
            cap = {"sim": f"simulation, {_per_cell(n_sim)}", "testbed": f"testbed, {_per_cell(n_tb)}"}.get(
                side, "difference, simulation - testbed"
            )
            shown.append(
                f"<figure class='panel panel-{side}' id='{value}-{side}'>{_img(png, f'{heading}: {cap}')}"
                f"<figcaption>{html.escape(cap)}</figcaption></figure>"
            )
        links = ", ".join(
            f"<a href='{html.escape(_rel(p, out_dir.parent))}'>{_SIZES[size]} ({p.suffix[1:].upper()})</a>"
            for size, ps in files.items()
            for p in ps
        )
        parts.append(
            f"<section class='comparison' id='compare-{value}' data-metric='{value}'>"
            f"<h3>{html.escape(title)}</h3><div class='panels'>{''.join(shown)}</div>"
            f"<p class='files'>The three panels as one vector figure: {links}</p></section>"
        )
    return "\n".join(parts)


def comparison_section(
    c: pd.DataFrame, out_dir: Path, *, reference: str | Path = REFERENCE_ANRW24, prefix: str = "compare_"
) -> str:
    """HTML: per metric, simulation | testbed | difference heatmaps side by side (one
    ``<figure class="panel panel-<side>">`` each) and links to the combined figure in two sizes
    (full page and one paper column, vector PDF), written into ``out_dir``."""
    ref = reference_cells(reference)
    sim = _reference_conditions(c) if not c.empty else c
    if ref is None or sim.empty or "rx_classic_ecn" not in sim:
        return ""
    keys = set(zip(sim["aqm"], sim["n_bdp"].astype(float), sim["rx_classic_ecn"], strict=True))
    tb = ref[[k in keys for k in zip(ref["aqm"], ref["n_bdp"], ref["rx_classic_ecn"], strict=True)]]
    if tb.empty:
        return ""
    n_sim, n_tb = trials_text(sim["n"]), trials_text(tb["n"])
    parts = [
        "<h2 id='comparison'>Simulation | testbed | difference</h2>"
        f"<p>The testbed is the ANRW'24 reference data ({n_tb} trials x 60 s per cell); the simulation "
        f"has {_per_cell(n_sim)}; difference = simulation - testbed (blue: the simulation is lower). "
        "Rows AQM, columns buffer size; per-flow metrics read L4S (classic). "
        f"How close the model is, metric by metric: <a href='{VALIDATION_DOC}'>docs/validation.md</a>.</p>"
    ]
    parts.append(comparison_blocks(sim, tb, out_dir, n_trials=(n_sim, n_tb), prefix=prefix))
    return "\n".join(parts)


def cells_display(c: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The cell table as shown: the factors that vary, then each metric's mean "± 95 % CI"
    (the CI where there are two trials or more), Jain's index, utilisation and the verdicts;
    and the factors every cell shares, in words ("AQM = FIFO, base RTT (ms) = 10")."""
    factors = [f for f in FACTOR_ORDER + ("n",) if f in c]
    varying = [f for f in factors if c[f].map(_as_written).nunique() > 1]
    same = ", ".join(f"{HEADINGS.get(f, f)} = {_as_written(c[f].iloc[0])}" for f in factors if f not in varying)
    out = c[varying].copy()
    for q in ("share", "rel_delay", *(f"{m}_mean" for m in METRICS)):
        ci = c.get(f"{q.removesuffix('_mean')}_ci95")
        out[q] = [
            f"{fmt_number(v)} ± {fmt_number(e)}" if e is not None and math.isfinite(e) else v
            for v, e in zip(c[q], ci if ci is not None else [None] * len(c), strict=True)
        ]
    for k in ("jain", "utilisation", "favourable", "harmful", "ok"):
        if k in c:
            out[k] = c[k]
    return out, same


def _as_written(x: Any) -> str:
    """A factor's value as the study writes it: 0.5, 100, FIFO; no value as "none"."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "none"
    return f"{x:g}" if isinstance(x, float) else str(x)


def write_report(
    store_dir: str | Path,
    out: str | Path,
    *,
    design: str | None = None,
    **kw: Any,
) -> Path:
    """Write ``out`` (an .html file) from the store: status, verdicts, figures, testbed
    comparison, cell table (keywords: :func:`render_report`)."""
    with _open(store_dir) as st:
        runs = st.runs(design=design)
        status = pd.DataFrame(st.status())
        designs = st.designs()
        superseded = st.superseded()
    if design is not None and not status.empty:
        status = status[status["design"] == design]
    return render_report(runs, out, status=status, designs=designs, superseded=superseded, **kw)


def render_report(
    runs: pd.DataFrame,
    out: str | Path,
    *,
    status: pd.DataFrame | None = None,
    designs: list[dict[str, Any]] | None = None,
    superseded: int = 0,
    title: str = "l4sim study report",
    rules: VerdictRules | None = None,
    figures: Mapping[str, Path] | None = None,
    reference: str | Path | None = None,
    notes: str = "",
    max_embedded: int = 16,
    scope: Mapping[str, Any] | None = None,
) -> Path:
    """Write the HTML report ``out`` from per-run rows (``Store.runs``); ``status``: the store's
    design status (``Store.status``; a design with missing runs makes the report partial);
    ``superseded``: finished runs of earlier model versions the store keeps (``Store.superseded``);
    ``scope``: the cells the verdict table judges (default the study's, ``VERDICT_SCOPE``)."""
    from l4sim.studies import plots

    out = Path(out)
    rules = rules or VerdictRules()
    status = status if status is not None else pd.DataFrame()
    designs = designs or []
    c = add_verdicts(cells(runs), rules) if not runs.empty else pd.DataFrame()
    if figures is None:
        figures = plots.study_figures(c, out.parent / "figures") if not c.empty else {}
    mv = sorted(set(runs["model_version"])) if not runs.empty and "model_version" in runs else []
    n_trials = trials_text(c["n"]) if "n" in c else "?"
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title><style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p>Generated {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M UTC}; "
        f"model version {html.escape(', '.join(mv) or 'unknown')}; {len(runs)} runs, "
        f"{len(c)} cells, {_per_cell(n_trials)}.</p>",
    ]
    if notes:
        parts.append(f"<p>{html.escape(notes)}</p>")
    # A partial grid is never presented as complete: say what is missing, give no verdicts.
    partial = not status.empty and bool((status["missing"] > 0).any())
    if partial:
        have, total = int(status["done"].sum()), int(status["total"].sum())
        parts.append(
            f"<p class='partial'><b>Partial results: {have} of {total} planned runs are done.</b> "
            "Figures and the cell table show only the finished runs; no verdicts are given "
            "until the design is complete.</p>"
        )
    parts.append("<h2>Status</h2>" + (html_table(status) if not status.empty else "<p>empty</p>"))
    if superseded:
        parts.append(
            f"<p>The store also keeps {superseded} finished runs of an earlier model version, "
            "which this report leaves out (`l4sim study export --superseded` lists them).</p>"
        )
    parts.append("<h2>Is it OK to turn on TCP Prague?</h2>")
    if partial:
        parts.append("<p>No verdicts from a partial grid: finish the design (run the same command again).</p>")
    else:
        scope = dict(VERDICT_SCOPE if scope is None else scope)
        misses = scope_misses(runs, scope)
        lacks = (
            " <b>No run of this store is in that scope</b> ("
            + html.escape("; ".join(f"{k} is {', '.join(map(str, vs))} here" for k, vs in misses.items()))
            + "): l4sim study report --scope KEY=VALUE judges other cells."
            if misses
            else ""
        )
        parts.append(
            "<p>Cells at "
            + html.escape(", ".join(f"{k} {v}" for k, v in scope.items()))
            + "; OK = favourable to Prague and not harmful to the classic flow; columns the "
            "design has no cells for are left out."
            + lacks
            + " Rules: "
            + html.escape(rules_text(rules))
            + " (docs/study-workflow.md in the l4sim repository).</p>"
        )
        parts.append(html_table(verdict_table(runs, rules, scope=scope), index=True))
    ref = reference_comparison(c, reference or REFERENCE_ANRW24) if not c.empty else None
    if ref is not None:
        off = out_of_tolerance(ref)
        parts.append(comparison_section(c, out.parent / "figures", reference=reference or REFERENCE_ANRW24))
        parts.append(
            "<h2>Simulation vs testbed, cell by cell (ANRW'24 reference data)</h2>"
            f"<p>Mean |share difference| = {ref['share_diff'].abs().mean():.3f} "
            f"over {len(ref)} cells; {int((ref['share_ok'] == 'NO').sum())} cells differ by more "
            f"than {VERDICT_SHARE_TOL:g} (flagged NO). Highlighted: a share difference beyond "
            f"{VERDICT_SHARE_TOL:g}, or a simulated queueing delay outside max(1 ms, 25 %) of the testbed's. "
            "Delays in ms. How close the model is, metric by metric: "
            f"<a href='{VALIDATION_DOC}'>docs/validation.md</a>.</p>" + html_table(ref, cell_classes=off)
        )
    items = list((figures or {}).items())
    for name, p in items[:max_embedded]:
        head = f"{name[:1].upper()}{name[1:]} (simulation, {_per_cell(n_trials)})"
        parts.append(f"<h2>{html.escape(head)}</h2>{_img(Path(p), head)}")
    if len(items) > max_embedded:
        parts.append(
            "<h2>More figures</h2><ul>"
            + "".join(
                f"<li><a href='{html.escape(_rel(Path(p), out.parent))}'>{html.escape(name)}</a></li>"
                for name, p in items[max_embedded:]
            )
            + "</ul>"
        )
    if not c.empty:
        shown, same = cells_display(c)
        common = f"<p>Every cell: {html.escape(same)}.</p>" if same else ""
        parts.append("<h2>Cells (mean over trials ± 95 % CI)</h2>" + common + html_table(shown))
    for d in designs:
        parts.append(f"<h2>Design {html.escape(d['name'])}</h2><pre>{html.escape(d['content'])}</pre>")
    parts.append("</body></html>")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts))
    return out


def status_lines(store_dir: str | Path) -> list[str]:
    with _open(store_dir) as st:
        rows = st.status()
        old = st.superseded()
    if not rows:
        return ["no designs in this store"]
    w = max(len(r["design"]) for r in rows)
    lines = [f"{'design':{w}s}  {'done':>7s} {'total':>7s} {'missing':>7s} {'errors':>7s}"]
    for r in rows:
        lines.append(f"{r['design']:{w}s}  {r['done']:7d} {r['total']:7d} {r['missing']:7d} {r['errors']:7d}")
    if old:
        lines.append(
            f"(and {old} finished runs of an earlier model version, kept but left out of "
            "reports, verdicts, plots and exports; `export --superseded` includes them)"
        )
    return lines


__all__ = [
    "results_frame",
    "export_csv",
    "write_report",
    "render_report",
    "comparison_section",
    "reference_comparison",
    "html_table",
    "trials_text",
    "status_lines",
]
