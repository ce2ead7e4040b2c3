"""Transport models vs real stacks: median completion times agree within 20%.

Small scenarios (a 300 kB download, a 30-exchange page) at 0%, 1% and 3% loss, seeds
pooled; the full ones (5 MB, 100 exchanges) in the slow suite.  Every case within 20%:
the QUIC model's ACKs ride with data, it paces, runs a handshake and resends lost data in
its stream's turn as aioquic does (before those, the page at 3% loss was 0.75x aioquic's).
"""

import pytest

from simulator.stacks import crossval


def _check(table):
    for row in table.itertuples():
        assert abs(row.ratio - 1.0) <= 0.20, (row.scenario, row.stack, row.loss, row.real_median_s,
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
