"""Study designs: presets, constraints, seeds, malformed files."""

import pytest

from l4sim.studies import presets
from l4sim.studies.study import Constraint, Study, StudyError, seed_for


def test_full_factorial_preset_expands_to_exactly_28320_runs():
    s = presets.get("full-factorial")
    assert len(s) == 28_320
    # 236 AQM/buffer/RTT/threshold cells x (2 capacities x 2 fallback x 3 x 2 ECN x 5 trials)
    per = 2 * 2 * 3 * 2 * 5
    assert len(s) == 236 * per


def test_first_published_grid_has_127_runs_per_trial():
    s = presets.get("first-grid")
    assert s.trials == 5
    assert len(s) == 127 * 5
    assert len(s.with_overrides(trials=1)) == 127


def test_anrw24_preset_matches_the_reference_grid():
    s = presets.get("anrw24")
    # 9 AQMs x 5 buffers x 2 classic-ECN settings x 10 trials (0.5 BDP x 10 ms = T: kept)
    assert len(s) == 9 * 5 * 2 * 10
    pts = s.points()
    assert {p["aqm"] for p in pts} == {
        "FIFO",
        "single_queue_FQ",
        "Codel",
        "FQ",
        "FQ_Codel",
        "FQ_Codel_L4S",
        "pie_drop",
        "Codel_drop",
        "DualPI2",
    }
    assert all(p["btl_capacity"] == 100 and p["base_rtt"] == 10 for p in pts)


def test_presets_all_load_and_count():
    names = [n for n, runs, trials, _ in presets.table()]
    assert {"full-factorial", "first-grid", "anrw24", "pam25-cc", "pam25-flows"} <= set(names)


def test_fifo_drops_the_threshold_and_merges_duplicates():
    s = Study.from_toml("""
[factors]
aqm = ["FIFO", "Codel"]
ecn_threshold = [1, 5, 20]
[fixed]
n_bdp = 10
btl_capacity = 100
base_rtt = 10
""")
    pts = s.points()
    fifo = [p for p in pts if p["aqm"] == "FIFO"]
    assert len(fifo) == 1 and "ecn_threshold" not in fifo[0]
    assert len([p for p in pts if p["aqm"] == "Codel"]) == 3


def test_buffer_shorter_than_threshold_is_skipped_except_fifo():
    s = Study.from_toml("""
[factors]
aqm = ["FIFO", "DualPI2"]
n_bdp = [0.5, 2]
ecn_threshold = [20]
[fixed]
btl_capacity = 100
base_rtt = 10
""")
    got = {(p["aqm"], p["n_bdp"]) for p in s.points()}
    # 0.5 x 10 ms = 5 ms < 20 ms: DualPI2 skipped; FIFO exempt; 2 x 10 = 20 >= 20 kept
    assert got == {("FIFO", 0.5), ("FIFO", 2), ("DualPI2", 2)}


def test_user_constraints_filter_points():
    s = Study.from_toml("""
constraints = ["not (aqm == 'DualPI2' and ecn_fallback == 1)", "n_bdp * base_rtt <= 40"]
[factors]
aqm = ["Codel", "DualPI2"]
ecn_fallback = [0, 1]
n_bdp = [1, 8]
[fixed]
btl_capacity = 100
base_rtt = 10
""")
    got = {(p["aqm"], p["ecn_fallback"], p["n_bdp"]) for p in s.points()}
    assert got == {("Codel", 0, 1), ("Codel", 1, 1), ("DualPI2", 0, 1)}


def test_constraint_values_are_spelled_as_the_factors_are():
    """Names are case-insensitive everywhere: 'dualpi2' in a constraint used to match nothing."""
    s = Study.from_toml("""
constraints = ["not (aqm == 'dualpi2' and n_bdp == 1)", "cc_classic in ('CUBIC', 'bbrv2')"]
[factors]
aqm = ["FIFO", "DualPI2"]
n_bdp = [1, 2]
cc_classic = ["cubic", "bbr2", "reno"]
[fixed]
btl_capacity = 100
base_rtt = 10
""")
    got = {(p["aqm"], p["n_bdp"]) for p in s.points()}
    assert got == {("FIFO", 1), ("FIFO", 2), ("DualPI2", 2)}
    assert {p["cc_classic"] for p in s.points()} == {"cubic", "bbr2"}


@pytest.mark.parametrize(
    "constraint,message",
    [
        ("aqm == 'Nope'", r"constraint \"aqm == 'Nope'\": factor 'aqm': value 'Nope' is not one of"),
        ("n_bdp != 3", r"constraint 'n_bdp != 3': factor 'n_bdp' is never 3 in this design \(its values: 1, 2\)"),
        ("aqm in ('codel', 'pie_drop')", r"factor 'aqm' is never any of 'Codel', 'pie_drop'"),
        ("cc_classic == 'bbr'", r"factor 'cc_classic' is compared with 'bbr' but the design does not set it"),
    ],
)
def test_a_constraint_comparing_a_factor_with_a_value_it_never_takes_is_an_error(constraint, message):
    text = f'constraints = ["{constraint}"]\n[factors]\naqm = ["FIFO", "DualPI2"]\nn_bdp = [1, 2]\n'
    with pytest.raises(StudyError, match=message):
        Study.from_toml(text + "[fixed]\nbtl_capacity = 100\nbase_rtt = 10\n")


def test_a_design_its_constraints_cut_down_to_no_run_is_an_error():
    s = Study.from_toml(
        'constraints = ["n_bdp > 5"]\n[factors]\naqm = ["FIFO"]\nn_bdp = [1, 2]\n'
        "[fixed]\nbtl_capacity = 100\nbase_rtt = 10\n"
    )
    assert s.points() == []
    with pytest.raises(StudyError, match=r"^constraints: no run of the design is left after them .*'n_bdp > 5'"):
        s.check()


@pytest.mark.parametrize(
    "expr", ["__import__('os').system('true')", "aqm.lower() == 'x'", "[x for x in aqm]", "lambda: 1"]
)
def test_constraints_reject_anything_but_plain_expressions(expr):
    with pytest.raises(StudyError):
        Constraint(expr)


def test_constraint_naming_an_unknown_factor_is_an_error():
    with pytest.raises(StudyError, match="bdp"):
        Constraint("bdp > 2")


def test_seeds_are_reproducible_and_distinct_per_trial():
    s = presets.get("anrw24")
    a = s.runs()
    b = presets.get("anrw24").runs()
    assert [r.seed for r in a] == [r.seed for r in b]
    by_cell = {}
    for r in a:
        by_cell.setdefault(tuple(sorted((k, str(v)) for k, v in r.cell.items())), set()).add(r.seed)
    assert all(len(seeds) == 10 for seeds in by_cell.values())
    assert len({r.seed for r in a}) == len(a)


def test_seed_does_not_depend_on_duration_but_on_the_cell():
    p = {"aqm": "FIFO", "n_bdp": 2, "trial": 1, "duration": 60}
    assert seed_for(p) == seed_for(dict(p, duration=20))
    assert seed_for(p) != seed_for(dict(p, n_bdp=5))
    assert seed_for(p) != seed_for(dict(p, trial=2))


def test_trials_shorthand_makes_trial_factor():
    s = Study.from_toml("trials = 3\n[fixed]\naqm='FIFO'\nn_bdp=1\nbtl_capacity=100\nbase_rtt=10\n")
    assert [p["trial"] for p in s.points()] == [1, 2, 3]


def test_a_design_of_more_than_a_million_runs_is_refused_before_it_is_expanded():
    """trials = 1e9 used to build a billion-element trial list (the OOM killer ended it)."""
    point = "[fixed]\naqm='FIFO'\nbtl_capacity=100\nbase_rtt=10\n[factors]\nn_bdp=[1, 2]\n"
    with pytest.raises(StudyError, match=r"2 n_bdp x 1000000000 trials .* 2,000,000,000 runs"):
        Study.from_toml("trials = 1000000000\n" + point)
    s = Study.from_toml("trials = 500000\n" + point)
    with pytest.raises(StudyError, match="at most 1,000,000"):
        s.with_overrides(trials=500_001)
    with pytest.raises(StudyError, match="at most 1,000,000"):
        presets.get("full-factorial").with_overrides(trials=1000)


@pytest.mark.parametrize(
    "text,factor",
    [
        ("[factors]\nbufer = [1]\n", "bufer"),
        ("[factors]\naqm = []\n", "aqm"),
        ("[factors]\naqm = ['FIFO', 'RED']\n", "aqm"),
        ("[factors]\nn_bdp = ['big']\n", "n_bdp"),
        ("[factors]\nbase_rtt = [-5]\n", "base_rtt"),
        ("[factors]\necn_fallback = [3]\n", "ecn_fallback"),
        ("[fixed]\nrx_l4s_ecn = 'accurate'\n", "rx_l4s_ecn"),
        ("trials = 0\n", "trial"),
        ("[factors]\nsample_interval = [0.1, 0.01]\n", "'sample_interval' is a setting, not a factor: .* in \\[fixed\\]"),
        ("[fixed]\naqm = 'FIFO'\nn_bdp = 1\nbase_rtt = 10\n", "btl_capacity"),
    ],
)
def test_malformed_study_file_error_names_the_factor(text, factor):
    with pytest.raises(StudyError, match=factor):
        Study.from_toml(text)


@pytest.mark.parametrize(
    "change,message",
    [
        ({"sample_interval": 0.0001}, r"factor 'sample_interval': 0.0001 s is below the finest"),
        ({"n_bdp": [1, 0.001]}, r"factor 'n_bdp': bfifo limit 125 bytes is below one MTU"),
        ({"n_l4s": [0], "n_classic": [0]}, r"factor 'n_l4s': n_l4s and n_classic are both 0"),
    ],
)
def test_check_refuses_a_design_whose_runs_the_core_would_refuse_naming_factor_and_run(change, message):
    """These were found only when every run failed, after the store had the design."""
    factors = {"aqm": ["FIFO", "DualPI2"], "n_bdp": [1]}
    fixed = {"btl_capacity": 100, "base_rtt": 10, "duration": 2}
    for k, v in change.items():
        (factors if isinstance(v, list) else fixed)[k] = v
    s = Study.from_dict({"factors": factors, "fixed": fixed})
    with pytest.raises(StudyError, match=message + r".* \(in the run n_bdp="):
        s.check()


def test_check_validates_each_cell_once_and_passes_the_presets():
    for name in presets.names():
        presets.get(name).check()


def test_invalid_toml_is_a_study_error():
    with pytest.raises(StudyError, match="TOML"):
        Study.from_toml("[factors\n")


def test_load_takes_a_file_or_a_preset_even_with_a_directory_of_that_name(tmp_path, monkeypatch):
    from l4sim.studies.presets import load

    monkeypatch.chdir(tmp_path)
    (tmp_path / "anrw24").mkdir()  # e.g. an output directory named like the preset
    assert load("anrw24").name == "anrw24"
    f = tmp_path / "mine.toml"
    f.write_text("name = 'mine'\n[fixed]\naqm = 'FIFO'\nn_bdp = 1\nbtl_capacity = 100\nbase_rtt = 10\n")
    assert load(str(f)).name == "mine"
    with pytest.raises(StudyError, match="presets"):
        load("anrw25")
    assert load("ANRW24").name == "anrw24" and load("Full_Factorial").name == "full-factorial"  # names: any case
    with pytest.raises(StudyError, match="not found"):
        load("missing.toml")


def test_an_estimate_below_half_a_second_is_under_a_second_not_0_s():
    from l4sim.studies import cost

    assert cost.human(0.2) == "under a second" and cost.human(0.6) == "1 s" and cost.human(120) == "2 min"


def test_plan_prints_cpu_and_wall_time_from_a_per_packet_cost_measured_once(tmp_path, monkeypatch, capsys):
    from l4sim.cli_study import main
    from l4sim.studies import cost

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["study", "plan", "anrw24", "-j", "2"]) == 0
    out = capsys.readouterr().out
    assert "of CPU" in out and "wall on 2 core(s)" in out and "ns per bottleneck packet" in out
    cache = next((tmp_path / "l4sim").glob("packet-cost-*.json"))
    first = cache.read_text()
    calls = []
    monkeypatch.setattr("l4sim.api.run", lambda *a, **k: calls.append(1))  # a re-measure would call it
    assert main(["study", "plan", "anrw24"]) == 0
    assert calls == [] and cache.read_text() == first  # measured once, then reused
    capsys.readouterr()
    # another build of the engine (a PGO build, say) runs at another speed: measured again
    monkeypatch.setattr(cost, "_build_id", lambda: "another-build")
    with pytest.raises(AttributeError):  # the stand-in run above returns None
        cost.packet_cost()
    assert calls == [1, 1]  # the first calibration run, twice
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    # the estimate scales with the design: twice the trials, twice the CPU time
    c = cost.packet_cost()["seconds_per_packet"]
    one = cost.estimate([{"btl_capacity": 100, "duration": 60}], jobs=1)
    two = cost.estimate([{"btl_capacity": 100, "duration": 60}] * 2, jobs=1)
    assert two["cpu_seconds"] == pytest.approx(2 * one["cpu_seconds"])
    assert one["cpu_seconds"] == pytest.approx(c * 100e6 / 8 / 1514 * 60)
    assert main(["study", "plan", "anrw24", "--no-estimate"]) == 0
    assert "of CPU" not in capsys.readouterr().out


def test_each_calibration_run_counts_the_faster_of_two(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from l4sim.studies import cost

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    walls = iter([3.0, 1.0])  # a cold first run, then a warm one
    monkeypatch.setattr("l4sim.api.run", lambda *a, **k: SimpleNamespace(wall_seconds=next(walls), bottleneck_pkts=1e6))
    assert cost.packet_cost()["seconds_per_packet"] == pytest.approx(1e-6)


def test_plan_points_a_long_estimate_of_the_ordinary_build_to_the_pgo_build(monkeypatch, capsys):
    from l4sim import _core
    from l4sim.cli_study import main
    from l4sim.studies import cost

    monkeypatch.setattr(
        cost, "packet_cost", lambda *a, **k: {"seconds_per_packet": 4e-7, "measured": "now", "reference": [{}]}
    )
    monkeypatch.setattr(_core, "BUILD", "release", raising=False)
    assert main(["study", "plan", "full-factorial", "-j", "2"]) == 0  # hours
    assert "pgo_build.py" in capsys.readouterr().out
    assert main(["study", "plan", "anrw24", "-j", "2"]) == 0  # minutes
    assert "pgo_build.py" not in capsys.readouterr().out
    monkeypatch.setattr(_core, "BUILD", "pgo")
    assert main(["study", "plan", "full-factorial", "-j", "2"]) == 0
    assert "pgo_build.py" not in capsys.readouterr().out


def test_the_cost_is_calibrated_on_the_design_and_check_compares_other_runs_with_it(tmp_path, monkeypatch, capsys):
    from l4sim.cli_study import main
    from l4sim.studies import cost
    from l4sim.studies.presets import load

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    f = tmp_path / "small.toml"
    f.write_text(
        'name = "small"\ntrials = 3\n[factors]\naqm = ["FIFO", "DualPI2"]\nbtl_capacity = [20, 40]\n'
        "[fixed]\nn_bdp = 2\nbase_rtt = 10\necn_threshold = 5\nduration = 30\n"
    )
    study = load(str(f))
    picked = cost._calibration(study.runs())
    assert len(picked) == cost.CALIBRATION_RUNS  # 8 of its 12 runs, shortened to 20 s
    assert all(p["duration"] == cost.CALIBRATION_DURATION for p, _ in picked)
    assert {s for _, s in picked} < {r.seed for r in study.runs()}
    c = cost.packet_cost(study)
    assert c["seconds_per_packet"] > 0 and len(c["reference"]) == cost.CALIBRATION_RUNS
    assert cost.packet_cost(study) == c  # cached per design
    assert len(list((tmp_path / "l4sim").glob("packet-cost-*.json"))) == 1
    r = cost.check(study, 10)
    assert r["runs"] == 4  # the four runs the calibration did not measure
    assert r["estimated_seconds"] > 0 and r["measured_seconds"] >= r["engine_seconds"] > 0
    assert r["ratio"] == pytest.approx(r["measured_seconds"] / r["estimated_seconds"])
    point, est, meas = r["worst"]
    assert point["aqm"] in ("FIFO", "DualPI2") and est > 0 and meas > 0
    assert main(["study", "plan", str(f), "--check", "2"]) == 0
    out = capsys.readouterr().out
    assert "on 8 of its runs" in out and "check: 2 runs drawn at random" in out and "measured / estimated" in out
    assert main(["study", "plan", str(f), "--check", "2", "--no-estimate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --check") and err.count("\n") == 1


def test_the_packet_estimate_counts_the_default_receive_window_on_long_fat_paths():
    from l4sim.studies import cost

    full = cost.packets({"btl_capacity": 1000, "base_rtt": 10, "duration": 60})
    assert full == pytest.approx(1000e6 / 8 / 1514 * 60)
    # 1 Gbit/s, 100 ms: two flows of at most 3 MB per RTT, about half the link
    held = cost.packets({"btl_capacity": 1000, "base_rtt": 100, "duration": 60})
    assert held == pytest.approx(2 * 3_145_728 / 1448 / 0.1 * 60)
    assert 0.45 < held / full < 0.55
