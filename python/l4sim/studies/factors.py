"""The study's design point -> a scenario (see docs/study.md, "The experiment").

One point of the single-bottleneck design (buffer size, capacity, base RTT, AQM, ECN
threshold, Prague fallback, endpoint ECN settings, congestion controls, flow counts) becomes
the dumbbell scenario the testbed ran:

* buffer in bytes = n_bdp x capacity x base RTT / 8; qdiscs that count packets get
  bytes / 1500 + 1 packets; DualPI2 keeps its default limit whatever the buffer factor;
* the AQM configured as in the study's ``tc`` table, with ECN threshold T (ms);
  FIFO has no threshold;
* endpoint ECN: the L4S sender's ``net.ipv4.tcp_ecn`` from ``tx_l4s_ecn``; the receivers'
  settings decide what is negotiated;
* congestion controls are the study kernel's (L4STeam 5.15.72-prague-43): ``bbr2`` is that
  kernel's L4STeam ``tcp_bbr2.c`` (core ``variant = "l4s"``), ``bbr2-v2alpha`` google's
  v2alpha, ``bbr`` mainline BBRv1, ``bbr3`` google's v3;
* the receivers' CC (``rx_l4s_cc``, ``rx_classic_cc``; Linux's receiver-side CE echo depends
  on it: DCTCP-style for dctcp and ECN-enabled bbr2, RFC 3168's latched ECE otherwise). The
  L4S receiver runs the L4S CC when it negotiates AccECN (the testbed's Prague receiver), else
  cubic (a Prague listener would force AccECN through ``TCP_CONG_NEEDS_ACCECN``). The classic
  receiver runs cubic, the receiving host's default: iperf3 ``-C`` would also switch the
  accepted socket to the sender's CC, but the testbed's BBRv2-with-ECN cells show RFC 3168
  feedback, not bbr2's DCTCP-style echo (docs/bbr.md section 4); ``rx_classic_cc`` selects
  either.

Names follow the package's one rule (``l4sim.scenario.canonical_name``): case-insensitive,
hyphens count as underscores, and for AQM names spaces too ("single queue FQ" works).
``qdisc_for`` is the one place where the study's AQM names map to qdisc kinds.

Defaults are the study's: both senders ask for ECN (``tx_l4s_ecn="accecn"``,
``tx_classic_ecn="classic"``), as in its presets. A combination that cannot negotiate what a
receiver setting names (a sender that never asks for ECN with an ECN receiver) warns
(:class:`FactorWarning`): ECN is negotiated only when the sender asks.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

from l4sim import _core
from l4sim._core import ScenarioError
from l4sim.scenario import (
    CC_NAMES,
    CC_NEEDS_ECN,
    MAX_RATE_MBPS,
    MAX_RTT_MS,
    canonical_name,
    cc_name,
    check_scale,
    plain_words,
    scenario_error,
)

__all__ = [
    "AQMS",
    "FACTOR_NAMES",
    "FactorWarning",
    "RUN_PARAMS",
    "buffer_bytes",
    "canonical_aqm",
    "buffer_packets",
    "qdisc_for",
    "scenario_from_factors",
    "seed_for_trial",
]

#: AQMs in the study's order (rows of its heatmaps).
AQMS: tuple[str, ...] = (
    "FIFO",
    "single_queue_FQ",
    "Codel",
    "FQ",
    "FQ_Codel",
    "FQ_Codel_L4S",
    "pie_drop",
    "Codel_drop",
    "DualPI2",
)

#: The design's factors, as keyword arguments of :func:`scenario_from_factors`.
FACTOR_NAMES: tuple[str, ...] = (
    "aqm",
    "n_bdp",
    "btl_capacity",
    "base_rtt",
    "ecn_threshold",
    "ecn_fallback",
    "tx_l4s_ecn",
    "rx_l4s_ecn",
    "tx_classic_ecn",
    "rx_classic_ecn",
    "cc_l4s",
    "cc_classic",
    "rx_l4s_cc",
    "rx_classic_cc",
    "n_l4s",
    "n_classic",
    "tree_level",
    "rmem_max",
)

#: Run parameters that are not design factors.
RUN_PARAMS: tuple[str, ...] = ("duration", "seed", "trial", "sample_interval")

#: Keys accepted in ``**extra``: scenario settings outside the design.
EXTRA_KEYS: tuple[str, ...] = ("name", "nic_rate", "burst")

#: ``tree_level`` -> the tree egress that becomes the bottleneck (``net/topology.rs::tree``).
#: The L4S flows use pair 0 and the classic flows pair 1, which share pair router 0, group
#: of four 0 and the root, so each of these links carries both.
TREE_LINKS = {"pair": "up_pair0", "agg": "up_agg0", "root": "down_agg0"}
#: Sender/receiver pairs of the study's tree (the smallest the builder allows).
TREE_PAIRS = 4

#: Values of the ECN factors.
L4S_SENDER_ECN = ("accecn", "classic", "none")
L4S_RECEIVER_ECN = ("accecn", "classic", "none")
CLASSIC_ECN = ("none", "classic")

#: The receivers' ``net.ipv4.tcp_rmem`` (min, default, max bytes) on a Linux host: windows of
#: up to half the max, 3 MB. ``rmem_max`` raises the max; it cannot go below the default.
TCP_RMEM = (4096, 131_072, 6_291_456)

#: Bytes per packet when a buffer in bytes is turned into a packet limit (the study's 1500).
PACKET_BYTES = 1500
#: CoDel / FQ-CoDel interval in the study, ms.
CODEL_INTERVAL_MS = 100.0
#: FQ-CoDel L4S: CE threshold applied to ECT(1) packets only (selector/mask on the ECN bits).
L4S_CE_THRESHOLD_MS = 1.0
L4S_CE_SELECTOR = 0x01
L4S_CE_MASK = 0x03

#: Factor spellings of builds beyond the core's aliases (after the one name rule).
_CC_ALIASES = {"bbr2_l4s": "bbr2", "bbr2_v2alpha": "bbr2-v2alpha"}
#: The classic receiver's CC unless ``rx_classic_cc`` says otherwise (see the module doc).
CLASSIC_RECEIVER_CC = "cubic"
#: CC names of the factors: the core's plus other builds of one algorithm.
FACTOR_CCS: tuple[str, ...] = CC_NAMES + ("bbr2-v2alpha",)
#: Factor CC name -> the core's CC spec (the study kernel's build where there are several).
_CC_SPECS: dict[str, dict[str, Any]] = {
    "bbr2": {"name": "bbr2", "variant": "l4s"},  # L4STeam tcp_bbr2.c, the study kernel's
    "bbr2-v2alpha": {"name": "bbr2"},  # google/bbr v2alpha tcp_bbr2.c
}
_AQM_LOOKUP = {canonical_name(a): a for a in AQMS}


class FactorWarning(UserWarning):
    """A factor combination that runs but cannot do what one of its values names."""


def canonical_aqm(aqm: Any) -> str:
    """The study's spelling of an AQM name ("dualpi2" -> "DualPI2"); ScenarioError if unknown."""
    if isinstance(aqm, str):
        key = canonical_name(aqm).replace(" ", "_")
        if key in _AQM_LOOKUP:
            return _AQM_LOOKUP[key]
    raise scenario_error("aqm", f"unknown AQM {aqm!r}; expected one of {', '.join(AQMS)}")


def _positive(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise scenario_error(name, f"must be a positive number, got {v!r}")
    return float(v)


def _count(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise scenario_error(name, f"must be a whole number of flows (0 or more), got {v!r}")
    return v


def _choice(name: str, v: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(v, str) or canonical_name(v) not in allowed:
        raise scenario_error(name, f"unknown value {v!r}; expected one of {', '.join(allowed)}")
    return canonical_name(v)


def cc_factor(name: str, v: Any) -> str:
    """A CC factor value in its canonical spelling (core names plus other builds)."""
    key = _CC_ALIASES.get(cc_name(v), cc_name(v)) if isinstance(v, str) else None
    if key not in FACTOR_CCS:
        raise scenario_error(name, f"unknown value {v!r}; expected one of {', '.join(FACTOR_CCS)}")
    return key


def cc_spec(name: str) -> dict[str, Any]:
    """The core CC spec of a factor CC name (``"bbr2"`` -> the L4STeam build)."""
    return dict(_CC_SPECS.get(name, {"name": name}))


def buffer_bytes(n_bdp: float, btl_capacity: float, base_rtt: float) -> int:
    """n x BDP in bytes: ``n_bdp * capacity (Mbit/s) * base RTT (ms) / 8``."""
    b = n_bdp * btl_capacity * 1e6 * base_rtt * 1e-3 / 8
    if not math.isfinite(b):  # int(round(inf)) was an OverflowError
        raise scenario_error(
            "n_bdp",
            f"n_bdp x btl_capacity x base_rtt ({n_bdp:g} x {btl_capacity:g} Mbit/s x {base_rtt:g} ms) "
            "is a buffer too large for a number",
        )
    return int(round(b))


def buffer_packets(nbytes: int) -> int:
    """The study's packet limit for a buffer of ``nbytes``: ``bytes // 1500 + 1``."""
    return nbytes // PACKET_BYTES + 1


def qdisc_for(
    aqm: str, *, n_bdp: float, btl_capacity: float, base_rtt: float, ecn_threshold: float = 5
) -> dict[str, Any]:
    """The bottleneck qdisc spec of one AQM configuration of the study (threshold T in ms)."""
    aqm = canonical_aqm(aqm)
    nbytes = buffer_bytes(n_bdp, btl_capacity, base_rtt)
    pkts = buffer_packets(nbytes)
    t = float(ecn_threshold)
    if aqm == "FIFO":
        return {"kind": "bfifo", "limit": nbytes}
    if aqm == "single_queue_FQ":
        # orphan_mask 0: every forwarded packet hashes to the same flow -> one FIFO with a
        # CE step at sojourn T.
        return {"kind": "fq", "limit": pkts, "flow_limit": pkts, "orphan_mask": 0, "ce_threshold_ms": t}
    if aqm == "Codel":
        return {"kind": "codel", "limit": pkts, "target_ms": t, "interval_ms": CODEL_INTERVAL_MS, "ecn": True}
    if aqm == "FQ":
        return {"kind": "fq", "limit": pkts, "flow_limit": pkts, "ce_threshold_ms": t}
    if aqm == "FQ_Codel":
        return {"kind": "fq_codel", "limit": pkts, "target_ms": t, "interval_ms": CODEL_INTERVAL_MS, "ecn": True}
    if aqm == "FQ_Codel_L4S":
        return {
            "kind": "fq_codel",
            "limit": pkts,
            "target_ms": t,
            "interval_ms": CODEL_INTERVAL_MS,
            "ecn": True,
            "ce_threshold_ms": L4S_CE_THRESHOLD_MS,
            "ce_threshold_selector": L4S_CE_SELECTOR,
            "ce_threshold_mask": L4S_CE_MASK,
        }
    if aqm == "pie_drop":
        return {"kind": "pie", "limit": pkts, "target_ms": t, "ecn": False}
    if aqm == "Codel_drop":
        return {"kind": "codel", "limit": pkts, "target_ms": t, "interval_ms": CODEL_INTERVAL_MS, "ecn": False}
    if aqm == "DualPI2":
        # Classic target T; everything else (limit 10000 packets, step 1 ms, ...) default.
        return {"kind": "dualpi2", "target_ms": t}
    raise AssertionError(aqm)  # pragma: no cover - canonical_aqm covers every name


def seed_for_trial(trial: int) -> int:
    """The seed of trial ``trial`` when no seed is given: ``trial + 1`` (trial 0 -> seed 1,
    the default seed)."""
    if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
        raise scenario_error("trial", f"must be a whole number (0 or more), got {trial!r}")
    return trial + 1


def _fmt(v: float) -> str:
    return f"{v:g}"


def scenario_from_factors(
    *,
    aqm: str,
    n_bdp: float,
    btl_capacity: float,
    base_rtt: float,
    ecn_threshold: float = 5,
    ecn_fallback: int = 0,
    tx_l4s_ecn: str = "accecn",
    rx_l4s_ecn: str = "accecn",
    tx_classic_ecn: str = "classic",
    rx_classic_ecn: str = "none",
    cc_l4s: str = "prague",
    cc_classic: str = "cubic",
    rx_l4s_cc: str | None = None,
    rx_classic_cc: str | None = None,
    n_l4s: int = 1,
    n_classic: int = 1,
    tree_level: str | None = None,
    rmem_max: int | None = None,
    duration: float = 60,
    seed: int | None = None,
    trial: int | None = None,
    sample_interval: float = 0.1,
    **extra: Any,
) -> dict[str, Any]:
    """The scenario (core JSON form, as a dict) of one design point.

    Units as in the study: ``btl_capacity`` Mbit/s, ``base_rtt`` and ``ecn_threshold`` ms,
    ``duration`` s. ``seed`` defaults to 1, or to :func:`seed_for_trial` of ``trial`` when a
    trial is given and no seed. ``extra`` may hold ``name``, ``nic_rate`` (Mbit/s) and
    ``burst`` (HTB burst, bytes); any other key is an error naming it. ``tree_level``
    (``pair``, ``agg`` or ``root``, see :data:`TREE_LINKS`) runs the flows over the original
    multi-bottleneck tree with the bottleneck at that level instead of the dumbbell.
    ``rmem_max`` (bytes) sets the receivers' ``tcp_rmem`` max (Linux's 6291456 unless given: a
    window of at most 3 MB per flow, which holds 1 Gbit/s flows on 50 and 100 ms paths).
    """
    unknown = sorted(k for k in extra if k not in EXTRA_KEYS)
    if unknown:
        k = unknown[0]
        raise scenario_error(
            k, f"unknown factor {k!r} (= {extra[k]!r}); known: {', '.join(FACTOR_NAMES + RUN_PARAMS + EXTRA_KEYS)}"
        )
    aqm = canonical_aqm(aqm)
    n_bdp = _positive("n_bdp", n_bdp)
    btl_capacity = _positive("btl_capacity", btl_capacity)
    base_rtt = _positive("base_rtt", base_rtt)
    # before the buffer is worked out from them (a 1e30 ms RTT is a buffer no number holds)
    if base_rtt > MAX_RTT_MS:
        msg = f"{base_rtt:g} ms is a base RTT of more than a minute (at most {MAX_RTT_MS:g} ms)"
        raise scenario_error("base_rtt", msg)
    if btl_capacity > MAX_RATE_MBPS:
        msg = f"{btl_capacity:g} Mbit/s is beyond what the simulator models (at most {MAX_RATE_MBPS:g} Mbit/s)"
        raise scenario_error("btl_capacity", msg)
    ecn_threshold = _positive("ecn_threshold", ecn_threshold)
    duration = _positive("duration", duration)
    sample_interval = _positive("sample_interval", sample_interval)
    if isinstance(ecn_fallback, bool):
        ecn_fallback = int(ecn_fallback)
    if ecn_fallback not in (0, 1, 2):
        raise scenario_error("ecn_fallback", f"must be 0 (off), 1 (on) or 2, got {ecn_fallback!r}")
    tx_l4s_ecn = _choice("tx_l4s_ecn", tx_l4s_ecn, L4S_SENDER_ECN)
    rx_l4s_ecn = _choice("rx_l4s_ecn", rx_l4s_ecn, L4S_RECEIVER_ECN)
    tx_classic_ecn = _choice("tx_classic_ecn", tx_classic_ecn, CLASSIC_ECN)
    rx_classic_ecn = _choice("rx_classic_ecn", rx_classic_ecn, CLASSIC_ECN)
    cc_l4s = cc_factor("cc_l4s", cc_l4s)
    cc_classic = cc_factor("cc_classic", cc_classic)
    rx_l4s_default = cc_l4s if rx_l4s_ecn == "accecn" else "cubic"
    rx_l4s_cc = cc_factor("rx_l4s_cc", rx_l4s_default if rx_l4s_cc is None else rx_l4s_cc)
    rx_classic_cc = cc_factor("rx_classic_cc", CLASSIC_RECEIVER_CC if rx_classic_cc is None else rx_classic_cc)
    n_l4s = _count("n_l4s", n_l4s)
    n_classic = _count("n_classic", n_classic)
    if tree_level is not None:
        tree_level = _choice("tree_level", tree_level, tuple(TREE_LINKS))
    if rmem_max is not None and (isinstance(rmem_max, bool) or not isinstance(rmem_max, int) or rmem_max < TCP_RMEM[1]):
        raise scenario_error(
            "rmem_max", f"must be a whole number of bytes, at least tcp_rmem's default {TCP_RMEM[1]}, got {rmem_max!r}"
        )
    if n_l4s + n_classic == 0:
        raise scenario_error("n_l4s", "n_l4s and n_classic are both 0: at least one flow is needed")
    if ecn_fallback and cc_l4s != "prague":
        raise scenario_error(
            "ecn_fallback",
            f"the classic-ECN fallback is a TCP Prague switch; got ecn_fallback={ecn_fallback} with cc_l4s={cc_l4s!r}",
        )
    for side, tx, rx, cc in (
        ("l4s", tx_l4s_ecn, rx_l4s_ecn, cc_l4s),
        ("classic", tx_classic_ecn, rx_classic_ecn, cc_classic),
    ):
        n = n_l4s if side == "l4s" else n_classic
        # a NEEDS_ECN CC (Prague, DCTCP) asks whatever tcp_ecn says (tcp_ecn_send_syn)
        if n and tx == "none" and rx != "none" and cc_spec(cc)["name"] not in CC_NEEDS_ECN:
            warnings.warn(
                f"rx_{side}_ecn={rx!r} has no effect: tx_{side}_ecn='none' never asks for ECN, "
                f"so the {side} flow runs without ECN (set tx_{side}_ecn to use it)",
                FactorWarning,
                stacklevel=2,
            )
    if seed is None:
        seed = seed_for_trial(trial) if trial is not None else 1
    elif isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise scenario_error("seed", f"must be a whole number (0 or more), got {seed!r}")

    qdisc = qdisc_for(aqm, n_bdp=n_bdp, btl_capacity=btl_capacity, base_rtt=base_rtt, ecn_threshold=ecn_threshold)

    l4s_cc = cc_spec(cc_l4s)
    if cc_l4s == "prague":
        l4s_cc["ecn_fallback"] = ecn_fallback
    # The receiving hosts: their CC (see the module doc) and tcp_ecn 3 / 1 / 0.
    l4s_receiver: dict[str, Any] = {"cc": cc_spec(rx_l4s_cc), "tcp": {"ecn": rx_l4s_ecn}}
    classic_receiver: dict[str, Any] = {"cc": cc_spec(rx_classic_cc), "tcp": {"ecn": rx_classic_ecn}}
    if rmem_max is not None:
        for receiver in (l4s_receiver, classic_receiver):
            receiver["tcp"]["rmem"] = [TCP_RMEM[0], TCP_RMEM[1], rmem_max]

    flows: list[dict[str, Any]] = []
    if n_l4s:
        flows.append(
            {"name": "l4s", "cc": l4s_cc, "tcp": {"ecn": tx_l4s_ecn}, "receiver": l4s_receiver, "streams": n_l4s}
        )
    if n_classic:
        flows.append(
            {
                "name": "classic",
                "cc": cc_spec(cc_classic),
                "tcp": {"ecn": tx_classic_ecn},
                "receiver": classic_receiver,
                "streams": n_classic,
            }
        )

    bottleneck: dict[str, Any] = {"rate": btl_capacity, "qdisc": qdisc}
    if extra.get("burst") is not None:
        bottleneck["burst"] = extra["burst"]
    topology: dict[str, Any]
    if tree_level is None:
        topology = {"kind": "dumbbell", "base_rtt": base_rtt, "bottleneck": bottleneck}
    else:
        link = {"link": TREE_LINKS[tree_level], **bottleneck}
        topology = {"kind": "tree", "base_rtt": base_rtt, "pairs": TREE_PAIRS, "bottlenecks": [link]}
        for f in flows:
            f["pair"] = 0 if f["name"] == "l4s" else 1
    if extra.get("nic_rate") is not None:
        topology["nic_rate"] = extra["nic_rate"]

    threshold = "" if aqm == "FIFO" else f"_T{_fmt(ecn_threshold)}"
    # Receiver CCs appear in the name only when they differ from the default.
    rx_l4s_tag = "" if rx_l4s_cc == rx_l4s_default else f"-rx{rx_l4s_cc}"
    rx_classic_tag = "" if rx_classic_cc == CLASSIC_RECEIVER_CC else f"-rx{rx_classic_cc}"
    tree_tag = "" if tree_level is None else f"_tree-{tree_level}"
    rmem_tag = "" if rmem_max is None else f"_rmem{rmem_max}"
    name = extra.get("name") or (
        f"{aqm}{tree_tag}_{_fmt(n_bdp)}bdp_{_fmt(btl_capacity)}mbit_{_fmt(base_rtt)}ms{threshold}_fb{ecn_fallback}"
        f"_{cc_l4s}-{tx_l4s_ecn}-{rx_l4s_ecn}{rx_l4s_tag}x{n_l4s}"
        f"_{cc_classic}-{tx_classic_ecn}-{rx_classic_ecn}{rx_classic_tag}x{n_classic}{rmem_tag}"
    )
    return {
        "name": name,
        "seed": seed,
        "duration": duration,
        "sample_interval": sample_interval,
        "topology": topology,
        "flows": flows,
    }


#: Factors a study point cannot do without.
REQUIRED_FACTORS = ("aqm", "n_bdp", "btl_capacity", "base_rtt")

#: The scenario field each factor becomes: a core error about the field is about the factor.
_FACTOR_OF_FIELD = {
    "topology.bottleneck.qdisc.limit": "n_bdp",
    "topology.bottleneck.qdisc.flow_limit": "n_bdp",
    "topology.bottleneck.rate": "btl_capacity",
    "duration": "duration",
    "topology.base_rtt": "base_rtt",
    "topology.bottleneck.qdisc.target_ms": "ecn_threshold",
    "topology.bottleneck.qdisc.ce_threshold_ms": "ecn_threshold",
    "flows[0].streams": "n_l4s",
}


def scenario_from_factors_table(d: dict[str, Any]) -> dict[str, Any]:
    """A scenario given as one point of the study's design: a ``[factors]`` table with the
    study's factor names (see ``l4sim.studies.factors``), plus optional ``name``, ``seed``,
    ``duration`` and ``sample_interval`` at the top level."""
    factors = d["factors"]
    if not isinstance(factors, dict):
        raise scenario_error("factors", f"expected a table of study factors, got {factors!r}")
    clash = [k for k in ("topology", "flows") if k in d]
    if clash:
        raise scenario_error(clash[0], "give either [factors] or topology/flows, not both")
    top = {k: v for k, v in d.items() if k != "factors"}
    unknown = sorted(set(top) - {"name", "seed", "duration", "sample_interval"})
    if unknown:
        raise scenario_error(
            unknown[0], "unknown key beside [factors] (allowed: name, seed, duration, sample_interval)"
        )
    known = (*FACTOR_NAMES, *RUN_PARAMS, *EXTRA_KEYS)
    strange = [k for k in factors if k not in known]
    if strange:  # a typo before what it leaves missing
        k = strange[0]
        raise scenario_error(f"factors.{k}", f"unknown factor {k!r}; known: {', '.join(known)}")
    missing = [k for k in REQUIRED_FACTORS if k not in factors]
    if missing:
        raise scenario_error(
            f"factors.{missing[0]}", f"missing: a study point needs {', '.join(REQUIRED_FACTORS)} in [factors]"
        )
    args = dict(factors)
    for k in ("seed", "duration", "sample_interval"):
        if k in top:
            args[k] = top[k]
    try:
        out = scenario_from_factors(**args)
        # the magnitudes first: a base RTT of 1e30 ms made a buffer no whole number holds,
        # which the core blamed on n_bdp
        check_scale(out, None)
        _core.validate(json.dumps(out))
    except ScenarioError as e:
        field = getattr(e, "field", "")
        field = field.replace("topology.bottlenecks[0].", "topology.bottleneck.")  # the tree's
        field = _FACTOR_OF_FIELD.get(field, field)
        msg = plain_words(getattr(e, "message", str(e)))
        if field in factors:
            raise scenario_error(f"factors.{field}", msg) from None
        if field:
            raise scenario_error(field, msg) from None
        raise
    if "name" in top:
        out["name"] = top["name"]
    return out


def run_factors(**factors: Any) -> Any:
    """Run one point of the study's design (see :func:`scenario_from_factors`); a RunResult."""
    from l4sim.api import run
    from l4sim.scenario import Scenario

    return run(Scenario.from_dict(scenario_from_factors(**factors)))
