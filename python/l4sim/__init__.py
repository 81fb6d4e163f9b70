"""l4sim: a packet-level simulator of Linux TCP Prague, classic TCP, ECN/L4S and AQMs.

Quick start::

    import l4sim
    r = l4sim.run("examples/prague_vs_cubic_dualpi2.toml", duration=10)
    print(r.summary())
    r.flows            # one row per flow (goodput_mbps, mean_srtt_ms, qdelay_ms, ...)
    r.timeseries("l4s")

    r = l4sim.run_factors(aqm="DualPI2", n_bdp=2, btl_capacity=100, base_rtt=10)

    sim = l4sim.Simulation("examples/demo_dualpi2.toml")   # step, watch, change
    sim.step(1.0); sim.drain().queues; sim.set_link(rate=20); r = sim.run()
"""

from l4sim._core import MODEL_VERSION, ScenarioError, __version__
from l4sim.api import RunResult, run
from l4sim.scenario import Dumbbell, Flow, Scenario, load
from l4sim.simulation import Samples, Simulation
from l4sim.studies.factors import AQMS, FACTOR_NAMES, run_factors, scenario_from_factors

__all__ = [
    "AQMS",
    "FACTOR_NAMES",
    "MODEL_VERSION",
    "Dumbbell",
    "Flow",
    "RunResult",
    "Samples",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "__version__",
    "load",
    "run",
    "run_factors",
    "scenario_from_factors",
]
