"""The results store: a directory a user can copy.

Layout::

    DIR/index.sqlite        SQLite (WAL): tables meta, designs, plan, runs, flows, qdisc_stats
    DIR/series/KEY.parquet  time series of one run (pandas + pyarrow; ``.npz`` if no pyarrow)
    DIR/lock                held with fcntl.flock by the one writer; holds its pid

The records are generic: a ``runs`` row per run (design, factors, seed, model version,
backend, status, timings, the result without its series as JSON, and ``metrics``: a JSON
object of per-run metrics computed by whatever study registered a metrics function, see
:func:`register_study_columns`), ``flows`` (one row per run and flow) and ``qdisc_stats``
(every numeric statistic of each qdisc). Nothing here knows a study's metric names.

A run's key is sha256(canonical scenario JSON, seed, model version). A finished run is
committed in ONE transaction (its ``runs``, ``flows`` and ``qdisc_stats`` rows), after its
series file was written under a temporary name and renamed into place. So killing the
writer at any moment loses at most the runs in flight; a series file without a row (killed
between rename and commit) is removed when the next writer opens the store, and the run is
simply done again. Readers open the index read-only and can read while a study runs (WAL).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from l4sim.api import BACKEND
from l4sim.sweep.designs import canonical_json

SCHEMA_VERSION = "3"

# What a study adds to the generic store (registered by ``l4sim.studies`` when imported): the
# per-run metrics computed from a result (stored as the JSON column ``runs.metrics``, shown as
# columns by ``Store.runs()`` in the order the function returns them), and the order of factor
# columns in ``Store.runs()``. The store itself knows nothing of any study's factors or metrics.
_metrics_fn: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
_factor_order: tuple[str, ...] = ()


def register_study_columns(
    factor_order: Iterable[str], metrics: Callable[[Mapping[str, Any]], Mapping[str, Any]]
) -> None:
    """Set the factor column order and the per-run metrics function (the studies layer)."""
    global _metrics_fn, _factor_order
    _factor_order = tuple(factor_order)
    _metrics_fn = metrics


#: Numbers every result reports (results.rs), kept as columns of ``runs``.
RESULT_COLUMNS = ("sim_seconds", "wall_seconds", "events")
#: Columns ``runs`` gained after schema 1, with their type: added when a writer opens an older
#: store. Rows written before have no ``metrics``; ``Store.runs()`` computes them from the
#: stored result (the same function on the same numbers).
_ADDED_COLUMNS = {"backend": f"TEXT DEFAULT '{BACKEND}'", "metrics": "TEXT"}
#: Columns ``flows`` gained in schema 3 (NULL in rows written before: results of models
#: before 0.9.6 did not report them).
_ADDED_FLOW_COLUMNS = ("undos", "spurious_rtos", "rwnd_limited")
FLOW_COLUMNS = (
    "name",
    "cc",
    "streams",
    "ecn_mode",
    "data_ecn",
    "goodput_mbps",
    "bytes_delivered",
    "mean_srtt_ms",
    "qdelay_ms",
    "base_rtt_ms",
    "retrans",
    "rto_count",
    "fast_recoveries",
    "undos",
    "spurious_rtos",
    "rwnd_limited",
    "cwr_count",
    "ce_received",
    "ce_fed_back",
    "data_pkts_sent",
    "pkts_dropped",
    "start_s",
    "completion_s",
)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS designs (
    name TEXT PRIMARY KEY, content TEXT NOT NULL, runs INTEGER NOT NULL, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS plan (
    design TEXT NOT NULL, key TEXT NOT NULL, factors TEXT NOT NULL, seed INTEGER NOT NULL,
    PRIMARY KEY (design, key));
CREATE TABLE IF NOT EXISTS runs (
    key TEXT PRIMARY KEY,
    design TEXT NOT NULL,
    factors TEXT NOT NULL,
    cell TEXT NOT NULL,
    seed INTEGER NOT NULL,
    model_version TEXT NOT NULL,
    backend TEXT,
    status TEXT NOT NULL,
    error TEXT,
    started REAL, finished REAL,
    {", ".join(c + " REAL" for c in RESULT_COLUMNS)},
    metrics TEXT,
    series TEXT,
    summary TEXT);
CREATE TABLE IF NOT EXISTS qdisc_stats (
    run_key TEXT NOT NULL REFERENCES runs(key),
    name TEXT NOT NULL, kind TEXT, metric TEXT NOT NULL, value REAL,
    PRIMARY KEY (run_key, name, metric));
CREATE TABLE IF NOT EXISTS flows (
    run_key TEXT NOT NULL REFERENCES runs(key),
    {", ".join(c + (" TEXT" if c in ("name", "cc", "ecn_mode", "data_ecn") else " REAL") for c in FLOW_COLUMNS)},
    PRIMARY KEY (run_key, name));
"""


# A run of a design that has a plan, which no design plans: the design was run again with
# another model version (runs recorded without a plan, as the API allows, are never superseded).
_SUPERSEDED = "r.key NOT IN (SELECT key FROM plan) AND EXISTS (SELECT 1 FROM plan q WHERE q.design = r.design)"


class StoreError(RuntimeError):
    pass


def _check_index(path: Path) -> None:
    """StoreError if ``path/index.sqlite`` is not a results store's index (not an SQLite
    database, or one without the store's tables): it was a DatabaseError traceback."""
    idx = path / "index.sqlite"
    try:
        db = sqlite3.connect(f"file:{idx}?mode=ro", uri=True, timeout=30)
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            db.close()
    except sqlite3.Error as e:
        raise StoreError(f"{str(path)!r} is not a results store ({idx.name}: {e})") from None
    if tables and "runs" not in tables:
        raise StoreError(f"{str(path)!r} is not a results store ({idx.name} has no runs table)")


class StoreLockedError(StoreError):
    """Another process is writing this store."""

    def __init__(self, path: Path, pid: str):
        self.path, self.pid = path, pid
        super().__init__(
            f"results store {str(path)!r} is being written by another process (pid {pid}); "
            "wait for it to finish or stop it: one writer per store"
        )


class DesignConflictError(StoreError):
    """The store holds another design under this name (other runs planned): recording this one
    would redefine what the name's status, runs and report are about."""

    def __init__(self, path: Path, name: str, differs: list[str], stored_runs: int, new_runs: int):
        self.path, self.name, self.differs = path, name, differs
        self.stored_runs, self.new_runs = stored_runs, new_runs
        super().__init__(
            f"results store {str(path)!r} holds another design named {name!r} ({self.difference()}): "
            "give this one another name or use another store (the same design resumes)"
        )

    def difference(self) -> str:
        """How the two designs differ, in their factor names, and their run counts."""
        what = f"it differs in {', '.join(self.differs)}" if self.differs else "it has other runs"
        return f"{what}; {_runs(self.stored_runs)} there, {_runs(self.new_runs)} in this one"


def _runs(n: int) -> str:
    return f"{n} run{'s' * (n != 1)}"


def planned_runs(plan: Iterable[tuple[str, Mapping[str, Any], int]]) -> list[tuple[Mapping[str, Any], int]]:
    """The (factors, seed) of a plan of (key, factors, seed) as the store keeps it: one per key."""
    runs: dict[str, tuple[Mapping[str, Any], int]] = {}
    for k, f, s in plan:
        runs.setdefault(k, (f, s))
    return list(runs.values())


def _plan_points(plan: Iterable[tuple[Mapping[str, Any], int]]) -> set[tuple[str, int]]:
    """A design's runs as (canonical factors, seed): what makes two designs the same one,
    whatever their text and the model version their runs' keys include."""
    return {(canonical_json(f), int(s)) for f, s in plan}


def _differing_factors(a: set[tuple[str, int]], b: set[tuple[str, int]]) -> list[str]:
    """The factors whose values differ between two designs' runs (or that only one has)."""
    va: dict[str, set[str]] = {}
    vb: dict[str, set[str]] = {}
    for points, values in ((a, va), (b, vb)):
        for f, _ in points:
            for k, v in json.loads(f).items():
                values.setdefault(k, set()).add(canonical_json(v))
    order = list(dict.fromkeys([*_factor_order, *sorted(va.keys() | vb.keys())]))
    return [k for k in order if (k in va or k in vb) and va.get(k) != vb.get(k)]


def run_key(scenario: Mapping[str, Any], seed: int, model_version: str) -> str:
    """sha256 of the canonical scenario JSON, the seed and the model version."""
    h = hashlib.sha256()
    h.update(canonical_json(scenario).encode())
    h.update(b"\0" + str(int(seed)).encode() + b"\0" + str(model_version).encode())
    return h.hexdigest()


def qdisc_rows(result: Mapping[str, Any]) -> list[tuple[str, str | None, str, float]]:
    """(name, kind, metric, value) for every numeric statistic of every qdisc of a result;
    nested tables flatten to dotted metric names (``drops_by_reason.aqm``)."""
    rows: list[tuple[str, str | None, str, float]] = []

    def walk(name: str, kind: str | None, prefix: str, obj: Mapping[str, Any]) -> None:
        for k, v in obj.items():
            if isinstance(v, bool):
                v = int(v)
            if isinstance(v, (int, float)):
                rows.append((name, kind, prefix + k, float(v)))
            elif isinstance(v, Mapping):
                walk(name, kind, f"{prefix}{k}.", v)

    for q in result.get("qdiscs") or []:
        name = str(q.get("name", ""))
        kind = q.get("kind")
        walk(
            name, str(kind) if kind is not None else None, "", {k: v for k, v in q.items() if k not in ("name", "kind")}
        )
    return rows


def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401

        return True
    except ImportError:
        return False


def series_columns(result: Mapping[str, Any]) -> dict[str, Any]:
    """The run's time series as float arrays of one length: ``t``, ``flow.NAME.FIELD``,
    ``qdisc.NAME.FIELD`` (extras as ``flow.NAME.extra.KEY``); NaN where the core wrote null."""
    import numpy as np

    s = result.get("series") or {}
    t = list(s.get("t") or [])
    cols: dict[str, list[float]] = {"t": t}

    def add(prefix: str, obj: Mapping[str, Any]) -> None:
        for k, v in obj.items():
            if k == "name":
                continue
            if k == "extra" and isinstance(v, dict):
                for ek, ev in v.items():
                    cols[f"{prefix}.extra.{ek}"] = list(ev)
            elif isinstance(v, list):
                cols[f"{prefix}.{k}"] = list(v)

    for f in s.get("flows") or []:
        add(f"flow.{f.get('name')}", f)
    for q in s.get("qdiscs") or []:
        add(f"qdisc.{q.get('name')}", q)
    n = len(t)
    for v in cols.values():  # pad ragged columns (should not happen) so the table is square
        if len(v) < n:
            v.extend([float("nan")] * (n - len(v)))
        elif len(v) > n:
            del v[n:]
    # the core writes NaN as null: every column is float, missing values NaN
    return {k: np.asarray(v, dtype=float) for k, v in cols.items()}


class Store:
    """A results directory. ``Store(path, write=True)`` takes the writer lock."""

    def __init__(self, path: str | Path, *, write: bool = False):
        self.path = Path(path)
        self.write = write
        self._lock_fd: int | None = None
        if (self.path / "index.sqlite").exists():
            _check_index(self.path)  # before anything is written beside a file that is not a store
        if write:
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / "series").mkdir(exist_ok=True)
            self._acquire_lock()
            self.db = sqlite3.connect(self.path / "index.sqlite", timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            have = {r[1] for r in self.db.execute("PRAGMA table_info(runs)")}
            for col, typ in _ADDED_COLUMNS.items():  # an older store: runs before had none
                if col not in have:
                    self.db.execute(f"ALTER TABLE runs ADD COLUMN {col} {typ}")
            have = {r[1] for r in self.db.execute("PRAGMA table_info(flows)")}
            for col in _ADDED_FLOW_COLUMNS:
                if col not in have:
                    self.db.execute(f"ALTER TABLE flows ADD COLUMN {col} REAL")
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            self._cleanup()
        else:
            idx = self.path / "index.sqlite"
            if not idx.exists():
                raise StoreError(f"no results store at {str(self.path)!r} (no index.sqlite)")
            # Read and write, though it only reads (query_only): a WAL database's last
            # connection removes the -wal and -shm files when it closes, which a read-only one
            # cannot do, so every report or export left two files behind. A write-protected
            # store is opened read-only all the same.
            self.db = sqlite3.connect(f"file:{idx}?mode=rw", uri=True, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA query_only=ON")
        self.db.row_factory = sqlite3.Row

    # ---------------------------------------------------------------- lock
    def _acquire_lock(self) -> None:
        fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                pid = os.read(fd, 64).decode().strip() or "unknown"
            finally:
                os.close(fd)
            raise StoreLockedError(self.path, pid) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        os.fsync(fd)
        self._lock_fd = fd

    def close(self) -> None:
        if getattr(self, "db", None) is not None:
            self.db.close()
            # typed for the open store, which is all its methods see: a closed one is not used
            self.db = None  # type: ignore[assignment]
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _cleanup(self) -> None:
        """Remove temporary series files and series files without a committed run row."""
        done = {r[0] for r in self.db.execute("SELECT key FROM runs WHERE status='done'")}
        for f in (self.path / "series").iterdir():
            if ".tmp" in f.name:
                f.unlink(missing_ok=True)
                continue
            key = f.name.split(".", 1)[0]
            if key not in done:
                f.unlink(missing_ok=True)

    # ---------------------------------------------------------------- writing
    def add_design(self, name: str, content: str, plan: Iterable[tuple[str, dict, int]]) -> None:
        """Record a design (its study file text) and its planned runs (key, factors, seed).

        The same design again (the same runs: factors and seeds) is recorded anew (its text may
        have been reworded, its runs' keys changed with the model version); another design under
        a stored name raises :class:`DesignConflictError` and changes nothing."""
        plan = list(plan)
        with self._tx():
            conflict = self.design_conflict(name, planned_runs(plan))
            if conflict is not None:
                raise conflict
            self.db.execute(
                "INSERT OR REPLACE INTO designs VALUES (?, ?, ?, ?)",
                (name, content, len(plan), time.time()),
            )
            self.db.execute("DELETE FROM plan WHERE design = ?", (name,))
            self.db.executemany(
                "INSERT OR IGNORE INTO plan VALUES (?, ?, ?, ?)",
                [(name, k, canonical_json(f), s) for k, f, s in plan],
            )

    def _tx(self):
        db = self.db

        class _T:
            def __enter__(self_inner):
                db.execute("BEGIN IMMEDIATE")

            def __exit__(self_inner, et, ev, tb):
                db.execute("COMMIT" if et is None else "ROLLBACK")
                return False

        return _T()

    def done_keys(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT key FROM runs WHERE status = 'done'")}

    def record(
        self,
        key: str,
        *,
        design: str,
        factors: Mapping[str, Any],
        seed: int,
        model_version: str,
        result: Mapping[str, Any] | None = None,
        error: str | None = None,
        started: float | None = None,
        finished: float | None = None,
    ) -> None:
        """Commit one finished run (or its error): series file first, then one transaction."""
        if not self.write:
            raise StoreError("store opened read-only")
        cell = {k: v for k, v in factors.items() if k != "trial"}
        series_name = metrics = summary = None
        flows: list[Mapping[str, Any]] = []
        if result is not None:
            series_name = self._write_series(key, result)
            metrics = json.dumps(dict(_metrics_fn(result))) if _metrics_fn is not None else None
            flows = result.get("flows") or []
            summary = json.dumps({k: v for k, v in result.items() if k not in ("series", "rtt_samples")})
        status = "done" if result is not None else "error"
        backend = str((result or {}).get("backend") or BACKEND)
        cols = [
            "key",
            "design",
            "factors",
            "cell",
            "seed",
            "model_version",
            "backend",
            "status",
            "error",
            "started",
            "finished",
            *RESULT_COLUMNS,
            "metrics",
            "series",
            "summary",
        ]
        vals = [
            key,
            design,
            canonical_json(factors),
            canonical_json(cell),
            int(seed),
            model_version,
            backend,
            status,
            error,
            started,
            finished,
            *[(result or {}).get(c) for c in RESULT_COLUMNS],
            metrics,
            series_name,
            summary,
        ]
        with self._tx():
            self.db.execute("DELETE FROM flows WHERE run_key = ?", (key,))
            self.db.execute(
                f"INSERT OR REPLACE INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                vals,
            )
            self.db.executemany(
                f"INSERT OR REPLACE INTO flows (run_key, {', '.join(FLOW_COLUMNS)}) "
                f"VALUES (?, {', '.join('?' * len(FLOW_COLUMNS))})",
                [(key, *[f.get(c) for c in FLOW_COLUMNS]) for f in flows],
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO qdisc_stats VALUES (?, ?, ?, ?, ?)",
                [(key, *row) for row in qdisc_rows(result)] if result is not None else [],
            )

    def _write_series(self, key: str, result: Mapping[str, Any]) -> str | None:
        if not (result.get("series") or {}).get("t"):
            return None
        cols = series_columns(result)
        if _have_pyarrow():  # straight from the arrays: through pandas it took ~15 ms per run
            import pyarrow as pa
            import pyarrow.parquet as pq

            name = f"{key}.parquet"
            tmp = self.path / "series" / f"{key}.tmp{os.getpid()}.parquet"
            pq.write_table(pa.table(cols), tmp)
        else:
            import numpy as np

            name = f"{key}.npz"
            tmp = self.path / "series" / f"{key}.tmp{os.getpid()}.npz"
            buf = io.BytesIO()
            np.savez_compressed(buf, **cols)
            tmp.write_bytes(buf.getvalue())
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, self.path / "series" / name)
        return name

    # ---------------------------------------------------------------- reading
    def designs(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM designs ORDER BY updated")]

    def design_conflict(self, name: str, plan: Iterable[tuple[Mapping[str, Any], int]]) -> DesignConflictError | None:
        """The error recording design ``name`` with these runs (factors, seed) would raise: None
        if the store has no design of that name or the same runs under it (a read-only check)."""
        if self.db.execute("SELECT 1 FROM designs WHERE name = ?", (name,)).fetchone() is None:
            return None
        stored = _plan_points(
            (json.loads(r["factors"]), r["seed"])
            for r in self.db.execute("SELECT factors, seed FROM plan WHERE design = ?", (name,))
        )
        new = _plan_points(plan)
        if stored == new:
            return None
        return DesignConflictError(self.path, name, _differing_factors(stored, new), len(stored), len(new))

    def superseded(self) -> int:
        """Finished runs that no design plans any more: a design run again with another model
        version plans that version's runs (the key holds it), and the earlier ones stay in the
        store, out of every reader's view unless asked for."""
        return self.db.execute(f"SELECT COUNT(*) FROM runs r WHERE r.status = 'done' AND {_SUPERSEDED}").fetchone()[0]

    def status(self) -> list[dict[str, Any]]:
        """done / error / missing / total per design."""
        out = []
        for d in self.designs():
            row = self.db.execute(
                "SELECT COUNT(*) AS total,"
                " SUM(CASE WHEN r.status = 'done' THEN 1 ELSE 0 END) AS done,"
                " SUM(CASE WHEN r.status = 'error' THEN 1 ELSE 0 END) AS errors"
                " FROM plan p LEFT JOIN runs r ON r.key = p.key WHERE p.design = ?",
                (d["name"],),
            ).fetchone()
            total, done, errors = row["total"], row["done"] or 0, row["errors"] or 0
            out.append({"design": d["name"], "total": total, "done": done, "errors": errors, "missing": total - done})
        return out

    def runs(self, *, design: str | None = None, status: str | None = "done", superseded: bool = False):
        """One row per run: factor columns (study order), the registered study's metrics,
        then the rest (seed, key, design, model version, backend, status, timings, ...).

        ``design``: the runs that design plans now. Otherwise the runs every design plans now;
        ``superseded=True`` adds the runs no design plans any more (see :meth:`superseded`).

        The ``design`` column: ``design`` when given (a run two designs share is in both);
        otherwise every design that plans the run, ``;``-separated in the order of :meth:`designs`
        (a run no design plans names the design that ran it)."""
        import pandas as pd

        q = "SELECT r.* FROM runs r"
        args: list[Any] = []
        conds = []
        if design is not None:
            q += " JOIN plan p ON p.key = r.key"
            conds.append("p.design = ?")
            args.append(design)
        elif not superseded:
            conds.append(f"NOT ({_SUPERSEDED})")
        if status is not None:
            conds.append("r.status = ?")
            args.append(status)
        if conds:
            q += " WHERE " + " AND ".join(conds)
        q += " ORDER BY r.rowid"
        rows = [dict(r) for r in self.db.execute(q, args)]
        if design is not None:
            planned_by = {r["key"]: design for r in rows}
        else:
            order = {d["name"]: i for i, d in enumerate(self.designs())}
            by_key: dict[str, list[str]] = {}
            for k, d in self.db.execute("SELECT key, design FROM plan"):
                by_key.setdefault(k, []).append(d)
            planned_by = {k: ";".join(sorted(ds, key=lambda d: order.get(d, len(order)))) for k, ds in by_key.items()}
        for r in rows:
            r["design"] = planned_by.get(r["key"], r["design"])
        facs = [json.loads(r["factors"]) for r in rows]
        mets = [self._metrics(r) for r in rows]
        names = [k for k in _factor_order if any(k in f for f in facs)]
        names += sorted({k for f in facs for k in f} - set(names))
        metric_names = list(dict.fromkeys(k for m in mets for k in m))
        rest = ["seed", "key", "design", "model_version", "backend", "status", *RESULT_COLUMNS]
        rest += ["started", "finished", "series", "error"]
        data = [
            {
                **{k: f.get(k) for k in names},
                **{k: m.get(k) for k in metric_names},
                **{k: r.get(k) for k in rest},
                "backend": r.get("backend") or BACKEND,
            }
            for r, f, m in zip(rows, facs, mets, strict=True)
        ]
        return pd.DataFrame(data, columns=names + metric_names + rest)

    @staticmethod
    def _metrics(row: Mapping[str, Any]) -> dict[str, Any]:
        """A run row's study metrics: stored, or (rows of an older store) computed from its
        stored result by the registered function."""
        if row.get("metrics"):
            return json.loads(row["metrics"])
        if row.get("summary") and _metrics_fn is not None:
            return dict(_metrics_fn(json.loads(row["summary"])))
        return {}

    def qdiscs(self):
        """One row per run and qdisc: every numeric statistic the run reported for it
        (generic: whatever the backend's qdiscs report, e.g. drops, marks, sojourn_p99_ms,
        drops_by_reason.aqm, extra.step_marks), wide."""
        import pandas as pd

        long = pd.read_sql_query("SELECT * FROM qdisc_stats ORDER BY run_key, name, metric", self.db)
        if long.empty:
            return pd.DataFrame(columns=["run_key", "name", "kind"])
        wide = long.pivot_table(index=["run_key", "name", "kind"], columns="metric", values="value", aggfunc="first")
        return wide.reset_index().rename_axis(columns=None)

    def flows(self):
        import pandas as pd

        return pd.read_sql_query("SELECT * FROM flows ORDER BY run_key, name", self.db)

    def factors(self, key: str) -> dict[str, Any]:
        """The factor values of run ``key`` as its design planned them."""
        r = self.db.execute("SELECT factors FROM runs WHERE key = ?", (key,)).fetchone()
        if r is None:
            raise KeyError(key)
        return json.loads(r[0])

    def summary(self, key: str) -> dict[str, Any]:
        r = self.db.execute("SELECT summary FROM runs WHERE key = ?", (key,)).fetchone()
        if r is None or r[0] is None:
            raise KeyError(key)
        return json.loads(r[0])

    def series(self, key: str):
        """The stored time series of run ``key`` as a DataFrame (the columns of :func:`series_columns`)."""
        import pandas as pd

        r = self.db.execute("SELECT series FROM runs WHERE key = ?", (key,)).fetchone()
        if r is None or r[0] is None:
            raise KeyError(f"no series stored for run {key}")
        p = self.path / "series" / r[0]
        if p.suffix == ".parquet":
            return pd.read_parquet(p)
        import numpy as np

        with np.load(p) as z:
            return pd.DataFrame({k: z[k] for k in z.files})
