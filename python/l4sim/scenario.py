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
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Union

from l4sim import _core
from l4sim._core import ScenarioError

__all__ = [
    "CC_NAMES",
    "ECN_SYSCTL",
    "QDISC_KINDS",
    "SOURCE_KINDS",
    "TOPOLOGY_KINDS",
    "Dumbbell",
    "Flow",
    "Scenario",
    "ScenarioError",
    "ScenarioLike",
    "load",
    "canonical_name",
    "check_scale",
    "one_line",
    "plain_words",
    "cc_name",
    "register_document_form",
    "scenario_error",
]

# Every name comes from ONE registry, the core's own enums (``l4sim._core.registry()``), so
# Python never rejects what the core accepts and never has to be edited when the core grows.
_REGISTRY = _core.registry()
#: Congestion controls the core implements (``CcSpec`` names).
CC_NAMES: tuple[str, ...] = tuple(_REGISTRY["cc"])
#: The CCs whose sockets ask for ECN whatever ``tcp.ecn`` says (``TCP_CONG_NEEDS_ECN``).
CC_NEEDS_ECN: tuple[str, ...] = tuple(_REGISTRY["cc_needs_ecn"])
#: Qdisc kinds the core implements (``QdiscSpec`` kinds).
QDISC_KINDS: tuple[str, ...] = tuple(_REGISTRY["qdisc"])
#: Traffic source kinds (``SourceSpec`` kinds).
SOURCE_KINDS: tuple[str, ...] = tuple(_REGISTRY["source"])
#: Topology kinds (``TopologySpec`` kinds).
TOPOLOGY_KINDS: tuple[str, ...] = tuple(_REGISTRY["topology"])
#: ``net.ipv4.tcp_ecn`` values in the order of their numbers 0..5 (``EcnSysctl``).
ECN_SYSCTL: tuple[str, ...] = tuple(_REGISTRY["ecn_sysctl"])
#: Other spellings of congestion-control names (Linux module names, common usage).
CC_ALIASES = {"bbrv1": "bbr", "bbr1": "bbr", "bbrv2": "bbr2", "bbrv3": "bbr3", "newreno": "reno"}


def canonical_name(value: str) -> str:
    """The one rule for names everywhere: case-insensitive, ``-`` same as ``_``
    ("DualPI2" == "dualpi2", "udp-prague" == "udp_prague", "FQ-CoDel" == "fq_codel")."""
    return value.strip().lower().replace("-", "_")


def cc_name(value: str) -> str:
    """A congestion-control name in the core's spelling (aliases resolved), or as given."""
    v = canonical_name(value)
    return CC_ALIASES.get(v, v)


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
    if name is None:
        raise scenario_error(
            f"{field}.name", f"missing: a congestion control table needs its name ({', '.join(CC_NAMES)})"
        )
    if not isinstance(name, str):
        raise scenario_error(f"{field}.name", f"expected a congestion control name, got {name!r}")
    name = cc_name(name)
    if name not in CC_NAMES:
        raise scenario_error(
            f"{field}.name",
            f"unknown congestion control {value['name']!r}; expected one of {', '.join(CC_NAMES)}",
        )
    return {**value, "name": name}


def _norm_qdisc(value: Any, field: str) -> Any:
    if isinstance(value, str):
        value = {"kind": value}
    if not isinstance(value, dict):
        raise scenario_error(field, f'expected a qdisc kind such as "fq_codel" or a table with a "kind", got {value!r}')
    kind = value.get("kind")
    if kind is None:
        raise scenario_error(f"{field}.kind", f"missing: a qdisc table needs its kind ({', '.join(QDISC_KINDS)})")
    if not isinstance(kind, str):
        raise scenario_error(f"{field}.kind", f"expected a qdisc kind, got {kind!r}")
    if canonical_name(kind) not in QDISC_KINDS:
        raise scenario_error(f"{field}.kind", f"unknown qdisc {kind!r}; expected one of {', '.join(QDISC_KINDS)}")
    value = {**value, "kind": canonical_name(kind)}
    if value.get("child") is not None:  # tbf
        value["child"] = _norm_qdisc(value["child"], f"{field}.child")
    if isinstance(value.get("children"), list):  # prio
        value["children"] = [_norm_qdisc(c, f"{field}.children[{i}]") for i, c in enumerate(value["children"])]
    if isinstance(value.get("classes"), list):  # htb: a leaf class's child
        value["classes"] = [
            {**c, "child": _norm_qdisc(c["child"], f"{field}.classes[{i}].child")}
            if isinstance(c, dict) and c.get("child") is not None
            else c
            for i, c in enumerate(value["classes"])
        ]
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
    elif isinstance(ecn, str):
        if canonical_name(ecn) not in ECN_SYSCTL:
            raise scenario_error(
                f"{field}.ecn",
                f"unknown net.ipv4.tcp_ecn value {ecn!r}; expected 0..5 or one of {', '.join(ECN_SYSCTL)}",
            )
        value["ecn"] = canonical_name(ecn)
    return value


def _norm_bottleneck(b: Any, field: str) -> Any:
    if not isinstance(b, dict):
        raise scenario_error(field, f"expected a table with rate and qdisc, got {b!r}")
    if "qdisc" in b:
        b["qdisc"] = _norm_qdisc(b["qdisc"], f"{field}.qdisc")
    return b


def _read_cdf(path: Path, field: str) -> list[list[float]]:
    """An empirical size CDF file: two columns (bytes, cumulative probability in 0..1 or in
    percent), whitespace or comma separated, ``#`` comments."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise scenario_error(field, f"cannot read CDF file {str(path)!r}: {e.strerror or e}") from None
    points = []
    for n, line in enumerate(text.splitlines(), 1):
        cols = line.split("#", 1)[0].replace(",", " ").split()
        if not cols:
            continue
        try:
            size, prob = float(cols[0]), float(cols[1])
        except (ValueError, IndexError):
            raise scenario_error(field, f"{path}:{n}: expected 'bytes probability', got {' '.join(cols)!r}") from None
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
        kind = value["kind"] = canonical_name(kind)
    if kind not in SOURCE_KINDS:
        expected = ", ".join(SOURCE_KINDS)
        raise scenario_error(f"{field}.kind", f"unknown traffic source {kind!r}; expected one of {expected}")
    if "size" in value:
        value["size"] = _norm_size(value["size"], f"{field}.size", base_dir)
    if kind in ("udp", "udp_prague") and isinstance(value.get("ecn"), str):  # the codepoint
        value["ecn"] = canonical_name(value["ecn"])
    return value


def _finite(v: Any, field: str) -> None:
    """Refuse NaN and infinities (TOML's ``nan``, ``inf``) wherever they sit, by their field."""
    if isinstance(v, float) and not math.isfinite(v):
        raise scenario_error(field, f"must be a finite number, got {v}")
    if isinstance(v, dict):
        for k, c in v.items():
            _finite(c, f"{field}.{k}" if field else str(k))
    elif isinstance(v, list):
        for i, c in enumerate(v):
            _finite(c, f"{field}[{i}]")


#: Keys whose values name a choice of the core's (serde enums in snake_case): the one name
#: rule applies to them wherever they sit (a node's ``kind`` included).
_CHOICE_KEYS = frozenset(
    {
        "accecn_accept",
        "accecn_impl",
        "class",  # a DualPI2 filter's
        "classic_ecn_ect",
        "detect_refs",
        "dist",
        "distribution",
        "ecn_mask",
        "ecn_mode",
        "qdelay_sample",
        "slot_distribution",
        "variant",
    }
)


def _canonical_choices(v: Any, in_nodes: bool = False) -> None:
    """Apply :func:`canonical_name` to every choice value under ``v``, in place."""
    if isinstance(v, dict):
        for k, c in v.items():
            if isinstance(c, str) and (k in _CHOICE_KEYS or (in_nodes and k == "kind")):
                v[k] = canonical_name(c)
            else:
                _canonical_choices(c, k == "nodes")
    elif isinstance(v, list):
        for c in v:
            _canonical_choices(c, in_nodes)


def normalize(data: Any, base_dir: Path | None = None) -> dict[str, Any]:
    """Return the scenario in the core's JSON form (a new dict; ``data`` is not modified).
    ``base_dir``: where relative file names (an empirical size CDF) are looked up."""
    d = _plain(data)
    if not isinstance(d, dict):
        raise scenario_error("", f"a scenario must be a table (dict), got {type(data).__name__}")
    _finite(d, "")
    for key, to_scenario in _DOCUMENT_FORMS.items():
        if key in d:
            d = to_scenario(d)
            break
    topo = d.get("topology")
    if isinstance(topo, dict):
        topo.setdefault("kind", "dumbbell")
        if isinstance(topo["kind"], str):
            topo["kind"] = canonical_name(topo["kind"])
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
    named_tables = isinstance(flows, dict)
    if isinstance(flows, dict):  # [flows.NAME] tables
        named = []
        for name, f in flows.items():
            if not isinstance(f, dict):
                raise scenario_error(f"flows.{name}", f"expected a table, got {f!r}")
            named.append({"name": name, **f})
        flows = d["flows"] = named
    if isinstance(flows, list):
        for i, f in enumerate(flows):
            p = f"flows.{f['name']}" if named_tables else f"flows[{i}]"
            if not isinstance(f, dict):
                raise scenario_error(p, f"expected a table, got {f!r}")
            if "cc" in f:
                f["cc"] = _norm_cc(f["cc"], f"{p}.cc")
            streams = f.get("streams")
            if isinstance(streams, int) and not isinstance(streams, bool) and streams < 1:
                raise scenario_error(f"{p}.streams", f"must be at least 1, got {streams}")
            if "tcp" in f:
                f["tcp"] = _norm_tcp(f["tcp"], f"{p}.tcp")
            if "source" in f:
                f["source"] = _norm_source(f["source"], f"{p}.source", base_dir)
                kind = f["source"]["kind"]
                tcp_only = [k for k in ("cc", "tcp", "receiver") if k in f]
                if kind in ("udp", "udp_prague") and tcp_only:  # would be ignored
                    raise scenario_error(
                        f"{p}.{tcp_only[0]}", f"applies to TCP flows only; a {kind} source sends datagrams"
                    )
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
    _canonical_choices(d)
    return d


# Other forms a scenario document may take instead of topology/flows: a top-level key and the
# function that turns such a document into a plain scenario dict. A higher layer registers them
# (``l4sim.studies`` registers "factors": one point of the study's design), so this generic
# module knows nothing of any study.
_DOCUMENT_FORMS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def register_document_form(key: str, to_scenario: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Accept documents with a top-level ``key`` table, turned into a scenario by ``to_scenario``
    (which raises ScenarioError naming the field at fault)."""
    _DOCUMENT_FORMS[key] = to_scenario


# serde's words for types, in the user's vocabulary (no "expected f64" in a message).
_PLAIN_WORDS = (
    (re.compile(r"\bexpected (?:f32|f64)\b"), "expected a number"),
    # the narrow ones with their range: "got 300, expected a whole number (0 or more)" read oddly
    (re.compile(r"\bexpected u8\b"), "expected a whole number from 0 to 255"),
    (re.compile(r"\bexpected u16\b"), "expected a whole number from 0 to 65535"),
    (re.compile(r"\bexpected u32\b"), "expected a whole number from 0 to 4294967295"),
    (re.compile(r"\bexpected (?:u64|usize)\b"), "expected a whole number (0 or more)"),
    (re.compile(r"\bexpected (?:i8|i16|i32|i64|isize)\b"), "expected a whole number"),
    (re.compile(r"\bexpected a borrowed string\b"), "expected a string"),
    (re.compile(r"\bexpected internally tagged enum CcSpec\b"), 'expected a table with a "name"'),
    (re.compile(r"\bexpected internally tagged enum SizeDist\b"), 'expected a table with a "dist"'),
    (re.compile(r"\bexpected internally tagged enum \w+"), 'expected a table with a "kind"'),
    (re.compile(r"\bexpected (?:struct|enum) \w+"), "expected a table"),
    (re.compile(r"\binvalid type: floating point `([^`]*)`"), r"got the number \1"),
    (re.compile(r"\binvalid type: integer `([^`]*)`"), r"got the number \1"),
    (re.compile(r"\binvalid type: string \"([^\"]*)\""), r'got the text "\1"'),
    (re.compile(r"\binvalid type: (map|sequence|boolean `[^`]*`)"), r"got a \1"),
    (re.compile(r"\binvalid value: integer `([^`]*)`"), r"got \1"),
    (re.compile(r"\bmap\b"), "table"),
    (re.compile(r"\bsequence\b"), "list"),
    (re.compile(r" at line \d+ column \d+$"), ""),
    (re.compile(r"\bunknown variant `([^`]*)`, expected"), r"unknown value '\1'; expected"),
    (re.compile(r"\bunknown field `([^`]*)`, expected"), r"unknown key '\1'; expected"),
    (re.compile(r"`([^`]*)`"), r"\1"),
)


_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def one_line(message: str) -> str:
    """A message on one line: line breaks inside a value the user gave are shown escaped."""
    return "".join(repr(c)[1:-1] if c in _LINE_BREAKS else c for c in message.strip())


def plain_words(message: str) -> str:
    """The core's message with Rust/serde type names replaced by what a user calls them."""
    for pat, repl in _PLAIN_WORDS:
        message = pat.sub(repl, message)
    return message


def _from_core(e: ScenarioError, source: str | None, named: dict[str, Any] | None = None) -> ScenarioError:
    """Re-raise the core's error, noting the file it came from; ``named``: the scenario, whose
    flows were written as named tables, so ``flows[i]`` is ``flows.NAME`` in the error."""
    field = getattr(e, "field", "")
    m = re.match(r"flows\[(\d+)\]", field) if named else None
    if m and named is not None and int(m[1]) < len(named.get("flows", [])):
        field = f"flows.{named['flows'][int(m[1])].get('name')}{field[m.end():]}"
    message = getattr(e, "message", str(e))
    if message.startswith("invalid length"):  # serde names the element it stopped at: blame the list
        field = re.sub(r"\[\d+\]$", "", field)
    err = scenario_error(field, plain_words(message), source)
    if source:
        err.add_note(f"in {source}")
    return err


#: The core's `sample_interval` when a scenario gives none, s (`default_sample_interval` in
#: crates/l4sim-core/src/scenario.rs).
DEFAULT_SAMPLE_INTERVAL = 0.1

#: Beyond these the simulator's results mean nothing (1 ns clock: a 1500-byte packet takes
#: 12 ns at 1 Tbit/s) or the run cannot finish in useful time: surely a mistake.
MAX_RATE_MBPS = 1e6
MIN_RATE_MBPS = 1e-3
MAX_DURATION_S = 86_400.0
MAX_RTT_MS = 60_000.0


def check_scale(d: Mapping[str, Any], source: str | None, *, live: bool = False) -> None:
    """Reject absurd magnitudes (a 1e9 Mbit/s link, a 1e7 s run, a link slower than 1 kbit/s)
    the core would accept or trip over; runs before the core sees the scenario."""

    def bad(field: str, msg: str) -> ScenarioError:
        return scenario_error(field, msg, source)

    dur = d.get("duration")
    # A live simulation (stepped, as the demo's) may name a far end; it is not run to it.
    if not live and isinstance(dur, (int, float)) and dur > MAX_DURATION_S:
        raise bad("duration", f"{dur:g} s is more than a day of simulated time (at most {MAX_DURATION_S:g} s)")
    topo = d.get("topology")
    if not isinstance(topo, dict):
        topo = {}
    rates = [("topology.nic_rate", topo.get("nic_rate"))]
    if isinstance(topo.get("bottleneck"), dict):
        rates.append(("topology.bottleneck.rate", topo["bottleneck"].get("rate")))
    bottlenecks = topo.get("bottlenecks")
    for i, b in enumerate(bottlenecks if isinstance(bottlenecks, list) else []):
        if isinstance(b, dict):
            rates.append((f"topology.bottlenecks[{i}].rate", b.get("rate")))
    for field, r in rates:
        if isinstance(r, (int, float)) and not isinstance(r, bool) and 0 < r < MIN_RATE_MBPS:
            raise bad(field, f"{r:g} Mbit/s is below {MIN_RATE_MBPS * 1000:g} kbit/s (one packet would take over 10 s)")
        if isinstance(r, (int, float)) and r > MAX_RATE_MBPS:
            raise bad(
                field,
                f"{r:g} Mbit/s is beyond what the simulator models (at most {MAX_RATE_MBPS:g} Mbit/s = 1 Tbit/s)",
            )
    rtts = [("topology.base_rtt", topo.get("base_rtt"))]
    flows = list(enumerate(d["flows"])) if isinstance(d.get("flows"), list) else []
    rtts += [(f"flows[{i}].base_rtt", f.get("base_rtt")) for i, f in flows if isinstance(f, dict)]
    for field, v in rtts:
        if isinstance(v, (int, float)) and v > MAX_RTT_MS:
            raise bad(field, f"{v:g} ms is a base RTT of more than a minute (at most {MAX_RTT_MS:g} ms)")


# --- the scenario object ---


@dataclasses.dataclass
class Scenario:
    """A normalised scenario (``data`` is the core's JSON form) and where it came from."""

    data: dict[str, Any]
    source: str | None = None
    #: The flows were written as named tables (``[flows.NAME]``): errors name them so.
    named_flows: bool = False

    # constructors

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | None = None) -> Scenario:
        base = Path(source).parent if source and Path(source).is_file() else None
        try:
            return cls(normalize(data, base), source, isinstance(data.get("flows"), Mapping))
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

    @property
    def sample_interval(self) -> float:
        """Seconds between time-series samples (the core's default when not given)."""
        return float(self.data.get("sample_interval", DEFAULT_SAMPLE_INTERVAL))

    # operations

    def precheck(self, *, live: bool = False) -> Scenario:
        """The checks Python makes that the core does not (run before the core sees the
        scenario, also by ``l4sim.run`` and ``l4sim.Simulation``, ``live``: no limit on the
        duration, which a stepped simulation need not reach); returns ``self``."""
        check_scale(self.data, self.source, live=live)
        return self

    def validate(self) -> Scenario:
        """Check the whole scenario with the core's validator; returns ``self``."""
        self.precheck()
        try:
            _core.validate(self.to_json())
        except ScenarioError as e:
            raise _from_core(e, self.source, self.data if self.named_flows else None) from None
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
        return dataclasses.replace(Scenario.from_dict(d, self.source), named_flows=self.named_flows)


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
