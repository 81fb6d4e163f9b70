"""Stateful fuzzing of ``l4sim.Simulation`` (Hypothesis rule-based state machine).

Random sequences of what the live demo and notebooks do between steps: step, add and remove
flows of every source kind and congestion control, change a flow's rate, cc and base RTT,
change a link's rate and replace its qdisc with any kind, drain, read the result. Good
changes must be taken and bad ones refused with a ``ScenarioError`` naming a field, never
another exception or a panic; packets are conserved after every step, and time only moves
forward.
"""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import l4sim
from l4sim.demo.model import AQMS, CCS, PRESETS, DemoError, Session
from l4sim.demo.model import DEFAULT as DEMO_DEFAULT
from l4sim.scenario import CC_NAMES
from l4sim_testdata import EVERY_KIND

DUMBBELL = {
    "name": "fuzz",
    "duration": 2,
    "seed": 1,
    "sample_interval": 0.01,
    "topology": {"base_rtt": 10, "bottleneck": {"rate": 40, "qdisc": "dualpi2"}},
    "flows": [{"name": "a", "cc": "prague", "tcp": {"ecn": "accecn"}}, {"name": "b", "cc": "cubic"}],
}

# A few shapes of each source kind, and some that are wrong.
SOURCES = [
    None,
    {"kind": "bulk"},
    {"kind": "web", "rate": 40, "size": {"dist": "pareto", "alpha": 1.2, "min": 1000, "max": 200000}},
    {"kind": "web", "rate": 5, "persistent": True},
    {"kind": "messages", "rate": 10, "batch_min": 1, "batch_max": 5, "message_size": 30000},
    {"kind": "messages", "rate": 200, "batch_min": 1, "batch_max": 8, "message_size": 300, "persistent": True},
    {"kind": "messages", "rate": 20, "message_size": 5000, "session": {"duration": 0.3, "rate": 50, "poisson_fraction": 1}},
    {
        "kind": "messages",
        "rate": 5,
        "batch_mean": 3,
        "batch_max": 6,
        "jitter": 0.2,
        "message_size": 8000,
        "session": {"duration": 0.2, "rate": 20, "poisson_fraction": 0.25},
    },
    {"kind": "chunks", "rate_mbps": 4, "period": 0.1},
    {"kind": "udp", "rate_mbps": 5, "ecn": "ect1"},
    {"kind": "udp", "rate_mbps": 50, "on": 0.02, "off": 0.03},
    {"kind": "udp_prague", "max_rate_mbps": 10},
    {"kind": "udp", "rate_mbps": -1},  # bad
    {"kind": "web", "rate": "fast"},  # bad
    # bad: a session opens its own connection
    {"kind": "messages", "rate": 1, "message_size": 1, "persistent": True, "session": {"duration": 1, "rate": 5}},
    {"kind": "messages", "rate": 5, "message_size": 1000, "jitter": -1},  # bad
    {"kind": "nosuch"},  # bad
]

# Socket settings of an added flow: those that decide how its writes become segments (Nagle,
# autocorking), ECN, and a wrong one.
TCPS = [None, {"nodelay": True}, {"autocorking": False}, {"ecn": "accecn"}, {"nodelay": "yes"}]

# Every qdisc kind with parameters it accepts, a few bad ones, and tc's names.
QDISCS = [
    "pfifo",
    "fq_codel",
    "dualpi2",
    "pie",
    "codel",
    "fq",
    "red",
    {"kind": "bfifo", "limit": 30000},
    {"kind": "pfifo", "limit": 5},
    {"kind": "pie", "target_ms": 5, "ecn": True, "bytemode": True},
    {"kind": "red", "limit": 400000, "min": 30000, "max": 90000, "probability": 0.1, "ecn": True},
    {"kind": "tbf", "rate_mbps": 10, "burst": 12800, "limit": 100000},
    {
        "kind": "netem",
        "delay_ms": 2,
        "jitter_ms": 1,
        "loss": 0.01,
        "duplicate": 0.01,
        "slot_min_ms": 0.1,
        "slot_max_ms": 0.5,
    },
    {"kind": "wifi", "phy_rate_mbps": 30, "child": "fq_codel"},
    {"kind": "prio", "filters": [{"dscp": 10, "band": 0}], "children": ["dualpi2", "pfifo", "codel"]},
    {
        "kind": "htb",
        "classes": [{"name": "x", "rate_mbps": 10, "dscp": [10], "child": "pie"}, {"name": "y", "rate_mbps": 30}],
    },
    {"kind": "bfifo", "limit": 10},  # bad: below one MTU
    {"kind": "pie", "target_ms": -1},  # bad
    "sfq",  # bad
]


def no_panic(call):
    """``call()``, with a core panic (pyo3's PanicException, a BaseException Hypothesis would
    not shrink) turned into a failure Hypothesis reports with the steps that led to it."""
    try:
        return call()
    except BaseException as e:
        if type(e).__name__ == "PanicException":
            raise AssertionError(f"core panic: {e}") from None
        raise


RATES = st.sampled_from([0.5, 5.0, 40.0, 200.0, 1000.0, 0.0, -3.0, float("nan")])


class SimulationMachine(RuleBasedStateMachine):
    @initialize(graph=st.booleans())
    def start(self, graph: bool) -> None:
        doc = copy.deepcopy(EVERY_KIND if graph else DUMBBELL)
        doc["duration"] = 2
        self.links = ["core", "h0->r1", "r1->h3"] if graph else [None]
        self.hosts = [n["name"] for n in doc["topology"]["nodes"] if n.get("kind") == "host"] if graph else []
        self.sim = l4sim.Simulation(doc)
        self.names = [f["name"] for f in doc["flows"]]
        self.added = 0
        self.last_now = 0.0

    def _refused_or_taken(self, change) -> bool:
        try:
            no_panic(change)
        except l4sim.ScenarioError as e:
            assert str(e) and "\n" not in str(e).strip(), str(e)
            return False
        return True

    @rule(dt=st.sampled_from([0.0, 0.001, 0.01, 0.05, 0.2]))
    def step(self, dt: float) -> None:
        no_panic(lambda: self.sim.step(dt))

    @rule(cc=st.sampled_from(CC_NAMES), source=st.sampled_from(SOURCES), tcp=st.sampled_from(TCPS), ends=st.data())
    def add_flow(self, cc: str, source, tcp, ends) -> None:
        name = f"n{self.added}"
        flow = {"name": name, "cc": cc}
        if source is not None:
            flow["source"] = source
        if tcp is not None:
            flow["tcp"] = tcp
        if self.hosts:
            a, b = ends.draw(st.sampled_from(self.hosts)), ends.draw(st.sampled_from(self.hosts))
            flow |= {"from": a, "to": b}
        if self._refused_or_taken(lambda: self.sim.add_flow(flow)):
            self.names.append(name)
            self.added += 1

    @precondition(lambda self: self.names)
    @rule(which=st.data())
    def remove_flow(self, which) -> None:
        name = which.draw(st.sampled_from(self.names))
        self._refused_or_taken(lambda: self.sim.remove_flow(name))

    @rule()
    def remove_unknown_flow(self) -> None:
        assert not self._refused_or_taken(lambda: self.sim.remove_flow("no such flow"))

    @precondition(lambda self: self.names)
    @rule(
        which=st.data(), rate=RATES, cc=st.sampled_from([None, *CC_NAMES]), base_rtt=st.sampled_from([None, 1, 50, -5])
    )
    def set_flow(self, which, rate, cc, base_rtt) -> None:
        name = which.draw(st.sampled_from(self.names))
        changes = {k: v for k, v in {"rate": rate, "cc": cc, "base_rtt": base_rtt}.items() if v is not None}
        self._refused_or_taken(lambda: self.sim.set_flow(name, **changes))

    @rule(which=st.data(), rate=st.one_of(st.none(), RATES), qdisc=st.sampled_from([None, *QDISCS]))
    def set_link(self, which, rate, qdisc) -> None:
        link = which.draw(st.sampled_from([*self.links, "no such link"]))
        self._refused_or_taken(lambda: self.sim.set_link(link, rate=rate, qdisc=qdisc))

    @rule()
    def drain(self) -> None:
        s = no_panic(self.sim.drain)
        assert all(t <= self.sim.now + 1e-9 for t in s.t)

    @invariant()
    def conserved_and_forward(self) -> None:
        if not hasattr(self, "sim"):
            return
        assert self.sim.now >= self.last_now
        self.last_now = self.sim.now
        assert no_panic(self.sim.result).conservation_ok


SimulationMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,  # no timed tests: the machine is shared
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_simulation_survives_any_sequence_of_changes = SimulationMachine.TestCase


class DemoSessionMachine(RuleBasedStateMachine):
    """The live demo's controls in any order, with any value the page (or a hand-written
    WebSocket message) could send: a value is taken, clamped with a note, or refused with a
    DemoError; every frame is strict JSON (the page's JSON.parse takes no NaN)."""

    @initialize(preset=st.sampled_from([None, *PRESETS]))
    def start(self, preset) -> None:
        self.session = Session(PRESETS[preset][1] if preset else None)

    @rule(
        key=st.sampled_from([f"{g}.{k}" for g, ks in DEMO_DEFAULT.items() for k in ks] + ["link.nope", "C.cc"]),
        value=st.one_of(
            st.sampled_from([*AQMS, *CCS]),
            st.sampled_from([0, 1, 3, 10, 100, 1e6, -5]),
            st.floats(allow_nan=True, allow_infinity=True),
            st.text(max_size=4),
            st.none(),
        ),
    )
    def set(self, key, value) -> None:
        try:
            note = no_panic(lambda: self.session.set(key, value))
        except DemoError as e:
            assert "\n" not in str(e)
            return
        assert note is None or "\n" not in note

    @rule(dt=st.sampled_from([0.1, 0.5, 1.0]))
    def tick(self, dt) -> None:
        frame = no_panic(lambda: self.session.tick(dt))
        json.dumps(frame, allow_nan=False)

    @invariant()
    def conserved(self) -> None:
        if hasattr(self, "session"):
            assert no_panic(self.session.sim.result).conservation_ok


DemoSessionMachine.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_the_demo_survives_any_sequence_of_controls = DemoSessionMachine.TestCase
