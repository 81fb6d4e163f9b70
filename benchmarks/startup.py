#!/usr/bin/env python3
"""Start-up time of the ``l4sim`` command and of ``import l4sim``.

For each command: the fastest wall time of ``--repeat`` fresh interpreters, the time Python
reports for importing the ``l4sim`` modules and all they import (``-X importtime``), and which heavy libraries the
command imported (it should be none of them unless it draws or analyses). ``l4sim run`` runs
``examples/dumbbell_cubic.toml`` for 1 simulated second, so most of its time is start-up.
``--python`` picks the interpreter (default: this one); ``--json`` prints one JSON object.
Wall times are wall-clock: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dumbbell_cubic.toml"
HEAVY = ("numpy", "pandas", "matplotlib", "pyarrow", "distributed", "tqdm", "aiohttp", "plotly", "scipy")

# Each command reports the heavy libraries it imported on its last line of stderr.
_REPORT = (
    "import atexit, sys; atexit.register(lambda: print('heavy:' + ','.join("
    f"m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr))"
)
COMMANDS = {
    "import l4sim": f"{_REPORT}; import l4sim",
    "l4sim --help": f"{_REPORT}; from l4sim.cli import main; main(['--help'])",
    "l4sim run (1 s)": f"{_REPORT}; from l4sim.cli import main; main(['run', {str(EXAMPLE)!r}, '--duration', '1'])",
}


def measure(python: str, code: str, repeat: int) -> dict[str, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        run = subprocess.run([python, "-X", "importtime", "-c", code], capture_output=True, text=True, check=False)
        if time.perf_counter() - t0 < best:
            best, out = time.perf_counter() - t0, run
    assert out is not None
    lines = out.stderr.splitlines()
    if out.returncode not in (0, 2) or not lines or not lines[-1].startswith("heavy:"):
        raise SystemExit(f"error: {python} -c {code!r} failed: {lines[-1] if lines else out.returncode}")
    # "import time: self [us] | cumulative [us] | package", nested packages indented: the
    # top-level l4sim modules' cumulative times (everything they imported)
    fields = [ln.split("|") for ln in lines if ln.startswith("import time:") and "|" in ln]
    l4sim_us = sum(int(f[1]) for f in fields if f[2].startswith(" l4sim"))
    return {"wall_s": best, "import_l4sim_s": l4sim_us / 1e6, "heavy": [m for m in lines[-1][6:].split(",") if m]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="fresh interpreters per command; the fastest counts")
    ap.add_argument("--python", default=sys.executable, help="interpreter with l4sim installed (default: this one)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        print(f"error: --repeat must be >= 1, got {args.repeat}", file=sys.stderr)
        return 2
    rows = {name: measure(args.python, code, args.repeat) for name, code in COMMANDS.items()}
    if args.json:
        print(json.dumps({"python": args.python, "repeat": args.repeat, "results": rows}))
        return 0
    print(f"{'command':<18} {'wall s':>7} {'import l4sim s':>15}  heavy libraries imported")
    for name, r in rows.items():
        print(f"{name:<18} {r['wall_s']:>7.3f} {r['import_l4sim_s']:>15.3f}  {', '.join(r['heavy']) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
