"""Transport models vs real stacks: median completion times agree within 20%.

Small scenarios (a 300 kB download, a 30-exchange page) at 0%, 1% and 3% loss, seeds
pooled.  One known larger gap, explained in notebooks/05-models-vs-real-stacks.ipynb:
a page over QUIC at 3% loss (the QUIC model recovers more slowly than aioquic), checked
within 40% so that a change in either direction is still noticed.
"""

import pytest

from simulator.stacks import crossval

KNOWN_GAPS = {("page", "h3", 0.03): 0.40}


def _check(table):
    for row in table.itertuples():
        tolerance = KNOWN_GAPS.get((row.scenario, row.stack, row.loss), 0.20)
        assert abs(row.ratio - 1.0) <= tolerance, (row.scenario, row.stack, row.loss, row.real_median_s,
                                                   row.model_median_s)


def test_models_and_real_stacks_agree_small():
    runs = crossval.compare("small", seeds=range(1, 9))
    table = crossval.pooled(runs)
    assert len(table) == 12
    _check(table)


@pytest.mark.slow
def test_models_and_real_stacks_agree_full():
    runs = crossval.compare("full", seeds=range(1, 11))
    _check(crossval.pooled(runs))
