"""A batch on a real Dask cluster that shares nothing with the client but the package.

A ``dask scheduler`` and two ``dask worker`` processes, each started in its own empty
working folder; the client names its traces by a path relative to its own working folder,
which no worker can resolve, so a job that opened the trace path would fail.  The rows
must be byte-identical to a local run's; a worker SIGKILLed in the middle of a run must
cost nothing (Dask reruns its job elsewhere: nothing lost, nothing duplicated) and a rerun
finds every job done; with every worker gone, the client gives up with one line and exit
status 2 instead of waiting for ever.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from simulator import batch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRACES = [ROOT / "traces" / "synthetic-page.har", ROOT / "traces" / "captured-h2-page.har"]
GRID = {"loss": [0, 0.02], "scheme": ["hpack,qpack,qcram"]}
GRID_TOML = 'loss = [0, 0.02]\nscheme = ["hpack,qpack,qcram"]\n'
SEEDS = 6
JOBS = len(TRACES) * 2 * SEEDS


def _env() -> dict:
    """The workers get the package (this checkout) and nothing else of the client's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DASK_", "PYTEST"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # its own session: the process and any child
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _wait_for(what: str, check, timeout: float, procs=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        for p in procs:
            if p.poll() is not None:
                said = p.log.read_text()[-2000:] if hasattr(p, "log") else (p.stderr.read() or "")[-2000:]
                raise AssertionError(f"{what}: a process exited with {p.returncode}: {said}")
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@contextmanager
def dask_cluster(tmp: Path, n_workers: int):
    """``dask scheduler`` on a free loopback port and ``n_workers`` ``dask worker``s, each in
    an empty folder of its own; yields (address, {name: worker process}); stops them all."""
    procs: list[subprocess.Popen] = []
    logs = []
    common = dict(env=_env(), stdout=subprocess.DEVNULL, start_new_session=True, stdin=subprocess.DEVNULL)

    def log(folder: Path):
        logs.append(open(folder / "log", "w"))  # a file, not a pipe nobody drains
        return logs[-1]

    try:
        sched_dir = tmp / "scheduler"
        sched_dir.mkdir()
        info = sched_dir / "scheduler.json"
        sched = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--dashboard-address",
                "127.0.0.1:0",
                "--scheduler-file",
                str(info),
                "--idle-timeout",
                "300",
            ],
            cwd=sched_dir,
            stderr=log(sched_dir),
            **common,
        )
        sched.log = sched_dir / "log"
        procs.append(sched)
        _wait_for("the scheduler file", lambda: info.exists() and info.stat().st_size > 0, 60, [sched])
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:"), address
        workers = {}
        for i in range(1, n_workers + 1):
            wdir = tmp / f"worker{i}"
            wdir.mkdir()
            w = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dask",
                    "worker",
                    address,
                    "--name",
                    f"w{i}",
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--host",
                    "127.0.0.1",
                    "--no-dashboard",
                    "--dashboard-address",
                    "127.0.0.1:0",
                    "--local-directory",
                    str(wdir),
                    "--death-timeout",
                    "30",
                ],
                cwd=wdir,
                stderr=log(wdir),
                **common,
            )
            w.log = wdir / "log"
            procs.append(w)
            workers[f"w{i}"] = w
        if n_workers:
            from dask.distributed import Client

            with Client(address, timeout=30) as c:
                c.wait_for_workers(n_workers, timeout=60)
        yield address, workers
    finally:
        for p in reversed(procs):
            _stop(p)
        for f in logs:
            f.close()


def _client_folder(tmp: Path) -> Path:
    """The client's working folder, with its traces under ``traces/``: the client names them
    by that relative path, which resolves nowhere in a worker's folder."""
    home = tmp / "client"
    (home / "traces").mkdir(parents=True)
    for t in TRACES:
        shutil.copy(t, home / "traces" / t.name)
    (home / "grid.toml").write_text(GRID_TOML)
    return home


def _cli(home: Path, out: str, address: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "simulator.cli",
        "batch",
        "hol",
        "--traces",
        "traces",
        "--grid",
        "grid.toml",
        "--seeds",
        str(SEEDS),
        "--out",
        out,
        "--dask",
        address,
        "--tables",
        "summary,blocks",
        *extra,
    ]


def _files(folder: Path) -> dict[str, bytes]:
    return {f"{t}/{p.name}": p.read_bytes() for t in ("summary", "blocks") for p in sorted((folder / t).iterdir())}


def _done(folder: Path) -> int:
    d = folder / "summary"
    return sum(1 for p in d.iterdir() if p.suffix == ".parquet") if d.is_dir() else 0


def test_cluster_rows_byte_identical_survive_a_killed_worker_and_give_up_when_all_are_gone(tmp_path, monkeypatch):
    home = _client_folder(tmp_path)
    monkeypatch.chdir(home)
    local = batch.run_batch(
        "hol", "traces", GRID, seeds=SEEDS, out="local", workers=2, progress=False, tables=("summary", "blocks")
    )
    assert (local.jobs, local.ok) == (JOBS, JOBS)
    expected = _files(home / "local")
    assert len(expected) == 2 * JOBS

    with dask_cluster(tmp_path, 2) as (address, workers):
        # 1. both workers up: the first two seeds, rows byte-identical to the local run's
        r = batch.run_batch(
            "hol",
            "traces",
            GRID,
            seeds=2,
            out="small",
            dask=address,
            progress=False,
            tables=("summary", "blocks"),
            dask_timeout=60,
        )
        assert (r.jobs, r.ok, r.failed) == (JOBS // 3, JOBS // 3, 0), r.failures
        small = _files(home / "small")
        assert len(small) == 2 * JOBS // 3
        assert all(small[name] == expected[name] for name in small)
        assert set(batch.load("small")["trace"]) == {"traces/synthetic-page.har", "traces/captured-h2-page.har"}

        # 2. SIGKILL a worker in the middle of a run: the batch still completes, exactly
        client = subprocess.Popen(
            _cli(home, "big", address, "--dask-timeout", "60"),
            cwd=home,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
        try:
            _wait_for("the first jobs on the cluster", lambda: _done(home / "big") >= 3, 90, [client])
            from dask.distributed import Client

            with Client(address, timeout=30) as c:  # w1 holds a job right now
                w1 = next(a for a, w in c.scheduler_info()["workers"].items() if w["name"] == "w1")
                assert any(str(k).startswith("workbench-batch-") for k in c.processing()[w1])
                os.kill(workers["w1"].pid, signal.SIGKILL)
            assert client.poll() is None and _done(home / "big") < JOBS  # in the middle of the run
            workers["w1"].wait(timeout=10)
            out, err = client.communicate(timeout=120)
        finally:
            _stop(client)
        assert client.returncode == 0, err[-3000:]
        assert f"{JOBS} jobs: 0 already done, {JOBS} run ({JOBS} ok, 0 failed)" in out, out + err
        assert _files(home / "big") == expected  # nothing lost, nothing extra, same bytes
        s = batch.status("big")
        assert (s["done"], s["failed"], s["missing"]) == (JOBS, 0, 0)
        df = batch.load("big")
        assert len(df) == JOBS * 3 and not df.duplicated(["job_id", "scheme"]).any()

        # 3. a rerun finds everything done
        again = subprocess.run(
            _cli(home, "big", address, "--dask-timeout", "60"),
            cwd=home,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert again.returncode == 0, again.stderr[-3000:]
        assert f"{JOBS} jobs: {JOBS} already done, 0 run" in again.stdout

        # 4. every worker gone: one line and exit 2 after the stated time, not a wait for ever
        os.kill(workers["w2"].pid, signal.SIGKILL)
        workers["w2"].wait(timeout=10)
        t0 = time.monotonic()
        dead = subprocess.run(
            _cli(home, "orphan", address, "--dask-timeout", "3"),
            cwd=home,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )
        assert dead.returncode == 2, dead.stderr[-3000:]
        lines = dead.stderr.strip().splitlines()
        assert len(lines) == 1 and "no progress" in lines[0] and "3 s" in lines[0], dead.stderr
        assert "Traceback" not in dead.stderr
        assert time.monotonic() - t0 < 60
        assert batch.status("orphan")["missing"] == JOBS  # planned, none done: a rerun would run them


@pytest.mark.parametrize("case", ["refused", "silent", "scheme", "malformed"])
def test_bad_scheduler_address_is_one_line_exit_2(tmp_path, capsys, case):
    """Nothing listening, a port that accepts and never answers (not a Dask scheduler), an
    unknown scheme, no port: one line and exit 2 within the stated time, no traceback."""
    from simulator.cli import main

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))  # a free loopback port
    port = listener.getsockname()[1]
    if case == "silent":
        listener.listen(4)
    else:
        listener.close()
    address = {
        "refused": f"tcp://127.0.0.1:{port}",
        "silent": f"tcp://127.0.0.1:{port}",
        "scheme": f"http://127.0.0.1:{port}",
        "malformed": "127.0.0.1",
    }[case]
    try:
        t0 = time.monotonic()
        code = main(
            [
                "batch",
                "hol",
                "--traces",
                str(TRACES[1]),
                "--out",
                str(tmp_path / "res"),
                "--dask",
                address,
                "--dask-timeout",
                "2",
            ]
        )
        took = time.monotonic() - t0
    finally:
        listener.close()
    _, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler" in lines[0] and "Traceback" not in err, err
    assert took < 30
