"""Batch runs: grid expansion, the results folder, failures, bad traces, reruns, CLI errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from simulator import batch
from simulator.batch.registry import expand_grid, get_study
from simulator.cli import main
from simulator.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "traces" / "synthetic-page.har"

QIF = ":method\tGET\n:path\t/\n:authority\ta.example\n\n:method\tGET\n:path\t/x\n:authority\ta.example\n\n"


@pytest.fixture
def trace_set(tmp_path):
    d = tmp_path / "traces"
    d.mkdir()
    (d / "page.har").write_bytes(PAGE.read_bytes())
    (d / "tiny.qif").write_text(QIF)
    (d / "broken.har").write_text('{"log": {"entries": [')
    (d / "README.md").write_text("not a trace")
    return d


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------------
# Grid


def test_grid_is_spelled_as_the_study_flags():
    st = get_study("hol")
    points = expand_grid({"loss": [0, 0.01], "rtt": ["50ms", "100ms"], "scheme": ["hpack,qpack"]}, st)
    assert len(points) == 4
    assert points[0].flags == {"loss": "0", "rtt": "50ms", "scheme": "hpack,qpack"}
    p = points[3].params
    assert (p.loss, p.rtt_s, p.schemes) == ("0.01", 0.1, ("hpack", "qpack"))


@pytest.mark.parametrize(
    "grid_text, message",
    [
        ("loss = [0,\n", "not valid TOML"),
        ("lossy = [0]\n", "unknown parameter 'lossy'"),
        ('rtt = ["fast"]\n', "cannot read 'fast' as a duration"),
        ('transport = ["carrier-pigeon"]\n', "grid point transport=carrier-pigeon"),
        ("seed = [1, 2]\n", "use --seeds"),
        ("loss = []\n", "empty list"),
    ],
)
def test_bad_grid_is_one_line_exit_2(tmp_path, capsys, grid_text, message):
    grid = tmp_path / "grid.toml"
    grid.write_text(grid_text)
    code, out, err = _cli(
        capsys, "batch", "hol", "--traces", str(PAGE), "--grid", str(grid), "--out", str(tmp_path / "out")
    )
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_unknown_study_and_no_traces_are_one_line_exit_2(tmp_path, capsys):
    code, _, err = _cli(capsys, "batch", "nope", "--traces", str(PAGE), "--out", str(tmp_path / "o"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "unknown study 'nope'" in err
    code, _, err = _cli(capsys, "batch", "hol", "--traces", str(tmp_path / "*.har"), "--out", str(tmp_path / "o"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "no trace files matched" in err
    code, _, err = _cli(capsys, "batch", "status", str(tmp_path / "nothing-here"))
    assert code == 2 and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------
# Results folder


def test_rows_carry_everything_and_rerun_skips(tmp_path):
    out = tmp_path / "res"
    grid = {"loss": [0, 0.02], "scheme": ["hpack,qpack,qcram"]}
    report = batch.run_batch("hol", str(PAGE), grid, seeds=2, out=out, workers=0, progress=False)
    assert (report.jobs, report.ok, report.failed, report.skipped) == (4, 4, 0, 0)
    df = batch.load(out)
    assert len(df) == 4 * 3
    assert not df.duplicated(["job_id", "scheme"]).any()
    for col in (
        "job_id",
        "trace",
        "trace_hash",
        "seed",
        "version",
        "git_commit",
        "grid",
        "loss",
        "rtt_s",
        "schemes",
        "transport",
        "table_bytes",
        "scheme",
        "blocked",
        "hol_p95_ms",
    ):
        assert col in df.columns, col
    assert set(df["seed"]) == {1, 2} and set(df["loss"]) == {"0", "0.02"}
    assert set(df["trace"]) == {str(PAGE)}
    assert df["git_commit"].iloc[0]  # a commit or "unknown", never empty
    assert json.loads(df["grid"].iloc[0]) == {"loss": "0", "scheme": "hpack,qpack,qcram"}
    # the same job through the study's own entry point gives the same numbers
    from simulator.studies import hol
    from simulator.traces import load

    direct = hol.run(load(PAGE), hol.HolParams(loss="0.02", seed=2)).summary
    row = df[(df.loss == "0.02") & (df.seed == 2)].set_index("scheme")
    assert row["hol_total_ms"].to_dict() == pytest.approx(direct["hol_total_ms"].to_dict())

    again = batch.run_batch("hol", str(PAGE), grid, seeds=2, out=out, workers=0, progress=False)
    assert (again.skipped, again.ran) == (4, 0)
    # more seeds: only the new jobs run
    more = batch.run_batch("hol", str(PAGE), grid, seeds=3, out=out, workers=0, progress=False)
    assert (more.skipped, more.ran) == (4, 2)
    assert len(batch.load(out)) == 6 * 3
    assert batch.status(out)["done"] == 6


def test_process_pool_rows_equal_in_process_rows(tmp_path):
    grid = {"loss": [0.02], "transport": ["quic", "tcp"], "scheme": ["hpack,qpack"]}
    batch.run_batch("hol", str(PAGE), grid, seeds=2, out=tmp_path / "a", workers=0, progress=False)
    batch.run_batch("hol", str(PAGE), grid, seeds=2, out=tmp_path / "b", workers=2, progress=False)
    pd.testing.assert_frame_equal(batch.load(tmp_path / "a"), batch.load(tmp_path / "b"))


def test_failed_job_is_recorded_and_bad_trace_skipped(trace_set, tmp_path, capsys):
    out = tmp_path / "res"
    grid = tmp_path / "grid.toml"
    grid.write_text('direction = ["requests", "responses"]\nscheme = ["hpack,qpack"]\n')
    code, stdout, err = _cli(
        capsys,
        "batch",
        "hol",
        "--traces",
        str(trace_set),
        "--grid",
        str(grid),
        "--out",
        str(out),
        "--workers",
        "2",
        "--quiet",
        "--tables",
        "summary,blocks",
    )
    assert code == 2  # a trace could not be read (a job failed too)
    assert "broken.har" in err and "skipping trace" in err  # the bad trace is reported ...
    assert len([line for line in err.splitlines() if "broken.har" in line]) == 1
    assert "README" not in err  # ... docs in the folder are not traces
    assert "4 jobs" in stdout and "3 ok, 1 failed" in stdout
    failed = batch.failures(out)
    assert len(failed) == 1
    row = failed.iloc[0]
    assert row["trace"].endswith("tiny.qif") and row["flags"]["direction"] == "responses"
    assert "no responses header lists" in row["error"]
    df = batch.load(out)
    assert len(df) == 3 * 2 and set(df["direction"]) == {"requests", "responses"}
    blocks = batch.load(out, "blocks")
    assert set(blocks["job_id"]) == set(df["job_id"]) and "hol_delay_ms" in blocks.columns
    assert len(blocks[blocks.trace.str.endswith("tiny.qif")]) == 2 * 2  # 2 requests x 2 schemes

    code, stdout, _ = _cli(capsys, "batch", "status", str(out))
    assert code == 1 and "4 jobs: 3 done, 1 failed, 0 missing" in stdout and "no responses header lists" in stdout
    # every file readable, nothing temporary left
    for f in (out / "summary").iterdir():
        assert not f.name.startswith(".")
        pq.read_table(f)


def test_status_reports_missing(tmp_path, capsys):
    out = tmp_path / "res"
    batch.run_batch("hol", str(PAGE), {"loss": [0, 0.02]}, seeds=1, out=out, workers=0, progress=False)
    victim = sorted((out / "summary").iterdir())[0]
    victim.unlink()
    s = batch.status(out)
    assert (s["jobs"], s["done"], s["failed"], s["missing"]) == (2, 1, 0, 1)
    code, stdout, _ = _cli(capsys, "batch", "status", str(out))
    assert code == 1 and "1 missing" in stdout
    again = batch.run_batch("hol", str(PAGE), {"loss": [0, 0.02]}, seeds=1, out=out, workers=0, progress=False)
    assert again.ran == 1 and batch.status(out)["missing"] == 0


def test_results_folder_of_another_study_or_locked_is_refused(tmp_path):
    out = tmp_path / "res"
    batch.run_batch("hol", str(PAGE), None, seeds=1, out=out, workers=0, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["study"] = "push"
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="holds results of study 'push'"):
        batch.run_batch("hol", str(PAGE), None, seeds=1, out=out, workers=0, progress=False)
    from simulator.batch.store import ResultsDir

    holder = ResultsDir(tmp_path / "locked")
    holder.open_for_writing(["summary"])
    try:
        with pytest.raises(InputError, match="another batch is writing"):
            batch.run_batch("hol", str(PAGE), None, seeds=1, out=tmp_path / "locked", workers=0, progress=False)
    finally:
        holder.close()


def test_status_shows_progress_and_failures_per_trace(trace_set, tmp_path, capsys):
    out = tmp_path / "res"
    traces = [str(trace_set / "page.har"), str(trace_set / "tiny.qif")]
    grid = {"direction": ["requests", "responses"], "scheme": ["hpack"]}
    batch.run_batch("hol", traces, grid, seeds=1, out=out, workers=0, progress=False)
    page_jobs = batch.load(out).query("trace.str.endswith('page.har')")["job_id"]
    (out / "summary" / f"{page_jobs.iloc[0]}.parquet").unlink()
    per_trace = {
        Path(t["trace"]).name: (t["jobs"], t["done"], t["failed"], t["missing"]) for t in batch.status(out)["traces"]
    }
    assert per_trace == {"page.har": (2, 1, 0, 1), "tiny.qif": (2, 1, 1, 0)}
    code, stdout, _ = _cli(capsys, "batch", "status", str(out))
    assert code == 1
    lines = stdout.splitlines()
    page = next(line for line in lines if "page.har" in line and "failed" not in line)
    tiny = next(line for line in lines if "tiny.qif" in line and "failed" not in line)
    assert page.split()[1:5] == ["2", "1", "0", "1"] and "50%" in page
    assert tiny.split()[1:5] == ["2", "1", "1", "0"] and "50%" in tiny
    assert any(line.startswith("  failed") and "tiny.qif" in line and "no responses" in line for line in lines)


def test_progress_bar_on_a_terminal_only(tmp_path):
    import os
    import pty
    import subprocess
    import sys

    argv = [sys.executable, "-m", "simulator.cli", "batch", "hol", "--traces", str(PAGE), "--workers", "0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a 100-column terminal
    try:
        proc = subprocess.run(
            [*argv, "--out", str(tmp_path / "tty")],
            stdout=subprocess.PIPE,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            timeout=120,
            env=env,
        )
        os.close(slave)
        slave = None
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the writer side is closed and drained
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 0
    assert b"batch hol" in seen and b"1/1" in seen  # the bar, on the terminal
    piped = subprocess.run(
        [*argv, "--out", str(tmp_path / "pipe")], capture_output=True, timeout=120, stdin=subprocess.DEVNULL, env=env
    )
    assert piped.returncode == 0 and piped.stderr == b""  # no bar into a pipe or a log file


def test_many_traces_show_the_unfinished_first_and_count_the_rest(capsys):
    from simulator.batch import commands, runner

    assert commands.DASK_TIMEOUT_S == runner.DASK_TIMEOUT_S  # the CLI's default is the runner's
    traces = [
        {
            "trace": f"t{i:02}.har",
            "trace_hash": str(i),
            "jobs": 2,
            "done": 2 if i != 7 else 1,
            "failed": 0,
            "missing": 0 if i != 7 else 1,
        }
        for i in range(30)
    ]
    commands._print_traces(traces)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and "t07.har" in out[1] and "29 more trace(s), all done" in out[2]
    commands._print_traces([dict(t, done=2, missing=0) for t in traces])
    out = capsys.readouterr().out.splitlines()
    assert out == ["  all 30 traces done"]


def test_a_worker_with_another_version_refuses_the_job():
    from simulator.batch.runner import execute

    p = batch.plan("hol", str(PAGE), {"scheme": ["hpack"]}, 1)
    job = {**p.jobs[0], "version": "0.0.0-elsewhere"}
    res = execute(job, PAGE.read_bytes())
    assert not res["ok"] and "planned with 0.0.0-elsewhere" in res["error"]
    assert execute(p.jobs[0], PAGE.read_bytes())["ok"]
