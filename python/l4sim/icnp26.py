"""The multi-AS study (ICNP 2026, "Extending low latency service across the Internet") as
l4sim scenarios: the six-AS topology and the scenarios S1, S2a/S2b, S3a/S3b, S4a/S4b.

What each piece follows in the study's artifacts (github.com/fatihsarpkaya/L4S-ICNP2026):

- Topology: ``utils/generate-graph.py`` and the notebook's node list (``experiment_notebook
  .ipynb``, "Planned nodes"): ASes 1..6, inter-AS edges 1-2, 1-4, 2-3, 2-6, 3-4, 4-5 as edge
  router pairs ``r-X-Y``/``r-Y-X``, each edge router wired to both cores of its AS
  (``r-core1-X``, ``r-core2-X``), access routers ``r-access-5``/``r-access-6`` on both cores,
  endpoints ``e-0..2-5`` and ``e-0..2-6`` on one LAN per access router (modelled as a switch
  ``lan-5``/``lan-6`` so the access router's one shaped LAN egress is shared, as on the testbed).
- Background hosts: the notebook's extra nodes (``node_k`` on ``r-core1-5``, ``node_s`` on
  ``r-4-5``, ``node_m`` on ``r-4-3``, ``node_f`` on ``r-2-3``, ``node_g`` on ``r-6-2``) and the
  pairs of ``Experiment_Data/main-results/exp-data-all-scenarios/*/bg_*_to_*_p*.mgn``:
  ``eps_to_k`` (``e-2-5`` to node_k: the sender access uplink), ``s_to_m`` (across
  AS4's core), ``m_to_f`` (across AS3's core), ``f_to_g`` (across the AS2-AS6 peering link).
- Paths: the notebook's path verification (NIC byte counters), its ``SCENARIOS`` table
  (``assumes_srv6``, ``assumes_bgp_community``), ``utils/srv6_policy.py`` and the OSPF costs of
  ``utils/configure_node_routing.py``/``utils/no_bgp.py`` (cost 20 on every interface facing a
  core1 router). Without SRv6 (S1, S3a, S4a, S4b) both classes take the core2 planes via AS3
  (AS5-AS4-AS3-AS2-AS6). With SRv6 (S2a, S2b, S3b) the access and edge routers send ECT(1) and
  CE packets and TCP segments with ECE or CWR over the core1 routers (a policy route by those
  ECN tests) and the rest over the core2 routers: with the BGP community (S3b) L4S goes via
  AS1 (AS5-AS4-AS1-AS2-AS6), without it (S2a, S2b) by the same ASes as classic. So in S2 L4S,
  ``eps_to_k`` (a static route via ``r-core1-5``) and of classic only its segments with CWR
  (and ECN set-up SYNs) reach the sender access bottleneck; the rest of classic leaves AS5 by
  ``r-core2-5``.
- ECN: the notebook's ``tcp_ecn`` per host: AccECN with Prague on the L4S pair, RFC 3168 with
  CUBIC on every other host (classic flows and background).
- Queues: the routers' tc configuration as the study's brief lists it (``docs/icnp26.md``,
  "Queues") (receiver access DualPI2 at 100 Mbit/s, sender access FIFO at 1 Gbit/s, core and peering
  FIFOs at 4 Gbit/s, the "priority capped" prio/tbf/PIE tree).
- Traffic per trial: the same section and the ``l4s_*``/``classic_*`` result files' names.
- Background (``background="study"``): the notebook's MGEN script generator
  (``bg_mgen_script``) and its profiles (``PROFILES``): per pair long periodic flows and Poisson
  batches of 4.8-5 s MGEN sessions, the scenario's heavy pair with its heavy profile.

Departures (also in ``docs/icnp26.md``): the testbed's ~1 ms of forwarding latency is 0.25 ms
on each host link each way (the study pairs: 31 ms with the receivers' netem); by default
(``background="load"``) the background's offered load at the scenario's bottleneck is set as a
fraction of its rate (``heavy_load``, default 0.8); ``scale`` < 1 scales the core, peering and sender-access rates (floor 250 Mbit/s), their
buffers, the tbf caps (floor 120 Mbit/s) and the background (with ``"study"``, its message and
session arrival rates with the rates of the links each pair loads); the receiver access and the
study traffic keep their real rates; the classic long flows run to the end (the study: to
115 s); SRv6 is a policy route by the study's ECN tests (ECT(1), CE, TCP ECE or CWR), so a classic
sender's ECN set-up SYN and its segments with CWR take core1 too, as in the study.
"""

from __future__ import annotations

import random
from typing import Any

SCENARIOS: dict[str, str] = {
    "S1": "access only (reference): DualPI2 at the receiver access is the only bottleneck",
    "S2a": "sender access bottleneck (L4S's egress under SRv6), FIFO",
    "S2b": "sender access bottleneck (L4S's egress under SRv6), rate-capped priority queue for L4S",
    "S3a": "AS4 core bottleneck, shared FIFO",
    "S3b": "AS4 core bottleneck, SRv6 path separation (L4S via AS1 on the core1 planes)",
    "S4a": "AS2-AS6 peering bottleneck, shared FIFO",
    "S4b": "AS2-AS6 peering bottleneck, rate-capped priority queue for L4S",
}

AS_EDGES = [(1, 2), (1, 4), (2, 3), (2, 6), (3, 4), (4, 5)]
L4S_DSCP = 10
BASE_RTT_MS = 30.0  # the study pairs' netem delay, and the RTT its 2 x BDP buffers are sized for
# The notebook's "A3+A5" cell: `netem delay 30ms limit 60000` on the receivers' egress only (the
# ACK direction), nothing on the background hosts, whose RTT it puts at about 1 ms ("4
# concurrent longs on 4 Gbps @ 1 ms bg RTT"): the virtual machines' forwarding. Modelled as
# that 1 ms spread over the host links, a quarter each way, so every host pair's base RTT
# is 1 ms, plus the receivers' 30 ms for the study pairs.
RECEIVER_NETEM = {"kind": "netem", "delay_ms": BASE_RTT_MS, "limit": 60000}
HOST_DELAY_MS = 0.25

RECV_ACCESS_MBPS = 100.0
SEND_ACCESS_MBPS = 1000.0
CORE_MBPS = 4000.0
LINE_MBPS = 10000.0  # unshaped links: never the bottleneck

# The egresses the scenarios shape (besides the access routers').
CORE4 = ("r-core2-4", "r-4-3")  # AS4 core toward AS3 (classic/shared path)
CORE3 = ("r-core2-3", "r-3-2")  # AS3 core toward AS2
PEER = ("r-2-6", "r-6-2")  # AS2 -> AS6 peering link
SEND5 = ("r-access-5", "r-core1-5")  # the sender access egress the study shapes (core1's)
RECV6 = ("r-access-6", "lan-6")

# The bottleneck egress per scenario family and the background pair crossing it.
BOTTLENECK = {"S1": RECV6, "S2": SEND5, "S3": CORE4, "S4": PEER}
HEAVY_PAIR = {"S2": "eps_to_k", "S3": "s_to_m", "S4": "f_to_g"}

# The paths, router by router: classic traffic (and L4S without SRv6) on the core2 planes via
# AS3; L4S under SRv6 on the core1 planes, via AS1 with the BGP community, else via AS3.
_CLASSIC = (
    "lan-5 r-access-5 r-core2-5 r-5-4 r-4-5 r-core2-4 r-4-3 r-3-4 r-core2-3 "
    "r-3-2 r-2-3 r-core2-2 r-2-6 r-6-2 r-core2-6 r-access-6 lan-6"
).split()
_L4S_CORE1 = [r.replace("core2", "core1") for r in _CLASSIC]
_L4S_VIA_AS1 = (
    "lan-5 r-access-5 r-core1-5 r-5-4 r-4-5 r-core1-4 r-4-1 r-1-4 r-core1-1 "
    "r-1-2 r-2-1 r-core1-2 r-2-6 r-6-2 r-core1-6 r-access-6 lan-6"
).split()
# The notebook's SCENARIOS: SRv6 path separation on (and the BGP community on) per scenario.
SRV6 = {"S2a", "S2b", "S3b"}
# What its access and edge routers send over core1 (`utils/srv6_policy.py`: ip6tables `-m ecn`
# rules that set the fwmark of table 100): ECT(1) and CE packets, TCP segments with ECE or CWR.
SRV6_ECN_TESTS = ("ect1", "ce", "tcp_ece", "tcp_cwr")
BGP_COMMUNITY = {"S3b"}
_BG_PATHS = {
    "eps_to_k": ["r-access-5", "r-core1-5", "node_k"],
    "s_to_m": ["node_s", "r-4-5", "r-core2-4", "r-4-3", "node_m"],
    "m_to_f": ["node_m", "r-4-3", "r-3-4", "r-core2-3", "r-3-2", "r-2-3", "node_f"],
    "f_to_g": ["node_f", "r-2-3", "r-core2-2", "r-2-6", "r-6-2", "node_g"],
}
BG_HOSTS = {"node_k": "r-core1-5", "node_s": "r-4-5", "node_m": "r-4-3", "node_f": "r-2-3", "node_g": "r-6-2"}

MSG = 65000  # MGEN message size, bytes
# The study's background profiles (the notebook's `background_profiles`, read 2026-11-29): per
# pair 4 long periodic flows of `long_mbps`, and batch events at `event_rate` per second of a
# Poisson number of sessions (mean `batch_mean`, 1..`batch_max`), each `burst_mbps` for
# `size_mb` x 8 / `burst_mbps` seconds (the generator takes the size as 10^6 bytes).
PROFILES: dict[str, dict[str, float]] = {
    "light": {"long_mbps": 30, "burst_mbps": 5, "size_mb": 3, "event_rate": 1.0, "batch_mean": 4.0, "batch_max": 15},
    "heavy_1g": {"long_mbps": 15, "burst_mbps": 8, "size_mb": 5, "event_rate": 3.5, "batch_mean": 5.0, "batch_max": 20},
    "heavy_4g": {
        "long_mbps": 30,
        "burst_mbps": 10,
        "size_mb": 6,
        "event_rate": 10.0,
        "batch_mean": 5.5,
        "batch_max": 25,
    },
}
HEAVY_PROFILE = {"eps_to_k": "heavy_1g", "s_to_m": "heavy_4g", "f_to_g": "heavy_4g", "m_to_f": "heavy_4g"}
BATCH_JITTER_S = 0.5  # a session starts within 0.5 s around its batch event
POISSON_FRACTION = 0.25  # of the sessions MGEN POISSON, the rest PERIODIC
# background="load": the offered load of the background at the scenario's bottleneck, as a
# fraction of its rate: the study traffic (up to the 100 Mbit/s receiver access) then finds that
# link its bottleneck.
HEAVY_LOAD = 0.8
BACKGROUNDS = ("load", "study")


def scenario_names() -> list[str]:
    return list(SCENARIOS)


def _bfifo(mbps: float) -> dict[str, Any]:
    """bfifo of 2 x BDP at the base RTT."""
    return {"kind": "bfifo", "limit": int(2 * mbps * 1e6 / 8 * BASE_RTT_MS / 1e3)}


def _priority(mbps: float, cap_mbps: float) -> dict[str, Any]:
    """The study's "priority capped" tree: prio, DSCP 10 -> tbf cap -> PIE 1 ms; rest PIE 15 ms."""
    pie_l = {
        "kind": "pie",
        "limit": 20000,
        "target_ms": 1,
        "tupdate_ms": 16,
        "alpha": 2,
        "beta": 20,
        "ecn": True,
        "bytemode": True,
    }
    pie_c = {"kind": "pie", "limit": 20000, "target_ms": 15, "ecn": True, "bytemode": True}
    tbf = {"kind": "tbf", "rate_mbps": cap_mbps, "burst": 102400, "limit": 10_000_000, "child": pie_l}
    return {"kind": "prio", "bands": 3, "filters": [{"dscp": L4S_DSCP, "band": 0}], "children": [tbf, pie_c]}


def _dualpi2() -> dict[str, Any]:
    return {
        "kind": "dualpi2",
        "limit": 1000,
        "target_ms": 15,
        "tupdate_ms": 16,
        "alpha": 0.16,
        "beta": 3.2,
        "step_thresh_ms": 1,
        "coupling_factor": 2,
        "c_protection": 10,
    }


MIN_SCALED_MBPS = 2.5 * RECV_ACCESS_MBPS
MIN_CAP_MBPS = 1.2 * RECV_ACCESS_MBPS


def scaled_rates(scale: float) -> tuple[float, float]:
    """Sender-access and core/peering rates at ``scale``, never below 2.5 x the receiver access
    (so the receiver access stays the only bottleneck where the study has no other)."""
    return (max(SEND_ACCESS_MBPS * scale, MIN_SCALED_MBPS), max(CORE_MBPS * scale, MIN_SCALED_MBPS))


def cap_rate(study_mbps: float, scale: float) -> float:
    """The L4S band's tbf rate at ``scale``: the study's x scale, never below 1.2 x the receiver
    access (the study's caps, 200 and 1000 Mbit/s, exceed what one 100 Mbit/s access carries)."""
    return max(study_mbps * scale, MIN_CAP_MBPS)


def topology(scenario: str = "S1", *, scale: float = 1.0) -> dict[str, Any]:
    """The six-AS graph with the queues of ``scenario`` (see ``SCENARIOS``)."""
    check_scenario(scenario)
    fam, variant = scenario[:2], scenario[2:]
    nodes: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    routers: set[str] = set()

    def router(n: str) -> None:
        if n not in routers:
            routers.add(n)
            nodes.append({"name": n})

    def link(a: str, b: str, rate: float = LINE_MBPS, delay: float = 0.0, **kw: Any) -> None:
        links.append({"a": a, "b": b, "rate": rate, "delay_ms": delay, **kw})

    for asn in range(1, 7):
        router(f"r-core1-{asn}")
        router(f"r-core2-{asn}")
    for x, y in AS_EDGES:
        for a, b in ((x, y), (y, x)):
            router(f"r-{a}-{b}")
            for c in (1, 2):
                link(f"r-{a}-{b}", f"r-core{c}-{a}")
        link(f"r-{x}-{y}", f"r-{y}-{x}")
    for asn in (5, 6):
        router(f"r-access-{asn}")
        router(f"lan-{asn}")
        for c in (1, 2):
            link(f"r-access-{asn}", f"r-core{c}-{asn}")
        link(f"r-access-{asn}", f"lan-{asn}")
        for i in range(3):
            nodes.append({"name": f"e-{i}-{asn}", "kind": "host"})
            link(f"lan-{asn}", f"e-{i}-{asn}", delay=HOST_DELAY_MS)
    for h, r in BG_HOSTS.items():
        nodes.append({"name": h, "kind": "host"})
        link(r, h, delay=HOST_DELAY_MS)

    def shape(a: str, b: str, rate: float, qdisc: dict[str, Any], burst: int | None = None) -> None:
        for ln in links:
            if (ln["a"], ln["b"]) == (a, b):
                key = "ab"
            elif (ln["a"], ln["b"]) == (b, a):
                key = "ba"
            else:
                continue
            spec: dict[str, Any] = {"rate": rate, "qdisc": qdisc}
            if burst:
                spec["burst"] = burst
            ln[key] = spec
            return
        raise KeyError(f"no link {a} - {b}")

    for i in range(3):
        shape(f"e-{i}-6", "lan-6", LINE_MBPS, dict(RECEIVER_NETEM))
    # Receiver access: HTB 100 Mbit/s -> DualPI2 (every scenario).
    shape(*RECV6, RECV_ACCESS_MBPS, _dualpi2(), burst=1600)
    send, core = scaled_rates(scale)
    prio_s2 = fam == "S2" and variant == "b"
    shape(*SEND5, send, _priority(send, cap_rate(200, scale)) if prio_s2 else _bfifo(send))
    shape(*CORE4, core, _bfifo(core))
    shape(*CORE3, core, _bfifo(core))
    shape(*PEER, core, _priority(core, cap_rate(1000, scale)) if scenario == "S4b" else _bfifo(core))

    routes: list[dict[str, Any]] = []
    for i in range(3):
        src, dst = f"e-{i}-5", f"e-{i}-6"
        if scenario in SRV6:
            l4s = _L4S_VIA_AS1 if scenario in BGP_COMMUNITY else _L4S_CORE1
            routes.append({"ecn": list(SRV6_ECN_TESTS), "path": [src, *l4s, dst]})
        routes.append({"path": [src, *_CLASSIC, dst]})
    for i in range(3):  # the static route to node_k, for every sender endpoint (eps_to_k: e-2-5)
        routes.append({"path": [f"e-{i}-5", "lan-5", *_BG_PATHS["eps_to_k"]]})
    for pair in ("s_to_m", "m_to_f", "f_to_g"):
        routes.append({"path": _BG_PATHS[pair]})
    return {"kind": "graph", "nodes": nodes, "links": links, "routes": routes}


def check_scenario(name: str) -> None:
    if name not in SCENARIOS:
        raise ValueError(f"unknown ICNP'26 scenario {name!r}; one of {', '.join(SCENARIOS)}")


# The notebook's cell "A2" (and `_set_per_trial_cc_ecn` before every trial): `tcp_ecn=3` with
# Prague on the L4S pair, `tcp_ecn=1` with CUBIC on every other host, so the classic flows and
# the background negotiate RFC 3168 ECN (the stored DualPI2 counters and iperf3 reports agree:
# window cuts without retransmissions).
def _cubic() -> dict[str, Any]:
    return {
        "cc": {"name": "cubic"},
        "tcp": {"ecn": "classic"},
        "receiver": {"cc": {"name": "cubic"}, "tcp": {"ecn": "classic"}},
    }


def _prague(**kw: Any) -> dict[str, Any]:
    return {
        "cc": {"name": "prague"},
        "tcp": {"ecn": "accecn"},
        "dscp": L4S_DSCP,
        "receiver": {"cc": {"name": "prague"}, "tcp": {"ecn": "accecn"}},
        **kw,
    }


# The study's hosts (the notebook's addresses and generators): L4S e-0-5 -> e-0-6, classic
# e-1-5 -> e-1-6, the eps_to_k background from e-2-5.
L4S_HOSTS = {"from": "e-0-5", "to": "e-0-6"}
CLASSIC_HOSTS = {"from": "e-1-5", "to": "e-1-6"}


def study_flows(duration: float, rng: random.Random) -> list[dict[str, Any]]:
    """The study traffic of one trial, times compressed to ``duration`` (120 s: the study's): L4S
    from ``e-0-5`` to ``e-0-6``, classic from ``e-1-5`` to ``e-1-6``, as the notebook's
    generators send them."""
    k = duration / 120.0
    t = lambda s: round(s * k, 4)  # noqa: E731
    flows: list[dict[str, Any]] = []
    for j, start in enumerate((10, 25, 40)):  # streaming: 10 Mbit/s in 2 s chunks
        flows.append(
            _prague(
                name=f"l4s_stream_{j}",
                **L4S_HOSTS,
                start=t(start),
                source={"kind": "chunks", "rate_mbps": 10.0, "period": 2.0},
            )
        )
    for j, (start, stop) in enumerate(((10, 70), (25, 85), (40, 100), (50, 110))):  # calls
        flows.append(
            {
                "name": f"l4s_call_{j}",
                **L4S_HOSTS,
                "dscp": L4S_DSCP,
                "start": t(start),
                "source": {"kind": "udp_prague", "max_rate_mbps": 5.0, "packet_size": 1200, "stop": t(stop)},
            }
        )
    for j in range(5):  # L4S transfers: 10 MiB from 25 s, one every 10 s
        flows.append(
            _prague(
                name=f"l4s_xfer_{j}",
                **L4S_HOSTS,
                start=t(25 + 10 * j),
                size=10 * 2**20,
            )
        )
    for j, start in enumerate((5, 15, 25)):  # classic long CUBIC flows, to 115 s
        flows.append(
            {
                "name": f"classic_long_{j}",
                **CLASSIC_HOSTS,
                **_cubic(),
                "start": t(start),
                "stop": t(115),
            }
        )
    for j in range(5):  # classic transfers: 5 MiB at random starts in 20-90 s
        flows.append(
            {
                "name": f"classic_xfer_{j}",
                **CLASSIC_HOSTS,
                **_cubic(),
                "start": t(rng.uniform(20, 90)),
                "size": 5 * 2**20,
            }
        )
    return flows


def background_flows(
    scenario: str,
    duration: float,
    *,
    scale: float = 1.0,
    heavy_load: float = HEAVY_LOAD,
    background: str = "load",
) -> list[dict[str, Any]]:
    """The MGEN background of the four pairs (``eps_to_k``, ``s_to_m``, ``m_to_f``,
    ``f_to_g``): ``"load"`` sets the heavy pair's offered load at the scenario's bottleneck
    (``heavy_load`` x its rate), so that the bottleneck is loaded whatever the scale;
    ``"study"`` runs the study's own MGEN scripts' process at its rates (docs/icnp26.md)."""
    if background == "study":
        return _study_background(scenario, duration, scale)
    return _load_background(scenario, duration, scale, heavy_load)


# The background pairs: sending host and receiving host.
BG_PAIRS = {
    "eps_to_k": ("e-2-5", "node_k"),
    "s_to_m": ("node_s", "node_m"),
    "m_to_f": ("node_m", "node_f"),
    "f_to_g": ("node_f", "node_g"),
}


def _pair_flows(
    pair: str, long_rate: float, bursts: dict[str, Any] | None, start: float, stop: float
) -> list[dict[str, Any]]:
    """A background pair's flows: 4 long flows of ``long_rate`` 65,000 B messages a second on
    persistent connections (from 0, 0.5, 1, 1.5 s), and its ``bursts`` (a ``messages`` source's
    own fields) from ``start``; all stop at ``stop``."""
    src, dst = BG_PAIRS[pair]
    msgs = {"kind": "messages", "message_size": MSG, "stop": stop}
    out = [
        {
            "name": f"bg_{pair}_long_{j}",
            "from": src,
            "to": dst,
            **_cubic(),
            "start": 0.5 * j,
            "source": {**msgs, "rate": long_rate, "poisson": False, "persistent": True},
        }
        for j in range(4)
    ]
    if bursts is not None:
        out.append(
            {
                "name": f"bg_{pair}_bursts",
                "from": src,
                "to": dst,
                **_cubic(),
                "start": start,
                "source": {**msgs, "poisson": True, **bursts},
            }
        )
    return out


def _load_background(scenario: str, duration: float, scale: float, heavy_load: float) -> list[dict[str, Any]]:
    """``background="load"``: per pair 4 long flows of 58 x 65,000 B/s (30 Mbit/s) and Poisson
    batches of 1..10 messages of 65,000 B on new connections (10 batches/s, 28.6 Mbit/s); at the
    scenario's bottleneck the batches are made heavy (offered ``heavy_load`` x its rate),
    standing in for the study's eight burst processes there."""
    heavy = HEAVY_PAIR.get(scenario[:2])
    out: list[dict[str, Any]] = []
    for pair in BG_PAIRS:
        if pair == heavy:
            send, core = scaled_rates(scale)
            bott = send if pair == "eps_to_k" else core
            offered = heavy_load * bott - 4 * 58 * MSG * 8 / 1e6 * scale
            rate = max(offered, 0.0) * 1e6 / (5.5 * MSG * 8)
        else:
            rate = 10.0 * scale
        # nothing left to offer (heavy_load 0, a tiny scale): no burst source
        bursts = {"rate": round(rate, 3), "batch_min": 1, "batch_max": 10} if round(rate, 3) else None
        out += _pair_flows(pair, 58 * scale, bursts, 5.0 * duration / 120, round(duration * 115 / 120, 4))
    return out


def per_second(mbps: float) -> int:
    """MGEN messages of 65,000 B per second for a rate (the generator's rounding, at least 1)."""
    return max(1, round(mbps * 1e6 / (8 * MSG)))


def _study_background(scenario: str, duration: float, scale: float) -> list[dict[str, Any]]:
    """``background="study"``: as the study's generator makes it (its profile per pair,
    ``PROFILES``): 4 long periodic flows on persistent connections, and Poisson batch
    events of sessions (a Poisson number per batch, each session starting within 0.5 s of its
    event, one connection writing 65,000 B messages for 4.8-5 s, a quarter of them at
    exponential gaps). The long flows' message rates and the event rates scale with the links
    the pair loads (the sender access for ``eps_to_k``, the core and peering links for the
    others: their rate at ``scale`` over the study's), so each pair offers its links the share
    it offers them in the study."""
    heavy = HEAVY_PAIR.get(scenario[:2])
    send, core = scaled_rates(scale)
    t = lambda x: round(x * duration / 120, 4)  # noqa: E731 - the study's times, compressed
    out: list[dict[str, Any]] = []
    for pair in BG_PAIRS:
        prof = PROFILES[HEAVY_PROFILE[pair] if pair == heavy else "light"]
        f = send / SEND_ACCESS_MBPS if pair == "eps_to_k" else core / CORE_MBPS
        bursts = {
            "rate": round(prof["event_rate"] * f, 4),
            "batch_mean": prof["batch_mean"],
            "batch_max": prof["batch_max"],
            "jitter": BATCH_JITTER_S,
            "session": {
                "duration": prof["size_mb"] * 8 / prof["burst_mbps"],
                "rate": per_second(prof["burst_mbps"]),
                "poisson_fraction": POISSON_FRACTION,
            },
        }
        out += _pair_flows(pair, round(per_second(prof["long_mbps"]) * f, 4), bursts, t(5), t(115))
    return out


FULL = {"duration": 120.0, "scale": 0.1}
QUICK = {"duration": 20.0, "scale": 0.05}


def scenario(
    name: str,
    *,
    trial: int = 1,
    duration: float | None = None,
    scale: float | None = None,
    quick: bool = False,
    heavy_load: float = HEAVY_LOAD,
    background: str = "load",
    sample_interval: float = 0.5,
) -> dict[str, Any]:
    """One scenario's run as a scenario dict for ``l4sim.run`` (seeded by ``trial``); ``quick``:
    20 s at scale 0.05 instead of the study's 120 s at scale 0.1, unless given; ``background``:
    ``"load"`` or ``"study"`` (``background_flows``)."""
    check_scenario(name)
    base = QUICK if quick else FULL
    duration = base["duration"] if duration is None else duration
    scale = base["scale"] if scale is None else scale
    if not 0 < scale <= 1:
        raise ValueError(f"scale must be in (0, 1], got {scale}")
    if duration <= 0:
        raise ValueError(f"duration must be > 0, got {duration}")
    if background not in BACKGROUNDS:
        raise ValueError(f"background must be one of {', '.join(BACKGROUNDS)}, got {background!r}")
    rng = random.Random(f"icnp26-{trial}")
    flows = study_flows(duration, rng) + background_flows(
        name, duration, scale=scale, heavy_load=heavy_load, background=background
    )
    return {
        "name": f"icnp26_{name}_t{trial}",
        "duration": duration,
        "seed": trial,
        "sample_interval": sample_interval,
        "topology": topology(name, scale=scale),
        "flows": flows,
    }


def bottleneck_egresses(name: str) -> list[str]:
    """The egress names ("a->b") whose queue counters the report shows for ``name``."""
    check_scenario(name)
    fam = name[:2]
    out = ["->".join(RECV6)]
    if fam != "S1":
        out.append("->".join(BOTTLENECK[fam]))
    return out
