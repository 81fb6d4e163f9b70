"""Run a study into a results store: local process pool or Dask, resumable.

Workers only execute runs (scenario JSON in, the result parsed into a dict out: parsing there,
in parallel, keeps the parent's per-run work small); the parent process alone writes the store,
one transaction per finished run. Running a study again does only the runs whose
key has no ``done`` row. Ctrl-C cancels the pending runs and leaves the store consistent.

The function that executes one run is injectable (``run_fn``: ``str -> str``, must be
picklable, i.e. a module-level function); the default is the engine, ``l4sim._core.run``.
The scenario builder (``point, seed -> scenario dict``) is injectable too; the default is
the design's own ``build`` (see :mod:`l4sim.sweep.designs`; a study's is
``l4sim.studies.factors.scenario_from_factors``). The runner knows nothing of any study.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4sim.sweep.designs import Design, DesignError, RunSpec
from l4sim.sweep.store import Store, planned_runs, run_key

RunFn = Callable[[str], str]
Builder = Callable[[Mapping[str, Any], int], dict]


def core_run(scenario_json: str) -> str:
    """Execute one run with the engine (releases the GIL)."""
    from l4sim._core import run

    return run(scenario_json)


def engine_model_version() -> str:
    from l4sim._core import MODEL_VERSION

    return str(MODEL_VERSION)


def execute(run_fn: RunFn, scenario_json: str) -> tuple[dict | None, str | None, float, float]:
    """Worker side: (result, error, started, finished). Never raises for a bad run."""
    t0 = time.time()
    try:
        return json.loads(run_fn(scenario_json)), None, t0, time.time()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # ScenarioError, engine failure, or a Rust panic (pyo3's
        # PanicException is a BaseException and does not pickle): recorded as text, not fatal
        msg = f"{type(e).__name__}: {e}"
        if not isinstance(e, ValueError):
            msg += "\n" + traceback.format_exc(limit=5)
        return None, msg, t0, time.time()


@dataclass
class PlannedRun:
    spec: RunSpec
    key: str
    scenario_json: str


@dataclass
class Outcome:
    planned: int = 0
    already_done: int = 0
    done: int = 0
    errors: int = 0
    interrupted: bool = False
    error_messages: list[str] = field(default_factory=list)

    @property
    def missing(self) -> int:
        return self.planned - self.already_done - self.done


def plan(study: Design, *, builder: Builder | None = None, model_version: str) -> list[PlannedRun]:
    specs = study.runs()
    check = getattr(study, "check", None)
    if builder is None and check is not None:
        check(specs)  # the design's own check of its runs (a study's: the core's validator)
    builder = builder or study.build
    out = []
    for spec in specs:
        try:
            scen = builder(spec.point, spec.seed)
        except ValueError as e:  # ScenarioError: name the point, stop before running anything
            raise DesignError(f"run {spec.point} cannot be built: {e}") from e
        out.append(PlannedRun(spec, run_key(scen, spec.seed, model_version), json.dumps(scen, sort_keys=True)))
    return out


def run_study(
    study: Design,
    store: str | os.PathLike | Store,
    *,
    jobs: int | None = None,
    dask: Any = None,
    limit: int | None = None,
    run_fn: RunFn | None = None,
    builder: Builder | None = None,
    model_version: str | None = None,
    progress: bool = True,
    on_record: Callable[[PlannedRun], None] | None = None,
) -> Outcome:
    """Run every missing run of ``study`` into ``store``.

    jobs: local worker processes (default: all cores). dask: a scheduler address
    ("tcp://host:port") or a ``distributed.Client``. limit: do at most this many runs.
    """
    run_fn = run_fn or core_run
    if model_version is None:
        model_version = engine_model_version()
    # every point built before the store is opened: one that cannot be leaves no store behind
    planned = plan(study, builder=builder, model_version=model_version)
    own_store = not isinstance(store, Store)
    if isinstance(store, Store):
        st = store
    else:
        if (Path(store) / "index.sqlite").exists():
            # another design under a name the store holds: refused before it is opened for writing
            with Store(Path(store)) as ro:
                runs = planned_runs((p.key, p.spec.point, p.spec.seed) for p in planned)
                conflict = ro.design_conflict(study.name, runs)
            if conflict is not None:
                raise conflict
        st = Store(Path(store), write=True)
    out = Outcome()
    try:
        st.add_design(study.name, study.to_toml(), [(p.key, p.spec.point, p.spec.seed) for p in planned])
        done = st.done_keys()
        seen: set[str] = set()
        todo = []
        for p in planned:
            if p.key in done:
                out.already_done += 1
            elif p.key not in seen:
                seen.add(p.key)
                todo.append(p)
        out.planned = len(planned)
        if limit is not None:
            todo = todo[: max(0, limit)]
        if not todo:
            return out
        bar = _progress(len(todo), study.name, progress)

        def commit(p: PlannedRun, res: tuple[dict | None, str | None, float, float]) -> None:
            result, err, t0, t1 = res
            st.record(
                p.key,
                design=study.name,
                factors=p.spec.point,
                seed=p.spec.seed,
                model_version=model_version,
                result=result,
                error=err,
                started=t0,
                finished=t1,
            )
            if err is None:
                out.done += 1
            else:
                out.errors += 1
                if len(out.error_messages) < 10:
                    out.error_messages.append(f"{p.spec.point}: {err.splitlines()[0]}")
            if on_record is not None:
                on_record(p)
            bar.update(1)

        try:
            with _Stop() as stop:
                if dask is not None:
                    _run_dask(dask, run_fn, todo, commit, jobs, stop)
                else:
                    _run_local(run_fn, todo, commit, jobs, stop)
        except KeyboardInterrupt:
            out.interrupted = True
        finally:
            bar.close()
        return out
    finally:
        if own_store:
            st.close()


def _progress(total: int, desc: str, enabled: bool):
    try:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, unit="run", disable=not enabled, smoothing=0.05)
    except ImportError:  # pragma: no cover

        class _Null:
            def update(self, n: int) -> None: ...
            def close(self) -> None: ...

        return _Null()


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which cancels the pending runs."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent(parent_pid: int) -> None:
    """A worker never outlives the study that started it (even after SIGKILL of the parent,
    which runs no cleanup). Linux: PR_SET_PDEATHSIG kills the worker when its parent (the fork
    server) exits, and the fork server exits when the study's process is gone. Everywhere: a
    watchdog thread checks once a second that the study's process is alive and ends the
    worker if not (the simulation releases the GIL, so the check runs during a long run)."""
    import signal
    import sys
    import threading

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the watchdog still works
            pass

    def alive() -> bool:
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # exists, owned by someone else (pid reused): treat as gone
            return False
        return True

    def watch() -> None:
        while alive():
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="l4sim-parent-watchdog", daemon=True).start()


def _init_worker(parent_pid: int) -> None:
    _ignore_sigint()
    _die_with_parent(parent_pid)


class _Stop:
    """Ctrl-C sets a flag that the loops check between commits, so an interrupt never lands
    inside a store transaction; a second Ctrl-C interrupts at once."""

    def __init__(self) -> None:
        self.flag = False
        self._old: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        if self.flag:
            raise KeyboardInterrupt
        self.flag = True

    def __enter__(self) -> _Stop:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        import signal

        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)

    def check(self) -> None:
        if self.flag:
            raise KeyboardInterrupt


def _run_local(run_fn: RunFn, todo: list[PlannedRun], commit, jobs: int | None, stop: _Stop) -> None:
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1:  # in process: simplest; Ctrl-C is honoured after the current run
        for p in todo:
            commit(p, execute(run_fn, p.scenario_json))
            stop.check()
        return
    # forkserver, not fork: forked workers would inherit the store's flock and SQLite file
    # descriptors, so after the parent is killed they could keep the store locked until they
    # notice; workers started by the fork server hold nothing of the parent's.
    ex = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("forkserver"),
        initializer=_init_worker,
        initargs=(os.getpid(),),
    )
    pending: dict[Any, PlannedRun] = {}
    it = iter(todo)
    window = 2 * jobs  # bounded in-flight: cheap cancellation, bounded memory
    try:
        for p in it:
            pending[ex.submit(execute, run_fn, p.scenario_json)] = p
            if len(pending) >= window:
                break
        while pending:
            stop.check()
            finished, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for f in finished:
                p = pending.pop(f)
                commit(p, f.result())
                nxt = None if stop.flag else next(it, None)
                if nxt is not None:
                    pending[ex.submit(execute, run_fn, nxt.scenario_json)] = nxt
    except BaseException:
        for f in pending:
            f.cancel()
        procs = list((getattr(ex, "_processes", None) or {}).values())
        ex.shutdown(wait=False, cancel_futures=True)
        for proc in procs:  # runs in flight are abandoned: they were never committed
            try:
                proc.terminate()
            except Exception:
                pass
        raise
    ex.shutdown(wait=True)


def _run_dask(dask: Any, run_fn: RunFn, todo: list[PlannedRun], commit, jobs: int | None, stop: _Stop) -> None:
    from distributed import Client
    from distributed import wait as dwait

    client = dask if isinstance(dask, Client) else Client(dask)
    own = client is not dask
    futs: dict[Any, PlannedRun] = {}
    try:
        nworkers = max(1, sum(client.nthreads().values()))
        window = max(2 * nworkers, jobs or 0)
        it = iter(todo)

        def submit(p: PlannedRun) -> None:
            f = client.submit(execute, run_fn, p.scenario_json, pure=False, key=f"run-{p.key}")
            futs[f] = p

        for p in it:
            submit(p)
            if len(futs) >= window:
                break
        while futs:
            stop.check()
            try:
                res = dwait(list(futs), timeout=0.5, return_when="FIRST_COMPLETED")
            except TimeoutError:
                continue
            for f in res.done:
                p = futs.pop(f)
                commit(p, f.result())
                f.release()
                nxt = None if stop.flag else next(it, None)
                if nxt is not None:
                    submit(nxt)
    except BaseException:
        if futs:
            client.cancel(list(futs))
        raise
    finally:
        if own:
            client.close()
