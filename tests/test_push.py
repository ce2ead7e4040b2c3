"""Server push vs 103 Early Hints: the page graph, the physics of each policy and the
protocol rules (RFC 9113 section 8.4, RFC 9114 section 4.6, RFC 8297), on the transport
models and on the real stacks."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from simulator.errors import InputError
from simulator.studies import push
from simulator.studies.base import run_seeds
from simulator.browser import page_graph
from simulator.browser.client import DEFAULT_PARSE_DELAY_S, parse_link
from simulator.traces.model import Exchange, Trace

ROOT = Path(__file__).resolve().parent.parent
_URGENCY = {"document": b"u=0, i", "stylesheet": b"u=0", "script": b"u=1", "image": b"u=4, i"}  # Chrome, RFC 9218
SITE = "https://www.site.example"


def _exchange(
    i, url, rtype, size, *, initiator=None, itype="parser", priority="VeryHigh", status=200, location=None, wait_ms=None
):
    origin = "/".join(url.split("/", 3)[:3])
    path = "/" + url.split("/", 3)[3] if url.count("/") >= 3 else "/"
    response = [(b":status", str(status).encode())]
    if location:
        response.append((b"location", location.encode()))
    request = (
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", origin.split("://")[1].encode()),
        (b":path", path.encode()),
        (b"priority", _URGENCY.get(rtype, b"u=3")),
    )
    return Exchange(
        index=i,
        request_headers=request,
        response_headers=tuple(response),
        response_body_bytes=size,
        start_s=i * 0.001,
        origin=origin,
        page="p1",
        priority=priority,
        resource_type=rtype,
        initiator=initiator,
        initiator_type=None if initiator is None else itype,
        url=url,
        timings={"wait": wait_ms} if wait_ms is not None else None,
    )


def small_page(*, css_origin=SITE, n_css=2, css_bytes=3000, doc_bytes=5000, wait_ms=50.0) -> Trace:
    """A document and ``n_css`` render-blocking stylesheets it references; by default all of
    it fits the initial congestion window (10 x 1460 B, RFC 6928), so round trips, not
    bandwidth, decide the times."""
    doc = f"{SITE}/"
    ex = [_exchange(0, doc, "document", doc_bytes, wait_ms=wait_ms)]
    for k in range(n_css):
        ex.append(_exchange(k + 1, f"{css_origin}/s{k}.css", "stylesheet", css_bytes, initiator=doc))
    return Trace(exchanges=ex, format="har", source="small-page.har")


BASE = dict(bandwidth_bps=None, loss="0", asset_think_s=0.0, coalesce="origin", policies=push.POLICIES)


def _run(trace, **kw):
    return push.run(trace, push.PushParams(**{**BASE, **kw}))


# -- the page graph --------------------------------------------------------------------


def test_graph_from_initiators_and_render_blocking():
    t = small_page()
    t.exchanges.append(_exchange(3, f"{SITE}/app.js", "script", 5000, initiator=f"{SITE}/s0.css", priority="Low"))
    t.exchanges.append(_exchange(4, f"{SITE}/async.js", "script", 5000, initiator=f"{SITE}/", priority="Low"))
    g = page_graph(t)
    assert g.edges_from == "initiators"
    assert [r.parent for r in g.resources] == [None, 0, 0, 1, 0]
    # Render-blocking: the document, its stylesheets and parser-blocking (High/VeryHigh) scripts only.
    assert g.render_blocking == [0, 1, 2]
    assert g.depth(3) == 2


def test_an_iframes_stylesheets_block_its_frame_not_the_page_and_get_no_103_preload():
    """HTML: a stylesheet blocks the rendering of its own document.  An iframe's stylesheet
    (found by the iframe's parser, VeryHigh for its frame) is not in the page's render-blocking
    set, so the 103 (RFC 8297) does not preload it: the page's hints serve the page's document
    (HTML's early hints go to the navigated document's preloads; Chromium keeps them in the
    top-level frame's cache partition, which a cross-site iframe's request does not read), and
    its origin gets no preconnect for it."""
    t = small_page(n_css=1)
    frame = "https://widget.example/frame.html"
    t.exchanges.append(_exchange(2, f"{SITE}/w.js", "script", 2000, initiator=f"{SITE}/", priority="High"))
    t.exchanges.append(_exchange(3, frame, "document", 2000, initiator=f"{SITE}/w.js", itype="script"))
    css = _exchange(4, "https://widget.example/w.css", "stylesheet", 3000, initiator=frame)
    t.exchanges.append(replace(css, render_blocking="blocking"))  # Chrome's _renderBlocking, for its frame
    g = page_graph(t)
    assert [r.parent for r in g.resources] == [None, 0, 0, 2, 3]
    assert g.render_blocking == [0, 1, 2]
    assert "frame" in g[4].render_blocking_reason
    assert g[4].blocks_own_document and g[1].blocks_own_document  # its frame's, and the page's
    from simulator.browser.server import early_hints

    links = b" ".join(early_hints(g, push.PushParams(**BASE)))
    assert b"w.css" not in links and b"widget.example" not in links and b"/s0.css>" in links


def test_graph_fallback_without_initiators_fonts_after_css():
    ex = [
        _exchange(0, f"{SITE}/", "document", 1000),
        _exchange(1, f"{SITE}/a.css", "stylesheet", 100),
        _exchange(2, f"{SITE}/f.woff2", "font", 100),
        _exchange(3, f"{SITE}/i.png", "image", 100),
    ]
    g = page_graph(Trace(exchanges=ex, format="har", source="x.har"))
    assert g.edges_from == "fallback"
    assert [r.parent for r in g.resources] == [None, 0, 1, 0]


def test_graph_follows_the_navigation_redirect_chain():
    ex = [
        _exchange(0, "https://site.example/", "document", 0, status=301, location=f"{SITE}/"),
        _exchange(1, f"{SITE}/", "document", 1000),
        _exchange(2, f"{SITE}/a.css", "stylesheet", 100, initiator=f"{SITE}/"),
    ]
    g = page_graph(Trace(exchanges=ex, format="har", source="r.har"))
    assert g.document == 1 and g[1].parent == 0 and g[2].parent == 1


def test_bad_pages_are_one_line_errors():
    no_doc = Trace(exchanges=[_exchange(0, f"{SITE}/a.css", "stylesheet", 10)], format="har", source="nodoc.har")
    with pytest.raises(InputError, match="nodoc.har: .*no document"):
        page_graph(no_doc)
    cyc = small_page(n_css=2)
    cyc.exchanges[1].initiator = f"{SITE}/s1.css"
    cyc.exchanges[2].initiator = f"{SITE}/s0.css"
    with pytest.raises(InputError, match="cycle: .*s0.css -> .*s1.css -> .*s0.css|cycle: .*s1.css -> .*s0.css"):
        page_graph(cyc)
    with pytest.raises(InputError, match="unknown policy 'pull'"):
        push.PushParams(policies=("pull",))
    with pytest.raises(InputError, match="push set"):
        push.PushParams(push_set="largest:x")
    with pytest.raises(InputError, match="cache"):
        push.PushParams(cache="lukewarm")


def test_cli_bad_input_exit_2_one_line(tmp_path):
    har = tmp_path / "nodoc.har"
    har.write_text(
        json.dumps(
            {
                "log": {
                    "version": "1.2",
                    "entries": [
                        {
                            "startedDateTime": "2024-01-01T00:00:00Z",
                            "time": 1,
                            "_resourceType": "script",
                            "request": {
                                "method": "GET",
                                "url": "https://a.example/x.js",
                                "httpVersion": "h2",
                                "headers": [],
                            },
                            "response": {
                                "status": 200,
                                "statusText": "",
                                "httpVersion": "h2",
                                "headers": [],
                                "content": {"size": 10},
                            },
                            "timings": {"send": 0, "wait": 1, "receive": 0},
                        }
                    ],
                }
            }
        )
    )
    for args in (["--trace", str(har)], ["--trace", str(ROOT / "traces/synthetic-page.har"), "--policy", "pull"]):
        proc = subprocess.run([sys.executable, "-m", "simulator.cli", "push", *args], capture_output=True, text=True)
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_parse_link_rfc8288():
    assert parse_link(b"</s.css>; rel=preload; as=style") == ("/s.css", {"preload"})
    assert parse_link(b'<https://cdn.example>; rel="preconnect dns-prefetch"') == (
        "https://cdn.example",
        {"preconnect", "dns-prefetch"},
    )
    assert parse_link(b"garbage") is None


# -- physics and protocol rules (transport models) -------------------------------------


def test_push_saves_about_one_rtt_for_same_origin_render_blocking_cold_cache():
    """RFC 9113 section 8.4: the pushed stylesheets ride the document's think time and
    arrive with it; without push they are requested one RTT after the document arrived.
    The page fits the initial window and the link is unlimited: the gain is one RTT exactly."""
    for think in (0.0, 0.2):
        r = _run(small_page(), think_s=think, rtt_s=0.1)
        s = r.summary
        gain = s.loc["push", "gain_render_blocking_s"]
        assert gain == pytest.approx(0.1, abs=1e-12), (think, gain)  # sums of float seconds: to rounding
        assert s.loc["push", "pushes_used"] == 2 and s.loc["push", "bytes_wasted"] == 0


def test_zero_think_warm_cache_push_gains_nothing_and_wastes_bytes():
    """RFC 9113 section 8.4.2: the client cancels pushes of what it has cached, but the
    cancel needs a one-way delay to reach the server, and the bytes sent until then
    are waste; the page gains nothing."""
    r = _run(small_page(css_bytes=30000), think_s=0.0, cache="warm", rtt_s=0.1)
    s = r.summary
    assert s.loc["push", "pushes_cancelled"] == 2 and s.loc["push", "pushes_used"] == 0
    assert s.loc["push", "bytes_wasted"] > 0
    assert s.loc["push", "gain_render_blocking_s"] <= 0.005
    assert s.loc["push", "gain_onload_s"] <= 0.005


@pytest.mark.parametrize("think_s", [0.02, 0.05, 0.3])
def test_hints_gain_min_of_think_time_and_one_rtt(think_s):
    """RFC 8297: the 103 leaves with the request's arrival; the preloads go out one RTT
    after the request, the document arrives think_s later, and without hints the browser
    parses it (``DEFAULT_PARSE_DELAY_S``: 5 ms for a document) before it asks for the
    stylesheets.  Gain = min(think + parse, RTT), exactly (the page fits the initial window)."""
    rtt = 0.1
    r = _run(small_page(), think_s=think_s, rtt_s=rtt)
    gain = r.summary.loc["hints", "gain_render_blocking_s"]
    parse_s = dict(DEFAULT_PARSE_DELAY_S)["document"]
    assert gain == pytest.approx(min(think_s + parse_s, rtt), abs=1e-12), gain  # float sums: to rounding
    assert r.summary.loc["hints", "bytes_pushed"] == 0


def test_hints_never_fetch_what_the_client_has():
    r = _run(small_page(), think_s=0.2, cache="warm", rtt_s=0.1)
    s = r.summary.loc["hints"]
    assert s["hinted_fetches"] == 0 and s["hints_skipped_cached"] == 2 and s["bytes_pushed"] == 0
    assert s["requests"] == 1


def test_gains_grow_with_rtt():
    gains = {}
    for rtt in (0.02, 0.1, 0.3):
        s = _run(small_page(), think_s=0.5, rtt_s=rtt).summary
        gains[rtt] = (s.loc["push", "gain_render_blocking_s"], s.loc["hints", "gain_render_blocking_s"])
    assert gains[0.02][0] < gains[0.1][0] < gains[0.3][0]
    assert gains[0.02][1] < gains[0.1][1] < gains[0.3][1]


def test_cross_origin_resource_is_hinted_with_preconnect_never_pushed():
    """RFC 9113 section 8.4: a server pushes only what it is authoritative for; a 103 can
    name any origin, and rel=preconnect opens the connection during the think time."""
    t = small_page(css_origin="https://cdn.other.example")
    r = _run(t, think_s=0.3, rtt_s=0.1)
    s = r.summary
    assert s.loc["push", "pushes_planned"] == 0
    assert s.loc["push", "gain_render_blocking_s"] == pytest.approx(0, abs=1e-9)
    assert s.loc["hints", "preconnects"] == 1 and s.loc["hints", "hinted_fetches"] == 2
    # The preconnect hides the cold connection (2 RTT with TLS) behind the think time.
    assert s.loc["hints", "gain_render_blocking_s"] > 0.25


def test_hints_cdn_never_hints_the_first_request():
    t = small_page()
    first = _run(t, think_s=0.3, rtt_s=0.1).summary
    seen = _run(t, think_s=0.3, rtt_s=0.1, edge_seen=True).summary
    assert first.loc["hints-cdn", "hints_sent"] == 0 and first.loc["hints-cdn", "gain_render_blocking_s"] == 0
    assert seen.loc["hints-cdn", "render_blocking_s"] == pytest.approx(seen.loc["hints", "render_blocking_s"])


def test_every_row_carries_parameters_and_seed():
    r = _run(small_page(), think_s=0.1, seed=5)
    assert set(r.resources["seed"]) == {5}
    assert r.params["seed"] == 5 and r.params["policies"]
    assert list(r.summary.index) == list(push.POLICIES)


def test_bundled_page_runs_on_both_protocols():
    from simulator.traces import load

    t = load(str(ROOT / "traces/synthetic-page.har"))
    for protocol in ("h2", "h3"):
        s = push.run(t, push.PushParams(protocol=protocol, loss="0.01")).summary
        assert (s["onload_s"] > s["render_blocking_s"]).all()
        assert s.loc["none", "pushes_promised"] == 0 and s.loc["push", "pushes_promised"] > 0


# -- the same scenario on the real stacks ---------------------------------------------


@pytest.mark.parametrize("protocol", ["h2", "h3"])
def test_models_and_real_stacks_agree_on_the_winner_and_the_gain(protocol):
    """The same page, policies and seed on the transport models and on the real h2 /
    aioquic stacks: the same policy wins, and each policy's render-blocking gain agrees
    within 20% of the RTT.  The page fits the initial window: beyond it aioquic paces its
    sends and the QUIC model does not, so the real baseline is slower by up to half an
    RTT (the model's known gap, see notebook 05)."""
    rtt = 0.1
    t = small_page(n_css=3, css_bytes=2000, doc_bytes=4000)
    params = push.PushParams(
        **{**BASE, "policies": ("none", "push", "hints")},
        think_s=0.05,
        rtt_s=rtt,
        protocol=protocol,
        tls=False,
        scheduler="round-robin" if protocol == "h3" else "fifo",
    )
    model = push.run(t, params).summary
    real = push.run(t, replace(params, backend="stacks")).summary
    assert model["render_blocking_s"].idxmin() == real["render_blocking_s"].idxmin() == "push"
    for policy in ("push", "hints"):
        # A model against a real stack (not a draw: both are deterministic): the margin is
        # the model's documented gap to the stacks, so it stays a tolerance.
        assert real.loc[policy, "gain_render_blocking_s"] == pytest.approx(
            model.loc[policy, "gain_render_blocking_s"], abs=0.2 * rtt
        ), policy
    assert real.loc["push", "pushes_used"] == 3 and real.loc["hints", "hinted_fetches"] == 3


# Bundled page (79 resources, 13 connections, 3.1 MB: bandwidth-bound at 10 Mbit/s).  h2: the
# model and the h2 stack run the same TCP model with the same bytes written at the same
# instants, so they agree to the packet (a 1 ms tolerance).  h3: aioquic and the QUIC model
# differ in their details (resends, QPACK blocking, pacing rounding); measured at RTT
# 50-100 ms and 5-50 Mbit/s the render-blocking gains differ by at most 0.4 s, below 10%
# of the page's baseline render-blocking time on the real stack: that is the tolerance.
# At 200 ms it holds at 50 Mbit/s, not at 5-10 Mbit/s (notebook 02 has the figures):
# - aioquic's handshake PTO (2 x its 100 ms initial RTT) fires before the ACKs at 200 ms
#   and declares the flight lost, so no RTT sample and no pacing until 1-RTT ACKs: each
#   server's first window leaves in one burst, the bursts queue the link (47 ms at 0.71 s
#   against 10 ms paced), and the document connection leaves slow start (aioquic's rising
#   RTT rule) at a 62 kB window instead of 281 kB.  The model does this now
#   (pto_declares_lost); it took push+hints from 1.71 s to 3.63 s (stack 3.88 s), cold,
#   10 Mbit/s.
# - QPACK: the stack's client waits up to 0.5-0.7 s for one header block (cold, push): the
#   encoder stream sits behind the request streams in aioquic's service order and
#   aioquic fills the window to the byte, so its bytes wait for the next ACK.  The model
#   has HPACK sizes and no dynamic-table wait (a model of it broke the 50-100 ms
#   agreement; see the git history).
# - What is left is the slow-start exit's knife edge (64 vs 80 kB on the document
#   connection set its rate for seconds) and whole rounds (0.2 s) on the warm page, where
#   the tolerance is 0.08 s.
H3_GAIN_TOLERANCE = 0.10  # x the real stack's render-blocking time under `none`
H2_TOLERANCE_S = 0.001
BUNDLED_POLICIES = ("none", "push", "hints", "push+hints")


def _bundled_both(protocol, cache, rtt_s=0.1, bandwidth_bps=10e6):
    from simulator.traces import load

    graph = page_graph(load(str(ROOT / "traces/synthetic-page.har")))
    params = push.PushParams(
        policies=BUNDLED_POLICIES,
        protocol=protocol,
        tls=False,
        cache=cache,
        rtt_s=rtt_s,
        bandwidth_bps=bandwidth_bps,
        scheduler="round-robin" if protocol == "h3" else "fifo",
    )
    return push.run(graph, params).summary, push.run(graph, replace(params, backend="stacks")).summary


def _near_best(summary, tolerance_s):
    times = summary["render_blocking_s"]
    return set(times[times <= times.min() + tolerance_s].index)


def _assert_agree(protocol, model, real):
    if protocol == "h2":
        tolerance = H2_TOLERANCE_S
        for col in ("document_s", "render_blocking_s", "onload_s"):
            assert (model[col] - real[col]).abs().max() <= tolerance, (col, model[col], real[col])
        assert (model["bytes_pushed"] == real["bytes_pushed"]).all()
    else:
        tolerance = H3_GAIN_TOLERANCE * real.loc["none", "render_blocking_s"]
    # The same winner, up to policies within the tolerance of the best (a tie either way).
    assert model["render_blocking_s"].idxmin() in _near_best(real, tolerance), (model, real)
    assert real["render_blocking_s"].idxmin() in _near_best(model, tolerance), (model, real)
    for policy in BUNDLED_POLICIES[1:]:
        assert real.loc[policy, "gain_render_blocking_s"] == pytest.approx(
            model.loc[policy, "gain_render_blocking_s"], abs=tolerance
        ), (policy, tolerance)


@pytest.mark.parametrize("protocol", ["h2", "h3"])
@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_models_and_real_stacks_agree_on_the_bundled_bandwidth_bound_page(protocol, cache):
    """The bundled page at 100 ms and 10 Mbit/s, where the bottleneck, its sharing between
    13 connections and the servers' send order decide (not round trips alone): the same
    policy wins on the models and on the real stacks, and every policy's render-blocking
    gain agrees within the stated tolerance (h2: 1 ms, the same TCP model and bytes; h3:
    10% of the baseline, measured).  Cold, push alone loses on h2 (RFC 9113 section 8.4: the
    pushes go first on the connection, the third-party scripts that end the render-blocking
    set wait) and push with hints wins; warm, pushes of cached resources are waste."""
    model, real = _bundled_both(protocol, cache)
    _assert_agree(protocol, model, real)
    if cache == "cold":
        assert real["render_blocking_s"].idxmin() == model["render_blocking_s"].idxmin() == "push+hints"
    if protocol == "h2" and cache == "warm":
        # The h2 stack hands every pushed byte to TCP before the cancel can arrive: all waste.
        assert real.loc["push", "bytes_wasted"] == real.loc["push", "bytes_pushed"] > 0
        assert real.loc["push", "gain_render_blocking_s"] < 0


@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_model_and_real_h2_stack_agree_over_tls_1_3(cache):
    """h2 over TLS 1.3 on both backends (RFC 8446 section 2: one more round trip; records of
    22 bytes more): the model's TLS flights and records are the real OpenSSL's sizes, so
    the two still agree within the h2 tolerance on the bundled page.  Skipped where the real
    h2 stack has no TLS."""
    from simulator.traces import load

    graph = page_graph(load(str(ROOT / "traces/synthetic-page.har")))
    params = push.PushParams(policies=BUNDLED_POLICIES, protocol="h2", tls=True, cache=cache, scheduler="fifo")
    try:
        real = push.run(graph, replace(params, backend="stacks")).summary
    except InputError as exc:
        pytest.skip(f"the real h2 stack here has no TLS: {exc}")
    model = push.run(graph, params).summary
    # 10 ms: on this page, since its coded bodies are read at their wire size (a third of
    # their decoded size), the pushed responses' TLS records interleave with the
    # render-blocking ones a little differently on the two stacks: 7 ms apart for "push"
    # (of 1.3 s), 0.2 ms or less for the other policies.
    for col in ("document_s", "render_blocking_s", "gain_render_blocking_s", "onload_s"):
        assert (model[col] - real[col]).abs().max() <= 0.010, (col, model[col], real[col])
    assert model["render_blocking_s"].idxmin() == real["render_blocking_s"].idxmin()


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["h2", "h3"])
def test_models_and_real_stacks_agree_over_rtt_and_bandwidth(protocol):
    """The agreement test over RTT 50-200 ms x 5, 10, 50 Mbit/s, cold and warm; for h3 at
    200 ms only at 50 Mbit/s (at 5-10 Mbit/s the gains differ by more than the tolerance:
    the measured reasons are above H3_GAIN_TOLERANCE).  200 ms / 50 Mbit/s warm holds only
    since the QUIC model, as aioquic, takes no RTT sample from a handshake its PTO resent
    (RFC 9002 5.1 / 6.2; test_rfc9002_5_1_6_2_...): the push gain there differed by 0.17 s."""
    grid = [(rtt_s, bw) for rtt_s in (0.05, 0.1, 0.2) for bw in (5e6, 10e6, 50e6)]
    if protocol == "h3":
        grid = [(rtt_s, bw) for rtt_s, bw in grid if rtt_s < 0.2 or bw == 50e6]
    for cache in ("cold", "warm"):
        for rtt_s, bandwidth_bps in grid:
            model, real = _bundled_both(protocol, cache, rtt_s, bandwidth_bps)
            _assert_agree(protocol, model, real)


def test_model_connections_pay_the_stacks_handshakes_rfc8446_2_rfc9001():
    """A cold connection of the model runs the transports' own handshakes, as the stacks do:
    cleartext h2 sends its request when TCP's SYN-ACK arrives and gets the document at 2 RTT;
    TLS 1.3 adds one round trip (RFC 8446 section 2: ClientHello, the server's flight, the
    client's Finished before application data), 3 RTT; QUIC carries TLS in its own first
    round trip (RFC 9001), 2 RTT plus the pacing of the response's tail (RFC 9002 section
    7.7: the handshake's RTT sample sets the rate; the real aioquic is at 2.2 RTT).  No think
    time, no bandwidth limit: round trips only."""
    rtt = 0.1
    times = {}
    for protocol, tls in (("h2", False), ("h2", True), ("h3", True)):
        s = _run(small_page(), think_s=0.0, rtt_s=rtt, protocol=protocol, tls=tls, policies=("none",)).summary
        times[(protocol, tls)] = s.loc["none", "document_s"]
    assert times[("h2", False)] == pytest.approx(2 * rtt, abs=0.005)
    assert times[("h2", True)] == pytest.approx(3 * rtt, abs=0.005)
    assert 2 * rtt < times[("h3", True)] < 2 * rtt + 0.3 * rtt
    real = _run(
        small_page(), think_s=0.0, rtt_s=rtt, protocol="h2", tls=False, policies=("none",), backend="stacks"
    ).summary
    assert real.loc["none", "document_s"] == pytest.approx(times[("h2", False)], abs=0.001)


def test_real_stacks_cancel_pushes_of_cached_resources():
    t = small_page(css_bytes=60000)
    params = push.PushParams(
        **{**BASE, "policies": ("none", "push")}, think_s=0.0, rtt_s=0.1, tls=False, cache="warm", backend="stacks"
    )
    for protocol in ("h2", "h3"):
        s = push.run(t, replace(params, protocol=protocol)).summary
        assert s.loc["push", "pushes_cancelled"] == 2 and s.loc["push", "pushes_used"] == 0, protocol
        assert s.loc["push", "bytes_wasted"] > 0


def test_batch_push_over_grid_and_seeds(tmp_path):
    """`workbench batch push`: every job's summary rows carry the grid values and the seed,
    and a rerun of the same command adds nothing."""
    from simulator import batch

    grid = tmp_path / "grid.toml"
    grid.write_text('policy = ["none,push,hints"]\nrtt = ["50ms", "200ms"]\n')
    page = ROOT / "traces" / "synthetic-page.har"
    out = tmp_path / "results"
    report = batch.run_batch("push", [str(page)], str(grid), 2, out=str(out), workers=0, progress=False)
    assert report.failed == 0
    df = batch.load(str(out))
    assert len(df) == 2 * 2 * 3
    assert set(df["seed"]) == {1, 2} and set(df["rtt_s"]) == {0.05, 0.2}
    assert set(df["policy"]) == {"none", "push", "hints"}
    none = df[df["policy"] == "none"]
    assert (none["gain_onload_s"] == 0).all() and (none["pushes_promised"] == 0).all()
    again = batch.run_batch("push", [str(page)], str(grid), 2, out=str(out), workers=0, progress=False)
    assert again.ran == 0 and len(batch.load(str(out))) == len(df)


# -- audit of issue 9: what the first tests did not pin down ----------------------------


def _cli(*args, hash_seed=None):
    import os

    env = dict(os.environ) if hash_seed is None else {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run(
        [sys.executable, "-m", "simulator.cli", "push", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )


def test_cli_cycle_in_initiators_and_unknown_policy_exit_2_one_line(tmp_path):
    """Bad input (issue 9): a cycle in the initiators, an unknown policy, a push list naming a
    cross-origin resource: one line naming the problem, exit 2, no traceback, nothing on stdout."""
    from simulator.traces.har import write_har

    cyc = small_page(n_css=2)
    cyc.exchanges[1].initiator = f"{SITE}/s1.css"
    cyc.exchanges[2].initiator = f"{SITE}/s0.css"
    har = tmp_path / "cycle.har"
    write_har(cyc, str(har))
    cross = tmp_path / "cross.har"
    write_har(small_page(css_origin="https://cdn.other.example"), str(cross))
    cases = [
        (["--trace", str(har)], "cycle"),
        (["--trace", str(ROOT / "traces/synthetic-page.har"), "--policy", "none,pull"], "unknown policy 'pull'"),
        (["--trace", str(cross), "--push-set", "list:https://cdn.other.example/s0.css"], "not authoritative"),
        (["--trace", str(har), "--parse-delay", "script"], "parse delay"),
    ]
    for args, fragment in cases:
        proc = _cli(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and fragment in proc.stderr, proc.stderr
        assert proc.stdout == ""


def test_cli_seeds_reports_the_median_over_seeds_per_policy():
    """``--seeds N``: every figure of the table is the median over seeds SEED..SEED+N-1 of the
    per-seed figures (run_seeds), and the JSON says so."""
    import statistics

    page = str(ROOT / "traces/synthetic-page.har")
    proc = _cli(
        "--trace", page, "--policy", "none,push,hints", "--loss", "0.02", "--seed", "4", "--seeds", "3", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["params"]["seeds"] == 3 and out["params"]["aggregate"] == "median over seeds"
    from simulator.traces import load

    per_seed = run_seeds(
        push.run, load(page), push.PushParams(policies=("none", "push", "hints"), loss="0.02"), [4, 5, 6]
    )
    assert per_seed["render_blocking_s"].nunique() > 3  # the seeds really differ under loss
    for policy in ("none", "push", "hints"):
        rows = per_seed[per_seed["policy"] == policy]
        for col in ("render_blocking_s", "onload_s", "bytes_pushed", "gain_render_blocking_s"):
            assert out["policies"][policy][col] == pytest.approx(statistics.median(rows[col])), (policy, col)
    text = _cli("--trace", page, "--policy", "none,push", "--seeds", "2")
    assert text.returncode == 0 and "median of 2 seeds" in text.stdout


@pytest.mark.parametrize("backend", ["model", "stacks"])
def test_rfc9113_8_4_1_push_promise_arrives_before_the_referencing_document(backend):
    """RFC 9113 section 8.4.1 / RFC 9114 section 4.6: the server sends PUSH_PROMISE before
    any frame of the response that references the pushed resource, so the client knows of
    every promise no later than the document."""
    for protocol in ("h2", "h3"):
        r = _run(
            small_page(),
            think_s=0.05,
            rtt_s=0.1,
            tls=False,
            protocol=protocol,
            backend=backend,
            policies=("none", "push"),
        )
        res, pushes = r.resources, r.pushes
        document_s = float(res[(res.policy == "push") & (res["resource_type"] == "document")]["arrived_s"].iloc[0])
        promised = pushes[pushes.policy == "push"]["promised_s"]
        assert len(promised) == 2 and (promised <= document_s).all(), (protocol, list(promised), document_s)
        # The promise rides the server's first flight: one RTT after the request, which leaves
        # after the cold connection's handshake (one RTT: TCP without TLS, or QUIC); the
        # model and the real stacks alike, in virtual time, to the last bit.
        assert (promised == 2 * 0.1).all(), (protocol, list(promised))
        assert document_s >= 0.2 + 0.05  # the document waited the think time


def test_rfc9113_8_4_2_cancel_takes_effect_a_round_trip_later_waste_is_bounded():
    """A cancelled push is waste for what the server sent before the RST_STREAM reached it:
    at least one round trip of slow start (not zero: the cancel is not instant) and far
    less than the whole pushed bodies (the cancel does stop the stream)."""
    css_bytes = 200_000
    r = _run(
        small_page(css_bytes=css_bytes),
        think_s=0.0,
        cache="warm",
        rtt_s=0.1,
        bandwidth_bps=50e6,
        policies=("none", "push"),
    )
    s = r.summary.loc["push"]
    assert s["pushes_cancelled"] == 2 and s["pushes_used"] == 0
    initial_window = 10 * 1460  # RFC 6928
    assert 0.5 * initial_window <= s["bytes_wasted"] <= 4 * initial_window, s["bytes_wasted"]
    assert s["bytes_wasted"] < 0.2 * 2 * css_bytes


def test_explicit_cached_set_and_push_list():
    """The browser cache as an explicit set of URLs, and the push policy as a list: the
    cached stylesheet's push is cancelled and its hint skipped; the other is pushed and used."""
    cached = f"{SITE}/s0.css"
    r = _run(small_page(), think_s=0.2, rtt_s=0.1, cache=f"list:{cached}")
    s = r.summary
    assert r.trace["cached"] == 1
    assert s.loc["push", "pushes_cancelled"] == 1 and s.loc["push", "pushes_used"] == 1
    assert s.loc["hints", "hints_skipped_cached"] == 1 and s.loc["hints", "hinted_fetches"] == 1
    res = r.resources
    assert set(res[(res.policy == "none") & (res.url == cached)]["source"]) == {"cache"}
    only = _run(small_page(), think_s=0.2, rtt_s=0.1, push_set=f"list:{SITE}/s1.css", policies=("none", "push"))
    pushed = only.pushes[only.pushes.policy == "push"]
    assert list(pushed["url"]) == [f"{SITE}/s1.css"] and bool(pushed["used"].iloc[0])
    with pytest.raises(InputError, match="not a sub-resource"):
        _run(small_page(), cache=f"list:{SITE}/nope.css")
    with pytest.raises(InputError, match="not a resource of the page"):
        _run(small_page(), push_set=f"list:{SITE}/nope.css")


def test_parse_delay_per_type_delays_discovery_of_children():
    """A resource is discovered its parent's parse delay after the parent is ready: with a
    document parse delay of 300 ms the stylesheets are requested 300 ms later than with 0."""
    t = small_page()
    fast = _run(t, think_s=0.0, rtt_s=0.1, policies=("none",), parse_delay="document=0ms")
    slow = _run(t, think_s=0.0, rtt_s=0.1, policies=("none",), parse_delay="document=300ms")
    for r in (fast, slow):
        res = r.resources
        assert (
            res[res.resource_type == "stylesheet"]["discovered_s"]
            == res[res.resource_type == "document"]["ready_s"].iloc[0] + (0.3 if r is slow else 0.0)
        ).all()
    assert slow.summary.loc["none", "render_blocking_s"] - fast.summary.loc[
        "none", "render_blocking_s"
    ] == pytest.approx(0.3, abs=1e-6)
    assert slow.params["parse_delay"] == "document=300ms"


@pytest.mark.parametrize("rtt_s", [0.05, 0.2])
def test_rfc9002_5_1_6_2_no_handshake_rtt_sample_after_a_pto_as_aioquic(rtt_s):
    """RFC 9002 section 6.2 says a probe timeout must not declare packets lost, so the
    acknowledgement of a handshake datagram that was also resent still gives an RTT sample
    (section 5.1).  aioquic declares what its PTO resends lost: above twice its 100 ms
    initial RTT the handshake ACKs arrive after the PTO and find nothing to sample, so
    its server has no RTT sample when the handshake completes and its first window leaves
    unpaced (the cause of the larger HTTP/3 gap at 200 ms, notebook 02).  The QUIC model
    with ``pto_declares_lost`` (as the page-load model runs it) does the same as the real
    aioquic server; without it, it samples the handshake as the RFC says."""
    from simulator.engine import Simulator
    from simulator.net.link import Path
    from simulator.net.quic import QuicConnection
    from simulator.net.transport import TransportConfig
    from simulator.stacks.common import Recorder, StackParams
    from simulator.stacks.h3 import H3Session

    def model_server(pto_declares_lost):
        sim = Simulator(seed=1)
        conn = QuicConnection(
            sim,
            Path(sim, rtt_s=rtt_s, bandwidth_bps=10e6),
            TransportConfig(initial_rtt_s=0.1),
            handshake=True,
            ack_delay_s=0.001,
            pto_declares_lost=pto_declares_lost,
        )
        sim.run(until_s=2 * rtt_s)  # the handshake is done at 1.5 RTT and a bit
        assert conn.server.ready
        return conn.server

    sim = Simulator(seed=1)
    session = H3Session(
        sim,
        Path(sim, rtt_s=rtt_s, bandwidth_bps=10e6),
        StackParams(stack="h3", rtt_s=rtt_s),
        Recorder(sim),
        "https://a.example",
    )
    sim.run(until_s=2 * rtt_s)
    real = session.server.quic._loss
    assert session.server.handshake_done_s is not None
    pto_first = rtt_s >= 2 * 0.1  # aioquic's PTO before any sample: 2 x initial RTT
    assert real._rtt_initialized is not pto_first
    aioquic_like, rfc = model_server(True), model_server(False)
    assert (aioquic_like.rtt.srtt_s is None) is pto_first
    assert rfc.rtt.srtt_s == pytest.approx(rtt_s, abs=0.01)
    if not pto_first:
        assert aioquic_like.rtt.srtt_s == pytest.approx(real._rtt_smoothed, abs=0.005)
    # Without a sample the pacer has no rate: nothing is paced (RFC 9002 7.7 needs an RTT).
    assert (aioquic_like.pacer.interval_s is None) == pto_first
    assert (real._pacer.packet_time is None) == pto_first


def test_header_block_sizer_matches_hpack():
    """The model's header block sizes are those of the real ``hpack`` encoder, block after
    block on one connection: full and name matches in the static and dynamic tables,
    never-indexed fields, string (not bytes) fields, and entries large enough to evict
    others or empty the table."""
    import random

    import hpack

    from simulator.stacks.replay import request_headers_for, response_headers_for
    from simulator.http.header_sizes import HeaderBlockSizer, h2_normalized as _normalized
    from simulator.traces import load

    lists = []
    for path in sorted((ROOT / "traces").glob("*.har")):
        for e in load(path).exchanges:
            if e.request_headers is not None:
                lists.append(request_headers_for(e.request_headers, e.origin))
            lists.append(response_headers_for(e.response_headers or ((b":status", b"200"),), 100)[0])
    rng = random.Random(7)
    for _ in range(8):
        encoder, sizer = hpack.Encoder(), HeaderBlockSizer()
        for headers in rng.sample(lists, min(300, len(lists))):
            if rng.random() < 0.5:
                headers = _normalized(tuple(headers))  # h2's NeverIndexedHeaderTuple for short cookies
            if rng.random() < 0.1:
                headers = list(headers) + [
                    (b"x-big", b"v" * rng.randrange(1000, 5000)),
                    (b"authorization", b"secret", True),
                    ("x-text", "value"),
                ]
            assert sizer.encoded_size(headers) == len(encoder.encode(list(headers)))


def test_header_block_sizes_looked_up_by_history_are_hpacks():
    """``block_size`` looks a block up by the encoder's history (the lists encoded before it
    on the connection): on connections that repeat, share a prefix with, or leave an earlier
    connection's history, and mix in a block sized directly, every size is still the real
    ``hpack`` encoder's (RFC 7541: the dynamic table, hence the size, follows the history)."""
    import random

    import hpack

    from simulator.stacks.replay import request_headers_for, response_headers_for
    from simulator.http.header_sizes import HeaderBlockSizer, h2_normalized as _normalized
    from simulator.traces import load

    lists = [
        tuple(request_headers_for(e.request_headers, e.origin))
        for e in load(ROOT / "traces" / "synthetic-many-origins.har").exchanges
        if e.request_headers is not None
    ]
    lists += [tuple(response_headers_for(((b":status", b"200"), (b"x-big", b"v" * 3000)), 100)[0])]
    rng = random.Random(3)
    base = rng.sample(lists, 40)
    hits = 0
    for trial in range(12):
        sequence = list(base)
        if trial % 3 == 1:  # the same start, then other lists
            sequence[rng.randrange(5, 40) :] = rng.sample(lists, 20)
        encoder, sizer = hpack.Encoder(), HeaderBlockSizer()
        for i, headers in enumerate(sequence):
            normalized = _normalized(headers)
            if trial % 3 == 2 and i == 20:  # sized directly: the history is no longer kept
                size = sizer.encoded_size(normalized)
            else:
                before = len(sizer._unapplied)
                # h2_block_size: the same block, h2's normalisation done in the loop
                size = sizer.h2_block_size(headers) if (trial + i) % 2 else sizer.block_size(headers, normalized)
                hits += len(sizer._unapplied) > before
            assert size == len(encoder.encode(list(normalized))), (trial, i)
    assert hits > 100  # the lookups were used, not just computed


def test_a_slow_load_runs_to_its_end_and_a_stall_is_one_line(capsys):
    """The deadline that tells a stall from a slow load comes from the page and the link
    (several times its bytes over the bandwidth, a round trip per resource, its server and
    discovery times): the synthetic page at 50 kbit/s takes longer than the fixed 300 s that
    used to be called a stall, and ends (onload at least its bytes over the bandwidth); a
    load that cannot end (90% loss) is refused in one line that says how the limit was set."""
    from simulator.cli import main
    from simulator.browser import ClientCache, load_page
    from simulator.traces import load

    trace = ROOT / "traces" / "synthetic-page.har"
    graph = page_graph(load(str(trace)))
    params = replace(push.PushParams(), bandwidth_bps=50e3)
    result = load_page(graph, params.load_params(), push.server_plan(graph, "none", params), ClientCache())
    body_bytes = sum(r.body_bytes for r in graph.resources)
    assert result.metrics["onload_s"] > 300 and result.metrics["onload_s"] >= body_bytes * 8 / 50e3
    assert main(["push", "--trace", str(trace), "--loss", "0.9", "--policy", "none"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "page load stalled" in err and "Mbit/s" in err and "--loss" in err
