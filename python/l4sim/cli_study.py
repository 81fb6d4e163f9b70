"""`l4sim study ...` and `l4sim reproduce ...` subcommands.

``l4sim.cli`` calls :func:`register` with its argparse subparsers; every subcommand sets
``func`` (``args -> int`` exit code) with ``set_defaults``. ``python -m l4sim.cli_study`` runs
these commands standalone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from l4sim.study import StudyError

ANRW24_DEFAULT_TRIALS = 10
ANRW24_DEFAULT_DURATION = 60.0


def register(subparsers: argparse._SubParsersAction) -> None:
    study = subparsers.add_parser("study", help="run and analyse studies (factorial designs)")
    ss = study.add_subparsers(dest="study_command", metavar="COMMAND")
    study.set_defaults(func=lambda a: (study.print_help(), 2)[1])

    p = ss.add_parser("run", help="run a study (file or preset) into a results store")
    p.add_argument("study", metavar="FILE_OR_PRESET")
    p.add_argument("--store", required=True, metavar="DIR", help="results directory")
    p.add_argument("-j", "--jobs", type=int, default=None, help="local workers (default: all cores)")
    p.add_argument("--dask", metavar="tcp://host:port", help="run on a Dask scheduler")
    p.add_argument("--limit", type=int, metavar="N", help="do at most N runs")
    p.add_argument("--trials", type=int, help="override the number of trials")
    p.add_argument("--duration", type=float, help="override the run duration, s")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_run)

    p = ss.add_parser("plan", help="show a study's factors and run count")
    p.add_argument("study", metavar="FILE_OR_PRESET")
    p.add_argument("--toml", action="store_true", help="print the study file")
    p.add_argument("--runs", action="store_true", help="list every run with its seed")
    p.set_defaults(func=cmd_plan)

    p = ss.add_parser("status", help="done / total / missing runs per design in a store")
    p.add_argument("store", metavar="DIR")
    p.set_defaults(func=cmd_status)

    p = ss.add_parser("export", help="export one row per run to CSV")
    p.add_argument("store", metavar="DIR")
    p.add_argument("--csv", required=True, metavar="FILE")
    p.add_argument("--design", help="only this design's runs")
    p.set_defaults(func=cmd_export)

    p = ss.add_parser("presets", help="list the built-in study designs")
    p.set_defaults(func=cmd_presets)

    p = ss.add_parser("verdicts", help='the "Is it OK to turn on TCP Prague?" table')
    p.add_argument("store", metavar="DIR")
    p.add_argument("--design")
    p.add_argument("--cells", action="store_true", help="also print per-cell verdicts")
    p.set_defaults(func=cmd_verdicts)

    p = ss.add_parser("plot", help="heatmaps / bar plots of a store; time series of a run")
    p.add_argument("store", metavar="DIR")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--design")
    p.add_argument("--run", metavar="KEY", help="plot this run's time series (key prefix ok)")
    p.add_argument("--format", action="append", dest="formats", help="png, pdf, svg (repeatable; default png + pdf)")
    p.set_defaults(func=cmd_plot)

    p = ss.add_parser("report", help="write an HTML report of a store")
    p.add_argument("store", metavar="DIR")
    p.add_argument("--out", required=True, metavar="FILE.html")
    p.add_argument("--design")
    p.set_defaults(func=cmd_report)

    r = subparsers.add_parser("reproduce", help="reproduce a published result end to end")
    rs = r.add_subparsers(dest="reproduce_what", metavar="WHAT")
    r.set_defaults(func=lambda a: (r.print_help(), 2)[1])
    p = rs.add_parser(
        "anrw24",
        help="the ANRW'24 grid: store, results.csv, heatmaps, verdicts, report.html",
        description=f"Runs the ANRW'24 grid (Prague vs CUBIC, 100 Mbit/s, 10 ms, T = 5 ms, nine "
        f"AQMs x five buffers x CUBIC ECN off/on) into OUT/store (resumable) and writes "
        f"OUT/results.csv, OUT/figures/, OUT/verdicts.csv and OUT/report.html. Defaults are "
        f"the paper's {ANRW24_DEFAULT_TRIALS} trials x {ANRW24_DEFAULT_DURATION:g} s (900 runs, "
        f"about 2 minutes on 2 cores); --trials 2 --duration 20 gives a quick look.",
    )
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("-j", "--jobs", type=int, default=None)
    p.add_argument("--dask", metavar="tcp://host:port")
    p.add_argument("--trials", type=int, default=ANRW24_DEFAULT_TRIALS)
    p.add_argument("--duration", type=float, default=ANRW24_DEFAULT_DURATION)
    p.add_argument("--limit", type=int, metavar="N")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_reproduce_anrw24)
    from l4sim import icnp26_report

    icnp26_report.register(rs)

    from l4sim import validate

    validate.register(subparsers)


def _err(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


def _load(spec: str):
    from l4sim.study import load

    return load(spec)


def _run_and_report(study, store: Path, args) -> int:
    from l4sim.runner import run_study
    from l4sim.store import StoreLockedError

    try:
        out = run_study(
            study, store, jobs=args.jobs, dask=args.dask, limit=args.limit, progress=not getattr(args, "quiet", False)
        )
    except (StoreLockedError, StudyError) as e:
        return _err(str(e))
    print(
        f"{study.name}: {out.done} runs done now, {out.already_done} already in the store, "
        f"{out.errors} failed, {out.missing} missing of {out.planned}"
    )
    for m in out.error_messages:
        print(f"  failed: {m}", file=sys.stderr)
    if out.interrupted:
        print("interrupted: the store is consistent; run the same command again to resume", file=sys.stderr)
        return 130
    return 1 if out.errors else 0


def cmd_run(args) -> int:
    try:
        study = _load(args.study)
        ov = {}
        if args.trials:
            ov["trials"] = args.trials
        if args.duration:
            ov["duration"] = args.duration
        if ov:
            study = study.with_overrides(**ov)
    except StudyError as e:
        return _err(str(e))
    return _run_and_report(study, Path(args.store), args)


def cmd_plan(args) -> int:
    try:
        study = _load(args.study)
    except StudyError as e:
        return _err(str(e))
    if args.toml:
        print(study.to_toml(), end="")
        return 0
    print(study.describe())
    if args.runs:
        for r in study.runs():
            print(f"  seed {r.seed:>18d}  " + ", ".join(f"{k}={v}" for k, v in r.point.items()))
    return 0


def cmd_status(args) -> int:
    from l4sim.report import status_lines
    from l4sim.store import StoreError

    try:
        print("\n".join(status_lines(args.store)))
    except StoreError as e:
        return _err(str(e))
    return 0


def cmd_export(args) -> int:
    from l4sim.report import export_csv
    from l4sim.store import StoreError

    try:
        n = export_csv(args.store, args.csv, design=args.design)
    except StoreError as e:
        return _err(str(e))
    print(f"wrote {n} runs to {args.csv}")
    return 0


def cmd_presets(args) -> int:
    from l4sim import presets

    rows = presets.table()
    w = max(len(r[0]) for r in rows)
    print(f"{'preset':{w}s}  {'runs':>7s}  {'trials':>6s}  description")
    for name, runs, trials, desc in rows:
        print(f"{name:{w}s}  {runs:7,d}  {trials:6d}  {desc}")
    return 0


def cmd_verdicts(args) -> int:
    import pandas as pd

    from l4sim.analysis import add_verdicts, cells, verdict_table
    from l4sim.store import Store, StoreError

    try:
        with Store(args.store) as st:
            runs = st.runs(design=args.design)
    except StoreError as e:
        return _err(str(e))
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(verdict_table(runs).to_string())
        if args.cells and not runs.empty:
            c = add_verdicts(cells(runs))
            keep = [x for x in c.columns if not x.endswith(("_std", "_ci95"))]
            print()
            print(c[keep].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def cmd_plot(args) -> int:
    from l4sim import plots
    from l4sim.analysis import cells
    from l4sim.store import Store, StoreError

    formats = tuple(args.formats or ("png", "pdf"))
    out = Path(args.out)
    try:
        with Store(args.store) as st:
            if args.run:
                keys = [k for k in st.runs(status="done")["key"] if k.startswith(args.run)]
                if len(keys) != 1:
                    return _err(f"--run {args.run!r} matches {len(keys)} runs")
                s = st.summary(keys[0])
                base = (s.get("flows") or [{}])[0].get("base_rtt_ms")
                fig = plots.timeseries(st.series(keys[0]), title=keys[0][:12], base_rtt_ms=base)
                files = plots.save(fig, out / f"run_{keys[0][:12]}", formats)
                print("\n".join(str(f) for f in files))
                return 0
            runs = st.runs(design=args.design)
    except (StoreError, KeyError) as e:
        return _err(str(e))
    if runs.empty:
        return _err("no finished runs to plot")
    figs = plots.study_figures(cells(runs), out, formats=formats)
    print("\n".join(str(f) for f in figs.values()))
    return 0


def cmd_report(args) -> int:
    from l4sim.report import write_report

    p = write_report(args.store, args.out, design=args.design)
    print(f"wrote {p}")
    return 0


def cmd_reproduce_anrw24(args) -> int:
    from l4sim import plots, presets
    from l4sim.analysis import cells, verdict_table
    from l4sim.report import export_csv, reference_cells, write_report
    from l4sim.store import Store

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    study = presets.get("anrw24").with_overrides(trials=args.trials, duration=args.duration)
    print(f"ANRW'24 grid: {len(study)} runs ({args.trials} trials x {args.duration:g} s) into {out / 'store'}")
    rc = _run_and_report(study, out / "store", args)
    if rc in (2, 130):
        return rc
    n = export_csv(out / "store", out / "results.csv", design=study.name)
    with Store(out / "store") as st:
        runs = st.runs(design=study.name)
    c = cells(runs)
    figs = plots.study_figures(c, out / "figures") if not c.empty else {}
    ref = reference_cells()
    if ref is not None:  # the testbed's heatmaps, for comparison side by side
        for value in ("share", "rel_delay"):
            f = plots.heatmap(ref, value, title="testbed (ANRW'24 reference data, 10 x 60 s)")
            figs[f"testbed_heatmap_{value}"] = plots.save(f, out / "figures" / f"testbed_heatmap_{value}")[0]
    vt = verdict_table(runs)
    vt.to_csv(out / "verdicts.csv")
    rep = write_report(
        out / "store",
        out / "report.html",
        design=study.name,
        title="l4sim: ANRW'24 reproduction (Prague vs CUBIC)",
        figures=figs,
        notes=f"{args.trials} trials x {args.duration:g} s per cell (the paper: 10 x 60 s).",
    )
    print(vt.to_string())
    print(f"wrote {out / 'results.csv'} ({n} runs), {len(figs)} figures in {out / 'figures'}, {rep}")
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="l4sim")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    register(sub)
    args = ap.parse_args(argv)
    if not hasattr(args, "func"):
        ap.print_help()
        return 2
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
