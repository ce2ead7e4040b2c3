"""Every benchmark in ``benchmarks/`` runs (``workbench bench NAME --quick --json``) and
returns its figures.  Benchmarks measure and never assert times; this only checks that
each still runs against the current code and prints one JSON object with its ratios (a
benchmark broken by a refactor would otherwise go unnoticed until someone measures)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from simulator.bench import available


def _numbers(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value


def test_every_benchmark_is_found():
    assert {
        "engine",
        "frames",
        "stacks",
        "hol",
        "push",
        "trailers",
        "crossstream",
        "demux",
        "coalescing",
        "batch",
        "explore",
    } <= set(available())


# bench lab makes network namespaces and a relay: it runs on the lab tests' worker (one lab
# at a time, so a lab test's "nothing left behind" check never sees another's relay).
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.xdist_group("lab")) if n == "lab" else n for n in available()]
)
def test_benchmark_runs_quick_and_prints_its_figures_as_json(name):
    proc = subprocess.run(
        [sys.executable, "-m", "simulator.cli", "bench", name, "--quick", "--json"],
        capture_output=True,
        timeout=600,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    figures = json.loads(proc.stdout)
    numbers = list(_numbers(figures))
    assert numbers, f"bench {name} returned no figures"
    assert any(math.isfinite(x) and x > 0 for x in numbers)
