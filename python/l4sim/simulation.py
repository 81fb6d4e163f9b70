"""A simulation you can step, watch and change while it runs: :class:`Simulation`.

Build it from a scenario like :func:`l4sim.run`, advance it with :meth:`Simulation.run_until`
or :meth:`Simulation.step`, read what happened since the previous read with
:meth:`Simulation.drain` (a :class:`Samples`), and change things between steps. Stepping to the
end and calling :meth:`Simulation.result` gives the same result as ``l4sim.run`` (byte for byte
apart from the wall-clock time).

What a change does (the core's ``World``, ``crates/l4sim-core/src/sim/mod.rs``):

* ``add_flow`` starts a flow now (or at its ``start``); on a dumbbell it gets its own sender
  and receiver hosts. ``remove_flow`` stops its source and closes its connections at once
  (packets in flight are discarded on arrival; its name stays taken).
* ``set_flow(name, rate=, cc=, tcp=, receiver=, base_rtt=)``: ``rate`` is the source's offered
  load (requests/s for ``web``, batches/s for ``messages``, Mbit/s for ``chunks``/``udp``),
  from now on; ``cc``/``tcp``/``receiver`` apply to connections opened from now on;
  ``base_rtt`` (ms) is the flow's access delay for packets sent from now on.
* ``set_link(rate=, qdisc=)`` (default: the dumbbell's ``bottleneck``): a new rate is the HTB
  class rate (its bucket starts full); a new qdisc is ``tc qdisc replace``: the packets queued
  in the old one are dropped (counted as drops of the old qdisc), as Linux does when it
  destroys a qdisc. To change an AQM parameter, give the same kind with the new parameters.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from l4sim import _core
from l4sim._core import ScenarioError
from l4sim.api import RunResult, connections_frame
from l4sim.classes import TRAFFIC_CLASSES, class_probabilities
from l4sim.scenario import Flow, Scenario, ScenarioLike, load, normalize, plain_words, scenario_error

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = ["Samples", "Simulation"]

_QUEUE_COLUMNS = (
    "t", "qdisc", "class", "pkts", "marks", "drops", "mark_prob", "drop_prob", "backlog_pkts", "sojourn_ms", "tx_mbps"
)


def _quantile(cdf: list[float], q: float) -> float:
    """The q-quantile of a 101-point quantile table (0, 0.01, ..., 1)."""
    import numpy as np

    if not cdf:
        return float("nan")
    return float(np.interp(q * (len(cdf) - 1), np.arange(len(cdf)), cdf))


class Samples:
    """What a simulation produced between two :meth:`Simulation.drain` calls.

    ``raw`` is the core's dict; the properties are DataFrames of it.
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    @property
    def now(self) -> float:
        """Simulated time at the drain, s."""
        return float(self.raw["now"])

    @property
    def t(self) -> np.ndarray:
        """Sample times in this batch, s."""
        import numpy as np

        return np.asarray(self.raw["t"], dtype=float)

    @property
    def flows(self) -> pd.DataFrame:
        """Per-flow samples, long format: t, name, kind (source), variable, value
        (tput_mbps, cwnd, srtt_ms; NaN where the flow had nothing to report)."""
        import numpy as np
        import pandas as pd

        t = self.t
        parts = []
        for name, f in self.raw["flows"].items():
            for var in ("tput_mbps", "cwnd", "srtt_ms"):
                v = np.asarray([np.nan if x is None else x for x in f[var]], dtype=float)
                n = min(len(v), len(t))
                parts.append(
                    pd.DataFrame({"t": t[:n], "name": name, "kind": f["kind"], "variable": var, "value": v[:n]})
                )
        cols = {"t": float, "name": object, "kind": object, "variable": object, "value": float}
        if not parts:
            return pd.DataFrame({c: pd.Series(dtype=d) for c, d in cols.items()})
        return pd.concat(parts, ignore_index=True)

    @property
    def queues(self) -> pd.DataFrame:
        """Per qdisc, class and sample: t, qdisc, class, pkts (arrived in the interval, drops
        included), marks, drops, mark_prob (marks/(pkts-drops): of the packets admitted),
        drop_prob (drops/pkts), backlog_pkts, sojourn_ms (mean of the interval) and tx_mbps.
        Class "l4s" and "classic" (ECT(1)/CE or not, as DualPI2 classifies, its ``ecn_mask``
        and ``filters`` included) have the counts only; class "all", the whole qdisc, has the
        counts summed and the backlog, sojourn and rate, which the core keeps per qdisc."""
        import numpy as np
        import pandas as pd

        t = self.t
        rows = []
        for qname, q in self.raw["qdiscs"].items():
            n = min([len(t)] + [len(q["classes"][c]["pkts"]) for c in TRAFFIC_CLASSES])
            counts = {
                cls: {k: np.asarray(q["classes"][cls][k][:n], dtype=float) for k in ("pkts", "marks", "drops")}
                for cls in TRAFFIC_CLASSES
            }
            counts["all"] = {
                k: np.sum([counts[c][k] for c in TRAFFIC_CLASSES], axis=0) for k in ("pkts", "marks", "drops")
            }
            nan = np.full(n, np.nan)
            for cls, c in counts.items():
                whole = cls == "all"
                mark, drop = class_probabilities(c["pkts"], c["marks"], c["drops"])
                rows.append(
                    pd.DataFrame(
                        {
                            "t": t[:n],
                            "qdisc": qname,
                            "class": cls,
                            **c,
                            "mark_prob": mark,
                            "drop_prob": drop,
                            "backlog_pkts": np.asarray(q["backlog_pkts"][:n], dtype=float) if whole else nan,
                            "sojourn_ms": np.asarray(
                                [np.nan if x is None else x for x in q["sojourn_ms"][:n]], dtype=float
                            )
                            if whole
                            else nan,
                            "tx_mbps": np.asarray(q["tx_mbps"][:n], dtype=float) if whole else nan,
                        }
                    )
                )
        if not rows:
            return pd.DataFrame(columns=[*_QUEUE_COLUMNS])
        return pd.concat(rows, ignore_index=True)

    @property
    def delay(self) -> pd.DataFrame:
        """Queue delay of the packets each flow had dequeued at each qdisc in this batch:
        qdisc, flow, n, mean_ms, p50_ms, p90_ms, p99_ms, cdf_ms (101 quantiles)."""
        import pandas as pd

        rows = []
        for qname, q in self.raw["qdiscs"].items():
            for flow, h in q["delay"].items():
                cdf = h["cdf_ms"]
                rows.append(
                    {
                        "qdisc": qname,
                        "flow": flow,
                        "n": h["n"],
                        "mean_ms": h["mean_ms"],
                        "p50_ms": _quantile(cdf, 0.5),
                        "p90_ms": _quantile(cdf, 0.9),
                        "p99_ms": _quantile(cdf, 0.99),
                        "cdf_ms": cdf,
                    }
                )
        return pd.DataFrame(rows, columns=["qdisc", "flow", "n", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "cdf_ms"])

    @property
    def connections(self) -> pd.DataFrame:
        """Transfers completed in this batch (see :attr:`l4sim.RunResult.connections`)."""
        return connections_frame(self.raw["connections"])

    @property
    def udp(self) -> pd.DataFrame:
        """UDP Prague receiver records of this batch: flow, t, rate_mbps, rtt_ms, mark_frac,
        loss_frac."""
        import pandas as pd

        rows = [{"flow": name, **r} for name, recs in self.raw["udp_prague"].items() for r in recs]
        return pd.DataFrame(rows, columns=["flow", "t", "rate_mbps", "rtt_ms", "mark_frac", "loss_frac"]).astype(
            {"rtt_ms": float}
        )

    def __repr__(self) -> str:
        return (
            f"<Samples until {self.now:g} s: {len(self.raw['t'])} samples, "
            f"{len(self.raw['connections'])} completed transfers>"
        )


class Simulation:
    """A simulation built from a scenario (a file, a dict or a :class:`~l4sim.Scenario`;
    keyword overrides as for :func:`l4sim.run`) that can be stepped and changed while it runs.

    >>> sim = l4sim.Simulation("examples/demo_dualpi2.toml")
    >>> sim.step(1.0); s = sim.drain(); s.queues
    >>> sim.set_link(rate=20)                  # the bottleneck drops to 20 Mbit/s
    >>> sim.set_link(qdisc="pie")              # swap the AQM (queued packets are dropped)
    >>> sim.run_until(sim.end); r = sim.result()
    """

    def __init__(self, scenario: ScenarioLike, /, *, keep_history: bool = True, **overrides: Any) -> None:
        self.scenario: Scenario = load(scenario).with_overrides(**overrides).precheck(live=True)
        #: False: each drain also drops what it returned from the simulation's memory, so a
        #: simulation that runs indefinitely (the live demo) stays flat; :meth:`result` then
        #: has whole-run totals but only the time series since the last drain.
        self.keep_history = keep_history
        try:
            self._sim = _core.Simulation(self.scenario.to_json())
        except ScenarioError:
            self.scenario.validate()  # re-raise with the cleaned-up message and the source file
            raise

    @property
    def now(self) -> float:
        """Simulated time, s."""
        return float(self._sim.now)

    @property
    def end(self) -> float:
        """The scenario's end (its duration), s. Running past it is allowed."""
        return float(self._sim.end)

    def run_until(self, t: float) -> Simulation:
        """Process every event up to time ``t`` (s). Releases the GIL while it runs."""
        self._sim.run_until(float(t))
        return self

    def step(self, dt: float) -> Simulation:
        """Advance by ``dt`` seconds, stopping at the scenario's end if it lies within: steps
        of any size reach the end exactly, and the run then equals :func:`l4sim.run`'s. From
        the end on, steps go past it (:meth:`run_until` goes anywhere)."""
        if isinstance(dt, bool) or not isinstance(dt, numbers.Real) or not dt >= 0:
            raise scenario_error("dt", f"must be zero or positive seconds, got {dt!r}")
        now, end = self.now, self.end
        return self.run_until(end if now < end < now + dt else now + dt)

    def run(self) -> RunResult:
        """Run to the scenario's end and return the result."""
        self.run_until(max(self.end, self.now))
        return self.result()

    def drain(self) -> Samples:
        """The samples, queue-delay distributions and completed transfers since the previous
        drain (the core keeps the whole run for :meth:`result` unless ``keep_history`` is off)."""
        return Samples(json.loads(self._sim.drain(not self.keep_history)))

    def add_flow(self, flow: Flow | Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        """Add a flow (a :class:`~l4sim.Flow`, a flow table as in a scenario file, or its
        fields as keywords) starting now, or at its ``start`` if later."""
        table: dict[str, Any] = {}
        if flow is not None:
            table.update(flow.to_dict() if isinstance(flow, Flow) else dict(flow))
        table.update(fields)
        where = f"flows.{table.get('name', '?')}"
        try:
            norm = normalize({"flows": [table]})["flows"][0]
            self._sim.add_flow(json.dumps(norm))
        except ScenarioError as e:
            if e.field == "flow":  # the core could not read the flow: its scenario reader says where
                e = self._unreadable_flow(norm) or e
            field = e.field.replace("flows[0]", where) if e.field.startswith("flows[0]") else f"{where}.{e.field}"
            raise scenario_error(field.rstrip("."), plain_words(e.message)) from None

    def _unreadable_flow(self, flow: dict[str, Any]) -> ScenarioError | None:
        """The error of the scenario reader for ``flow`` in this simulation's scenario, which
        names the key (``flows[0].streams``) where reading the flow alone cannot."""
        try:
            _core.validate(json.dumps({**self.scenario.data, "flows": [flow]}))
        except ScenarioError as e:
            return e if e.field.startswith("flows[0]") else None
        return None

    def remove_flow(self, name: str) -> None:
        """Stop flow ``name``: no new transfers; its connections close at once."""
        self._sim.remove_flow(name)

    def set_flow(self, name: str, **changes: Any) -> None:
        """Change flow ``name`` from now on: ``rate``, ``cc``, ``tcp``, ``receiver``,
        ``base_rtt`` (see the module docs)."""
        where = f"flows.{name}"
        try:
            norm = normalize({"flows": [{"name": name, **changes}]})["flows"][0]
            norm.pop("name")
            self._sim.set_flow(name, json.dumps(norm))
        except ScenarioError as e:
            field = e.field.replace("flows[0]", where) if e.field.startswith("flows[0]") else f"{where}.{e.field}"
            raise scenario_error(field.rstrip("."), plain_words(e.message)) from None

    def set_link(
        self, name: str | None = None, *, rate: float | None = None, qdisc: str | Mapping[str, Any] | None = None
    ) -> None:
        """Change a shaped link (default: the dumbbell's bottleneck): ``rate`` in Mbit/s and/or
        ``qdisc`` (a kind such as ``"pie"`` or a table with parameters; replaces the qdisc)."""
        q = None
        if qdisc is not None:
            q = normalize({"topology": {"bottleneck": {"qdisc": qdisc}}})["topology"]["bottleneck"]["qdisc"]
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, numbers.Real)):
            raise scenario_error("rate", f"must be a rate in Mbit/s, got {rate!r}")
        try:
            self._sim.set_link(name, None if rate is None else float(rate), None if q is None else json.dumps(q))
        except ScenarioError as e:
            raise scenario_error(e.field, plain_words(e.message)) from None

    def result(self) -> RunResult:
        """The result so far: the whole run's, once stepped to the end."""
        return RunResult(json.loads(self._sim.result()), self.scenario)

    def __repr__(self) -> str:
        return f"<Simulation {self.scenario.name!r} at {self.now:g} s of {self.end:g} s>"
