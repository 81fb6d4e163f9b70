#!/usr/bin/env python3
"""Speed of the simulator on the study's standard scenarios.

Scenarios (dumbbell, 10 ms base RTT, 2 x BDP buffer, 60 s):

* ``cubic_100m``: 100 Mbit/s bfifo, CUBIC vs CUBIC (the standard scenario);
* ``cubic_1g``: the same at 1 Gbit/s;
* ``prague_dualpi2_100m``: 100 Mbit/s DualPI2 (5 ms), TCP Prague (AccECN) vs CUBIC;
* ``bbr2_dualpi2_100m``: the same with BBRv2 (v2alpha defaults) as the classic flow.

the IETF-106 traffic mix (``ietf106_dualpi2``: ``examples/ietf106_ultra_low_delay.toml``,
120 Mbit/s DualPI2, two long flows and 600 new web connections per second), and the multi-AS
study's S3a at full rate (``icnp26_s3a``: ``l4sim.icnp26``, 4 Gbit/s core links, 40 flows with
the background traffic; its packets are those of the busiest link, the 4 Gbit/s core), and the
same with the study's own MGEN background process (``icnp26_s3a_study``: sessions of 4.8 s, one
connection each, instead of batches of messages on new connections; docs/icnp26.md).

For each: packets through the bottleneck per wall-clock second, engine events per second,
completed connections per wall-second (the web mix) and the speed-up over real time (simulated
seconds / wall seconds), plus the machine (CPU model from /proc/cpuinfo, cores) and memory:
each scenario runs in a fresh interpreter, so its peak resident memory is that run's (``RSS
MB``), and ``run MB`` is what the run added above the interpreter with l4sim imported.
``--against PYTHON`` also runs every scenario with another
interpreter that has another l4sim build installed (say the last release), alternating the two
in one run, and prints the ratio: how a change moved the speed on the same machine.
``--ns3 PYTHON`` also runs ``cubic_100m`` in ns-3 (``ns3_dumbbell.py``, by an interpreter that
has the PyPI ``ns3`` package) and prints how many times faster l4sim is. ``--quick`` runs 10 s
instead of 60 s; ``--json`` prints one JSON object. Run it on an otherwise idle machine: the
figures are wall-clock measurements.

``--instructions`` counts instead of timing: each scenario runs once (5 s simulated) under
``valgrind --tool=callgrind``, collecting only inside the engine's event loop
(``World::run_until``), and the table gives the instructions per bottleneck packet and per
event. Instruction counts do not depend on the machine's load, so with ``--against`` they
show how a change moved the engine's cost even on a shared machine where wall-clock runs of
the same build scatter by 20 %. (They do not see cache misses or branch mispredictions: a
change that trades instructions for memory traffic still needs the wall-clock run.)

It also measures the study throughput: runs per minute for the ANRW'24 grid (Prague vs CUBIC,
nine AQMs x five buffers x two CUBIC ECN cases, 60 s runs) on all local cores, through the
study runner and results store exactly as ``l4sim study run`` does (one trial per cell, 90
runs; ``--quick``: 20 s runs; ``--no-study`` skips it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import l4sim

try:
    from l4sim.studies.factors import scenario_from_factors
except ImportError:  # an older build run through --against (0.2.0 had flat modules)
    from l4sim.factors import scenario_from_factors  # type: ignore[no-redef]

COMMON = dict(n_bdp=2, base_rtt=10, ecn_threshold=5)
CUBIC_VS_CUBIC = dict(aqm="FIFO", cc_l4s="cubic", cc_classic="cubic", tx_l4s_ecn="none", rx_l4s_ecn="none")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# key -> (label, study factors, the example file of a traffic mix, or a multi-AS scenario name)
SCENARIOS: dict[str, tuple[str, dict[str, Any] | Path | str]] = {
    "cubic_100m": (
        "100 Mbit/s, 10 ms, 2 x BDP bfifo, CUBIC vs CUBIC",
        dict(COMMON, btl_capacity=100, **CUBIC_VS_CUBIC),
    ),
    "cubic_1g": (
        "1 Gbit/s, 10 ms, 2 x BDP bfifo, CUBIC vs CUBIC",
        dict(COMMON, btl_capacity=1000, **CUBIC_VS_CUBIC),
    ),
    "prague_dualpi2_100m": (
        "100 Mbit/s, 10 ms, 2 x BDP DualPI2 (5 ms), Prague vs CUBIC",
        dict(COMMON, btl_capacity=100, aqm="DualPI2"),
    ),
    "bbr2_dualpi2_100m": (
        "100 Mbit/s, 10 ms, 2 x BDP DualPI2 (5 ms), Prague vs BBRv2",
        dict(COMMON, btl_capacity=100, aqm="DualPI2", cc_classic="bbr2"),
    ),
    "ietf106_dualpi2": (
        "IETF-106 mix: 120 Mbit/s DualPI2, 2 long + 600 web conn/s",
        EXAMPLES / "ietf106_ultra_low_delay.toml",
    ),
    "icnp26_s3a": (
        "multi-AS S3a, full rate: 4 Gbit/s core link, 40 flows",
        "S3a",
    ),
    "icnp26_s3a_study": (
        "multi-AS S3a, full rate, the study's own MGEN background process",
        "S3a:study",
    ),
}


def machine() -> dict[str, Any]:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "python": platform.python_version(),
        "l4sim": l4sim.__version__,
        "model_version": l4sim.MODEL_VERSION,
        # "release", or "pgo" / "pgo-native" for benchmarks/pgo_build.py's build
        "build": getattr(l4sim._core, "BUILD", "release"),
    }


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scenario_of(key: str, duration: float) -> l4sim.Scenario:
    """The benchmark scenario ``key``, ``duration`` seconds long."""
    spec = SCENARIOS[key][1]
    if isinstance(spec, Path):
        return l4sim.load(spec).with_overrides(duration=duration, seed=1).validate()
    if isinstance(spec, str):
        from l4sim import icnp26

        name, _, background = spec.partition(":")
        kw = {"background": background} if background else {}
        return l4sim.Scenario.from_dict(icnp26.scenario(name, duration=duration, scale=1.0, **kw)).validate()
    return l4sim.Scenario.from_dict(scenario_from_factors(**spec, duration=duration, seed=1)).validate()


def bench_one(key: str, duration: float, repeat: int) -> dict[str, Any]:
    label, spec = SCENARIOS[key]
    import pandas  # noqa: F401 - the results' tables need it: count it in the base, not the run

    base_rss = peak_rss_mb()
    sc = scenario_of(key, duration)
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = l4sim.run(sc)
        outer = time.perf_counter() - t0
        wall = r.wall_seconds if r.wall_seconds > 0 else outer
        # A multi-hop network counts its busiest link; a dumbbell its bottleneck.
        pkts = int(r.links["tx_pkts"].max()) if isinstance(spec, str) else r.bottleneck_pkts
        row = {
            "scenario": key,
            "label": label,
            "sim_seconds": r.sim_seconds,
            "wall_seconds": wall,
            "wall_seconds_with_python": outer,
            "bottleneck_pkts": pkts,
            "events": r.events,
            "pkts_per_wall_s": pkts / wall,
            "events_per_s": r.events / wall,
            "speedup": r.sim_seconds / wall,
            "connections": len(r.raw.get("connections", [])),
            "conns_per_wall_s": len(r.raw.get("connections", [])) / wall,
            "goodput_mbps": dict(zip(r.flows["name"], r.flows["goodput_mbps"], strict=True)),
            "peak_rss_mb": peak_rss_mb(),
            "run_rss_mb": peak_rss_mb() - base_rss,
        }
        if best is None or row["wall_seconds"] < best["wall_seconds"]:
            best = row
        del r  # else the next repeat's peak memory would hold this result too
    assert best is not None
    return best


def bench_other(python: str, key: str, duration: float, repeat: int) -> dict[str, Any] | None:
    """A scenario run in a fresh interpreter ``python`` (this one, or one with another l4sim
    build), through this script. None when that build cannot run it (e.g. a traffic mix older
    builds do not know)."""
    cmd = [python, __file__, "--json", "--no-study", "--here", "--only", key, "--repeat", str(repeat)]
    if duration != 60.0:
        cmd.append("--quick")
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)["results"][0]


#: Simulated seconds per scenario under callgrind (about 1.5 s of the engine's instructions per
#: simulated second at 100 Mbit/s; the multi-AS scenario takes about 2.5 minutes).
INSTRUCTIONS_SECONDS = 5.0


def bench_instructions(python: str, key: str) -> dict[str, Any] | None:
    """Instructions of the event loop for one run of ``key`` by ``python`` under callgrind
    (None when that build cannot run it)."""
    cmd = [
        "valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=*World::run_until*",
        "--callgrind-out-file=/dev/null", python, __file__, "--json", "--no-study", "--here", "--only", key,
        "--seconds", str(INSTRUCTIONS_SECONDS),
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    collected = [line for line in out.stderr.splitlines() if "Collected :" in line]
    if out.returncode != 0 or not collected:
        return None
    row = json.loads(out.stdout)["results"][0]
    instr = int(collected[-1].rsplit(":", 1)[1])
    return {**row, "instructions": instr, "instr_per_pkt": instr / row["bottleneck_pkts"],
            "instr_per_event": instr / row["events"]}  # fmt: skip


def bench_ns3(python: str, duration: float) -> dict[str, Any]:
    """``cubic_100m`` in ns-3: ``ns3_dumbbell.py`` run by ``python``; exits 2 if it cannot."""
    cmd = [python, str(Path(__file__).with_name("ns3_dumbbell.py")), "--duration", str(duration)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or ["failed"])[-1].removeprefix("error: ")
        print(f"error: --ns3 {python}: {why}", file=sys.stderr)
        raise SystemExit(2)
    return json.loads(out.stdout)


def bench_study(duration: float) -> dict[str, Any]:
    """Runs per wall-minute for one trial of the ANRW'24 grid on all local cores."""
    from scaleout import throughput

    from l4sim.studies import presets

    study = presets.get("anrw24").with_overrides(trials=1, duration=duration)
    jobs = os.cpu_count() or 1
    return {"study": "anrw24", "run_seconds": duration, "jobs": jobs, **throughput(study, jobs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 s simulated per scenario instead of 60 s")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="count the event loop's instructions per packet under valgrind (callgrind) instead of timing",
    )
    # Simulated seconds, for the runs --instructions starts.
    ap.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=1, help="runs per scenario; the fastest counts (default 1)")
    ap.add_argument("--only", choices=sorted(SCENARIOS), action="append", help="run only this scenario (repeatable)")
    ap.add_argument("--no-study", action="store_true", help="skip the ANRW'24 study-throughput measurement")
    # Run the scenarios in this process (what each fresh interpreter of a normal run does).
    ap.add_argument("--here", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--ns3",
        metavar="PYTHON",
        help="also run cubic_100m in ns-3 with this interpreter (one that has the PyPI ns3 package) "
        "and print the speed ratio",
    )
    ap.add_argument(
        "--against",
        metavar="PYTHON",
        help="also run each scenario with this interpreter (another l4sim build installed), alternating, "
        "and print the speed ratio",
    )
    args = ap.parse_args(argv)
    if args.ns3 and shutil.which(args.ns3) is None:  # say it before the long runs, not after
        print(f"error: --ns3 {args.ns3}: no such interpreter", file=sys.stderr)
        return 2

    if args.instructions and shutil.which("valgrind") is None:
        print("error: --instructions: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    duration = args.seconds or (10.0 if args.quick else 60.0)
    keys = args.only or list(SCENARIOS)
    if args.instructions:
        return instructions(keys, args.against)
    if args.ns3 and "cubic_100m" not in keys:
        keys = ["cubic_100m", *keys]
    info = machine()
    rows = []
    other: dict[str, dict[str, Any]] = {}
    for key in keys:
        if not args.json:
            print(f"running {key} ({duration:g} s simulated) ...", file=sys.stderr, flush=True)
        if args.here:
            rows.append(bench_one(key, duration, max(1, args.repeat)))
        else:
            row = bench_other(sys.executable, key, duration, max(1, args.repeat))
            if row is None:
                print(f"error: {key} failed in a fresh interpreter", file=sys.stderr)
                return 1
            rows.append(row)
        if args.against:
            other[key] = bench_other(args.against, key, duration, max(1, args.repeat))
    ns3 = None
    if args.ns3:
        if not args.json:
            print(f"running cubic_100m in ns-3 ({duration:g} s simulated) ...", file=sys.stderr, flush=True)
        ns3 = bench_ns3(args.ns3, duration)
    study = None
    if not args.no_study:
        study_duration = 20.0 if args.quick else 60.0
        if not args.json:
            print(f"running the ANRW'24 grid, 1 trial x {study_duration:g} s ...", file=sys.stderr, flush=True)
        study = bench_study(study_duration)

    if args.json:
        print(json.dumps({"machine": info, "duration": duration, "results": rows, "ns3": ns3, "study": study}))
        return 0
    print(
        f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), "
        f"Python {info['python']}, l4sim {info['l4sim']}"
    )
    header = (
        f"{'scenario':<68} {'pkts/wall-s':>12} {'events/s':>12} {'conns/s':>9} {'speed-up':>9} {'RSS MB':>7}"
        f" {'run MB':>7}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        conns = f"{r['conns_per_wall_s']:>9,.0f}" if r["connections"] else f"{'-':>9}"
        print(
            f"{r['label'] + f' ({duration:g} s)':<68} {r['pkts_per_wall_s']:>12,.0f} "
            f"{r['events_per_s']:>12,.0f} {conns} {r['speedup']:>8.1f}x {r['peak_rss_mb']:>7.0f}"
            f" {r.get('run_rss_mb', float('nan')):>7.0f}"
        )
    if other:
        print(f"\nagainst {args.against}: pkts/wall-s of this build / of that build (same machine, alternating)")
        for r in rows:
            o = other.get(r["scenario"])
            if o is None:
                print(f"  {r['scenario']:<24} not in that build")
                continue
            print(
                f"  {r['scenario']:<24} {r['pkts_per_wall_s']:>12,.0f} / {o['pkts_per_wall_s']:>12,.0f} "
                f"= {r['pkts_per_wall_s'] / o['pkts_per_wall_s']:.3f}"
            )
    if ns3 is not None:
        ours = next(r for r in rows if r["scenario"] == "cubic_100m")
        print(
            f"\nagainst ns-3 ({args.ns3}), cubic_100m, {duration:g} s simulated: ns-3 "
            f"{ns3['pkts_per_wall_s']:,.0f} pkts/wall-s ({ns3['wall_seconds']:.1f} s), l4sim "
            f"{ours['pkts_per_wall_s']:,.0f} ({ours['wall_seconds']:.2f} s): l4sim "
            f"{ns3['wall_seconds'] / ours['wall_seconds']:.0f}x faster; goodput Mbit/s ns-3 "
            f"{', '.join(f'{g:.1f}' for g in ns3['goodput_mbps'])}, l4sim "
            f"{', '.join(f'{g:.1f}' for g in ours['goodput_mbps'].values())}"
        )
    if study is not None:
        print(
            f"study throughput: ANRW'24 grid, {study['runs']} runs of {study['run_seconds']:g} s on "
            f"{study['jobs']} cores in {study['wall_seconds']:.1f} s = {study['runs_per_minute']:.0f} runs/minute"
        )
    return 0


def instructions(keys: list[str], against: str | None) -> int:
    """The --instructions table: event-loop instructions per packet, this build (and another)."""
    print(f"event-loop instructions (callgrind), {INSTRUCTIONS_SECONDS:g} s simulated per scenario")
    head = f"{'scenario':<24} {'pkts':>10} {'instr/pkt':>10} {'instr/event':>12}"
    print(head + ("  that build  this/that" if against else ""))
    for key in keys:
        print(f"running {key} under callgrind ...", file=sys.stderr, flush=True)
        row = bench_instructions(sys.executable, key)
        if row is None:
            print(f"error: {key} failed under valgrind", file=sys.stderr)
            return 1
        line = f"{key:<24} {row['bottleneck_pkts']:>10,} {row['instr_per_pkt']:>10,.0f}"
        line += f" {row['instr_per_event']:>12,.0f}"
        if against:
            o = bench_instructions(against, key)
            if o is None:
                line += "  not in that build"
            else:
                line += f"  {o['instr_per_pkt']:>10,.0f}  {row['instructions'] / o['instructions']:>9.3f}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
