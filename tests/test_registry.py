"""One registry of names (the core's enums) and one rule for spelling them."""

import copy
import sqlite3

import pytest

import l4sim
from l4sim import _core
from l4sim import scenario as sc
from l4sim_testdata import MINIMAL, fake_engine  # noqa: F401


def test_python_names_are_the_cores():
    reg = _core.registry()
    assert sc.CC_NAMES == tuple(reg["cc"])
    assert sc.QDISC_KINDS == tuple(reg["qdisc"])
    assert sc.SOURCE_KINDS == tuple(reg["source"]) == ("bulk", "web", "messages", "chunks", "udp", "udp_prague")
    assert sc.ECN_SYSCTL == tuple(reg["ecn_sysctl"])
    assert "dualpi2" in sc.QDISC_KINDS and "bbr3" in sc.CC_NAMES and "tree" in sc.TOPOLOGY_KINDS


def test_every_registered_name_validates_in_a_scenario():
    for cc in sc.CC_NAMES:
        d = copy.deepcopy(MINIMAL)
        d["flows"][0]["cc"] = cc
        l4sim.Scenario.from_dict(d).validate()
    for ecn in sc.ECN_SYSCTL:
        d = copy.deepcopy(MINIMAL)
        d["flows"][0]["tcp"] = {"ecn": ecn}
        l4sim.Scenario.from_dict(d).validate()


@pytest.mark.parametrize(
    "path,value,core",
    [
        (("topology", "bottleneck", "qdisc"), "DualPI2", "dualpi2"),
        (("topology", "bottleneck", "qdisc"), "FQ-CoDel", "fq_codel"),
        (("flows", 0, "cc"), "CUBIC", "cubic"),
        (("flows", 0, "cc"), "BBRv2", "bbr2"),
        (("flows", 0, "tcp"), {"ecn": "AccECN"}, {"ecn": "accecn"}),
    ],
)
def test_scenario_names_are_case_insensitive(path, value, core):
    d = copy.deepcopy(MINIMAL)
    node = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    out = sc.normalize(d)
    node = out
    for k in path[:-1]:
        node = node[k]
    got = node[path[-1]]
    if isinstance(core, str):
        assert got["kind" if "qdisc" in path else "name"] == core
    else:
        assert got == core
    l4sim.Scenario.from_dict(d).validate()


def test_an_unknown_name_still_fails_naming_the_field():
    d = copy.deepcopy(MINIMAL)
    d["flows"][0]["cc"] = "vegas"
    with pytest.raises(l4sim.ScenarioError, match=r"flows\[0\]\.cc\.name.*'vegas'"):
        l4sim.Scenario.from_dict(d).validate()


def test_results_and_store_rows_record_their_backend(tmp_path, fake_engine):
    r = l4sim.run(copy.deepcopy(MINIMAL))
    assert r.backend == "l4sim-sim"
    from l4sim.sweep.store import Store

    with Store(tmp_path, write=True) as st:
        st.record("k", design="d", factors={"aqm": "FIFO"}, seed=1, model_version="f", result=r.raw)
        assert list(st.runs()["backend"]) == ["l4sim-sim"]


def test_a_store_written_before_backends_were_recorded_gains_the_column(tmp_path):
    from l4sim.sweep.store import Store

    with Store(tmp_path, write=True) as st:
        st.record("k", design="d", factors={}, seed=1, model_version="f", error="x")
    db = sqlite3.connect(tmp_path / "index.sqlite")
    db.execute("ALTER TABLE runs DROP COLUMN backend")
    db.commit()
    db.close()
    with Store(tmp_path, write=True) as st:
        assert list(st.runs(status=None)["backend"]) == ["l4sim-sim"]
