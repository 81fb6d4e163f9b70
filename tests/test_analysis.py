"""The study's metrics on hand-made data."""

import math

import pandas as pd
import pytest

from l4sim.studies.analysis import (
    VerdictRules,
    cells,
    mean_ci,
    relative_delay,
    run_metrics,
    t975,
    throughput_share,
    verdict,
    verdict_table,
)


def test_share_and_relative_delay_follow_the_study_definitions():
    assert throughput_share(75, 25) == 0.75
    assert relative_delay(10, 1) == pytest.approx(0.9)
    assert relative_delay(1, 3) == pytest.approx(-2.0)  # can be well below -1


def test_ci_uses_student_t():
    m, s, ci, n = mean_ci([1.0, 2.0, 3.0])
    assert (m, s, n) == (2.0, 1.0, 3)
    assert ci == pytest.approx(4.303 / math.sqrt(3))
    assert t975(1000) == pytest.approx(1.9623, abs=1e-3)
    assert math.isnan(mean_ci([5.0])[2])


def test_run_metrics_read_the_l4s_and_classic_flows():
    r = {
        "flows": [
            {"name": "classic", "goodput_mbps": 40, "qdelay_ms": 9},
            {"name": "l4s", "goodput_mbps": 55, "qdelay_ms": 1},
        ],
        "links": [{"name": "bottleneck", "utilisation": 0.95}],
        "jain_index": 0.98,
    }
    m = run_metrics(r)
    assert (m["l4s_tput_mbps"], m["classic_tput_mbps"]) == (55, 40)
    assert (m["l4s_qdelay_ms"], m["classic_qdelay_ms"]) == (1, 9)
    assert m["utilisation"] == 0.95


def test_trials_are_averaged_before_share_and_delay():
    df = pd.DataFrame(
        [
            {
                "aqm": "Codel",
                "n_bdp": 2,
                "trial": 1,
                "l4s_tput_mbps": 90,
                "classic_tput_mbps": 10,
                "l4s_qdelay_ms": 2,
                "classic_qdelay_ms": 4,
            },
            {
                "aqm": "Codel",
                "n_bdp": 2,
                "trial": 2,
                "l4s_tput_mbps": 10,
                "classic_tput_mbps": 10,
                "l4s_qdelay_ms": 4,
                "classic_qdelay_ms": 8,
            },
        ]
    )
    c = cells(df)
    assert len(c) == 1
    r = c.iloc[0]
    assert r["n"] == 2
    assert r["share"] == pytest.approx(50 / 60)  # of the means, not mean of shares (0.7)
    assert r["rel_delay"] == pytest.approx((6 - 3) / 6)
    assert r["l4s_tput_mbps_std"] == pytest.approx(math.sqrt(3200))
    assert r["l4s_tput_mbps_ci95"] == pytest.approx(12.706 * math.sqrt(3200) / math.sqrt(2))
    assert r["jain"] == pytest.approx((60) ** 2 / (2 * (50**2 + 10**2)))


def test_fifo_cells_without_threshold_are_kept():
    df = pd.DataFrame(
        [
            {
                "aqm": "FIFO",
                "ecn_threshold": None,
                "n_bdp": 1,
                "trial": 1,
                "l4s_tput_mbps": 40,
                "classic_tput_mbps": 60,
                "l4s_qdelay_ms": 5,
                "classic_qdelay_ms": 5,
            },
            {
                "aqm": "DualPI2",
                "ecn_threshold": 5,
                "n_bdp": 1,
                "trial": 1,
                "l4s_tput_mbps": 50,
                "classic_tput_mbps": 50,
                "l4s_qdelay_ms": 0.5,
                "classic_qdelay_ms": 5,
            },
        ]
    )
    c = cells(df)
    assert list(c["aqm"]) == ["FIFO", "DualPI2"]  # the study's order
    assert pd.isna(c.iloc[0]["ecn_threshold"])


def test_verdict_rules():
    r = VerdictRules()
    assert verdict(0.5, 0.0, r)["ok"] is True
    assert verdict(0.95, 0.1, r) == {"favourable": True, "harmful": True, "ok": False}
    assert verdict(0.1, 0.9, r)["favourable"] is False  # delay does not rescue a lost share
    assert verdict(0.3, 0.9, r)["favourable"] is True  # but does a moderate loss
    assert verdict(0.5, 0.0, r, classic_qdelay=20, baseline_qdelay=5)["harmful"] is True
    assert verdict(float("nan"), 0.0, r)["ok"] is None


def _row(aqm, fb, cc, share, ecn="classic"):
    return {
        "aqm": aqm,
        "n_bdp": 2,
        "btl_capacity": 100,
        "base_rtt": 10,
        "ecn_threshold": None if aqm == "FIFO" else 5,
        "ecn_fallback": fb,
        "rx_l4s_ecn": "accecn",
        "rx_classic_ecn": ecn,
        "cc_l4s": "prague",
        "cc_classic": cc,
        "trial": 1,
        "l4s_tput_mbps": 100 * share,
        "classic_tput_mbps": 100 * (1 - share),
        "l4s_qdelay_ms": 1.0,
        "classic_qdelay_ms": 5.0,
    }


def test_verdict_table_has_the_study_layout_and_na_without_data():
    df = pd.DataFrame(
        [
            _row("FIFO", 0, "cubic", 0.45),
            _row("Codel", 0, "cubic", 0.95),
            _row("FQ", 0, "cubic", 0.5),
            _row("DualPI2", 0, "cubic", 0.5),
            _row("DualPI2", 1, "cubic", 0.1),
            _row("FQ_Codel", 0, "cubic", 0.9),
        ]
    )
    t = verdict_table(df)
    assert list(t.index) == ["single queue, no ECN", "single queue + ECN", "FQ + ECN", "DualPI2"]
    assert list(t.columns) == [
        "fallback off, vs CUBIC",
        "fallback off, vs BBRv2",
        "fallback on, vs CUBIC",
        "fallback on, vs BBRv2",
    ]
    assert t.loc["single queue, no ECN", "fallback off, vs CUBIC"] == "yes"
    assert t.loc["single queue + ECN", "fallback off, vs CUBIC"] == "no"
    assert t.loc["FQ + ECN", "fallback off, vs CUBIC"] == "mostly no (1/2 OK)"
    assert t.loc["DualPI2", "fallback on, vs CUBIC"] == "no"
    assert t.loc["DualPI2", "fallback off, vs BBRv2"] == "n/a"


def test_verdict_rules_on_the_testbed_data_give_the_study_table_vs_cubic():
    """The ANRW'24 testbed means (fallback off, vs CUBIC) through the verdict rules give the
    study's column: FIFO yes, single queue + ECN no (but at a buffer equal to the threshold),
    FQ yes, DualPI2 yes."""
    from l4sim.studies.report import reference_cells

    ref = reference_cells()
    runs = pd.DataFrame(
        {
            "aqm": ref["aqm"],
            "n_bdp": ref["n_bdp"],
            "btl_capacity": 100,
            "base_rtt": 10,
            "ecn_threshold": 5,
            "ecn_fallback": 0,
            "rx_l4s_ecn": "accecn",
            "rx_classic_ecn": ref["rx_classic_ecn"],
            "cc_l4s": "prague",
            "cc_classic": "cubic",
            "trial": 1,
            "l4s_tput_mbps": ref["l4s_tput_mbps_mean"],
            "classic_tput_mbps": ref["classic_tput_mbps_mean"],
            "l4s_qdelay_ms": ref["l4s_qdelay_ms_mean"],
            "classic_qdelay_ms": ref["classic_qdelay_ms_mean"],
        }
    )
    col = verdict_table(runs)["fallback off, vs CUBIC"]
    assert col["single queue, no ECN"] == "yes"
    assert col["single queue + ECN"].startswith("mostly no")
    assert col["FQ + ECN"] == "yes"
    assert col["DualPI2"] == "yes"


def test_jain_index_counts_every_stream_of_n_vs_m_cells():
    df = pd.DataFrame(
        [
            {
                "aqm": "FQ",
                "n_bdp": 2,
                "n_l4s": 1,
                "n_classic": 3,
                "trial": 1,
                "l4s_tput_mbps": 25.0,
                "classic_tput_mbps": 75.0,
                "l4s_qdelay_ms": 1.0,
                "classic_qdelay_ms": 2.0,
            }
        ]
    )
    c = cells(df).iloc[0]
    assert c["jain"] == pytest.approx(1.0)  # 25 Mbit/s per stream for all four streams
    assert c["share"] == pytest.approx(0.25)


def test_verdicts_use_the_n_vs_m_fair_share():
    from l4sim.studies.analysis import add_verdicts

    df = pd.DataFrame(
        [
            {
                "aqm": "FQ",
                "n_bdp": 2,
                "n_l4s": 1,
                "n_classic": 4,
                "trial": 1,
                "l4s_tput_mbps": 20.0,
                "classic_tput_mbps": 80.0,
                "l4s_qdelay_ms": 1.0,
                "classic_qdelay_ms": 2.0,
            }
        ]
    )
    v = add_verdicts(cells(df)).iloc[0]
    assert v["ok"]  # 0.2 is exactly 1 / (1 + 4): fair, though far below 0.5
