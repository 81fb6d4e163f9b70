#!/usr/bin/env python3
"""Study runner throughput (runs per minute) by number of workers: local process pool vs a
local Dask cluster, on the same small design.

The design is the ANRW'24 grid (Prague vs CUBIC, nine AQMs x five buffers x two CUBIC ECN
cases: 90 runs, one trial) with short runs (``--duration``, default 10 s), so the runner's own
per-run work shows. Every configuration writes a fresh results store exactly as ``l4sim study
run`` does. Columns:

* ``runs/min``: runs over the wall time of ``run_study`` (the pool's includes starting its
  worker processes; the Dask cluster is started before, its start-up is ``start s``);
* ``engine %``: the engine's own time (each run's ``wall_seconds``) over workers x wall time:
  what is left is process start, the runner, the store and an idle or busy machine;
* ``parent ms/run``: CPU time of this process per run (the store writer; with Dask also the
  scheduler, which runs in this process). With one worker the local runner runs the engine in
  this process (row ``local``), so there it includes the engine.

``--jobs 1,2`` (default: 1 and all cores) sets the worker counts; ``--no-dask`` skips Dask.
Wall-clock figures: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from l4sim.studies import presets
from l4sim.sweep.runner import run_study
from l4sim.sweep.store import Store


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def throughput(study: Any, jobs: int, dask: Any = None) -> dict[str, Any]:
    """Run ``study`` into a fresh store with ``jobs`` local workers (or the Dask client
    ``dask``); runs per minute, the engine's share of the workers' time, parent CPU per run."""
    with tempfile.TemporaryDirectory() as d:
        store = Path(d) / "store"
        c0, t0 = _cpu(), time.perf_counter()
        out = run_study(study, store, jobs=jobs, dask=dask, progress=False)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        with Store(store) as st:
            engine = float(st.runs()["wall_seconds"].sum())
    runs = out.done + out.errors
    return {
        "runs": runs,
        "failed": out.errors,
        "wall_seconds": wall,
        "runs_per_minute": runs / wall * 60.0,
        "engine_share": engine / (jobs * wall),
        "parent_ms_per_run": 1000.0 * cpu / max(1, runs),
    }


def _dask_throughput(study: Any, jobs: int) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    with LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            client.wait_for_workers(jobs)
            start = time.perf_counter() - t0
            return {**throughput(study, jobs, dask=client), "start_seconds": start}


def _jobs(text: str) -> list[int]:
    try:
        jobs = [int(j) for j in text.split(",")]
    except ValueError:
        jobs = []
    if not jobs or min(jobs) < 1:
        raise argparse.ArgumentTypeError(f"expected worker counts >= 1 like 1,2; got {text!r}")
    return jobs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=_jobs, default=sorted({1, os.cpu_count() or 1}), help="worker counts, e.g. 1,2")
    ap.add_argument("--duration", type=float, default=10.0, help="simulated seconds per run (default 10)")
    ap.add_argument("--no-dask", action="store_true", help="only the local process pool")
    args = ap.parse_args(argv)
    if not args.duration > 0:
        print(f"error: --duration must be > 0, got {args.duration:g}", file=sys.stderr)
        return 2
    study = presets.get("anrw24").with_overrides(trials=1, duration=args.duration)
    dask = not args.no_dask
    if dask:
        try:
            import distributed  # noqa: F401
        except ImportError:
            print("dask.distributed is not installed: only the local process pool", file=sys.stderr)
            dask = False

    print(f"ANRW'24 grid, {len(study)} runs of {args.duration:g} s; {os.cpu_count()} cores")
    head = (
        f"{'runner':<8} {'workers':>7} {'runs/min':>9} {'wall s':>7} {'engine %':>9} {'parent ms/run':>14} "
        f"{'start s':>8}"
    )
    print(head)
    print("-" * len(head))
    for jobs in args.jobs:
        rows = [("pool" if jobs > 1 else "local", throughput(study, jobs))]
        if dask:
            rows.append(("dask", _dask_throughput(study, jobs)))
        for name, r in rows:
            start = f"{r['start_seconds']:>8.1f}" if "start_seconds" in r else f"{'-':>8}"
            failed = f"  ({r['failed']} failed)" if r["failed"] else ""
            print(
                f"{name:<8} {jobs:>7} {r['runs_per_minute']:>9.0f} {r['wall_seconds']:>7.1f} "
                f"{100 * r['engine_share']:>8.0f}% {r['parent_ms_per_run']:>14.1f} {start}{failed}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
