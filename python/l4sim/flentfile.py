"""Write runs in flent's data format (``.flent.gz``), so flent's plots and tools read them.

The file is flent's JSON data file (format version 4), shaped like its ``tcp_nup`` test (one
TCP upload per flow): ``results`` holds series aligned on ``x_values`` and ``raw_values`` the
per-sample records flent's plots use with ``raw_key``. Per TCP flow (``TCP upload::N``,
numbered 1.. in the scenario's flow order as tcp_nup numbers its streams; ``TEST_PARAMETERS``
maps ``flow_N`` to the flow's name):
throughput in Mbit/s (``val`` and ``tcp_delivery_rate``) and the smoothed RTT in ms
(``tcp_rtt``); per UDP flow (``UDP upload::N``, as flent's ``udp_flood`` names its iperf
stream, numbered apart; ``udp_flow_N`` names it) its throughput only, outside the TCP sums; per qdisc (``Qdisc delay (ms)::NAME``): the mean sojourn time of the interval
in ms. So ``flent -i run.flent.gz -p tcp_delivery_with_rtt`` plots delivery rate and RTT.

This is a simulation, not a flent run: there is no ICMP ping (the ``Ping (ms) ICMP`` series
is absent rather than invented), ``metadata.NOTE`` says which backend produced the data, and
``TEST_PARAMETERS`` carries the scenario's name and seed. flent itself is not needed to write
the file (its format is plain JSON); the tests read it back with the real flent.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from l4sim.api import BACKEND, jain

__all__ = ["FILEFORMAT_VERSION", "flent_data", "write"]

#: flent's ``resultset.FILEFORMAT_VERSION`` this writer follows.
FILEFORMAT_VERSION = 4


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _utc(dt: _dt.datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def flent_data(
    t: Sequence[float],
    flows: Mapping[str, Mapping[str, Sequence[float]]],
    qdiscs: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    *,
    title: str = "",
    backend: str = BACKEND,
    params: Mapping[str, Any] | None = None,
    start: _dt.datetime | None = None,
    udp: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """flent's data object from time series: ``t`` (s from the start), per flow
    ``{"tput_mbps": [...], "srtt_ms": [...]}``, per qdisc ``{"sojourn_ms": [...]}``; the flows
    named in ``udp`` are UDP streams."""
    start = start or _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
    t0 = start.replace(tzinfo=_dt.UTC).timestamp()
    x = [float(v) for v in t]
    step = (x[1] - x[0]) if len(x) > 1 else (x[0] if x else 0.0)
    results: dict[str, list[float | None]] = {}
    raw: dict[str, list[dict[str, Any]]] = {}
    units: dict[str, dict[str, Any]] = {}
    tputs = []
    names = {}
    counts = {"TCP": 0, "UDP": 0}
    for name, s in flows.items():
        # flent's tcp_nup numbers its uploads 1..upload_streams; the flow names go in
        # TEST_PARAMETERS (flow_1 = "l4s", ...)
        proto = "UDP" if name in udp else "TCP"
        counts[proto] += 1
        n = counts[proto]
        key = f"{proto} upload::{n}"
        names[f"flow_{n}" if proto == "TCP" else f"udp_flow_{n}"] = str(name)
        tput = [_num(v) for v in s.get("tput_mbps", [])]
        rtt = [_num(v) for v in s.get("srtt_ms", [])]
        results[key] = tput
        units[key] = {"UNITS": "Mbits/s"}
        if proto == "UDP":
            raw[key] = [{"t": t0 + x[i], "val": v} for i, v in enumerate(tput) if v is not None]
            continue
        tputs.append(tput)
        raw[key] = [
            {
                "t": t0 + x[i],
                "val": tput[i],
                "tcp_delivery_rate": tput[i],
                "tcp_rtt": rtt[i] if i < len(rtt) else None,
            }
            for i in range(len(tput))
            if tput[i] is not None
        ]
    for name, s in (qdiscs or {}).items():
        key = f"Qdisc delay (ms)::{name}"
        d = [_num(v) for v in s.get("sojourn_ms", [])]
        results[key] = d
        raw[key] = [{"t": t0 + x[i], "val": d[i]} for i in range(len(d)) if d[i] is not None]
        units[key] = {"UNITS": "ms"}
    if tputs:
        n = len(x)

        def agg(fn) -> list[float | None]:
            out = []
            for i in range(n):
                vals = [s[i] for s in tputs if i < len(s) and s[i] is not None]
                out.append(fn(vals) if vals else None)
            return out

        results["TCP upload sum"] = agg(math.fsum)
        results["TCP upload avg"] = agg(lambda v: math.fsum(v) / len(v))
        results["TCP upload fairness"] = agg(lambda v: jain(v) if any(v) else None)
        units.update({"TCP upload sum": {"UNITS": "Mbits/s"}, "TCP upload avg": {"UNITS": "Mbits/s"}})
    length = x[-1] if x else 0.0
    metadata = {
        "NAME": "tcp_nup",
        "TITLE": title,
        "NOTE": f"simulated by {backend} (l4sim), not measured",
        "TIME": _utc(start),
        "T0": _utc(start),
        "LENGTH": length,
        "TOTAL_LENGTH": length,
        "STEP_SIZE": step,
        "HOST": "bottleneck",
        "HOSTS": ["bottleneck"],
        "LOCAL_HOST": backend,
        "FLENT_VERSION": "l4sim",
        "IP_VERSION": 4,
        "TEST_PARAMETERS": {
            "upload_streams": str(counts["TCP"]),
            **names,
            **{k: str(v) for k, v in (params or {}).items()},
        },
        "SERIES_META": units,
    }
    return {"metadata": metadata, "version": FILEFORMAT_VERSION, "x_values": x, "results": results, "raw_values": raw}


def from_result(raw: Mapping[str, Any]) -> dict[str, Any]:
    """flent's data object from a run's result (``RunResult.raw`` or a stored summary + series)."""
    s = raw.get("series") or {}
    flows = {f.get("name", f"flow{i}"): f for i, f in enumerate(s.get("flows") or [])}
    qdiscs = {q.get("name", f"qdisc{i}"): q for i, q in enumerate(s.get("qdiscs") or [])}
    summary = raw.get("flows")
    summary = summary if isinstance(summary, list) else []
    udp = frozenset(f.get("name") for f in summary if f.get("cc") in ("udp", "udp_prague"))
    return flent_data(
        s.get("t") or [],
        flows,
        qdiscs,
        title=str(raw.get("name", "")),
        backend=str(raw.get("backend") or BACKEND),
        params={
            "scenario": raw.get("name", ""),
            "seed": raw.get("seed", ""),
            "model_version": raw.get("model_version", ""),
        },
        udp=udp,
    )


def from_series_frame(df: Any, *, title: str = "", params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """flent's data object from a store's wide series frame (``t``, ``flow.NAME.FIELD``,
    ``qdisc.NAME.FIELD``; see ``l4sim.sweep.store.series_columns``)."""
    flows: dict[str, dict[str, list[float]]] = {}
    qdiscs: dict[str, dict[str, list[float]]] = {}
    for col in df.columns:
        parts = col.split(".")
        if len(parts) == 3 and parts[0] == "flow":
            flows.setdefault(parts[1], {})[parts[2]] = list(df[col])
        elif len(parts) == 3 and parts[0] == "qdisc":
            qdiscs.setdefault(parts[1], {})[parts[2]] = list(df[col])
    return flent_data(list(df["t"]) if "t" in df else [], flows, qdiscs, title=title, params=params)


def write(path: str | Path, data: Mapping[str, Any]) -> Path:
    """Write ``data`` (from :func:`from_result` or :func:`flent_data`) to ``path``, gzipped
    when the name ends in ``.gz``; written to a temporary name and renamed, so a reader never
    sees half a file."""
    path = Path(path)
    if not data.get("x_values"):
        raise ValueError("no time series to write (the run recorded no samples)")
    text = json.dumps(data, indent=1, sort_keys=True)
    tmp = path.with_name(path.name + ".tmp")
    if path.name.endswith(".gz"):
        with gzip.open(tmp, "wt", encoding="utf-8") as fp:
            fp.write(text)
    else:
        tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
