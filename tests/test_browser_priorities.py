"""Browser priority profiles (``simulator.browser.priorities``) against what a real
Chromium sent: the wire ``priority`` fields (RFC 9218 section 5) and DevTools' ``_priority``
of ``traces/captured-h2-page.har``."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.errors import InputError
from simulator.browser.priorities import CHROMIUM_DEVTOOLS_URGENCY, browser_signals, chromium_weight, trace_priority
from simulator.http.priority import CHAIN
from simulator.traces import load
from simulator.traces.pagegraph import page_graph

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def captured():
    return page_graph(load(str(ROOT / "traces" / "captured-h2-page.har")))


def test_rfc9218_s5_chromium_profile_matches_the_captured_priority_fields(captured):
    signals = dict(browser_signals(captured, "chromium", "h3")[0])
    checked = 0
    for r in captured.resources:
        wire = trace_priority(r)
        if wire is None:
            continue
        checked += 1
        assert (signals[r.index].urgency, signals[r.index].incremental) == wire, r.url
    assert checked >= 14  # every request whose wire fields the HAR kept


def test_chromium_profile_matches_devtools_priority_where_no_field_was_recorded(captured):
    """Requests started by 103 preloads have no wire fields in the HAR; Chromium omits the
    field when it says u=3 without i (RFC 9218 section 4: the defaults): DevTools' names
    then give the urgency (images aside: DevTools shows their priority after the layout boost)."""
    signals = dict(browser_signals(captured, "chromium", "h3")[0])
    for r in captured.resources:
        if r.resource_type == "image" or not r.priority:
            continue
        assert signals[r.index].urgency == CHROMIUM_DEVTOOLS_URGENCY[r.priority], r.url


def test_rfc7540_s5_3_chromium_h2_tree_is_an_exclusive_chain():
    assert [chromium_weight(u) for u in range(8)] == [256, 219, 183, 146, 110, 73, 37, 1]


def test_rfc7540_s5_3_chromium_h2_signals_carry_the_chain(captured):
    for _, s in browser_signals(captured, "chromium", "h2")[0]:
        assert s.parent == CHAIN and s.exclusive and s.weight == chromium_weight(s.urgency)


def test_rfc9218_s7_lcp_image_is_reprioritized(captured):
    _, updates = browser_signals(captured, "chromium", "h3")
    assert len(updates) == 1 and updates[0][1].urgency == 1
    _, updates = browser_signals(captured, "firefox", "h3")
    assert updates[0][1].urgency == 3
    assert browser_signals(captured, "chromium", "h3", reprioritize=False)[1] == ()


def test_rfc9218_s5_malformed_priority_field_in_a_trace_is_bad_input(captured):
    from dataclasses import replace

    r = captured.resources[1]
    bad = replace(r, request_headers=tuple(r.request_headers) + ((b"priority", b"u=9"),))
    graph = replace(captured, resources=[bad if x.index == r.index else x for x in captured.resources])
    with pytest.raises(InputError, match="malformed Priority field"):
        browser_signals(graph, "chromium", "h2")
    with pytest.raises(InputError, match="choose from chromium, firefox, safari, trace"):
        browser_signals(captured, "opera", "h2")
