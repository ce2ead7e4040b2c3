"""SIGKILL the batch at arbitrary moments, rerun the same command: it completes only the
missing jobs, with no lost rows, no duplicated rows and no corrupt or half-written file."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from simulator import batch

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "traces" / "synthetic-page.har"


def _command(grid: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "simulator.cli",
        "batch",
        "hol",
        "--traces",
        str(PAGE),
        "--grid",
        str(grid),
        "--seeds",
        "4",
        "--workers",
        "2",
        "--out",
        str(out),
        "--quiet",
        "--tables",
        "summary,blocks",
    ]


def _done(out: Path) -> int:
    d = out / "summary"
    return sum(1 for p in d.iterdir() if p.suffix == ".parquet") if d.is_dir() else 0


def test_sigkill_then_rerun_completes_exactly(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text('loss = [0, 0.01, 0.02]\nrtt = ["50ms", "100ms"]\nscheme = ["hpack,qpack,qcram"]\n')
    out = tmp_path / "res"
    expected_jobs = 3 * 2 * 4
    rng = random.Random(7)
    kills = 0
    for attempt in range(3):  # kill it three times, at a different moment each time
        before = _done(out)
        proc = subprocess.Popen(_command(grid, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        target = before + rng.randint(2, 5)
        deadline = time.monotonic() + 60
        while proc.poll() is None and _done(out) < target and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.random() * 0.05)  # somewhere in the middle of the next writes
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait(timeout=30)
        # whatever is visible now is complete: every file reads
        for table in ("summary", "blocks"):
            d = out / table
            if d.is_dir():
                for f in d.iterdir():
                    if not f.name.startswith("."):
                        pq.read_table(f)
    assert kills >= 1
    assert _done(out) < expected_jobs  # the kills left work to do
    done_before = _done(out)

    proc = subprocess.run(_command(grid, out), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"{expected_jobs} jobs: {done_before} already done, {expected_jobs - done_before} run" in proc.stdout

    df = batch.load(out)
    assert len(df) == expected_jobs * 3
    assert not df.duplicated(["job_id", "scheme"]).any()
    assert df["job_id"].nunique() == expected_jobs
    blocks = batch.load(out, "blocks")
    assert blocks["job_id"].nunique() == expected_jobs
    assert len(blocks) == expected_jobs * 3 * 158  # 79 requests + 79 responses per scheme (direction auto)
    assert not blocks.duplicated(["job_id", "scheme", "kind", "origin", "stream_id"]).any()
    status = batch.status(out)
    assert (status["done"], status["failed"], status["missing"]) == (expected_jobs, 0, 0)
    for table in ("summary", "blocks"):
        names = [f.name for f in (out / table).iterdir()]
        assert all(n.endswith(".parquet") and not n.startswith(".") for n in names), names
