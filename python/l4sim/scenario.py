"""Scenarios: load one from TOML, a dict or Python objects, normalise, validate, serialise.

The JSON contract is defined by the Rust core (``crates/l4sim-core/src/scenario.rs``); this
module stays thin. It only

* turns conveniences into the contract's form: ``cc = "cubic"`` becomes ``{"name": "cubic"}``,
  a qdisc given as a bare kind (``qdisc = "dualpi2"``) becomes ``{"kind": "dualpi2"}``,
  ``tcp.ecn = 3`` (the ``net.ipv4.tcp_ecn`` number) becomes ``"accecn"``, a topology without
  ``kind`` is a dumbbell, and ``[flows.NAME]`` tables become a flow list;
* reports problems it can see better than the core (a malformed TOML file, with the file and
  line; a value of the wrong shape; an unknown congestion control or qdisc name);
* hands everything else to the core's validator and surfaces its message.

Every error is a :class:`ScenarioError` (a ``ValueError``) whose text is ``"FIELD: MESSAGE"``
and which carries ``field`` and ``message`` attributes (and ``source``, the file, if any).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict, Union

from l4sim import _core
from l4sim._core import ScenarioError

__all__ = [
    "CC_NAMES",
    "ECN_SYSCTL",
    "QDISC_KINDS",
    "SOURCE_KINDS",
    "Dumbbell",
    "Flow",
    "Scenario",
    "ScenarioDict",
    "ScenarioError",
    "ScenarioLike",
    "load",
    "scenario_error",
]

#: Congestion controls the core implements (``CcSpec`` names).
CC_NAMES = ("reno", "cubic", "dctcp", "prague", "bbr", "bbr2", "bbr3")
#: Qdisc kinds the core implements (``QdiscSpec`` kinds).
QDISC_KINDS = ("bfifo", "pfifo", "fq", "codel", "fq_codel", "pie", "dualpi2", "red", "tbf", "prio")
#: ``net.ipv4.tcp_ecn`` values by number, as the core names them (``TcpSpec.ecn``).
ECN_SYSCTL = ("none", "classic", "passive", "accecn", "accecn_classic_out", "accecn_passive")


# --- the JSON contract, as typed dicts (for type checkers; the core is the authority) ---


class QdiscDict(TypedDict, total=False):
    kind: str  # plus the qdisc's tc parameters


class CcDict(TypedDict, total=False):
    name: str  # plus the module parameters


class TcpDict(TypedDict, total=False):
    ecn: str
    fq_pacing: bool
    tso: bool
    init_cwnd: int
    rto_min_ms: float
    mss: int


class ReceiverDict(TypedDict, total=False):
    cc: CcDict
    tcp: TcpDict


class FlowDict(TypedDict, total=False):
    name: str
    cc: CcDict
    tcp: TcpDict
    receiver: ReceiverDict
    streams: int
    start: float
    size: int
    base_rtt: float
    pair: int


class BottleneckDict(TypedDict, total=False):
    rate: float
    qdisc: QdiscDict
    burst: int


class TopologyDict(TypedDict, total=False):
    kind: str
    base_rtt: float
    bottleneck: BottleneckDict
    nic_rate: float
    pairs: int
    bottlenecks: list[dict[str, Any]]


class ScenarioDict(TypedDict, total=False):
    name: str
    seed: int
    duration: float
    sample_interval: float
    topology: TopologyDict
    flows: list[FlowDict]


def scenario_error(field: str, message: str, source: str | None = None) -> ScenarioError:
    """Build a :class:`ScenarioError` with the ``"FIELD: MESSAGE"`` text and attributes."""
    e = ScenarioError(f"{field}: {message}" if field else message)
    e.field = field
    e.message = message
    e.source = source
    return e


# --- Python objects for building scenarios in code ---


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclasses.dataclass
class Flow:
    """One sender (an iperf3 client) and its receiver. ``cc`` / ``receiver_cc``: a name or a
    dict with ``name`` and module parameters; ``tcp`` / ``receiver_tcp``: ``TcpSpec`` dicts."""

    name: str
    cc: str | Mapping[str, Any] = "cubic"
    tcp: Mapping[str, Any] | None = None
    receiver_cc: str | Mapping[str, Any] | None = None
    receiver_tcp: Mapping[str, Any] | None = None
    streams: int = 1
    start: float = 0.0
    size: int | None = None
    base_rtt: float | None = None
    pair: int | None = None
    source: str | Mapping[str, Any] | None = None
    dscp: int | None = None

    def to_dict(self) -> dict[str, Any]:
        receiver = _drop_none({"cc": self.receiver_cc, "tcp": self.receiver_tcp})
        d: dict[str, Any] = {
            "name": self.name,
            "cc": self.cc,
            "tcp": self.tcp,
            "receiver": receiver or None,
            "streams": self.streams,
            "start": self.start,
            "size": self.size,
            "base_rtt": self.base_rtt,
            "pair": self.pair,
            "source": self.source,
            "dscp": self.dscp,
        }
        return _drop_none(d)


@dataclasses.dataclass
class Dumbbell:
    """The study's testbed: base RTT (ms), bottleneck rate (Mbit/s) and the qdisc under test."""

    base_rtt: float
    rate: float
    qdisc: str | Mapping[str, Any]
    nic_rate: float | None = None
    burst: int | None = None

    def to_dict(self) -> dict[str, Any]:
        btl = _drop_none({"rate": self.rate, "qdisc": self.qdisc, "burst": self.burst})
        return _drop_none({"kind": "dumbbell", "base_rtt": self.base_rtt, "bottleneck": btl, "nic_rate": self.nic_rate})


# --- normalisation ---


def _plain(obj: Any) -> Any:
    """Deep-copy into plain dicts and lists; objects with ``to_dict`` (Flow, Dumbbell) expand."""
    if hasattr(obj, "to_dict") and callable(obj.to_dict) and not isinstance(obj, Mapping):
        return _plain(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(_drop_none(dataclasses.asdict(obj)))
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return copy.copy(obj)


def _norm_cc(value: Any, field: str) -> Any:
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict):
        raise scenario_error(
            field, f'expected a congestion control name such as "cubic" or a table with a "name", got {value!r}'
        )
    name = value.get("name")
    if not isinstance(name, str):
        raise scenario_error(f"{field}.name", f"expected a congestion control name, got {name!r}")
    if name not in CC_NAMES:
        raise scenario_error(
            f"{field}.name", f"unknown congestion control {name!r}; expected one of {', '.join(CC_NAMES)}"
        )
    return value


def _norm_qdisc(value: Any, field: str) -> Any:
    if isinstance(value, str):
        value = {"kind": value}
    if not isinstance(value, dict):
        raise scenario_error(field, f'expected a qdisc kind such as "fq_codel" or a table with a "kind", got {value!r}')
    kind = value.get("kind")
    if not isinstance(kind, str):
        raise scenario_error(f"{field}.kind", f"expected a qdisc kind, got {kind!r}")
    if kind not in QDISC_KINDS:
        raise scenario_error(f"{field}.kind", f"unknown qdisc {kind!r}; expected one of {', '.join(QDISC_KINDS)}")
    if value.get("child") is not None:  # tbf
        value["child"] = _norm_qdisc(value["child"], f"{field}.child")
    if isinstance(value.get("children"), list):  # prio
        value["children"] = [_norm_qdisc(c, f"{field}.children[{i}]") for i, c in enumerate(value["children"])]
    return value


def _norm_tcp(value: Any, field: str) -> Any:
    if value is None:
        return value
    if not isinstance(value, dict):
        raise scenario_error(field, f"expected a table of TCP settings, got {value!r}")
    ecn = value.get("ecn")
    if isinstance(ecn, int) and not isinstance(ecn, bool):
        if not 0 <= ecn < len(ECN_SYSCTL):
            raise scenario_error(f"{field}.ecn", f"net.ipv4.tcp_ecn must be 0..{len(ECN_SYSCTL) - 1}, got {ecn}")
        value["ecn"] = ECN_SYSCTL[ecn]
    return value


def _norm_bottleneck(b: Any, field: str) -> Any:
    if not isinstance(b, dict):
        raise scenario_error(field, f"expected a table with rate and qdisc, got {b!r}")
    if "qdisc" in b:
        b["qdisc"] = _norm_qdisc(b["qdisc"], f"{field}.qdisc")
    return b


#: Traffic source kinds (``SourceSpec`` kinds; ``udp-prague`` is accepted for ``udp_prague``).
SOURCE_KINDS = ("bulk", "web", "messages", "chunks", "udp", "udp_prague")


def _read_cdf(path: Path, field: str) -> list[list[float]]:
    """An empirical size CDF file: two columns (bytes, cumulative probability in 0..1 or in
    percent), whitespace or comma separated, ``#`` comments."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise scenario_error(field, f"cannot read CDF file {str(path)!r}: {e.strerror or e}") from None
    points = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].replace(",", " ").split()
        if not line:
            continue
        try:
            size, prob = float(line[0]), float(line[1])
        except (ValueError, IndexError):
            raise scenario_error(field, f"{path}:{n}: expected 'bytes probability', got {' '.join(line)!r}") from None
        points.append([size, prob])
    if points and points[-1][1] > 1.0:
        points = [[b, p / 100.0] for b, p in points]
    return points


def _norm_size(value: Any, field: str, base_dir: Path | None) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"dist": "fixed", "bytes": value}
    if isinstance(value, dict) and value.get("dist") == "empirical" and "file" in value:
        value = dict(value)
        p = Path(value.pop("file"))
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        value["cdf"] = _read_cdf(p, f"{field}.file")
    return value


def _norm_source(value: Any, field: str, base_dir: Path | None) -> Any:
    if isinstance(value, str):
        value = {"kind": value}
    if not isinstance(value, dict):
        raise scenario_error(field, f'expected a source kind such as "web" or a table with a "kind", got {value!r}')
    kind = value.get("kind")
    if isinstance(kind, str):
        kind = value["kind"] = kind.replace("-", "_")
    if kind not in SOURCE_KINDS:
        raise scenario_error(f"{field}.kind", f"unknown traffic source {kind!r}; expected one of {', '.join(SOURCE_KINDS)}")
    if "size" in value:
        value["size"] = _norm_size(value["size"], f"{field}.size", base_dir)
    return value


def normalize(data: Any, base_dir: Path | None = None) -> dict[str, Any]:
    """Return the scenario in the core's JSON form (a new dict; ``data`` is not modified).
    ``base_dir``: where relative file names (an empirical size CDF) are looked up."""
    d = _plain(data)
    if not isinstance(d, dict):
        raise scenario_error("", f"a scenario must be a table (dict), got {type(data).__name__}")
    if "factors" in d:
        d = _from_factors_table(d)
    topo = d.get("topology")
    if isinstance(topo, dict):
        topo.setdefault("kind", "dumbbell")
        if "bottleneck" in topo:
            topo["bottleneck"] = _norm_bottleneck(topo["bottleneck"], "topology.bottleneck")
        if isinstance(topo.get("links"), list):  # graph: shaped directions
            for i, link in enumerate(topo["links"]):
                for side in ("ab", "ba"):
                    if isinstance(link, dict) and link.get(side) is not None:
                        link[side] = _norm_bottleneck(link[side], f"topology.links[{i}].{side}")
        if isinstance(topo.get("bottlenecks"), list):
            topo["bottlenecks"] = [
                _norm_bottleneck(b, f"topology.bottlenecks[{i}]") for i, b in enumerate(topo["bottlenecks"])
            ]
    elif topo is not None:
        raise scenario_error("topology", f"expected a table, got {topo!r}")

    flows = d.get("flows")
    if isinstance(flows, dict):  # [flows.NAME] tables
        named = []
        for name, f in flows.items():
            if not isinstance(f, dict):
                raise scenario_error(f"flows.{name}", f"expected a table, got {f!r}")
            named.append({"name": name, **f})
        flows = d["flows"] = named
    if isinstance(flows, list):
        for i, f in enumerate(flows):
            p = f"flows[{i}]"
            if not isinstance(f, dict):
                raise scenario_error(p, f"expected a table, got {f!r}")
            if "cc" in f:
                f["cc"] = _norm_cc(f["cc"], f"{p}.cc")
            if "tcp" in f:
                f["tcp"] = _norm_tcp(f["tcp"], f"{p}.tcp")
            if "source" in f:
                f["source"] = _norm_source(f["source"], f"{p}.source", base_dir)
            rcv = f.get("receiver")
            if rcv is not None:
                if not isinstance(rcv, dict):
                    raise scenario_error(f"{p}.receiver", f"expected a table, got {rcv!r}")
                if rcv.get("cc") is not None:
                    rcv["cc"] = _norm_cc(rcv["cc"], f"{p}.receiver.cc")
                if "tcp" in rcv:
                    rcv["tcp"] = _norm_tcp(rcv["tcp"], f"{p}.receiver.tcp")
    elif flows is not None:
        raise scenario_error("flows", f"expected a list of flows, got {flows!r}")
    return d


def _from_factors_table(d: dict[str, Any]) -> dict[str, Any]:
    """A scenario given as one point of the study's design: a ``[factors]`` table with the
    study's factor names (see ``l4sim.factors``), plus optional ``name``, ``seed``,
    ``duration`` and ``sample_interval`` at the top level."""
    from l4sim.factors import scenario_from_factors

    factors = d["factors"]
    if not isinstance(factors, dict):
        raise scenario_error("factors", f"expected a table of study factors, got {factors!r}")
    clash = [k for k in ("topology", "flows") if k in d]
    if clash:
        raise scenario_error(clash[0], "give either [factors] or topology/flows, not both")
    top = {k: v for k, v in d.items() if k != "factors"}
    unknown = sorted(set(top) - {"name", "seed", "duration", "sample_interval"})
    if unknown:
        raise scenario_error(unknown[0], "unknown key beside [factors] (allowed: name, seed, duration, sample_interval)")
    args = dict(factors)
    for k in ("seed", "duration", "sample_interval"):
        if k in top:
            args[k] = top[k]
    try:
        out = scenario_from_factors(**args)
    except ScenarioError as e:
        field = getattr(e, "field", "")
        if field in factors:
            raise scenario_error(f"factors.{field}", getattr(e, "message", str(e))) from None
        raise
    if "name" in top:
        out["name"] = top["name"]
    return out


def _from_core(e: ScenarioError, source: str | None, data: dict[str, Any] | None = None) -> ScenarioError:
    """Re-raise the core's error, noting the file it came from."""
    err = scenario_error(getattr(e, "field", ""), getattr(e, "message", str(e)), source)
    if source:
        err.add_note(f"in {source}")
    return err


# --- the scenario object ---


@dataclasses.dataclass
class Scenario:
    """A normalised scenario (``data`` is the core's JSON form) and where it came from."""

    data: dict[str, Any]
    source: str | None = None

    # constructors

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | None = None) -> Scenario:
        base = Path(source).parent if source and Path(source).is_file() else None
        try:
            return cls(normalize(data, base), source)
        except ScenarioError as e:
            if source and not getattr(e, "source", None):
                e.source = source
                e.add_note(f"in {source}")
            raise

    @classmethod
    def from_toml_str(cls, text: str, source: str = "<string>") -> Scenario:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            # tomllib's message ends with "(at line L, column C)".
            raise scenario_error(source, f"malformed TOML: {e}", source) from None
        return cls.from_dict(data, source)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Scenario:
        """Load a ``.toml`` (or ``.json``) scenario file."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise scenario_error(str(p), f"cannot read scenario file: {e.strerror or e}", str(p)) from None
        if p.suffix.lower() == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                raise scenario_error(str(p), f"malformed JSON: {e}", str(p)) from None
            return cls.from_dict(data, str(p))
        return cls.from_toml_str(text, str(p))

    from_toml = from_file

    @classmethod
    def build(
        cls,
        *,
        duration: float,
        topology: Dumbbell | Mapping[str, Any],
        flows: list[Flow] | list[Mapping[str, Any]],
        seed: int | None = None,
        name: str | None = None,
        sample_interval: float | None = None,
    ) -> Scenario:
        """A scenario from Python objects."""
        d = _drop_none(
            {
                "name": name,
                "seed": seed,
                "duration": duration,
                "sample_interval": sample_interval,
                "topology": topology,
                "flows": list(flows),
            }
        )
        return cls.from_dict(d)

    # views

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.data)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces): the same scenario gives the same text."""
        return json.dumps(self.data, sort_keys=True, separators=(",", ":"))

    @property
    def name(self) -> str:
        return str(self.data.get("name", ""))

    @property
    def duration(self) -> float:
        return float(self.data.get("duration", 0.0))

    # operations

    def validate(self) -> Scenario:
        """Check the whole scenario with the core's validator; returns ``self``."""
        try:
            _core.validate(self.to_json())
        except ScenarioError as e:
            raise _from_core(e, self.source, self.data) from None
        return self

    def with_overrides(self, **overrides: Any) -> Scenario:
        """A copy with keys replaced. ``a__b__0__c=v`` sets ``data["a"]["b"][0]["c"] = v``."""
        if not overrides:
            return self
        d = self.to_dict()
        for key, value in overrides.items():
            path = key.split("__")
            node: Any = d
            for i, part in enumerate(path[:-1]):
                nxt = node[int(part)] if isinstance(node, list) and part.isdigit() else None
                if isinstance(node, dict):
                    nxt = node.setdefault(part, {})
                if nxt is None or not isinstance(nxt, (dict, list)):
                    raise scenario_error(".".join(path[: i + 1]), f"cannot override {key!r}: not a table")
                node = nxt
            last = path[-1]
            if isinstance(node, list) and last.isdigit():
                node[int(last)] = value
            else:
                node[last] = value
        return Scenario.from_dict(d, self.source)


ScenarioLike = Union[Scenario, str, "os.PathLike[str]", Mapping[str, Any]]


def load(obj: ScenarioLike) -> Scenario:
    """A :class:`Scenario` from a Scenario, a file path (TOML or JSON), or a dict."""
    if isinstance(obj, Scenario):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        return Scenario.from_file(obj)
    if isinstance(obj, Mapping):
        return Scenario.from_dict(obj)
    raise TypeError(f"cannot make a scenario from {type(obj).__name__}: give a path, a dict or a Scenario")
