"""Scenario loading: TOML / dict / Python objects, conveniences, and error messages that name
the field and the value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import l4sim
from l4sim.cli import main
from l4sim.scenario import Dumbbell, Flow, Scenario, load
from l4sim_testdata import EXAMPLES, minimal, minimal_toml  # noqa: F401 (fixtures)


def _error(data) -> l4sim.ScenarioError:
    with pytest.raises(l4sim.ScenarioError) as ei:
        Scenario.from_dict(data).validate()
    return ei.value


def test_a_minimal_dict_scenario_validates(minimal):
    sc = Scenario.from_dict(minimal).validate()
    assert sc.data["flows"][0]["cc"] == {"name": "reno"}


def test_toml_file_loads_to_the_same_json_as_the_dict(minimal, minimal_toml):
    from_toml = Scenario.from_file(minimal_toml).validate()
    from_dict = Scenario.from_dict(minimal)
    assert from_toml.to_json() == from_dict.to_json()
    assert from_toml.source == str(minimal_toml)


def test_to_json_is_canonical_and_round_trips(minimal):
    a = Scenario.from_dict(minimal)
    b = Scenario.from_dict(json.loads(a.to_json()))
    assert a.to_json() == b.to_json()
    assert " " not in a.to_json()


def test_cc_given_as_a_string_becomes_a_table(minimal):
    minimal["flows"][0]["cc"] = "reno"
    minimal["flows"][0]["receiver"] = {"cc": "reno"}
    sc = Scenario.from_dict(minimal)
    assert sc.data["flows"][0]["cc"] == {"name": "reno"}
    assert sc.data["flows"][0]["receiver"]["cc"] == {"name": "reno"}


def test_qdisc_given_as_a_string_becomes_a_kind(minimal):
    minimal["topology"]["bottleneck"]["qdisc"] = "fq_codel"
    sc = Scenario.from_dict(minimal)
    assert sc.data["topology"]["bottleneck"]["qdisc"] == {"kind": "fq_codel"}


def test_every_choice_value_follows_the_one_name_rule():
    """Case and hyphens do not matter in any value that names a choice, not only CC, qdisc and
    source names (README: "Names are case-insensitive everywhere")."""
    sc = {
        "duration": 1,
        "topology": {
            "kind": "graph",
            "nodes": [{"name": "h1", "kind": "Host"}, {"name": "h2", "kind": "HOST"}, {"name": "r"}],
            "links": [
                {"a": "h1", "b": "r", "rate": 100, "delay_ms": 1},
                {
                    "a": "r",
                    "b": "h2",
                    "rate": 100,
                    "delay_ms": 1,
                    "ab": {"rate": 50, "qdisc": {"kind": "DualPI2", "ecn_mask": "ANY-ECT"}},
                },
            ],
        },
        "flows": [
            {"name": "p", "from": "h1", "to": "h2", "cc": {"name": "prague", "detect_refs": "Scaled"}},
            {"name": "q", "from": "h1", "to": "h2", "cc": {"name": "prague", "variant": "V0.7"}},
            {"name": "b", "from": "h1", "to": "h2", "cc": {"name": "bbr2", "variant": "L4S"}},
            {"name": "c", "from": "h1", "to": "h2", "tcp": {"accecn_impl": "Mainline"}},
            {"name": "u", "from": "h1", "to": "h2", "source": {"kind": "UDP", "rate_mbps": 1, "ecn": "ECT1"}},
            {
                "name": "w",
                "from": "h1",
                "to": "h2",
                "source": {"kind": "web", "rate": 5, "size": {"dist": "Fixed", "bytes": 9}},
            },
        ],
    }
    data = Scenario.from_dict(sc).validate().data
    assert data["topology"]["nodes"][0]["kind"] == "host"
    assert data["topology"]["links"][1]["ab"]["qdisc"]["ecn_mask"] == "any_ect"
    assert data["flows"][2]["cc"]["variant"] == "l4s"
    assert data["flows"][4]["source"]["ecn"] == "ect1"
    assert data["flows"][5]["source"]["size"]["dist"] == "fixed"


@pytest.mark.parametrize(
    "old,new,field,words",
    [
        # a table without its kind or name: say it is missing, not "got None"
        ("kind = \"bfifo\", ", "", "topology.bottleneck.qdisc.kind", "missing"),
        ('cc = "reno"', "cc = { beta = 700 }", "flows.a.cc.name", "missing"),
        # TOML's nan by its field, not the JSON reader's "expected value"
        ("rate = 100", "rate = nan", "topology.bottleneck.rate", "finite number, got nan"),
        # the core's errors also name the flow table as written
        ('cc = "reno"', 'cc = "reno"\nstreams = 0', "flows.a.streams", "at least 1"),
        # a negative count is out of range for the same reason, not for its type's
        ('cc = "reno"', 'cc = "reno"\nstreams = -2', "flows.a.streams", "at least 1, got -2"),
        # a list of the wrong length is the list's error, not its last element's
        ('cc = "reno"', 'cc = "reno"\ntcp = { rmem = [4096, 131072] }', "flows.a.tcp.rmem", "length 3"),
    ],
)
def test_errors_name_what_the_user_wrote(tmp_path, old, new, field, words):
    from l4sim_testdata import MINIMAL_TOML

    f = tmp_path / "s.toml"
    f.write_text(MINIMAL_TOML.replace('[[flows]]\nname = "a"', "[flows.a]").replace(old, new), encoding="utf-8")
    with pytest.raises(l4sim.ScenarioError) as ei:
        load(f).validate()
    assert ei.value.field == field and words in str(ei.value), str(ei.value)


def test_tcp_settings_on_a_udp_flow_are_an_error_not_ignored(minimal):
    flow = {"name": "u", "cc": "prague", "source": {"kind": "udp", "rate_mbps": 1}}
    with pytest.raises(l4sim.ScenarioError) as ei:
        load({**minimal, "flows": [flow]})
    assert ei.value.field == "flows[0].cc" and "TCP flows only" in str(ei.value)


def test_a_typo_in_factors_is_an_unknown_factor_not_a_missing_one():
    with pytest.raises(l4sim.ScenarioError) as ei:
        load({"factors": {"aqm": "FIFO", "n_bdpp": 2, "btl_capacity": 100, "base_rtt": 10}})
    assert ei.value.field == "factors.n_bdpp" and "unknown factor" in str(ei.value)


def test_topology_without_kind_is_a_dumbbell(minimal):
    del minimal["topology"]["kind"]
    assert Scenario.from_dict(minimal).data["topology"]["kind"] == "dumbbell"


def test_tcp_ecn_sysctl_number_becomes_its_name(minimal):
    minimal["flows"][0]["tcp"] = {"ecn": 3}
    minimal["flows"][0]["receiver"] = {"tcp": {"ecn": 1}}
    sc = Scenario.from_dict(minimal).validate()
    assert sc.data["flows"][0]["tcp"]["ecn"] == "accecn"
    assert sc.data["flows"][0]["receiver"]["tcp"]["ecn"] == "classic"


def test_named_flow_tables_become_a_flow_list(minimal):
    minimal["flows"] = {"x": {"cc": "reno"}, "y": {"cc": "reno", "streams": 2}}
    sc = Scenario.from_dict(minimal).validate()
    assert [f["name"] for f in sc.data["flows"]] == ["x", "y"]
    assert sc.data["flows"][1]["streams"] == 2


def test_python_objects_build_the_same_scenario(minimal):
    sc = Scenario.build(
        name="minimal",
        duration=2,
        seed=3,
        topology=Dumbbell(base_rtt=10, rate=100, qdisc={"kind": "bfifo", "limit": 250000}),
        flows=[Flow("a", cc="reno")],
    ).validate()
    assert sc.data["flows"][0]["cc"] == {"name": "reno"}
    assert sc.data["topology"]["bottleneck"]["rate"] == 100
    assert sc.data["flows"][0]["name"] == "a"


def test_load_accepts_paths_dicts_and_scenarios(minimal, minimal_toml):
    assert load(str(minimal_toml)).to_json() == load(minimal_toml).to_json()
    sc = load(minimal)
    assert load(sc) is sc
    with pytest.raises(TypeError):
        load(42)  # type: ignore[arg-type]


def test_overrides_replace_top_level_and_nested_keys(minimal):
    sc = Scenario.from_dict(minimal).with_overrides(duration=5, topology__bottleneck__rate=50, flows__0__streams=3)
    assert sc.data["duration"] == 5
    assert sc.data["topology"]["bottleneck"]["rate"] == 50
    assert sc.data["flows"][0]["streams"] == 3
    assert minimal["duration"] == 2  # the original is untouched


def test_unknown_key_error_names_the_key(minimal):
    minimal["sed"] = 3
    e = _error(minimal)
    assert e.field == "sed"
    assert "sed" in str(e) and "unknown key" in str(e)  # a TOML key, not serde's "field"
    assert "line 1 column" not in str(e)  # no position in the generated JSON


def test_unknown_flow_key_error_names_its_path(minimal):
    minimal["flows"][0]["bogus"] = 1
    e = _error(minimal)
    assert e.field == "flows[0].bogus"


def test_negative_rate_error_names_the_field_and_value(minimal):
    minimal["topology"]["bottleneck"]["rate"] = -5
    e = _error(minimal)
    assert e.field == "topology.bottleneck.rate"
    assert "-5" in e.message
    assert str(e).startswith("topology.bottleneck.rate: ")


def test_buffer_below_one_mtu_is_rejected_with_its_value(minimal):
    minimal["topology"]["bottleneck"]["qdisc"]["limit"] = 1000
    e = _error(minimal)
    assert e.field == "topology.bottleneck.qdisc.limit"
    assert "1000" in e.message


def test_unknown_cc_error_names_the_field_and_value(minimal):
    minimal["flows"][0]["cc"] = "vegas"
    e = _error(minimal)
    assert e.field == "flows[0].cc.name"
    assert "vegas" in e.message


def test_cc_of_the_wrong_shape_is_rejected(minimal):
    minimal["flows"][0]["cc"] = 5
    e = _error(minimal)
    assert e.field == "flows[0].cc"
    assert "5" in e.message


def test_unknown_qdisc_error_names_the_field_and_value(minimal):
    minimal["topology"]["bottleneck"]["qdisc"] = {"kind": "sfq"}
    e = _error(minimal)
    assert e.field == "topology.bottleneck.qdisc.kind"
    assert "sfq" in e.message


def test_unknown_ecn_sysctl_number_is_rejected(minimal):
    minimal["flows"][0]["tcp"] = {"ecn": 9}
    e = _error(minimal)
    assert e.field == "flows[0].tcp.ecn"
    assert "9" in e.message


def test_scenario_error_is_a_value_error_with_field_and_message(minimal):
    minimal["duration"] = 0
    e = _error(minimal)
    assert isinstance(e, ValueError)
    assert e.field == "duration"
    assert str(e) == f"{e.field}: {e.message}"


def test_malformed_toml_error_names_the_file_and_line(tmp_path: Path):
    p = tmp_path / "broken.toml"
    p.write_text("duration = 5\n[topology\nbase_rtt = 10\n", encoding="utf-8")
    with pytest.raises(l4sim.ScenarioError) as ei:
        Scenario.from_file(p)
    assert str(p) in str(ei.value)
    assert "line 2" in str(ei.value)


def test_validation_error_from_a_file_records_the_file(tmp_path: Path):
    p = tmp_path / "neg.toml"
    p.write_text(
        "duration = 2\n[topology]\nbase_rtt = 10\n[topology.bottleneck]\nrate = -1\n"
        'qdisc = { kind = "bfifo", limit = 250000 }\n[[flows]]\nname = "a"\ncc = "reno"\n',
        encoding="utf-8",
    )
    with pytest.raises(l4sim.ScenarioError) as ei:
        Scenario.from_file(p).validate()
    assert ei.value.field == "topology.bottleneck.rate"
    assert ei.value.source == str(p)


def test_missing_file_is_a_scenario_error(tmp_path: Path):
    with pytest.raises(l4sim.ScenarioError) as ei:
        Scenario.from_file(tmp_path / "nope.toml")
    assert "nope.toml" in str(ei.value)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_every_example_scenario_validates(path: Path):
    Scenario.from_file(path).validate()


def test_there_are_example_scenarios():
    names = {p.name for p in EXAMPLES.glob("*.toml")}
    assert {"dumbbell_cubic.toml", "prague_vs_cubic_dualpi2.toml"} <= names


def test_bad_qdisc_parameter_error_names_the_qdisc_parameter(minimal):
    minimal["topology"]["bottleneck"]["qdisc"] = {"kind": "bfifo", "limt": 250000}
    e = _error(minimal)
    assert e.field.startswith("topology.bottleneck.qdisc")
    assert "limt" in e.message


@pytest.mark.parametrize(("kind", "most"), [("bfifo", 1000), ("pfifo", 1000)])
def test_a_fifo_without_a_limit_holds_the_devices_txqueuelen_as_tc_gives_it(minimal, kind, most):
    """tc's fifo_init without options: txqueuelen (1000) packets, for bfifo in bytes times the
    device's psched_mtu (1514), so a Reno flow's slow start fills it to 1000 full packets."""
    minimal["topology"]["bottleneck"]["qdisc"] = kind
    minimal["duration"] = 3
    q = l4sim.run(Scenario.from_dict(minimal)).qdiscs.iloc[0]
    assert q["drops"] > 0 and q["max_backlog_pkts"] == most, q


def test_a_scenario_file_can_name_a_study_point_by_its_factors(tmp_path):
    p = tmp_path / "point.toml"
    p.write_text(
        'name = "pt"\nduration = 5\n[factors]\naqm = "DualPI2"\nn_bdp = 2\nbtl_capacity = 100\n'
        'base_rtt = 10\nrx_classic_ecn = "classic"\ntx_classic_ecn = "classic"\n'
    )
    sc = l4sim.Scenario.from_file(p)
    assert sc.data["name"] == "pt"
    assert sc.data["duration"] == 5
    assert sc.data["topology"]["bottleneck"]["qdisc"]["kind"] == "dualpi2"
    assert [f["name"] for f in sc.data["flows"]] == ["l4s", "classic"]


def test_an_unknown_factor_in_a_scenario_file_names_it(tmp_path):
    p = tmp_path / "point.toml"
    p.write_text('[factors]\naqm = "FIFO"\nn_bdp = 2\nbtl_capacity = 100\nbase_rtt = 10\nbogus = 1\n')
    with pytest.raises(l4sim.ScenarioError) as e:
        l4sim.Scenario.from_file(p)
    assert "factors.bogus" in str(e.value)


_HTB = {
    "kind": "htb",
    "classes": [
        {"name": "gold", "rate_mbps": 30, "dscp": [10], "child": {"kind": "codel", "target_ms": 5}},
        {"name": "rest", "rate_mbps": 70},
    ],
}


@pytest.mark.parametrize(
    ("where", "value", "field"),
    [
        (("topology", "bottleneck", "qdisc", "limit"), "big", "topology.bottleneck.qdisc.limit"),
        (("flows", 0, "source"), {"kind": "chunks", "rate_mbps": 5, "request": "yes"}, "flows[0].source.request"),
        (("flows", 0), {"name": "a", "source": {"kind": "udp", "rate_mbps": "fast"}}, "flows[0].source.rate_mbps"),
        (
            ("topology", "bottleneck", "qdisc"),
            {
                **_HTB,
                "classes": [_HTB["classes"][0] | {"child": {"kind": "codel", "target_ms": "5ms"}}, _HTB["classes"][1]],
            },
            "topology.bottleneck.qdisc.classes[0].child.target_ms",
        ),
        (
            ("topology", "bottleneck", "qdisc"),
            {**_HTB, "classes": [_HTB["classes"][0], _HTB["classes"][1] | {"rate_mbps": "x"}]},
            "topology.bottleneck.qdisc.classes[1].rate_mbps",
        ),
    ],
)
def test_a_bad_value_inside_a_kind_tagged_spec_names_its_key(minimal, where, value, field):
    """Qdiscs, sources and topologies are tagged by ``kind``; an error deep inside one still
    names the key that holds the bad value, not just where the spec starts."""
    node = minimal
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = value
    e = _error(minimal)
    assert e.field == field, e


@pytest.mark.parametrize(
    ("qdisc", "field"),
    [
        (
            {
                "kind": "htb",
                "classes": [
                    _HTB["classes"][0] | {"child": {"kind": "red", "min": 30000, "max": 90000}},
                    _HTB["classes"][1],
                ],
            },
            "topology.bottleneck.qdisc.classes[0].child",
        ),
        (
            {
                "kind": "prio",
                "bands": 2,
                "children": [{"kind": "pfifo", "limit": 5}, {"kind": "red", "min": 1, "max": 2}],
            },
            "topology.bottleneck.qdisc.children[1]",
        ),
    ],
)
def test_a_missing_parameter_of_a_child_qdisc_names_the_child(minimal, qdisc, field):
    minimal["topology"]["bottleneck"]["qdisc"] = qdisc
    e = _error(minimal)
    assert (e.field, e.message) == (field, "missing field limit")


def test_an_htb_class_child_may_be_named_like_any_other_child_qdisc(minimal):
    """``child = "fq_codel"`` in an HTB class, as in a tbf or a prio band; a kind that is not
    a name is an error there too (the core would read a number as the n-th kind)."""
    minimal["topology"]["bottleneck"]["qdisc"] = {
        **_HTB,
        "classes": [_HTB["classes"][0] | {"child": "fq_codel"}, _HTB["classes"][1]],
    }
    sc = l4sim.Scenario.from_dict(minimal).validate()
    assert sc.data["topology"]["bottleneck"]["qdisc"]["classes"][0]["child"] == {"kind": "fq_codel"}
    minimal["topology"]["bottleneck"]["qdisc"]["classes"][0]["child"] = {"kind": 0, "limit": 100000}
    e = _error(minimal)
    assert e.field == "topology.bottleneck.qdisc.classes[0].child.kind", e


def test_a_missing_parameter_of_a_size_distribution_names_the_size(minimal):
    minimal["flows"][0]["source"] = {"kind": "web", "rate": 5, "size": {"dist": "pareto"}}
    e = _error(minimal)
    assert (e.field, e.message) == ("flows[0].source.size", "missing field alpha")


def test_a_bad_entry_deep_in_a_long_trace_is_named_by_its_index(minimal):
    """Traces and CDFs can hold many thousands of entries: the bad one is still found (by
    bisection, so the error comes at once)."""
    trace = [[i * 0.001, 1000] for i in range(50_000)]
    trace[41_234][1] = "big"
    minimal["flows"][0]["source"] = {"kind": "web", "trace": trace}
    e = _error(minimal)
    assert e.field == "flows[0].source.trace[41234][1]", e


@pytest.mark.parametrize(
    ("value", "words"),
    [(300, "got 300, expected a whole number from 0 to 255"), (-1, "got -1, expected a whole number from 0 to 255")],
)
def test_a_whole_number_too_large_for_its_field_says_the_fields_range(minimal, value, words):
    """prio bands = 300 said "got 300, expected a whole number (0 or more)": 300 is one; the
    field (serde's u8) holds 0-255."""
    minimal["topology"]["bottleneck"]["qdisc"] = {"kind": "prio", "bands": value}
    e = _error(minimal)
    assert (e.field, e.message) == ("topology.bottleneck.qdisc.bands", words), e


def _graph() -> dict:
    """h1 - r1 - r2 - h2 and r1 - r3 - h2: two paths from h1 to h2."""
    return {
        "duration": 1,
        "topology": {
            "kind": "graph",
            "nodes": [
                {"name": "h1", "kind": "host"},
                {"name": "h2", "kind": "host"},
                {"name": "r1"},
                {"name": "r2"},
                {"name": "r3"},
            ],
            "links": [
                {"a": "h1", "b": "r1", "rate": 1000},
                {"a": "r1", "b": "r2", "rate": 1000},
                {"a": "r1", "b": "r3", "rate": 1000},
                {"a": "r2", "b": "h2", "rate": 1000},
                {"a": "r3", "b": "h2", "rate": 1000},
            ],
            "routes": [{"dscp": 10, "path": ["h1", "r1", "r3", "h2"]}],
        },
        "flows": [{"name": "a", "from": "h1", "to": "h2", "dscp": 10}],
    }


def test_a_policy_route_through_a_node_twice_is_rejected():
    """A router has one next hop per DSCP and destination, so [h1 r1 r2 r1 r3 h2] cannot be
    followed: it was accepted, and a flow with that DSCP then failed with "no route"."""
    g = _graph()
    g["topology"]["routes"] = [{"dscp": 10, "path": ["h1", "r1", "r2", "r1", "r3", "h2"]}]
    e = _error(g)
    assert e.field == "topology.routes[0].path" and '"r1"' in e.message, e


def test_two_policy_routes_disagreeing_on_a_next_hop_are_rejected():
    """A second route for the same DSCP and destination that sends r1's packets elsewhere was
    silently ignored (the first one wins)."""
    g = _graph()
    g["topology"]["routes"].append({"dscp": 10, "path": ["h1", "r1", "r2", "h2"]})
    e = _error(g)
    assert e.field == "topology.routes[1].path" and '"r1"' in e.message and "routes[0]" in e.message, e
    g["topology"]["routes"][1]["dscp"] = 12  # another DSCP: fine
    Scenario.from_dict(g).validate()
    g["topology"]["routes"][1] = {"dscp": 10, "path": ["r2", "r1", "r3", "h2"]}  # agrees on r1
    Scenario.from_dict(g).validate()


def test_a_policy_route_by_source_names_a_host_and_the_cli_says_which_field_is_wrong(tmp_path, capsys):
    """``routes = [{from, path}]`` (``ip rule from``): the flow from h1 (DSCP 0) follows it; a
    ``from`` that is no host is one clear line naming the field, exit status 2."""
    g = _graph()
    g["flows"][0]["dscp"] = 0
    g["duration"] = 1
    g["topology"]["routes"] = [{"from": "h1", "path": ["h1", "r1", "r3", "h2"]}]
    g["topology"]["links"][2]["ab"] = {"rate": 100, "qdisc": "pfifo"}  # count what crosses r1->r3
    r = l4sim.run(Scenario.from_dict(g))
    assert r.qdiscs.set_index("name").loc["r1->r3", "deq_pkts"] > 100
    g["topology"]["routes"][0]["from"] = "r2"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(g))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "topology.routes[0].from" in err[0] and '"r2"' in err[0], err


def test_a_dscp_in_two_htb_classes_is_rejected(minimal):
    """It went to the last class naming it, silently."""
    q = {
        "kind": "htb",
        "classes": [{"name": "a", "rate_mbps": 30, "dscp": [10, 12]}, {"name": "b", "rate_mbps": 70, "dscp": [12]}],
    }
    minimal["topology"]["bottleneck"]["qdisc"] = q
    e = _error(minimal)
    assert e.field == "topology.bottleneck.qdisc.classes[1].dscp" and "12" in e.message, e


def test_two_htb_classes_of_one_parent_with_one_name_are_rejected(minimal):
    """Their rows in qdisc_classes had the same path: they could not be told apart."""
    q = {"kind": "htb", "classes": [{"name": "a", "rate_mbps": 30, "dscp": [10]}, {"name": "a", "rate_mbps": 70}]}
    minimal["topology"]["bottleneck"]["qdisc"] = q
    e = _error(minimal)
    assert e.field == "topology.bottleneck.qdisc.classes[1].name" and '"a"' in e.message, e
    q["classes"] = [
        {"name": "x", "rate_mbps": 50},
        {"name": "a", "parent": 0, "rate_mbps": 20},
        {"name": "a", "rate_mbps": 50},
    ]  # x/a and a: different paths, fine
    Scenario.from_dict(minimal).validate()
