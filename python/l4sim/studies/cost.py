"""How long a study will take on this machine: a per-packet cost measured once, not a guess.

The engine's work grows with the packets it moves: a study run at capacity C Mbit/s for D s
sends about C x 1e6 / 8 / 1514 x D packets through its bottleneck. The cost per bottleneck
packet (wall seconds of one core, ACKs and every other event included) is measured once per
machine, model version and build of the engine (a PGO build, ``benchmarks/pgo_build.py``, is
faster) by running the study's own reference point (DualPI2, Prague vs
CUBIC, 100 Mbit/s, 10 ms) and cached in ``$XDG_CACHE_HOME/l4sim/`` (``~/.cache/l4sim/``).
``l4sim study plan`` prints the expected CPU time of the design and its wall time on this
machine's cores. It is an estimate: bottlenecks under-used for other reasons than the receive
window move fewer packets, and a machine shared with other work runs slower.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: Bytes on the wire of a full-sized data packet (1500-byte IP packet + Ethernet header).
WIRE_BYTES = 1514
MSS = 1448
#: The largest window of a receiver with Linux's default ``tcp_rmem`` (half of 6 MB).
MAX_WINDOW_BYTES = 3_145_728
#: The reference point whose per-packet cost is measured (the ANRW'24 grid's busiest kind).
REFERENCE = {"aqm": "DualPI2", "n_bdp": 2, "btl_capacity": 100, "base_rtt": 10, "duration": 30}


def _cache_file(model_version: str, build: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "l4sim" / f"packet-cost-{model_version}-{build}.json"


def _build_id() -> str:
    """The engine build's identity: a hash of the extension module's file."""
    from l4sim import _core

    return hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()[:12]


def packet_cost(*, refresh: bool = False) -> dict[str, Any]:
    """Wall seconds per bottleneck packet on one core: ``{"seconds_per_packet", "measured",
    "machine", "model_version"}``; measured on first use (a 30 s reference run), then cached."""
    from l4sim._core import MODEL_VERSION
    from l4sim.api import run
    from l4sim.scenario import Scenario
    from l4sim.studies.factors import scenario_from_factors

    f = _cache_file(str(MODEL_VERSION), _build_id())
    machine = f"{platform.node()} {platform.machine()}"
    if not refresh and f.exists():
        try:
            c = json.loads(f.read_text())
            if c.get("machine") == machine and c.get("seconds_per_packet", 0) > 0:
                return c
        except (OSError, ValueError):
            pass
    r = run(Scenario.from_dict(scenario_from_factors(**REFERENCE)))
    pkts = max(r.bottleneck_pkts, 1)
    c = {
        "seconds_per_packet": r.wall_seconds / pkts,
        "measured": time.strftime("%Y-%m-%d %H:%M", time.localtime()),
        "machine": machine,
        "model_version": str(MODEL_VERSION),
        "reference": REFERENCE,
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


def estimate(points: Iterable[Mapping[str, Any]], *, jobs: int | None = None) -> dict[str, Any]:
    """Expected CPU seconds of the runs and wall seconds on ``jobs`` cores (default: all)."""
    c = packet_cost()
    pts = list(points)
    cpu = [packets(p) * c["seconds_per_packet"] for p in pts]
    jobs = jobs or os.cpu_count() or 1
    # runs are independent: wall ~ total / cores, but never less than the longest run
    wall = max(sum(cpu) / jobs, max(cpu, default=0.0))
    return {"runs": len(pts), "cpu_seconds": sum(cpu), "wall_seconds": wall, "jobs": jobs, **c}


def human(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
