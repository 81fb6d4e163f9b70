"""``benchmarks/same_results.py``: the fingerprints that show a speed change kept the results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "benchmarks" / "same_results.py"


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, check=False)


def test_a_changed_result_is_named_and_fails(tmp_path):
    saved = tmp_path / "before.txt"
    assert tool("--seconds", "2", "--save", str(saved)).returncode == 0
    lines = saved.read_text().splitlines()
    names = [line.split(" ", 1)[1] for line in lines]
    assert {"bench/cubic_100m", "golden/red_reno", "icnp26/S3a", "examples/dumbbell_cubic"} <= set(names)

    same = tool("--seconds", "2", "--check", str(saved))
    assert same.returncode == 0, same.stdout
    assert f"{len(lines)} of {len(lines)} the same" in same.stdout

    lines[0] = "0000000000000000 " + names[0]
    saved.write_text("\n".join(lines) + "\n")
    differ = tool("--seconds", "2", "--check", str(saved))
    assert differ.returncode == 1
    assert f"DIFFERENT: {names[0]}" in differ.stdout


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    cases = (
        (["--seconds", "0"], "--seconds"),
        (["--seconds", "0.2"], "--seconds"),  # the multi-AS background starts later
        (["--check", str(tmp_path / "none.txt")], "--check"),
    )
    for args, field in cases:
        r = tool(*args)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0], r.stderr
