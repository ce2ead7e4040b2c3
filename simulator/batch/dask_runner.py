"""Batch jobs on a Dask cluster (``workbench batch --dask``): connecting (or starting a
local cluster), sending each trace's bytes once, sizing tasks, and collecting results with
a no-progress timeout.  Nothing is shared with the workers but the installed package.
Written by hand over ``dask.distributed``'s client API."""

from __future__ import annotations

import traceback
from typing import Callable

from ..errors import InputError
from .runner import DASK_TIMEOUT_S, NO_TRACE, execute_many

__all__ = ["run_dask"]

_DASK_POLL_S = 1.0


def _trace_bytes(data: bytes) -> bytes:
    """A trace file's bytes as a task of their own.  The bytes are in the task itself, so
    the scheduler holds them: if the worker that kept the result dies, the scheduler runs
    the task again elsewhere (scattered data would be lost with its worker)."""
    return data


def _dask_client(dask: str, workers: int, timeout: float):
    import logging

    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - a declared dependency
        raise InputError("--dask needs the 'distributed' package (pip install 'dask[distributed]').") from None
    if dask == "local":
        cluster = LocalCluster(
            n_workers=max(1, workers),
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        )  # no fixed port
        return Client(cluster), cluster
    address = dask if "://" in dask else f"tcp://{dask}"
    wait = min(20.0, timeout)
    try:
        _reachable(address, wait)
    except (OSError, ValueError, KeyError) as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"cannot reach the Dask scheduler at {dask!r} ({why[:200]}).") from None
    # Dask's own timeout covers connecting, not a peer that accepts and never answers (a port
    # that is not a Dask scheduler): the Client is made in a thread given a deadline of its own.
    import threading

    made: dict = {}

    def connect() -> None:
        try:
            made["client"] = Client(address, timeout=wait, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            made["error"] = " ".join(str(exc).split()) or type(exc).__name__
        except Exception as exc:  # noqa: BLE001 - anything else from a peer that is not Dask
            made["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"

    t = threading.Thread(target=connect, name="workbench-dask-connect", daemon=True)
    t.start()
    t.join(wait + 5.0)
    if "client" in made:
        return made["client"], None
    if t.is_alive():
        failed = f"no Dask scheduler answered within {wait + 5.0:g} s"
    else:
        failed = made.get("error", "no client")
        _quiet_collect()  # the half-made Client's __del__ would print a traceback on the way out
    raise InputError(f"cannot reach the Dask scheduler at {dask!r} ({failed[:200]}).")


def _quiet_dask_logs() -> Callable[[], None]:
    """Dask's loggers (``distributed`` and each ``distributed.*`` one, some of which have
    levels of their own) to CRITICAL; returns the function that puts them back."""
    import logging

    try:
        import distributed  # noqa: F401 - its loggers exist once it is imported
    except ImportError:  # pragma: no cover - a declared dependency
        pass
    names = ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]
    old = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.CRITICAL)

    def restore() -> None:
        for n, level in old.items():
            logging.getLogger(n).setLevel(level)

    return restore


def _reachable(address: str, wait: float) -> None:
    """Fail fast, before a Dask ``Client`` exists, on an address that is malformed, of an
    unknown scheme, or where nothing listens (TCP and TLS)."""
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    scheme, location = parse_address(address)
    get_backend(scheme)  # ValueError: unknown scheme
    if scheme in ("tcp", "tls"):
        host, port = parse_host_port(location)
        with socket.create_connection((host, port), timeout=wait):
            pass


def _quiet_collect() -> None:
    import gc
    import sys

    hook = sys.unraisablehook
    sys.unraisablehook = lambda *_: None
    try:
        gc.collect()
    finally:
        sys.unraisablehook = hook


_TASK_S = 0.5  # aim: this much work per Dask task (small jobs go several to a task)
_MAX_CHUNK = 32
_TRACE_BUDGET = 512 * 2**20  # bytes of trace files in the cluster at once (more only to keep one going)


def run_dask(
    jobs: list[dict],
    dask: str,
    workers: int,
    on_result: Callable[[dict, dict], None],
    *,
    timeout: float = DASK_TIMEOUT_S,
) -> None:
    """Run ``jobs`` on Dask; results come back here and ``on_result`` stores them.

    Nothing is assumed shared with the workers but the installed package: each trace file
    is read here, once, and goes to the cluster as one task keyed by its bytes' SHA-256
    (``_trace_bytes``); a job depends on it and loads the trace from those bytes, its path
    only naming it.  Tasks go out a window at a time (a few per worker thread), so a corpus
    of thousands of traces never sits in the cluster's memory at once (at most
    ``_TRACE_BUDGET`` bytes of trace files, or one trace); a trace's bytes are released when
    its last job is done.  Small jobs go several to a task (about ``_TASK_S``
    of work each, from the jobs' measured times), so Dask's cost per task is shared.  A job
    on a worker that dies is rescheduled by Dask on another (its task's other jobs with
    it); a job's own error is recorded as failed.  With ``timeout`` seconds in which no job
    finished and none was running on a worker (a scheduler with no workers, or all of them
    gone), ``InputError``: the jobs done so far are stored, and a rerun completes the rest.
    """
    import hashlib
    import queue as _queue
    import time
    import warnings
    from collections import Counter, deque

    from ..traces._io import read_input

    restore_logs = _quiet_dask_logs()  # a lost worker is handled here, not logged at the user
    try:
        client, cluster = _dask_client(dask, workers, timeout)
    except BaseException:
        restore_logs()
        raise
    where = "a local Dask cluster" if cluster is not None else f"the Dask scheduler at {dask}"
    done_q: _queue.Queue = _queue.Queue()
    in_flight: dict = {}  # future -> its jobs
    left = Counter(j["trace"] for j in jobs)  # jobs not yet finished, per trace
    trace_futs: dict[str, object] = {}  # path -> the future of its bytes
    trace_bytes: dict[str, int] = {}  # path -> its size
    todo = deque(jobs)
    total = len(jobs)
    finished = 0
    job_s: float | None = None  # mean seconds per job on the workers, as measured

    def stalled(why: str) -> InputError:
        return InputError(
            f"no progress on {where} for {timeout:g} s: {why}; {finished} of {total} jobs done are "
            "stored, rerun the same command to finish (--dask-timeout sets the wait)."
        )

    def finish(job: dict, res: dict) -> None:
        nonlocal finished
        on_result(job, res)
        finished += 1
        path = job["trace"]
        left[path] -= 1
        if left[path] == 0 and path in trace_futs:
            trace_futs.pop(path).release()  # its last job is done: the bytes go

    def trace_future(job: dict):
        """The future of the job's trace bytes (sent once per trace), None for no trace;
        raises InputError if the file cannot be read."""
        if job["trace_hash"] == NO_TRACE and not job["trace"]:
            return None
        path = job["trace"]
        if path not in trace_futs:
            data = read_input(path)
            sha = hashlib.sha256(data).hexdigest()[:32]
            with warnings.catch_warnings():  # a large HAR in a task is the point here, not a slip
                warnings.filterwarnings("ignore", message="Sending large graph")
                trace_futs[path] = client.submit(_trace_bytes, data, key=f"workbench-trace-{sha}", pure=False)
            trace_bytes[path] = len(data)
        return trace_futs[path]

    def over_budget(job: dict) -> bool:
        """Would this job send one more trace while those in flight already fill the budget?"""
        return (
            job["trace"] not in trace_futs
            and bool(trace_futs)
            and sum(trace_bytes[p] for p in trace_futs) >= _TRACE_BUDGET
        )

    try:
        window, next_window_check, threads = 8, 0.0, 1
        last_progress = time.monotonic()
        while todo or in_flight:
            now = time.monotonic()
            if now >= next_window_check:  # a few tasks per worker thread, however many join
                try:
                    threads = sum(client.nthreads().values())
                    window = max(8, 3 * threads)
                except Exception:
                    pass
                next_window_check = now + 5.0
            if todo and len(in_flight) < window:
                chunk = 1 if job_s is None else max(1, min(_MAX_CHUNK, int(_TASK_S / max(job_s, 1e-4))))
                chunk = min(chunk, max(1, len(todo) // (2 * max(1, threads))))  # the last ones spread out
                groups: list[tuple[object, list[dict]]] = []  # (trace future, jobs of one task)
                slots = window - len(in_flight)
                while todo:
                    job = todo[0]
                    if over_budget(job):
                        break
                    try:
                        dep = trace_future(job)
                    except InputError as exc:
                        todo.popleft()
                        finish(job, {"job_id": job["job_id"], "ok": False, "error": str(exc), "traceback": ""})
                        continue
                    if groups and groups[-1][0] is dep and len(groups[-1][1]) < chunk:
                        groups[-1][1].append(todo.popleft())
                    elif len(groups) < slots:
                        groups.append((dep, [todo.popleft()]))
                    else:
                        break
                # one message to the scheduler per trace, not one per task
                i = 0
                while i < len(groups):
                    dep = groups[i][0]
                    j = i
                    while j < len(groups) and groups[j][0] is dep:
                        j += 1
                    tasks = [g for _, g in groups[i:j]]
                    # a task's key names exactly its jobs (another client's task of the same jobs
                    # on the same cluster is the same computation; one of other jobs never is)
                    keys = [
                        "workbench-batch-" + hashlib.sha256(" ".join(j["job_id"] for j in g).encode()).hexdigest()[:32]
                        for g in tasks
                    ]
                    args = (tasks,) if dep is None else (tasks, [dep] * len(tasks))
                    for fut, g in zip(client.map(execute_many, *args, key=keys, pure=False), tasks):
                        in_flight[fut] = g
                        fut.add_done_callback(done_q.put)
                    i = j
            if not in_flight:
                continue
            try:
                fut = done_q.get(timeout=_DASK_POLL_S)
            except _queue.Empty:
                fut = None
            if fut is None or fut not in in_flight:
                now = time.monotonic()
                if now - last_progress >= _DASK_POLL_S and _running_here(client, in_flight):
                    last_progress = now
                elif now - last_progress > timeout:
                    raise stalled("no job finished and no worker is running one (no workers, or all gone?)")
                continue
            group = in_flight.pop(fut)
            try:
                results = fut.result(timeout=timeout)
            except TimeoutError:  # finished once, then its worker died and none is left to redo it
                raise stalled("a finished job's result was lost with its worker and no worker ran it again") from None
            except Exception as exc:  # e.g. KilledWorker: the task took down one worker after another
                error = " ".join(f"{type(exc).__name__}: {exc}".split())
                results = [
                    {"job_id": job["job_id"], "ok": False, "error": error, "traceback": traceback.format_exc()}
                    for job in group
                ]
            fut.release()
            for job, res in zip(group, results):
                if res.get("job_id") != job["job_id"]:  # never expected: refuse rather than misfile
                    res = {
                        "job_id": job["job_id"],
                        "ok": False,
                        "traceback": "",
                        "error": f"the cluster returned the result of job {res.get('job_id')!r} for this one",
                    }
                finish(job, res)
            took = [r["seconds"] for r in results if "seconds" in r]
            if took:
                mean = sum(took) / len(took)
                job_s = mean if job_s is None else 0.7 * job_s + 0.3 * mean
            last_progress = time.monotonic()
    finally:
        try:
            for fut in list(in_flight) + list(trace_futs.values()):
                fut.release()
            client.close(timeout=10)
            if cluster is not None:
                cluster.close(timeout=10)
        finally:
            restore_logs()


def _running_here(client, in_flight: dict) -> bool:
    """Is a worker running (or holding, ready to run) one of these jobs?"""
    try:
        processing = client.processing()
    except Exception:
        return False
    keys = {f.key for f in in_flight}
    return any(k in keys for ks in processing.values() for k in ks)
