"""``benchmarks/pgo_build.py``: the profile-guided build of the engine.

The build test runs the whole tool (two cargo builds, a few minutes) into a temporary file and
then runs a golden scenario with the result itself. It skips only when the Rust toolchain has no
``llvm-profdata`` and ``L4SIM_REQUIRE_PGO`` is unset (CI sets it and installs ``llvm-tools``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "benchmarks" / "pgo_build.py"
GOLDEN = ROOT / "crates" / "l4sim-core" / "tests" / "golden"


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "args, field",
    [
        (["--seconds", "1"], "--seconds"),
        (["--profdata", "/nonexistent/llvm-profdata"], "--profdata"),
        (["--out", "/nonexistent-dir/_core.so", "--profdata", sys.executable], "--out"),
    ],
)
def test_bad_input_is_one_line_naming_the_option_and_exit_2(args, field, tmp_path):
    r = tool(*args, "--target-dir", str(tmp_path / "target"))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0]
    assert not (tmp_path / "target").exists()  # nothing was built


def test_the_pgo_build_gives_the_golden_results(tmp_path):
    sys.path.insert(0, str(TOOL.parent))
    try:
        import pgo_build
    finally:
        sys.path.pop(0)
    if pgo_build.find_profdata() is None:
        if os.environ.get("L4SIM_REQUIRE_PGO"):
            pytest.fail("L4SIM_REQUIRE_PGO is set but the Rust toolchain has no llvm-profdata")
        pytest.skip("no llvm-profdata: rustup component add llvm-tools")
    out = tmp_path / "_core.abi3.so"
    r = tool("--out", str(out), "--target-dir", str(tmp_path / "target"), "--seconds", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "5/5 checking the" in r.stdout and f"written: {out}" in r.stdout
    # Independently of the tool's own check: the new extension, in a copy of the package,
    # reproduces a golden result (every figure but the wall-clock time).
    import l4sim

    pkg = tmp_path / "pkg" / "l4sim"
    shutil.copytree(Path(l4sim.__file__).parent, pkg, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy2(out, pkg / Path(l4sim._core.__file__).name)
    scen = GOLDEN / "dualpi2_prague_cubic.scenario.json"
    code = (
        "import json, sys, l4sim; from l4sim import _core\n"
        f"assert l4sim.__file__.startswith({str(pkg)!r}) and _core.BUILD == 'pgo', _core.BUILD\n"
        f"print(_core.run(open({str(scen)!r}).read()))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(pkg.parent))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    got = json.loads(run.stdout)
    want = json.loads(scen.with_name("dualpi2_prague_cubic.result.json").read_text())
    got.pop("wall_seconds")
    want.pop("wall_seconds", None)
    assert got == want
