"""``l4sim.run`` on short runs: the DataFrames' shapes and the result's contents."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import l4sim
from l4sim.api import RunResult, _flatten_qdisc
from l4sim_testdata import EXAMPLES, SHORT_TWO_FLOWS, fake_engine, minimal  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def result() -> RunResult:
    return l4sim.run(SHORT_TWO_FLOWS)


def test_package_exports_version_and_model_version():
    assert isinstance(l4sim.__version__, str) and l4sim.__version__
    assert isinstance(l4sim.MODEL_VERSION, str) and l4sim.MODEL_VERSION
    assert issubclass(l4sim.ScenarioError, ValueError)


def test_core_validate_raises_scenario_error_with_field_and_message():
    from l4sim import _core

    with pytest.raises(l4sim.ScenarioError) as ei:
        _core.validate('{"duration": 1}')
    assert hasattr(ei.value, "field") and hasattr(ei.value, "message")
    with pytest.raises(l4sim.ScenarioError):
        _core.run("not json")


def test_bad_scenario_raises_before_running(minimal):
    minimal["topology"]["bottleneck"]["rate"] = -5
    with pytest.raises(l4sim.ScenarioError) as ei:
        l4sim.run(minimal)
    assert ei.value.field == "topology.bottleneck.rate"


@pytest.mark.parametrize("start", [l4sim.run, l4sim.Simulation])
def test_an_absurd_magnitude_the_core_accepts_is_rejected_by_run_and_simulation_too(minimal, start):
    """validate() and the CLI reject a 0.5 kbit/s bottleneck (check_scale); l4sim.run and
    l4sim.Simulation only asked the core, which accepts it, and ran it."""
    minimal["topology"]["bottleneck"]["rate"] = 0.0005
    with pytest.raises(l4sim.ScenarioError) as ei:
        start(minimal)
    assert ei.value.field == "topology.bottleneck.rate"


def test_a_simulation_may_name_an_end_beyond_a_day(minimal):
    """A stepped simulation (the demo's: a million seconds, "forever") is not run to its end:
    the one-day limit of a run does not apply to it."""
    minimal["duration"] = 1e6
    with pytest.raises(l4sim.ScenarioError):
        l4sim.run(minimal)
    sim = l4sim.Simulation(minimal)
    sim.step(0.1)
    assert sim.now == pytest.approx(0.1)


def test_qdisc_dicts_flatten_into_prefixed_columns():
    row = _flatten_qdisc(
        {
            "name": "bottleneck",
            "drops": 3,
            "drops_by_reason": {"overlimit": 3},
            "drops_by_ecn": {"not_ect": 3},
            "marks": 2,
            "marks_by_ecn": {"ect1": 2},
            "extra": {"p_c": 0.1},
        }
    )
    assert row == {
        "name": "bottleneck",
        "drops": 3,
        "marks": 2,
        "drops_overlimit": 3,
        "drops_not_ect": 3,
        "marks_ect1": 2,
        "p_c": 0.1,
    }


def test_flows_frame_has_one_row_per_flow_with_result_columns(result):
    f = result.flows
    assert isinstance(f, pd.DataFrame)
    assert list(f["name"]) == ["a", "b"]
    for col in ("cc", "ecn_mode", "goodput_mbps", "mean_srtt_ms", "qdelay_ms", "retrans", "bytes_delivered"):
        assert col in f.columns
    assert (f["goodput_mbps"] > 0).all()
    assert f["goodput_mbps"].sum() <= 20 * 1.01  # cannot beat the 20 Mbit/s bottleneck


def test_qdiscs_and_links_frames_have_one_row_each(result):
    q, links = result.qdiscs, result.links
    assert len(q) >= 1 and "kind" in q.columns and "sojourn_mean_ms" in q.columns
    assert not any(isinstance(v, dict) for v in q.iloc[0].tolist())
    assert len(links) >= 1
    assert ((links["utilisation"] >= 0) & (links["utilisation"] <= 1.0001)).all()


def test_long_series_have_t_name_variable_value(result):
    for s in (result.series_flows(), result.series_qdiscs()):
        assert list(s.columns) == ["t", "name", "variable", "value"]
        assert len(s) > 0
    sf = result.series_flows()
    assert {"tput_mbps", "cwnd", "srtt_ms"} <= set(sf["variable"])
    assert set(sf["name"]) == {"a", "b"}


def test_timeseries_is_wide_and_indexed_by_time(result):
    w = result.timeseries(flow="a")
    assert w.index.name == "t"
    assert {"tput_mbps", "cwnd", "srtt_ms"} <= set(w.columns)
    assert w.index.is_monotonic_increasing
    assert 20 <= len(w) <= 31  # 3 s at 0.1 s
    with pytest.raises(KeyError):
        result.timeseries(flow="nope")
    both = result.timeseries()
    assert ("a", "cwnd") in both.columns and ("b", "cwnd") in both.columns


def test_a_run_shorter_than_its_sample_interval_says_why_it_has_no_series(minimal):
    r = l4sim.run(minimal, duration=0.05)
    with pytest.raises(KeyError, match=r"sample_interval 0.1 s is longer than the run \(0.05 s\)"):
        r.timeseries("a")


def test_rtt_samples_are_arrays_per_flow(result):
    rs = result.rtt_samples
    assert set(rs) == {"a", "b"}
    assert all(isinstance(v, np.ndarray) for v in rs.values())


def test_raw_summary_and_json(result):
    assert result.raw["name"] == "short"
    assert result.sim_seconds == pytest.approx(3)
    assert json.loads(result.to_json()) == result.raw
    text = result.summary()
    assert "a" in text and "Jain" in text and "Mbit/s" in text


def test_the_summary_gives_jain_over_the_bulk_flows_beside_other_sources():
    # Two equal bulk flows and light web traffic: over every flow the index reads 0.5.
    r = l4sim.run(EXAMPLES / "demo_dualpi2.toml", duration=3)
    line = next(x for x in r.summary().splitlines() if x.startswith("Jain index"))
    bulk = r.flows[r.flows["source"] == "bulk"]["goodput_mbps"]
    jain = bulk.sum() ** 2 / (len(bulk) * (bulk**2).sum())
    assert line == f"Jain index {r.jain_index:.3f} over every flow, {jain:.3f} over the 2 bulk flows"
    assert jain > 0.9 > r.jain_index


def test_overrides_apply_to_the_run(minimal):
    r = l4sim.run(minimal, duration=2.5, seed=7)
    assert r.sim_seconds == pytest.approx(2.5)
    assert r.seed == 7


def test_same_scenario_and_seed_give_identical_results(minimal):
    a, b = l4sim.run(minimal), l4sim.run(minimal)
    strip = lambda raw: {k: v for k, v in raw.items() if k != "wall_seconds"}  # noqa: E731
    assert strip(a.raw) == strip(b.raw)


def test_run_factors_runs_a_study_point():
    r = l4sim.run_factors(aqm="DualPI2", n_bdp=2, btl_capacity=20, base_rtt=10, duration=2)
    assert list(r.flows["name"]) == ["l4s", "classic"]
    assert list(r.flows["cc"]) == ["prague", "cubic"]


# --- the Python side on a well-formed result from a stand-in engine ---


def test_result_frames_have_one_row_per_flow_qdisc_and_link(fake_engine, minimal):
    minimal["flows"].append({"name": "b", "cc": "reno", "streams": 2})
    r = l4sim.run(minimal)
    assert r.flows.shape[0] == 2 and list(r.flows["name"]) == ["a", "b"]
    assert "goodput_mbps" in r.flows.columns and "completion_s" in r.flows.columns
    assert r.qdiscs.shape[0] == 1
    assert r.qdiscs.loc[0, "drops_overlimit"] == 3 and r.qdiscs.loc[0, "drops_not_ect"] == 3
    assert "drops_by_reason" not in r.qdiscs.columns and "extra" not in r.qdiscs.columns
    assert r.links.shape[0] == 1 and r.links.loc[0, "utilisation"] == pytest.approx(0.9)


def test_long_series_stack_every_variable_of_every_flow(fake_engine, minimal):
    minimal["flows"].append({"name": "b", "cc": "reno"})
    r = l4sim.run(minimal)  # 2 s at 0.1 s: 20 samples
    sf = r.series_flows()
    assert list(sf.columns) == ["t", "name", "variable", "value"]
    assert len(sf) == 2 * 5 * 20
    sq = r.series_qdiscs()
    assert len(sq) == 5 * 20 and set(sq["name"]) == {"bottleneck"}


def test_timeseries_pivots_one_flow_or_one_qdisc(fake_engine, minimal):
    r = l4sim.run(minimal)
    w = r.timeseries("a")
    assert w.shape == (20, 5)
    assert list(w["cwnd"]) == [float(i) for i in range(20)]
    q = r.timeseries(qdisc="bottleneck")
    assert "backlog_pkts" in q.columns and q.shape[0] == 20
    with pytest.raises(KeyError):
        r.timeseries(qdisc="nope")


def test_summary_lists_flows_link_and_totals(fake_engine, minimal):
    text = l4sim.run(minimal).summary()
    assert "reno" in text and "90.0 %" in text and "Jain index 0.990" in text and "real time" in text


def test_run_factors_builds_the_study_scenario(fake_engine, monkeypatch):
    seen = {}

    def spy(js: str) -> str:
        seen["sc"] = json.loads(js)
        return fake_engine(js)

    from l4sim import _core

    monkeypatch.setattr(_core, "run", spy)
    monkeypatch.setattr(l4sim.scenario.Scenario, "validate", lambda self: self)
    r = l4sim.run_factors(
        aqm="FIFO", n_bdp=2, btl_capacity=100, base_rtt=10, duration=2, cc_l4s="reno", cc_classic="reno"
    )
    assert seen["sc"]["topology"]["bottleneck"]["qdisc"] == {"kind": "bfifo", "limit": 250000}
    assert list(r.flows["name"]) == ["l4s", "classic"]


def test_scenario_error_survives_pickling_for_worker_processes(minimal):
    import pickle

    minimal["topology"]["bottleneck"]["rate"] = -5
    with pytest.raises(l4sim.ScenarioError) as ei:
        l4sim.Scenario.from_dict(minimal).validate()
    e = pickle.loads(pickle.dumps(ei.value))
    assert isinstance(e, l4sim.ScenarioError)
    assert (e.field, e.message) == (ei.value.field, ei.value.message)


def test_summary_copes_with_missing_samples_written_as_null(fake_engine, monkeypatch, minimal):
    from l4sim import _core

    def no_samples(js: str) -> str:
        raw = json.loads(fake_engine(js))
        raw["flows"][0]["mean_srtt_ms"] = None  # NaN in the core becomes null in JSON
        raw["flows"][0]["qdelay_ms"] = None
        raw["series"]["flows"][0]["srtt_ms"][0] = None
        return json.dumps(raw)

    monkeypatch.setattr(_core, "run", no_samples)
    r = l4sim.run(minimal)
    assert "nan" in r.summary()
    assert np.isnan(r.flows.loc[0, "mean_srtt_ms"])
    assert np.isnan(r.timeseries("a")["srtt_ms"].iloc[0])


def _two_cubics_through(qdisc: dict) -> l4sim.Scenario:
    """A 2 s dumbbell: CUBIC flows "a" (DSCP 10) and "b" through a 100 Mbit/s ``qdisc``."""
    return l4sim.Scenario.from_dict(
        {
            "duration": 2,
            "seed": 1,
            "topology": {"kind": "dumbbell", "base_rtt": 10, "bottleneck": {"rate": 100, "qdisc": qdisc}},
            "flows": [{"name": "a", "cc": "cubic", "dscp": 10}, {"name": "b", "cc": "cubic"}],
        }
    )


def test_classful_qdiscs_list_their_classes_as_tc_s_does():
    """htb leaf classes each keep their own counters: ``qdisc_classes`` and the summary."""
    qdisc = {
        "kind": "htb",
        "classes": [
            {"name": "gold", "rate_mbps": 30, "dscp": [10], "child": {"kind": "pfifo", "limit": 50}},
            {"name": "rest", "rate_mbps": 70},
        ],
        "default": 1,
    }
    sc = _two_cubics_through(qdisc)
    r = l4sim.run(sc)
    cls = r.qdisc_classes.set_index("name")
    assert list(cls.index) == ["bottleneck/gold", "bottleneck/rest"]
    assert list(cls["kind"]) == ["pfifo", "pfifo"]
    assert cls["deq_pkts"].sum() == r.qdiscs["deq_pkts"].iloc[0]
    assert "bottleneck/gold" in r.summary() and "sent pkts" in r.summary()


def test_htb_inner_classes_get_a_row_of_their_own_and_name_their_leaves():
    """An inner class has no queue: its row counts what passed through it, lends and borrows."""
    qdisc = {
        "kind": "htb",
        "classes": [
            {"name": "customer", "rate_mbps": 40, "ceil_mbps": 40},
            {"name": "a", "parent": 0, "rate_mbps": 10, "ceil_mbps": 100, "dscp": [10]},
            {"name": "rest", "rate_mbps": 60},
        ],
        "default": 2,
    }
    sc = _two_cubics_through(qdisc)
    cls = l4sim.run(sc).qdisc_classes.set_index("name")
    assert list(cls.index) == ["bottleneck/customer", "bottleneck/customer/a", "bottleneck/rest"]
    inner, leaf = cls.loc["bottleneck/customer"], cls.loc["bottleneck/customer/a"]
    assert inner["kind"] == "htb class" and np.isnan(inner["sojourn_mean_ms"])
    assert inner["sent_pkts"] == leaf["deq_pkts"] and inner["lends"] == leaf["borrows"] > 0


def test_summary_lines_up_long_names_and_shows_udp_prague_rtt():
    """A cc name longer than its column (udp_prague) or a long flow name pushed the rest of the
    row out of line; UDP Prague's srtt showed nan (the core took its once-per-second srtt
    samples from TCP connections only; since model 0.9.2 also from a UDP Prague sender)."""
    sc = {
        "duration": 2,
        "seed": 1,
        "topology": {"kind": "dumbbell", "base_rtt": 20, "bottleneck": {"rate": 20, "qdisc": {"kind": "dualpi2"}}},
        "flows": [
            {"name": "call", "source": {"kind": "udp_prague", "max_rate_mbps": 5}},
            {"name": "a_rather_long_flow_name", "cc": "cubic"},
        ],
    }
    r = l4sim.run(sc)
    lines = r.summary().splitlines()
    head = lines[1]
    rows = {ln.split()[0]: ln for ln in lines[3:5]}
    for col in ("goodput Mbit/s", "srtt ms", "retrans"):
        end = head.index(col) + len(col)
        assert all(row[end - 1] != " " and (len(row) == end or row[end] == " ") for row in rows.values()), lines[:5]
    call = r.flows.set_index("name").loc["call"]
    assert 20 < call.mean_srtt_ms < 40 and len(r.rtt_samples["call"]) >= 1
    assert abs(call.mean_srtt_ms - r.udp["rtt_ms"].mean()) < 5  # the receiver's view agrees
    fields = rows["call"].split()
    assert fields[4] == f"{call.mean_srtt_ms:.2f}" and fields[5] == f"{call.qdelay_ms:.2f}"


def test_nested_htb_classes_are_modelled_as_docs_topologies_says():
    """docs/topologies.md described HTB class trees (an inner class's ceiling shared by its
    leaves) and then listed "HTB hierarchies deeper than one level of leaf classes under the
    root" as not modelled yet; they are."""
    from pathlib import Path

    udp = {"kind": "udp", "rate_mbps": 40, "packet_size": 1200}
    sc = {
        "duration": 1,
        "topology": {
            "kind": "graph",
            "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}, {"name": "r"}],
            "links": [
                {"a": "h1", "b": "r", "rate": 1000},
                {
                    "a": "r",
                    "b": "h2",
                    "rate": 1000,
                    "ab": {
                        "rate": 100,
                        "qdisc": {
                            "kind": "htb",
                            "classes": [
                                {"name": "x", "rate_mbps": 20, "ceil_mbps": 20},
                                {"name": "a", "parent": 0, "rate_mbps": 5, "ceil_mbps": 100, "dscp": [10]},
                                {"name": "b", "parent": 0, "rate_mbps": 5, "ceil_mbps": 100, "dscp": [12]},
                                {"name": "c", "rate_mbps": 10, "ceil_mbps": 100},
                            ],
                            "default": 3,
                        },
                    },
                },
            ],
        },
        "flows": [
            {"name": n, "from": "h1", "to": "h2", "dscp": d, "source": udp} for n, d in (("a", 10), ("b", 12), ("c", 0))
        ],
    }
    r = l4sim.run(sc)
    got = dict(zip(r.flows.name, r.flows.goodput_mbps, strict=True))
    assert 15 < got["a"] + got["b"] < 20.5 and got["c"] > 35, got  # x's 20 Mbit/s ceiling
    doc = (Path(__file__).resolve().parents[1] / "docs" / "topologies.md").read_text()
    not_yet = doc.split("## Not modelled yet", 1)[1]
    assert "HTB hierarchies" not in not_yet


def test_qdisc_series_carry_the_link_rate_and_the_per_class_counts_per_interval():
    """tx_mbps and the class counts were recorded but only reachable through raw["series"]."""
    r = l4sim.run(EXAMPLES / "prague_vs_cubic_dualpi2.toml", duration=2)
    w = r.timeseries(qdisc="bottleneck")
    q = r.qdiscs.set_index("name").loc["bottleneck"]
    assert w[[f"{c}_pkts" for c in ("l4s", "classic")]].to_numpy().sum() == q["enq_pkts"]
    assert w[["l4s_drops", "classic_drops"]].to_numpy().sum() == q["drops"] == w["drops"].iloc[-1]
    assert w["tx_mbps"].iloc[5:].between(90, 100.1).all()


def test_the_htb_example_gives_each_class_its_rate_and_without_default_the_summary_says_what_went_unshaped():
    """examples/htb_l4s_class.toml: the L4S class (DSCP 10) keeps its 30 Mbit/s and its DualPI2's
    sub-millisecond queue beside two CUBIC flows in the 70 Mbit/s class. Without ``default`` the
    CUBIC flows match no class: Linux's htb sends them from its direct queue, unshaped, which
    the summary points out (a silent 20x overshoot of the shaped rate is easy to miss)."""
    sc = l4sim.load(EXAMPLES / "htb_l4s_class.toml").with_overrides(duration=5)
    r = l4sim.run(sc)
    good = r.flows.set_index("name")["goodput_mbps"]
    assert 20 < good["prague"] < 30 and 55 < good["cubic1"] + good["cubic2"] < 70, good
    cls = r.qdisc_classes.set_index("name")
    assert cls.loc["bottleneck/l4s", "sojourn_mean_ms"] < 1.5 < cls.loc["bottleneck/classic", "sojourn_mean_ms"]
    assert "unshaped" not in r.summary()
    doc = sc.to_dict()
    del doc["topology"]["bottleneck"]["qdisc"]["default"]
    r = l4sim.run(l4sim.Scenario.from_dict(doc).with_overrides(duration=2))
    good = r.flows.set_index("name")["goodput_mbps"]
    assert good["cubic1"] > 100 and good["cubic2"] > 100, good
    direct = int(r.qdiscs["direct_packets_stat"].iloc[0])
    assert direct > 0 and f"{direct} packets matched no htb class and went out unshaped" in r.summary()
