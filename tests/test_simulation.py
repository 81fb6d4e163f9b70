"""``l4sim.Simulation``: stepping, draining, changes while running; traffic sources from Python
and scenario files; completion-time and queue-delay tables."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import l4sim

ROOT = Path(__file__).resolve().parents[1]
IETF = ROOT / "examples" / "ietf106_ultra_low_delay.toml"


def _web_scenario(**source):
    return {
        "name": "web",
        "duration": 2,
        "seed": 5,
        "topology": {"base_rtt": 10, "bottleneck": {"rate": 40, "qdisc": "dualpi2"}},
        "flows": [
            {"name": "long", "cc": "prague", "tcp": {"ecn": "accecn"}, "receiver": {"cc": "prague", "tcp": {"ecn": 3}}},
            {"name": "web", "cc": "cubic", "source": {"kind": "web", "rate": 50, **source}},
        ],
    }


def _canonical(r: l4sim.RunResult) -> str:
    raw = dict(r.raw)
    raw.pop("wall_seconds")
    return json.dumps(raw, sort_keys=True)


def test_stepping_to_the_end_is_byte_identical_to_run():
    one_shot = l4sim.run(IETF, duration=2)
    sim = l4sim.Simulation(IETF, duration=2)
    drained = 0
    while sim.now < sim.end:
        sim.run_until(min(sim.now + 0.3, sim.end))
        drained += len(sim.drain().connections)
    assert sim.now == 2.0
    assert _canonical(sim.result()) == _canonical(one_shot)
    assert drained == len(one_shot.connections) > 100
    # Steps that do not divide the duration stop at the end, then go on past it.
    sim = l4sim.Simulation(IETF, duration=2)
    while sim.now < sim.end:
        sim.step(0.7)
    assert sim.now == 2.0
    assert _canonical(sim.result()) == _canonical(one_shot)
    assert sim.step(0.7).now == pytest.approx(2.7)


def test_drain_returns_each_sample_once():
    sim = l4sim.Simulation(_web_scenario())
    sim.run_until(1.0)
    a = sim.drain()
    sim.run_until(2.0)
    b = sim.drain()
    c = sim.drain()
    assert list(a.t) == pytest.approx(np.arange(1, 11) / 10)
    assert list(b.t) == pytest.approx(np.arange(11, 21) / 10)
    assert len(c.t) == 0 and len(c.connections) == 0
    q = b.queues
    assert set(q["class"]) == {"l4s", "classic", "all"}
    assert (q["pkts"] >= 0).all()
    # the qdisc-wide values sit on its "all" row only, whose counts are the classes' sums
    by = {c: g.reset_index(drop=True) for c, g in q.groupby("class")}
    assert (by["all"]["pkts"] == by["l4s"]["pkts"] + by["classic"]["pkts"]).all()
    assert by["l4s"]["backlog_pkts"].isna().all() and by["all"]["backlog_pkts"].notna().all()
    d = b.delay.set_index("flow")
    assert {"long", "web"} <= set(d.index)
    assert d.loc["long", "p99_ms"] >= d.loc["long", "p50_ms"] >= 0
    f = b.flows
    assert set(f["variable"]) == {"tput_mbps", "cwnd", "srtt_ms"}
    assert set(f.loc[f["name"] == "web", "kind"]) == {"web"}


def test_bottleneck_rate_change_mid_run_shows_in_the_link_rate():
    sim = l4sim.Simulation(_web_scenario(rate=0.001))
    sim.run_until(1.0)
    sim.drain()
    sim.set_link(rate=10)
    sim.run_until(2.0)
    s = sim.drain()
    tx = s.queues.query("`class` == 'all'")["tx_mbps"].to_numpy()
    assert 8.0 < tx[-5:].mean() <= 10.01
    assert s.raw["qdiscs"]["bottleneck"]["rate_mbps"] == pytest.approx(10)


def test_aqm_swap_mid_run_takes_effect_and_is_reported():
    sim = l4sim.Simulation(_web_scenario())
    sim.run_until(1.0)
    sim.set_link(qdisc={"kind": "pie", "ecn": True})
    sim.run_until(2.0)
    r = sim.result()
    assert r.qdiscs.loc[0, "kind"] == "pie"
    assert r.conservation_ok


def test_flows_added_changed_and_removed_while_running():
    sim = l4sim.Simulation(_web_scenario())
    sim.run_until(0.5)
    sim.add_flow(l4sim.Flow(name="late", cc="cubic"))
    sim.set_flow("web", rate=0, cc="reno")
    sim.run_until(1.0)
    sim.remove_flow("long")
    n_before = len(sim.drain().connections)
    sim.run_until(2.0)
    r = sim.result()
    flows = r.flows.set_index("name")
    assert flows.loc["late", "start_s"] == pytest.approx(0.5)
    assert flows.loc["late", "goodput_mbps"] > 1
    # rate 0: the web source starts nothing after 0.5 s
    assert (r.connections["start_s"] <= 0.5 + 1e-9).all()
    assert n_before >= 0
    series = r.timeseries("late")
    assert np.isnan(series.loc[series.index < 0.45, "tput_mbps"]).all()


def test_a_flow_has_no_values_before_its_start_as_after_its_stop():
    r = l4sim.run(
        {
            "duration": 2,
            "sample_interval": 0.1,
            "topology": {"base_rtt": 10, "bottleneck": {"rate": 20, "qdisc": "fq_codel"}},
            "flows": [{"name": "early", "cc": "cubic"}, {"name": "late", "cc": "cubic", "start": 1.0}],
        }
    )
    late = r.timeseries("late")
    before, after = late[late.index <= 1.0 + 1e-9], late[late.index > 1.0 + 1e-9]
    assert len(before) == 10 and before[["tput_mbps", "cwnd", "srtt_ms"]].isna().all().all()
    assert after[["tput_mbps", "cwnd", "srtt_ms"]].notna().all().all() and after["srtt_ms"].min() > 10


def test_bad_changes_name_the_field():
    sim = l4sim.Simulation(_web_scenario())
    with pytest.raises(l4sim.ScenarioError) as ei:
        sim.set_flow("web", rate=-1)
    assert ei.value.field == "flows.web.rate"
    with pytest.raises(l4sim.ScenarioError) as ei:
        sim.add_flow(name="x", cc="nope")
    assert ei.value.field == "flows.x.cc.name"
    with pytest.raises(l4sim.ScenarioError) as ei:
        sim.set_link(qdisc={"kind": "pie", "target_ms": -1})
    assert ei.value.field == "qdisc.target_ms"
    with pytest.raises(l4sim.ScenarioError) as ei:
        sim.remove_flow("nobody")
    # A bulk flow has no offered load to change: the change was accepted and did nothing.
    sim.add_flow(name="bulk", cc="cubic")
    with pytest.raises(l4sim.ScenarioError) as ei:
        sim.set_flow("bulk", rate=10)
    assert ei.value.field == "flows.bulk.rate" and "bulk source" in str(ei.value)
    with pytest.raises(l4sim.ScenarioError) as ei:
        sim.step(-1)
    assert ei.value.field == "dt"
    with pytest.raises(l4sim.ScenarioError, match="got 'a'") as ei:
        sim.step("a")  # type: ignore[arg-type]
    assert ei.value.field == "dt"
    # Parallel streams are bounded in all, as in a scenario file: added flows count.
    sim.add_flow(name="many", cc="cubic", streams=60_000, start=100)
    with pytest.raises(l4sim.ScenarioError) as ei:
        sim.add_flow(name="more", cc="cubic", streams=40_000, start=100)
    assert ei.value.field == "flows.more.streams" and "100000" in str(ei.value)


def test_a_change_the_core_cannot_read_is_named_in_the_scenario_files_words():
    """A value of the wrong type in add_flow, set_flow or set_link came back as serde's text:
    ``flows.x.flow: invalid value: integer `-1`, expected u32 at line 1 column 52`` (no key,
    Rust's types, a position in JSON the user never wrote)."""
    sim = l4sim.Simulation(_web_scenario())
    cases = [
        (lambda: sim.add_flow(name="x", cc="cubic", streams=-1), "flows.x.streams", "-1"),
        (lambda: sim.add_flow(name="x", cc="cubic", start="1"), "flows.x.start", '"1"'),
        (lambda: sim.add_flow(name="x", cc="cubic", colour=1), "flows.x.colour", "colour"),
        (lambda: sim.add_flow(name="x", tcp={"init_cwnd": -1}), "flows.x.tcp.init_cwnd", "-1"),
        (lambda: sim.set_flow("web", tcp={"init_cwnd": -1}), "flows.web.tcp", "-1"),
        (lambda: sim.set_link(qdisc={"kind": "bfifo", "limit": "x"}), "qdisc", '"x"'),
        (lambda: sim.set_link(qdisc={"kind": "red", "min": 1, "max": 2}), "qdisc", "limit"),
        (lambda: sim.set_link(rate="x"), "rate", "'x'"),
    ]
    for change, field, value in cases:
        with pytest.raises(l4sim.ScenarioError) as ei:
            change()
        text = str(ei.value)
        assert ei.value.field == field and value in text, text
        assert "`" not in text and " line 1 " not in text and not re.search(r"\b[uif](8|16|32|64)\b", text), text
    sim.run_until(0.5)  # still running


def test_connections_table_and_fct_summary():
    r = l4sim.run(_web_scenario(size=20_000), duration=3)
    c = r.connections
    assert len(c) > 80
    assert (c["size"] == 20_000).all()
    assert (c["fct_s"] > c["fct_no_handshake_s"]).all()
    # no transfer beats the ideal: handshake + half an RTT + size at the bottleneck rate
    assert (c["slowdown"] >= 1.0).all()
    s = r.fct_summary()
    assert list(s["size_bin"]) == ["10-100 KB"]
    assert s.loc[0, "fct_p99_ms"] >= s.loc[0, "fct_p50_ms"]
    assert "web" in set(r.flows["source"])


def test_class_table_separates_l4s_and_classic_queues():
    r = l4sim.run(_web_scenario(), duration=3)
    cls = r.classes.query("kind == 'class'").set_index("name")
    assert cls.loc["l4s", "sojourn_p99_ms"] < cls.loc["classic", "sojourn_p99_ms"]
    assert len(cls.loc["l4s", "cdf_ms"]) == 101


def test_size_shortcuts_and_cdf_files_in_scenario_files(tmp_path):
    cdf = tmp_path / "sizes.txt"
    cdf.write_text("# bytes percent\n1000 0\n5000 50\n20000 100\n")
    toml = tmp_path / "s.toml"
    toml.write_text(
        """
duration = 2
[topology]
base_rtt = 10
bottleneck = { rate = 50, qdisc = "fq_codel" }
[flows.web]
source = { kind = "web", rate = 20, size = { dist = "empirical", file = "sizes.txt" } }
[flows.fixed]
source = { kind = "web", rate = 20, size = 3000 }
"""
    )
    sc = l4sim.load(toml)
    assert sc.data["flows"][0]["source"]["size"]["cdf"][-1] == [20000.0, 1.0]
    assert sc.data["flows"][1]["source"]["size"] == {"dist": "fixed", "bytes": 3000}
    r = l4sim.run(sc)
    sizes = r.connections.groupby("flow")["size"]
    assert sizes.max()["web"] <= 20000 and sizes.min()["web"] >= 1000
    assert set(r.connections.query("flow == 'fixed'")["size"]) == {3000}


def test_udp_prague_records_from_python():
    sc = _web_scenario()
    sc["flows"][1] = {"name": "call", "source": {"kind": "udp-prague", "max_rate_mbps": 5}}
    r = l4sim.run(sc, duration=3)
    u = r.udp
    assert set(u["flow"]) == {"call"}
    assert len(u) == pytest.approx(30, abs=2)
    assert u["rate_mbps"].iloc[-5:].mean() > 1


def test_unknown_source_kind_is_one_clear_error():
    sc = _web_scenario()
    sc["flows"][1]["source"]["kind"] = "ftp"
    with pytest.raises(l4sim.ScenarioError) as ei:
        l4sim.load(sc)
    assert ei.value.field == "flows[1].source.kind"


def test_base_rtt_change_applies_to_packets_sent_from_then_on():
    sc = _web_scenario(size={"dist": "fixed", "bytes": 3000})
    del sc["flows"][0]  # an idle path: no long flow
    sim = l4sim.Simulation(sc)
    sim.run_until(1.0)
    before = sim.drain().connections
    sim.set_flow("web", base_rtt=50)
    sim.run_until(1.2)  # let transfers in flight finish
    sim.drain()
    sim.run_until(2.0)
    after = sim.drain().connections
    # a 3 KB transfer on an idle path: 2 base RTTs (request, handshake, response) plus a little
    assert before["fct_s"].median() == pytest.approx(0.020, abs=0.003)
    assert after["fct_s"].median() == pytest.approx(0.100, abs=0.005)


def test_drained_drop_probability_is_of_the_packets_that_arrived():
    """The core's per-interval pkts are arrivals, drops included: drops/(pkts+drops) counted
    each drop twice (0.26 where the run's classes say 0.355)."""
    sc = {
        "duration": 3,
        "topology": {"base_rtt": 10, "bottleneck": {"rate": 20, "qdisc": {"kind": "pfifo", "limit": 5}}},
        "flows": [{"name": "u", "source": {"kind": "udp", "rate_mbps": 30}}],
    }
    sim = l4sim.Simulation(sc)
    sim.run_until(3.0)
    q = sim.drain().queues.query("`class` == 'all'")
    drained = q["drops"].sum() / q["pkts"].sum()
    cls = sim.result().classes.query("kind == 'class' and qdisc == 'bottleneck' and name == 'classic'")
    assert drained == pytest.approx(float(cls["drop_prob"].iloc[0]), rel=0.02)
    assert q["drop_prob"].iloc[5:].mean() == pytest.approx(1 / 3, abs=0.03)
