"""The ``l4sim`` command: errors exit 2 before running; ``run --json`` prints one object."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from l4sim.cli import build_parser, main
from l4sim_testdata import MINIMAL_TOML, fake_engine, minimal_toml  # noqa: F401 (fixtures)

BFIFO = 'kind = "bfifo", limit = 250000'


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "l4sim", *args], capture_output=True, text=True, timeout=300)


def test_validate_scenario_accepts_a_good_file(minimal_toml: Path):
    p = run_cli("validate-scenario", str(minimal_toml))
    assert p.returncode == 0, p.stderr
    assert "ok" in p.stdout


def test_validate_scenario_rejects_a_negative_rate_naming_the_field(tmp_path: Path):
    f = tmp_path / "bad.toml"
    f.write_text(MINIMAL_TOML.replace("rate = 100", "rate = -5"), encoding="utf-8")
    p = run_cli("validate-scenario", str(f))
    assert p.returncode == 2
    assert p.stderr.startswith("error: topology.bottleneck.rate: ")
    assert "-5" in p.stderr


def test_run_with_malformed_toml_exits_2_naming_file_and_line(tmp_path: Path):
    f = tmp_path / "broken.toml"
    f.write_text("duration = 5\n[topology\n", encoding="utf-8")
    p = run_cli("run", str(f))
    assert p.returncode == 2
    assert str(f) in p.stderr and "line 2" in p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize(
    "replace,field",
    [
        (('cc = "reno"', 'cc = "vegas"'), "flows[0].cc.name"),
        ((BFIFO, 'kind = "sfq"'), "topology.bottleneck.qdisc.kind"),
        (("limit = 250000", "limit = 1000"), "topology.bottleneck.qdisc.limit"),
        (("seed = 3", "sed = 3"), "sed"),
        (
            (BFIFO, 'kind = "netem", slot_delay_ms = 5, slot_jitter_ms = 1, slot_distribution = "uniform"'),
            "topology.bottleneck.qdisc.slot_distribution",
        ),
        ((BFIFO, 'kind = "netem", slot_packets = 4'), "topology.bottleneck.qdisc.slot_packets"),
    ],
)
def test_run_with_a_bad_scenario_exits_2_before_running(tmp_path: Path, replace, field):
    f = tmp_path / "bad.toml"
    f.write_text(MINIMAL_TOML.replace(*replace), encoding="utf-8")
    p = run_cli("run", "--json", str(f))
    assert p.returncode == 2
    assert p.stderr.startswith(f"error: {field}: ")
    assert p.stdout == ""


def test_unknown_aqm_option_exits_2_naming_the_value(capsys):
    rc = main(["run", "--aqm", "REDish", "--n-bdp", "2", "--btl-capacity", "100", "--base-rtt", "10"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --aqm: ") and "REDish" in err


def test_study_point_needs_the_buffer_capacity_and_rtt(capsys):
    assert main(["run", "--aqm", "FIFO", "--n-bdp", "2"]) == 2
    err = capsys.readouterr().err
    assert "--btl-capacity" in err and "--base-rtt" in err


def test_file_and_factors_together_are_refused(minimal_toml: Path, capsys):
    assert main(["run", str(minimal_toml), "--aqm", "FIFO"]) == 2
    assert "not both" in capsys.readouterr().err


def test_run_without_arguments_is_a_usage_error(capsys):
    assert main(["run"]) == 2


def test_parser_offers_every_study_factor_option():
    text = build_parser().format_help() + build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    for opt in (
        "--aqm",
        "--n-bdp",
        "--btl-capacity",
        "--base-rtt",
        "--ecn-threshold",
        "--ecn-fallback",
        "--tx-l4s-ecn",
        "--rx-l4s-ecn",
        "--tx-classic-ecn",
        "--rx-classic-ecn",
        "--cc-l4s",
        "--cc-classic",
        "--n-l4s",
        "--n-classic",
        "--seed",
        "--duration",
        "--json",
        "--save-series",
    ):
        assert opt in text


def test_run_json_prints_one_object_with_flows_links_and_timing(minimal_toml: Path, tmp_path: Path):
    out = tmp_path / "series"
    p = run_cli("run", "--json", "--save-series", str(out), str(minimal_toml))
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout)
    assert isinstance(obj, dict)
    assert [f["name"] for f in obj["flows"]] == ["a"]
    for key in ("name", "cc", "goodput_mbps", "mean_srtt_ms", "qdelay_ms", "retrans"):
        assert key in obj["flows"][0]
    assert all("utilisation" in link for link in obj["links"])
    for key in ("sim_seconds", "wall_seconds", "bottleneck_pkts", "jain_index"):
        assert key in obj
    assert obj["sim_seconds"] == pytest.approx(2)
    assert (out / "series_flows.csv").exists() and (out / "result.json").exists()


def test_run_study_point_prints_a_table(tmp_path: Path):
    p = run_cli(
        "run",
        "--aqm",
        "FIFO",
        "--n-bdp",
        "2",
        "--btl-capacity",
        "20",
        "--base-rtt",
        "10",
        "--cc-l4s",
        "cubic",
        "--cc-classic",
        "cubic",
        "--duration",
        "2",
    )
    assert p.returncode == 0, p.stderr
    assert "l4s" in p.stdout and "classic" in p.stdout
    assert "utilisation" in p.stdout and "Jain" in p.stdout


def test_run_json_shape_with_a_stand_in_engine(fake_engine, minimal_toml: Path, capsys, tmp_path: Path):
    rc = main(["run", "--json", "--save-series", str(tmp_path / "s"), str(minimal_toml)])
    assert rc == 0
    out = capsys.readouterr().out
    obj = json.loads(out)  # exactly one JSON document
    assert [f["name"] for f in obj["flows"]] == ["a"]
    assert set(obj["flows"][0]) >= {"name", "cc", "goodput_mbps", "mean_srtt_ms", "qdelay_ms", "retrans"}
    assert obj["links"][0]["utilisation"] == pytest.approx(0.9)
    assert obj["sim_seconds"] == 2 and obj["bottleneck_pkts"] == 97 and "wall_seconds" in obj
    assert (tmp_path / "s" / "series_flows.csv").read_text().startswith("t,name,variable,value")


def test_run_table_with_a_stand_in_engine(fake_engine, minimal_toml: Path, capsys):
    assert main(["run", "--duration", "1", str(minimal_toml)]) == 0
    out = capsys.readouterr().out
    assert "goodput" in out and "utilisation" in out and "Jain" in out
    assert "simulated 1 s" in out


def test_every_command_and_option_has_help_text():
    """``--help`` explains everything: each command and subcommand, option and positional of
    the whole parser tree (walked through every subparser)."""
    import argparse

    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> int:
        n = 0
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                helps = {c.dest: c.help for c in a._choices_actions}
                for name, sub in a.choices.items():
                    if not (helps.get(name) or "").strip():
                        missing.append(f"{path} {name}")
                    n += walk(sub, f"{path} {name}")
            elif not (a.help or "").strip() or a.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(a.option_strings) or a.dest}")
            n += 1
        return n

    assert walk(build_parser(), "l4sim") > 50
    assert not missing, f"no help text: {missing}"


@pytest.mark.parametrize(
    "code",
    [
        "import l4sim",
        "from l4sim.cli import main; main(['--help'])",
        "from l4sim.cli import main; main(['run', sys.argv[1], '--duration', '0.5'])",
    ],
)
def test_import_help_and_run_stay_free_of_the_heavy_libraries(code: str, minimal_toml: Path):
    """Start-up time (issue 15): pandas, numpy, matplotlib ... are imported only by what uses them."""
    heavy = ("numpy", "pandas", "matplotlib", "pyarrow", "distributed", "tqdm", "aiohttp", "plotly")
    check = f"import atexit, sys; atexit.register(lambda: print([m for m in {heavy!r} if m in sys.modules]))\n{code}"
    p = subprocess.run([sys.executable, "-c", check, str(minimal_toml)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "argv,option",
    [
        (["study", "run", "anrw24", "--store", "{tmp}/st", "--jobs", "-2"], "--jobs"),
        (["study", "run", "anrw24", "--store", "{tmp}/st", "--limit", "0"], "--limit"),
        (["study", "run", "anrw24", "--store", "{tmp}/st", "--trials", "0"], "--trials"),
        (["study", "run", "anrw24", "--store", "{tmp}/st", "--duration", "0"], "--duration"),
        (["study", "plan", "full-factorial", "--jobs", "-1"], "--jobs"),
        (["reproduce", "anrw24", "--out", "{tmp}/st", "--jobs", "0"], "--jobs"),
        (["reproduce", "anrw24", "--out", "{tmp}/st", "--duration", "nan"], "--duration"),
        (["reproduce", "icnp26", "--out", "{tmp}/st", "--jobs", "0"], "--jobs"),
        (["validate", "--out", "{tmp}/st", "--trials", "-1"], "--trials"),
        (["run", "{tmp}/st.toml", "--seed", "-1"], "--seed"),
        (["run", "{tmp}/st.toml", "--duration", "inf"], "--duration"),
        (["run", "{tmp}/st.toml", "--seed", "abc"], "--seed"),
    ],
)
def test_bad_option_values_are_one_line_before_anything_runs(tmp_path: Path, capsys, argv, option):
    """Worker, trial and run counts, durations and seeds out of range: one line naming the option
    and the value, status 2, and no store or output directory is created."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument ") and option in err and err.count("\n") == 1, err
    assert argv[argv.index(option) + 1] in err
    assert not (tmp_path / "st").exists()


@pytest.mark.parametrize("address", ["bogus://x", "tcp://127.0.0.1:1"])
@pytest.mark.parametrize("cmd", [["study", "run", "anrw24", "--store"], ["reproduce", "anrw24", "--out"]])
def test_a_dask_scheduler_that_cannot_be_reached_is_one_line_before_a_store(
    tmp_path, capsys, monkeypatch, cmd, address
):
    """An unknown scheme or a scheduler nobody listens at was a traceback from distributed (after
    its 30 s connect timeout), with the store already made and the design written into it."""
    from l4sim import cli_study

    monkeypatch.setattr(cli_study, "DASK_CONNECT_TIMEOUT_S", 1)
    assert main([*cmd, str(tmp_path / "st"), "--dask", address]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --dask: cannot connect to a scheduler at {address!r}") and err.count("\n") == 1, err
    assert not (tmp_path / "st").exists()


def test_a_dask_address_nobody_listens_at_fails_at_once(tmp_path, capsys):
    """A refused connection waited out distributed's 30 s connect timeout before saying so."""
    import socket
    import time

    with socket.socket() as s:  # a port that was free a moment ago: nobody listens there
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    t0 = time.monotonic()
    assert main(["study", "run", "anrw24", "--store", str(tmp_path / "st"), "--dask", address]) == 2
    assert time.monotonic() - t0 < 5
    err = capsys.readouterr().err
    assert err.startswith(f"error: --dask: cannot connect to a scheduler at {address!r}: ") and "refused" in err
    assert not (tmp_path / "st").exists()


@pytest.mark.parametrize("command", ["run", "validate-scenario"])
def test_a_study_file_given_as_a_scenario_says_to_use_study_run(tmp_path, capsys, command):
    """It said 'constraints: unknown key beside [factors]'."""
    root = Path(__file__).resolve().parent.parent
    for f in (root / "examples" / "studies").glob("*.toml"):
        assert main([command, str(f)]) == 2
        err = capsys.readouterr().err
        assert "this is a study file (a design of many runs), not one scenario: run it with `l4sim study run" in err
        assert err.count("\n") == 1, err


def test_help_still_exits_0(capsys):
    assert main(["run", "--help"]) == 0
    assert "--duration" in capsys.readouterr().out


def test_a_sample_interval_in_the_wrong_unit_is_refused_before_running(tmp_path: Path, capsys):
    """1e-9 s would sample every flow a billion times per simulated second (memory, not a run)."""
    f = tmp_path / "fine.toml"
    f.write_text(MINIMAL_TOML.replace("duration = ", "sample_interval = 1e-9\nduration = "), encoding="utf-8")
    assert main(["run", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: sample_interval: 1e-9 s") and err.count("\n") == 1, err


def test_a_reader_that_goes_away_ends_the_command_quietly():
    # `l4sim study plan full-factorial --runs | head -1`: 28,320 lines, the reader takes one.
    p = subprocess.Popen(
        [sys.executable, "-m", "l4sim", "study", "plan", "full-factorial", "--no-estimate", "--runs"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stderr is not None
    assert p.stdout.readline().startswith("study full-factorial:")
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=300) == 141, err
    assert err == ""


@pytest.mark.parametrize(
    "option,target",
    [
        ("--save-series", "{file}"),
        ("--save-series", "{file}/series"),
        ("--plot", "{file}/out.png"),
        ("--plot", "{file}"),
        ("--plot", "{tmp}/out.xyz"),
        # a directory nothing can be created in (even by root)
        ("--plot", "/proc/nope/x.png"),
        ("--save-series", "/proc/nope"),
    ],
)
def test_an_output_path_that_cannot_be_written_is_refused_before_running(
    minimal_toml: Path, tmp_path: Path, capsys, option: str, target: str
):
    """A file where the output directory should go, or a figure format matplotlib cannot write:
    one line naming the option, status 2, and nothing run (it used to be a traceback after it)."""
    f = tmp_path / "taken"
    f.write_text("not a directory", encoding="utf-8")
    target = target.replace("{file}", str(f)).replace("{tmp}", str(tmp_path))
    assert main(["run", str(minimal_toml), option, target]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"error: {option}: ") and err.count("\n") == 1, err
    assert out == ""


def test_several_runs_with_the_same_or_no_name_keep_their_own_outputs(tmp_path: Path, capsys):
    """Two files whose scenarios have no name (or the same one) wrote their series, flent files
    and figures to the same place, the second run's over the first's."""
    unnamed = MINIMAL_TOML.replace('name = "minimal"\n', "").replace("duration = 2", "duration = 0.5")
    (tmp_path / "x").mkdir()
    files = [tmp_path / "one.toml", tmp_path / "x" / "one.toml", tmp_path / "two.toml"]
    for f in files[:2]:
        f.write_text(unnamed, encoding="utf-8")
    files[2].write_text(MINIMAL_TOML.replace("duration = 2", "duration = 0.5"), encoding="utf-8")
    argv = ["run", *map(str, files), "--save-series", str(tmp_path / "s"), "--flent", str(tmp_path / "f")]
    assert main(argv) == 0, capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["minimal", "one", "one-2"]
    assert all((tmp_path / "s" / n / "result.json").exists() for n in ("minimal", "one", "one-2"))
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == ["minimal.flent.gz", "one-2.flent.gz", "one.flent.gz"]


STUDY_POINT = """name = "unbuildable"
[factors]
aqm = ["FIFO"]
[fixed]
n_bdp = 2
btl_capacity = 20
base_rtt = 10
rx_l4s_ecn = "accecn"
rx_classic_ecn = "classic"
n_l4s = 1
n_classic = 1
duration = 2
"""


@pytest.mark.parametrize(
    "replace,words",
    [
        (("n_l4s = 1", "n_l4s = 0"), "n_classic are both 0"),  # n_classic = 0 too
        (("base_rtt = 10", "base_rtt = 1e308"), "'base_rtt': 1e+308 ms is a base RTT of more than a minute"),
        (("n_bdp = 2", "n_bdp = 1e308"), "'n_bdp': "),
    ],
)
def test_a_study_point_that_cannot_be_built_is_one_line_and_no_store(tmp_path: Path, capsys, replace, words):
    """The store was made before the design's points were built (an empty store left behind),
    and a buffer of n_bdp x btl_capacity x base_rtt beyond a float was an OverflowError traceback."""
    f = tmp_path / "s.toml"
    text = STUDY_POINT.replace(*replace)
    if "n_l4s = 0" in text:
        text = text.replace("n_classic = 1", "n_classic = 0")
    f.write_text(text, encoding="utf-8")
    assert main(["study", "run", str(f), "--store", str(tmp_path / "st"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: factor '") and words in err and "(in the run " in err and err.count("\n") == 1, err
    assert not (tmp_path / "st").exists()


def test_a_command_line_override_is_blamed_on_its_option_not_the_file(minimal_toml: Path, capsys):
    assert main(["run", str(minimal_toml), "--duration", "1e9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --duration: ") and "in " + str(minimal_toml) not in err, err


def test_every_study_factor_is_an_option_of_run_and_the_help_names_what_it_accepts():
    """The study-point options come from the factors' names (none hand-listed and forgotten);
    the CC options list every factor CC (bbr2-v2alpha too), the fallback all of 0, 1, 2."""
    from l4sim.cli import _scenario_from_args
    from l4sim.studies.factors import FACTOR_CCS, FACTOR_NAMES

    run = build_parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    helps = {a.dest: a.help or "" for a in run._actions}
    assert set(FACTOR_NAMES) <= set(helps)
    for cc in ("cc_l4s", "cc_classic", "rx_l4s_cc", "rx_classic_cc"):
        assert all(name in helps[cc] for name in FACTOR_CCS), helps[cc]
    assert all(x in helps["ecn_fallback"] for x in ("0", "1", "2"))
    point = ["--aqm", "FIFO", "--n-bdp", "1", "--btl-capacity", "20", "--base-rtt", "10"]
    args = build_parser().parse_args(
        ["run", *point, "--tree-level", "pair", "--rx-classic-cc", "dctcp", "--rx-l4s-cc", "cubic", "--duration", "1"]
    )
    sc = _scenario_from_args(args).data
    assert sc["topology"]["kind"] == "tree"
    receivers = {f["name"]: f["receiver"]["cc"]["name"] for f in sc["flows"]}
    assert receivers == {"l4s": "cubic", "classic": "dctcp"}
