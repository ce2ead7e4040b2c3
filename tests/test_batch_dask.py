"""The same jobs on a Dask LocalCluster give identical rows to local worker processes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simulator import batch

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "traces" / "synthetic-page.har"
CAPTURED = ROOT / "traces" / "captured-h2-page.har"


def test_dask_local_rows_equal_process_pool_rows(tmp_path, monkeypatch):
    from simulator.batch import dask_runner

    # one trace's bytes in the cluster at a time: the budget holds the next trace back, never the batch
    monkeypatch.setattr(dask_runner, "_TRACE_BUDGET", 1)
    traces = [str(PAGE), str(CAPTURED)]
    grid = {"loss": [0.02, "ge:0.01,0.3"], "scheme": ["hpack,qpack,qcram"]}
    local = batch.run_batch("hol", traces, grid, seeds=2, out=tmp_path / "local", workers=2, progress=False)
    dask = batch.run_batch("hol", traces, grid, seeds=2, out=tmp_path / "dask", workers=2, dask="local", progress=False)
    assert local.ok == dask.ok == 8
    a, b = batch.load(tmp_path / "local"), batch.load(tmp_path / "dask")
    assert len(a) == 8 * 3
    pd.testing.assert_frame_equal(a, b)
    # and a rerun on Dask finds everything done
    again = batch.run_batch(
        "hol", traces, grid, seeds=2, out=tmp_path / "dask", dask="local", workers=1, progress=False
    )
    assert again.ran == 0
