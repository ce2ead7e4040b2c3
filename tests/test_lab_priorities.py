"""The priorities study's schedulers behind real Chromium (``lab-load --scheduler``, ``workbench
lab validate-priorities``): the model's prediction per scheduler without the lab, and a smoke
load that needs root, /dev/net/tun, the relay and Chromium (skipped with the reason where one
is missing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lab_needs import WHY

from simulator.lab.priorities import predict_metrics
from simulator.net.conditions import PathConditions

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "traces/captured-h2-page.har"
WORKBENCH = [sys.executable, "-m", "simulator.cli"]
pytestmark = pytest.mark.xdist_group("lab")


def test_wijnants_direction_lifo_finishes_the_render_blocking_set_after_rfc9218():
    """RFC 9218 section 4 sends the most urgent (render-blocking) responses first; LIFO sends the
    latest request first, so on a slow link the page's first paint floor comes later, on both
    protocols (the model's prediction from the bundled capture, as the lab check makes it)."""
    har = PAGE.read_text()
    at = PathConditions(rtt_s=0.1, bandwidth_bps=2e6)
    for protocol in ("h2", "h3"):
        rfc = predict_metrics(har, str(PAGE), at, protocol, "rfc9218")
        lifo = predict_metrics(har, str(PAGE), at, protocol, "lifo")
        assert lifo["render_blocking_done_s"] > rfc["render_blocking_done_s"]
        assert rfc["onload_s"] >= rfc["lcp_estimate_s"] >= rfc["render_blocking_done_s"] > 0


def test_validate_priorities_refuses_a_grid_without_its_baseline_or_an_unknown_scheduler(tmp_path):
    for flags, needle in ((["--scheduler", "fifo,rr"], "rfc9218"), (["--scheduler", "rfc9218,nope"], "nope")):
        proc = subprocess.run(
            [*WORKBENCH, "lab", "validate-priorities", str(PAGE), "--out", str(tmp_path / "out"), *flags],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.skipif(WHY is not None, reason=f"the lab needs root, /dev/net/tun, its relay and Chromium: {WHY}")
@pytest.mark.parametrize("protocol", ["h2", "h3"])
def test_lab_smoke_chromium_signals_reach_the_scheduling_server_rfc9218_s5(protocol):
    """Chromium sends RFC 9218's ``Priority`` field over HTTP/2 and HTTP/3 (omitted at the defaults; what
    the lab's scheduling servers read), the document at the highest urgency of the page; the load
    completes with the server sending in ``fifo``'s order."""
    from simulator.http.priority_signals import parse_priority_field
    from simulator.lab.study import KERNEL_TCP_COUNTERS, LabLoadParams, load_in_lab
    from simulator.traces import load

    params = LabLoadParams(rtt_s=0.02, bandwidth_bps=20e6, protocol=protocol, scheduler="fifo", timeout_s=40)
    har, stats = load_in_lab(load(str(ROOT / "traces/synthetic-page.har")), params)
    assert har["log"]["pages"][0]["pageTimings"]["onLoad"] > 0
    # The load's counters: every byte Chromium counted as transferred crossed the relay's
    # downlink (under TLS or QUIC, UDP or TCP, and IP headers); the server kernel's TCP counters.
    transferred = sum(max(0, e["response"].get("_transferSize") or 0) for e in har["log"]["entries"])
    assert stats["downlink"]["bytes_in"] >= transferred > 100_000
    assert all(stats[k] >= 0 for k in KERNEL_TCP_COUNTERS)
    log = [r for r in stats["server_log"] if r["status"] < 400]
    assert len(log) > 10
    fields = [r["priority"] for r in log]
    assert sum(f is not None for f in fields) > len(fields) / 2, fields
    urgencies = [parse_priority_field(f or "")[0] for f in fields]  # absent: the defaults (section 4.1)
    assert urgencies[0] == min(urgencies)  # the navigation
    assert len(set(urgencies)) > 1  # Chromium signals different urgencies, or no scheduler could act
