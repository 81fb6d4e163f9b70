"""Shared test data and fixtures of the API/CLI/scenario tests: small scenarios the core
accepts and a stand-in engine. Imported by the test modules (no conftest.py, so the study's
tests can have their own)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

# 100 Mbit/s, 10 ms, 2 x BDP bfifo, one Reno flow: the smallest scenario the core accepts.
MINIMAL: dict[str, Any] = {
    "name": "minimal",
    "duration": 2,
    "seed": 3,
    "topology": {
        "kind": "dumbbell",
        "base_rtt": 10,
        "bottleneck": {"rate": 100, "qdisc": {"kind": "bfifo", "limit": 250000}},
    },
    "flows": [{"name": "a", "cc": {"name": "reno"}}],
}

MINIMAL_TOML = """\
name = "minimal"
duration = 2
seed = 3

[topology]
base_rtt = 10

[topology.bottleneck]
rate = 100
qdisc = { kind = "bfifo", limit = 250000 }

[[flows]]
name = "a"
cc = "reno"
"""

# Two competing flows for a short run (a few simulated seconds).
SHORT_TWO_FLOWS: dict[str, Any] = {
    "name": "short",
    "duration": 3,
    "seed": 1,
    "sample_interval": 0.1,
    "topology": {
        "kind": "dumbbell",
        "base_rtt": 10,
        "bottleneck": {"rate": 20, "qdisc": {"kind": "bfifo", "limit": 50000}},
    },
    "flows": [{"name": "a", "cc": "cubic"}, {"name": "b", "cc": "reno"}],
}


def _shaped(rate: float, qdisc: dict[str, Any]) -> dict[str, Any]:
    return {"rate": rate, "qdisc": qdisc}


# Every qdisc kind, source kind and congestion control in one small graph (a few tenths of a
# simulated second): the seed the fuzz tests mutate to reach paths no example does (tbf, netem's
# options, wifi, HTB's inner classes, prio bands, rate_ba, policy routes, jumbo MTU).
EVERY_KIND: dict[str, Any] = {
    "name": "every_kind",
    "duration": 0.3,
    "seed": 3,
    "sample_interval": 0.01,
    "topology": {
        "kind": "graph",
        "nodes": [{"name": "r1"}, {"name": "r2"}, {"name": "r3"}, {"name": "d", "kind": "host"}]
        + [{"name": f"h{i}", "kind": "host"} for i in range(8)],
        "links": [
            {
                "a": "h0",
                "b": "r1",
                "rate": 1000,
                "delay_ms": 1,
                "ab": _shaped(200, {"kind": "tbf", "rate_mbps": 50, "burst": 12800, "limit": 100000}),
            },
            {
                "a": "h1",
                "b": "r1",
                "rate": 1000,
                "delay_ms": 2,
                "ab": _shaped(
                    200,
                    {
                        "kind": "netem",
                        "delay_ms": 2,
                        "jitter_ms": 1,
                        "distribution": "paretonormal",
                        "loss": 0.01,
                        "ecn": True,
                        "duplicate": 0.01,
                        "corrupt": 0.005,
                        "reorder": 0.1,
                        "gap": 3,
                        "rate_mbps": 80,
                        "slot_min_ms": 0.1,
                        "slot_max_ms": 0.3,
                        "slot_packets": 8,
                    },
                ),
            },
            {
                "a": "h2",
                "b": "r1",
                "rate": 1000,
                "delay_ms": 1,
                "ab": _shaped(300, {"kind": "wifi", "phy_rate_mbps": 150, "child": {"kind": "fq_codel"}}),
            },
            {
                "a": "h3",
                "b": "r1",
                "rate": 1000,
                "rate_ba": 500,
                "delay_ms": 1,
                "delay_ba_ms": 3,
                "ba": _shaped(
                    100, {"kind": "netem", "gemodel": {"p": 0.01, "r": 0.3, "loss_bad": 0.5, "loss_good": 0.0}}
                ),
            },
            {
                "a": "h4",
                "b": "r1",
                "rate": 1000,
                "delay_ms": 1,
                "mtu": 9000,
                "ab": _shaped(
                    100, {"kind": "red", "limit": 400000, "min": 30000, "max": 90000, "probability": 0.1, "ecn": True}
                ),
            },
            {"a": "h5", "b": "r1", "rate": 1000, "delay_ms": 1, "ab": _shaped(100, {"kind": "codel", "ecn": True})},
            {
                "a": "h6",
                "b": "r1",
                "rate": 1000,
                "delay_ms": 1,
                "ab": _shaped(100, {"kind": "fq", "ce_threshold_ms": 1}),
            },
            {
                "a": "h7",
                "b": "r1",
                "rate": 1000,
                "delay_ms": 1,
                "ab": _shaped(
                    100,
                    {
                        "kind": "netem",
                        "loss_state": {"p13": 0.01, "p31": 0.5},
                        "slot_delay_ms": 0.2,
                        "slot_jitter_ms": 0.1,
                        "slot_distribution": "normal",
                    },
                ),
            },
            {
                "a": "r1",
                "b": "r2",
                "rate": 1000,
                "delay_ms": 5,
                "name_ab": "core",
                "ab": _shaped(
                    100,
                    {
                        "kind": "htb",
                        "default": 3,  # "rest"; without it the unlisted DSCPs would go unshaped
                        "classes": [
                            {"name": "gold", "rate_mbps": 30, "ceil_mbps": 60},
                            {
                                "name": "l4s",
                                "parent": 0,
                                "rate_mbps": 20,
                                "dscp": [10],
                                # DSCP 10 (the web flow and the call): their Not-ECT packets too go to L
                                "child": {"kind": "dualpi2", "filters": [{"dscp": 10, "class": "l4s"}]},
                            },
                            {
                                "name": "other",
                                "parent": 0,
                                "rate_mbps": 10,
                                "child": {"kind": "pie", "ecn": True, "bytemode": True},
                            },
                            {
                                "name": "rest",
                                "rate_mbps": 70,
                                "prio": 1,
                                "child": {
                                    "kind": "prio",
                                    "filters": [{"dscp": 46, "band": 0}],
                                    "children": [
                                        {
                                            "kind": "tbf",
                                            "rate_mbps": 5,
                                            "burst": 3000,
                                            "latency_ms": 5,
                                            "child": {"kind": "pfifo", "limit": 100},
                                        },
                                        {"kind": "bfifo", "limit": 200000},
                                        {"kind": "codel"},
                                    ],
                                },
                            },
                        ],
                    },
                ),
            },
            {"a": "r1", "b": "r3", "rate": 1000, "delay_ms": 10},
            {"a": "r2", "b": "d", "rate": 1000},
            {"a": "r3", "b": "d", "rate": 1000},
        ],
        # by DSCP, and by source host (h7's packets join r3's path at r1)
        "routes": [{"dscp": 46, "path": ["h3", "r1", "r3", "d"]}, {"from": "h7", "path": ["r1", "r3", "d"]}],
    },
    "flows": [
        {"name": "bulk", "from": "h0", "to": "d", "cc": "cubic", "streams": 2},
        {
            "name": "web",
            "from": "h1",
            "to": "d",
            "cc": "prague",
            "dscp": 10,
            "tcp": {"ecn": "accecn"},
            "receiver": {"cc": "prague", "tcp": {"ecn": "accecn"}},
            "source": {"kind": "web", "rate": 50, "size": {"dist": "pareto", "alpha": 0.9, "min": 1000, "max": 100000}},
        },
        {
            "name": "msg",
            "from": "h2",
            "to": "d",
            "cc": "bbr3",
            "source": {
                "kind": "messages",
                "rate": 20,
                "poisson": True,
                "batch_min": 1,
                "batch_max": 4,
                "message_size": 20000,
            },
        },
        {
            "name": "chunks",
            "from": "h3",
            "to": "d",
            "cc": "bbr2",
            "source": {"kind": "chunks", "rate_mbps": 5, "period": 0.1, "request": True},
        },
        {
            "name": "udp",
            "from": "h4",
            "to": "d",
            "dscp": 46,
            "source": {"kind": "udp", "rate_mbps": 3, "ecn": "ect1", "on": 0.05, "off": 0.05},
        },
        {"name": "call", "from": "h5", "to": "d", "dscp": 10, "source": {"kind": "udp_prague", "max_rate_mbps": 5}},
        {
            "name": "dctcp",
            "from": "h6",
            "to": "d",
            "cc": "dctcp",
            "tcp": {"ecn": "classic"},
            "size": 200000,
            "start": 0.01,
        },
        {"name": "reno", "from": "h7", "to": "d", "cc": "reno", "stop": 0.2},
        {"name": "bbr", "from": "d", "to": "h3", "cc": "bbr"},
    ],
}


@pytest.fixture
def minimal() -> dict[str, Any]:
    return copy.deepcopy(MINIMAL)


@pytest.fixture
def short_two_flows() -> dict[str, Any]:
    return copy.deepcopy(SHORT_TWO_FLOWS)


@pytest.fixture
def minimal_toml(tmp_path: Path) -> Path:
    p = tmp_path / "minimal.toml"
    p.write_text(MINIMAL_TOML, encoding="utf-8")
    return p


def fake_core_run(scenario_json: str) -> str:
    """A stand-in for ``_core.run`` that returns a well-formed result (results.rs schema) for
    the scenario's flows, so the Python side can be checked without the engine."""
    import json

    sc = json.loads(scenario_json)
    n = int(round(sc["duration"] / sc.get("sample_interval", 0.1)))
    t = [round((i + 1) * sc.get("sample_interval", 0.1), 9) for i in range(n)]
    flows, fseries = [], []
    for i, f in enumerate(sc["flows"]):
        flows.append(
            {
                "name": f["name"],
                "cc": f["cc"]["name"],
                "streams": f.get("streams", 1),
                "ecn_mode": "none",
                "data_ecn": "not_ect",
                "goodput_mbps": 10.0 + i,
                "bytes_delivered": 1000,
                "mean_srtt_ms": 12.0,
                "qdelay_ms": 2.0,
                "base_rtt_ms": 10.0,
                "retrans": 3,
                "rto_count": 0,
                "fast_recoveries": 1,
                "cwr_count": 0,
                "ce_received": 0,
                "ce_fed_back": 0,
                "data_pkts_sent": 100,
                "pkts_dropped": 3,
                "start_s": 0.0,
                "completion_s": None,
            }
        )
        fseries.append(
            {
                "name": f["name"],
                "tput_mbps": [10.0] * n,
                "cwnd": [float(j) for j in range(n)],
                "srtt_ms": [12.0] * n,
                "pacing_mbps": [0.0] * n,
                "ce_fed_back": [0.0] * n,
                "extra": {"alpha": [0.5] * n} if f["cc"]["name"] == "prague" else {},
            }
        )
    qdisc = {
        "name": "bottleneck",
        "kind": sc["topology"]["bottleneck"]["qdisc"]["kind"],
        "enq_pkts": 100,
        "deq_pkts": 97,
        "drops": 3,
        "drops_by_reason": {"overlimit": 3},
        "drops_by_ecn": {"not_ect": 3},
        "marks": 0,
        "marks_by_ecn": {},
        "sojourn_mean_ms": 1.0,
        "sojourn_p50_ms": 1.0,
        "sojourn_p90_ms": 2.0,
        "sojourn_p99_ms": 3.0,
        "sojourn_p999_ms": 4.0,
        "max_backlog_pkts": 20,
        "max_backlog_bytes": 30000,
        "extra": {},
    }
    qseries = {
        "name": "bottleneck",
        "backlog_pkts": [1.0] * n,
        "backlog_bytes": [1500.0] * n,
        "sojourn_ms": [1.0] * n,
        "drops": [0.0] * n,
        "marks": [0.0] * n,
        "extra": {},
    }
    rate = sc["topology"]["bottleneck"]["rate"]
    return json.dumps(
        {
            "name": sc.get("name", ""),
            "seed": sc.get("seed", 1),
            "model_version": "fake",
            "sim_seconds": float(sc["duration"]),
            "wall_seconds": 0.01,
            "events": 1234,
            "bottleneck_pkts": 97,
            "flows": flows,
            "qdiscs": [qdisc],
            "links": [{"name": "bottleneck", "rate_mbps": rate, "utilisation": 0.9, "tx_pkts": 97, "tx_bytes": 145500}],
            "jain_index": 0.99,
            "rtt_samples": {f["name"]: [12.0] * int(sc["duration"]) for f in sc["flows"]},
            "series": {"t": t, "flows": fseries, "qdiscs": [qseries]},
            "conservation_ok": True,
        }
    )


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch):
    """Replace the engine by :func:`fake_core_run` (validation stays the core's)."""
    from l4sim import _core

    monkeypatch.setattr(_core, "run", fake_core_run)
    return fake_core_run


def headless_chromium(width: int, height: int):
    """A Selenium driver on the system's headless Chromium, or a skip when there is none (a
    failure when L4SIM_REQUIRE_BROWSER is set, as CI sets it). The caller quits it."""
    import os
    import shutil

    required = bool(os.environ.get("L4SIM_REQUIRE_BROWSER"))
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        if required:
            raise
        pytest.skip("selenium is not installed")
    found = (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome"))
    binary, driver_path = next((b for b in found if b), None), shutil.which("chromedriver")
    if not (binary and driver_path):
        if required:
            pytest.fail("L4SIM_REQUIRE_BROWSER is set but chromium/chromedriver is missing")
        pytest.skip("chromium and chromedriver are needed (apt-get install chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        opts.add_argument(a)
    return webdriver.Chrome(options=opts, service=Service(driver_path))


def busy_children(pid: int, at_least: int, timeout: float = 60) -> list:
    """The child processes (psutil) of process ``pid`` once it has ``at_least`` of them and
    one is busy (a worker in a run), or whatever it has after ``timeout`` seconds."""
    import time

    import psutil

    kids: list = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        kids = psutil.Process(pid).children(recursive=True)
        if len(kids) >= at_least and any(k.cpu_percent(interval=0.2) > 10 for k in kids):
            break
    return kids


def assert_all_end(procs: list, timeout: float = 20) -> None:
    """Every process of ``procs`` (psutil) ends within ``timeout`` seconds (generous: the
    machine is shared; normally about 1 s); those that do not are killed before failing, so a
    failure leaves nothing running."""
    import time

    import psutil

    deadline = time.time() + timeout
    alive = procs
    while alive and time.time() < deadline:
        alive = [k for k in alive if k.is_running() and k.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.2)
    for k in alive:
        k.kill()
    assert not alive, [(k.pid, k.cmdline()) for k in alive]
