#!/usr/bin/env python3
"""Same results before and after a speed change: a fingerprint of every run in a wide set.

Speed work must not change what the simulator computes (issue 15: "the same scenario and seed
must give byte-identical results"). The golden test (``crates/l4sim-core/tests/golden.rs``)
guards its thirteen scenarios; this guards more of the code: every example scenario, the
benchmark's scenarios and the multi-AS study's (quick form), each shortened to ``--seconds``,
and the golden scenarios as they are. Each run's whole result (every table, series and
counter; the wall-clock time left out) is hashed.

    python benchmarks/same_results.py --save /tmp/before.txt     # on the old build
    (change, rebuild: pip install -e .)
    python benchmarks/same_results.py --check /tmp/before.txt    # exit 1 on any difference

Without ``--save``/``--check`` it prints the fingerprints.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from bench import SCENARIOS, scenario_of

import l4sim
from l4sim import _core, icnp26

ROOT = Path(__file__).resolve().parents[1]
#: Result fields that measure the machine, not the model, and the model's version (so that a
#: model change shows which runs it moves).
WALL = ("wall_seconds", "model_version")


def scenarios(seconds: float) -> Iterator[tuple[str, str]]:
    """(name, core scenario JSON) of every scenario the check runs."""
    for key in SCENARIOS:
        yield f"bench/{key}", scenario_of(key, seconds).to_json()
    for path in sorted((ROOT / "examples").glob("*.toml")):
        sc = l4sim.load(path)
        yield f"examples/{path.stem}", sc.with_overrides(duration=min(sc.duration, seconds)).validate().to_json()
    for name in icnp26.scenario_names():
        yield f"icnp26/{name}", json.dumps(icnp26.scenario(name, quick=True))
    for path in sorted((ROOT / "crates/l4sim-core/tests/golden").glob("*.scenario.json")):
        yield f"golden/{path.name.removesuffix('.scenario.json')}", path.read_text(encoding="utf-8")


def fingerprint(scenario_json: str) -> str:
    result = json.loads(_core.run(scenario_json))
    for key in WALL:
        result.pop(key, None)
    text = json.dumps(result, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def bad(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--save", type=Path, metavar="FILE", help="write the fingerprints to FILE")
    what.add_argument("--check", type=Path, metavar="FILE", help="compare with FILE's fingerprints")
    ap.add_argument("--seconds", type=float, default=5.0, help="simulated seconds per run (default 5)")
    args = ap.parse_args(argv)
    if not args.seconds > 0:
        return bad(f"--seconds must be > 0, got {args.seconds}")
    before: dict[str, str] = {}
    if args.check:
        try:
            text = args.check.read_text(encoding="utf-8")
            before = dict(reversed(line.split(" ", 1)) for line in text.splitlines())
        except (OSError, ValueError) as e:
            return bad(f"--check {args.check}: not a fingerprint file ({e.__class__.__name__})")

    try:
        todo = list(scenarios(args.seconds))
    except l4sim.ScenarioError as e:
        return bad(f"--seconds {args.seconds}: too short for a scenario ({e})")
    lines = []
    for name, sc in todo:
        lines.append(f"{fingerprint(sc)} {name}")
        if not args.save and not args.check:
            print(lines[-1], flush=True)
    if args.save:
        args.save.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{len(lines)} fingerprints written to {args.save}")
    if args.check:
        now = dict(reversed(line.split(" ", 1)) for line in lines)
        differ = [n for n in now if before.get(n) != now[n]]
        for n in differ:
            print(f"DIFFERENT: {n}" if n in before else f"new (not in {args.check}): {n}")
        print(f"{len(now) - len(differ)} of {len(now)} the same")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
