"""One trace import for every HAR producer (HAR 1.2; Chrome DevTools, chrome-har /
Browsertime, WebPageTest, Firefox): the field rules of ``traces.harfields`` and the page graph
of ``traces.pagegraph``, on small made-up entries and on the real HARs of the shared corpus
(``../shared/traces/har-real``, skipped when absent)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.traces import load
from simulator.traces.har import parse_har
from simulator.traces.harfields import http_version, initiator, priority, resource_type, wire_and_decoded_bytes
from simulator.traces.pagegraph import page_graph

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "traces" / "har-real"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/traces/har-real absent")


def entry(url, *, status=200, mime="text/html", started="2024-06-01T10:00:00.000Z", resp_headers=(), **extra):
    e = {
        "startedDateTime": started,
        "time": 10,
        "request": {"method": "GET", "url": url, "httpVersion": "h2", "headers": [], "headersSize": -1, "bodySize": 0},
        "response": {
            "status": status,
            "httpVersion": "h2",
            "redirectURL": "",
            "headers": [{"name": n, "value": v} for n, v in resp_headers],
            "content": {"size": 100, "mimeType": mime},
            "headersSize": -1,
            "bodySize": 100,
        },
        "cache": {},
        "timings": {"send": 0, "wait": 5, "receive": 1},
    }
    for key, value in extra.items():
        if key.startswith("response_"):
            e["response"][key[len("response_") :]] = value
        else:
            e[key] = value
    return e


def har(*entries, pages=None):
    log = {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": list(entries)}
    if pages is not None:
        log["pages"] = pages
    return {"log": log}


# ----------------------------------------------------------------- field rules


@pytest.mark.parametrize(
    "spelling, folded",
    [
        ("h2", "h2"),
        ("HTTP/2.0", "h2"),
        ("http/2", "h2"),
        ("2 2", "h2"),
        ("h3", "h3"),
        ("h3-29", "h3"),
        ("http/2+quic/46", "h3"),
        ("spdy/3.1", "spdy"),
        ("HTTP/1.1", "http/1.1"),
        ("1.1", "http/1.1"),
        ("1.0", "http/1.0"),
        ("unknown", None),
        ("", None),
        ("us:", None),
        ("K", None),
    ],
)
def test_http_version_spellings_fold(spelling, folded):
    """httpVersion as producers write it (RFC 9113 names HTTP/2 "h2" in ALPN, RFC 9114 "h3")."""
    assert http_version({}, {"httpVersion": spelling}, {}) == folded


def test_webpagetest_protocol_field_wins_over_its_http_version():
    assert http_version({"_protocol": "HTTP/2"}, {"httpVersion": "1.1"}, {}) == "h2"


@pytest.mark.parametrize(
    "mime, url, init, want, source",
    [
        ("text/css; charset=utf-8", "https://a/x", None, "stylesheet", "mimeType"),
        ("application/javascript", "https://a/x", None, "script", "mimeType"),
        ("font/woff2", "https://a/x", None, "font", "mimeType"),
        ("image/svg+xml", "https://a/x", None, "image", "mimeType"),
        ("video/mp4", "https://a/x", None, "media", "mimeType"),
        ("application/json", "https://a/x", None, "fetch", "mimeType"),
        ("application/octet-stream", "https://a/f.woff2?v=1", None, "font", "url"),
        ("", "https://a/app.mjs", None, "script", "url"),
        ("text/plain", "https://a/beacon", "script", "fetch", "initiator"),
        ("", "https://a/beacon", None, "other", "default"),
    ],
)
def test_resource_type_from_mime_url_initiator(mime, url, init, want, source):
    assert resource_type({}, url, mime, init) == (want, source)


def test_resource_type_prefers_chrome_field_and_ignores_a_redirects_mime():
    assert resource_type({"_resourceType": "Stylesheet"}, "https://a/x", "text/html", None) == (
        "stylesheet",
        "_resourceType",
    )
    assert resource_type({"_resourceType": "ping"}, "https://a/x", "", None) == ("other", "_resourceType")
    # A 302's text/html body is a notice about the move, not the thing asked for.
    assert resource_type({}, "https://a/collect", "text/html", None, status=302) == ("other", "default")


def test_wire_bytes_kept_apart_from_decoded_size():
    """bodySize is the body as received (coded); content.size is decoded; compression is
    what the coding saved (HAR 1.2)."""
    chrome = {
        "bodySize": 67238,
        "_transferSize": 68683,
        "headersSize": 1445,
        "content": {"size": 394418, "compression": 327180},
    }
    assert wire_and_decoded_bytes({}, chrome, 200) == (67238, 394418, "bodySize")
    devtools = {"bodySize": -1, "_transferSize": 12406, "headersSize": -1, "headers": [], "content": {"size": 11820}}
    wire, decoded, source = wire_and_decoded_bytes({}, devtools, 200)
    assert source == "_transferSize" and decoded == 11820 and 12406 - 100 < wire < 12406
    firefox = {"bodySize": 11820, "content": {"size": -1}}
    assert wire_and_decoded_bytes({}, firefox, 200) == (11820, 11820, "bodySize")
    # A 304 carries no body (RFC 9110 section 15.4.5), whatever content.size says.
    not_modified = {"bodySize": 0, "_transferSize": 386, "content": {"size": 490882, "compression": 490882}}
    assert wire_and_decoded_bytes({}, not_modified, 304)[0] == 0
    assert wire_and_decoded_bytes({"_objectSize": "17015"}, {"bodySize": -1, "content": {}}, 200)[:2] == (17015, 17015)
    assert wire_and_decoded_bytes({}, {"bodySize": -1, "content": {"size": -1}}, 200) == (0, 0, "unknown")


def test_initiator_forms():
    assert initiator({"_initiator": {"type": "parser", "url": "https://a/"}}) == ("https://a/", "parser")
    assert initiator({"_initiator": "https://a/", "_initiator_type": "script"}) == ("https://a/", "script")
    assert initiator({"_initiator": "https://a/"}) == ("https://a/", None)  # WebPageTest
    assert initiator({"_initiator_detail": '{"type": "parser", "url": "https://a/"}'}) == ("https://a/", "parser")
    assert initiator({"_initiator_detail": "{not json"}) == (None, None)


def test_priorities_map_as_devtools_maps_net_priorities():
    assert [priority({"_priority": p}) for p in ("HIGHEST", "MEDIUM", "LOW", "LOWEST", "IDLE", "High", "VeryLow")] == [
        "VeryHigh",
        "High",
        "Medium",
        "Low",
        "VeryLow",
        "High",
        "VeryLow",
    ]


# ----------------------------------------------------------------- HAR shapes


def test_data_uris_are_left_out_and_counted():
    trace = parse_har(
        har(entry("https://a.example/"), entry("data:image/png;base64,AAAA"), entry("blob:https://a.example/1234"))
    )
    assert len(trace) == 1 and trace.meta["not_on_network"] == 2


def test_no_pages_and_missing_pageref_make_one_page():
    trace = parse_har(
        har(
            entry("https://a.example/"),
            entry("https://a.example/s.css", mime="text/css", started="2024-06-01T10:00:00.100Z"),
        )
    )
    g = page_graph(trace)
    assert len(g) == 2 and g.page is None and g[1].render_blocking


def test_default_ports_fold_and_schemes_stay_apart():
    """RFC 6454 section 4: an origin is (scheme, host, port), the scheme's default port implied."""
    trace = parse_har(
        har(
            entry("https://A.example:443/"),
            entry("http://a.example/x", started="2024-06-01T10:00:01Z"),
            entry("http://a.example:80/y", started="2024-06-01T10:00:02Z"),
        )
    )
    assert [e.origin for e in trace] == ["https://a.example", "http://a.example", "http://a.example"]


def test_redirect_chain_is_kept_and_the_navigation_starts_at_its_first_url():
    trace = parse_har(
        har(
            entry("http://site.example/", status=301, resp_headers=[("Location", "https://site.example/")]),
            entry(
                "https://site.example/",
                status=302,
                response_redirectURL="https://www.site.example/",
                started="2024-06-01T10:00:00.100Z",
            ),
            entry("https://www.site.example/", started="2024-06-01T10:00:00.200Z"),
            entry("https://www.site.example/a.css", mime="text/css", started="2024-06-01T10:00:00.300Z"),
        )
    )
    g = page_graph(trace)
    assert [r.url for r in g.resources[:3]] == [
        "http://site.example/",
        "https://site.example/",
        "https://www.site.example/",
    ]
    assert g.document == 2 and g[1].parent == 0 and g[2].parent == 1 and g[3].parent == 2
    assert g.render_blocking == [2, 3]


def test_render_blocking_rules_and_their_reasons():
    doc = "https://a.example/"
    trace = parse_har(
        har(
            entry(doc, _priority="VeryHigh"),
            entry(doc + "head.css", mime="text/css", _priority="VeryHigh", _initiator={"type": "parser", "url": doc}),
            entry(doc + "print.css", mime="text/css", _priority="VeryLow", _initiator={"type": "parser", "url": doc}),
            entry(doc + "async.js", mime="text/javascript", _priority="Low", _initiator={"type": "parser", "url": doc}),
            entry(doc + "sync.js", mime="text/javascript", _priority="High", _initiator={"type": "parser", "url": doc}),
            entry(doc + "late.js", mime="text/javascript", _priority="High", _initiator={"type": "script", "url": doc}),
            entry(
                doc + "rb.js",
                mime="text/javascript",
                _priority="Low",
                _renderBlocking="blocking",
                _initiator={"type": "parser", "url": doc},
            ),
        )
    )
    g = page_graph(trace)
    blocking = {g[i].url.rsplit("/", 1)[-1] for i in g.render_blocking}
    assert blocking == {"", "head.css", "sync.js", "rb.js"}
    reasons = {r.url.rsplit("/", 1)[-1]: r.render_blocking_reason for r in g.resources}
    assert reasons["late.js"] == "inserted by a script" and reasons["rb.js"] == "_renderBlocking blocking"
    assert reasons["print.css"] == "_priority VeryLow"


def test_render_blocking_without_priorities_is_the_head():
    """No _priority (Firefox): the stylesheets and scripts asked for before the first image."""
    t = lambda ms: f"2024-06-01T10:00:00.{ms:03d}Z"  # noqa: E731
    trace = parse_har(
        har(
            entry("https://a.example/", started=t(0)),
            entry("https://a.example/a.css", mime="text/css", started=t(100)),
            entry("https://a.example/i.png", mime="image/png", started=t(110)),
            entry("https://a.example/b.js", mime="text/javascript", started=t(300)),
        )
    )
    g = page_graph(trace)
    assert [g[i].url[-5:] for i in g.render_blocking] == ["mple/", "a.css"]


# ----------------------------------------------------------------- the real corpus


@needs_real
def test_real_corpus_every_file_loads_and_has_a_page_graph():
    for path in sorted(REAL.glob("*.har")):
        trace = load(path)
        g = page_graph(trace)
        assert len(g) >= 1 and g[g.document].resource_type == "document", path.name


@needs_real
def test_real_wire_bytes_below_decoded_where_content_was_coded():
    g = page_graph(load(REAL / "contentTypes_ferguson.har"))
    wire = sum(r.body_bytes for r in g.resources)
    decoded = sum(r.decoded_bytes for r in g.resources)
    assert wire < 0.8 * decoded


@needs_real
def test_real_webpagetest_first_and_repeat_view():
    trace = load(REAL / "www.nytimes.com.har")
    first, repeat = trace.pages
    assert (first.on_load_s, repeat.on_load_s) == (2.797, 0.940)
    assert first.repeat_view is False and repeat.repeat_view is True
    assert {"http://www.nytimes.com", "https://www.nytimes.com"} <= set(trace.origins())
    g = page_graph(trace, first.id)
    assert g.edges_from == "initiators" and len(g.render_blocking) > 3


@needs_real
def test_real_redirect_to_www_starts_the_navigation_at_the_bare_host():
    g = page_graph(load(REAL / "redirect_aftonbladet.se-redirecting-to-www.har"))
    assert g[0].url == "http://aftonbladet.se/" and g[g.document].url == "http://www.aftonbladet.se/"


@needs_real
def test_trace_info_shows_inferences_and_warns_once_per_file(capsys):
    assert main(["trace", "info", str(REAL / "http_http2-firefox.har")]) == 0
    out = capsys.readouterr().out
    assert out.count("warning: no initiators") == 1 and "render-blocking" in out and "from mimeType" in out
    assert main(["trace", "info", "--json", str(REAL / "www.nytimes.com.har")]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [p["repeat_view"] for p in info["page_details"]] == [False, True]
    assert all(r["reason"] for p in info["page_details"] for r in p["render_blocking"])


@needs_real
def test_push_and_hints_on_a_real_chrome_page():
    """A large chrome-har page, 150 ms RTT, 300 ms think time: cold, both push and 103 bring
    the render-blocking set earlier (RFC 9113 section 8.4, RFC 8297); warm, push wastes bytes
    on what the client has (cancelled a one-way delay late) and hints waste none."""
    from simulator.studies.push import PushParams, run

    trace = load(REAL / "contentTypes_ferguson.har")
    base = dict(policies=("none", "push", "hints"), rtt_s=0.150, think_s=0.300)
    cold = run(trace, PushParams(**base, cache="cold")).summary
    assert cold.loc["push", "render_blocking_s"] < cold.loc["none", "render_blocking_s"]
    assert cold.loc["hints", "render_blocking_s"] < cold.loc["none", "render_blocking_s"]
    warm = run(trace, PushParams(**base, cache="warm")).summary
    assert warm.loc["push", "bytes_wasted"] > 0 and warm.loc["hints", "bytes_wasted"] == 0


@needs_real
def test_push_says_in_one_line_when_nothing_differs(capsys):
    path = REAL / "http_http1.1-chrome.har"  # an inline-CSS page: the document alone blocks
    assert main(["push", "--trace", str(path), "--policy", "none,push,hints"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing to compare" in err[0] and str(path) in err[0]


SAMPLE = [
    "http_http2-firefox.har",
    "domains_run.sitespeed.io.har",
    "redirect_mousel.lu.har",
    "en.wikipedia.org.spdy-wpt.har",
    "sitespeed_browsertime-recalculate-style.har",
    "redirect_frontendredirect.har",
]
STUDIES = [
    ["trace", "info"],
    ["hol", "--transport", "quic", "--loss", "0.01", "--trace"],
    ["push", "--policy", "none,hints", "--trace"],
    ["coalescing", "--trace"],
    ["replay", "--stack", "h2", "--trace"],
]


def _run_cli(args):
    return subprocess.run(
        [sys.executable, "-m", "simulator.cli", *args], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


def _check_study(args):
    proc = _run_cli(args)
    assert "Traceback" not in proc.stderr, (args, proc.stderr[-2000:])
    assert proc.returncode in (0, 2), (args, proc.returncode)
    if proc.returncode == 2:
        assert len(proc.stderr.strip().splitlines()) == 1 and args[-1] in proc.stderr


@needs_real
@pytest.mark.parametrize("name", SAMPLE)
def test_every_study_on_a_real_har_of_each_producer(name):
    """A real HAR of each producer through every study: a result, or one line and exit 2."""
    for study in STUDIES:
        _check_study([*study, str(REAL / name)])


@needs_real
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*.har")) if REAL.is_dir() else [])
def test_every_study_on_every_real_har(name):
    for study in STUDIES:
        _check_study([*study, str(REAL / name)])
