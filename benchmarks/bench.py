#!/usr/bin/env python3
"""Speed of the simulator on the study's standard scenarios.

Scenarios (dumbbell, 10 ms base RTT, 2 x BDP buffer, 60 s):

* ``cubic_100m``: 100 Mbit/s bfifo, CUBIC vs CUBIC (the standard scenario);
* ``cubic_1g``: the same at 1 Gbit/s;
* ``prague_dualpi2_100m``: 100 Mbit/s DualPI2 (5 ms), TCP Prague (AccECN) vs CUBIC;
* ``bbr2_dualpi2_100m``: the same with BBRv2 (v2alpha defaults) as the classic flow.

For each: packets through the bottleneck per wall-clock second, engine events per second and
the speed-up over real time (simulated seconds / wall seconds), plus the machine (CPU model
from /proc/cpuinfo, cores). ``--quick`` runs 10 s instead of 60 s; ``--json`` prints one JSON
object. Run it on an otherwise idle machine: the figures are wall-clock measurements.

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
import sys
import tempfile
import time
from typing import Any

import l4sim
from l4sim.studies.factors import scenario_from_factors

COMMON = dict(n_bdp=2, base_rtt=10, ecn_threshold=5)
CUBIC_VS_CUBIC = dict(aqm="FIFO", cc_l4s="cubic", cc_classic="cubic", tx_l4s_ecn="none", rx_l4s_ecn="none")

SCENARIOS: dict[str, tuple[str, dict[str, Any]]] = {
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
    }


def bench_one(key: str, duration: float, repeat: int) -> dict[str, Any]:
    label, factors = SCENARIOS[key]
    sc = l4sim.Scenario.from_dict(scenario_from_factors(**factors, duration=duration, seed=1)).validate()
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = l4sim.run(sc)
        outer = time.perf_counter() - t0
        wall = r.wall_seconds if r.wall_seconds > 0 else outer
        row = {
            "scenario": key,
            "label": label,
            "sim_seconds": r.sim_seconds,
            "wall_seconds": wall,
            "wall_seconds_with_python": outer,
            "bottleneck_pkts": r.bottleneck_pkts,
            "events": r.events,
            "pkts_per_wall_s": r.bottleneck_pkts / wall,
            "events_per_s": r.events / wall,
            "speedup": r.sim_seconds / wall,
            "goodput_mbps": dict(zip(r.flows["name"], r.flows["goodput_mbps"], strict=True)),
        }
        if best is None or row["wall_seconds"] < best["wall_seconds"]:
            best = row
    assert best is not None
    return best


def bench_study(duration: float) -> dict[str, Any]:
    """Runs per wall-minute for one trial of the ANRW'24 grid on all local cores."""
    from l4sim.studies import presets
    from l4sim.sweep.runner import run_study

    study = presets.get("anrw24").with_overrides(trials=1, duration=duration)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        out = run_study(study, os.path.join(d, "store"), progress=False)
        wall = time.perf_counter() - t0
    runs = len(study)
    return {
        "study": "anrw24",
        "runs": runs,
        "run_seconds": duration,
        "failed": out.errors,
        "wall_seconds": wall,
        "runs_per_minute": runs / wall * 60.0,
        "jobs": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 s simulated per scenario instead of 60 s")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--repeat", type=int, default=1, help="runs per scenario; the fastest counts (default 1)")
    ap.add_argument("--only", choices=sorted(SCENARIOS), action="append", help="run only this scenario (repeatable)")
    ap.add_argument("--no-study", action="store_true", help="skip the ANRW'24 study-throughput measurement")
    args = ap.parse_args(argv)

    duration = 10.0 if args.quick else 60.0
    keys = args.only or list(SCENARIOS)
    info = machine()
    rows = []
    for key in keys:
        if not args.json:
            print(f"running {key} ({duration:g} s simulated) ...", file=sys.stderr, flush=True)
        rows.append(bench_one(key, duration, max(1, args.repeat)))
    study = None
    if not args.no_study:
        study_duration = 20.0 if args.quick else 60.0
        if not args.json:
            print(f"running the ANRW'24 grid, 1 trial x {study_duration:g} s ...", file=sys.stderr, flush=True)
        study = bench_study(study_duration)

    if args.json:
        print(json.dumps({"machine": info, "duration": duration, "results": rows, "study": study}))
        return 0
    print(
        f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), "
        f"Python {info['python']}, l4sim {info['l4sim']}"
    )
    header = f"{'scenario':<68} {'pkts/wall-s':>12} {'events/s':>12} {'speed-up':>9}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['label'] + f' ({duration:g} s)':<68} {r['pkts_per_wall_s']:>12,.0f} "
            f"{r['events_per_s']:>12,.0f} {r['speedup']:>8.1f}x"
        )
    if study is not None:
        print(
            f"study throughput: ANRW'24 grid, {study['runs']} runs of {study['run_seconds']:g} s on "
            f"{study['jobs']} cores in {study['wall_seconds']:.1f} s = {study['runs_per_minute']:.0f} runs/minute"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
