"""The schedulers on the real h2 stack against the model (``http.priority_stacks``,
``studies.priorities.real``): the same page and scheduler give the same order of DATA
frames (runs of one response collapsed) without loss; the real server applies a real
PRIORITY_UPDATE frame (RFC 9218 section 7.1); ``workbench priorities --backend stacks``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from simulator.browser import page_graph
from simulator.browser.priorities import lcp_candidate
from simulator.cli import main
from simulator.errors import InputError
from simulator.http.priority import PrioritySignal
from simulator.http.priority_stacks import (PRIORITY_UPDATE_FRAME, ScheduledH2Server, model_body_before,
                                            priority_update_payload)
from simulator.http.priority_signals import parse_priority_field
from simulator.studies.priorities import PrioritiesParams
from simulator.studies.priorities.real import (collapse, compare_orders, completion_order, data_orders,
                                               edit_similarity)
from simulator.studies.priorities.study import load_with
from simulator.traces import load

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "traces" / "synthetic-page.har")


@pytest.fixture(scope="module")
def small_page():
    """15 resources of the bundled page (its document, ten scripts and stylesheets, four
    images) on one origin: one connection, so the order is one server's."""
    g = page_graph(load(PAGE))
    doc = g[g.document].origin
    site = [r.index for r in g.resources if r.origin in (doc, "https://static.news-site.example")]
    keep = [i for i in site if g[i].resource_type != "image"][:10]
    keep += [i for i in site if g[i].resource_type == "image"][:4]
    s = g.subgraph(keep)
    return replace(s, resources=[replace(r, origin=doc) for r in s.resources])


def test_rfc9113_s4_1_model_body_share_counts_a_frame_header_per_16_kib():
    # HEADERS of 100 bytes, then DATA frames of 16,384 bytes each after a 9-byte header.
    assert model_body_before(100, 100, 50_000) == 0
    assert model_body_before(100 + 9 + 1000, 100, 50_000) == 1000
    assert model_body_before(100 + 9 + 16_384 + 9 + 10, 100, 50_000) == 16_394
    assert model_body_before(10**6, 100, 50_000) == 50_000


def test_rfc9218_s7_1_priority_update_payload_carries_stream_and_field():
    payload = priority_update_payload(21, PrioritySignal(urgency=1, incremental=True))
    assert payload[:4] == (21).to_bytes(4, "big")              # reserved bit clear, 31-bit stream id
    assert parse_priority_field(payload[4:]) == (1, True)
    assert PRIORITY_UPDATE_FRAME == 0x10


@pytest.mark.parametrize("scheduler", ["rfc9218", "fifo", "rr", "tree"])
def test_rfc9218_s4_and_rfc9113_s5_3_real_h2_sends_data_in_the_models_order(small_page, scheduler):
    """Without loss the real h2 server with the scheduler switches between responses in the
    model's order: the resources of its DATA frames, runs collapsed, equal the model's chunks'
    (Chromium's signals: RFC 9218 urgency and incremental, its exclusive-chain tree, RFC 7540
    section 5.3; cleartext h2, no PRIORITY_UPDATE: see docs/studies/priorities.md)."""
    params = PrioritiesParams(schedulers=(scheduler,), browsers=("chromium",), tls=False, reprioritize=False)
    orders = data_orders(small_page, params, "chromium", scheduler)
    (conn,) = orders.values()
    assert conn["real"], "the real server wrote DATA frames"
    assert collapse(conn["real"]) == collapse(conn["model"])
    assert compare_orders(orders)["identical"]


def test_scheduler_is_at_work_on_the_real_server(small_page):
    """The real server's order is the scheduler's, not the order responses became ready:
    fifo sends each response whole (one run per response), rr interleaves them a chunk per
    turn (many more runs than responses)."""
    runs = {}
    for scheduler in ("fifo", "rr"):
        params = PrioritiesParams(schedulers=(scheduler,), browsers=("chromium",), tls=False, reprioritize=False)
        (conn,) = data_orders(small_page, params, "chromium", scheduler).values()
        runs[scheduler] = (len(collapse(conn["real"])), len(set(conn["real"])))
    assert runs["fifo"][0] == runs["fifo"][1]
    assert runs["rr"][0] > 3 * runs["rr"][1]


def test_rfc9218_s7_1_real_priority_update_reaches_the_scheduler(small_page):
    """The client's PRIORITY_UPDATE for the LCP image (Chromium raises it to urgency 1) crosses
    the real connection and changes the image's signals in the server's scheduler."""
    params = PrioritiesParams(schedulers=("rfc9218",), browsers=("chromium",), backend="stacks")
    nets = []
    load_with(small_page, params, "chromium", "rfc9218", on_network=nets.append)
    (session,) = nets[0].sessions.values()
    server = session.server
    assert isinstance(server, ScheduledH2Server)
    assert session.client.frames_sent["PRIORITY_UPDATE"] == 1     # the frame went over the wire, once
    lcp = lcp_candidate(small_page)
    (sid,) = [sid for sid, (spec, _) in session.client_rows.items() if spec is not None and spec.index == lcp]
    assert server._signals[sid].urgency == 1


def test_with_loss_the_order_stays_close(small_page):
    """With 1% loss the two runs lose different packets once their bytes differ (the real
    chunk has a frame header more); reported as the share of equal places and Kendall's tau
    of the completion order (docs/studies/priorities.md), held only to what is stable here."""
    params = PrioritiesParams(schedulers=("rr",), browsers=("firefox",), loss="0.01", seed=2, reprioritize=False)
    c = compare_orders(data_orders(small_page, params, "firefox", "rr"))
    assert 0.0 <= c["same_position_share"] <= c["edit_similarity"] <= 1.0
    assert c["completion_tau"] > 0.5


def test_completion_order_is_by_last_frame():
    assert completion_order([1, 2, 1, 3, 2]) == [1, 3, 2]
    assert edit_similarity([1, 2, 3, 4], [2, 1, 3, 4]) == 0.5 and edit_similarity([], []) == 1.0
    assert collapse([1, 1, 2, 2, 1]) == [1, 2, 1]


def test_backend_stacks_cli_rows_and_bad_backend(capsys):
    args = ["priorities", "--trace", PAGE, "--scheduler", "rfc9218,rr", "--browser", "chromium", "--backend", "stacks",
            "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["scheduler"] for r in out["schedulers"]] == ["rfc9218", "rr"]
    assert out["params"]["backend"] == "stacks"
    for r in out["schedulers"]:
        assert r["render_blocking_done_s"] <= r["lcp_estimate_s"] <= r["onload_s"]
    with pytest.raises(InputError, match="backend"):
        PrioritiesParams(backend="lab")
    assert main(["priorities", "--trace", PAGE, "--backend", "lab"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
