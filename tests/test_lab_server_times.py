"""``workbench lab server-times``: each lab load's inferred server times against the times the
rebuilt site's servers waited, without the lab (no root, no Chromium): a results folder made
here by hand, whose "loads" are the recorded HAR and that HAR with one response held longer."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

from simulator.cli import main
from simulator.lab.servertimes import check, server_time_errors_ms
from simulator.lab.site import rebuild, served_server_times

ROOT = Path(__file__).resolve().parents[1]
PAGE = "traces/synthetic-page.har"
HELD_MS = 40.0


def _held(har: dict) -> tuple[dict, str]:
    """``har`` with its third entry's ``wait`` 40 ms longer (its response came that much later),
    and that entry's URL."""
    held = copy.deepcopy(har)
    entry = held["log"]["entries"][2]
    entry["timings"]["wait"] += HELD_MS
    entry["time"] += HELD_MS
    return held, entry["request"]["url"]


def _store(out: Path, loads: list[tuple[float, dict]]) -> None:
    (out / "summary").mkdir(parents=True)
    (out / "har").mkdir()
    for run, (rtt_s, har) in enumerate(loads, start=1):
        job = f"job{run}"
        row = {"job_id": job, "trace": str(ROOT / PAGE), "seed": run}
        pd.DataFrame(
            [
                {
                    **row,
                    "rtt_s": rtt_s,
                    "bandwidth_bps": 50e6,
                    "loss": "0",
                    "queue_bytes": None,
                    "protocol": "h2",
                    "onload_s": 1.0,
                }
            ]
        ).to_parquet(out / "summary" / f"{job}.parquet", index=False)
        pd.DataFrame([{**row, "har_json": json.dumps(har)}]).to_parquet(out / "har" / f"{job}.parquet", index=False)


def test_the_served_times_are_the_rebuilt_sites():
    """What the lab's server sleeps before each response (``Response.think_s``) is what
    ``served_server_times`` gives for its URL, for every response of the rebuilt page."""
    site = rebuild(ROOT / PAGE)
    served = served_server_times(ROOT / PAGE)
    responses = [r for by_path in site.origins.values() for r in by_path.values()]
    assert len(responses) > 50
    assert all(served[r.url] == r.think_s for r in responses)


def test_a_response_held_longer_reads_as_that_much_more_server_time():
    """HAR 1.2 ``wait`` is the round trip plus the server's time (and what its first bytes
    queued behind): the recording read against itself gives 0 for every response, and 40 ms
    more ``wait`` on one response gives +40 ms for that one only (its origin's RTT is its TCP
    handshake's, which did not move)."""
    har = json.loads((ROOT / PAGE).read_text(encoding="utf-8"))
    served = served_server_times(ROOT / PAGE)
    same = server_time_errors_ms(har, PAGE, served)
    assert same.keys() == served.keys() and max(map(abs, same.values())) < 1e-6
    held, url = _held(har)
    errors = server_time_errors_ms(held, PAGE, served)
    assert errors[url] == pytest.approx(HELD_MS, abs=1e-6)
    assert all(abs(e) < 1e-6 for u, e in errors.items() if u != url)


def test_the_table_is_per_condition_and_page(tmp_path, capsys):
    """Two conditions: at 20 ms the recording (every difference 0), at 100 ms the held one
    (one response +40 ms, the rest 0: the median 0, the mean 40 ms over their count)."""
    har = json.loads((ROOT / PAGE).read_text(encoding="utf-8"))
    held, _ = _held(har)
    out = tmp_path / "results"
    _store(out, [(0.02, har), (0.1, held)])
    result = check(str(out))
    assert [c["condition"]["rtt_s"] for c in result.conditions] == [0.02, 0.1]
    fast, slow = result.conditions
    n = fast["responses"]
    assert n == slow["responses"] > 50
    assert fast["median_ms"] == fast["mean_ms"] == fast["p90_ms"] == 0.0
    assert slow["median_ms"] == 0.0 and slow["mean_ms"] == pytest.approx(HELD_MS / n, abs=0.05)
    assert [p["trace"] for p in slow["pages"]] == [str(ROOT / PAGE)] and not result.skipped
    assert main(["lab", "server-times", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["conditions"] == result.conditions


def test_a_load_whose_trace_is_gone_is_skipped_with_the_reason(tmp_path):
    har = json.loads((ROOT / PAGE).read_text(encoding="utf-8"))
    out = tmp_path / "results"
    _store(out, [(0.02, har)])
    for part in ("summary", "har"):
        path = out / part / "job1.parquet"
        pd.read_parquet(path).assign(trace=str(tmp_path / "gone.har")).to_parquet(path, index=False)
    result = check(str(out))
    assert result.conditions == [] and result.skipped[0]["trace"].endswith("gone.har")


def test_server_times_of_a_missing_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["lab", "server-times", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err
