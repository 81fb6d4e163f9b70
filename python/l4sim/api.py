"""Running scenarios from Python: ``l4sim.run`` and the :class:`RunResult` it returns.

The core returns its result as JSON (``crates/l4sim-core/src/metrics/results.rs``); this
module turns each table into a pandas DataFrame:

* ``flows``, ``qdiscs``, ``links``: one row per flow / qdisc / link, columns = result fields;
  the per-reason and per-codepoint dicts of a qdisc are flattened into columns
  (``drops_overlimit``, ``drops_ect1``, ``marks_ect1``, ...), its ``extra`` entries too;
  ``qdisc_classes`` the same for the classes of classful qdiscs (``tc -s`` per class);
* ``series_flows()`` / ``series_qdiscs()``: long format (``t``, ``name``, ``variable``,
  ``value``); ``timeseries(flow=...)`` a wide frame indexed by ``t``.

Every table and column, its unit and what it counts: docs/results.md.

numpy and pandas are imported by the tables that need them, not by ``import l4sim``: running a
scenario and printing its summary stay free of them (start-up time of ``l4sim run``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from l4sim import _core
from l4sim._core import ScenarioError
from l4sim.classes import TRAFFIC_CLASSES
from l4sim.scenario import Scenario, ScenarioLike, load

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = ["BACKEND", "SIZE_BINS", "RunResult", "connections_frame", "jain", "run"]

#: Transfer-size bins of the completion-time summaries (bytes; lower bound inclusive), as in
#: the IETF L4S evaluations' FCT plots.
SIZE_BINS = (
    (0, 10_000, "<10 KB"),
    (10_000, 100_000, "10-100 KB"),
    (100_000, 1_000_000, "100 KB-1 MB"),
    (1_000_000, float("inf"), ">=1 MB"),
)
_CONN_COLUMNS = (
    "flow",
    "id",
    "size",
    "start_s",
    "fct_s",
    "fct_no_handshake_s",
    "retrans",
    "new_connection",
    "requested",
)


def connections_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Completed transfers (the core's ``ConnRecord``s) as a DataFrame, one row each."""
    import pandas as pd

    df = pd.DataFrame(records, columns=list(_CONN_COLUMNS))
    # Results of models before 0.4.0 have no ``requested``: none was.
    df["requested"] = df["requested"].astype("boolean").fillna(False)
    return df.astype(
        {
            "size": "int64",
            "id": "int64",
            "retrans": "int64",
            "start_s": float,
            "fct_s": float,
            "fct_no_handshake_s": float,
            "new_connection": bool,
            "requested": bool,
        }
    )


def _size_bin(size: pd.Series) -> pd.Series:
    import pandas as pd

    labels = [b[2] for b in SIZE_BINS]
    edges = [b[0] for b in SIZE_BINS] + [float("inf")]
    return pd.cut(size, bins=edges, labels=labels, right=False)


_QDISC_DICTS = (("drops_by_reason", "drops"), ("drops_by_ecn", "drops"), ("marks_by_ecn", "marks"))
_FLOW_SERIES = ("tput_mbps", "cwnd", "srtt_ms", "pacing_mbps", "ce_fed_back")
_QDISC_SERIES = (
    ("backlog_pkts", "backlog_bytes", "sojourn_ms", "drops", "marks", "tx_mbps")
    + tuple(f"{c}_{k}" for c in TRAFFIC_CLASSES for k in ("pkts", "marks", "drops"))
)


# Float fields of the result tables: the core writes NaN as null, so a column of nulls must
# still come out as float (NaN), not object.
_FLOW_FLOATS = ("goodput_mbps", "mean_srtt_ms", "qdelay_ms", "base_rtt_ms", "start_s", "completion_s")
_QDISC_FLOATS = ("sojourn_mean_ms", "sojourn_p50_ms", "sojourn_p90_ms", "sojourn_p99_ms", "sojourn_p999_ms")
_LINK_FLOATS = ("rate_mbps", "utilisation")


def _frame(rows: list[dict[str, Any]], floats: tuple[str, ...]) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(rows)
    for col in floats:
        if col in df.columns:
            df[col] = df[col].astype(float)
    return df


def _num(v: Any) -> float:
    """A number from the result JSON; the core writes NaN (e.g. no srtt sample yet) as null."""
    return float("nan") if v is None else float(v)


def _width(texts: list[str], least: int) -> int:
    """A text column's width: ``least`` (the header's), or its longest entry's."""
    return max([least, *map(len, texts)])


def _flatten_qdisc(q: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    nested = {k for k, _ in _QDISC_DICTS} | {"extra"}
    for k, v in q.items():
        if k not in nested:
            row[k] = v
    for key, prefix in _QDISC_DICTS:
        for sub, v in (q.get(key) or {}).items():
            row[f"{prefix}_{sub}"] = v
    for sub, v in (q.get("extra") or {}).items():
        row[sub if sub not in row else f"extra_{sub}"] = v
    return row


def _long(t: list[float], items: list[Mapping[str, Any]], fixed: tuple[str, ...]) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    parts = []
    tt = np.asarray(t, dtype=float)
    for item in items:
        columns: dict[str, Any] = {k: item.get(k) for k in fixed if item.get(k) is not None}
        columns.update(item.get("extra") or {})
        for variable, values in columns.items():
            v = np.asarray(values, dtype=float)
            n = min(len(v), len(tt))
            parts.append(pd.DataFrame({"t": tt[:n], "name": item["name"], "variable": variable, "value": v[:n]}))
    if not parts:
        return pd.DataFrame(
            {
                "t": pd.Series(dtype=float),
                "name": pd.Series(dtype=object),
                "variable": pd.Series(dtype=object),
                "value": pd.Series(dtype=float),
            }
        )
    return pd.concat(parts, ignore_index=True)


#: The backend that produces results in this package: the packet-level simulator (a
#: real-kernel backend would name itself differently; stores and results record it).
BACKEND = "l4sim-sim"


def jain(xs: Sequence[float]) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)`` of the values (1: all equal); NaN for
    no values or all zero. The one definition: summaries, flent's fairness series, the studies."""
    x = [float(v) for v in xs]
    s2 = math.fsum(v * v for v in x)
    return math.fsum(x) ** 2 / (len(x) * s2) if x and s2 > 0 else float("nan")


class RunResult:
    """The result of one run. ``raw`` is the core's result as a dict."""

    def __init__(self, raw: dict[str, Any], scenario: Scenario | None = None) -> None:
        self.raw = raw
        self.scenario = scenario

    # scalars

    @property
    def name(self) -> str:
        return str(self.raw.get("name", ""))

    @property
    def seed(self) -> int:
        return int(self.raw.get("seed", 0))

    @property
    def model_version(self) -> str:
        return str(self.raw.get("model_version", ""))

    @property
    def backend(self) -> str:
        """Which backend produced this result (``"l4sim-sim"``: the simulator)."""
        return str(self.raw.get("backend") or BACKEND)

    @property
    def sim_seconds(self) -> float:
        return float(self.raw.get("sim_seconds", 0.0))

    @property
    def wall_seconds(self) -> float:
        return float(self.raw.get("wall_seconds", 0.0))

    @property
    def events(self) -> int:
        return int(self.raw.get("events", 0))

    @property
    def bottleneck_pkts(self) -> int:
        return int(self.raw.get("bottleneck_pkts", 0))

    @property
    def jain_index(self) -> float:
        return _num(self.raw.get("jain_index", 0.0))

    @property
    def conservation_ok(self) -> bool:
        return bool(self.raw.get("conservation_ok", False))

    # tables

    @property
    def flows(self) -> pd.DataFrame:
        """One row per flow; columns are the ``FlowResult`` fields (units and what each counts:
        docs/results.md). ``start_s`` is absolute, ``completion_s`` a duration until the sender has
        the last byte acknowledged; ``rwnd_limited`` is a count, not microseconds."""
        df = _frame(self.raw.get("flows", []), _FLOW_FLOATS)
        if self.scenario is not None and not df.empty:
            kinds = self._source_kinds()
            df.insert(1, "source", df["name"].map(kinds).fillna("bulk"))
        return df

    @property
    def qdiscs(self) -> pd.DataFrame:
        """One row per qdisc; drop/mark dicts flattened (``drops_overlimit``, ``marks_ect1``)."""
        return _frame([_flatten_qdisc(q) for q in self.raw.get("qdiscs", [])], _QDISC_FLOATS)

    @property
    def qdisc_classes(self) -> pd.DataFrame:
        """The classes of classful qdiscs (prio bands, a tbf's or wifi's child) with their own
        counters, as ``tc -s`` lists them: one row each, columns as ``qdiscs``, named
        ``PORT/band0``, ``PORT/band0/child``, ...; empty without a classful qdisc."""
        return _frame([_flatten_qdisc(q) for q in self.raw.get("qdisc_classes", [])], _QDISC_FLOATS)

    @property
    def links(self) -> pd.DataFrame:
        """One row per shaped link (``name``, ``rate_mbps``, ``utilisation``, ...)."""
        return _frame(self.raw.get("links", []), _LINK_FLOATS)

    @property
    def connections(self) -> pd.DataFrame:
        """One row per completed transfer of a ``web``/``messages``/``chunks`` source: flow,
        id, size (bytes), start_s, fct_s (from the client's request for a ``web`` transfer,
        otherwise from the SYN or the write on a persistent connection, until the receiver
        has the last byte), fct_no_handshake_s, retrans, new_connection, requested (a ``web``
        transfer: the client asked for it); plus ideal_fct_s and slowdown (see
        :meth:`fct_summary`)."""
        import numpy as np
        import pandas as pd

        df = connections_frame(self.raw.get("connections", []))
        if df.empty:
            return df.assign(ideal_fct_s=pd.Series(dtype=float), slowdown=pd.Series(dtype=float))
        base = {f["name"]: _num(f.get("base_rtt_ms")) / 1e3 for f in self.raw.get("flows", [])}
        rates = [_num(link.get("rate_mbps")) for link in self.raw.get("links", [])]
        rate = min(rates) * 1e6 if rates else float("inf")
        rtt = df["flow"].map(base).astype(float)
        # Ideal: alone on the path with no window limit: the request's one-way trip (web),
        # the handshake (one base RTT, new connections only), the last byte's one-way trip
        # and the size at the bottleneck rate.
        trips = 0.5 + np.where(df["new_connection"], 1.0, 0.0) + np.where(df["requested"], 0.5, 0.0)
        ideal = rtt * trips + df["size"] * 8 / rate
        return df.assign(ideal_fct_s=ideal, slowdown=df["fct_s"] / ideal)

    def fct_summary(self, by: str | tuple[str, ...] = ("flow", "size_bin")) -> pd.DataFrame:
        """Completion-time summary per flow (source) and size bin (:data:`SIZE_BINS`): count,
        mean size, median and P99 of fct_ms, median and P99 of the slowdown (FCT / ideal FCT:
        the handshake, half a base RTT and the size at the bottleneck rate)."""
        df = self.connections
        keys = [by] if isinstance(by, str) else list(by)
        df = df.assign(size_bin=_size_bin(df["size"]), fct_ms=df["fct_s"] * 1e3)
        g = df.groupby(keys, observed=True)
        out = g.agg(
            count=("fct_ms", "size"),
            mean_size=("size", "mean"),
            fct_p50_ms=("fct_ms", "median"),
            fct_p99_ms=("fct_ms", lambda x: x.quantile(0.99)),
            slowdown_p50=("slowdown", "median"),
            slowdown_p99=("slowdown", lambda x: x.quantile(0.99)),
        )
        return out.reset_index()

    @property
    def classes(self) -> pd.DataFrame:
        """Queue delay and marking per qdisc and traffic class (``kind == "class"``: ``l4s`` =
        ECT(1)/CE, ``classic`` = the rest, as DualPI2 classifies (its ``ecn_mask`` and
        ``filters`` where set); for a single queue the codepoint split) and per flow
        (``kind == "flow"``): enq/deq packets, marks, drops, mark_prob, drop_prob, sojourn
        mean/p50/p90/p99/p999 (ms) and cdf_ms (101 quantiles)."""
        return _frame(self.raw.get("classes", []), _QDISC_FLOATS)

    @property
    def udp(self) -> pd.DataFrame:
        """UDP Prague receiver records (one per 100 ms): flow, t, rate_mbps, rtt_ms,
        mark_frac, loss_frac."""
        import pandas as pd

        rows = [{"flow": k, **r} for k, recs in (self.raw.get("udp_records") or {}).items() for r in recs]
        cols = ["flow", "t", "rate_mbps", "rtt_ms", "mark_frac", "loss_frac"]
        return pd.DataFrame(rows, columns=cols).astype({"rtt_ms": float})

    @property
    def rtt_samples(self) -> dict[str, np.ndarray]:
        """Per flow: the once-per-second srtt samples (ms) of its first stream (of a persistent
        source: its connection; of a UDP Prague call: its sender)."""
        import numpy as np

        return {k: np.asarray(v, dtype=float) for k, v in (self.raw.get("rtt_samples") or {}).items()}

    def series_flows(self) -> pd.DataFrame:
        """Flow time series in long format: ``t``, ``name``, ``variable``, ``value``.
        ``tput_mbps`` is per interval and sums all streams; ``cwnd``, ``srtt_ms``, ``pacing_mbps``
        are the first stream's at the sample, ``ce_fed_back`` cumulative; NaN from the flow's
        stop on (docs/results.md)."""
        s = self.raw.get("series") or {}
        return _long(s.get("t", []), s.get("flows", []), _FLOW_SERIES)

    def series_qdiscs(self) -> pd.DataFrame:
        """Qdisc time series in long format: ``t``, ``name``, ``variable``, ``value``.
        ``backlog_*`` at the sample, ``sojourn_ms`` and ``tx_mbps`` the interval's mean,
        ``drops`` and ``marks`` cumulative, the class counts ``l4s_pkts`` (arrived),
        ``l4s_marks``, ``l4s_drops``, ``classic_*`` per interval (docs/results.md)."""
        s = self.raw.get("series") or {}
        qdiscs: list[Mapping[str, Any]] = [
            {**q, **{f"{c}_{k}": v for c in TRAFFIC_CLASSES for k, v in (q.get(c) or {}).items()}}
            for q in s.get("qdiscs", [])
        ]
        return _long(s.get("t", []), qdiscs, _QDISC_SERIES)

    def timeseries(self, flow: str | None = None, *, qdisc: str | None = None) -> pd.DataFrame:
        """Wide time series indexed by ``t``: one column per variable of ``flow`` (or of
        ``qdisc``); with neither, every flow, columns ``(name, variable)``."""
        if flow is not None and qdisc is not None:
            raise ValueError("give flow or qdisc, not both")
        long = self.series_qdiscs() if qdisc is not None else self.series_flows()
        which = qdisc if qdisc is not None else flow
        if which is not None:
            sel = long[long["name"] == which]
            if sel.empty:
                names = sorted(set(long["name"]))
                kind = "qdisc" if qdisc is not None else "flow"
                if not names:  # no sample at all: say why instead of listing nothing
                    sc = self.scenario
                    why = (
                        f": its sample_interval {sc.sample_interval:g} s is longer than the run ({sc.duration:g} s)"
                        if sc is not None and sc.sample_interval > sc.duration
                        else ""
                    )
                    raise KeyError(f"the run recorded no time series{why}")
                raise KeyError(f"no {kind} named {which!r}; have {names}")
            wide = sel.pivot(index="t", columns="variable", values="value")
            wide.columns.name = None
        else:
            wide = long.pivot(index="t", columns=["name", "variable"], values="value")
        return wide

    # text

    def summary(self) -> str:
        """A human-readable table of the flows, links and run totals."""
        lines = [f"{self.name or 'run'} (seed {self.seed}, model {self.model_version})"]
        flows = self.raw.get("flows", [])
        # the text columns as wide as their longest entry (udp_prague, a long flow name)
        wn, wc, we = (
            _width([str(f.get(k, "")) for f in flows], w) for k, w in (("name", 12), ("cc", 8), ("ecn_mode", 10))
        )
        header = (
            f"{'flow':<{wn}} {'cc':<{wc}} {'ecn mode':<{we}} {'goodput Mbit/s':>14} {'srtt ms':>9} "
            f"{'qdelay ms':>9} {'retrans':>8}"
        )
        lines.append(header)
        lines.append("-" * len(header))
        for f in flows:
            srtt, qdelay = _num(f.get("mean_srtt_ms")), _num(f.get("qdelay_ms"))
            lines.append(
                f"{f.get('name', ''):<{wn}} {f.get('cc', ''):<{wc}} {f.get('ecn_mode', ''):<{we}} "
                f"{_num(f.get('goodput_mbps')):>14.2f} {srtt:>9.2f} "
                f"{qdelay:>9.2f} {int(f.get('retrans') or 0):>8d}"
            )
        for link in self.raw.get("links", []):
            lines.append(
                f"link {link.get('name', '')}: {_num(link.get('rate_mbps')):g} Mbit/s, "
                f"utilisation {100 * _num(link.get('utilisation')):.1f} %"
            )
        for q in self.raw.get("qdiscs", []):
            direct = int((q.get("extra") or {}).get("direct_packets_stat") or 0)
            if direct > 0:  # an htb without `default`: easy to miss, and it defeats the shaping
                lines.append(
                    f"{q.get('name', '')}: {direct} packets matched no htb class and went out unshaped "
                    "(the direct queue: give the htb a `default` class)"
                )
        lines.append(f"Jain index {self.jain_index:.3f}{self._bulk_jain_note()}")
        lines += self._class_lines() + self._qdisc_class_lines() + self._fct_lines()
        speed = self.sim_seconds / self.wall_seconds if self.wall_seconds > 0 else float("inf")
        lines.append(
            f"simulated {self.sim_seconds:g} s in {self.wall_seconds:.2f} s wall ({speed:.1f}x real time), "
            f"{self.bottleneck_pkts} bottleneck packets, {self.events} events"
        )
        return "\n".join(lines)

    def _source_kinds(self) -> dict[str, str]:
        """Each scenario flow's source kind ("bulk" when it gives none); needs the scenario."""
        assert self.scenario is not None
        return {f["name"]: (f.get("source") or {}).get("kind", "bulk") for f in self.scenario.data["flows"]}

    def _bulk_jain_note(self) -> str:
        """Jain's index of the bulk flows alone, when there are other sources too: a web or UDP
        source's goodput is what it asks for, so the index over every flow (the core's) reads
        two equal bulk flows beside light web traffic as unfair."""
        if self.scenario is None:
            return ""
        kinds = self._source_kinds()
        flows = self.raw.get("flows", [])
        bulk = [_num(f.get("goodput_mbps")) for f in flows if kinds.get(f.get("name"), "bulk") == "bulk"]
        j = jain(bulk) if 2 <= len(bulk) < len(flows) else float("nan")
        return f" over every flow, {j:.3f} over the {len(bulk)} bulk flows" if math.isfinite(j) else ""

    def _class_lines(self) -> list[str]:
        cls = self.raw.get("classes") or []
        if not cls:
            return []
        head = (
            f"{'queue delay at':<14} {'class / flow':<14} {'packets':>9} {'mark %':>7} {'drop %':>7} "
            f"{'mean ms':>8} {'p50':>7} {'p90':>7} {'p99':>7} {'p99.9':>7}"
        )
        labels = [c["name"] if c["kind"] == "class" else f"  {c['name']}" for c in cls]
        wq, wl = _width([c["qdisc"] for c in cls], 14), _width(labels, 14)
        head = f"{'queue delay at':<{wq}} {'class / flow':<{wl}}" + head[29:]
        out = ["", head, "-" * len(head)]
        for c, label in zip(cls, labels, strict=True):
            out.append(
                f"{c['qdisc']:<{wq}} {label:<{wl}} {int(c['deq_pkts']):>9d} {100 * _num(c['mark_prob']):>7.2f} "
                f"{100 * _num(c['drop_prob']):>7.2f} {_num(c['sojourn_mean_ms']):>8.2f} "
                f"{_num(c['sojourn_p50_ms']):>7.2f} {_num(c['sojourn_p90_ms']):>7.2f} "
                f"{_num(c['sojourn_p99_ms']):>7.2f} {_num(c['sojourn_p999_ms']):>7.2f}"
            )
        return out

    def _qdisc_class_lines(self) -> list[str]:
        """The classes of classful qdiscs, as ``tc -s class show`` counts them."""
        cls = self.raw.get("qdisc_classes") or []
        if not cls:
            return []
        head = (
            f"{'class':<26} {'kind':<9} {'sent pkts':>10} {'dropped':>8} {'marked':>8} "
            f"{'mean ms':>8} {'p99 ms':>7} {'max backlog':>11}"
        )
        wn = _width([c["name"] for c in cls], 26)
        head = f"{'class':<{wn}}" + head[26:]
        out = ["", head, "-" * len(head)]
        for c in cls:
            out.append(
                f"{c['name']:<{wn}} {c['kind']:<9} {int(c['deq_pkts']):>10d} {int(c['drops']):>8d} "
                f"{int(c['marks']):>8d} {_num(c['sojourn_mean_ms']):>8.2f} {_num(c['sojourn_p99_ms']):>7.2f} "
                f"{int(c['max_backlog_pkts']):>11d}"
            )
        return out

    def _fct_lines(self) -> list[str]:
        if not self.raw.get("connections"):
            return []
        head = (
            f"{'transfers of':<14} {'size':<12} {'count':>7} {'FCT p50 ms':>11} {'FCT p99 ms':>11} "
            f"{'slowdown p50':>13} {'p99':>7}"
        )
        wf = _width([str(f.get("name", "")) for f in self.raw.get("flows", [])], 14)
        head = f"{'transfers of':<{wf}}" + head[14:]
        out = ["", head, "-" * len(head)]
        for by in (("flow",), ("flow", "size_bin")):
            for _, g in self.fct_summary(by).iterrows():
                out.append(
                    f"{g['flow']:<{wf}} {str(g.get('size_bin', 'all')):<12} {int(g['count']):>7d} "
                    f"{g['fct_p50_ms']:>11.1f} {g['fct_p99_ms']:>11.1f} {g['slowdown_p50']:>13.2f} "
                    f"{g['slowdown_p99']:>7.2f}"
                )
        return out

    def plot(self, path: str | None = None):
        """The run's one-page figure (:func:`l4sim.runplots.run_figure`); saved to ``path``
        if given (format from the suffix), else returned."""
        from l4sim import runplots

        fig = runplots.run_figure(self)
        if path is None:
            return fig
        return runplots.save(fig, path)

    def __repr__(self) -> str:
        return f"<RunResult {self.name!r}: {len(self.raw.get('flows', []))} flows, {self.sim_seconds:g} s simulated>"

    def to_json(self) -> str:
        return json.dumps(self.raw)


def run(scenario: ScenarioLike, /, **overrides: Any) -> RunResult:
    """Run a scenario: a :class:`~l4sim.scenario.Scenario`, a TOML/JSON file path or a dict.

    ``overrides`` replace top-level keys (``duration=5``, ``seed=2``) or nested ones with
    ``__`` as separator (``topology__bottleneck__rate=50``). The GIL is released while the
    simulation runs. Bad input raises :class:`ScenarioError` before anything runs.
    """
    sc = load(scenario).with_overrides(**overrides).precheck()
    try:
        out = _core.run(sc.to_json())
    except ScenarioError:
        sc.validate()  # re-raise with the cleaned-up message and the source file
        raise
    return RunResult(json.loads(out), sc)
