"""Property-based fuzzing of scenario validation (Hypothesis).

Mutate the example scenarios and a graph holding every qdisc, source and congestion control
(replace a value anywhere with something odd, delete a key, add an unknown one) and check
`l4sim validate-scenario` always ends cleanly: exit 0, or exit 2 with ONE line on stderr
naming what is wrong, never a traceback. Then run what validates for a few simulated
milliseconds: a scenario that validates must run (no panic, no error), under a memory cap.
"""

from __future__ import annotations

import copy
import json
import math
import re
import resource
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from l4sim import cli
from l4sim_testdata import EVERY_KIND

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))
DOCS = [tomllib.loads(p.read_text()) for p in EXAMPLES] + [EVERY_KIND]

RUST_WORDS = re.compile(r"\b(f32|f64|u8|u16|u32|u64|usize|i32|i64|isize|map|sequence|enum|struct|\w+Spec)\b")
NAMES = ["cubic", "DualPI2", "fq_codel", "bbr3", "tree", "dumbbell", "web", "udp-prague", "accecn", "FIFO", ""]
ODD = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1e9, 1e7, 1e-9, 2**32, 2**64, 0.5]),
    st.sampled_from(NAMES),
    st.text(max_size=12),
    st.booleans(),
    st.none(),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3),
    st.dictionaries(st.sampled_from(["kind", "name", "rate", "x"]), st.sampled_from(NAMES + [1, -1]), max_size=2),
)


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value in a nested dict/list document."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, prefix + (i,))
    return out


@st.composite
def mutated(draw) -> dict:
    doc = copy.deepcopy(draw(st.sampled_from(DOCS)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        ps = paths(doc)
        path = draw(st.sampled_from(ps))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        op = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if op == "replace":
            parent[path[-1]] = draw(ODD)
        elif op == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["colour", "rate", "kind", "flows", "pair", "limit"]))] = draw(ODD)
    return doc


def _json(doc: Any) -> str:
    # JSON has no NaN/Infinity; write them as the JSON extension Python reads back, so the
    # loader (not the test) decides what to say about them
    return json.dumps(doc, allow_nan=True)


@settings(
    max_examples=1000,
    deadline=None,  # no timed tests: the machine is shared
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
@given(doc=mutated())
def test_validate_scenario_exits_0_or_2_with_one_line(doc, tmp_path, capsys):
    f = tmp_path / "fuzz.json"
    f.write_text(_json(doc))
    try:
        rc = cli.main(["validate-scenario", str(f)])
    except SystemExit as e:  # argparse only; never expected here
        rc = e.code
    out = capsys.readouterr()
    assert rc in (0, 2), (rc, out.err, doc)
    if rc == 2:
        lines = out.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), out.err
        assert "Traceback" not in out.err
        # no Rust type words in the message (values the user gave, quoted, may contain anything)
        words = re.sub(r'"[^"]*"|\'[^\']*\'', "", lines[0])
        assert not RUST_WORDS.search(words), lines[0]
    else:
        assert out.out.startswith("ok: ")


@pytest.fixture
def memory_cap():
    """At most 4 GiB more address space while the test runs: a scenario that validates but
    would fill memory ends the run with an allocation failure instead of the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        in_use = int(f.read().split()[0]) * resource.getpagesize()
    cap = in_use + 4 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    yield
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


RUN_FOR = 0.02  # simulated seconds of each fuzzed run


def _number_paths(doc: Any) -> list[tuple]:
    def get(path: tuple) -> Any:
        node = doc
        for k in path:
            node = node[k]
        return node

    return [p for p in paths(doc) if isinstance(get(p), (int, float)) and not isinstance(get(p), bool)]


@st.composite
def rescaled(draw) -> dict:
    """An example with one to three of its numbers scaled by powers of ten or set to 0, 1 or
    2: documents that mostly still validate, with magnitudes their authors never tried."""
    doc = copy.deepcopy(draw(st.sampled_from(DOCS)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(_number_paths(doc)))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        old = parent[path[-1]]
        new = draw(
            st.one_of(
                st.sampled_from([0, 1, 2]), st.sampled_from([1e-6, 1e-3, 0.1, 10, 1e3, 1e6]).map(lambda f, x=old: x * f)
            )
        )
        parent[path[-1]] = round(new) if isinstance(old, int) and abs(new) < 2**63 else new
    return doc


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
@given(doc=st.one_of(rescaled(), mutated()))
def test_a_scenario_that_validates_runs(doc, memory_cap):
    from l4sim import Scenario, ScenarioError, run

    try:
        sc = Scenario.from_dict(doc)
        sc.validate()
    except ScenarioError:
        return
    d = sc.data.get("duration")
    sc.data["duration"] = min(d, RUN_FOR) if isinstance(d, (int, float)) and math.isfinite(d) else RUN_FOR
    try:  # shortened, a flow may start after the end (every_kind's at 0.1 s): not a run to try
        sc.validate()
    except ScenarioError:
        return
    result = run(sc)
    assert len(result.flows) == len(sc.data["flows"])


@pytest.mark.parametrize(
    "change,field",
    [
        (lambda d: d["topology"]["bottleneck"].__setitem__("rate", 1e9), "topology.bottleneck.rate"),
        (lambda d: d.__setitem__("duration", 1e7), "duration"),
        # found by the fuzzer: a rate that rounds to 0 bit/s made the core divide by zero
        (lambda d: d["topology"]["bottleneck"].__setitem__("rate", 1e-9), "topology.bottleneck.rate"),
    ],
)
def test_absurd_magnitudes_are_errors(change, field, tmp_path, capsys):
    doc = copy.deepcopy(next(d for d in DOCS if "bottleneck" in d.get("topology", {})))
    change(doc)
    f = tmp_path / "x.json"
    f.write_text(_json(doc))
    assert cli.main(["validate-scenario", str(f)]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_validates(path, capsys):
    assert cli.main(["validate-scenario", str(path)]) == 0, capsys.readouterr().err


TREE = """
duration = 1
[topology]
kind = "tree"
base_rtt = 10
pairs = 12
[[topology.bottlenecks]]
link = "LINK"
rate = 10
qdisc = "fq_codel"
[[flows]]
name = "a"
cc = "cubic"
pair = PAIR
"""


@pytest.mark.parametrize(
    "link,pair,field",
    [("nosuch", 0, "topology.bottlenecks[0].link"), ("up_agg0", 40, "flows[0]")],
)
def test_tree_errors_are_found_by_validation_not_by_the_run(link, pair, field, tmp_path, capsys):
    f = tmp_path / "t.toml"
    f.write_text(TREE.replace("LINK", link).replace("PAIR", str(pair)))
    assert cli.main(["validate-scenario", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err, err
    assert cli.main(["run", str(f)]) == 2


@pytest.mark.parametrize("missing", ["aqm", "n_bdp", "btl_capacity", "base_rtt"])
def test_a_factors_table_without_a_required_factor_names_it(missing, tmp_path, capsys):
    factors = {"aqm": "FIFO", "n_bdp": 1, "btl_capacity": 10, "base_rtt": 10}
    del factors[missing]
    f = tmp_path / "p.toml"
    f.write_text("duration = 1\n[factors]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in factors.items()))
    assert cli.main(["validate-scenario", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"factors.{missing}" in err, err


def test_a_factor_the_core_rejects_is_named_as_the_study_names_it(tmp_path, capsys):
    f = tmp_path / "p.toml"
    f.write_text('duration = 1\n[factors]\naqm = "FIFO"\nn_bdp = 0.001\nbtl_capacity = 10\nbase_rtt = 10\n')
    assert cli.main(["validate-scenario", str(f)]) == 2
    err = capsys.readouterr().err
    assert "factors.n_bdp" in err and "qdisc.limit" not in err, err
    args = ["run", "--aqm", "FIFO", "--n-bdp", "0.001", "--btl-capacity", "10", "--base-rtt", "10"]
    assert cli.main(args) == 2
    assert capsys.readouterr().err.startswith("error: --n-bdp: ")


def _dotted(path: tuple) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")


def _copy_at(doc: dict, path: tuple) -> tuple[dict, Any]:
    """A deep copy of ``doc`` and, in it, the container that holds ``path``'s last key."""
    bad = copy.deepcopy(doc)
    node = bad
    for k in path[:-1]:
        node = node[k]
    return bad, node


def test_a_value_of_the_wrong_type_anywhere_in_an_example_is_reported_at_its_own_key():
    """Every leaf of every example (in its canonical JSON form), given a value of another
    type, is named exactly, however deep in qdisc trees, sources and size specs it sits."""
    from l4sim import Scenario, ScenarioError

    checked = 0
    for raw in DOCS:
        doc = json.loads(Scenario.from_dict(raw).to_json())
        for path in paths(doc):
            value = _copy_at(doc, path)[1][path[-1]]
            if isinstance(value, (dict, list)):
                continue
            for odd in ["zzz"] if not isinstance(value, str) else [7, ["x"]]:
                bad, node = _copy_at(doc, path)
                node[path[-1]] = odd
                with pytest.raises(ScenarioError) as e:
                    Scenario.from_dict(bad).validate()
                assert e.value.field == _dotted(path), (odd, str(e.value))
                checked += 1
    assert checked > 500


def test_a_missing_key_anywhere_in_an_example_is_reported_at_the_table_that_needs_it():
    """Every key of every example deleted in turn: where the message is "missing field K",
    the field named is the table that lacks K (a qdisc tree's child, an HTB class, a size)."""
    from l4sim import Scenario, ScenarioError

    checked = 0
    for raw in DOCS:
        doc = json.loads(Scenario.from_dict(raw).to_json())
        for path in paths(doc):
            if isinstance(path[-1], int):
                continue
            bad, node = _copy_at(doc, path)
            del node[path[-1]]
            try:
                Scenario.from_dict(bad).validate()
            except ScenarioError as e:
                if e.message == f"missing field {path[-1]}":
                    assert e.field == _dotted(path[:-1]), str(e)
                    checked += 1
    assert checked > 100


STUDY_FILES = sorted((Path(__file__).resolve().parents[1] / "examples" / "studies").glob("*.toml")) + sorted(
    (Path(__file__).resolve().parents[1] / "python" / "l4sim" / "studies" / "presets").glob("*.toml")
)
STUDY_DOCS = [tomllib.loads(p.read_text()) for p in STUDY_FILES]


@st.composite
def mutated_study(draw) -> dict:
    """A study file with one to three values replaced (rescaled numbers, odd values, another
    factor's values) or keys deleted: its design either loads and plans, or is refused."""
    doc = copy.deepcopy(draw(st.sampled_from(STUDY_DOCS)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(paths(doc)))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        old = parent[path[-1]]
        if isinstance(old, (int, float)) and not isinstance(old, bool) and draw(st.booleans()):
            parent[path[-1]] = draw(st.sampled_from([0, 1, -1, old * 1e-3, old * 1e3, old * 1e6]))
        elif draw(st.booleans()):
            parent[path[-1]] = draw(ODD)
        else:
            del parent[path[-1]]
    return doc


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
@given(doc=mutated_study())
def test_a_study_that_loads_plans_only_runs_the_core_accepts(doc):
    """A study's design is checked before anything runs: every run of a design that loads
    builds a scenario the core validates (a bad combination is a StudyError or DesignError
    naming the run, before the store is touched), and each run's packet estimate is a number."""
    from l4sim.studies import cost
    from l4sim.studies.study import Study, StudyError
    from l4sim.sweep.runner import DesignError, plan

    try:
        study = Study.from_dict(doc, name="fuzz")
    except StudyError as e:
        assert "\n" not in str(e).strip() and "Traceback" not in str(e)
        return
    runs = study.runs()
    if len(runs) > 300:  # the big presets: planning every run is the slow part, not the check
        return
    try:
        planned = plan(study, model_version="fuzz")
    except DesignError as e:
        assert "\n" not in str(e).strip()
        return
    assert len(planned) == len(runs)
    assert all(math.isfinite(cost.packets(r.point)) and cost.packets(r.point) >= 0 for r in runs)
