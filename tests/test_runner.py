"""Runner: local pool, Dask, resume, --limit, SIGKILL mid-study, and the real engine."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from l4sim.studies import presets
from l4sim.studies.study import Study
from l4sim.sweep.runner import run_study
from l4sim.sweep.store import Store
from l4sim_testdata import assert_all_end, busy_children

STUDY = """
name = "t"
trials = 2
[factors]
aqm = ["FIFO", "Codel", "DualPI2"]
n_bdp = [1, 4]
[fixed]
btl_capacity = 100
base_rtt = 10
ecn_threshold = 5
duration = 2
"""


def fake_builder(point, seed):
    return {"point": dict(point), "seed": seed}


def fake_run(scenario_json: str) -> str:
    """Deterministic stand-in for the engine: numbers from a hash of the scenario."""
    h = hashlib.sha256(scenario_json.encode()).digest()
    a, b = 20 + h[0] % 60, 20 + h[1] % 60
    sc = json.loads(scenario_json)
    if sc["point"].get("aqm") == "boom":
        raise ValueError("bad scenario")
    n = 4
    return json.dumps(
        {
            "name": "fake",
            "seed": sc["seed"],
            "model_version": "fake",
            "sim_seconds": 2.0,
            "wall_seconds": 0.0,
            "events": 1,
            "jain_index": 1.0,
            "flows": [
                {"name": "l4s", "cc": "prague", "streams": 1, "goodput_mbps": a, "qdelay_ms": h[2] / 10},
                {"name": "classic", "cc": "cubic", "streams": 1, "goodput_mbps": b, "qdelay_ms": h[3] / 10},
            ],
            "qdiscs": [],
            "links": [{"name": "bottleneck", "utilisation": 0.9}],
            "rtt_samples": {},
            "series": {
                "t": [0.5 * i for i in range(n)],
                "flows": [{"name": "l4s", "cwnd": [float(h[4])] * n}],
                "qdiscs": [],
            },
        }
    )


def slow_fake_run(scenario_json: str) -> str:
    time.sleep(0.15)
    return fake_run(scenario_json)


def _results(path):
    df = Store(path).runs()
    return sorted(zip(df["key"], df["l4s_tput_mbps"], df["classic_qdelay_ms"], df["seed"], strict=True))


def _run(study, path, **kw):
    kw.setdefault("run_fn", fake_run)
    kw.setdefault("model_version", "fake")
    return run_study(study, path, builder=fake_builder, progress=False, **kw)


def test_runs_every_run_once_and_rerun_does_nothing(tmp_path):
    s = Study.from_toml(STUDY)
    out = _run(s, tmp_path, jobs=1)
    assert out.done == len(s) == 12 and out.errors == 0
    again = _run(s, tmp_path, jobs=1)
    assert again.done == 0 and again.already_done == 12
    assert len(Store(tmp_path).runs()) == 12


def test_a_new_model_version_reruns_the_design_and_readers_show_only_its_runs(tmp_path, capsys):
    """The run key holds the model version, so a design run again by another engine version is
    run anew; the earlier runs stay in the store but status, export, verdicts and the report
    show the design as it is planned now (not both versions' trials averaged together)."""
    from l4sim.cli_study import main

    s = Study.from_toml(STUDY)
    _run(s, tmp_path, jobs=1, limit=5)  # an earlier version, interrupted
    out = _run(s, tmp_path, jobs=1, model_version="next")
    assert out.done == 12 and out.already_done == 0
    st = Store(tmp_path)
    assert len(st.runs()) == 12 and st.superseded() == 5 and len(st.runs(superseded=True)) == 17
    assert len(st.runs(design="t")) == 12
    capsys.readouterr()
    assert main(["study", "status", str(tmp_path)]) == 0
    assert "and 5 finished runs of an earlier model version" in capsys.readouterr().out
    assert main(["study", "export", str(tmp_path)]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 1 + 12
    assert main(["study", "export", str(tmp_path), "--superseded"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 1 + 17
    assert main(["study", "report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "model version next;" in page and "12 runs" in page and "keeps 5 finished runs" in page
    # Runs recorded without a planned design (the store's API allows it) are always shown.
    result = json.loads(fake_run(json.dumps(fake_builder({"aqm": "FIFO"}, 1))))
    with Store(tmp_path, write=True) as w:
        w.record("free", design="adhoc", factors={"aqm": "FIFO"}, seed=1, model_version="x", result=result)
    assert len(Store(tmp_path).runs()) == 13


def test_limit_does_at_most_n_runs_and_resume_finishes(tmp_path):
    s = Study.from_toml(STUDY)
    assert _run(s, tmp_path, jobs=1, limit=5).done == 5
    assert Store(tmp_path).status()[0]["missing"] == 7
    assert _run(s, tmp_path, jobs=2).done == 7
    assert Store(tmp_path).status()[0]["missing"] == 0


def test_process_pool_gives_the_same_results_as_in_process(tmp_path):
    s = Study.from_toml(STUDY)
    _run(s, tmp_path / "a", jobs=1)
    _run(s, tmp_path / "b", jobs=2)
    assert _results(tmp_path / "a") == _results(tmp_path / "b")


def test_failed_runs_are_recorded_with_their_error(tmp_path):
    s = Study.from_toml(STUDY)
    out = run_study(
        s,
        tmp_path,
        builder=lambda p, seed: {"point": dict(p, aqm="boom"), "seed": seed},
        run_fn=fake_run,
        model_version="fake",
        progress=False,
        jobs=1,
        limit=2,
    )
    assert out.errors == 2 and "bad scenario" in out.error_messages[0]


class FakePanic(BaseException):
    """Like pyo3's PanicException: a BaseException that does not pickle."""

    def __reduce__(self):
        raise TypeError("cannot pickle")


def panicking_run(scenario_json: str) -> str:
    raise FakePanic("not yet implemented: engine")


def test_engine_panic_in_a_worker_is_recorded_not_fatal(tmp_path):
    s = Study.from_toml(STUDY)
    out = _run(s, tmp_path, jobs=2, limit=3, run_fn=panicking_run)
    assert out.errors == 3 and "FakePanic: not yet implemented" in out.error_messages[0]
    assert Store(tmp_path).status()[0]["errors"] == 3


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_dask_local_cluster_gives_the_same_results_as_the_local_pool(tmp_path, processes):
    import distributed

    s = Study.from_toml(STUDY)
    _run(s, tmp_path / "pool", jobs=2)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=None) as cl,
        distributed.Client(cl) as c,
    ):
        out = _run(s, tmp_path / "dask", dask=c)
    assert out.done == 12
    assert _results(tmp_path / "pool") == _results(tmp_path / "dask")


SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_runner import slow_fake_run, fake_builder
from l4sim.sweep.runner import run_study
from l4sim.studies.study import Study
study = Study.from_toml({study!r})
run_study(study, {store!r}, jobs=2, run_fn=slow_fake_run, builder=fake_builder,
          model_version="fake", progress=False)
"""


def test_study_killed_with_sigkill_resumes_with_every_run_exactly_once(tmp_path):
    import l4sim.studies.study

    store = tmp_path / "store"
    study = STUDY.replace("trials = 2", "trials = 6")  # 36 runs of 0.15 s on 2 workers
    script = SCRIPT.format(tests=str(Path(__file__).parent), study=study, store=str(store))
    env = dict(os.environ)
    pkg_root = str(Path(l4sim.studies.study.__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)
    deadline = time.time() + 30
    while time.time() < deadline:  # wait until some (not all) runs are committed
        if (store / "index.sqlite").exists():
            try:
                n = Store(store).status()
                if n and 3 <= n[0]["done"] < n[0]["total"]:
                    break
            except Exception:
                pass
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the parent and its workers, no cleanup
    proc.wait()
    partial = Store(store).status()[0]
    assert 0 < partial["done"] < partial["total"]

    s = Study.from_toml(study)
    out = _run(s, store, jobs=2)
    assert out.already_done == partial["done"] or out.already_done >= partial["done"]
    st = Store(store)
    df = st.runs(status=None)
    assert len(df) == len(s) == df["key"].nunique()
    assert (df["status"] == "done").all()
    assert st.status()[0]["missing"] == 0
    # no partial rows: every run has both flows; no orphan or temporary series files
    flows = st.flows()
    assert flows.groupby("run_key").size().eq(2).all() and flows["run_key"].nunique() == len(s)
    files = sorted(f.name for f in (store / "series").iterdir())
    assert files == sorted(df["series"])


LONG_STUDY = """
name = "long"
trials = 4
[factors]
aqm = ["FIFO", "DualPI2"]
[fixed]
n_bdp = 2
btl_capacity = 100
base_rtt = 10
duration = 600
"""


def test_sigkill_of_study_run_leaves_no_process_behind(tmp_path):
    """SIGKILL of `l4sim study run` (the parent only, as the OOM killer or `kill -9` would):
    its fork server, resource tracker and workers (busy in long runs) must all exit."""
    import l4sim.studies.study

    f = tmp_path / "long.toml"
    f.write_text(LONG_STUDY)
    env = dict(os.environ)
    env["PYTHONPATH"] = (
        str(Path(l4sim.studies.study.__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
    )
    cmd = [sys.executable, "-m", "l4sim", "study", "run", str(f), "--store", str(tmp_path / "st"), "-j", "2", "--quiet"]
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    kids = busy_children(proc.pid, 4)  # fork server, resource tracker, two busy workers
    assert len(kids) >= 3, kids
    os.kill(proc.pid, signal.SIGKILL)  # the parent alone: no cleanup, no signal to the group
    proc.wait()
    assert_all_end(kids)


SIGINT_SCRIPT = (
    SCRIPT.replace("run_study(study,", "out = run_study(study,")
    + """
print("INTERRUPTED" if out.interrupted else "FINISHED", out.done, flush=True)
sys.exit(130 if out.interrupted else 0)
"""
)


def test_ctrl_c_stops_cleanly_and_leaves_a_consistent_store(tmp_path):
    import l4sim.studies.study

    store = tmp_path / "store"
    study = STUDY.replace("trials = 2", "trials = 8")  # 48 runs of 0.15 s on 2 workers
    script = SIGINT_SCRIPT.format(tests=str(Path(__file__).parent), study=study, store=str(store))
    env = dict(os.environ)
    pkg_root = Path(l4sim.studies.study.__file__).resolve().parents[2]
    env["PYTHONPATH"] = str(pkg_root) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-c", script], env=env, start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if Store(store).status()[0]["done"] >= 3:
                break
        except Exception:
            pass
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # like Ctrl-C in a terminal: the whole group
    stdout, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, stdout
    assert stdout.startswith("INTERRUPTED")
    st = Store(store)
    partial = st.status()[0]
    assert 0 < partial["done"] < partial["total"]
    flows = st.flows()
    assert flows.groupby("run_key").size().eq(2).all()
    assert flows["run_key"].nunique() == partial["done"]
    out = _run(Study.from_toml(study), store, jobs=2)
    assert out.done == partial["total"] - partial["done"]


# ------------------------------------------------------------------ the real engine


def test_real_engine_study_runs_and_resumes(tmp_path):
    s = Study.from_toml("""
name = "e2e"
trials = 2
[factors]
aqm = ["FIFO", "DualPI2"]
[fixed]
n_bdp = 2
btl_capacity = 100
base_rtt = 10
ecn_threshold = 5
duration = 2
""")
    out = run_study(s, tmp_path, jobs=2, progress=False)
    assert out.done == 4 and out.errors == 0, out.error_messages
    df = Store(tmp_path).runs()
    assert (df["l4s_tput_mbps"] > 0).all() and (df["classic_tput_mbps"] > 0).all()
    assert run_study(s, tmp_path, jobs=2, progress=False).done == 0


def test_real_engine_on_dask_matches_local_pool(tmp_path):
    import distributed

    s = Study.from_toml("""
name = "e2e"
[factors]
aqm = ["Codel", "DualPI2"]
[fixed]
n_bdp = 2
btl_capacity = 100
base_rtt = 10
ecn_threshold = 5
duration = 2
""")
    assert run_study(s, tmp_path / "a", jobs=2, progress=False).done == 2
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cl,
        distributed.Client(cl) as c,
    ):
        assert run_study(s, tmp_path / "b", dask=c, progress=False).done == 2
    assert _results(tmp_path / "a") == _results(tmp_path / "b")


# ------------------------------------------------------------------ CLI


@pytest.fixture
def fake_engine(monkeypatch):
    import l4sim.sweep.runner as r
    from l4sim.studies.study import Study

    monkeypatch.setattr(r, "core_run", fake_run)
    monkeypatch.setattr(Study, "build", lambda self, point, seed: fake_builder(point, seed))
    monkeypatch.setattr(r, "engine_model_version", lambda: "fake")


def test_cli_study_run_status_and_limit(tmp_path, fake_engine, capsys):
    from l4sim.cli_study import main

    f = tmp_path / "s.toml"
    f.write_text(STUDY)
    assert main(["study", "run", str(f), "--store", str(tmp_path / "st"), "-j", "1", "--limit", "4", "--quiet"]) == 0
    assert main(["study", "status", str(tmp_path / "st")]) == 0
    out = capsys.readouterr().out
    assert "t " in out and "12" in out and "8" in out  # total 12, missing 8


def _store_state(path):
    """What a refused run must leave as it was: the index's bytes and the series files."""
    return (path / "index.sqlite").read_bytes(), sorted(p.name for p in (path / "series").iterdir())


@pytest.mark.parametrize(
    "change,differs",
    [
        (["--trials", "3"], "trial"),
        (["--duration", "5"], "duration"),
        ('aqm = ["FIFO", "DualPI2"]', "aqm"),  # the study file edited
    ],
)
def test_cli_study_run_of_another_design_under_a_stored_name_is_refused_and_the_store_untouched(
    tmp_path, fake_engine, capsys, change, differs
):
    """A store holding design 't' was silently redefined by another study file (or --trials,
    --duration) of the same name: its plan replaced, its status and report about another design
    than its runs. Now one line naming the design, what differs and how to go on; status 2."""
    from l4sim.cli_study import main

    f, store = tmp_path / "s.toml", tmp_path / "st"
    f.write_text(STUDY)
    assert main(["study", "run", str(f), "--store", str(store), "-j", "1", "--quiet"]) == 0
    before = _store_state(store)
    capsys.readouterr()
    argv = ["study", "run", str(f), "--store", str(store), "-j", "1", "--quiet"]
    if isinstance(change, str):
        f.write_text(STUDY.replace('aqm = ["FIFO", "Codel", "DualPI2"]', change))
    else:
        argv += change
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith("error: --store: ") and "design 't'" in err and differs in err, err
    assert "--name" in err and "another --store" in err, err
    assert _store_state(store) == before
    assert Store(store).designs()[0]["content"] == STUDY


def test_cli_study_run_of_the_same_design_resumes_even_if_its_file_was_reworded(tmp_path, fake_engine, capsys):
    """The same runs are the same design: a comment or a description added to the study file,
    or `trials = 2` written as a trial list, resumes instead of being refused."""
    from l4sim.cli_study import main

    f, store = tmp_path / "s.toml", tmp_path / "st"
    f.write_text(STUDY)
    argv = ["study", "run", str(f), "--store", str(store), "-j", "1", "--quiet"]
    assert main([*argv, "--limit", "5"]) == 0
    reworded = STUDY.replace("trials = 2", '# two trials\ndescription = "as before"\n[factors]\ntrial = [1, 2]')
    f.write_text(reworded.replace("[factors]\naqm", "aqm", 1))
    capsys.readouterr()
    assert main(argv) == 0
    assert "7 runs done now, 5 already in the store" in capsys.readouterr().out
    st = Store(store)
    assert st.status() == [{"design": "t", "total": 12, "done": 12, "errors": 0, "missing": 0}]
    assert "as before" in st.designs()[0]["content"]  # the store documents the file as it is now


def test_cli_study_run_with_name_keeps_both_designs_and_shares_their_common_runs(tmp_path, fake_engine, capsys):
    """--name runs the other design beside the first: the runs they have in common (the same
    scenario and seed) are not done again, and each design keeps its own status."""
    from l4sim.cli_study import main

    f, store = tmp_path / "s.toml", tmp_path / "st"
    f.write_text(STUDY)
    argv = ["study", "run", str(f), "--store", str(store), "-j", "1", "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main([*argv, "--trials", "3", "--name", "t3"]) == 0
    assert "t3: 6 runs done now, 12 already in the store" in capsys.readouterr().out
    st = Store(store)
    assert {r["design"]: r["total"] for r in st.status()} == {"t": 12, "t3": 18}
    assert 'name = "t3"' in {d["name"]: d["content"] for d in st.designs()}["t3"]
    assert len(st.runs(design="t")) == 12 and len(st.runs(design="t3")) == 18
    import pandas as pd

    # the design column says the design asked for, not the one that happened to run it first
    assert set(st.runs(design="t3")["design"]) == {"t3"}
    assert st.runs()["design"].value_counts().to_dict() == {"t;t3": 12, "t3": 6}
    capsys.readouterr()
    assert main(["study", "export", str(store), "--design", "t3", "--csv", str(tmp_path / "t3.csv")]) == 0
    assert set(pd.read_csv(tmp_path / "t3.csv")["design"]) == {"t3"}
    assert main([*argv, "--trials", "3", "--name", ""]) == 2
    assert capsys.readouterr().err.startswith("error: --name: ")


def test_run_study_of_another_design_under_a_stored_name_raises_and_changes_nothing(tmp_path):
    """The library call is guarded too (the CLI checks first, to say it in its options)."""
    from l4sim.sweep.store import DesignConflictError

    s = Study.from_toml(STUDY)
    _run(s, tmp_path, jobs=1, limit=3)
    with pytest.raises(DesignConflictError, match="'t'") as e:
        _run(s.with_overrides(duration=5), tmp_path, jobs=1)
    assert e.value.name == "t" and e.value.differs == ["duration"]
    st = Store(tmp_path)
    assert st.status() == [{"design": "t", "total": 12, "done": 3, "errors": 0, "missing": 9}]
    assert st.designs()[0]["content"] == STUDY and len(st.runs(status=None)) == 3


def test_cli_malformed_study_file_is_a_clear_error(tmp_path, capsys):
    from l4sim.cli_study import main

    f = tmp_path / "bad.toml"
    f.write_text("[factors]\nbuffer = [1, 2]\n")
    assert main(["study", "plan", str(f)]) == 2
    assert "unknown factor 'buffer'" in capsys.readouterr().err


def test_cli_a_run_the_core_would_refuse_stops_plan_and_run_before_a_store_is_made(tmp_path, capsys):
    """It used to plan fine, then fail every run into a store that then held the bad design."""
    from l4sim.cli_study import main

    f = tmp_path / "x.toml"
    f.write_text(
        "[factors]\naqm = ['DualPI2']\nn_bdp = [1]\n"
        "[fixed]\nbtl_capacity = 100\nbase_rtt = 10\nduration = 2\nsample_interval = 0.0001\n"
    )
    for argv in (["study", "plan", str(f), "--no-estimate"], ["study", "run", str(f), "--store", str(tmp_path / "s")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: factor 'sample_interval': 0.0001 s") and "aqm=DualPI2" in err
        assert err.count("\n") == 1
    assert not (tmp_path / "s").exists()


def test_cli_presets_lists_run_counts(capsys):
    from l4sim.cli_study import main

    assert main(["study", "presets"]) == 0
    out = capsys.readouterr().out
    assert "full-factorial" in out and "28,320" in out and "anrw24" in out


def test_reproduce_anrw24_writes_store_csv_figures_verdicts_and_report(tmp_path, fake_engine):
    from l4sim.cli_study import main

    out = tmp_path / "out"
    assert (
        main(["reproduce", "anrw24", "--out", str(out), "--trials", "1", "--duration", "2", "-j", "1", "--quiet"]) == 0
    )
    assert (out / "store" / "index.sqlite").exists()
    import pandas as pd

    assert len(pd.read_csv(out / "results.csv")) == 90
    assert (out / "figures" / "heatmap_share.png").exists()
    assert (out / "figures" / "heatmap_share.pdf").exists()
    v = pd.read_csv(out / "verdicts.csv", index_col=0)
    assert v.shape == (4, 4)
    html = (out / "report.html").read_text()
    assert "data:image/png;base64" in html and "Is it OK to turn on TCP Prague?" in html
    assert "testbed" in html  # the ANRW'24 reference comparison
    # resumable: the same grid run again into OUT/store has nothing left to do
    study = presets.get("anrw24").with_overrides(trials=1, duration=2)
    assert _run(study, out / "store", jobs=1).already_done == 90


def test_reproduce_into_an_out_with_another_design_refuses_in_one_line(tmp_path, fake_engine, capsys):
    from l4sim.cli_study import main

    out = tmp_path / "out"
    args = ["reproduce", "anrw24", "--out", str(out), "-j", "1", "--quiet", "--duration", "2"]
    assert main([*args, "--trials", "1"]) == 0
    before = (out / "store" / "index.sqlite").read_bytes()
    capsys.readouterr()
    assert main([*args, "--trials", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "1 trial x 2 s" in err and "2 trials x 2 s" in err and "--out" in err
    assert (out / "store" / "index.sqlite").read_bytes() == before  # nothing touched
    assert main([*args, "--trials", "1"]) == 0  # the same design resumes


def test_reproduce_into_an_out_whose_anrw24_has_other_points_says_so(tmp_path, fake_engine, capsys):
    """Same trials and duration, other points (a store from another l4sim's preset): the message
    read "with 1 trial x 2 s, not 1 trial x 2 s"."""
    import sqlite3

    from l4sim.cli_study import main

    out = tmp_path / "out"
    args = ["reproduce", "anrw24", "--out", str(out), "-j", "1", "--quiet", "--duration", "2", "--trials", "1"]
    assert main([*args, "--limit", "1"]) == 0
    with sqlite3.connect(out / "store" / "index.sqlite") as db:
        db.execute("UPDATE plan SET factors = replace(factors, '\"FIFO\"', '\"PIE\"') WHERE design = 'anrw24'")
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "other runs (it differs in aqm" in err and "not 1 trial" not in err, err


def test_reproduce_with_limit_says_partial_and_gives_no_verdicts(tmp_path, fake_engine, capsys):
    from l4sim.cli_study import main
    from l4sim.studies.report import write_report

    out = tmp_path / "out"
    args = ["reproduce", "anrw24", "--out", str(out), "--trials", "1", "--duration", "2", "-j", "1", "--quiet"]
    assert main([*args, "--limit", "5"]) == 0
    text = capsys.readouterr().out
    assert "partial: 5 of 90 runs" in text and "no verdicts" in text
    assert not (out / "verdicts.csv").exists() and not (out / "report.html").exists()
    html = write_report(out / "store", tmp_path / "r.html").read_text()
    assert "Partial results: 5 of 90" in html and "No verdicts from a partial grid" in html
    assert main(args) == 0  # completing it gives the verdicts
    assert (out / "verdicts.csv").exists()
    assert "Partial" not in (out / "report.html").read_text()


def test_real_engine_reproduce_anrw24_limited(tmp_path):
    from l4sim.cli_study import main

    out = tmp_path / "out"
    assert (
        main(
            [
                "reproduce",
                "anrw24",
                "--out",
                str(out),
                "--trials",
                "1",
                "--duration",
                "2",
                "--limit",
                "4",
                "-j",
                "2",
                "--quiet",
            ]
        )
        == 0
    )
    assert (out / "results.csv").exists()
    assert not (out / "report.html").exists()  # a partial grid gets no report and no verdicts


def test_cli_run_on_a_locked_store_is_a_clear_error(tmp_path, fake_engine, capsys):
    from l4sim.cli_study import main

    f = tmp_path / "s.toml"
    f.write_text(STUDY)
    with Store(tmp_path / "st", write=True):
        assert main(["study", "run", str(f), "--store", str(tmp_path / "st"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --store: results store") and err.count("\n") == 1
    assert "being written by another process" in err and str(os.getpid()) in err


@pytest.mark.parametrize("command", ["status", "verdicts", "export", "plot", "report", "run"])
def test_cli_a_directory_whose_index_is_not_a_store_is_one_line(tmp_path, fake_engine, capsys, command):
    from l4sim.cli_study import main

    js = tmp_path / "js"
    js.mkdir()
    (js / "index.sqlite").write_text("junk\n")
    f = tmp_path / "s.toml"
    f.write_text(STUDY)
    argv = {
        "plot": ["study", "plot", str(js), "--out", str(tmp_path / "figs")],
        "report": ["study", "report", str(js), "--out", str(tmp_path / "r.html")],
        "run": ["study", "run", str(f), "--store", str(js), "--quiet"],
    }.get(command, ["study", command, str(js)])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "is not a results store (index.sqlite: file is not a database)" in err
    assert err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["js", "s.toml"] and [p.name for p in js.iterdir()] == [
        "index.sqlite"
    ]


def test_report_states_the_verdict_rules_in_words_not_as_a_python_repr(tmp_path, fake_engine):
    from l4sim.cli_study import main

    out = tmp_path / "out"
    args = ["reproduce", "anrw24", "--out", str(out), "--trials", "1", "--duration", "2", "-j", "1", "--quiet"]
    assert main(args) == 0
    html = (out / "report.html").read_text()
    assert "VerdictRules(" not in html and "share_tol=" not in html
    assert "favourable if the L4S share is at least the fair share minus 0.1" in html


def test_reproduce_report_compares_share_and_relative_delay_with_the_testbed(tmp_path, fake_engine):
    from l4sim.cli_study import main
    from l4sim.studies.analysis import cells
    from l4sim.studies.report import VERDICT_SHARE_TOL, reference_comparison

    out = tmp_path / "out"
    args = ["reproduce", "anrw24", "--out", str(out), "--trials", "1", "--duration", "2", "-j", "1", "--quiet"]
    assert main(args) == 0
    with Store(out / "store") as st:
        ref = reference_comparison(cells(st.runs()))
    assert ref is not None and len(ref) == 90
    for col in ("share_sim", "share_tb", "share_diff", "rel_delay_sim", "rel_delay_tb", "rel_delay_diff"):
        assert col in ref and ref[col].notna().any(), col
    flagged = ref["share_ok"] == "NO"
    assert (ref.loc[flagged, "share_diff"].abs() > VERDICT_SHARE_TOL).all()
    assert (ref.loc[~flagged, "share_diff"].abs() <= VERDICT_SHARE_TOL).all()
    html = (out / "report.html").read_text()
    assert "relative delay (testbed)" in html and "flagged NO" in html and "docs/validation.md" in html


def test_cli_verdicts_say_their_scope_and_take_another(tmp_path, fake_engine, capsys):
    """The verdict table judges the study's cells (100 Mbit/s, 10 ms, 5 ms threshold): a store
    of 20 ms runs printed an all-"n/a" table without a word. It names its scope, says which
    factor the store lacks, and --scope judges the store's own cells."""
    from l4sim.cli_study import main

    f = tmp_path / "s.toml"
    f.write_text(STUDY.replace("base_rtt = 10", "base_rtt = 20"))
    store = str(tmp_path / "store")
    assert main(["study", "run", str(f), "--store", store, "-j", "1", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["study", "verdicts", store]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cells at btl_capacity=100, base_rtt=10, ecn_threshold=5,")
    assert "no run of this store is in that scope: base_rtt is 20 there; for its cells: --scope base_rtt=20" in out
    table = out.splitlines()[-4:]
    assert all(line.split()[-4:] == ["n/a"] * 4 for line in table), out
    assert main(["study", "verdicts", store, "--scope", "base_rtt=20"]) == 0
    out = capsys.readouterr().out
    assert "base_rtt=20" in out.splitlines()[0] and "no run of this store" not in out
    fifo = next(line for line in out.splitlines() if line.startswith("single queue, no ECN"))
    assert "n/a" not in fifo.split("ECN", 1)[1].split()[0], out
    # The report's verdict table says the same.
    page = tmp_path / "r.html"
    assert main(["study", "report", store, "--out", str(page)]) == 0
    assert "No run of this store is in that scope</b> (base_rtt is 20 here)" in page.read_text()
    assert main(["study", "report", store, "--out", str(page), "--scope", "base_rtt=20"]) == 0
    text = page.read_text()
    assert "Cells at btl_capacity 100, base_rtt 20," in text and "No run of this store" not in text
    # a factor the verdicts are not scoped by is named as such, not as a malformed KEY=VALUE
    assert main(["study", "verdicts", store, "--scope", "n_bdp=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --scope: 'n_bdp' (in 'n_bdp=1') is not a key the verdicts are scoped by; they take ")
    assert "btl_capacity, base_rtt, ecn_threshold, rx_l4s_ecn, cc_l4s" in err


@pytest.mark.parametrize(
    "argv,option",
    [
        (["study", "run", "{study}", "--store", "{file}", "--quiet"], "--store"),
        (["study", "run", "{study}", "--store", "{file}/st", "--quiet"], "--store"),
        (["reproduce", "anrw24", "--out", "{file}", "--trials", "1", "--duration", "2", "--quiet"], "--out"),
        (["reproduce", "icnp26", "--out", "{file}", "--quick"], "--out"),  # was "cannot create ...: File exists"
        (["reproduce", "icnp26", "--out", "{file}/x", "--quick"], "--out"),
        (["study", "export", "{store}", "--flent", "{file}"], "--flent"),
        (["study", "plot", "{store}", "--out", "{file}"], "--out"),
        (["study", "plot", "{store}", "--out", "{tmp}/fig", "--format", "bmp"], "--format"),
        (["study", "plot", "{store}", "--out", "{tmp}/fig", "--format", "gif"], "--format"),  # matplotlib has it
        (["study", "report", "{store}", "--out", "{file}/r.html"], "--out"),
        (["study", "report", "{store}", "--out", "{store}"], "--out"),  # was a traceback after figures/
        (["study", "export", "{store}", "--parquet", "{store}"], "--parquet"),
        (["study", "export", "{store}", "--csv", "{store}"], "--csv"),
        (["study", "export", "{store}", "--csv", "{file}/x.csv"], "--csv"),
        (["study", "report", "{tmp}/nostore", "--out", "{tmp}/r.html"], None),
        (["study", "verdicts", "{store}", "--scope", "rtt=20"], "--scope"),
        (["study", "verdicts", "{store}", "--scope", "base_rtt=-5"], "--scope base_rtt"),
    ],
)
def test_cli_an_output_that_cannot_be_written_is_one_line_before_anything_runs(
    tmp_path, fake_engine, capsys, argv, option
):
    """A file where a store, figure or report directory should go, a figure format matplotlib
    does not write, a store that is not there: one line naming the option, status 2, and
    nothing run or written (these were tracebacks, some after the runs)."""
    from l4sim.cli_study import main

    f = tmp_path / "s.toml"
    f.write_text(STUDY)
    assert main(["study", "run", str(f), "--store", str(tmp_path / "store"), "-j", "1", "--limit", "2", "--quiet"]) == 0
    (tmp_path / "taken").write_text("not a directory")
    capsys.readouterr()
    sub = {
        "{study}": str(f),
        "{store}": str(tmp_path / "store"),
        "{file}": str(tmp_path / "taken"),
        "{tmp}": str(tmp_path),
    }
    for k, v in sub.items():
        argv = [a.replace(k, v) for a in argv]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option}: " if option else "error: ") and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["study", "export", "{store}", "--design", "nosuch", "--csv", "{tmp}/x.csv"],
        ["study", "verdicts", "{store}", "--design", "nosuch"],
        ["study", "plot", "{store}", "--design", "nosuch", "--out", "{tmp}/fig"],
        ["study", "report", "{store}", "--design", "nosuch", "--out", "{tmp}/r.html"],
    ],
)
def test_cli_a_design_the_store_does_not_hold_is_named_not_an_empty_result(tmp_path, fake_engine, capsys, argv):
    """A mistyped --design wrote an empty CSV, an all-n/a verdict table or an empty report
    (status 0), as if the design had no runs."""
    from l4sim.cli_study import main

    f = tmp_path / "s.toml"
    f.write_text(STUDY)
    assert main(["study", "run", str(f), "--store", str(tmp_path / "store"), "-j", "1", "--limit", "2", "--quiet"]) == 0
    capsys.readouterr()
    argv = [a.replace("{store}", str(tmp_path / "store")).replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: --design: ") and "'nosuch'" in err and "'t'" in err and err.count("\n") == 1, err
    assert out == "" and sorted(p.name for p in tmp_path.iterdir()) == ["s.toml", "store"]
