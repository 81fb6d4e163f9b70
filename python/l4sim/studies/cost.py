"""How long a study will take on this machine: a per-packet cost measured once, not a guess.

The engine's work grows with the packets it moves: a study run at capacity C Mbit/s for D s
sends about C x 1e6 / 8 / 1514 x D packets through its bottleneck. The cost per bottleneck
packet (wall seconds of one core, ACKs and every other event included) is measured once per
design, machine, model version and build of the engine (a PGO build,
``benchmarks/pgo_build.py``, is faster) on a few of the design's own runs drawn at random
(shortened to at most 20 s; each the faster of two runs), since it varies with what a run
simulates: per packet, a 1 Gbit/s run costs about a fifth less than a 100 Mbit/s one, and
AccECN's extra ACKs cost more. It is
cached in ``$XDG_CACHE_HOME/l4sim/`` (``~/.cache/l4sim/``). Without a design, one reference point
is measured (DualPI2, Prague vs CUBIC, 100 Mbit/s, 10 ms). ``l4sim study plan`` prints the
expected CPU time of the design and its wall time on this machine's cores, and with ``--check N``
runs N other runs of the design in full to compare (:func:`check`). It is an estimate: a
machine shared with other work runs slower.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: Bytes on the wire of a full-sized data packet (1500-byte IP packet + Ethernet header).
WIRE_BYTES = 1514
MSS = 1448
#: The largest window of a receiver with Linux's default ``tcp_rmem`` (half of 6 MB).
MAX_WINDOW_BYTES = 3_145_728
#: The point whose per-packet cost is measured when there is no design to draw from.
REFERENCE: dict[str, Any] = {"aqm": "DualPI2", "n_bdp": 2, "btl_capacity": 100, "base_rtt": 10, "duration": 30}
#: Runs of a design that calibrate its per-packet cost, and their longest duration, s.
CALIBRATION_RUNS = 8
CALIBRATION_DURATION = 20.0


def _cache_file(model_version: str, build: str, design: str = "") -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "l4sim" / f"packet-cost-{model_version}-{build}{'-' + design if design else ''}.json"


def _calibration(specs: list[Any]) -> list[tuple[dict[str, Any], int]]:
    """The design points (shortened) and seeds the cost is measured on, drawn at random from
    the design's runs ``specs``: the same ones every time for the same design."""
    import random

    picked = random.Random(0).sample(specs, min(CALIBRATION_RUNS, len(specs)))
    return [
        (dict(r.point, duration=min(float(r.point.get("duration", 60.0)), CALIBRATION_DURATION)), r.seed)
        for r in picked
    ]


def _build_id() -> str:
    """The engine build's identity: a hash of the extension module's file."""
    from l4sim import _core

    return hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()[:12]


def packet_cost(study: Any = None, *, refresh: bool = False, runs: list[Any] | None = None) -> dict[str, Any]:
    """Wall seconds per bottleneck packet on one core: ``{"seconds_per_packet", "measured",
    "machine", "model_version"}``; measured on first use (on ``study``'s calibration runs, or a
    30 s reference run without one), then cached. ``runs``: ``study.runs()`` if the caller has
    expanded the design already (a full factorial takes half a second each time)."""
    from l4sim._core import MODEL_VERSION
    from l4sim.api import run
    from l4sim.scenario import Scenario
    from l4sim.studies.factors import scenario_from_factors

    todo: Sequence[tuple[dict[str, Any], int | None]]  # seed None: the reference run, not a design's
    if study is None:
        todo = [(dict(REFERENCE), None)]
        design = ""
    else:
        todo = _calibration(study.runs() if runs is None else runs)
        design = hashlib.sha256(json.dumps(todo, sort_keys=True, default=str).encode()).hexdigest()[:12]
    f = _cache_file(str(MODEL_VERSION), _build_id(), design)
    machine = f"{platform.node()} {platform.machine()}"
    if not refresh and f.exists():
        try:
            c = json.loads(f.read_text())
            if c.get("machine") == machine and c.get("seconds_per_packet", 0) > 0:
                return c
        except (OSError, ValueError):
            pass
    wall = pkts = 0.0
    for point, seed in todo:
        sc = Scenario.from_dict(scenario_from_factors(**point) if seed is None else study.build(point, seed))
        # The faster of two runs (same packets): the first pays for cold caches, and either
        # for whatever else the machine did; a study's workers run warm, one run after another.
        twice = [run(sc) for _ in range(2)]
        wall += min(r.wall_seconds for r in twice)
        pkts += twice[0].bottleneck_pkts
    c = {
        "seconds_per_packet": wall / max(pkts, 1),
        "measured": time.strftime("%Y-%m-%d %H:%M", time.localtime()),
        "machine": machine,
        "model_version": str(MODEL_VERSION),
        "reference": [p for p, _ in todo],
    }
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(".tmp")
        tmp.write_text(json.dumps(c, indent=1))
        tmp.replace(f)
    except OSError:  # read-only home: measure again next time
        pass
    return c


def packets(point: Mapping[str, Any], default_duration: float = 60.0) -> float:
    """Bottleneck packets of one run (the study's factor names): the capacity, or less where
    every flow is held by Linux's default receive window (3 MB per flow over the base RTT)."""
    cap = float(point.get("btl_capacity", 100))
    dur = float(point.get("duration", default_duration))
    rtt = float(point.get("base_rtt", 10)) / 1e3
    flows = int(point.get("n_l4s", 1)) + int(point.get("n_classic", 1))
    window = int(point.get("rmem_max") or 2 * MAX_WINDOW_BYTES) // 2
    window_mbps = flows * window * 8 / rtt / 1e6 * WIRE_BYTES / MSS
    return min(cap, window_mbps) * 1e6 / 8 / WIRE_BYTES * dur


def estimate(
    points: Iterable[Mapping[str, Any]], *, jobs: int | None = None, cost: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Expected CPU seconds of the runs and wall seconds on ``jobs`` cores (default: all), at
    ``cost`` (a :func:`packet_cost`; default: the reference point's)."""
    c = dict(cost or packet_cost())
    pts = list(points)
    cpu = [packets(p) * c["seconds_per_packet"] for p in pts]
    jobs = jobs or os.cpu_count() or 1
    # runs are independent: wall ~ total / cores, but never less than the longest run
    wall = max(sum(cpu) / jobs, max(cpu, default=0.0))
    return {"runs": len(pts), "cpu_seconds": sum(cpu), "wall_seconds": wall, "jobs": jobs, **c}


def check(
    study: Any, n: int, *, seed: int = 1, runs: list[Any] | None = None, cost: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Run ``n`` of ``study``'s runs, drawn at random (``seed``) from those the calibration did
    not measure (unless it measured them all), one after another on this core, in full, and
    compare the time they took with what :func:`estimate` expects of the same runs:
    ``{"runs", "estimated_seconds", "measured_seconds", "engine_seconds", "ratio", "worst"}``
    (``measured``: each run from its design point to its result, as a study worker spends it;
    ``engine``: the simulation alone; ``ratio``: measured / estimated; ``worst``: the run whose
    own ratio is furthest from 1, as ``(point, estimated, measured)``). ``runs``: as for
    :func:`packet_cost`; ``cost``: the caller's :func:`packet_cost` of ``study``, if it has it."""
    import random

    from l4sim.api import run
    from l4sim.scenario import Scenario

    runs = study.runs() if runs is None else runs
    calibration = {s for _, s in _calibration(runs)}
    specs = [r for r in runs if r.seed not in calibration] or runs
    sample = random.Random(seed).sample(specs, min(n, len(specs)))
    spp = (cost or packet_cost(study, runs=runs))["seconds_per_packet"]
    est = meas = engine = 0.0
    worst: tuple[dict[str, Any], float, float] | None = None
    for r in sample:
        e = packets(r.point) * spp
        t0 = time.perf_counter()
        res = run(Scenario.from_dict(study.build(r.point, r.seed)))
        m = time.perf_counter() - t0
        est, meas, engine = est + e, meas + m, engine + res.wall_seconds
        if worst is None or abs(m / e - 1) > abs(worst[2] / worst[1] - 1):
            worst = (dict(r.point), e, m)
    return {
        "runs": len(sample),
        "estimated_seconds": est,
        "measured_seconds": meas,
        "engine_seconds": engine,
        "ratio": meas / est if est > 0 else float("nan"),
        "worst": worst,
    }


def human(seconds: float) -> str:
    if seconds < 0.5:
        return "under a second"  # not "0 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
