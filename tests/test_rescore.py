"""``workbench lab rescore``: a validation's stored loads predicted again with the current
model, without the lab (no root, no Chromium): a results folder made here by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from simulator.cli import main
from simulator.lab.validate import analyse

ROOT = Path(__file__).resolve().parents[1]
PAGE = "traces/har-real/http_http2-chrome.har"


def _store(out: Path) -> None:
    """Three runs of one page at the reference (20 ms, 50 Mbit/s) and at 100 ms, h2."""
    har = (ROOT / PAGE).read_text(encoding="utf-8")
    (out / "summary").mkdir(parents=True)
    (out / "har").mkdir()
    onload = {0.02: [0.70, 0.72, 0.74], 0.1: [1.10, 1.20, 1.90]}
    for rtt_s, values in onload.items():
        for run, value in enumerate(values, start=1):
            job = f"job{int(rtt_s * 1000):03d}{run}"
            pd.DataFrame([{"job_id": job, "trace": PAGE, "seed": run, "rtt_s": rtt_s, "bandwidth_bps": 50e6,
                           "loss": "0", "queue_bytes": None, "protocol": "h2", "cc": "cubic",
                           "onload_s": value}]).to_parquet(out / "summary" / f"{job}.parquet", index=False)
            pd.DataFrame([{"job_id": job, "trace": PAGE, "seed": run, "har_json": har}]).to_parquet(
                out / "har" / f"{job}.parquet", index=False)


def test_rescore_reads_only_the_runs_asked_for(tmp_path, capsys):
    """``--runs 2`` leaves run 3 out (a run still being measured into the folder): the 100 ms
    page has two measured loads, its median is theirs, and the prediction is the one
    ``analyse`` makes from the median reference run."""
    out = tmp_path / "results"
    _store(out)
    assert main(["lab", "rescore", str(out), "--runs", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    (cond,) = result["conditions"]
    (page,) = cond["pages"]
    assert page["measured_onload_s"] == [1.1, 1.2]
    assert result["params"]["runs"] == 2
    every = analyse(str(out), {"rtt_s": 0.02, "bandwidth_bps": 50e6, "loss": "0", "queue_bytes": None,
                               "protocol": "h2"}).to_dict()
    assert every["conditions"][0]["pages"][0]["measured_onload_s"] == [1.1, 1.2, 1.9]
    assert page["error_percent"] == pytest.approx(100 * (page["predicted_onload_s"] - 1.15) / 1.15, abs=0.01)


def test_rescore_of_a_missing_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["lab", "rescore", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err
