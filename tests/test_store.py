"""The results store: atomic commits, one writer, readers while writing, layout."""

import json
import multiprocessing as mp

import pytest

from l4sim.sweep.store import Store, StoreLockedError, run_key


def fake_result(l4s=60.0, classic=40.0, ql=1.0, qc=10.0, n=5):
    return {
        "name": "x",
        "seed": 1,
        "model_version": "fake",
        "sim_seconds": 2.0,
        "wall_seconds": 0.01,
        "events": 10,
        "jain_index": 0.96,
        "flows": [
            {
                "name": "l4s",
                "cc": "prague",
                "streams": 1,
                "goodput_mbps": l4s,
                "qdelay_ms": ql,
                "mean_srtt_ms": 10 + ql,
            },
            {
                "name": "classic",
                "cc": "cubic",
                "streams": 1,
                "goodput_mbps": classic,
                "qdelay_ms": qc,
                "mean_srtt_ms": 10 + qc,
            },
        ],
        "qdiscs": [],
        "links": [{"name": "bottleneck", "utilisation": 0.97}],
        "rtt_samples": {},
        "series": {
            "t": [0.1 * i for i in range(n)],
            "flows": [
                {
                    "name": "l4s",
                    "tput_mbps": [1.0] * n,
                    "cwnd": [10.0] * n,
                    "srtt_ms": [11.0] * n,
                    "extra": {"alpha": [0.5] * n},
                }
            ],
            "qdiscs": [{"name": "bottleneck", "backlog_pkts": [3.0] * n}],
        },
    }


def test_run_key_depends_on_scenario_seed_and_model_version():
    s = {"a": 1, "b": [1.0, 2]}
    k = run_key(s, 1, "v1")
    assert k == run_key({"b": [1, 2], "a": 1}, 1, "v1")  # canonical
    assert k != run_key(s, 2, "v1")
    assert k != run_key(s, 1, "v2")
    assert len(k) == 64


def test_record_commits_run_flows_and_series(tmp_path):
    with Store(tmp_path / "s", write=True) as st:
        st.add_design("d", "name='d'", [("k1", {"aqm": "FIFO", "trial": 1}, 7)])
        st.record(
            "k1", design="d", factors={"aqm": "FIFO", "trial": 1}, seed=7, model_version="fake", result=fake_result()
        )
    st = Store(tmp_path / "s")
    df = st.runs()
    assert list(df["l4s_tput_mbps"]) == [60.0]
    assert list(df["classic_qdelay_ms"]) == [10.0]
    assert df.loc[0, "utilisation"] == 0.97
    assert len(st.flows()) == 2
    ser = st.series("k1")
    assert list(ser.columns)[:1] == ["t"] and "flow.l4s.extra.alpha" in ser.columns
    assert st.status() == [{"design": "d", "total": 1, "done": 1, "errors": 0, "missing": 0}]
    assert st.designs()[0]["content"] == "name='d'"
    assert (tmp_path / "s" / "index.sqlite").exists()
    assert st.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_another_design_under_a_stored_name_is_refused_and_the_same_one_recorded_anew(tmp_path):
    """A design is its runs (factors and seeds): other runs under a stored name raise and
    change nothing; the same runs, reworded or with the keys of another model version, replace
    the text and the plan (so the store documents the design as it is now)."""
    from l4sim.sweep.store import DesignConflictError

    plan = [("k1", {"aqm": "FIFO", "trial": 1}, 7), ("k2", {"aqm": "FIFO", "trial": 2}, 8)]
    with Store(tmp_path, write=True) as st:
        st.add_design("d", "name='d'", plan)
        other = [("k3", {"aqm": "FIFO", "trial": 1}, 7), ("k4", {"aqm": "Codel", "trial": 1}, 9)]
        with pytest.raises(DesignConflictError) as e:
            st.add_design("d", "name='d' # other", other)
        assert e.value.differs == ["aqm", "trial"] and (e.value.stored_runs, e.value.new_runs) == (2, 2)
        assert "'d'" in str(e.value) and "it differs in aqm, trial; 2 runs there, 2 runs in this one" in str(e.value)
        assert st.designs()[0]["content"] == "name='d'" and st.status()[0]["total"] == 2
        assert st.design_conflict("e", [({"aqm": "Codel"}, 1)]) is None  # a name the store does not hold
        new_keys = [("n" + k, {**f, "trial": float(f["trial"])}, s) for k, f, s in plan]  # 2.0 is 2
        assert st.design_conflict("d", [(f, s) for _, f, s in reversed(new_keys)]) is None
        st.add_design("d", "name='d'  # reworded", new_keys)
        assert st.designs()[0]["content"] == "name='d'  # reworded"
        keys = {r[0] for r in st.db.execute("SELECT key FROM plan WHERE design = 'd'")}
        assert keys == {"nk1", "nk2"}


def test_error_runs_are_recorded_but_not_done(tmp_path):
    with Store(tmp_path, write=True) as st:
        st.add_design("d", "", [("k", {"aqm": "FIFO"}, 1)])
        st.record("k", design="d", factors={"aqm": "FIFO"}, seed=1, model_version="f", error="ScenarioError: bad")
        assert st.done_keys() == set()
        assert st.status()[0]["errors"] == 1 and st.status()[0]["missing"] == 1


def _hold_lock(path, ready, release):
    st = Store(path, write=True)
    ready.set()
    release.wait(10)
    st.close()


def test_second_writer_gets_a_clear_error_naming_store_and_pid(tmp_path):
    ctx = mp.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold_lock, args=(tmp_path, ready, release))
    p.start()
    try:
        assert ready.wait(10)
        with pytest.raises(StoreLockedError) as ei:
            Store(tmp_path, write=True)
        assert str(p.pid) in str(ei.value) and str(tmp_path) in str(ei.value)
        # a reader is fine while the writer holds the lock
        Store(tmp_path).status()
    finally:
        release.set()
        p.join(10)
    Store(tmp_path, write=True).close()  # lock released with its holder


def test_orphan_and_temporary_series_files_are_removed_on_open(tmp_path):
    with Store(tmp_path, write=True) as st:
        st.record("k1", design="d", factors={}, seed=1, model_version="f", result=fake_result())
    (tmp_path / "series" / "orphan.parquet").write_bytes(b"x")
    (tmp_path / "series" / "k2.tmp123.parquet").write_bytes(b"x")
    Store(tmp_path, write=True).close()
    assert sorted(f.name.split(".")[0] for f in (tmp_path / "series").iterdir()) == ["k1"]


def test_reader_on_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(Exception, match="no results store"):
        Store(tmp_path / "nope")


def test_a_reader_writes_nothing_and_leaves_no_wal_files_behind(tmp_path):
    """Reports and exports open the store to read: they cannot change it, and closing it
    leaves the directory as the writer left it (a read-only SQLite connection could not remove
    the WAL's -wal and -shm files, so every report left two more files)."""
    import sqlite3

    with Store(tmp_path, write=True) as st:
        st.record("k", design="d", factors={"aqm": "FIFO"}, seed=1, model_version="f", result=fake_result())
    before = sorted(p.name for p in tmp_path.iterdir())
    with Store(tmp_path) as st:
        assert len(st.runs()) == 1
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            st.db.execute("DELETE FROM runs")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert "index.sqlite-wal" not in before


def test_summary_keeps_the_result_without_series(tmp_path):
    with Store(tmp_path, write=True) as st:
        st.record("k", design="d", factors={}, seed=1, model_version="f", result=fake_result())
        s = st.summary("k")
    assert "series" not in s and s["flows"][0]["name"] == "l4s"
    json.dumps(s)


def test_export_columns_are_factors_then_study_metrics_then_the_rest(tmp_path):
    import pandas as pd

    from l4sim.studies.report import export_csv

    with Store(tmp_path, write=True) as st:
        f = {
            "n_bdp": 2,
            "btl_capacity": 100,
            "base_rtt": 10,
            "aqm": "Codel",
            "ecn_threshold": 5,
            "trial": 1,
            "duration": 2,
        }
        st.add_design("d", "", [("k", f, 3)])
        st.record("k", design="d", factors=f, seed=3, model_version="fake", result=fake_result())
    n = export_csv(tmp_path, tmp_path / "r.csv")
    df = pd.read_csv(tmp_path / "r.csv")
    assert n == 1
    cols = list(df.columns)
    assert cols[:7] == ["n_bdp", "btl_capacity", "base_rtt", "aqm", "ecn_threshold", "trial", "duration"]
    assert cols[7:11] == ["l4s_tput_mbps", "classic_tput_mbps", "l4s_qdelay_ms", "classic_qdelay_ms"]
    assert {"seed", "key", "model_version", "jain_index", "utilisation", "l4s_cc", "classic_goodput_mbps"} <= set(
        cols[11:]
    )
    assert len(cols) == len(set(cols))
    assert df.loc[0, "l4s_tput_mbps"] == 60.0 and df.loc[0, "seed"] == 3


def test_series_fall_back_to_npz_without_pyarrow(tmp_path, monkeypatch):
    import l4sim.sweep.store as store_mod

    monkeypatch.setattr(store_mod, "_have_pyarrow", lambda: False)
    with Store(tmp_path, write=True) as st:
        st.record("k1", design="d", factors={}, seed=1, model_version="f", result=fake_result())
        ser = st.series("k1")
    assert (tmp_path / "series" / "k1.npz").exists()
    assert list(ser["flow.l4s.cwnd"]) == [10.0] * 5


def test_null_values_from_the_core_become_nan(tmp_path):
    r = fake_result()
    r["flows"][1]["qdelay_ms"] = None
    r["series"]["flows"][0]["srtt_ms"] = [None, 1.0, None, 2.0, None]
    with Store(tmp_path, write=True) as st:
        st.record("k", design="d", factors={"aqm": "FIFO"}, seed=1, model_version="f", result=r)
        ser = st.series("k")
        df = st.runs()
    assert ser["flow.l4s.srtt_ms"].isna().sum() == 3 and ser["flow.l4s.srtt_ms"].dtype == float
    assert df["classic_qdelay_ms"].isna().all()


def test_qdisc_statistics_are_stored_generically_one_row_per_run_and_qdisc(tmp_path):
    r = fake_result()
    r["qdiscs"] = [
        {
            "name": "bottleneck",
            "kind": "dualpi2",
            "drops": 3,
            "sojourn_p99_ms": 4.5,
            "drops_by_reason": {"aqm": 2, "overlimit": 1},
            "extra": {"step_marks": 7},
        },
        {"name": "other", "kind": "fq_codel", "marks": 9},
    ]
    with Store(tmp_path, write=True) as st:
        st.record("k", design="d", factors={}, seed=1, model_version="f", result=r)
    q = Store(tmp_path).qdiscs().set_index("name")
    assert list(q.index) == ["bottleneck", "other"]
    b = q.loc["bottleneck"]
    assert (b["kind"], b["drops"], b["sojourn_p99_ms"]) == ("dualpi2", 3, 4.5)
    assert (b["drops_by_reason.aqm"], b["extra.step_marks"]) == (2, 7)
    assert q.loc["other", "marks"] == 9 and q.loc["other", "kind"] == "fq_codel"


def test_a_store_written_before_runs_had_metrics_reads_and_resumes(tmp_path):
    """Rows of a schema-1 store (no ``metrics`` column) get their metrics computed from the
    stored result; a writer adds the column and new rows store theirs."""
    import sqlite3

    with Store(tmp_path, write=True) as st:
        st.record("old", design="d", factors={"aqm": "FIFO"}, seed=1, model_version="f", result=fake_result())
    db = sqlite3.connect(tmp_path / "index.sqlite")
    db.execute("ALTER TABLE runs DROP COLUMN metrics")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    assert Store(tmp_path).runs()["l4s_tput_mbps"].tolist() == [60.0]  # read-only, as it is
    with Store(tmp_path, write=True) as st:
        st.record("new", design="d", factors={"aqm": "FIFO"}, seed=2, model_version="f", result=fake_result(l4s=70))
        df = st.runs()
    assert df["l4s_tput_mbps"].tolist() == [60.0, 70.0] and df["utilisation"].tolist() == [0.97, 0.97]


def test_a_store_written_before_flows_reported_undos_gains_the_columns(tmp_path):
    """A schema-2 store (flows without undos, spurious_rtos, rwnd_limited): a writer adds the
    columns, old rows read NULL (NaN), new rows store the values."""
    import sqlite3

    with Store(tmp_path, write=True) as st:
        st.record("old", design="d", factors={"aqm": "FIFO"}, seed=1, model_version="f", result=fake_result())
    db = sqlite3.connect(tmp_path / "index.sqlite")
    for col in ("undos", "spurious_rtos", "rwnd_limited"):
        db.execute(f"ALTER TABLE flows DROP COLUMN {col}")
    db.commit()
    db.close()
    new = fake_result()
    new["flows"][0].update(undos=3, spurious_rtos=1, rwnd_limited=0)
    with Store(tmp_path, write=True) as st:
        st.record("new", design="d", factors={"aqm": "FIFO"}, seed=2, model_version="f", result=new)
        f = st.flows().set_index(["run_key", "name"])
    assert f.loc[("new", "l4s"), "undos"] == 3 and f.loc[("new", "l4s"), "spurious_rtos"] == 1
    assert f.loc[("old", "l4s"), ["undos", "spurious_rtos", "rwnd_limited"]].isna().all()


def test_the_runs_table_is_generic_the_metrics_are_the_registered_studys(tmp_path):
    """sweep/ names no study metric: the runs table has one JSON ``metrics`` column, filled by
    the function ``l4sim.studies`` registers."""
    import sqlite3

    from l4sim.studies.analysis import run_metrics

    with Store(tmp_path, write=True) as st:
        st.record("k", design="d", factors={}, seed=1, model_version="f", result=fake_result())
    cols = {r[1] for r in sqlite3.connect(tmp_path / "index.sqlite").execute("PRAGMA table_info(runs)")}
    assert "metrics" in cols and not cols & {"l4s_tput_mbps", "jain_index", "utilisation"}
    assert Store(tmp_path).runs().iloc[0][list(run_metrics(fake_result()))].tolist() == list(
        run_metrics(fake_result()).values()
    )


@pytest.mark.parametrize("content", [b"junk\n", b""])
def test_an_index_that_is_not_a_store_is_a_store_error_and_nothing_is_written(tmp_path, content):
    """A junk index.sqlite was an sqlite3.DatabaseError traceback in every command."""
    from l4sim.sweep.store import StoreError

    (tmp_path / "index.sqlite").write_bytes(content or b"")
    if not content:  # an SQLite database of something else
        import sqlite3

        sqlite3.connect(tmp_path / "index.sqlite").execute("CREATE TABLE other (x)").connection.close()
    for write in (False, True):
        with pytest.raises(StoreError, match="is not a results store"):
            Store(tmp_path, write=write)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.sqlite"]
