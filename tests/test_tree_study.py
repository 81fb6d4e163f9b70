"""The original multi-bottleneck tree as a study preset: ``tree_level`` puts the bottleneck on
the pair, group-of-four or root link that both flows cross (``l4sim.studies.factors``)."""

from __future__ import annotations

import json

import pytest

from l4sim import _core
from l4sim.studies import presets
from l4sim.studies.factors import TREE_LINKS, run_factors, scenario_from_factors
from l4sim.studies.study import Study, StudyError

POINT = dict(aqm="DualPI2", n_bdp=2, btl_capacity=100, base_rtt=10)


def test_the_tree_preset_sweeps_the_level_for_the_nine_aqms():
    s = presets.get("tree")
    assert s.factors["tree_level"] == ["pair", "agg", "root"]
    assert len(s) == 9 * 3 * s.trials


@pytest.mark.parametrize("level", TREE_LINKS)
def test_each_level_shapes_its_named_link_only_and_both_flows_cross_it(level):
    sc = scenario_from_factors(**POINT, tree_level=level)
    topo = sc["topology"]
    assert topo["kind"] == "tree"
    assert [b["link"] for b in topo["bottlenecks"]] == [TREE_LINKS[level]]
    assert {f["name"]: f["pair"] for f in sc["flows"]} == {"l4s": 0, "classic": 1}
    _core.validate(json.dumps(sc))
    r = run_factors(**POINT, tree_level=level, duration=3)
    assert r.qdiscs["name"].tolist() == [TREE_LINKS[level]]
    link = r.links.set_index("name").loc[TREE_LINKS[level]]
    assert link["utilisation"] > 0.85
    assert (r.flows["goodput_mbps"] > 10).all()
    # The same point on the dumbbell names the level nowhere.
    assert "tree" not in scenario_from_factors(**POINT)["name"]


def test_an_unknown_level_is_one_error_naming_the_factor():
    with pytest.raises(ValueError) as e:
        scenario_from_factors(**POINT, tree_level="core")
    assert "tree_level" in str(e.value) and "core" in str(e.value)
    with pytest.raises(StudyError, match="tree_level"):
        Study.from_dict({"factors": {**POINT, "tree_level": ["leaf"]}})
