#!/usr/bin/env python3
"""Build the engine with profile-guided optimisation (PGO): the same model, 1.05-1.1x faster.

For large studies. Run it in the environment l4sim is installed in (``. .venv/bin/activate``);
it needs the Rust toolchain's ``llvm-profdata`` (``rustup component add llvm-tools``).

1. builds the Python extension (``crates/l4sim-py``) instrumented (``-Cprofile-generate``);
2. runs the training workload with it: the golden scenarios (every CC, qdisc and topology,
   ``crates/l4sim-core/tests/golden``) and ``bench.py``'s standard scenarios, a few simulated
   seconds each;
3. merges the profiles with ``llvm-profdata``;
4. builds again with ``-Cprofile-use``, fat LTO and one codegen unit (``--native``: also
   ``-Ctarget-cpu=native``, for this CPU only);
5. runs every golden scenario with the new build and compares its whole result with the stored
   one; any difference stops here and nothing is installed;
6. installs the build over the extension ``l4sim`` imports (or writes it to ``--out``);
   ``l4sim._core.BUILD`` then says ``pgo`` (or ``pgo-native``) instead of ``release``, and
   ``bench.py`` records it with the machine.

Optimisation decides how fast the code runs, never what it computes (Rust does not reorder or
fuse floating-point arithmetic), so the results are the same bytes; step 5 checks it. A later
``pip install -e .`` (or ``maturin develop``) installs the ordinary build again. The study's
time estimate (``l4sim study plan``) measures a new build once (``studies/cost.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "crates" / "l4sim-core" / "tests" / "golden"
BENCHMARKS = Path(__file__).resolve().parent

#: Training: bench.py's scenarios, by key (their mix of CCs, qdiscs, traffic and topologies).
TRAINING = ["cubic_100m", "cubic_1g", "prague_dualpi2_100m", "bbr2_dualpi2_100m", "ietf106_dualpi2", "icnp26_s3a"]

# Runs in a fresh interpreter that imports the package copy with the instrumented extension.
TRAIN = """
import sys
sys.path.insert(0, {benchmarks!r})
import l4sim, bench
assert l4sim.__file__.startswith({pkg!r}), l4sim.__file__
for p in {golden!r}:
    l4sim.run(p)
for key in {keys!r}:
    bench.bench_one(key, {seconds!r}, 1)
"""

# Prints the names of the golden scenarios whose result differs with the extension it imports.
VERIFY = """
import json, sys
import l4sim
from l4sim import _core
assert l4sim.__file__.startswith({pkg!r}), l4sim.__file__
for scen, want in {pairs!r}:
    got = json.loads(_core.run(open(scen).read()))
    ref = json.load(open(want))
    got.pop("wall_seconds", None); ref.pop("wall_seconds", None)
    if got != ref:
        print(scen)
"""


def fail(msg: str, status: int = 2) -> NoReturn:
    print(f"error: {msg}", file=sys.stderr)
    raise SystemExit(status)


def find_profdata() -> Path | None:
    """``llvm-profdata`` of the active Rust toolchain (its LLVM reads the profiles rustc writes)."""
    try:
        sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True)
        host = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    triple = next((ln.split(":", 1)[1].strip() for ln in host.stdout.splitlines() if ln.startswith("host:")), "")
    p = Path(sysroot.stdout.strip()) / "lib" / "rustlib" / triple / "bin" / "llvm-profdata"
    return p if p.is_file() else None


def maturin_rustc_args() -> list[str]:
    """The rustc flags the ordinary build passes (``[tool.maturin] rustc-args`` in
    pyproject.toml), so that the PGO build differs from it by the profile alone."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f).get("tool", {}).get("maturin", {}).get("rustc-args", []))


def build(target_dir: Path, rustflags: str, label: str) -> Path:
    """The extension built by cargo with the ordinary build's rustc flags and ``rustflags``,
    fat LTO and one codegen unit; ``label`` becomes its ``l4sim._core.BUILD``."""
    env = dict(
        os.environ,
        RUSTFLAGS=" ".join([*maturin_rustc_args(), rustflags]),
        L4SIM_BUILD=label,
        CARGO_PROFILE_RELEASE_LTO="fat",
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS="1",
        PYO3_PYTHON=sys.executable,
    )
    cmd = ["cargo", "build", "--release", "--quiet", "-p", "l4sim-py", "--lib", "--target-dir", str(target_dir)]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        print(out.stderr[-3000:], file=sys.stderr)
        fail(f"cargo build failed ({rustflags})", 1)
    return target_dir / "release" / "lib_core.so"


def package_with(ext: Path, into: Path, module_file: str) -> Path:
    """A copy of the installed ``l4sim`` package with ``ext`` as its extension; the directory
    to put on ``PYTHONPATH``."""
    import l4sim

    pkg = into / "l4sim"
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(Path(l4sim.__file__).parent, pkg, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    shutil.copy2(ext, pkg / module_file)
    return into


def python_with(path: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by this interpreter with ``path`` first on its import path."""
    env = dict(os.environ, PYTHONPATH=str(path))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--native", action="store_true", help="also optimise for this machine's CPU (not portable)")
    ap.add_argument("--seconds", type=float, default=5.0, help="simulated seconds per training scenario (default 5)")
    ap.add_argument("--out", type=Path, help="write the extension here instead of installing it")
    ap.add_argument("--target-dir", type=Path, help="cargo's build directory (default: a temporary one)")
    ap.add_argument("--profdata", type=Path, help="the llvm-profdata to use (default: the Rust toolchain's)")
    args = ap.parse_args(argv)

    if not args.seconds >= 2:
        fail(f"--seconds must be at least 2 (the multi-AS scenario starts flows at 1 s), got {args.seconds}")
    profdata = args.profdata or find_profdata()
    if profdata is None:
        fail("llvm-profdata not found in the Rust toolchain: run `rustup component add llvm-tools`")
    if not profdata.is_file():
        fail(f"--profdata {profdata}: no such file")
    if shutil.which("cargo") is None:
        fail("cargo (the Rust toolchain) not found")
    try:
        from l4sim import _core
    except ImportError as e:
        fail(f"l4sim is not importable here ({e}): activate its environment first")
    installed = Path(_core.__file__)
    out = args.out or installed
    if not os.access(out.parent if not out.exists() else out, os.W_OK):
        fail(f"--out {out}: not writable")
    goldens = sorted(GOLDEN.glob("*.scenario.json"))
    if not goldens:
        fail(f"no golden scenarios under {GOLDEN}")

    with tempfile.TemporaryDirectory(prefix="l4sim-pgo-") as tmp:
        t = Path(tmp)
        target = args.target_dir or t / "target"
        raw = t / "profiles"
        print("1/5 instrumented build ...", flush=True)
        ext = build(target, f"-Cprofile-generate={raw}", "pgo-training")
        path = package_with(ext, t / "train", installed.name)
        print(f"2/5 training: {len(goldens)} golden scenarios, {len(TRAINING)} benchmark scenarios ...", flush=True)
        code = TRAIN.format(
            benchmarks=str(BENCHMARKS),
            pkg=str(path),
            golden=[str(g) for g in goldens],
            keys=TRAINING,
            seconds=args.seconds,
        )
        r = python_with(path, code)
        if r.returncode != 0:
            print(r.stderr[-3000:], file=sys.stderr)
            fail("the training runs failed", 1)
        print("3/5 merging profiles ...", flush=True)
        merged = t / "l4sim.profdata"
        m = subprocess.run([str(profdata), "merge", "-o", str(merged), str(raw)], capture_output=True, text=True)
        if m.returncode != 0:
            fail(f"llvm-profdata merge failed: {m.stderr.strip().splitlines()[-1:]}", 1)
        flags = f"-Cprofile-use={merged}" + (" -Ctarget-cpu=native" if args.native else "")
        print("4/5 optimised build ...", flush=True)
        ext = build(target, flags, "pgo-native" if args.native else "pgo")
        path = package_with(ext, t / "verify", installed.name)
        print(f"5/5 checking the {len(goldens)} golden results ...", flush=True)
        pairs = [(str(g), str(g).replace(".scenario.json", ".result.json")) for g in goldens]
        r = python_with(path, VERIFY.format(pkg=str(path), pairs=pairs))
        if r.returncode != 0 or r.stdout.strip():
            print(r.stderr[-3000:], file=sys.stderr)
            differ = ", ".join(Path(s).name for s in r.stdout.split()) or "the check did not run"
            fail(f"the PGO build's results differ from the golden outputs ({differ}); nothing installed", 1)
        tmp_out = out.with_name(out.name + ".new")
        shutil.copy2(ext, tmp_out)
        os.replace(tmp_out, out)
    print(f"installed: {out}" if out == installed else f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
