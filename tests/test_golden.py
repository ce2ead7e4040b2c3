"""Golden ``--json`` outputs of every study command on the bundled traces.

A refactor keeps them byte-identical; a change meant to move a result regenerates the file
(``WORKBENCH_UPDATE_GOLDEN=1 pytest tests/test_golden.py``) and its commit says which result
moved and why.  The commands run in-process from the repository root, small and fast."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"

COMMANDS = {
    "hol-quic": [
        "hol",
        "--trace",
        "traces/synthetic-page.har",
        "--scheme",
        "hpack,qpack,qcram",
        "--transport",
        "quic",
        "--rtt",
        "100ms",
        "--bw",
        "10mbit",
        "--loss",
        "0.02",
        "--seed",
        "1",
    ],
    "hol-tcp": [
        "hol",
        "--trace",
        "traces/synthetic-session.har",
        "--transport",
        "tcp",
        "--loss",
        "0.01",
        "--seed",
        "2",
    ],
    "hol-ref2017": ["hol", "--trace", "traces/qif/fb-req-hq.qif", "--transport", "ref2017", "--loss", "0.01"],
    "hol-interop": ["hol", "--trace", "traces/qpack-interop/ls-qpack/fb-req-hq.out.256.100.1", "--loss", "0.01"],
    "push": [
        "push",
        "--trace",
        "traces/synthetic-page.har",
        "--policy",
        "none,push,hints,push+hints",
        "--rtt",
        "100ms",
        "--bw",
        "10mbit",
        "--seed",
        "1",
    ],
    "push-h3": ["push", "--trace", "traces/synthetic-page.har", "--protocol", "h3", "--loss", "0.01", "--cache", "0.5"],
    "push-captured": ["push", "--trace", "traces/captured-h2-page.har", "--policy", "none,push,hints"],
    "push-real-chrome": [
        "push",
        "--trace",
        "traces/har-real/sitespeed_browsertime-recalculate-style.har",
        "--policy",
        "none,hints",
        "--rtt",
        "150ms",
    ],
    "coalescing": ["coalescing", "--trace", "traces/synthetic-many-origins.har", "--mode", "none,ip,origin,h3-altsvc"],
    "trailers": ["trailers", "--seed", "1"],
    "replay-h2": ["replay", "--trace", "traces/synthetic-page.har", "--stack", "h2", "--loss", "0.01"],
    "trace-info": ["trace", "info", "traces/har-real/http_http2-firefox.har"],
    "fidelity": ["fidelity", "traces/har-real", "traces/captured-h2-page.har"],
    "priorities": [
        "priorities",
        "--trace",
        "traces/captured-h2-page.har",
        "--scheduler",
        "rfc9218,tree,fifo,rr,lifo",
        "--browser",
        "chromium,firefox",
        "--protocol",
        "h3",
        "--loss",
        "0.01",
    ],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_golden_json(name, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main([*COMMANDS[name], "--json"]) == 0
    out = capsys.readouterr().out
    path = GOLDEN / f"{name}.json"
    if os.environ.get("WORKBENCH_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(out)
        if os.environ.get("WORKBENCH_UPDATE_GOLDEN") != "1":
            pytest.fail(f"{path.name} was missing and has been written: check it in")
    assert out == path.read_text(), f"{name}: --json differs from {path.relative_to(ROOT)}"
