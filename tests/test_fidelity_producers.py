"""``workbench fidelity`` reads what each HAR producer says about the real load.

Server push (RFC 9113 section 8.4): a response the producer marks pushed (WebPageTest's and
chrome-har's ``_was_pushed``; Firefox's status-0 entry with empty timings) is pushed on the
navigation in the simulation too, not asked for once discovered, and its timings (no request
was sent) give no RTT or server time.  WebPageTest's timings: ``connect`` holds ``ssl`` (HAR
1.2), ``_connect_ms`` is the TCP handshake alone (one round trip, RFC 9293 section 3.5), and
``startedDateTime`` is ``_load_start``, with the set-up phases before it.  The HARs are written
here, small, the way the producers write them."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from simulator.studies.fidelity import FidelityParams, infer_conditions, load_event_graph, simulate_page
from simulator.traces import load
from simulator.traces.har import har_dict, parse_har
from simulator.traces.pagegraph import page_graph

T0 = datetime(2024, 6, 1, 10, 0, 0, tzinfo=timezone.utc)
DOC = "https://www.site.example/"
CSS = "https://www.site.example/main.css"
REAL = Path(__file__).resolve().parents[2] / "shared" / "traces" / "har-real"


def _entry(url, start_ms, timings, *, size=1000, mime="text/html", status=200, extra=None):
    e = {
        "pageref": "p",
        "startedDateTime": (T0 + timedelta(milliseconds=start_ms)).isoformat(),
        "request": {"method": "GET", "url": url, "httpVersion": "h2", "headers": [], "bodySize": 0},
        "response": {
            "status": status,
            "httpVersion": "h2" if status else "",
            "headers": [{"name": "content-type", "value": mime}] if status else [],
            "content": {"size": size, "mimeType": mime},
            "bodySize": size,
        },
        "timings": timings,
    }
    e.update(extra or {})
    return e


def _har(entries, on_load_ms, creator="WebPagetest"):
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": creator, "version": "1"},
            "pages": [
                {"id": "p", "startedDateTime": T0.isoformat(), "title": DOC, "pageTimings": {"onLoad": on_load_ms}}
            ],
            "entries": entries,
        }
    }


def _fresh(rtt_ms, server_ms, receive_ms=2):
    """Timings of an exchange on a fresh TLS connection (HAR 1.2: ssl inside connect)."""
    return {
        "blocked": 0,
        "dns": 0,
        "connect": 2 * rtt_ms,
        "ssl": rtt_ms,
        "send": 0,
        "wait": rtt_ms + server_ms,
        "receive": receive_ms,
    }


def _pushed_page(style: str, rtt_ms: float = 60.0) -> dict:
    """A document that came with a pushed stylesheet, and two images it asked for."""
    doc_end = 2 * rtt_ms + rtt_ms + 20 + 2
    entries = [_entry(DOC, 0, _fresh(rtt_ms, 20), size=3000)]
    if style == "wpt":
        # WebPageTest (and chrome-har): the entry as the browser claimed it from its push
        # cache, with a wait and receive of a fraction of a millisecond.
        entries.append(
            _entry(
                CSS,
                doc_end + 1,
                {"blocked": 0.5, "dns": -1, "connect": -1, "ssl": -1, "send": 0.1, "wait": 0.05, "receive": 0.8},
                size=30_000,
                mime="text/css",
                extra={"_was_pushed": "1"},
            )
        )
    else:
        # Firefox: status 0 and empty timings, written after everything else.
        entries.append(
            _entry(
                CSS,
                doc_end + 400,
                {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 0, "receive": 0},
                size=30_000,
                mime="text/css",
                status=0,
            )
        )
    for k in range(2):
        entries.append(
            _entry(
                f"https://www.site.example/img{k}.png",
                doc_end + 5,
                {"blocked": 0, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": rtt_ms + 10, "receive": 5},
                size=4000,
                mime="image/png",
            )
        )
    on_load = doc_end + 5 + rtt_ms + 10 + 5 + 10
    return _har(entries, on_load, creator="Firefox" if style == "firefox" else "WebPagetest")


@pytest.mark.parametrize("style", ["wpt", "firefox"])
def test_a_pushed_response_is_pushed_in_the_simulation_rfc9113_8_4(style):
    """The stylesheet the server pushed with the document comes from the push cache in the
    simulation (RFC 9113 section 8.4: a pushed response answers a request the browser did not
    send), is never asked for, and the load ends sooner than when it is fetched after discovery."""
    trace = parse_har(_pushed_page(style), path=f"{style}.har")
    assert [e.url for e in trace.exchanges if e.pushed] == [CSS]
    page = trace.pages[0]
    graph = load_event_graph(page_graph(trace, page.id), page.on_load_s, page.start_s)
    cond = infer_conditions(graph, page.start_s)
    css = graph.by_url()[CSS]
    assert cond.pushes == (css,)
    pushed = simulate_page(graph, cond, FidelityParams())
    row = pushed.resources.set_index("index").loc[css]
    assert row["source"] == "push" and math.isnan(row["requested_s"])
    assert pushed.metrics["pushes_used"] == 1 and pushed.metrics["requests"] == len(graph) - 1
    fetched = simulate_page(graph, replace(cond, pushes=()), FidelityParams())
    assert fetched.resources.set_index("index").loc[css, "source"] == "network"
    assert pushed.metrics["onload_s"] < fetched.metrics["onload_s"]


@pytest.mark.parametrize("style", ["wpt", "firefox"])
def test_a_pushed_response_gives_no_rtt_server_time_or_bandwidth(style):
    """A push had no request: its sub-millisecond wait is no round trip (RFC 9293 section 3.5:
    the handshake's is 60 ms here), its receive from the push cache no transfer rate."""
    trace = parse_har(_pushed_page(style, rtt_ms=60.0), path=f"{style}.har")
    page = trace.pages[0]
    graph = load_event_graph(page_graph(trace, page.id), page.on_load_s, page.start_s)
    cond = infer_conditions(graph, page.start_s)
    css = graph.by_url()[CSS]
    assert cond.rtt_s == pytest.approx(0.060)
    assert css not in cond.think_s
    assert cond.bandwidth_bps is None  # the only large body is the pushed one


def test_firefox_status_0_is_a_push_only_when_nothing_else_asks_for_the_url():
    """A status-0 entry of a URL that another entry asks for again is an aborted request, not a
    push; status 0 in a Chrome HAR (a blocked request) is not a push either."""
    har = _pushed_page("firefox")
    har["log"]["entries"].append(_entry(CSS, 900, _fresh(60, 5), size=30_000, mime="text/css"))
    assert not any(e.pushed for e in parse_har(har, path="ff.har").exchanges)
    chrome = _pushed_page("firefox")
    chrome["log"]["creator"]["name"] = "chrome-har"
    assert not any(e.pushed for e in parse_har(chrome, path="chrome.har").exchanges)


def test_pushed_survives_write_har_as_was_pushed():
    trace = parse_har(_pushed_page("firefox"), path="ff.har")
    doc = har_dict(trace)
    again = parse_har(doc, path="again.har")
    assert [e.url for e in again.exchanges if e.pushed] == [CSS]


def _wpt_page(css_timings: dict, css_extra: dict) -> dict:
    entries = [
        _entry(DOC, 0, _fresh(80, 20), size=3000),
        _entry("https://cdn.site.example/a.css", 300, css_timings, size=2000, mime="text/css", extra=css_extra),
    ]
    return _har(entries, 700)


def test_wpt_connect_holding_ssl_gives_the_tcp_round_trip_rfc9293_3_5():
    """WebPageTest writes ``connect`` = ``_connect_ms`` + ``_ssl_ms`` (HAR 1.2: ssl inside
    connect): the TCP handshake, one round trip (RFC 9293 section 3.5), is ``_connect_ms``."""
    timings = {"blocked": -1, "dns": 12, "connect": 30 + 45, "ssl": 45, "send": 0, "wait": 40, "receive": 3}
    extra = {"_dns_ms": 12, "_connect_ms": 30, "_ssl_ms": "45", "_load_start": "300"}
    trace = parse_har(_wpt_page(timings, extra), path="wpt.har")
    graph = page_graph(trace, "p")
    cond = infer_conditions(graph, trace.pages[0].start_s)
    rtt = dict((o, r) for o, r, _, _ in cond.origins)
    assert rtt["https://cdn.site.example"] == pytest.approx(0.030)
    assert cond.rtt_from["https://cdn.site.example"] == "connect"


def test_wpt_fields_fill_the_phases_the_timings_lack():
    """An entry whose ``timings`` lack connect and ssl (-1) but whose ``_connect_ms`` and
    ``_ssl_ms`` say them: ``connect`` is their sum (HAR 1.2), the RTT the TCP handshake."""
    timings = {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 40, "receive": 3}
    extra = {"_connect_ms": "30", "_ssl_ms": "45", "_dns_ms": "-1"}
    trace = parse_har(_wpt_page(timings, extra), path="wpt.har")
    css = trace.exchanges[1].timings
    assert (css["connect"], css["ssl"], css["dns"]) == (75, 45, -1)
    cond = infer_conditions(page_graph(trace, "p"), trace.pages[0].start_s)
    assert dict((o, r) for o, r, _, _ in cond.origins)["https://cdn.site.example"] == pytest.approx(0.030)


def test_connect_written_apart_from_ssl_is_the_tcp_handshake():
    """A producer that writes ``connect`` apart from ``ssl`` (shorter than it: under HAR 1.2
    ``connect`` holds ``ssl`` and cannot be) gives ``connect`` itself as the TCP round trip."""
    timings = {"blocked": -1, "dns": -1, "connect": 30, "ssl": 45, "send": 0, "wait": 40, "receive": 3}
    trace = parse_har(_wpt_page(timings, {}), path="apart.har")
    cond = infer_conditions(page_graph(trace, "p"), trace.pages[0].start_s)
    assert dict((o, r) for o, r, _, _ in cond.origins)["https://cdn.site.example"] == pytest.approx(0.030)


def test_wpt_set_up_before_started_date_time():
    """WebPageTest's ``startedDateTime`` is ``_load_start`` (the request sent), its ``dns`` and
    ``connect`` came before it: the navigation began 80 ms earlier (start offset 20 ms, not
    100 ms), and its response ended at start + send + wait + receive."""
    nav = {"blocked": -1, "dns": 20, "connect": 60, "ssl": 30, "send": 0, "wait": 50, "receive": 10}
    entries = [
        _entry(DOC, 0, nav, size=3000, extra={"_dns_ms": 20, "_connect_ms": 30, "_ssl_ms": 30, "_load_start": 100}),
        _entry(
            CSS,
            61,
            {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 31, "receive": 2},
            size=2000,
            mime="text/css",
            extra={"_load_start": 161},
        ),
    ]  # (page clock)
    har = _har(entries, 400)
    har["log"]["pages"][0]["startedDateTime"] = (T0 - timedelta(milliseconds=100)).isoformat()
    trace = parse_har(har, path="wpt.har")
    cond = infer_conditions(page_graph(trace, "p"), trace.pages[0].start_s)
    assert cond.start_offset_s == pytest.approx(0.020)
    assert cond.discovery_s[1] == pytest.approx(0.001)  # 161 ms from the page's start, 1 ms after the document


@pytest.mark.skipif(not REAL.is_dir(), reason="the development corpus of real HARs is not here")
def test_real_har_pushes_come_from_the_push_cache_rfc9113_8_4():
    """The ``_was_pushed`` entries of real HARs of the document's origin are pushed on the
    navigation and taken from the push cache, none asked for (RFC 9113 section 8.4)."""
    seen = 0
    for path in sorted(REAL.glob("*.har")):
        trace = load(str(path))
        for page in trace.pages:
            if (
                page.on_load_s is None
                or page.repeat_view
                or not any(e.pushed and e.page == page.id for e in trace.exchanges)
            ):
                continue
            graph = load_event_graph(page_graph(trace, page.id), page.on_load_s, page.start_s)
            cond = infer_conditions(graph, page.start_s)
            loaded = simulate_page(graph, cond, FidelityParams())
            sources = loaded.resources.set_index("index")["source"]
            assert cond.pushes and all(sources[i] == "push" for i in cond.pushes)
            assert loaded.metrics["pushes_used"] == len(cond.pushes)
            seen += 1
    if not seen:
        pytest.skip("no pushed entry in the corpus")


def test_a_navigation_that_opened_no_connection_went_on_one_already_open_har_1_2():
    """HAR 1.2 writes -1 for a phase that does not apply: a navigation with no ``connect`` and
    no ``ssl`` opened no connection (a reload, or Browsertime's second run in one browser).
    Its origin's connection is open when the model's load begins, so the document comes one
    round trip plus its server time after the start (RFC 9113 section 3.4's preface and TLS
    1.3's handshake, RFC 8446 section 2, were paid before); a sub-resource origin without a
    ``connect`` is left to open its own (it may have ridden another origin's connection)."""
    from tests.test_fidelity import single_connection_page

    rtt_ms, server_ms = 50.0, 20.0
    fresh = single_connection_page(rtt_ms=rtt_ms, server_ms=server_ms, n=1)
    warm = single_connection_page(rtt_ms=rtt_ms, server_ms=server_ms, n=1)
    for timings in (warm["log"]["entries"][0]["timings"], warm["log"]["entries"][1]["timings"]):
        timings["connect"] = timings["ssl"] = timings["dns"] = -1
    results = {}
    for name, har in (("fresh", fresh), ("warm", warm)):
        trace = parse_har(har, path=f"{name}.har")
        graph = page_graph(trace, trace.pages[0].id)
        cond = infer_conditions(graph, trace.pages[0].start_s)
        result = simulate_page(graph, cond, FidelityParams())
        results[name] = (cond, result.resources.set_index("url"))
    cond, warm_rows = results["warm"]
    assert cond.open_before == frozenset({"https://www.site.example"})
    assert results["fresh"][0].open_before == frozenset()
    doc_end = warm_rows.loc["https://www.site.example/", "arrived_s"]
    # One round trip and the server's time: no TCP or TLS handshake before the request.
    assert doc_end == pytest.approx((rtt_ms + server_ms) / 1000.0, abs=0.006)
    fresh_doc_end = results["fresh"][1].loc["https://www.site.example/", "arrived_s"]
    assert fresh_doc_end - doc_end == pytest.approx(2 * rtt_ms / 1000.0, abs=0.006)  # TCP + TLS 1.3
    # The image's origin still opens a connection: TCP and TLS before its request.
    img = "https://cdn0.example/img0.png"
    img_rows = warm_rows.loc[img]
    assert img_rows["arrived_s"] - img_rows["requested_s"] >= 3 * rtt_ms / 1000.0


def test_responses_that_arrived_together_shared_the_link():
    """Two 100 KB responses whose receives overlapped wholly, 800 ms each, arrived at 1 Mbit/s
    each on one link: the link carried 2 Mbit/s (each rate is a share of it).  The bandwidth
    read from the page is the larger lower bound: the bytes over the time any was arriving.
    One after the other, each at the link's whole rate, both readings agree."""
    from tests.test_fidelity import _entry, single_connection_page

    def page(overlap: bool):
        har = single_connection_page(rtt_ms=20.0, server_ms=0.0, n=0)
        doc = har["log"]["entries"][0]
        for k in range(2):
            start = 0.2 + (0.0 if overlap else 0.4 * k)
            receive = 800.0 if overlap else 400.0
            e = _entry(
                f"https://www.site.example/big{k}.jpg",
                start,
                connect_ms=-1,
                ssl_ms=-1,
                wait_ms=20.0,
                receive_ms=receive,
                size=100_000,
                mime="image/jpeg",
                parent=doc["request"]["url"],
            )
            har["log"]["entries"].append(e)
        har["log"]["pages"][0]["pageTimings"]["onLoad"] = 1500.0
        trace = parse_har(har, path="shared.har")
        graph = page_graph(trace, trace.pages[0].id)
        return infer_conditions(graph, trace.pages[0].start_s).bandwidth_bps

    assert page(overlap=True) == pytest.approx(2 * 100_000 * 8 / 0.8)
    assert page(overlap=False) == pytest.approx(100_000 * 8 / 0.4)


def test_a_phantomjs_har_without_set_up_phases_is_skipped_with_the_reason():
    """PhantomJS's netsniff writes dns, connect and ssl as -1 on every entry and puts the whole
    time before the first byte in ``wait`` (the TCP handshake of RFC 9293 section 3.5, any
    queueing and the server's time): no round trip can be read apart, so its pages are skipped
    and say why.  The same HAR from another producer (a later run on connections already open)
    is predicted."""
    from simulator.studies.fidelity import run

    from tests.test_fidelity import single_connection_page

    har = single_connection_page()
    for e in har["log"]["entries"]:
        e["timings"].update(dns=-1, connect=-1, ssl=-1)
    har["log"]["creator"] = {"name": "PhantomJS", "version": "1.9.1"}
    result = run(parse_har(har, path="phantom.har"))
    assert result.pages.empty
    assert "PhantomJS" in result.skipped["reason"].iloc[0]
    har["log"]["creator"] = {"name": "Browsertime", "version": "1.0"}
    assert len(run(parse_har(har, path="warm.har")).pages) == 1


def _hsts_page(internal: bool) -> dict:
    """A document that names an http:// script, which Chrome upgraded itself (HSTS: "307
    Internal Redirect", RFC 6797 section 8.3) to the https:// one it fetched."""
    rtt_ms = 50.0
    plain, secure = "http://cdn.site.example/a.js", "https://cdn.site.example/a.js"
    doc = _entry(DOC, 0, _fresh(rtt_ms, 20), size=3000)
    hop = _entry(
        plain,
        180,
        {"blocked": 1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 0, "receive": 0.5},
        size=0,
        mime="",
        status=307,
        extra={"_initiator": {"type": "parser", "url": DOC}},
    )
    hop["response"]["headers"] = [{"name": "Location", "value": secure}]
    hop["response"]["redirectURL"] = secure
    if internal:
        hop["response"]["statusText"] = "Internal Redirect"
        hop["response"]["headers"].append({"name": "Non-Authoritative-Reason", "value": "HSTS"})
    script = _entry(secure, 181, _fresh(rtt_ms, 10), size=20_000, mime="application/javascript")
    script["_initiator"] = {"type": "parser", "url": DOC}
    return _har([doc, hop, script], 181 + 3 * rtt_ms + 10 + 20, creator="Chrome")


def test_an_internal_redirect_never_goes_to_the_network_rfc6797_8_3():
    """Chrome writes the http:// URL it upgraded itself (HSTS) as "307 Internal Redirect" with
    a Non-Authoritative-Reason field: the simulation asks the network for nothing there (no
    connection to the http:// origin) and finds the https:// URL at once."""
    pages = {}
    for internal in (True, False):
        trace = parse_har(_hsts_page(internal), path="hsts.har")
        assert [e.internal for e in trace.exchanges] == [False, internal, False]
        page = trace.pages[0]
        graph = load_event_graph(page_graph(trace, page.id), page.on_load_s, page.start_s)
        pages[internal] = simulate_page(graph, infer_conditions(graph, page.start_s), FidelityParams())
    hop = pages[True].resources.set_index("url").loc["http://cdn.site.example/a.js"]
    assert hop["source"] == "internal" and math.isnan(hop["requested_s"])
    assert pages[False].resources.set_index("url").loc["http://cdn.site.example/a.js", "source"] == "network"
    assert pages[True].metrics["requests"] == pages[False].metrics["requests"] - 1
    assert pages[True].metrics["onload_s"] < pages[False].metrics["onload_s"]


def test_a_wait_the_browser_put_in_send_still_bounds_the_rtt_by_send_plus_wait():
    """An exchange takes at least one round trip from the request's first byte to the response's
    first (RFC 9293 section 3.5's handshake gives the 20 ms here).  A busy browser can end
    ``send`` late: Chromium wrote one request send 52.6 ms, wait 0.034 ms at 20 ms RTT in the
    lab.  That wait is no bound on the origin's RTT (it made the page's access path 1 ms and
    every other origin 19 ms farther); send + wait is."""
    busy = {"blocked": 0, "dns": 0, "connect": 40.0, "ssl": 20.0, "send": 52.6, "wait": 0.034, "receive": 1}
    har = _har(
        [
            _entry(DOC, 0, _fresh(20, 30), size=3000),
            _entry("https://stats.other.example/collect", 200, busy, size=40, mime="image/gif"),
        ],
        500,
        creator="chrome-har",
    )
    trace = parse_har(har, path="busy.har")
    page = trace.pages[0]
    graph = load_event_graph(page_graph(trace, page.id), page.on_load_s, page.start_s)
    cond = infer_conditions(graph, page.start_s)
    rtts = {o: rtt for o, rtt, _, _ in cond.origins}
    assert cond.rtt_s == pytest.approx(0.020)
    assert rtts["https://stats.other.example"] == pytest.approx(0.020)


def _chromium_navigation(dns_ms: float) -> dict:
    """A Chromium navigation as the lab recorded one at 20 ms RTT: its connection begun before
    the request, ``connect`` clamped to the request's start (3.8 ms after the entry's)."""
    nav = {"blocked": 3.8, "dns": dns_ms, "connect": 36.8, "ssl": 22.4, "send": 0.2, "wait": 22.4, "receive": 1.2}
    css = {"blocked": 1.0, "dns": -1, "connect": -1, "ssl": -1, "send": 0.2, "wait": 23.0, "receive": 1.0}
    entries = [
        _entry(DOC, 0, nav, size=3000),
        _entry(CSS, 70 + dns_ms, css, size=2000, mime="text/css"),
    ]
    return _har(entries, 150 + dns_ms)


def test_navigation_handshake_read_from_the_request_start_when_no_lookup_came_first():
    """Chromium preconnects the main frame's origin at navigation start and writes a connect time
    from before the request as the request's start: without a DNS lookup first, the handshake
    (one round trip, RFC 9293 section 3.5) runs from the entry's start, ``blocked`` included
    (3.8 + 14.4 ms, not the 14.4 ms ``connect`` less ``ssl`` shows); after a lookup the request
    waited for, ``connect`` less ``ssl`` is whole."""
    trace = parse_har(_chromium_navigation(0.0), path="chrome.har")
    cond = infer_conditions(page_graph(trace, "p"), trace.pages[0].start_s)
    assert dict((o, r) for o, r, _, _ in cond.origins)["https://www.site.example"] == pytest.approx(0.0182)
    assert cond.think_s[0] == pytest.approx(0.0224 - 0.0182)  # wait less that round trip
    trace = parse_har(_chromium_navigation(30.0), path="chrome.har")
    cond = infer_conditions(page_graph(trace, "p"), trace.pages[0].start_s)
    assert dict((o, r) for o, r, _, _ in cond.origins)["https://www.site.example"] == pytest.approx(0.0144)
