"""flent data files written by l4sim are read and plotted by the real flent (PyPI)."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from l4sim import cli

flent_resultset = pytest.importorskip("flent.resultset")

POINT = ["--aqm", "DualPI2", "--n-bdp", "2", "--btl-capacity", "20", "--base-rtt", "10", "--duration", "2"]


def _plot(path, out):
    env = dict(os.environ, MPLBACKEND="Agg")
    cmd = [sys.executable, "-m", "flent", "-i", str(path), "-p", "tcp_delivery_with_rtt", "-o", str(out)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert out.exists() and out.stat().st_size > 10_000  # a drawn figure, not an empty canvas


def test_run_writes_a_flent_file_flent_reads_and_plots(tmp_path, capsys):
    f = tmp_path / "run.flent.gz"
    assert cli.main(["run", *POINT, "--flent", str(f)]) == 0
    rs = flent_resultset.load(str(f))
    assert rs.meta("NAME") == "tcp_nup"
    assert rs.meta("TEST_PARAMETERS")["flow_1"] == "l4s" and rs.meta("TEST_PARAMETERS")["flow_2"] == "classic"
    assert {"TCP upload::1", "TCP upload::2", "TCP upload sum", "Qdisc delay (ms)::bottleneck"} <= set(rs.series_names)
    rtt = [v for _, v in rs.raw_series("TCP upload::1", raw_key="tcp_rtt") if v is not None]
    tput = [v for _, v in rs.raw_series("TCP upload::2", raw_key="tcp_delivery_rate") if v is not None]
    assert len(rtt) >= 15 and min(rtt) >= 10.0  # srtt is at least the 10 ms base RTT
    assert 0 < sum(tput) / len(tput) <= 20.0  # within the 20 Mbit/s bottleneck
    qd = rs.series("Qdisc delay (ms)::bottleneck")
    assert any(v is not None and v > 0 for v in qd)
    _plot(f, tmp_path / "plot.png")


def test_a_udp_stream_is_a_udp_upload_outside_the_tcp_sums(tmp_path):
    """UDP streams were written as "TCP upload::N", counted in the TCP sums and the
    upload_streams parameter, with an empty tcp_rtt."""
    sc = tmp_path / "udp.toml"
    sc.write_text(
        'name = "udp"\nduration = 3\n[topology]\nbase_rtt = 10\n'
        '[topology.bottleneck]\nrate = 20\nqdisc = { kind = "pfifo", limit = 100 }\n'
        '[[flows]]\nname = "bulk"\n'
        '[[flows]]\nname = "call"\nsource = { kind = "udp", rate_mbps = 2 }\n'
        '[[flows]]\nname = "bulk2"\n'
    )
    f = tmp_path / "udp.flent.gz"
    assert cli.main(["run", str(sc), "--flent", str(f)]) == 0
    rs = flent_resultset.load(str(f))
    params = rs.meta("TEST_PARAMETERS")
    assert (params["upload_streams"], params["flow_1"], params["flow_2"], params["udp_flow_1"]) == (
        "2",
        "bulk",
        "bulk2",
        "call",
    )
    assert {"TCP upload::1", "TCP upload::2", "UDP upload::1"} <= set(rs.series_names)
    assert "TCP upload::3" not in rs.series_names
    udp = [v for v in rs.series("UDP upload::1") if v is not None]
    assert 1.5 < sum(udp) / len(udp) < 2.5  # the stream's 2 Mbit/s
    tcp = [a + b for a, b in zip(rs.series("TCP upload::1"), rs.series("TCP upload::2"), strict=True) if a and b]
    total = [v for v in rs.series("TCP upload sum") if v]
    assert total[-1] == pytest.approx(tcp[-1])  # the sum is of the TCP flows only
    _plot(f, tmp_path / "plot.png")


def test_run_flent_naming_a_directory_that_exists_writes_the_run_into_it(tmp_path):
    # it was an IsADirectoryError traceback after the run, leaving DIR.tmp behind
    assert cli.main(["run", *POINT, "--flent", str(tmp_path)]) == 0
    (written,) = tmp_path.glob("*.flent.gz")
    assert flent_resultset.load(str(written)).meta("NAME") == "tcp_nup"
    assert list(tmp_path.parent.glob(f"{tmp_path.name}.tmp")) == []


def test_run_flent_into_a_missing_directory_is_one_line_before_running(tmp_path, capsys):
    assert cli.main(["run", *POINT, "--flent", str(tmp_path / "nope" / "x.flent.gz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --flent:") and len(err.splitlines()) == 1


def test_run_flent_of_a_run_too_short_to_sample_is_one_line_before_running(tmp_path, capsys):
    short = [*POINT[:-1], "0.05"]  # the default sample interval is 0.1 s: no series to write
    f = tmp_path / "x.flent.gz"
    assert cli.main(["run", *short, "--flent", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --flent:") and "sample_interval 0.1 s" in err and len(err.splitlines()) == 1
    assert not f.exists()


def test_the_python_default_sample_interval_is_the_cores():
    import l4sim

    sc = l4sim.Scenario.from_dict(
        {
            "duration": 1,
            "topology": {"base_rtt": 10, "bottleneck": {"rate": 10, "qdisc": "fq_codel"}},
            "flows": [{"name": "a"}],
        }
    )
    assert len(l4sim.run(sc).series_flows()["t"].unique()) == round(1 / sc.sample_interval)


STUDY = """
name = "tiny"
trials = 1
[factors]
aqm = ["FIFO", "DualPI2"]
[fixed]
n_bdp = 2
btl_capacity = 20
base_rtt = 10
duration = 1
"""


def test_study_export_to_stdout_parquet_and_flent(tmp_path, capsys):
    from l4sim.cli_study import main

    s = tmp_path / "tiny.toml"
    s.write_text(STUDY)
    store = tmp_path / "st"
    assert main(["study", "run", str(s), "--store", str(store), "-j", "1", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["study", "export", str(store)]) == 0  # CSV to stdout by default
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("n_bdp,") and len(out.strip().splitlines()) == 3
    pq = tmp_path / "runs.parquet"
    fl = tmp_path / "flent"
    assert main(["study", "export", str(store), "--parquet", str(pq), "--flent", str(fl)]) == 0
    df = pd.read_parquet(pq)
    assert len(df) == 2 and set(df["aqm"]) == {"FIFO", "DualPI2"}
    files = sorted(fl.glob("*.flent.gz"))
    # named by the run's factors and trial (the key's first 12 hex digits keep it findable);
    # index.csv maps each file to its run
    assert [p.name for p in files] == [
        f"{aqm}_2bdp_20mbit_10ms{t}_fb0_prague-accecn-accecnx1_cubic-classic-nonex1_t1_{k[:12]}.flent.gz"
        for aqm, t, k in sorted(zip(df["aqm"], ["" if a == "FIFO" else "_T5" for a in df["aqm"]], df["key"]))
    ]
    index = pd.read_csv(fl / "index.csv")
    assert list(index.columns[:4]) == ["file", "key", "design", "n_bdp"] and "trial" in index.columns
    assert dict(zip(index["file"], index["key"])) == {p.name: k for p in files for k in df["key"] if k[:12] in p.name}
    rs = flent_resultset.load(str(files[0]))
    assert rs.meta("TITLE").startswith("run ") and rs.meta("TITLE").endswith("trial 1")
    assert "TCP upload::1" in rs.series_names
    _plot(files[0], tmp_path / "study.png")


def test_a_second_export_into_the_same_directory_keeps_the_firsts_index_rows(tmp_path, capsys):
    from l4sim.cli_study import main

    fl = tmp_path / "flent"
    for i, rate in enumerate((20, 10)):
        s = tmp_path / f"tiny{i}.toml"
        s.write_text(STUDY.replace("btl_capacity = 20", f"btl_capacity = {rate}"))
        store = tmp_path / f"st{i}"
        assert main(["study", "run", str(s), "--store", str(store), "-j", "1", "--quiet"]) == 0
        assert main(["study", "export", str(store), "--flent", str(fl)]) == 0
    capsys.readouterr()
    index = pd.read_csv(fl / "index.csv")
    assert sorted(index["file"]) == sorted(p.name for p in fl.glob("*.flent.gz")) and len(index) == 4
    assert sorted(index["btl_capacity"]) == [10, 10, 20, 20]
