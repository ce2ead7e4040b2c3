"""The priorities study against the published record (``studies.priorities.compare``):
Kendall's tau-b and the Wijnants et al. / Marx et al. comparisons, on hand-made rows."""

import math

import pandas as pd
import pytest

from simulator.studies.priorities import compare


def test_kendall_tau_b_known_values_with_ties():
    assert compare.kendall_tau_b([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    assert compare.kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # tau-b with ties in y: C=4, D=0, n0=6, tied y pairs=2 -> 4 / sqrt(6 * 4)
    assert compare.kendall_tau_b([1, 2, 3, 4], [1, 1, 2, 2]) == pytest.approx(4 / math.sqrt(24))
    assert math.isnan(compare.kendall_tau_b([1, 1, 1], [1, 2, 3]))


def test_wijnants_ranking_naive_schedulers_read_no_signal_rfc9218_section_4():
    """The reference tiers: every scheduler reading RFC 9218 urgency (section 4) or the
    RFC 7540 section 5.3 tree is ahead of the naive ones; aware ahead of naive gives the
    largest tau-b the tied tiers allow (6 / sqrt(10 x 6) for two and three)."""
    assert {s for s, t in compare.WIJNANTS_TIERS.items() if t == 2} == set(compare.NAIVE)
    rows = pd.DataFrame(
        {
            "scheduler": ["rfc9218", "tree", "rr", "fifo", "lifo"] * 2,
            "m": [1.0, 1.1, 1.5, 1.4, 2.0, 1.0, 1.2, 1.6, 1.3, 1.9],
        }
    )
    table, tau = compare.ranking_against_reference(rows, "m")
    assert list(table.index[:2]) == ["rfc9218", "tree"] and tau == pytest.approx(6 / math.sqrt(60))
    assert compare.max_tau_b([1, 1, 2, 2, 2]) == pytest.approx(tau)
    slow = compare.naive_slowdown(rows.assign(page=[1] * 5 + [2] * 5), "m")
    assert list(slow["naive_slowdown"].round(3)) == [0.4, 0.3]


def test_pages_that_flip_best_scheduler_marx_et_al():
    rows = pd.DataFrame(
        {
            "page": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
            "scheduler": ["rfc9218", "tree", "rr"] * 3,
            "m": [1.0, 1.2, 1.5, 2.0, 1.8, 2.5, 1.0, 1.0, 1.0],
        }
    )
    best = compare.best_per_page(rows, "m")
    assert list(best["best"]) == ["rfc9218", "tree", "rfc9218,tree,rr"]
    assert list(compare.flips(best, "rfc9218")["page"]) == ["b"]
    assert list(compare.relative_to_best(rows, "m").round(2)[:3]) == [1.0, 1.2, 1.5]
