"""``workbench batch replay``: the real-stack replay (and its transport-model twin) over
traces x grid x seeds, with the batch runner's store and resume rules."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from simulator import batch
from simulator.batch.registry import expand_grid, get_study
from simulator.cli import main
from simulator.http import model_replay
from simulator.stacks import replay
from simulator.stacks.common import StackParams
from simulator.traces import load
from simulator.traces.har import write_har
from simulator.traces.synth import generate

GRID = {"stack": ["h2", "h3"], "loss": [0.03], "rtt": ["80ms"]}


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Two small pages (a few origins each), so a job takes a fraction of a second."""
    d = tmp_path_factory.mktemp("replay-traces")
    write_har(generate(pages=1, seed=1, requests=8, origins=2), d / "a.har")
    write_har(generate(pages=1, seed=2, requests=6, origins=1), d / "b.har")
    (d / "README.md").write_text("not a trace")
    return d


def test_grid_spelled_as_replay_flags_with_model_as_a_boolean():
    st = get_study("replay")
    points = expand_grid({"stack": ["h2", "h3"], "bw": ["20mbit"], "model": [False, True], "qpack-table": ["0"]}, st)
    assert len(points) == 4
    assert points[1].flags == {"stack": "h2", "bw": "20mbit", "model": "true", "qpack-table": "0"}
    p = points[3]
    assert p.params.model and p.params.stack == "h3" and p.params.bandwidth_bps == 20e6
    assert p.params.qpack_table_bytes == 0
    d = st.params_dict(p.params)
    assert d["model"] is True and "seed" not in d
    assert "trace" not in st.flags() and "qlog" not in st.flags() and "json" not in st.flags()


def test_rows_carry_params_and_seed_and_equal_direct_runs(traces, tmp_path):
    out = tmp_path / "res"
    grid = {**GRID, "model": [False, True]}
    report = batch.run_batch(
        "replay", str(traces), grid, seeds=2, out=out, workers=0, progress=False, tables=("summary", "exchanges")
    )
    assert (report.jobs, report.ok, report.failed) == (2 * 4 * 2, 16, 0)
    df = batch.load(out)
    assert len(df) == 16 and not df.duplicated(["job_id"]).any()
    for col in (
        "job_id",
        "trace",
        "trace_hash",
        "seed",
        "version",
        "git_commit",
        "grid",
        "stack",
        "model",
        "rtt_s",
        "loss",
        "bandwidth_bps",
        "cc",
        "completed",
        "last_completion_s",
        "packets_lost",
        "events",
    ):
        assert col in df.columns, col
    assert set(df["seed"]) == {1, 2} and set(df["stack"]) == {"h2", "h3"} and set(df["model"]) == {False, True}
    assert set(df["loss"]) == {"0.03"} and set(df["rtt_s"]) == {0.08}
    assert json.loads(df["grid"].iloc[0]) == {"stack": "h2", "loss": "0.03", "rtt": "80ms", "model": "false"}
    # The same job through the replay's own entry points gives the same numbers.
    trace_a = str(traces / "a.har")
    for stack, model, module in (("h3", False, replay), ("h2", True, model_replay)):
        row = df[(df["trace"] == trace_a) & (df["stack"] == stack) & (df["model"] == model) & (df["seed"] == 2)]
        assert len(row) == 1
        direct = module.run(load(trace_a), StackParams(stack=stack, loss="0.03", rtt_s=0.08, seed=2)).summary
        for key in (
            "completed",
            "last_completion_s",
            "median_completion_s",
            "packets_sent",
            "packets_lost",
            "events",
            "sim_end_s",
        ):
            assert row.iloc[0][key] == direct[key], key
    # Exchanges: one row per exchange of every job, with the job's parameters.
    ex = batch.load(out, "exchanges")
    n_exchanges = len(load(trace_a)) + len(load(traces / "b.har"))
    assert len(ex) == n_exchanges * 8
    assert set(ex["job_id"]) == set(df["job_id"]) and {"exchange", "completion_s", "stack", "model"} <= set(ex.columns)
    assert ex.groupby("job_id")["completed"].all().all()


def test_resume_after_partial_completion_runs_only_the_missing_jobs(traces, tmp_path):
    out = tmp_path / "res"
    first = batch.run_batch("replay", str(traces), GRID, seeds=1, out=out, workers=0, progress=False)
    assert (first.ran, first.ok) == (4, 4)
    rows_before = batch.load(out)
    # A batch that stopped part way: one job's summary missing.
    victim = sorted((out / "summary").iterdir())[0]
    victim.unlink()
    assert batch.status(out)["missing"] == 1
    more = batch.run_batch("replay", str(traces), GRID, seeds=2, out=out, workers=0, progress=False)
    assert (more.jobs, more.skipped, more.ran, more.failed) == (8, 3, 5, 0)
    s = batch.status(out)
    assert (s["done"], s["missing"], s["failed"]) == (8, 0, 0)
    after = batch.load(out)
    assert len(after) == 8 and not after.duplicated(["job_id"]).any()
    # the job that ran again gave the same row as before (deterministic)
    redone = rows_before[rows_before.job_id == victim.stem].reset_index(drop=True)
    pd.testing.assert_frame_equal(after[after.job_id == victim.stem].reset_index(drop=True), redone)


def test_process_pool_rows_equal_in_process_rows(traces, tmp_path):
    batch.run_batch(
        "replay",
        str(traces),
        GRID,
        seeds=2,
        out=tmp_path / "a",
        workers=0,
        progress=False,
        tables=("summary", "exchanges"),
    )
    batch.run_batch(
        "replay",
        str(traces),
        GRID,
        seeds=2,
        out=tmp_path / "b",
        workers=2,
        progress=False,
        tables=("summary", "exchanges"),
    )
    for table in ("summary", "exchanges"):
        pd.testing.assert_frame_equal(batch.load(tmp_path / "a", table), batch.load(tmp_path / "b", table))


def test_stalled_replay_is_a_failed_job_and_cli_reports_it(traces, tmp_path, capsys):
    grid = tmp_path / "grid.toml"
    grid.write_text('stack = ["h2"]\nloss = [0, 0.97]\nidle-timeout = ["2s"]\n')
    out = tmp_path / "res"
    code = main(
        [
            "batch",
            "replay",
            "--traces",
            str(traces / "b.har"),
            "--grid",
            str(grid),
            "--out",
            str(out),
            "--workers",
            "0",
            "--quiet",
        ]
    )
    stdout, err = capsys.readouterr()
    # the one failure is a refusal (StackStalled is an InputError, exit 2 from `workbench replay` too)
    assert code == 2 and "2 jobs" in stdout and "1 ok, 1 failed" in stdout
    failed = batch.failures(out)
    assert len(failed) == 1 and failed.iloc[0]["flags"]["loss"] == "0.97"
    assert "StackStalled: idle timeout reached" in failed.iloc[0]["error"]
    assert len(batch.load(out)) == 1


@pytest.mark.parametrize(
    "grid_text, message",
    [
        ("loss = [0.01]\n", "required: --stack"),
        ('stack = ["h3"]\nqlog = ["q"]\n', "unknown parameter 'qlog'"),
        ('stack = ["h3"]\nmodel = ["yes"]\n', "'model' takes true or false"),
        ('stack = ["h3"]\ncc = ["bbr"]\n', "invalid choice: 'bbr'"),
    ],
)
def test_bad_replay_grid_is_one_line_exit_2(traces, tmp_path, capsys, grid_text, message):
    grid = tmp_path / "grid.toml"
    grid.write_text(grid_text)
    code = main(["batch", "replay", "--traces", str(traces), "--grid", str(grid), "--out", str(tmp_path / "o")])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_dask_local_rows_equal_in_process_rows(traces, tmp_path):
    pytest.importorskip("distributed")
    grid = {"stack": ["h3"], "loss": [0.03]}
    batch.run_batch("replay", str(traces / "a.har"), grid, seeds=2, out=tmp_path / "local", workers=0, progress=False)
    report = batch.run_batch(
        "replay", str(traces / "a.har"), grid, seeds=2, out=tmp_path / "dask", workers=1, dask="local", progress=False
    )
    assert report.ok == 2
    pd.testing.assert_frame_equal(batch.load(tmp_path / "local"), batch.load(tmp_path / "dask"))
