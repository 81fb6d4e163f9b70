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
