"""Plots render files."""

import numpy as np
import pandas as pd

from l4sim.studies import plots
from l4sim.studies.analysis import cells


def _runs(aqms=("FIFO", "Codel", "DualPI2"), bufs=(0.5, 1, 2), ecn=("none", "classic")):
    rng = np.random.default_rng(1)
    rows = []
    for a in aqms:
        for b in bufs:
            for e in ecn:
                for t in (1, 2):
                    rows.append(
                        {
                            "aqm": a,
                            "n_bdp": b,
                            "rx_classic_ecn": e,
                            "btl_capacity": 100,
                            "trial": t,
                            "l4s_tput_mbps": rng.uniform(10, 90),
                            "classic_tput_mbps": rng.uniform(10, 90),
                            "l4s_qdelay_ms": rng.uniform(0.1, 5),
                            "classic_qdelay_ms": rng.uniform(1, 10),
                            "utilisation": 0.95,
                        }
                    )
    return pd.DataFrame(rows)


def test_heatmap_renders_png_and_pdf(tmp_path):
    c = cells(_runs())
    for v in ("share", "rel_delay", "tput", "qdelay"):
        fig = plots.heatmap(c, v)
        files = plots.save(fig, tmp_path / f"h_{v}")
        assert [f.suffix for f in files] == [".png", ".pdf"]
        assert all(f.stat().st_size > 1000 for f in files)


def test_heatmap_panels_per_varying_factor():
    fig = plots.heatmap(cells(_runs()), "share")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["classic receiver ECN: classic", "classic receiver ECN: none"]
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["FIFO", "Codel", "DualPI2"]
    assert ax.get_xlabel() == "buffer size, x BDP"


def test_flow_bars_render_with_fair_share(tmp_path):
    rows = []
    for a in ("FIFO", "DualPI2"):
        for n in (1, 2):
            for m in (1, 5):
                rows.append(
                    {
                        "aqm": a,
                        "n_l4s": n,
                        "n_classic": m,
                        "btl_capacity": 100,
                        "n_bdp": 2,
                        "trial": 1,
                        "l4s_tput_mbps": 50.0,
                        "classic_tput_mbps": 45.0,
                        "l4s_qdelay_ms": 1.0,
                        "classic_qdelay_ms": 5.0,
                    }
                )
    out = plots.study_figures(cells(pd.DataFrame(rows)), tmp_path)
    assert out["Per-flow throughput"].exists()


def _bar_rows(ccs=("cubic",), ns=(1,)) -> list[dict]:
    """Cells of flows_bars' table for DualPI2 and FIFO, each classic CC and number of L4S flows."""
    return [
        {
            "aqm": a,
            "cc_classic": cc,
            "n_l4s": n,
            "n_classic": 1,
            "btl_capacity": 100,
            "trial": 1,
            "l4s_tput_mbps": 50.0,
            "classic_tput_mbps": 45.0,
            "l4s_qdelay_ms": 1.0,
            "classic_qdelay_ms": 5.0,
        }
        for a in ("DualPI2", "FIFO")
        for cc in ccs
        for n in ns
    ]


def test_flow_bars_order_panels_by_aqm_wherever_it_is_among_the_panel_factors():
    """The panels were sorted by the first panel factor's value looked up as an AQM: with
    ``panels=("cc_classic", "aqm")`` they kept the data's order (mypy found the lookup)."""
    rows = _bar_rows(ccs=("cubic", "bbr"), ns=(1, 2))
    c = cells(pd.DataFrame(rows)).iloc[::-1]  # cells() orders them by AQM: a table in another order
    fig = plots.flows_bars(c, panels=("cc_classic", "aqm"))
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["vs bbr, aqm = FIFO", "vs cubic, aqm = FIFO", "vs bbr, aqm = DualPI2", "vs cubic, aqm = DualPI2"]


def test_flows_bars_titles_aqm_only_panels_by_the_aqm_given_as_a_list():
    """study_figures passes its panel factors as a list: ["aqm"] titled the panels "aqm = FIFO"
    where ("aqm",) gave "FIFO"."""
    for panels in (["aqm"], ("aqm",)):
        fig = plots.flows_bars(cells(pd.DataFrame(_bar_rows())), panels=panels)
        assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["FIFO", "DualPI2"]  # the AQM order


def test_timeseries_renders(tmp_path):
    n = 20
    s = pd.DataFrame(
        {
            "t": np.arange(n) * 0.1,
            "flow.l4s.tput_mbps": np.ones(n),
            "flow.l4s.cwnd": np.ones(n),
            "flow.l4s.srtt_ms": np.ones(n) * 11,
            "flow.classic.srtt_ms": np.ones(n) * 15,
            "flow.l4s.ce_fed_back": np.arange(n),
            "qdisc.bottleneck.sojourn_ms": np.ones(n),
        }
    )
    f = plots.save(plots.timeseries(s, title="run"), tmp_path / "ts", formats=("png", "svg"))
    assert f[1].suffix == ".svg" and f[0].stat().st_size > 1000


def test_fifo_cells_appear_in_every_threshold_panel():
    rows = []
    for a, thr in (("FIFO", None), ("Codel", 1), ("Codel", 5)):
        rows.append(
            {
                "aqm": a,
                "n_bdp": 2,
                "ecn_threshold": thr,
                "trial": 1,
                "l4s_tput_mbps": 50.0,
                "classic_tput_mbps": 50.0,
                "l4s_qdelay_ms": 1.0,
                "classic_qdelay_ms": 2.0,
            }
        )
    fig = plots.heatmap(cells(pd.DataFrame(rows)), "share")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["T = 1 ms", "T = 5 ms"]
    for ax in fig.axes[:2]:
        assert "0.50" in [t.get_text() for t in ax.texts][:1]  # FIFO row filled in each


def test_study_figures_split_extra_factors_into_separate_files(tmp_path):
    df = _runs()
    df = pd.concat(
        [
            df.assign(base_rtt=10, ecn_threshold=5, btl_capacity=100),
            df.assign(base_rtt=50, ecn_threshold=5, btl_capacity=100),
            df.assign(base_rtt=10, ecn_threshold=5, btl_capacity=1000),
        ]
    )
    figs = plots.study_figures(cells(df), tmp_path, formats=("png",))
    # panels: base_rtt x rx_classic_ecn; pages: btl_capacity
    files = {p.name for p in figs.values()}
    assert {"heatmap_share__btl_capacity-100.png", "heatmap_share__btl_capacity-1000.png"} <= files
    assert all(p.exists() for p in figs.values())
    # Keyed by what a reader sees: the quantity, then the page.
    assert all(k.startswith(("L4S", "classic", "per-flow")) for k in figs), list(figs)


def test_cli_plots_a_stored_runs_time_series(tmp_path):
    from l4sim.cli_study import main
    from l4sim.sweep.store import Store
    from test_store import fake_result

    with Store(tmp_path / "st", write=True) as st:
        st.record("abcdef123456", design="d", factors={}, seed=1, model_version="f", result=fake_result(n=30))
    assert main(["study", "plot", str(tmp_path / "st"), "--out", str(tmp_path / "f"), "--run", "abcdef"]) == 0
    assert (tmp_path / "f" / "run_abcdef123456.png").exists()
    assert (tmp_path / "f" / "run_abcdef123456.pdf").exists()


def test_a_stored_runs_figure_is_titled_by_its_factors_not_only_its_key():
    """The time-series figure of `study plot --run` was titled by the key's hash alone."""
    factors = {"trial": 2, "cc_classic": "bbr2", "n_bdp": 0.5, "aqm": "DualPI2", "base_rtt": 10.0}
    title = plots.run_title("abcdef1234567890", factors)
    assert title == "run abcdef123456: DualPI2, 0.5 x BDP, trial 2, vs bbr2, RTT 10 ms"
    assert all(len(line) <= 40 for line in plots.run_title("k", factors, width=40).splitlines())


def test_delay_heatmap_colours_tell_1_ms_from_10_ms_when_100_ms_is_present():
    import matplotlib.colors

    df = _runs(aqms=("FIFO", "Codel", "DualPI2"), bufs=(1,), ecn=("none",))
    df["l4s_qdelay_ms"] = df["aqm"].map({"FIFO": 100.0, "Codel": 10.0, "DualPI2": 1.0})
    fig = plots.heatmap(cells(df), "qdelay")
    im = fig.axes[0].images[0]
    assert isinstance(im.norm, matplotlib.colors.LogNorm)
    n1, n10, n100 = (float(im.norm(v)) for v in (1.0, 10.0, 100.0))
    assert abs((n10 - n1) - (n100 - n10)) < 1e-9 and n10 - n1 > 0.4  # a decade is half the scale
