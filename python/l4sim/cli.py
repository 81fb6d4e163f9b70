"""The ``l4sim`` command.

``l4sim run FILE.toml``                 run a scenario file, print a per-flow table
``l4sim run --aqm FIFO --n-bdp 2 ...``  run one point of the study's design
``l4sim validate-scenario FILE``        check a scenario file without running it

Bad input prints ``error: FIELD: MESSAGE`` on stderr and exits with status 2 before anything
runs. The study's subcommands (``reproduce``, ...) come from ``l4sim.cli_study``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from l4sim import __version__
from l4sim._core import ScenarioError
from l4sim.scenario import CC_NAMES, Scenario, one_line
from l4sim.studies.factors import AQMS, CLASSIC_ECN, L4S_RECEIVER_ECN, L4S_SENDER_ECN

try:
    from l4sim import cli_study  # type: ignore[attr-defined,unused-ignore]
except ImportError:
    cli_study = None

EXIT_USAGE = 2

# (option, factor name, type, help) of the single-point study options of `l4sim run`.
_FACTOR_OPTIONS: list[tuple[str, str, Any, str]] = [
    ("--aqm", "aqm", str, f"AQM at the bottleneck, one of {', '.join(AQMS)} (case-insensitive)"),
    ("--n-bdp", "n_bdp", float, "buffer size in multiples of the BDP"),
    ("--btl-capacity", "btl_capacity", float, "bottleneck capacity, Mbit/s"),
    ("--base-rtt", "base_rtt", float, "base RTT, ms"),
    ("--ecn-threshold", "ecn_threshold", float, "ECN threshold / AQM target T, ms (default 5)"),
    ("--ecn-fallback", "ecn_fallback", int, "Prague classic-ECN fallback: 0 off (default), 1 on"),
    ("--tx-l4s-ecn", "tx_l4s_ecn", str, f"L4S sender ECN: {', '.join(L4S_SENDER_ECN)} (default accecn)"),
    ("--rx-l4s-ecn", "rx_l4s_ecn", str, f"L4S receiver ECN: {', '.join(L4S_RECEIVER_ECN)} (default accecn)"),
    (
        "--tx-classic-ecn",
        "tx_classic_ecn",
        str,
        f"classic sender ECN: {', '.join(CLASSIC_ECN)} (default classic, as in the study)",
    ),
    ("--rx-classic-ecn", "rx_classic_ecn", str, f"classic receiver ECN: {', '.join(CLASSIC_ECN)} (default none)"),
    ("--cc-l4s", "cc_l4s", str, f"L4S sender CC: {', '.join(CC_NAMES)} (default prague)"),
    ("--cc-classic", "cc_classic", str, "classic sender CC (default cubic)"),
    ("--n-l4s", "n_l4s", int, "parallel streams of the L4S sender (default 1)"),
    ("--n-classic", "n_classic", int, "parallel streams of the classic sender (default 1)"),
    ("--trial", "trial", int, "trial number (sets the seed when --seed is not given)"),
]
_REQUIRED_FACTORS = ("n_bdp", "btl_capacity", "base_rtt")


class _UsageError(Exception):
    pass


def _error(msg: str) -> int:
    print(f"error: {one_line(msg)}", file=sys.stderr)
    return EXIT_USAGE


def _scenario_error(e: ScenarioError) -> int:
    source = getattr(e, "source", None)
    text = str(e)
    if source and source not in text:
        text += f" (in {source})"
    return _error(text)


def _scenario_from_args(args: argparse.Namespace) -> Scenario:
    factors = {name: getattr(args, name) for _, name, _, _ in _FACTOR_OPTIONS if getattr(args, name) is not None}
    if args.file is not None:
        if factors:
            opts = ", ".join(o for o, n, _, _ in _FACTOR_OPTIONS if n in factors)
            raise _UsageError(f"give a scenario FILE or study factors ({opts}), not both")
        sc = Scenario.from_file(args.file)
        overrides = {k: v for k, v in (("duration", args.duration), ("seed", args.seed)) if v is not None}
        return sc.with_overrides(**overrides)
    if not factors:
        raise _UsageError("give a scenario FILE, or a study point with --aqm, --n-bdp, --btl-capacity, --base-rtt")
    if "aqm" not in factors:
        raise _UsageError("--aqm is required for a study point")
    missing = [n for n in _REQUIRED_FACTORS if n not in factors]
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


def _json_summary(r: Any) -> dict[str, Any]:
    raw = r.raw
    return {
        "name": raw.get("name", ""),
        "seed": raw.get("seed"),
        "model_version": raw.get("model_version"),
        "flows": [
            {
                "name": f.get("name"),
                "cc": f.get("cc"),
                "ecn_mode": f.get("ecn_mode"),
                "streams": f.get("streams"),
                "goodput_mbps": f.get("goodput_mbps"),
                "mean_srtt_ms": f.get("mean_srtt_ms"),
                "qdelay_ms": f.get("qdelay_ms"),
                "retrans": f.get("retrans"),
            }
            for f in raw.get("flows", [])
        ],
        "links": [
            {"name": link.get("name"), "rate_mbps": link.get("rate_mbps"), "utilisation": link.get("utilisation")}
            for link in raw.get("links", [])
        ],
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
    (out / "result.json").write_text(r.to_json(), encoding="utf-8")
    if r.scenario is not None:
        (out / "scenario.json").write_text(r.scenario.to_json(), encoding="utf-8")


def cmd_run(args: argparse.Namespace) -> int:
    from l4sim.api import run

    try:
        sc = _scenario_from_args(args).validate()
        if args.flent and not Path(args.flent).resolve().parent.is_dir():
            raise _UsageError(f"--flent: directory {str(Path(args.flent).parent)!r} does not exist")
    except _UsageError as e:
        return _error(str(e))
    except ScenarioError as e:
        return _scenario_error(e)
    r = run(sc)
    if args.flent:
        from l4sim import flentfile

        flentfile.write(args.flent, flentfile.from_result(r.raw))
    if args.save_series:
        _save_series(r, args.save_series)
    if args.json:
        print(json.dumps(_json_summary(r)))
    else:
        print(r.summary())
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
    parser = argparse.ArgumentParser(
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
    p.add_argument("file", nargs="?", metavar="FILE", help="scenario file (.toml or .json)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--save-series", metavar="DIR", help="write time series and tables (CSV) and the raw result to DIR")
    p.add_argument(
        "--flent",
        metavar="FILE.flent.gz",
        help="also write the run in flent's data format (per-flow throughput and RTT, qdisc delay): "
        "flent -i FILE -p tcp_delivery_with_rtt plots it",
    )
    p.add_argument("--duration", type=float, help="simulated seconds (overrides the scenario; study default 60)")
    p.add_argument("--seed", type=int, help="random seed (overrides the scenario)")
    g = p.add_argument_group("study point (instead of FILE)")
    for opt, name, typ, help_ in _FACTOR_OPTIONS:
        g.add_argument(opt, dest=name, type=typ, help=help_)
    p.set_defaults(func=cmd_run)

    v = subparsers.add_parser("validate-scenario", help="check a scenario file without running it")
    v.add_argument("file", metavar="FILE", help="scenario file (.toml or .json)")
    v.set_defaults(func=cmd_validate)

    if cli_study is not None:
        cli_study.register(subparsers)
    return parser


def _one_line_warning(message: Any, category: type, *args: Any, **kwargs: Any) -> str:
    return f"warning: {message}\n"


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    warnings.formatwarning = _one_line_warning  # type: ignore[assignment]
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
