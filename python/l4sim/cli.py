"""The ``l4sim`` command.

``l4sim run FILE.toml [FILE ...]``      run scenario files, print their tables (and compare them)
``l4sim run FILE --plot out.png``       ... and draw each run (and the comparison)
``l4sim run --aqm FIFO --n-bdp 2 ...``  run one point of the study's design
``l4sim validate-scenario FILE``        check a scenario file without running it
``l4sim demo``                          the DualPI2 demo as a live web page (``l4sim.demo``)

Bad input prints ``error: FIELD: MESSAGE`` on stderr and exits with status 2 before anything
runs. The study's subcommands (``reproduce``, ...) come from ``l4sim.cli_study``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from l4sim import __version__, cli_study, demo
from l4sim._core import ScenarioError
from l4sim.argtypes import EXIT_USAGE, Parser, directory_problem, figure_format_problem, seconds, seed, usage_error
from l4sim.scenario import Scenario
from l4sim.studies.factors import (
    AQMS,
    CLASSIC_ECN,
    FACTOR_CCS,
    FACTOR_NAMES,
    L4S_RECEIVER_ECN,
    L4S_SENDER_ECN,
    TREE_LINKS,
)
from l4sim.studies.study import REQUIRED

# Type and help of each single-point study option of `l4sim run` (--NAME for each factor of
# FACTOR_NAMES, then the trial); a factor without an entry here fails at import (and in the tests).
_CCS = ", ".join(FACTOR_CCS)
_FACTOR_HELP: dict[str, tuple[Any, str]] = {
    "aqm": (str, f"AQM at the bottleneck, one of {', '.join(AQMS)} (case-insensitive)"),
    "n_bdp": (float, "buffer size in multiples of the BDP"),
    "btl_capacity": (float, "bottleneck capacity, Mbit/s"),
    "base_rtt": (float, "base RTT, ms"),
    "ecn_threshold": (float, "ECN threshold / AQM target T, ms (default 5)"),
    "ecn_fallback": (
        int,
        "Prague classic-ECN fallback: 0 off (default), 1 detect and fall back, 2 detect only",
    ),
    "tx_l4s_ecn": (str, f"L4S sender ECN: {', '.join(L4S_SENDER_ECN)} (default accecn)"),
    "rx_l4s_ecn": (str, f"L4S receiver ECN: {', '.join(L4S_RECEIVER_ECN)} (default accecn)"),
    "tx_classic_ecn": (str, f"classic sender ECN: {', '.join(CLASSIC_ECN)} (default classic, as in the study)"),
    "rx_classic_ecn": (str, f"classic receiver ECN: {', '.join(CLASSIC_ECN)} (default none)"),
    "cc_l4s": (str, f"L4S sender CC: {_CCS} (default prague)"),
    "cc_classic": (str, f"classic sender CC: {_CCS} (default cubic)"),
    "rx_l4s_cc": (str, f"L4S receiver CC: {_CCS} (default: the L4S CC with AccECN, else cubic)"),
    "rx_classic_cc": (str, f"classic receiver CC: {_CCS} (default cubic)"),
    "n_l4s": (int, "parallel streams of the L4S sender (default 1)"),
    "n_classic": (int, "parallel streams of the classic sender (default 1)"),
    "tree_level": (
        str,
        f"run over the multi-bottleneck tree with the bottleneck at this level: {', '.join(TREE_LINKS)} "
        "(default: the dumbbell)",
    ),
    "rmem_max": (int, "receivers' net.ipv4.tcp_rmem max, bytes (default 6291456, Linux's: windows of up to 3 MB)"),
    "trial": (int, "trial number (sets the seed when --seed is not given)"),
}
# (option, factor name, type, help)
_FACTOR_OPTIONS: list[tuple[str, str, Any, str]] = [
    ("--" + name.replace("_", "-"), name, *_FACTOR_HELP[name]) for name in (*FACTOR_NAMES, "trial")
]


class _UsageError(Exception):
    pass


def _scenario_error(e: ScenarioError) -> int:
    source = getattr(e, "source", None)
    text = str(e)
    if source and source not in text:
        text += f" (in {source})"
    return usage_error(text)


def _scenario_from_args(args: argparse.Namespace) -> Scenario:
    factors = {name: getattr(args, name) for _, name, _, _ in _FACTOR_OPTIONS if getattr(args, name) is not None}
    if not factors:
        raise _UsageError("give a scenario FILE, or a study point with --aqm, --n-bdp, --btl-capacity, --base-rtt")
    if "aqm" not in factors:
        raise _UsageError("--aqm is required for a study point")
    missing = [n for n in REQUIRED if n not in factors]
    if missing:
        raise _UsageError("a study point needs " + ", ".join("--" + n.replace("_", "-") for n in missing))
    # The [factors] form of a scenario (registered by l4sim.studies): errors name the factor.
    doc: dict[str, Any] = {"factors": factors}
    if args.duration is not None:
        doc["duration"] = args.duration
    if args.seed is not None:
        doc["seed"] = args.seed
    try:
        return Scenario.from_dict(doc)
    except ScenarioError as e:
        field = getattr(e, "field", "")
        if field.startswith("factors."):  # say it with the option the user typed
            opt = "--" + field.removeprefix("factors.").replace("_", "-")
            raise _UsageError(f"{opt}: {getattr(e, 'message', e)}") from None
        raise


def _scenarios_from_args(args: argparse.Namespace) -> list[Scenario]:
    """The scenario files named on the command line, or the one study point."""
    if not args.file:
        return [_scenario_from_args(args)]
    factors = [o for o, n, _, _ in _FACTOR_OPTIONS if getattr(args, n) is not None]
    if factors:
        raise _UsageError(f"give scenario FILEs or study factors ({', '.join(factors)}), not both")
    overrides = {k: v for k, v in (("duration", args.duration), ("seed", args.seed)) if v is not None}
    scenarios = [Scenario.from_file(f) for f in args.file]
    try:
        return [sc.with_overrides(**overrides).validate() for sc in scenarios]
    except ScenarioError as e:
        if getattr(e, "field", None) in overrides:  # the command line's value, not the file's
            raise _UsageError(f"--{e.field}: {e.message}") from None
        raise


def _output_names(scenarios: list[Scenario]) -> list[str]:
    """One name per run for its outputs (series directory, flent file, figure): the scenario's
    name, else its file's stem, else "run"; a name taken by an earlier run gets "-2", "-3", ..."""
    names: list[str] = []
    for sc in scenarios:
        base = sc.name or (Path(sc.source).stem if sc.source else "") or "run"
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names.append(name)
    return names


def _comparison(results: list[Any]) -> str:
    """Several runs side by side: per-class queue delay and per-source completion times."""
    head = f"{'run':<32} {'class':<8} {'mark %':>7} {'drop %':>7} {'p50 ms':>8} {'p99 ms':>8} {'p99.9 ms':>9}"
    lines = ["", "comparison: queue delay per traffic class at the first qdisc", head, "-" * len(head)]
    for r in results:
        cls = r.classes
        if cls.empty:
            continue
        cls = cls[(cls["kind"] == "class") & (cls["qdisc"] == cls["qdisc"].iloc[0])]
        for _, c in cls.iterrows():
            lines.append(
                f"{r.name:<32} {c['name']:<8} {100 * c['mark_prob']:>7.2f} {100 * c['drop_prob']:>7.2f} "
                f"{c['sojourn_p50_ms']:>8.2f} {c['sojourn_p99_ms']:>8.2f} {c['sojourn_p999_ms']:>9.2f}"
            )
    if any(r.raw.get("connections") for r in results):
        head = f"{'run':<32} {'source':<14} {'count':>7} {'FCT p50 ms':>11} {'FCT p99 ms':>11} {'slowdown p50':>13}"
        lines += ["", "comparison: completion times of the web-like transfers", head, "-" * len(head)]
        for r in results:
            if not r.raw.get("connections"):
                continue
            for _, g in r.fct_summary("flow").iterrows():
                lines.append(
                    f"{r.name:<32} {g['flow']:<14} {int(g['count']):>7d} {g['fct_p50_ms']:>11.1f} "
                    f"{g['fct_p99_ms']:>11.1f} {g['slowdown_p50']:>13.2f}"
                )
    return "\n".join(lines)


def _plot(results: list[Any], target: str, names: list[str]) -> list[Path]:
    """One figure per run (``names``: their file names) and, for several runs, a comparison:
    ``target`` is a file for a single run (``out.png``, ``out.pdf``) or a directory."""
    from l4sim import runplots

    t = Path(target)
    if len(results) == 1 and t.suffix:
        return [runplots.save(runplots.run_figure(results[0]), t)]
    written = [runplots.save(runplots.run_figure(r), t / f"{n}.png") for r, n in zip(results, names, strict=True)]
    if len(results) > 1:
        written.append(runplots.save(runplots.compare_figure(results), t / "comparison.png"))
    return written


def _scalars(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not isinstance(v, (list, dict))}


def _json_summary(r: Any) -> dict[str, Any]:
    raw = r.raw
    return {
        "name": raw.get("name", ""),
        "seed": raw.get("seed"),
        "model_version": raw.get("model_version"),
        # every scalar of a flow's and a qdisc's record (their samples and CDFs stay in
        # --save-series' result.json)
        "flows": [_scalars(f) for f in raw.get("flows", [])],
        "qdiscs": [_scalars(q) for q in raw.get("qdiscs", [])],
        "links": [
            {"name": link.get("name"), "rate_mbps": link.get("rate_mbps"), "utilisation": link.get("utilisation")}
            for link in raw.get("links", [])
        ],
        "classes": [{k: v for k, v in c.items() if k != "cdf_ms"} for c in raw.get("classes", [])],
        "fct": r.fct_summary().astype({"size_bin": str}).to_dict("records") if raw.get("connections") else [],
        "jain_index": raw.get("jain_index"),
        "sim_seconds": raw.get("sim_seconds"),
        "wall_seconds": raw.get("wall_seconds"),
        "events": raw.get("events"),
        "bottleneck_pkts": raw.get("bottleneck_pkts"),
    }


def _save_series(r: Any, directory: str) -> None:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    r.series_flows().to_csv(out / "series_flows.csv", index=False)
    r.series_qdiscs().to_csv(out / "series_qdiscs.csv", index=False)
    r.flows.to_csv(out / "flows.csv", index=False)
    r.qdiscs.to_csv(out / "qdiscs.csv", index=False)
    r.links.to_csv(out / "links.csv", index=False)
    # what only some runs have: completed transfers, qdisc classes, UDP Prague records
    for name, frame in (("connections", r.connections), ("qdisc_classes", r.qdisc_classes), ("udp", r.udp)):
        if len(frame):
            frame.to_csv(out / f"{name}.csv", index=False)
    (out / "result.json").write_text(r.to_json(), encoding="utf-8")
    if r.scenario is not None:
        (out / "scenario.json").write_text(r.scenario.to_json(), encoding="utf-8")


def cmd_run(args: argparse.Namespace) -> int:
    from l4sim.api import run

    try:
        scenarios = _scenarios_from_args(args)
        scenarios = [sc.validate() for sc in scenarios]
        # several runs, or a directory that exists: one file per run in it
        flent_dir = Path(args.flent) if args.flent and (len(scenarios) > 1 or Path(args.flent).is_dir()) else None
        if args.flent and flent_dir is None and not Path(args.flent).resolve().parent.is_dir():
            raise _UsageError(f"--flent: directory {str(Path(args.flent).parent)!r} does not exist")
        # where the outputs go, checked now: a traceback after the runs would lose them
        plot_file = Path(args.plot) if args.plot and len(scenarios) == 1 and Path(args.plot).suffix else None
        for opt, directory in (
            ("--flent", flent_dir),
            ("--save-series", args.save_series),
            ("--plot", plot_file.parent if plot_file else args.plot),
        ):
            problem = directory and directory_problem(directory)
            if problem:
                raise _UsageError(f"{opt}: {problem}")
        problem = plot_file and figure_format_problem(plot_file.suffix[1:])
        if problem:
            raise _UsageError(f"--plot: {problem}")
        for sc in scenarios if args.flent else []:
            if sc.duration < sc.sample_interval:
                raise _UsageError(
                    f"--flent: {sc.name or 'the scenario'} would record no time series: its duration "
                    f"{sc.duration:g} s is shorter than its sample_interval {sc.sample_interval:g} s"
                )
    except _UsageError as e:
        return usage_error(str(e))
    except ScenarioError as e:
        return _scenario_error(e)
    results = []
    names = _output_names(scenarios)
    for sc, name in zip(scenarios, names, strict=True):
        r = run(sc)
        results.append(r)
        if args.flent:
            from l4sim import flentfile

            target = flent_dir / f"{name}.flent.gz" if flent_dir else Path(args.flent)
            target.parent.mkdir(parents=True, exist_ok=True)
            flentfile.write(str(target), flentfile.from_result(r.raw))
        if args.save_series:
            _save_series(r, args.save_series if len(scenarios) == 1 else str(Path(args.save_series) / name))
        if args.json:
            print(json.dumps(_json_summary(r)))
        else:
            print(r.summary() + "\n")
    if len(results) > 1 and not args.json:
        print(_comparison(results))
    if args.plot:
        for p in _plot(results, args.plot, names):
            print(f"wrote {p}", file=sys.stderr)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        sc = Scenario.from_file(args.file).validate()
    except ScenarioError as e:
        return _scenario_error(e)
    flows = sc.data.get("flows", [])
    print(f"ok: {args.file}: {len(flows)} flow(s), {sc.duration:g} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="l4sim",
        description="Packet-level simulator of TCP Prague vs classic TCP at an L4S / classic bottleneck.",
    )
    parser.add_argument("--version", action="version", version=f"l4sim {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = subparsers.add_parser(
        "run",
        help="run a scenario file or one study point",
        description="Run a scenario FILE (TOML or JSON), or one point of the study's design given by "
        "--aqm, --n-bdp, --btl-capacity, --base-rtt and the other factor options.",
    )
    p.add_argument("file", nargs="*", metavar="FILE", help="scenario files (.toml or .json); several are compared")
    p.add_argument(
        "--plot",
        metavar="PATH",
        help="draw each run (throughput, queue delay and its CDF per class, marks and drops, completion "
        "times): a file (out.png, out.pdf) for one run, else a directory with one PNG per run and comparison.png",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per run instead of a table (JSON Lines with several files)",
    )
    p.add_argument(
        "--save-series",
        metavar="DIR",
        help="write time series and tables (CSV: flows, qdiscs, links, and connections, qdisc classes and UDP "
        "records where the run has them) and the raw result to DIR",
    )
    p.add_argument(
        "--flent",
        metavar="FILE.flent.gz",
        help="also write the run in flent's data format (per-flow throughput and RTT, qdisc delay): "
        "flent -i FILE -p tcp_delivery_with_rtt plots it; with several scenario files, or naming a "
        "directory that exists, a directory that receives NAME.flent.gz per run",
    )
    p.add_argument("--duration", type=seconds, help="simulated seconds (overrides the scenario; study default 60)")
    p.add_argument("--seed", type=seed, help="random seed (overrides the scenario)")
    g = p.add_argument_group("study point (instead of FILE)")
    for opt, name, typ, help_ in _FACTOR_OPTIONS:
        g.add_argument(opt, dest=name, type=typ, help=help_)
    p.set_defaults(func=cmd_run)

    v = subparsers.add_parser("validate-scenario", help="check a scenario file without running it")
    v.add_argument("file", metavar="FILE", help="scenario file (.toml or .json)")
    v.set_defaults(func=cmd_validate)

    demo.register(subparsers)
    cli_study.register(subparsers)
    return parser


def _one_line_warning(message: Any, category: type, *args: Any, **kwargs: Any) -> str:
    return f"warning: {message}\n"


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    warnings.formatwarning = _one_line_warning
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a bad option (one line, status 2)
        return int(e.code or 0)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader went away (`l4sim study plan NAME --runs | head`): stop quietly, as a
        # command killed by SIGPIPE would, instead of a traceback. Point stdout at /dev/null
        # so the interpreter's flush at exit does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
