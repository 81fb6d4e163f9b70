"""The study's design point -> scenario mapping (docs/study.md: AQM table, buffer sizing,
ECN factors)."""

from __future__ import annotations

import pytest

import l4sim
from l4sim.scenario import Scenario
from l4sim.studies.factors import (
    AQMS,
    FACTOR_NAMES,
    buffer_bytes,
    buffer_packets,
    qdisc_for,
    scenario_from_factors,
)

BASE = dict(n_bdp=2, btl_capacity=100, base_rtt=10)


def qdisc(aqm: str, **kw) -> dict:
    return scenario_from_factors(aqm=aqm, **{**BASE, **kw})["topology"]["bottleneck"]["qdisc"]


def flows(**kw) -> dict:
    sc = scenario_from_factors(aqm="DualPI2", **{**BASE, **kw})
    return {f["name"]: f for f in sc["flows"]}


def test_aqms_are_in_the_studys_order():
    assert AQMS == (
        "FIFO",
        "single_queue_FQ",
        "Codel",
        "FQ",
        "FQ_Codel",
        "FQ_Codel_L4S",
        "pie_drop",
        "Codel_drop",
        "DualPI2",
    )


def test_factor_names_are_the_keyword_arguments():
    import inspect

    params = inspect.signature(scenario_from_factors).parameters
    assert all(name in params for name in FACTOR_NAMES)


@pytest.mark.parametrize(
    "n_bdp,cap,rtt,nbytes",
    [(2, 100, 10, 250_000), (0.5, 100, 5, 31_250), (10, 1000, 100, 125_000_000), (5, 100, 50, 3_125_000)],
)
def test_buffer_bytes_is_n_bdp_times_capacity_times_rtt_over_8(n_bdp, cap, rtt, nbytes):
    assert buffer_bytes(n_bdp, cap, rtt) == nbytes


@pytest.mark.parametrize("nbytes,pkts", [(250_000, 167), (31_250, 21), (1500, 2), (1499, 1), (3_000, 3)])
def test_packet_limit_is_bytes_over_1500_plus_one(nbytes, pkts):
    assert buffer_packets(nbytes) == pkts


def test_fifo_is_a_bfifo_of_the_buffer_bytes_without_threshold():
    assert qdisc("FIFO") == {"kind": "bfifo", "limit": 250_000}
    assert qdisc("FIFO", ecn_threshold=1) == qdisc("FIFO", ecn_threshold=20)


def test_single_queue_fq_is_fq_with_orphan_mask_0_and_a_ce_threshold():
    q = qdisc("single_queue_FQ", ecn_threshold=1)
    assert q == {"kind": "fq", "limit": 167, "flow_limit": 167, "orphan_mask": 0, "ce_threshold_ms": 1.0}


def test_fq_has_flow_limit_equal_to_limit_and_default_hashing():
    q = qdisc("FQ", ecn_threshold=5)
    assert q == {"kind": "fq", "limit": 167, "flow_limit": 167, "ce_threshold_ms": 5.0}
    assert "orphan_mask" not in q


def test_codel_marks_with_target_t_interval_100ms_and_packet_limit():
    assert qdisc("Codel", ecn_threshold=20) == {
        "kind": "codel",
        "limit": 167,
        "target_ms": 20.0,
        "interval_ms": 100.0,
        "ecn": True,
    }


def test_fq_codel_marks_with_target_t_interval_100ms():
    q = qdisc("FQ_Codel")
    assert q == {"kind": "fq_codel", "limit": 167, "target_ms": 5.0, "interval_ms": 100.0, "ecn": True}
    assert "ce_threshold_ms" not in q


def test_fq_codel_l4s_adds_a_1ms_ce_threshold_for_ect1_only():
    q = qdisc("FQ_Codel_L4S")
    assert q["target_ms"] == 5.0 and q["ecn"] is True and q["interval_ms"] == 100.0
    assert q["ce_threshold_ms"] == 1.0
    assert q["ce_threshold_selector"] == 0x01
    assert q["ce_threshold_mask"] == 0x03


def test_pie_drop_and_codel_drop_do_not_use_ecn():
    assert qdisc("pie_drop") == {"kind": "pie", "limit": 167, "target_ms": 5.0, "ecn": False}
    assert qdisc("Codel_drop") == {"kind": "codel", "limit": 167, "target_ms": 5.0, "interval_ms": 100.0, "ecn": False}


def test_dualpi2_keeps_its_default_limit_whatever_the_buffer():
    for n_bdp in (0.5, 2, 10):
        q = qdisc("DualPI2", n_bdp=n_bdp, ecn_threshold=20)
        assert q == {"kind": "dualpi2", "target_ms": 20.0}


@pytest.mark.parametrize("aqm", [a for a in AQMS if a not in ("FIFO", "DualPI2")])
def test_packet_counting_aqms_scale_their_limit_with_the_buffer(aqm):
    assert qdisc(aqm, n_bdp=10, btl_capacity=1000, base_rtt=100)["limit"] == 125_000_000 // 1500 + 1


@pytest.mark.parametrize("name", ["fifo", "Fq_CoDel", "single queue FQ", "dualpi2", "FQ-Codel-L4S"])
def test_aqm_names_are_case_insensitive(name):
    qdisc(name)


def test_bottleneck_rate_and_base_rtt_come_from_the_factors():
    sc = scenario_from_factors(aqm="FIFO", n_bdp=2, btl_capacity=1000, base_rtt=50)
    assert sc["topology"]["kind"] == "dumbbell"
    assert sc["topology"]["base_rtt"] == 50
    assert sc["topology"]["bottleneck"]["rate"] == 1000


def test_defaults_are_the_studys_prague_accecn_against_cubic_asking_for_ecn():
    f = flows()
    assert list(f) == ["l4s", "classic"]
    assert f["l4s"]["cc"] == {"name": "prague", "ecn_fallback": 0}
    assert f["l4s"]["tcp"] == {"ecn": "accecn"}
    assert f["l4s"]["receiver"] == {"cc": {"name": "prague"}, "tcp": {"ecn": "accecn"}}
    assert f["classic"]["cc"] == {"name": "cubic"}
    # the study's CUBIC sender asks for ECN (tcp_ecn=1); its receiver decides (none by default)
    assert f["classic"]["tcp"] == {"ecn": "classic"}
    assert f["classic"]["receiver"] == {"cc": {"name": "cubic"}, "tcp": {"ecn": "none"}}


def test_an_ecn_receiver_named_with_a_sender_that_never_asks_warns():
    from l4sim.studies.factors import FactorWarning

    with pytest.warns(FactorWarning, match="rx_classic_ecn='classic' has no effect"):
        flows(tx_classic_ecn="none", rx_classic_ecn="classic")
    with pytest.warns(FactorWarning, match="rx_l4s_ecn"):
        flows(tx_l4s_ecn="none", cc_l4s="cubic")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flows(rx_classic_ecn="classic")  # the study's sender asks: no warning
        # Prague and DCTCP sockets ask for ECN whatever tcp_ecn says (TCP_CONG_NEEDS_ECN)
        flows(tx_l4s_ecn="none")
        flows(tx_l4s_ecn="none", cc_l4s="dctcp")


@pytest.mark.parametrize(
    "kw,field,value",
    [
        (dict(aqm="dualpi2"), "aqm", "DualPI2"),
        (dict(aqm="fq-codel"), "aqm", "FQ_Codel"),
        (dict(tx_l4s_ecn="AccECN"), "tx_l4s_ecn", "accecn"),
        (dict(cc_l4s="Prague"), "cc_l4s", "prague"),
        (dict(cc_classic="BBRv3"), "cc_classic", "bbr3"),
    ],
)
def test_one_name_rule_case_and_hyphens_do_not_matter(kw, field, value):
    from l4sim.studies.study import VALIDATORS

    assert VALIDATORS[field](field, kw[field]) == value
    scenario_from_factors(**{**dict(aqm="FIFO", n_bdp=1, btl_capacity=10, base_rtt=10), **kw})


@pytest.mark.parametrize(
    "rx,cc,ecn", [("accecn", "prague", "accecn"), ("classic", "cubic", "classic"), ("none", "cubic", "none")]
)
def test_l4s_receiver_ecn_sets_the_listener_cc_and_tcp_ecn(rx, cc, ecn):
    assert flows(rx_l4s_ecn=rx)["l4s"]["receiver"] == {"cc": {"name": cc}, "tcp": {"ecn": ecn}}


@pytest.mark.parametrize("tx", ["accecn", "classic", "none"])
@pytest.mark.filterwarnings("ignore:rx_l4s_ecn='accecn' has no effect")  # tested below
def test_l4s_sender_ecn_sets_its_tcp_ecn(tx):
    assert flows(tx_l4s_ecn=tx)["l4s"]["tcp"] == {"ecn": tx}


@pytest.mark.parametrize("side", ["tx_classic_ecn", "rx_classic_ecn"])
def test_classic_endpoints_take_none_or_classic(side):
    f = flows(**{side: "classic"})["classic"]
    ecn = f["tcp"]["ecn"] if side.startswith("tx") else f["receiver"]["tcp"]["ecn"]
    assert ecn == "classic"
    assert f["receiver"]["cc"] == {"name": "cubic"}


def test_accecn_receiver_of_another_l4s_cc_runs_that_cc():
    f = flows(cc_l4s="bbr2")["l4s"]
    assert f["cc"] == {"name": "bbr2", "variant": "l4s"}
    assert f["receiver"]["cc"] == {"name": "bbr2", "variant": "l4s"}


@pytest.mark.parametrize("role", ["cc_l4s", "cc_classic"])
def test_bbr2_is_the_study_kernels_l4steam_build_in_both_roles_v2alpha_selectable(role):
    flow = "l4s" if role == "cc_l4s" else "classic"
    f = flows(**{role: "bbr2"})[flow]
    assert f["cc"] == {"name": "bbr2", "variant": "l4s"}
    assert flows(**{role: "bbrv2"})[flow]["cc"] == {"name": "bbr2", "variant": "l4s"}
    g = flows(**{role: "bbr2-v2alpha"})[flow]
    assert g["cc"] == {"name": "bbr2"}


@pytest.mark.parametrize("cc", ["cubic", "bbr", "bbr2", "bbr3"])
def test_classic_receiver_runs_cubic_unless_rx_classic_cc_says_otherwise(cc):
    f = flows(cc_classic=cc, rx_classic_ecn="classic")["classic"]
    assert f["receiver"]["cc"] == {"name": "cubic"}
    g = flows(cc_classic=cc, rx_classic_ecn="classic", rx_classic_cc=cc)["classic"]
    assert g["receiver"]["cc"] == g["cc"]


def test_receiver_ccs_are_factors_and_named_when_not_default():
    sc = scenario_from_factors(aqm="FQ", **BASE, cc_classic="bbr2", rx_classic_cc="bbr2", rx_l4s_cc="dctcp")
    f = {x["name"]: x for x in sc["flows"]}
    assert f["classic"]["receiver"]["cc"] == {"name": "bbr2", "variant": "l4s"}
    assert f["l4s"]["receiver"]["cc"] == {"name": "dctcp"}
    assert "-rxbbr2" in sc["name"] and "-rxdctcp" in sc["name"]
    assert "-rx" not in scenario_from_factors(aqm="FQ", **BASE, cc_classic="bbr2")["name"]
    assert "-rxbbr2" in scenario_from_factors(aqm="FQ", **BASE, cc_classic="bbr2", rx_classic_cc="bbr2")["name"]
    with pytest.raises(l4sim.ScenarioError) as ei:
        scenario_from_factors(aqm="FQ", **BASE, rx_classic_cc="vegas")
    assert ei.value.field == "rx_classic_cc"


def test_ecn_fallback_is_a_prague_parameter():
    assert flows(ecn_fallback=1)["l4s"]["cc"] == {"name": "prague", "ecn_fallback": 1}
    with pytest.raises(l4sim.ScenarioError) as ei:
        flows(ecn_fallback=1, cc_l4s="bbr2")
    assert ei.value.field == "ecn_fallback"


def test_flow_counts_become_parallel_streams():
    f = flows(n_l4s=5, n_classic=10)
    assert f["l4s"]["streams"] == 5 and f["classic"]["streams"] == 10


def test_zero_streams_leaves_that_sender_out():
    assert list(flows(n_l4s=0)) == ["classic"]
    with pytest.raises(l4sim.ScenarioError):
        flows(n_l4s=0, n_classic=0)


def test_seed_defaults_to_1_and_trial_derives_it_reproducibly():
    sc = lambda **kw: scenario_from_factors(aqm="FIFO", **BASE, **kw)  # noqa: E731
    assert sc()["seed"] == 1
    assert sc(trial=3)["seed"] == sc(trial=3)["seed"]
    assert len({sc(trial=t)["seed"] for t in range(10)}) == 10
    assert sc(trial=3, seed=42)["seed"] == 42


def test_duration_and_sample_interval_pass_through():
    sc = scenario_from_factors(aqm="FIFO", **BASE, duration=5, sample_interval=0.5)
    assert sc["duration"] == 5 and sc["sample_interval"] == 0.5


def test_scenario_names_differ_between_design_points():
    names = {scenario_from_factors(aqm=a, **BASE)["name"] for a in AQMS}
    assert len(names) == len(AQMS)


@pytest.mark.parametrize(
    "kw,field,value",
    [
        (dict(aqm="RED-ish"), "aqm", "RED-ish"),
        (dict(tx_l4s_ecn="AccECN!"), "tx_l4s_ecn", "AccECN!"),
        (dict(rx_l4s_ecn="ecn"), "rx_l4s_ecn", "ecn"),
        (dict(tx_classic_ecn="accecn"), "tx_classic_ecn", "accecn"),
        (dict(rx_classic_ecn=1), "rx_classic_ecn", "1"),
        (dict(cc_classic="vegas"), "cc_classic", "vegas"),
        (dict(cc_l4s="Prague2"), "cc_l4s", "Prague2"),
        (dict(ecn_fallback=3), "ecn_fallback", "3"),
        (dict(n_bdp=-1), "n_bdp", "-1"),
        (dict(btl_capacity=0), "btl_capacity", "0"),
        (dict(n_l4s=1.5), "n_l4s", "1.5"),
        (dict(colour="red"), "colour", "red"),
    ],
)
def test_bad_factor_error_names_the_factor_and_value(kw, field, value):
    with pytest.raises(l4sim.ScenarioError) as ei:
        scenario_from_factors(**{"aqm": "FIFO", **BASE, **kw})
    assert ei.value.field == field
    assert value in str(ei.value)


def test_extra_settings_reach_the_topology():
    sc = scenario_from_factors(aqm="FIFO", **BASE, name="x", nic_rate=1000, burst=3000)
    assert sc["name"] == "x"
    assert sc["topology"]["nic_rate"] == 1000
    assert sc["topology"]["bottleneck"]["burst"] == 3000


def test_qdisc_for_matches_the_scenario():
    assert qdisc_for("Codel", **BASE, ecn_threshold=1) == qdisc("Codel", ecn_threshold=1)


@pytest.mark.parametrize("aqm", AQMS)
def test_every_aqm_scenario_passes_the_core_validator(aqm):
    Scenario.from_dict(scenario_from_factors(aqm=aqm, **BASE, ecn_fallback=1)).validate()


@pytest.mark.parametrize("cc", ["cubic", "bbr", "bbr2", "bbr3", "reno", "dctcp"])
def test_every_classic_cc_scenario_passes_the_core_validator(cc):
    Scenario.from_dict(scenario_from_factors(aqm="FQ", **BASE, cc_classic=cc, rx_classic_ecn="classic")).validate()


def test_rmem_max_raises_both_receivers_buffers_and_lets_a_long_fat_flow_fill_the_link():
    base = dict(
        aqm="FIFO",
        n_bdp=1,
        btl_capacity=1000,
        base_rtt=100,
        cc_l4s="cubic",
        tx_l4s_ecn="none",
        rx_l4s_ecn="none",
        duration=8,
    )
    raised = scenario_from_factors(**base, rmem_max=64 << 20)
    assert [f["receiver"]["tcp"]["rmem"] for f in raised["flows"]] == [[4096, 131072, 64 << 20]] * 2
    assert "rmem" not in scenario_from_factors(**base)["flows"][0]["receiver"]["tcp"]

    def total(sc):
        return sum(f["goodput_mbps"] for f in l4sim.run(l4sim.Scenario.from_dict(sc)).raw["flows"])

    # Linux's default tcp_rmem: two 3 MB windows per 100 ms, about half the link.
    assert 400 < total(scenario_from_factors(**base)) < 520
    assert total(raised) > 650


def test_rmem_max_below_the_default_buffer_is_an_error_naming_it():
    with pytest.raises(l4sim.ScenarioError, match="rmem_max.*131072.*4096"):
        scenario_from_factors(aqm="FIFO", n_bdp=1, btl_capacity=100, base_rtt=10, rmem_max=4096)
