"""The multi-AS study (ICNP'26) as scenarios: every scenario validates, the priority queue's
tbf cap holds, SRv6 path separation keeps L4S off the classic path, and ``reproduce icnp26
--quick`` writes its report."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import l4sim
from l4sim import icnp26
from l4sim.cli import main
from l4sim.scenario import load
from l4sim_testdata import assert_all_end, busy_children


@pytest.mark.parametrize("name", icnp26.scenario_names())
def test_every_scenario_validates(name: str):
    sc = icnp26.scenario(name, trial=3, duration=120.0, scale=0.1)
    load(sc).validate()
    assert len(sc["flows"]) == 20 + 4 * 5  # study traffic + four background pairs


def test_trials_differ_only_in_their_random_starts():
    a, b = (icnp26.scenario("S1", trial=t) for t in (1, 2))
    starts = lambda sc: [f["start"] for f in sc["flows"] if f["name"].startswith("classic_xfer")]  # noqa: E731
    assert starts(a) != starts(b)
    assert icnp26.scenario("S1", trial=1) == a


def _capped(name: str, src: str, dst: str, egress: str) -> None:
    """Three Prague bulk flows (DSCP 10) and two CUBIC flows through the scenario's priority
    queue: the L4S band stays at its tbf rate, the classic band takes the rest."""
    scale = 0.05
    send, core = icnp26.scaled_rates(scale)
    link = send if name == "S2b" else core
    cap = icnp26.cap_rate(200 if name == "S2b" else 1000, scale)
    assert cap < link
    prague = {
        "cc": {"name": "prague"},
        "tcp": {"ecn": "accecn"},
        "dscp": 10,
        "receiver": {"cc": {"name": "prague"}, "tcp": {"ecn": "accecn"}},
    }
    flows = [{"name": f"l4s{i}", "from": src.format(i=i), "to": dst, **prague} for i in range(3)]
    flows += [{"name": f"cubic{i}", "from": src.format(i=i), "to": dst, "cc": {"name": "cubic"}} for i in range(2)]
    r = l4sim.run({"duration": 8.0, "seed": 1, "topology": icnp26.topology(name, scale=scale), "flows": flows})
    f = r.flows.set_index("name")
    l4s = f.loc[["l4s0", "l4s1", "l4s2"], "goodput_mbps"].sum()
    classic = f.loc[["cubic0", "cubic1"], "goodput_mbps"].sum()
    # Over the run the band never exceeds its rate (Prague's start-up overshoot into the
    # band's 1 ms PIE costs it a loss episode, so it stays below the cap on average).
    assert 0.3 * cap < l4s <= 1.01 * cap, (l4s, cap)
    assert classic > 0.6 * (link - cap), (classic, link, cap)
    q = r.qdiscs.set_index("name")
    assert q.loc[egress, "kind"] == "prio"


def test_s2b_l4s_band_keeps_its_tbf_cap():
    _capped("S2b", "e-{i}-5", "node_k", "r-access-5->r-core1-5")


def test_s4b_l4s_band_keeps_its_tbf_cap():
    _capped("S4b", "node_f", "node_g", "r-2-6->r-6-2")


def _per_flow(r, egress: str, prefix: str) -> dict[str, int]:
    c = r.classes
    c = c[(c["kind"] == "flow") & (c["qdisc"] == egress) & c["name"].str.startswith(prefix)]
    return dict(zip(c["name"], c["deq_pkts"], strict=True))


def _cwr_segments_at_most(r, prefix: str) -> int:
    """The most segments with ECE or CWR the flows named ``prefix...`` can have sent: an ECN
    set-up SYN per connection and one CWR segment per cwnd reduction (ECN responses,
    recoveries, timeouts)."""
    f = r.flows[r.flows["name"].str.startswith(prefix)]
    return int((f["streams"] + f["cwr_count"] + f["fast_recoveries"] + f["rto_count"]).sum())


@pytest.fixture(scope="module")
def s3():
    return {n: l4sim.run(icnp26.scenario(n, duration=6.0, scale=0.05)) for n in ("S3a", "S3b")}


def test_s3b_pins_l4s_to_the_core1_path_and_classic_to_core2(s3):
    r = s3["S3b"]
    l4s_flows = {f for f in r.flows["name"] if f.startswith("l4s_")}
    classic_flows = {f for f in r.flows["name"] if f.startswith("classic_")}
    on = lambda eg, p: sum(_per_flow(r, eg, p).values())  # noqa: E731
    for eg in ("r-core2-4->r-4-3", "r-core2-3->r-3-2"):
        assert on(eg, "l4s_") == 0, eg
        assert on(eg, "classic_") > 0, eg
    # Of classic only what the study's ECN rules select: ECN set-up SYNs and CWR segments.
    assert on("r-access-5->r-core1-5", "classic_") <= _cwr_segments_at_most(r, "classic_")
    # Every L4S flow that sent anything crossed the pinned path's shaped egresses.
    for eg in ("r-access-5->r-core1-5", "r-2-6->r-6-2"):
        seen = {f for f, n in _per_flow(r, eg, "l4s_").items() if n > 0}
        assert seen and seen <= l4s_flows
    assert classic_flows


def test_s3a_shares_the_core_bottleneck(s3):
    r = s3["S3a"]
    assert sum(_per_flow(r, "r-core2-4->r-4-3", "l4s_").values()) > 0
    # Without SRv6 both classes leave AS5 by core2 (OSPF cost 20 toward core1): the sender
    # access egress the study shapes carries only eps_to_k.
    for p in ("l4s_", "classic_"):
        assert sum(_per_flow(r, "r-access-5->r-core1-5", p).values()) == 0, p
    # The shared FIFO at the loaded core queues the calls; separation keeps them at base RTT.
    rtt = {n: s3[n].udp["rtt_ms"].median() for n in s3}
    assert rtt["S3a"] > rtt["S3b"] + 10, rtt


def test_s2_under_srv6_sends_only_what_the_ecn_rules_select_through_the_sender_access_bottleneck():
    """The study ran S2a/S2b with SRv6 on (its SCENARIOS table): its ip6tables rules send ECT(1)
    and CE packets and TCP segments with ECE or CWR out of AS5 over the shaped core1 egress, the
    rest of classic over core2; the model had both classes share the FIFO, then (until
    2026-11-30) selected L4S by DSCP only."""
    topo = icnp26.topology("S2a")
    routes = {(tuple(r.get("ecn", ())), r["path"][0], r["path"][-1]): r["path"] for r in topo["routes"]}
    tests = ("ect1", "ce", "tcp_ece", "tcp_cwr")
    assert "r-core1-5" in routes[(tests, "e-0-5", "e-0-6")] and "r-core2-5" in routes[((), "e-1-5", "e-1-6")]
    r = l4sim.run(icnp26.scenario("S2a", duration=6.0, scale=0.05))
    assert sum(_per_flow(r, "r-access-5->r-core1-5", "l4s_").values()) > 0
    classic = _per_flow(r, "r-access-5->r-core1-5", "classic_")
    # Every classic connection's ECN set-up SYN, and no more than its CWR segments.
    opened = r.flows[r.flows["name"].str.startswith("classic_") & (r.flows["data_pkts_sent"] > 0)]
    assert set(opened["name"]) <= {n for n, k in classic.items() if k > 0}
    assert 0 < sum(classic.values()) <= _cwr_segments_at_most(r, "classic_")
    assert (r.flows[r.flows["name"].str.startswith("classic_long")]["bytes_delivered"] > 0).all()


def test_classic_and_background_negotiate_rfc3168_ecn_as_the_studys_hosts():
    """The notebook sets tcp_ecn=1 with CUBIC on every host but the L4S pair (tcp_ecn=3, Prague);
    l4sim ran the classic flows and the background without ECN until 2026-11-30."""
    r = l4sim.run(icnp26.scenario("S1", duration=6.0, scale=0.05))
    f = r.flows[r.flows["data_pkts_sent"] > 0].set_index("name")
    tcp_l4s = [n for n in f.index if n.startswith("l4s_") and f.loc[n, "cc"] == "prague"]
    others = [n for n in f.index if n.startswith(("classic_", "bg_"))]
    assert tcp_l4s and others
    assert set(f.loc[tcp_l4s, "ecn_mode"]) == {"acc_ecn"} and set(f.loc[tcp_l4s, "data_ecn"]) == {"ect1"}
    assert set(f.loc[others, "ecn_mode"]) == {"rfc3168"} and set(f.loc[others, "data_ecn"]) == {"ect0"}


def test_delays_and_hosts_are_the_studys():
    """The notebook's netem (30 ms on the receivers' egress only; ~1 ms for the background) and its
    hosts (L4S e-0 pair, classic e-1 pair, eps_to_k from e-2-5): every host link had 7.5 ms and
    each class was spread over the three pairs."""
    sc = icnp26.scenario("S1", duration=6.0, scale=0.05)
    netems = [(ln["b"], ln["ba"]["qdisc"]) for ln in sc["topology"]["links"] if "ba" in ln and ln["a"] == "lan-6"]
    assert netems == [(f"e-{i}-6", {"kind": "netem", "delay_ms": 30.0, "limit": 60000}) for i in range(3)]
    hosts = {f["name"]: (f["from"], f["to"]) for f in sc["flows"]}
    assert {h for n, h in hosts.items() if n.startswith("l4s_")} == {("e-0-5", "e-0-6")}
    assert {h for n, h in hosts.items() if n.startswith("classic_")} == {("e-1-5", "e-1-6")}
    assert {h for n, h in hosts.items() if n.startswith("bg_eps_to_k")} == {("e-2-5", "node_k")}
    r = l4sim.run(sc)
    assert 31.0 <= r.udp["rtt_ms"].min() < 31.5  # 30 ms netem + 4 x 0.25 ms
    bg = r.flows[r.flows["name"].str.startswith("bg_s_to_m_long")]
    assert (bg["mean_srtt_ms"] < 5).all(), bg["mean_srtt_ms"].tolist()


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--scenarios", "S9"], "--scenarios: unknown scenario S9"),
        (["--scale", "2"], "--scale: "),
        (["--heavy-load", "3"], "--heavy-load: "),
        (["--background", "mgen"], "--background: must be one of load, study, got 'mgen'"),
        (["--background", "study", "--heavy-load", "0.5"], "--heavy-load: "),
        (["--scenarios", ""], "--scenarios: "),
        (["--scenarios", " , "], "--scenarios: "),
        (["--trials", "0"], "--trials"),
        (["--duration", "-1"], "--duration"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys, args, msg):
    """An empty --scenarios ran every scenario; the range errors lacked the OPTION: form."""
    assert main(["reproduce", "icnp26", "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and msg in err and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()


def test_scenario_names_are_case_insensitive(monkeypatch, tmp_path: Path):
    """README: names are case-insensitive everywhere; `--scenarios s1,s3A` was an unknown scenario;
    a name given twice ran twice, two identical rows in summary.csv."""
    from l4sim import icnp26_report

    seen: list = []
    monkeypatch.setattr(icnp26_report, "_check_scenarios", lambda names, *a: seen.append(names) or "stop")
    assert main(["reproduce", "icnp26", "--out", str(tmp_path / "o"), "--scenarios", "s1,s3A,S1"]) == 2
    assert seen == [["S1", "S3a"]]


@pytest.mark.parametrize("args", [["--duration", "1"], ["--duration", "1.5", "--scenarios", "S3a"]])
def test_a_duration_too_short_for_the_traffic_is_refused_before_anything_runs(tmp_path: Path, capsys, args):
    """The background's long flows start at 0-1.5 s whatever the duration: a shorter run was a
    traceback from a worker, after the output directory was made."""
    assert main(["reproduce", "icnp26", "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --duration: ") and args[1] in err and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("kw", [{"heavy_load": 0.0}, {"scale": 1e-5}])
def test_no_background_bursts_at_all_is_a_valid_scenario(kw):
    """--heavy-load 0 (in its documented range) and a small --scale leave a burst source with
    nothing to send: it was a messages source of rate 0, which the core rejects (a traceback)."""
    for name in icnp26.scenario_names():
        sc = icnp26.scenario(name, quick=True, **kw)
        load(sc).validate()
        assert all(f["source"]["rate"] > 0 for f in sc["flows"] if f["name"].startswith("bg_"))


def test_the_study_background_is_the_studys_generator_with_its_profiles():
    """``background="study"``: the notebook's profiles (light; heavy_4g for s_to_m in S3; heavy_1g
    for eps_to_k in S2), rates scaled with the links each pair loads."""
    src = lambda sc, name: next(f["source"] for f in sc["flows"] if f["name"] == name)  # noqa: E731
    full = icnp26.scenario("S3a", scale=1.0, background="study")
    heavy, light = src(full, "bg_s_to_m_bursts"), src(full, "bg_m_to_f_bursts")
    assert (heavy["rate"], heavy["batch_mean"], heavy["batch_max"], heavy["jitter"]) == (10.0, 5.5, 25, 0.5)
    assert heavy["session"] == {"duration": 4.8, "rate": 19, "poisson_fraction": 0.25}
    assert (light["rate"], light["batch_mean"], light["batch_max"]) == (1.0, 4.0, 15)
    assert light["session"] == {"duration": 4.8, "rate": 10, "poisson_fraction": 0.25}
    assert src(full, "bg_s_to_m_long_0")["rate"] == 58 and full["flows"][-1]["start"] == 5.0
    s2 = src(icnp26.scenario("S2a", scale=1.0, background="study"), "bg_eps_to_k_bursts")
    assert (s2["rate"], s2["batch_mean"], s2["batch_max"], s2["session"]["duration"]) == (3.5, 5.0, 20, 5.0)
    # At scale 0.1 the core is 400 Mbit/s (x 0.1) and the sender access 250 (x 0.25, its floor).
    scaled = icnp26.scenario("S2a", scale=0.1, background="study")
    assert src(scaled, "bg_s_to_m_bursts")["rate"] == pytest.approx(0.1)
    assert src(scaled, "bg_eps_to_k_bursts")["rate"] == pytest.approx(3.5 * 0.25)
    assert src(scaled, "bg_eps_to_k_long_0")["rate"] == pytest.approx(29 * 0.25)
    with pytest.raises(ValueError, match="background must be one of load, study"):
        icnp26.scenario("S1", background="mgen")


def test_study_background_sessions_write_their_messages_for_4_8_s_on_one_connection():
    """Each session is one connection writing 65,000 B messages for 4.8 s: 19 a second, 92 in all
    (PERIODIC), or at exponential gaps (POISSON, a quarter of them). Records are the messages
    delivered by the end of the run (the loaded FIFO holds some back)."""
    r = l4sim.run(icnp26.scenario("S3a", duration=12.0, scale=0.05, background="study"))
    c = r.connections
    per = c[c["flow"] == "bg_s_to_m_bursts"].sort_values("start_s").groupby("id")
    assert (per["size"].max() == 65000).all() and (per["new_connection"].sum() == 1).all()
    # Poisson(5.5) sessions per event, 0.625 events/s (10 x 250/4000) over 11 s: about 38.
    assert 15 <= per.ngroups <= 70, per.ngroups
    span = per["start_s"].agg(lambda x: x.max() - x.min())
    assert (span < 4.8).all()
    periodic = per["start_s"].agg(lambda x: bool((x.diff().dropna() - 1 / 19).abs().max() < 1e-6))
    count = per.size()
    assert (count[periodic] <= 92).all() and (count[periodic] == 92).sum() >= 5
    assert 0.05 < 1 - periodic.mean() < 0.5, periodic.mean()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of four short runs: S1, a FIFO (S2a: no L4S transfer done in 16 s), a priority
    queue (S2b: one done) and path separation (S3b: no L4S at the bottleneck)."""
    from l4sim import icnp26_report

    out = tmp_path_factory.mktemp("icnp")
    res = [icnp26_report.run_one((n, 1, 16.0, 0.05, 0.8)) for n in ("S1", "S2a", "S2b", "S3b")]
    icnp26_report.write_report(res, out, duration=16.0, scale=0.05)
    return out, res


def _figures_drawn(res, tmp_path, monkeypatch) -> dict:
    """The report's figures by file stem, as it draws them."""
    import matplotlib.figure
    import pandas as pd

    from l4sim import icnp26_report

    saved: dict = {}
    save = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "savefig",
        lambda fig, path, **kw: saved.update({Path(path).stem: fig}) or save(fig, path, **kw),
    )
    icnp26_report._figures(res, pd.DataFrame([icnp26_report._summary(r) for r in res]), tmp_path)
    return saved


def _side_by_side(res, tmp_path, monkeypatch) -> dict:
    """The side-by-side figure's panels by title."""
    return {ax.get_title(): ax for ax in _figures_drawn(res, tmp_path, monkeypatch)["side_by_side"].axes}


def _labels_at(ax) -> dict[str, str]:
    """Scenario -> the text drawn in its column."""
    ticks = {round(t, 1): lab.get_text() for t, lab in zip(ax.get_xticks(), ax.get_xticklabels(), strict=True)}
    return {ticks[min(ticks, key=lambda t: abs(t - x.get_position()[0]))]: x.get_text() for x in ax.texts}


def test_side_by_side_marks_a_transfer_none_finished(report, tmp_path, monkeypatch):
    """No L4S 10 MiB transfer finished in S2a: its cell had no bar, which read as 0 s, the
    fastest."""
    _, res = report
    ax = next(a for t, a in _side_by_side(res, tmp_path, monkeypatch).items() if t.startswith("L4S 10 MiB"))
    assert _labels_at(ax) == {"S2a": "none done"}
    assert len(ax.containers[0]) == 3  # S1's, S2b's and S3b's bars


def test_side_by_side_shows_the_bottleneck_sojourn_per_class(report, tmp_path, monkeypatch):
    """One P99 for both classes made the priority queue (S2b: the classic band's 70 ms) look worse
    than the FIFO; its L4S band's P99 is below 1 ms. Path separation (S3b) has no L4S there."""
    import pandas as pd

    out, res = report
    ax = next(a for t, a in _side_by_side(res, tmp_path, monkeypatch).items() if "sojourn P99" in t)
    assert [c.get_label() for c in ax.containers] == ["L4S", "classic"]
    assert ax.get_yscale() == "log" and "(ms" in ax.get_title()
    assert _labels_at(ax) == {"S3b": "no L4S"}
    summ = pd.read_csv(out / "summary.csv").set_index("scenario")
    assert summ.loc["S2b", "btl_l4s_sojourn_p99_ms"] < 1 < 10 < summ.loc["S2b", "btl_classic_sojourn_p99_ms"]
    assert pd.isna(summ.loc["S3b", "btl_l4s_sojourn_p99_ms"])


def test_queues_over_time_keep_dualpi2s_classes_apart_and_an_egress_its_colour(report, tmp_path, monkeypatch):
    """The over-time figure drew one mean per egress, DualPI2's 1 ms L4S queue averaged with its
    classic queue; and the same egress changed colour from one scenario to the next."""
    fig = _figures_drawn(report[1], tmp_path, monkeypatch)["queues"]
    lines = {(ax.get_title().split(":")[0], ln.get_label()): ln.get_color() for ax in fig.axes for ln in ax.lines}
    labels = {lab for _, lab in lines}
    assert {"r-access-6->lan-6 (L4S)", "r-access-6->lan-6 (classic)"} <= labels
    assert "r-access-6->lan-6 (all)" not in labels and any(lab.endswith("(all)") for lab in labels)
    for lab in labels:
        assert len({c for (_, la), c in lines.items() if la == lab}) == 1, lab


def test_summary_has_no_column_blank_in_every_row(report):
    """stream_rtt_p50_ms was blank in every row: the simulator sampled no srtt for a chunks
    source's persistent connection (World::sample read a flow's bulk streams only)."""
    import pandas as pd

    summ = pd.read_csv(report[0] / "summary.csv")
    blank = [c for c in summ.columns if summ[c].isna().all()]
    assert not blank, blank
    assert (summ["stream_rtt_p50_ms"] >= 10).all()


def _table(rep: str, header: str) -> list[list[str]]:
    """The rows (cells) of the report's table whose header row starts with ``header``."""
    lines = rep.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(header))
    rows = []
    for ln in lines[i + 2 :]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split("|")])
    return rows


def test_report_tables_say_what_is_missing_and_read_as_numbers(report):
    """The tables printed `nan` for a transfer none of which finished, raw column names, counts
    as `1.01e+04`, all-zero queue rows, and "1 trials"."""
    import re

    rep = (report[0] / "report.md").read_text()
    assert not re.search(r"\bnan\b|\de[+-]\d|_ms\b|_mbps\b", rep), re.findall(r".{30}(?:nan|e\+\d).{10}", rep)
    assert "4 scenarios x 1 trial x 16 s" in rep and "1 trials" not in rep
    l4s = {r[0]: r for r in _table(rep, "| scenario | call RTT P50 (ms) |")}
    assert l4s["S2a"][-2:] == ["0", "none done"]  # transfers done, mean time
    assert int(l4s["S2b"][-2]) >= 1 and float(l4s["S2b"][-1]) > 0
    # The classic flows negotiate RFC 3168 ECN, as the study's hosts: at S1's DualPI2 they take
    # marks, not losses (the study's iperf3 reports: no retransmission in S1's trial 1).
    classic = {r[0]: r for r in _table(rep, "| scenario | classic long flows, sum (Mbit/s) |")}
    assert classic["S1"][3] == "0", classic["S1"]
    btl = {r[0]: r for r in _table(rep, "| scenario | bottleneck egress |")}
    assert btl["S3b"][2:4] == ["no L4S", "no L4S"]
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", c) for r in btl.values() for c in r[-2:])  # drops, marks
    queues = _table(rep, "| scenario | egress | class | packets |")
    assert queues and all(r[3:6] != ["0", "0", "0"] for r in queues)
    assert ("S3b", "r-core2-4->r-4-3", "l4s") not in {(r[0], r[1], r[2]) for r in queues}
    assert "Left out, no packet crossed them: S3b r-core2-4->r-4-3 l4s." in rep


def test_report_says_what_each_scenario_is_and_shows_from_its_numbers(report):
    """report.md named the scenarios and never said what they show (only docs/icnp26.md did)."""
    rep = (report[0] / "report.md").read_text()
    l4s = {r[0]: r for r in _table(rep, "| scenario | call RTT P50 (ms) |")}
    para = {ln.split("**")[1]: ln for ln in rep.splitlines() if ln.startswith("**S")}
    assert list(para) == ["S1", "S2a", "S2b", "S3b"]
    assert "`r-access-5->r-core1-5`" in para["S2a"] and "FIFO" in para["S2a"]
    # the run's numbers, next to the scenario it is measured against
    assert f"RTT P95 is {l4s['S2a'][2]} ms (S1: {l4s['S1'][2]} ms)" in para["S2a"]
    assert f"RTT P95 is {l4s['S2b'][2]} ms (S2a: {l4s['S2a'][2]} ms)" in para["S2b"]
    assert "1 of 5 finished" in para["S2b"] and "(S2a: 0 of 5 finished)" in para["S2b"]
    assert "none for L4S (no L4S packet crosses it)" in para["S3b"]
    assert "S3a:" not in para["S3b"]  # S3a did not run: nothing to set it against
    # a short run is not the table of docs/icnp26.md
    assert "Not comparable with the table in docs/icnp26.md" in rep and "duration 16 s" in rep


def test_report_at_the_docs_settings_has_no_comparability_warning(report, tmp_path):
    from l4sim import icnp26_report

    icnp26_report.write_report(report[1], tmp_path, duration=120.0, scale=0.1)
    assert "Not comparable" not in (tmp_path / "report.md").read_text()
    # --background study: its table is at the study's rates (scale 1)
    icnp26_report.write_report(report[1], tmp_path, duration=120.0, scale=1.0, heavy_load=None)
    rep = (tmp_path / "report.md").read_text()
    assert "Not comparable" not in rep and "the study's own background process (`--background study`)" in rep
    icnp26_report.write_report(report[1], tmp_path, duration=120.0, scale=0.1, heavy_load=None)
    assert "run's scale 0.1 against the table's scale 1 " in (tmp_path / "report.md").read_text()


def test_comparability_warning_names_the_trials_only_where_they_differ():
    """It said "(8 trials against 8)" for a run with the table's trials."""
    from l4sim import icnp26_report

    full = icnp26_report.FULL
    same = icnp26_report._comparable(int(full["trials"]), 12.0, full["scale"], icnp26.HEAVY_LOAD)[0]
    assert f"({int(full['trials'])} trials, as there)" in same and "trials against" not in same
    fewer = icnp26_report._comparable(1, 12.0, full["scale"], icnp26.HEAVY_LOAD)[0]
    assert f"(1 trial against {full['trials']:g})" in fewer


def test_reproduce_quick_writes_its_report(tmp_path: Path):
    out = tmp_path / "icnp"
    p = subprocess.run(
        [sys.executable, "-m", "l4sim", "reproduce", "icnp26", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    rep = (out / "report.md").read_text()
    for n in icnp26.scenario_names():
        assert f"| {n} |" in rep
    for fig in ("side_by_side", "calls_rtt", "calls_rate", "classic_tput", "classic_rtt", "queues"):
        assert (out / "figures" / f"{fig}.png").stat().st_size > 1000
    assert (out / "summary.csv").read_text().count("\n") == 1 + len(icnp26.scenario_names())


def test_ctrl_c_is_one_line_and_no_report(tmp_path: Path, capsys, monkeypatch):
    """Ctrl-C was a KeyboardInterrupt traceback from the pool (and one per worker)."""
    import concurrent.futures

    class Interrupted:
        def __init__(self, *a, **k):
            assert "initializer" in k  # the workers leave Ctrl-C to the parent

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def map(self, fn, jobs):
            raise KeyboardInterrupt
            yield

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Interrupted)
    out = tmp_path / "o"
    argv = ["reproduce", "icnp26", "--out", str(out), "--scenarios", "S1", "--trials", "2", "--duration", "3"]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err.startswith("interrupted: 0 of 2 runs") and err.count("\n") == 1, err
    assert not (out / "report.md").exists()


def test_sigterm_of_reproduce_icnp26_leaves_no_worker_behind(tmp_path):
    """The workers carried on with their runs after the parent was gone (SIGTERM, or a kill
    -9); they end with it, as study run's do."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(icnp26.__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [
        sys.executable,
        "-m",
        "l4sim",
        "reproduce",
        "icnp26",
        "--out",
        str(tmp_path / "o"),
        "--scenarios",
        "S3a",
        "--trials",
        "2",
        "--duration",
        "60",
        "-j",
        "2",
    ]
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL)
    kids = busy_children(proc.pid, 2)
    assert len(kids) >= 2, kids
    os.kill(proc.pid, signal.SIGTERM)  # the parent alone
    proc.wait()
    assert_all_end(kids)
