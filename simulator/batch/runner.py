"""Batch runs: traces x parameter grid x seeds, in local worker processes or on Dask.

``run_batch("hol", traces="traces/", grid="grid.toml", seeds=3, out="results/")`` expands
the jobs, records them in the results folder's manifest, skips the jobs already done there,
runs the rest and writes each job's rows as it finishes (see ``store`` for the layout and
the crash-safety argument).  Workers compute a job's rows and serialise them to Parquet;
the one parent process writes the files, so no two processes ever write the same file and
remote Dask workers need no access to the results folder nor to the trace files (the
client sends each trace's bytes to the cluster once; see ``dask_runner.run_dask``).

Determinism: a job is a pure function of (study, trace content, parameters, seed); rows
carry no wall-clock values, so the same jobs give identical rows in a process pool, in
the parent process (``workers=0``) and on Dask.
"""

from __future__ import annotations

import glob as _glob
import json
import os
import subprocess
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd

from .. import __version__
from ..errors import InputError
from .registry import GridPoint, Study, check_grid, expand_grid, get_study, read_grid
from .store import SUMMARY, ResultsDir, job_id, table_bytes

__all__ = ["run_batch", "plan", "resolve_traces", "git_commit", "execute", "execute_many", "BatchReport"]

# files in a trace folder that are not traces
_NOT_TRACES = (".md", ".txt", ".rst", ".toml", ".py", ".ipynb", ".parquet", ".csv")


# ---------------------------------------------------------------------------------------
# Planning


def resolve_traces(patterns: str | os.PathLike | Iterable) -> list[str]:
    """Trace files from folders (their files, not recursive, docs skipped), globs
    (``**`` recurses) and plain paths; sorted within each pattern, duplicates dropped."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    out: list[str] = []
    for pattern in patterns:
        pattern = str(pattern)
        p = Path(pattern)
        if p.is_dir():
            found = sorted(
                str(f)
                for f in p.iterdir()
                if f.is_file()
                and not f.name.startswith(".")
                and not f.name.lower().endswith(_NOT_TRACES)
                and not f.name.upper().startswith("LICENSE")
            )
        elif p.is_file():
            found = [pattern]
        else:
            found = sorted(f for f in _glob.glob(pattern, recursive=True) if Path(f).is_file())
        out += [f for f in found if f not in out]
    if not out:
        shown = ", ".join(str(p) for p in patterns)
        raise InputError(f"no trace files matched {shown}.")
    return out


_COMMIT: str | None = None


def git_commit() -> str:
    """The package's git commit (``git rev-parse HEAD``), or ``"unknown"``; never fails."""
    global _COMMIT
    if _COMMIT is None:
        try:
            here = Path(__file__).resolve().parent
            r = subprocess.run(
                ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
            )
            _COMMIT = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"
        except Exception:
            _COMMIT = "unknown"
    return _COMMIT


@dataclass
class Plan:
    """The jobs of one batch before any runs: the study, its jobs, the traces that could not be read."""

    study: Study
    jobs: list[dict]  # job dicts, in expansion order
    bad_traces: list[tuple[str, str]]  # (path, one-line error)
    points: list[GridPoint]
    traces: list[str]


def plan(
    study: str,
    traces,
    grid=None,
    seeds: int | Iterable[int] = 1,
    *,
    tables=(SUMMARY,),
    on_bad_trace: Callable[[str, str], None] | None = None,
) -> Plan:
    """Expand traces x grid x seeds into jobs; bad traces are reported and skipped.

    ``grid``: a TOML path, a dict ``{flag: [values]}`` or ``None`` (the study's defaults);
    ``seeds``: ``N`` for seeds 1..N, or an iterable of seeds.
    """
    from ..traces import load as load_trace

    st = get_study(study)
    if isinstance(grid, dict):
        grid_values = check_grid(grid, st)
        source = "grid"
    else:
        grid_values = read_grid(grid, st)
        source = str(grid) if grid is not None else "grid"
    tables = tuple(dict.fromkeys([SUMMARY, *tables]))
    known = ("summary", *st.optional_tables)
    for t in tables:
        if t not in known:
            raise InputError(f"unknown table {t!r} for study {study!r} (tables: {', '.join(known)}).")
    if isinstance(seeds, int):
        if seeds < 1:
            raise InputError(f"--seeds must be at least 1, got {seeds}.")
        seed_list = list(range(1, seeds + 1))
    else:
        seed_list = [int(s) for s in seeds]
        if not seed_list:
            raise InputError("no seeds given.")
    points = expand_grid(grid_values, st, source=source)
    meta = {"version": __version__, "git_commit": git_commit()}
    if not st.needs_trace:
        # the study makes its own input: one job per grid point and seed, no trace
        if traces:
            raise InputError(f"study {study!r} takes no traces (it makes its own input); drop --traces.")
        jobs = []
        for point in points:
            pdict = st.params_dict(point.params)
            for seed in seed_list:
                jobs.append(
                    {
                        "job_id": job_id(st.name, NO_TRACE, pdict, seed),
                        "study": st.name,
                        "trace": "",
                        "trace_hash": NO_TRACE,
                        "flags": point.flags,
                        "params": pdict,
                        "seed": seed,
                        "tables": list(tables),
                        "_params": point.params,
                        **meta,
                    }
                )
        return Plan(study=st, jobs=jobs, bad_traces=[], points=points, traces=[])
    paths = resolve_traces(traces)
    jobs, bad, seen = [], [], {}
    for path in paths:
        try:
            trace = load_trace(path)
        except InputError as exc:
            bad.append((path, str(exc)))
            if on_bad_trace:
                on_bad_trace(path, str(exc))
            continue
        thash = trace.content_hash()
        if thash in seen:
            msg = f"{path}: same content as {seen[thash]}; skipped."
            bad.append((path, msg))
            if on_bad_trace:
                on_bad_trace(path, msg)
            continue
        seen[thash] = path
        for point in points:
            pdict = st.params_dict(point.params)
            for seed in seed_list:
                jobs.append(
                    {
                        "job_id": job_id(st.name, thash, pdict, seed),
                        "study": st.name,
                        "trace": path,
                        "trace_hash": thash,
                        "flags": point.flags,
                        "params": pdict,
                        "seed": seed,
                        "tables": list(tables),
                        "_params": point.params,
                        **meta,
                    }
                )
    if not jobs:
        raise InputError("none of the traces could be loaded: " + "; ".join(e for _, e in bad))
    return Plan(study=st, jobs=jobs, bad_traces=bad, points=points, traces=paths)


# ---------------------------------------------------------------------------------------
# One job (runs in a worker process, or on a Dask worker)

_TRACES: dict[tuple[str, str], object] = {}


NO_TRACE = "none"  # the trace hash of a job whose study takes no trace


def _trace(path: str, expected_hash: str, data: bytes | None = None):
    """The job's trace: from ``data`` (the file's bytes, sent by the client: the path only
    names it) or else read from ``path``; cached per process, checked against the hash
    the batch was planned with."""
    if expected_hash == NO_TRACE and not path:
        return None
    key = (path, expected_hash)
    trace = _TRACES.get(key)
    if trace is None:
        from ..traces import load as load_trace

        trace = load_trace(path, data=data)
        got = trace.content_hash()
        if got != expected_hash:
            raise RuntimeError(
                f"{path}: the trace changed since the batch was planned "
                f"(content hash {got[:12]}, expected {expected_hash[:12]})"
            )
        if len(_TRACES) > 64:
            _TRACES.clear()
        _TRACES[key] = trace
    return trace


_META_COLUMNS = ("job_id", "study", "trace", "trace_hash", "seed", "version", "git_commit", "grid")


def _with_meta(df: pd.DataFrame, job: dict) -> pd.DataFrame:
    """The job's identity and every resolved parameter in front of the study's columns."""
    front = {
        "job_id": job["job_id"],
        "study": job["study"],
        "trace": job["trace"],
        "trace_hash": job["trace_hash"],
        "seed": int(job["seed"]),
        "version": job["version"],
        "git_commit": job["git_commit"],
        "grid": json.dumps(job["flags"], sort_keys=True),
    }
    for k, v in job["params"].items():
        name = k if k not in df.columns and k not in front else f"param_{k}"
        front[name] = v
    n = len(df)
    head = pd.DataFrame({k: [v] * n for k, v in front.items()}, index=df.index)
    return pd.concat([head, df], axis=1)


def execute(job: dict, data: bytes | None = None) -> dict:
    """Run one job; never raises: ``{"job_id", "ok", "tables": {name: parquet bytes}}`` or
    ``{"job_id", "ok": False, "error", "traceback"}``.  ``data``: the trace file's bytes
    (on Dask: the job never opens the client's path)."""
    try:
        if job.get("version", __version__) != __version__:  # a Dask worker with another install
            raise RuntimeError(
                f"this worker runs workbench {__version__}, the batch was planned with "
                f"{job['version']}: install the client's version on every worker"
            )
        st = get_study(job["study"])
        trace = _trace(job["trace"], job["trace_hash"], data)
        params = st.with_seed(job["_params"], job["seed"])
        result = st.run(trace, params)
        produced = st.tables(result)
        payload = {name: table_bytes(_with_meta(produced[name], job)) for name in job["tables"]}
        return {"job_id": job["job_id"], "ok": True, "tables": payload}
    except Exception as exc:  # a failing job is recorded; the batch goes on
        msg = " ".join(f"{type(exc).__name__}: {exc}".split())
        # an InputError is the job's input refused (a page the study cannot compare on), not a bug
        return {
            "job_id": job["job_id"],
            "ok": False,
            "error": msg,
            "traceback": traceback.format_exc(),
            "input_error": isinstance(exc, InputError),
        }


def _watch_batch(batch_pid: int) -> None:
    """Exit this worker as soon as the batch process is gone (SIGKILL included)."""
    import select
    import time

    try:
        fd = os.pidfd_open(batch_pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        select.select([fd], [], [])  # readable when the process exits
        os._exit(1)
    while True:  # no pidfd: poll
        try:
            os.kill(batch_pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:
            pass
        time.sleep(0.5)


def _worker_init(batch_pid: int) -> None:
    """Pool workers die with the batch: a SIGKILLed batch leaves no worker running on.

    Workers are forked by the forkserver, not by the batch, and hold the pool's queues
    open themselves, so neither parent-death signals nor EOF would reach them: a daemon
    thread watches the batch process (a pidfd on Linux) and ends the worker when it goes.
    The forkserver exits once its last worker has."""
    import threading

    threading.Thread(target=_watch_batch, args=(batch_pid,), daemon=True, name="watch-batch").start()


# Modules the forkserver imports once, so workers forked from it start warm.
_PRELOAD = ["simulator.batch.runner", "simulator.studies.hol", "simulator.traces", "pandas", "pyarrow.parquet"]


def _pool_context():
    """``forkserver`` where available: workers are forked from a clean single-threaded
    server, never from the caller, which may be a Jupyter kernel with live ZeroMQ sockets
    and threads (forking those is unsafe), yet start fast thanks to the preload."""
    import multiprocessing as mp

    if "forkserver" not in mp.get_all_start_methods():
        return None
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


def _run_local(jobs: list[dict], workers: int, on_result: Callable[[dict, dict], None]) -> None:
    if workers == 0:
        for job in jobs:
            on_result(job, execute(job))
        return
    ex = ProcessPoolExecutor(
        max_workers=workers, mp_context=_pool_context(), initializer=_worker_init, initargs=(os.getpid(),)
    )
    try:
        futures = {ex.submit(execute, job): job for job in jobs}
        for fut in as_completed(futures):
            job = futures[fut]
            try:
                res = fut.result()
            except BrokenProcessPool as exc:
                res = {
                    "job_id": job["job_id"],
                    "ok": False,
                    "error": f"worker process died ({exc}); rerun the batch to retry",
                    "traceback": traceback.format_exc(),
                }
            on_result(job, res)
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    ex.shutdown(wait=True)


DASK_TIMEOUT_S = 120.0  # default: this long with no job finished and none running -> exit 2


def execute_many(jobs: list[dict], data: bytes | None = None) -> list[dict]:
    """``execute`` each job (all of one trace, ``data`` its bytes); each result also says
    how long the job took on the worker (``seconds``: sizes the next tasks; never in a row)."""
    import time

    out = []
    for job in jobs:
        t0 = time.perf_counter()
        res = execute(job, data)
        res["seconds"] = time.perf_counter() - t0
        out.append(res)
    return out


# ---------------------------------------------------------------------------------------
# The batch


@dataclass
class BatchReport:
    """What a batch did: jobs planned, skipped as already done, run, ok and failed, and where the rows are."""

    results_dir: str
    jobs: int  # jobs planned by this call
    skipped: int  # already done in the results folder
    ran: int
    ok: int
    failed: int
    bad_traces: list = field(default_factory=list)
    refused: int = 0  # failed jobs whose input was refused (InputError), not a bug
    failures: list = field(default_factory=list)  # (job_id, error)

    def __str__(self) -> str:
        s = (
            f"{self.jobs} jobs: {self.skipped} already done, {self.ran} run ({self.ok} ok, {self.failed} failed); "
            f"results in {self.results_dir}"
        )
        if self.bad_traces:
            s += f"; {len(self.bad_traces)} bad trace(s) skipped"
        return s


def run_batch(
    study: str,
    traces,
    grid=None,
    seeds: int | Iterable[int] = 1,
    *,
    out,
    workers: int | None = None,
    dask: str | None = None,
    dask_timeout: float = DASK_TIMEOUT_S,
    tables=(SUMMARY,),
    progress: bool = True,
    on_bad_trace: Callable[[str, str], None] | None = None,
) -> BatchReport:
    """Run ``study`` over ``traces`` x ``grid`` x ``seeds`` into the results folder ``out``.

    ``workers``: local worker processes (default: CPU count; 0 runs in this process);
    with ``dask="local"`` the number of LocalCluster workers; ``dask=ADDRESS`` joins a
    running scheduler (the workers need only the installed package: traces go to them as
    bytes); ``dask_timeout``: seconds with no job finished and none running on a worker
    before giving up with ``InputError``.  Jobs already done in ``out`` are skipped; failures are recorded in
    ``out/failed/`` and the batch goes on.  Returns a ``BatchReport``.
    """
    p = plan(study, traces, grid, seeds, tables=tables, on_bad_trace=on_bad_trace)
    if workers is None:
        workers = os.cpu_count() or 1
    if workers < 0:
        raise InputError(f"--workers must be >= 0, got {workers}.")
    rd = ResultsDir(out)
    rd.open_for_writing(p.jobs[0]["tables"])
    try:
        rd.merge_manifest(
            p.study.name, [{k: v for k, v in j.items() if not k.startswith("_")} for j in p.jobs], p.jobs[0]["tables"]
        )
        pending = [j for j in p.jobs if not rd.is_done(j["job_id"], j["tables"])]
        report = BatchReport(
            results_dir=str(out),
            jobs=len(p.jobs),
            skipped=len(p.jobs) - len(pending),
            ran=0,
            ok=0,
            failed=0,
            bad_traces=p.bad_traces,
        )
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(
                total=len(p.jobs), initial=report.skipped, desc=f"batch {p.study.name}", unit="job", dynamic_ncols=True
            )
            bar.set_postfix(failed=0)

        def on_result(job: dict, res: dict) -> None:
            report.ran += 1
            if res["ok"]:
                rd.write_tables(job["job_id"], res["tables"])
                report.ok += 1
            else:
                rd.write_failure(job, res["error"], res.get("traceback", ""))
                report.failed += 1
                report.refused += bool(res.get("input_error"))
                report.failures.append((job["job_id"], res["error"]))
                if bar is not None:
                    bar.set_postfix(failed=report.failed)
            if bar is not None:
                bar.update(1)

        try:
            if not pending:
                pass
            elif dask:
                from .dask_runner import run_dask  # Dask is imported only when asked for

                run_dask(pending, dask, workers or 1, on_result, timeout=dask_timeout)
            else:
                _run_local(pending, workers, on_result)
        finally:
            if bar is not None:
                bar.close()
        return report
    finally:
        rd.close()
