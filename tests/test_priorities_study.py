"""``workbench priorities``: rows per (browser, scheduler), bad input in one line, the
direction of Wijnants et al. (naive schedulers slower on the visual metrics), byte-stable JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.errors import InputError
from simulator.studies.priorities import PrioritiesParams, run
from simulator.traces import load

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "traces" / "synthetic-page.har")


@pytest.fixture(scope="module")
def result():
    return run(
        load(PAGE), PrioritiesParams(schedulers=("rfc9218", "tree", "fifo", "rr", "lifo"), browsers=("chromium",))
    )


def test_rows_carry_scheduler_browser_and_metrics(result):
    rows = result.to_dict()["schedulers"]
    assert [r["scheduler"] for r in rows] == ["rfc9218", "tree", "fifo", "rr", "lifo"]
    for r in rows:
        assert r["browser"] == "chromium" and r["seed"] == 1
        # Floors: no LCP before the first paint, no Speed Index beyond onLoad.
        assert r["render_blocking_done_s"] <= r["lcp_estimate_s"] <= r["onload_s"]
        assert r["render_blocking_done_s"] <= r["speed_index_estimate_s"] <= r["onload_s"]


def test_rfc9218_s4_urgency_aware_beats_round_robin_and_lifo_on_first_paint(result):
    s = result.summary.set_index("scheduler")
    for naive in ("rr", "lifo"):
        assert s.loc["rfc9218", "render_blocking_done_s"] < s.loc[naive, "render_blocking_done_s"]
        assert s.loc["tree", "lcp_estimate_s"] < s.loc[naive, "lcp_estimate_s"]


def test_rfc9218_s7_lcp_update_brings_the_lcp_image_earlier():
    base = PrioritiesParams(schedulers=("rfc9218",), browsers=("chromium",))
    with_update = run(load(PAGE), base).summary["lcp_estimate_s"].iloc[0]
    without = (
        run(load(PAGE), PrioritiesParams(schedulers=("rfc9218",), browsers=("chromium",), reprioritize=False))
        .summary["lcp_estimate_s"]
        .iloc[0]
    )
    assert with_update <= without


def test_bad_input_names_the_choices(capsys):
    with pytest.raises(InputError, match="choose from rfc9218"):
        PrioritiesParams(schedulers=("nope",))
    assert main(["priorities", "--trace", PAGE, "--browser", "opera"]) == 2
    err = capsys.readouterr().err
    assert "chromium, firefox, safari, trace" in err and "Traceback" not in err


def test_same_seed_same_json(capsys):
    args = ["priorities", "--trace", PAGE, "--scheduler", "rfc9218,rr", "--browser", "firefox", "--json"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == first
    assert len(json.loads(first)["schedulers"]) == 2


def test_batch_runs_it_through_the_registry(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text('scheduler = ["rfc9218,rr"]\nbrowser = ["chromium"]\n')
    assert (
        main(
            [
                "batch",
                "priorities",
                "--traces",
                PAGE,
                "--grid",
                str(grid),
                "--seeds",
                "1",
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )


def test_tree_over_h3_is_marked_rfc9218_section_2_1():
    """HTTP/3 has no dependency tree (RFC 9114 has no PRIORITY frame; RFC 9218 section 2.1):
    a run of ``tree`` over h3 says so in its JSON; over h2 it says nothing."""
    from simulator.studies.priorities.study import PrioritiesParams, notes

    h3 = notes(PrioritiesParams(schedulers=("rfc9218", "tree"), protocol="h3"))
    assert len(h3) == 1 and "no dependency tree" in h3[0] and "RFC 9218 section 2.1" in h3[0]
    assert notes(PrioritiesParams(schedulers=("rfc9218", "tree"), protocol="h2")) == []
    assert notes(PrioritiesParams(schedulers=("rfc9218",), protocol="h3")) == []
