"""The traffic examples (IETF-106 workload per AQM, the DualPI2 demo's experiments) run from the
command line with their tables and plots, and show what their seed experiments show."""

from __future__ import annotations

from pathlib import Path

import pytest

import l4sim
from l4sim.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
IETF = sorted(EXAMPLES.glob("ietf106_ultra_low_delay*.toml"))
DEMO = sorted(EXAMPLES.glob("demo_*.toml"))


def test_every_aqm_of_the_ietf106_set_and_every_demo_experiment_is_there():
    assert {p.stem for p in IETF} == {
        "ietf106_ultra_low_delay",
        "ietf106_ultra_low_delay_pie",
        "ietf106_ultra_low_delay_fq_codel",
        "ietf106_ultra_low_delay_codel",
        "ietf106_ultra_low_delay_fifo",
    }
    assert {p.stem for p in DEMO} == {"demo_pie_cubic_drop", "demo_pie_cubic_ecn", "demo_dualpi2", "demo_step_dctcp"}


def test_run_several_files_prints_tables_comparison_and_writes_plots(tmp_path, capsys):
    files = [str(p) for p in IETF]
    assert main(["run", *files, "--duration", "3", "--plot", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "queue delay at" in out and "transfers of" in out
    assert "comparison: queue delay per traffic class" in out
    assert "comparison: completion times" in out
    for p in IETF:
        assert (tmp_path / f"{p.stem}.png").stat().st_size > 10_000
    assert (tmp_path / "comparison.png").stat().st_size > 10_000


def test_a_runs_figure_gives_each_flow_one_colour_and_keeps_blue_and_orange_for_the_classes():
    """The completion-time panels coloured the web flows by their order among the sources, so
    the classic web flow was drawn in the L4S class's blue of the delay CDF beside it."""
    import matplotlib.colors as mcolors

    from l4sim.runplots import run_figure

    fig = run_figure(l4sim.run(IETF[0], duration=2))
    try:
        tput, cdf, scatter, bins = fig.axes[0], fig.axes[4], fig.axes[2], fig.axes[5]
        hexes = mcolors.to_hex
        flow = {ln.get_label(): hexes(ln.get_color()) for ln in tput.get_lines()}
        assert set(flow) == {"long-ecn", "long-classic", "web-ecn", "web-classic"}
        classes = {hexes("tab:blue"), hexes("tab:orange")}
        assert not classes & set(flow.values()) and len(set(flow.values())) == 4
        for ln in cdf.get_lines():
            if not ln.get_label().startswith("class"):
                assert hexes(ln.get_color()) == flow[ln.get_label()], ln.get_label()
        for pc in scatter.collections:
            assert hexes(pc.get_facecolor()[0]) == flow[pc.get_label()], pc.get_label()
        for ln in bins.get_lines():
            assert hexes(ln.get_color()) == flow[ln.get_label().rsplit(" ", 1)[0]], ln.get_label()
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_run_one_file_plots_to_the_named_file(tmp_path, capsys):
    target = tmp_path / "demo.pdf"
    assert main(["run", str(EXAMPLES / "demo_dualpi2.toml"), "--duration", "2", "--plot", str(target)]) == 0
    assert target.read_bytes()[:4] == b"%PDF"


def test_files_and_study_factors_together_is_a_usage_error(capsys):
    assert main(["run", str(DEMO[0]), "--aqm", "PIE"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--aqm" in err


def test_ietf106_dualpi2_keeps_the_l4s_class_shallow():
    r = l4sim.run(EXAMPLES / "ietf106_ultra_low_delay.toml", duration=8)
    cls = r.classes.query("kind == 'class'").set_index("name")
    # the L queue's step threshold is 1 ms: L4S P99 stays a few ms, the classic queue's
    # PI controller holds about its 15 ms target
    assert cls.loc["l4s", "sojourn_p99_ms"] < 5
    assert cls.loc["classic", "sojourn_p50_ms"] > 3 * cls.loc["l4s", "sojourn_p50_ms"]
    n = len(r.connections)
    assert n == pytest.approx(600 * 8, rel=0.1)  # 300/s ECN + 300/s non-ECN


def test_demo_dualpi2_isolates_dctcp_from_cubic_and_pie_ecn_marks_instead_of_dropping():
    dual = l4sim.run(EXAMPLES / "demo_dualpi2.toml", duration=8)
    flows = dual.classes.query("kind == 'flow'").set_index("name")
    assert flows.loc["A-long", "sojourn_mean_ms"] < 0.25 * flows.loc["B-long", "sojourn_mean_ms"]
    drop = l4sim.run(EXAMPLES / "demo_pie_cubic_drop.toml", duration=8).classes.set_index("name")
    ecn = l4sim.run(EXAMPLES / "demo_pie_cubic_ecn.toml", duration=8).classes.set_index("name")
    assert drop.loc["A-long", "drop_prob"] > 0 and drop.loc["A-long", "mark_prob"] == 0
    assert ecn.loc["A-long", "mark_prob"] > 0 and ecn.loc["A-long", "drop_prob"] < drop.loc["A-long", "drop_prob"]
    step = l4sim.run(EXAMPLES / "demo_step_dctcp.toml", duration=8).classes.set_index("name")
    assert step.loc["A-long", "sojourn_p99_ms"] < 5
