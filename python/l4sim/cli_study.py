"""`l4sim study ...` and `l4sim reproduce ...` subcommands.

``l4sim.cli`` calls :func:`register` with its argparse subparsers; every subcommand sets
``func`` (``args -> int`` exit code) with ``set_defaults``. ``python -m l4sim.cli_study`` runs
these commands standalone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from l4sim.argtypes import Parser, count, directory_problem, seconds, usage_error
from l4sim.studies.study import StudyError
from l4sim.sweep.designs import DesignError

if TYPE_CHECKING:
    from l4sim.sweep.designs import Design
    from l4sim.sweep.store import DesignConflictError

#: What `study plot --format` writes (its help says so; matplotlib would take gif, jpg, ...).
PLOT_FORMATS = ("png", "pdf", "svg")
ANRW24_DEFAULT_TRIALS = 10
ANRW24_DEFAULT_DURATION = 60.0
#: Seconds to wait for the --dask scheduler to answer (distributed's own default); a refused
#: connection is reported at once.
DASK_CONNECT_TIMEOUT_S = 30


def register(subparsers: argparse._SubParsersAction) -> None:
    study = subparsers.add_parser("study", help="run and analyse studies (factorial designs)")
    ss = study.add_subparsers(dest="study_command", metavar="COMMAND")
    study.set_defaults(func=lambda a: (study.print_help(), 2)[1])

    p = ss.add_parser("run", help="run a study (file or preset) into a results store")
    p.add_argument(
        "study", metavar="FILE_OR_PRESET", help="a study file (.toml) or a preset name (l4sim study presets)"
    )
    p.add_argument("--store", required=True, metavar="DIR", help="results directory")
    p.add_argument("-j", "--jobs", type=count, default=None, help="local workers (default: all cores)")
    p.add_argument("--dask", metavar="tcp://host:port", help="run on a Dask scheduler")
    p.add_argument("--limit", type=count, metavar="N", help="do at most N runs")
    p.add_argument("--trials", type=count, help="override the number of trials")
    p.add_argument("--duration", type=seconds, help="override the run duration, s")
    p.add_argument(
        "--name",
        help="the design's name in the store (default: the study's); a store refuses another design "
        "under a name it holds",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_run)

    p = ss.add_parser("plan", help="show a study's factors and run count")
    p.add_argument(
        "study", metavar="FILE_OR_PRESET", help="a study file (.toml) or a preset name (l4sim study presets)"
    )
    p.add_argument("--toml", action="store_true", help="print the study file")
    p.add_argument("--runs", action="store_true", help="list every run with its seed")
    p.add_argument(
        "-j", "--jobs", type=count, default=None, help="cores for the wall-time estimate (default: this machine's)"
    )
    p.add_argument(
        "--no-estimate",
        action="store_true",
        help="skip the CPU/wall time estimate (the first estimate for a design measures up to 8 of its "
        "runs, cut to 20 s, and caches the result)",
    )
    p.add_argument(
        "--measure", action="store_true", help="measure the per-packet cost again (e.g. after the machine was busy)"
    )
    p.add_argument(
        "--check",
        type=count,
        metavar="N",
        help="run N of the design's runs, drawn at random, on one core and compare their time with the estimate",
    )
    p.set_defaults(func=cmd_plan)

    p = ss.add_parser("status", help="done / total / missing runs per design in a store")
    p.add_argument("store", metavar="DIR", help="results directory (from `l4sim study run`)")
    p.set_defaults(func=cmd_status)

    p = ss.add_parser(
        "export",
        help="export one row per run (CSV to a file or stdout, Parquet) and/or flent files",
        description="One row per run: --csv FILE (or --csv - for stdout), --parquet FILE. "
        "--flent DIR writes one flent data file per finished run, named by its factors, trial and "
        "key prefix, and DIR/index.csv mapping each file to the run's key, design and factors "
        "(an earlier export's rows stay). "
        "With none of them, CSV goes to stdout.",
    )
    p.add_argument("store", metavar="DIR", help="results directory (from `l4sim study run`)")
    p.add_argument("--csv", metavar="FILE", help="CSV file, or - for stdout")
    p.add_argument("--parquet", metavar="FILE", help="Parquet file (pyarrow)")
    p.add_argument(
        "--flent", metavar="DIR", help="one flent data file per finished run (SCENARIO_tTRIAL_KEY.flent.gz), index.csv"
    )
    p.add_argument("--design", help="only this design's runs")
    p.add_argument(
        "--superseded",
        action="store_true",
        help="also the runs of earlier model versions that a later `study run` replaced "
        "(the model_version column tells them apart)",
    )
    p.set_defaults(func=cmd_export)

    p = ss.add_parser("presets", help="list the built-in study designs")
    p.set_defaults(func=cmd_presets)

    p = ss.add_parser("verdicts", help='the "Is it OK to turn on TCP Prague?" table')
    p.add_argument("store", metavar="DIR", help="results directory (from `l4sim study run`)")
    p.add_argument("--design", help="only this design's runs (default: every run in the store)")
    p.add_argument("--cells", action="store_true", help="also print per-cell verdicts")
    p.add_argument(
        "--scope",
        action="append",
        metavar="KEY=VALUE",
        help="judge the cells with this factor value instead of the study's (btl_capacity=100, "
        "base_rtt=10, ecn_threshold=5, rx_l4s_ecn=accecn, cc_l4s=prague); repeatable",
    )
    p.set_defaults(func=cmd_verdicts)

    p = ss.add_parser("plot", help="heatmaps / bar plots of a store; time series of a run")
    p.add_argument("store", metavar="DIR", help="results directory (from `l4sim study run`)")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for the figures")
    p.add_argument("--design", help="only this design's runs (default: every run in the store)")
    p.add_argument("--run", metavar="KEY", help="plot this run's time series (key prefix ok)")
    p.add_argument("--format", action="append", dest="formats", help="png, pdf, svg (repeatable; default png + pdf)")
    p.set_defaults(func=cmd_plot)

    p = ss.add_parser("report", help="write an HTML report of a store")
    p.add_argument("store", metavar="DIR", help="results directory (from `l4sim study run`)")
    p.add_argument("--out", required=True, metavar="FILE.html", help="the report file (figures go beside it)")
    p.add_argument("--design", help="only this design's runs (default: every run in the store)")
    p.add_argument(
        "--scope", action="append", metavar="KEY=VALUE", help="the verdict table's cells, as for `study verdicts`"
    )
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
    p.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (store/, results.csv, figures/, report)"
    )
    p.add_argument("-j", "--jobs", type=count, default=None, help="local workers (default: all cores)")
    p.add_argument("--dask", metavar="tcp://host:port", help="run on a Dask scheduler instead of local workers")
    p.add_argument(
        "--trials", type=count, default=ANRW24_DEFAULT_TRIALS, help=f"trials per cell (default {ANRW24_DEFAULT_TRIALS})"
    )
    p.add_argument(
        "--duration",
        type=seconds,
        default=ANRW24_DEFAULT_DURATION,
        help=f"simulated seconds per run (default {ANRW24_DEFAULT_DURATION:g})",
    )
    p.add_argument("--limit", type=count, metavar="N", help="do at most N runs now (a partial grid gets no verdicts)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_reproduce_anrw24)
    from l4sim import icnp26_report

    icnp26_report.register(rs)
    _check_out_first(rs.choices["icnp26"])

    _register_validate(subparsers)


def _register_validate(subparsers: argparse._SubParsersAction) -> None:
    from l4sim.studies.validate import QUICK_DURATION, QUICK_TRIALS

    p = subparsers.add_parser(
        "validate",
        help="run the testbed reference configurations and compare (HTML + CSV + markdown report)",
        description="Runs every configuration of the testbed reference data (Prague vs CUBIC, BBRv1, BBRv2 "
        "and BBRv3 with and without ECN, nine AQMs, five buffers: 315 cells) through the study machinery "
        "and writes OUT/report.html, "
        "OUT/validation.csv and OUT/summary.md. Default 10 trials x 60 s (the testbed's); --quick: "
        f"{QUICK_TRIALS} trials x {QUICK_DURATION:g} s.",
    )
    p.add_argument("--quick", action="store_true", help=f"{QUICK_TRIALS} trials x {QUICK_DURATION:g} s")
    p.add_argument("--out", default="validation", metavar="DIR", help="output directory (default: validation)")
    p.add_argument("--store", metavar="DIR", help="results store (default: OUT/store; reuse a reproduce store)")
    p.add_argument("-j", "--jobs", type=count, default=None, help="local workers (default: all cores)")
    p.add_argument("--trials", type=count, help="override the number of trials")
    p.add_argument("--duration", type=seconds, help="override the run length, s")
    p.add_argument(
        "--reference",
        action="append",
        metavar="CSV",
        help="reference data (repeatable; default: both shipped references, Prague vs CUBIC and vs BBR)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args) -> int:
    """``l4sim validate``: the simulation against the testbed reference (``studies.validate``)."""
    from l4sim.studies.reference import REFERENCES, load_reference
    from l4sim.studies.validate import Interrupted, validate
    from l4sim.sweep.store import DesignConflictError, StoreLockedError

    problem = next(
        (f"{o}: {p}" for o, d in (("--out", args.out), ("--store", args.store)) if d and (p := directory_problem(d))),
        None,
    )
    if problem is None:
        try:
            load_reference(args.reference or REFERENCES)
        except ValueError as e:
            problem = f"--reference: {e}"
    if problem:
        return usage_error(problem)
    try:
        v = validate(
            args.out,
            quick=args.quick,
            trials=args.trials,
            duration=args.duration,
            store=args.store,
            jobs=args.jobs,
            reference=args.reference or REFERENCES,
            progress=not args.quiet,
        )
    except DesignConflictError as e:  # the same --trials/--duration/--reference, another reference file
        option = "--store" if args.store else "--out"
        return usage_error(
            f"{option}: {e.path} holds a validation {e.name!r} that is not this one ({e.difference()}): "
            "use another --out (or --store) for this one"
        )
    except (StoreLockedError, StudyError, ValueError, FileNotFoundError) as e:
        return usage_error(str(e))
    except Interrupted as e:
        print(e, file=sys.stderr)
        return 130
    print("\n".join(v.summary.lines()))
    print(f"wrote {v.files['html']}, {v.files['csv']}, {v.files['summary']}")
    return 0


def _check_out_first(parser: argparse.ArgumentParser) -> None:
    """``reproduce X --out`` says what is wrong with its output directory as anrw24's does
    (``--out: 'afile' is a file, not a directory``), before the command's own checks."""
    run = parser.get_default("func")

    def checked(args) -> int:
        problem = _output_problem("--out", args.out)
        return usage_error(problem) if problem else run(args)

    parser.set_defaults(func=checked)


def _output_problem(option: str, directory: str | Path | None) -> str | None:
    """One line if ``directory`` (given with ``option``) cannot be an output directory."""
    problem = directory_problem(directory) if directory else None
    return f"{option}: {problem}" if problem else None


def _file_problem(option: str, file: str | Path, *, made: bool = False) -> str | None:
    """One line if ``file`` (given with ``option``) cannot be written as an output file: it is
    a directory, a part of its path is a file, or (unless ``made``: the command makes it) its
    directory does not exist."""
    p = Path(file)
    if p.is_dir():
        return f"{option}: {str(p)!r} is a directory; give a file name"
    problem = directory_problem(p.parent)
    if problem:
        return f"{option}: {problem}"
    if not made and not p.parent.is_dir():
        return f"{option}: directory {str(p.parent)!r} does not exist"
    return None


def _design_problem(store: str | Path, design: str | None) -> str | None:
    """One line if ``--design`` names no design of the store (a typo would give empty results)."""
    from l4sim.sweep.store import Store, StoreError

    if design is None:
        return None
    try:
        with Store(store) as st:
            names = [d["name"] for d in st.designs()]
    except StoreError:
        return None  # the command says what is wrong with the store
    if design in names:
        return None
    return f"--design: no design {design!r} in {store}; it holds {', '.join(map(repr, names)) or 'none'}"


def _stored_design_conflict(store: Path, study: Design) -> DesignConflictError | None:
    """The store's :class:`DesignConflictError` if it holds another design under ``study``'s
    name (read-only, before anything runs), else None; StoreError if ``store`` holds no store."""
    from l4sim.sweep.store import Store

    if not (store / "index.sqlite").exists():
        return None
    with Store(store) as st:
        return st.design_conflict(study.name, ((r.point, r.seed) for r in study.runs()))


def _conflict_for_run(e: DesignConflictError) -> str:
    """``study run``'s line for a store holding another design of the study's name."""
    return (
        f"--store: {e.path} holds a design {e.name!r} that is not this one ({e.difference()}): "
        "run this one under another --name or into another --store (the same design resumes)"
    )


def _connect_dask(args) -> str | None:
    """Connect to the --dask scheduler before a store or output directory is made: one line if
    it cannot be reached (it was distributed's traceback, the design already in the store).
    ``args.dask`` becomes the client, which ``_run_and_report`` closes."""
    if args.dask is None:
        return None
    try:
        from distributed import Client
    except ImportError:
        return "--dask: needs dask's distributed package (pip install 'dask[distributed]')"
    try:
        _probe_tcp(args.dask)
        args.dask = Client(args.dask, timeout=DASK_CONNECT_TIMEOUT_S)
    except (OSError, ValueError, TypeError) as e:  # unreachable, timed out, unknown scheme
        return f"--dask: cannot connect to a scheduler at {args.dask!r}: {e}"
    return None


def _probe_tcp(address: str) -> None:
    """OSError at once if nothing listens at a tcp:// scheduler address: distributed's client
    retries a refused connection until its timeout (30 s) before it says so."""
    import socket

    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port

    scheme, loc = parse_address(address)
    if scheme != "tcp":
        return  # tls://, inproc://, ...: the client says what is wrong
    host, port = parse_host_port(loc, default_port=8786)
    with socket.create_connection((host, port), timeout=DASK_CONNECT_TIMEOUT_S):
        pass


def _load(spec: str):
    from l4sim.studies.presets import load

    return load(spec)


def _run_and_report(study, store: Path, args, outcome: list | None = None, option: str = "--store") -> int:
    from l4sim.sweep.runner import run_study
    from l4sim.sweep.store import StoreError

    try:
        out = run_study(
            study, store, jobs=args.jobs, dask=args.dask, limit=args.limit, progress=not getattr(args, "quiet", False)
        )
    except StoreError as e:  # locked by another writer, not a store, another design of the name
        return usage_error(f"{option}: {e}")
    except DesignError as e:
        return usage_error(str(e))
    finally:
        if args.dask is not None and not isinstance(args.dask, str):
            args.dask.close()  # the client _connect_dask made
    if outcome is not None:
        outcome.append(out)
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
        if args.trials is not None:
            ov["trials"] = args.trials
        if args.duration is not None:
            ov["duration"] = args.duration
        if ov:
            study = study.with_overrides(**ov)
        study.check()  # before the store, the scheduler or any run (run_study's check skips its cells)
    except StudyError as e:
        return usage_error(str(e))
    if args.name is not None:
        if not args.name.strip():
            return usage_error(f"--name: {args.name!r} is empty; a design needs a name")
        study = study.renamed(args.name)
    from l4sim.sweep.store import StoreError

    problem = _output_problem("--store", args.store)
    try:
        if problem is None and (conflict := _stored_design_conflict(Path(args.store), study)) is not None:
            problem = _conflict_for_run(conflict)
    except StoreError as e:
        problem = f"--store: {e}"
    problem = problem or _connect_dask(args)
    if problem:
        return usage_error(problem)
    return _run_and_report(study, Path(args.store), args)


def cmd_plan(args) -> int:
    try:
        study = _load(args.study)
    except StudyError as e:
        return usage_error(str(e))
    if args.toml:
        print(study.to_toml(), end="")
        return 0
    if args.check and args.no_estimate:
        return usage_error("--check: it compares runs with the estimate, which --no-estimate skips")
    runs = study.runs()  # expanded once: the description, the estimate, the calibration, the check
    try:
        study.check(runs)
    except StudyError as e:
        return usage_error(str(e))
    print(study.describe(len(runs)))
    if not args.no_estimate:
        from l4sim.studies import cost

        c = cost.packet_cost(study, refresh=args.measure, runs=runs)
        est = cost.estimate((r.point for r in runs), jobs=args.jobs, cost=c)
        print(
            f"  expected time on this machine: {cost.human(est['cpu_seconds'])} of CPU, "
            f"{'about ' * (est['wall_seconds'] >= 0.5)}{cost.human(est['wall_seconds'])} wall on {est['jobs']} core(s) "
            f"({est['seconds_per_packet'] * 1e9:.0f} ns per bottleneck packet, measured {est['measured']} on "
            f"{len(c['reference'])} of its runs; a busy machine is slower)"
        )
        from l4sim import _core

        if est["wall_seconds"] > 3600 and _core.BUILD == "release":
            print(
                "  this is the ordinary build: benchmarks/pgo_build.py (in the source tree) builds the "
                "same engine 1.05-1.1x faster"
            )
        if args.check:
            k = cost.check(study, args.check, runs=runs, cost=c)
            point, w_est, w_meas = k["worst"]
            print(
                f"  check: {k['runs']} runs drawn at random took {k['measured_seconds']:.1f} s on one core "
                f"(the engine {k['engine_seconds']:.1f} s of it), the estimate for them "
                f"{k['estimated_seconds']:.1f} s: measured / estimated = {k['ratio']:.2f}"
            )
            print(
                f"    furthest off: {w_meas:.2f} s for {w_est:.2f} s estimated ("
                + ", ".join(f"{k}={v}" for k, v in point.items() if k not in study.fixed)
                + ")"
            )
    if args.runs:
        for r in runs:
            print(f"  seed {r.seed:>18d}  " + ", ".join(f"{k}={v}" for k, v in r.point.items()))
    return 0


def cmd_status(args) -> int:
    from l4sim.studies.report import status_lines
    from l4sim.sweep.store import StoreError

    try:
        print("\n".join(status_lines(args.store)))
    except StoreError as e:
        return usage_error(str(e))
    return 0


def cmd_export(args) -> int:
    from l4sim.studies.report import results_frame
    from l4sim.sweep.store import Store, StoreError

    to_stdout = args.csv == "-" or not (args.csv or args.parquet or args.flent)
    problem = next(
        (
            p
            for flag, f in (("--csv", None if args.csv == "-" else args.csv), ("--parquet", args.parquet))
            if f and (p := _file_problem(flag, f))
        ),
        None,
    )
    problem = problem or _output_problem("--flent", args.flent) or _design_problem(args.store, args.design)
    if problem:
        return usage_error(problem)
    try:
        with Store(args.store) as st:
            df = results_frame(st, args.design, superseded=args.superseded)
            if args.flent:
                n = _export_flent(st, Path(args.flent), df)
                print(f"wrote {n} flent files to {args.flent}", file=sys.stderr if to_stdout else sys.stdout)
    except StoreError as e:
        return usage_error(str(e))
    if to_stdout:
        df.to_csv(sys.stdout, index=False)
    elif args.csv:
        df.to_csv(args.csv, index=False)
        print(f"wrote {len(df)} runs to {args.csv}")
    if args.parquet:
        df.to_parquet(args.parquet, index=False)
        print(f"wrote {len(df)} runs to {args.parquet}", file=sys.stderr if to_stdout else sys.stdout)
    return 0


def _export_flent(st, out: Path, runs) -> int:
    """One flent data file per exported run with a stored series, named by the run's scenario
    (its factors), trial and key prefix (OUT/FIFO_2bdp_..._t3_3fa2c1d0e5b7.flent.gz), titled
    with its factors and trial; OUT/index.csv maps each file to its run's key, design and
    factors."""
    import csv
    import re

    from l4sim import flentfile
    from l4sim.studies.plots import run_title

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for key, name in zip(runs["key"], runs["design"], strict=True):
        try:
            series = st.series(key)
            summary = st.summary(key)
            factors = st.factors(key)
        except KeyError:
            continue
        params = {"design": name, "key": key, "seed": summary.get("seed", ""), "scenario": summary.get("name", "")}
        data = flentfile.from_series_frame(series, title=run_title(key, factors, width=10**6), params=params)
        if not data["x_values"]:
            continue
        stem = re.sub(r"[^A-Za-z0-9.+=-]+", "_", str(summary.get("name") or "run")).strip("_")[:150]
        trial = f"_t{factors['trial']}" if "trial" in factors else ""
        file = f"{stem}{trial}_{key[:12]}.flent.gz"
        flentfile.write(out / file, data)
        rows.append({"file": file, "key": key, "design": name, **factors})
    exported = len(rows)
    if rows:
        # An earlier export into the same directory keeps its rows (for files still there).
        written = {r["file"] for r in rows}
        index = out / "index.csv"
        if index.is_file():
            with open(index, newline="", encoding="utf-8") as fh:
                kept = [r for r in csv.DictReader(fh) if r.get("file") not in written and (out / r["file"]).is_file()]
            rows = kept + rows
        order = {c: i for i, c in enumerate(runs.columns)}  # the factors in the study's order
        columns = ["file", "key", "design"]
        columns += sorted({k for r in rows for k in r} - set(columns), key=lambda c: (order.get(c, len(order)), c))
        tmp = index.with_name(".index.csv.tmp")
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=columns, restval="")
            w.writeheader()
            w.writerows(rows)
        tmp.replace(index)
    return exported


def cmd_presets(args) -> int:
    from l4sim.studies import presets

    rows = presets.table()
    w = max(len(r[0]) for r in rows)
    print(f"{'preset':{w}s}  {'runs':>7s}  {'trials':>6s}  description")
    for name, runs, trials, desc in rows:
        print(f"{name:{w}s}  {runs:7,d}  {trials:6d}  {desc}")
    return 0


def _verdict_scope(items: list[str] | None) -> dict | str:
    """The verdict table's scope with ``--scope KEY=VALUE`` items applied, or one line saying
    which item is wrong."""
    import math

    from l4sim.studies.analysis import VERDICT_SCOPE

    scope = dict(VERDICT_SCOPE)
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            return f"--scope: {item!r} is not KEY=VALUE with KEY one of {', '.join(scope)}"
        if key not in scope:
            return (
                f"--scope: {key!r} (in {item!r}) is not a key the verdicts are scoped by; they take "
                f"{', '.join(scope)} (a row covers every buffer and AQM of its kind)"
            )
        if isinstance(VERDICT_SCOPE[key], str):
            scope[key] = value.strip().lower()
            continue
        try:
            v = float(value)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and v > 0):
            return f"--scope {key}: must be a positive number, got {value!r}"
        scope[key] = int(v) if v.is_integer() else v
    return scope


def cmd_verdicts(args) -> int:
    import pandas as pd

    from l4sim.studies.analysis import add_verdicts, cells, scope_misses, verdict_table
    from l4sim.sweep.store import Store, StoreError

    problem = _design_problem(args.store, args.design)
    if problem:
        return usage_error(problem)
    scope = _verdict_scope(args.scope)
    if isinstance(scope, str):
        return usage_error(scope)
    try:
        with Store(args.store) as st:
            runs = st.runs(design=args.design)
    except StoreError as e:
        return usage_error(str(e))
    print("cells at " + ", ".join(f"{k}={v}" for k, v in scope.items()) + " (--scope KEY=VALUE to change)")
    misses = scope_misses(runs, scope)
    if misses:
        have = "; ".join(f"{k} is {', '.join(map(str, vs))} there" for k, vs in misses.items())
        try_ = " ".join(f"--scope {k}={vs[0]}" for k, vs in misses.items())
        more = " (or another of the values there)" if any(len(vs) > 1 for vs in misses.values()) else ""
        print(f"no run of this store is in that scope: {have}; for its cells: {try_}{more}")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(verdict_table(runs, scope=scope).to_string())
        if args.cells and not runs.empty:
            c = add_verdicts(cells(runs))
            keep = [x for x in c.columns if not x.endswith(("_std", "_ci95"))]
            print()
            print(c[keep].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def cmd_plot(args) -> int:
    from l4sim.studies import plots
    from l4sim.studies.analysis import cells
    from l4sim.sweep.store import Store, StoreError

    formats = tuple(f.lower() for f in args.formats or ("png", "pdf"))
    out = Path(args.out)
    bad = [f for f in formats if f not in PLOT_FORMATS]
    problem = (
        _output_problem("--out", out)
        or (bad and f"--format: {bad[0]!r} is not one of {', '.join(PLOT_FORMATS)}")
        or _design_problem(args.store, args.design)
    )
    if problem:
        return usage_error(problem)
    try:
        with Store(args.store) as st:
            if args.run:
                keys = [k for k in st.runs(superseded=True)["key"] if k.startswith(args.run)]
                if len(keys) != 1:
                    return usage_error(f"--run {args.run!r} matches {len(keys)} runs")
                s = st.summary(keys[0])
                base = (s.get("flows") or [{}])[0].get("base_rtt_ms")
                title = plots.run_title(keys[0], st.factors(keys[0]))
                fig = plots.timeseries(st.series(keys[0]), title=title, base_rtt_ms=base)
                files = plots.save(fig, out / f"run_{keys[0][:12]}", formats)
                print("\n".join(str(f) for f in files))
                return 0
            runs = st.runs(design=args.design)
    except (StoreError, KeyError) as e:
        return usage_error(str(e))
    if runs.empty:
        return usage_error("no finished runs to plot")
    figs = plots.study_figures(cells(runs), out, formats=formats)
    print("\n".join(str(f) for f in figs.values()))
    return 0


def cmd_report(args) -> int:
    from l4sim.studies.report import write_report
    from l4sim.sweep.store import StoreError

    # the figures go beside the report
    problem = _file_problem("--out", args.out, made=True) or _design_problem(args.store, args.design)
    if problem:
        return usage_error(problem)
    scope = _verdict_scope(args.scope)
    if isinstance(scope, str):
        return usage_error(scope)
    try:
        p = write_report(args.store, args.out, design=args.design, scope=scope)
    except StoreError as e:
        return usage_error(str(e))
    print(f"wrote {p}")
    return 0


def cmd_reproduce_anrw24(args) -> int:
    from l4sim.studies import plots, presets
    from l4sim.studies.analysis import cells, verdict_table
    from l4sim.studies.report import export_csv, write_report
    from l4sim.sweep.store import Store, StoreError

    out = Path(args.out)
    try:
        study = presets.get("anrw24").with_overrides(trials=args.trials, duration=args.duration)
        study.check()
    except StudyError as e:
        return usage_error(str(e))
    try:
        clash = _output_problem("--out", out) or _design_clash(out / "store", study) or _connect_dask(args)
    except StoreError as e:
        clash = f"--out: {e}"
    if clash:
        return usage_error(clash)
    out.mkdir(parents=True, exist_ok=True)
    trials = f"{args.trials} trial{'s' * (args.trials != 1)}"
    print(f"ANRW'24 grid: {len(study)} runs ({trials} x {args.duration:g} s) into {out / 'store'}")
    outcome: list = []
    rc = _run_and_report(study, out / "store", args, outcome, option="--out")
    if rc in (2, 130):
        return rc
    missing = outcome[0].missing if outcome else 0
    if missing:
        # A partial grid is never presented as complete: no verdicts, figures or report from it.
        print(
            f"partial: {outcome[0].planned - missing} of {outcome[0].planned} runs are in {out / 'store'}; "
            "no verdicts or report from a partial grid (run the same command again to complete it)"
        )
        n = export_csv(out / "store", out / "results.csv", design=study.name)
        print(f"wrote {out / 'results.csv'} ({n} runs, partial)")
        return rc
    n = export_csv(out / "store", out / "results.csv", design=study.name)
    with Store(out / "store") as st:
        runs = st.runs(design=study.name)
    c = cells(runs)
    figs = plots.study_figures(c, out / "figures") if not c.empty else {}
    # the testbed's heatmaps (sim | testbed | difference, two sizes) come with the report
    vt = verdict_table(runs)
    vt.to_csv(out / "verdicts.csv")
    rep = write_report(
        out / "store",
        out / "report.html",
        design=study.name,
        title="l4sim: ANRW'24 reproduction (Prague vs CUBIC)",
        figures=figs,
        notes=f"{trials} x {args.duration:g} s per cell (the paper: 10 x 60 s).",
    )
    print(vt.to_string())
    print(f"wrote {out / 'results.csv'} ({n} runs), {len(figs)} figures in {out / 'figures'}, {rep}")
    return rc


def _design_clash(store: Path, study) -> str | None:
    """One line if ``store`` already holds a design of this name defined differently (other
    trials or duration): reusing it would silently redefine what the store's results mean."""
    import tomllib

    from l4sim.sweep.store import Store

    conflict = _stored_design_conflict(store, study)
    if conflict is None:
        return None
    with Store(store) as st:
        old = {d["name"]: d["content"] for d in st.designs()}[study.name]

    def shape(text: str) -> str:
        try:
            d = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return "another definition"
        trials = d.get("trials") or len(d.get("factors", {}).get("trial", [])) or 1
        dur = d.get("fixed", {}).get("duration", "?")
        n = f"{trials} trial{'s' * (trials != 1)}"
        return f"{n} x {dur:g} s" if isinstance(dur, (int, float)) else n

    was, now = shape(old), shape(study.to_toml())
    if was == now:
        # same trials and duration: the grid itself differs (a store from another l4sim)
        return f"{store} holds a {study.name} design with other runs ({conflict.difference()}): use another --out"
    return (
        f"{store} holds the {study.name} design with {was}, not {now}: "
        "use another --out, or the same --trials/--duration to resume it"
    )


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="l4sim")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    register(sub)
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if not hasattr(args, "func"):
        ap.print_help()
        return 2
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
