"""What the demo page controls and shows: its settings, presets and one live simulation.

Modelled on the 2016 DualPI2 demo (Nokia Bell Labs / Simula, ``L4STeam/l4sdemo``; README's
"Live demo" section): two clients A and B download through one
bottleneck. Each client has 0-10 long downloads (bulk flows), a web-browsing load (a ``web``
source: Poisson requests, each a new TCP connection, Pareto sizes), an application-limited
stream and a constant-bit-rate UDP share (both off by default), one congestion control with its
ECN setting, and an extra RTT on top of the link's base RTT. The link has an AQM, a capacity and
a base RTT.

A :class:`Session` keeps one :class:`l4sim.Simulation` running indefinitely and turns every
control change into a change of the running simulation (``add_flow``/``remove_flow``/
``set_flow``/``set_link``), never a restart. :meth:`Session.tick` steps it and returns one frame
of the displays; the 60 s histories are bounded, and the simulation forgets what each frame
read (``keep_history=False``), so memory stays flat however long the page stays open.

Choices where the demo's testbed has no direct counterpart here:

* A running bulk flow keeps the CC it started with (``set_flow(cc=)`` applies to new
  connections), so changing a client's CC restarts its long downloads under fresh names.
* PIE, CoDel and FQ-CoDel run with ``ecn`` on, so ECN flows get marks and others drops.
* "Step threshold" is CoDel with ``ce_threshold_ms = 1`` (every ECN-capable packet that waited
  over 1 ms is CE-marked, the DCTCP-style step AQM); non-ECN traffic still meets CoDel's 5 ms
  target.
* "Tail drop" in ms is a ``bfifo`` holding that long at the link's capacity (re-sized, i.e.
  replaced, when the capacity changes); in packets, a ``pfifo`` of 1000 (a device's default
  ``txqueuelen``).
* "RED + ECN" is RED as the demo's ``set_aqm_link.sh`` meant it (``limit 1600000 min 120000
  max 360000 avpkt 1000 burst 220 ecn bandwidth`` the link's capacity; the script's own line
  had its limit overridden by a later ``limit 40000`` and an unset bandwidth variable).
* "DualPI2, any ECT" is ``ecn_mask = "any_ect"``: ECT(0) goes to the L queue too, how the 2016
  demo classified DCTCP; plain "DualPI2" is today's default (ECT(1) only).
* "DualPI2, ... or client A's address" classifies by address as the 2016 demo could (a tc
  filter on server A's address, ``u32 match ip src``): A's traffic goes to the L queue
  whatever its ECN codepoint, as a tc filter does on today's DualPI2 (mainline Linux 6.17;
  the ECN mask still sends ECT(1) to L first). The model's filters match a DSCP, so A's packets
  carry DSCP 10 (:data:`ADDRESS_DSCP`) standing for the address; nothing else looks at it.
  A classic CC in the L queue meets the L4S AQM: marks at ``k p'`` and above 1 ms, and
  drops where a Not-ECT packet would be marked.
* "Application-limited" (the 2016 demo's AL check box) started an interactive game server
  (``demo/sh/al_*.sh``) whose code and rate are not published. Here it is a frame stream on one
  persistent TCP connection with the client's CC: 60 frames per second of the chosen rate's
  size (a ``messages`` source, periodic), so the flow sends below its window, as an
  application-limited one does. Off, 2, 5, 10 or 20 Mbit/s.
* "CBR" is ``iperf -u -b RATE`` as the demo's ``__cbr.sh`` ran it: unresponsive UDP at a
  constant rate (1470-byte datagrams, iperf's default). The 2016 demo classified by IP address;
  here the stream carries the ECN codepoint of its client's CC (Not-ECT, ECT(0), or ECT(1) for
  Prague), so it joins that client's queue. 0-1000 Mbit/s.
* "Prague, classic-ECN fallback" is the detector as designed (``detect_refs = "scaled"``): it
  fires behind a single-queue classic-ECN AQM and stays quiet behind DualPI2. "Prague, fallback
  as the 5.15 kernels built it" is the scenario files' default (``"unscaled"``, L4STeam/linux
  issue 38): the 5.15 builds' score unit changed without its reference constants, so the
  detector also fires behind DualPI2 and Prague gives most of its share away (study.md,
  finding 5).
* A client's queue delay mixes its flows' per-packet delay distributions weighted by their
  packet counts (:func:`mix_delay`).
"""

from __future__ import annotations

import copy
import math
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from l4sim.classes import class_probabilities
from l4sim.simulation import Simulation

__all__ = [
    "AQMS",
    "CCS",
    "CLIENTS",
    "DEFAULT",
    "PRESETS",
    "DemoError",
    "Session",
    "check",
    "mix_delay",
]

CLIENTS = ("A", "B")
HISTORY_S = 60  # seconds of mark/drop probability and utilisation history
MAX_FCT_POINTS = 500  # completed transfers per client and frame sent to the page


class DemoError(ValueError):
    """A control value the demo cannot use; ``str(e)`` is the one-line message for the page."""


def _ecn(cc: Any, ecn: str, receiver_cc: str | None = None) -> dict[str, Any]:
    recv: dict[str, Any] = {"tcp": {"ecn": ecn}}
    if receiver_cc:
        recv["cc"] = receiver_cc
    return {"cc": cc, "tcp": {"ecn": ecn}, "receiver": recv}


#: Congestion control + ECN choices: key -> (label, flow fields). DCTCP negotiates classic ECN
#: and needs a DCTCP receiver (its CE echo); Prague needs AccECN at both ends (a Prague
#: listener), as on the testbed. BBR runs without ECN.
CCS: dict[str, tuple[str, dict[str, Any]]] = {
    "cubic": ("CUBIC", _ecn("cubic", "none")),
    "cubic_ecn": ("CUBIC + ECN", _ecn("cubic", "classic")),
    "reno": ("Reno", _ecn("reno", "none")),
    "dctcp": ("DCTCP", _ecn("dctcp", "classic", "dctcp")),
    "prague": ("Prague", _ecn({"name": "prague", "ecn_fallback": 0}, "accecn", "prague")),
    "prague_fallback": (
        "Prague, classic-ECN fallback",
        _ecn({"name": "prague", "ecn_fallback": 1, "detect_refs": "scaled"}, "accecn", "prague"),
    ),
    "prague_fallback_515": (
        "Prague, fallback as the 5.15 kernels built it",
        _ecn({"name": "prague", "ecn_fallback": 1, "detect_refs": "unscaled"}, "accecn", "prague"),
    ),
    "bbr": ("BBRv1", _ecn("bbr", "none")),
    "bbr2": ("BBRv2", _ecn("bbr2", "none")),
    "bbr3": ("BBRv3", _ecn("bbr3", "none")),
}


def _codepoint(cc: str) -> str:
    """The ECN codepoint the client's CC sends: what its CBR stream carries."""
    ecn = CCS[cc][1]["tcp"]["ecn"]
    return {"none": "not_ect", "classic": "ect0", "accecn": "ect1"}[ecn]


def _tail_drop(capacity: float, ms: float) -> dict[str, Any]:
    return {"kind": "bfifo", "limit": max(1514, int(capacity * 1e6 / 8 * ms / 1000))}


def _red(capacity: float) -> dict[str, Any]:
    return {
        "kind": "red",
        "limit": 1_600_000,
        "min": 120_000,
        "max": 360_000,
        "avpkt": 1000,
        "burst": 220,
        "ecn": True,
        "bandwidth_mbps": capacity,
    }


def _pie(target_ms: float) -> dict[str, Any]:
    return {"kind": "pie", "target_ms": target_ms, "ecn": True}


#: The DSCP client A's packets carry, standing for server A's address (what the classifier by
#: address matches).
ADDRESS_DSCP = 10

#: AQM choices: key -> (label, qdisc at a capacity in Mbit/s).
AQMS: dict[str, tuple[str, Any]] = {
    "dualpi2": ("DualPI2 (L4S = ECT(1))", lambda c: {"kind": "dualpi2"}),
    "dualpi2_any": ("DualPI2, any ECT is L4S (2016)", lambda c: {"kind": "dualpi2", "ecn_mask": "any_ect"}),
    "dualpi2_addr": (
        "DualPI2, L4S = ECT(1) or client A's address",
        lambda c: {"kind": "dualpi2", "filters": [{"dscp": ADDRESS_DSCP, "class": "l4s"}]},
    ),
    **{  # the demo's four targets and Linux's default
        f"pie{t}": (f"PIE {t} ms" + (" (default)" if t == 15 else ""), lambda c, t=t: _pie(t))
        for t in (1, 5, 10, 15, 40)
    },
    "fq_codel": ("FQ-CoDel", lambda c: {"kind": "fq_codel", "ecn": True}),
    "fq_codel_l4s": (
        "FQ-CoDel + L4S CE threshold 1 ms",
        lambda c: {
            "kind": "fq_codel",
            "ecn": True,
            "ce_threshold_ms": 1,
            "ce_threshold_selector": 1,
            "ce_threshold_mask": 3,
        },
    ),
    "codel": ("CoDel", lambda c: {"kind": "codel", "ecn": True}),
    "step": ("Step threshold 1 ms", lambda c: {"kind": "codel", "ecn": True, "ce_threshold_ms": 1}),
    "red": ("RED + ECN", _red),
    "taildrop20": ("Tail drop, 20 ms", lambda c: _tail_drop(c, 20)),
    "taildrop": ("Tail drop, 100 ms", lambda c: _tail_drop(c, 100)),
    "taildrop_1000p": ("Tail drop, 1000 packets", lambda c: {"kind": "pfifo", "limit": 1000}),
}
#: The AQMs whose qdisc depends on the capacity: replaced when it changes.
CAPACITY_SIZED = ("red", "taildrop20", "taildrop")

WEB_RATES = (0, 10, 100)  # requests/s
AL_RATES = (0, 2, 5, 10, 20)  # Mbit/s of the application-limited stream (0: off)
AL_FPS = 60  # its frames per second
CBR_PACKET = 1470  # iperf's default UDP datagram, bytes
#: Numeric controls: key -> (min, max, integer?). Values outside are clamped.
RANGES: dict[str, tuple[float, float, bool]] = {
    "long": (0, 10, True),
    "cbr": (0, 1000, False),
    "extra_rtt": (0, 200, False),
    "capacity": (2, 1000, False),
    "base_rtt": (1, 200, False),
}
#: The demo's web response sizes: Pareto between 1 KB and 1 MB (IETF-106's alpha 0.9).
WEB_SIZE = {"dist": "pareto", "alpha": 0.9, "min": 1000, "max": 1000000}

DEFAULT: dict[str, Any] = {
    "link": {"aqm": "dualpi2", "capacity": 40, "base_rtt": 10},
    "A": {"long": 1, "cc": "prague", "web": 10, "al": 0, "cbr": 0, "extra_rtt": 0},
    "B": {"long": 1, "cc": "cubic", "web": 10, "al": 0, "cbr": 0, "extra_rtt": 0},
}


def _preset(aqm: str, cc_a: str, cc_b: str) -> dict[str, Any]:
    return {
        "link": {"aqm": aqm, "capacity": 40, "base_rtt": 10},
        "A": {**DEFAULT["A"], "cc": cc_a},
        "B": {**DEFAULT["B"], "cc": cc_b},
    }


#: The demo's four experiments: 40 Mbit/s, 10 ms, one long download and 10 web requests/s per
#: client; PIE at Linux's default target. key -> (label, settings).
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "pie_cubic": ("PIE + CUBIC (drop)", _preset("pie15", "cubic", "cubic")),
    "pie_cubic_ecn": ("PIE + CUBIC (ECN)", _preset("pie15", "cubic_ecn", "cubic_ecn")),
    "dualpi2_dctcp": ("DualPI2: DCTCP vs CUBIC", _preset("dualpi2_any", "dctcp", "cubic")),
    "step_dctcp": ("Step threshold + DCTCP", _preset("step", "dctcp", "dctcp")),
}


def check(key: str, value: Any) -> Any:
    """The value control ``key`` ("link.aqm", "A.long", ...) takes for ``value``: numbers are
    clamped to their range, choices must be known. Raises :class:`DemoError` otherwise."""
    group, _, name = key.partition(".")
    if group not in ("link", *CLIENTS) or name not in DEFAULT[group]:
        raise DemoError(f"{key}: unknown control")
    if name in ("aqm", "cc"):
        choices = AQMS if name == "aqm" else CCS
        if not isinstance(value, str) or value not in choices:
            raise DemoError(f"{key}: unknown choice {value!r} (one of {', '.join(choices)})")
        return value
    try:
        if isinstance(value, bool):  # JSON true/false: float() would make them 1/0
            raise TypeError
        x = float(value)
    except OverflowError:  # a JSON integer of hundreds of digits
        x = math.inf
    except (TypeError, ValueError):
        raise DemoError(f"{key}: {value!r} is not a number") from None
    if not math.isfinite(x):
        raise DemoError(f"{key}: {value!r} is not a finite number")
    if name in ("web", "al"):
        # the demo's choices: snap to the nearest
        return min(WEB_RATES if name == "web" else AL_RATES, key=lambda r: abs(r - x))
    lo, hi, integer = RANGES[name]
    x = min(max(x, lo), hi)
    return int(round(x)) if integer else x


def _value_note(name: str, x: float, v: float) -> str:
    """Why a numeric control took ``v`` for ``x``: snapped to a choice, rounded, or clamped."""
    if name in ("web", "al"):
        choices = WEB_RATES if name == "web" else AL_RATES
        return f"{x:g} is not one of {', '.join(map(str, choices))}; using the nearest, {v:g}"
    lo, hi, _ = RANGES[name]
    if lo <= x <= hi:
        return f"{x:g} rounded to {v:g}"
    return f"{x:g} is out of range ({lo:g} to {hi:g}), using {v:g}"


def mix_delay(parts: list[tuple[int, float, list[float]]]) -> dict[str, Any] | None:
    """Queue delay of a client from its flows' ``(n, mean_ms, 101 quantiles)``: the mixture
    of the flows' distributions weighted by packet count n (each flow's CDF is linear between
    its quantiles). Returns n, mean_ms (exact: the n-weighted mean), p99_ms and cdf_ms (101
    quantiles of the mixture), or None without packets."""
    parts = [p for p in parts if p[0] > 0 and p[2]]
    if not parts:
        return None
    n = np.array([p[0] for p in parts], dtype=float)
    w = n / n.sum()
    mean = float(np.dot(w, [p[1] for p in parts]))
    qs = [np.maximum.accumulate(np.asarray(p[2], dtype=float)) for p in parts]
    probs = [np.linspace(0, 1, len(q)) for q in qs]
    grid = np.unique(np.concatenate(qs))
    cdf = sum(
        wi * np.where(grid >= q[-1], 1.0, np.interp(grid, q, p, left=0.0, right=1.0))
        for wi, q, p in zip(w, qs, probs, strict=True)
    )
    levels = np.linspace(0, 1, 101)
    quant = np.interp(levels, cdf, grid) if len(grid) > 1 else np.full(101, grid[0])
    return {
        "n": int(n.sum()),
        "mean_ms": mean,
        "p99_ms": float(quant[99]),
        "cdf_ms": [float(x) for x in quant],
    }


def _num(x: Any) -> float | None:
    """A JSON-safe number (NaN and infinities become null)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _mean(values: list[Any]) -> float | None:
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    return sum(v) / len(v) if v else None


class Session:
    """One demo page's live simulation (the server makes one per WebSocket).

    ``settings`` has the shape of :data:`DEFAULT` (what it lacks is the default). Apply changes with :meth:`set` or
    :meth:`apply`, advance with :meth:`tick`.
    """

    def __init__(self, settings: Mapping[str, Any] | None = None, seed: int = 1) -> None:
        self.seed = seed
        self._history: deque[dict[str, Any]] = deque()
        settings = settings or {}
        self._start({g: {**DEFAULT[g], **settings.get(g, {})} for g in DEFAULT})  # missing: the default

    def _start(self, settings: Mapping[str, Any]) -> None:
        """A new simulation with ``settings``."""
        link = DEFAULT["link"]
        # A flow is required to build a simulation: a placeholder that is removed at once; the
        # clients' flows are then added like any later change.
        self.sim = Simulation(
            {
                "name": "demo",
                "seed": self.seed,
                "duration": 1e6,  # runs "forever": stepping past the end is allowed anyway
                "sample_interval": 0.1,
                "topology": {
                    "base_rtt": link["base_rtt"],
                    "bottleneck": {"rate": link["capacity"], "qdisc": AQMS[link["aqm"]][1](link["capacity"])},
                },
                "flows": [{"name": "_placeholder", "start": 9e5}],
            },
            keep_history=False,
        )
        self.sim.remove_flow("_placeholder")
        self.settings: dict[str, Any] = copy.deepcopy(DEFAULT)
        for c in CLIENTS:
            self.settings[c] = {**DEFAULT[c], "long": 0, "web": 0, "al": 0, "cbr": 0}
        self.long: dict[str, list[str]] = {c: [] for c in CLIENTS}
        self.web: dict[str, str | None] = {c: None for c in CLIENTS}
        self.al: dict[str, str | None] = {c: None for c in CLIENTS}
        self.cbr: dict[str, str | None] = {c: None for c in CLIENTS}
        self._counter = 0
        self.apply(settings)

    # --- changes ---

    def apply(self, settings: Mapping[str, Any]) -> list[str]:
        """Set every control given in ``settings`` (same shape as :data:`DEFAULT`, possibly
        partial); returns the messages of values that were clamped."""
        notes = []
        for group in ("link", *CLIENTS):
            for name, value in settings.get(group, {}).items():
                note = self.set(f"{group}.{name}", value)
                if note:
                    notes.append(note)
        return notes

    def set(self, key: str, value: Any) -> str | None:
        """Set control ``key`` to ``value`` in the running simulation. Returns a note if the
        value was clamped or snapped; raises :class:`DemoError` if it is unusable."""
        v = check(key, value)
        group, _, name = key.partition(".")
        old = self.settings[group][name]
        note = None
        if name not in ("aqm", "cc") and float(value) != v:
            note = f"{key}: {_value_note(name, float(value), v)}"
        if v == old:
            return note
        self.settings[group][name] = v
        if group == "link":
            cap = self.settings["link"]["capacity"]
            if name == "aqm" or (name == "capacity" and self.settings["link"]["aqm"] in CAPACITY_SIZED):
                self.sim.set_link(rate=cap, qdisc=AQMS[self.settings["link"]["aqm"]][1](cap))
            elif name == "capacity":
                self.sim.set_link(rate=cap)
            elif name == "base_rtt":
                for c in CLIENTS:
                    self._set_rtt(c)
        elif name == "long":
            self._resize_long(group)
        elif name == "cc":
            for f in self.long[group]:
                self.sim.remove_flow(f)
            self.long[group] = []
            self._resize_long(group)
            web = self.web[group]
            if web:
                self.sim.set_flow(web, **CCS[v][1])
            self._restart_al(group)
            self._restart_cbr(group)
        elif name == "al":
            self._restart_al(group)
        elif name == "cbr":
            self._restart_cbr(group)
        elif name == "web":
            web = self.web[group]
            if v == 0 and web:
                self.sim.remove_flow(web)
                self.web[group] = None
            elif web:
                self.sim.set_flow(web, rate=v)
            elif v:
                self.web[group] = self._add(group, "web", source={"kind": "web", "rate": v, "size": WEB_SIZE})
        elif name == "extra_rtt":
            self._set_rtt(group)
        return note

    def _rtt(self, client: str) -> float:
        return float(self.settings["link"]["base_rtt"] + self.settings[client]["extra_rtt"])

    def _add(self, client: str, what: str, tcp: bool = True, **fields: Any) -> str:
        """A new flow of the client's (with its CC's fields if ``tcp``); returns its name."""
        self._counter += 1
        name = f"{client}-{what}{self._counter}"
        cc = CCS[self.settings[client]["cc"]][1] if tcp else {}
        if client == "A":
            fields["dscp"] = ADDRESS_DSCP
        self.sim.add_flow(name=name, base_rtt=self._rtt(client), **cc, **fields)
        return name

    def _resize_long(self, client: str) -> None:
        want = self.settings[client]["long"]
        while len(self.long[client]) > want:
            self.sim.remove_flow(self.long[client].pop())
        while len(self.long[client]) < want:
            self.long[client].append(self._add(client, "long"))

    def _restart_al(self, client: str) -> None:
        """The application-limited stream at the client's rate and CC (a new connection)."""
        mbps = self.settings[client]["al"]
        frame = max(1, round(mbps * 1e6 / 8 / AL_FPS))
        source = {"kind": "messages", "rate": AL_FPS, "message_size": frame, "poisson": False, "persistent": True}
        self._replace(self.al, client, "al", source if mbps else None)

    def _restart_cbr(self, client: str) -> None:
        """The constant-bit-rate UDP stream at the client's rate, marked as its CC marks."""
        mbps = self.settings[client]["cbr"]
        ecn = _codepoint(self.settings[client]["cc"])
        source = {"kind": "udp", "rate_mbps": mbps, "packet_size": CBR_PACKET, "ecn": ecn}
        self._replace(self.cbr, client, "cbr", source if mbps else None, tcp=False)

    def _replace(
        self, streams: dict[str, str | None], client: str, what: str, source: dict[str, Any] | None, tcp: bool = True
    ) -> None:
        """Remove the client's stream in ``streams`` and start one with ``source`` (none if None)."""
        if (old := streams[client]) is not None:
            self.sim.remove_flow(old)
        streams[client] = self._add(client, what, tcp=tcp, source=source) if source else None

    def _flows(self, client: str) -> list[str]:
        return [f for f in [*self.long[client], self.web[client], self.al[client], self.cbr[client]] if f]

    def _set_rtt(self, client: str) -> None:
        for f in self._flows(client):
            self.sim.set_flow(f, base_rtt=self._rtt(client))

    # --- displays ---

    def tick(self, dt: float) -> dict[str, Any]:
        """Advance the simulation by ``dt`` s and return one frame for the page: everything
        JSON-safe (no NaN)."""
        self.sim.step(dt)
        raw = self.sim.drain().raw
        now = float(raw["now"])
        active = {f: c for c in CLIENTS for f in self._flows(c)}

        flows = []
        for name, client in active.items():
            f = raw["flows"].get(name)
            if f is None:
                continue
            flows.append(
                {
                    "name": name,
                    "client": client,
                    "kind": f["kind"],
                    "tput_mbps": _mean(f["tput_mbps"]) or 0.0,
                    "cwnd": _mean(f["cwnd"]),
                    "srtt_ms": _num(_mean(f["srtt_ms"])),
                }
            )

        q = raw["qdiscs"]["bottleneck"]
        cls = q["classes"]
        point: dict[str, Any] = {"t": now}
        for c in ("l4s", "classic"):
            mark, drop = class_probabilities(*(sum(cls[c][k]) for k in ("pkts", "marks", "drops")))
            # marks count at dequeue, arrivals at enqueue: in one second they can part by a packet
            point[f"{c}_mark"] = None if math.isnan(mark) else min(1.0, float(mark))
            point[f"{c}_drop"] = None if math.isnan(drop) else float(drop)
        tx = _mean(q["tx_mbps"])
        point["util"] = None if tx is None else min(1.0, tx / self.settings["link"]["capacity"])
        self._history.append(point)
        while self._history and self._history[0]["t"] <= now - HISTORY_S:
            self._history.popleft()

        delay = {}
        for c in CLIENTS:
            parts = [(h["n"], h["mean_ms"], h["cdf_ms"]) for f, h in q["delay"].items() if f.startswith(f"{c}-")]
            delay[c] = mix_delay(parts)

        # completion times: of the web transfers, and of the app-limited stream's frames
        fct: dict[str, list[list[float]]] = {c: [] for c in CLIENTS}
        stream: dict[str, list[list[float]]] = {c: [] for c in CLIENTS}
        owners = {w: fct[c] for c in CLIENTS if (w := self.web[c])}
        owners.update({a: stream[c] for c in CLIENTS if (a := self.al[c])})
        for r in raw["connections"]:
            points = owners.get(r["flow"])
            if points is not None:
                points.append([r["size"], r["fct_s"], r["fct_no_handshake_s"]])
        fct = {c: pts[-MAX_FCT_POINTS:] for c, pts in fct.items()}
        stream = {c: pts[-MAX_FCT_POINTS:] for c, pts in stream.items()}

        return {
            "type": "frame",
            "t": now,
            "settings": self.settings,
            "flows": flows,
            "history": list(self._history),
            "delay": delay,
            "fct": fct,
            "stream": stream,
        }
