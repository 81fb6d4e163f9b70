"""The README's examples do what they say: each `l4sim run` command line of the README runs
(shortened to 2 simulated seconds) and, where it names receiver ECN, the flows negotiate it."""

from __future__ import annotations

import glob
import json
import re
import shlex
from pathlib import Path

import pytest

import l4sim
from l4sim import cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def sh_commands() -> list[list[str]]:
    out = []
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("l4sim run "):
                out.append(shlex.split(line)[1:])
    return out


COMMANDS = sh_commands()


def test_the_readme_has_run_examples():
    assert len(COMMANDS) >= 4


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c)[:60] for c in COMMANDS])
def test_readme_run_command(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    # the shell expands globs (examples/demo_*.toml) before l4sim sees them
    argv = [m for a in argv for m in (sorted(glob.glob(a)) if "*" in a else [a])]
    if "--duration" in argv:
        argv[argv.index("--duration") + 1] = "2"
    else:
        argv += ["--duration", "2"]
    for opt in ("--save-series", "--flent", "--plot"):  # write into the test's directory
        if opt in argv:
            i = argv.index(opt) + 1
            argv[i] = str(tmp_path / Path(argv[i]).name)
    if "--json" not in argv:
        argv.append("--json")
    assert cli.main(argv) == 0, capsys.readouterr().err
    runs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    flows = {f["name"]: f for f in runs[0]["flows"]}
    if "--rx-classic-ecn" in argv:
        want = {"classic": "rfc3168", "none": "none"}[argv[argv.index("--rx-classic-ecn") + 1]]
        assert flows["classic"]["ecn_mode"] == want
    if "--aqm" in argv and "--rx-l4s-ecn" not in argv and flows.get("l4s", {}).get("cc") == "prague":
        assert flows["l4s"]["ecn_mode"] == "acc_ecn"  # the study's default: Prague with AccECN


def test_readme_run_factors_example_negotiates_classic_ecn_for_cubic():
    # README: l4sim.run_factors(..., rx_classic_ecn="classic"): the CUBIC flow uses ECN, since
    # the study's sender asks for it by default
    r = l4sim.run_factors(
        aqm="FQ_Codel", n_bdp=2, btl_capacity=100, base_rtt=10, ecn_threshold=5, rx_classic_ecn="classic", duration=2
    )
    assert 'rx_classic_ecn="classic"' in README
    modes = dict(zip(r.flows["name"], r.flows["ecn_mode"], strict=True))
    assert modes == {"l4s": "acc_ecn", "classic": "rfc3168"}
