"""Chromium's two request schedulers (``browser.scheduling``), sans-I/O: Blink's
ResourceLoadScheduler (tight until the <body>) and the network service's ResourceScheduler
(delayable requests held only to servers not known to multiplex)."""

from simulator.browser.scheduling import (
    BOOSTED_IMAGES,
    MAX_DELAYABLE_IN_FLIGHT,
    MAX_PER_HOST,
    PRIORITY_RANK,
    ChromiumScheduler,
)

LOW, MEDIUM, HIGH, VERY_HIGH = (PRIORITY_RANK[n] for n in ("Low", "Medium", "High", "VeryHigh"))


def _scheduler(hosts: dict[int, str]):
    sent: list[int] = []
    return ChromiumScheduler(sent.append, hosts.__getitem__), sent


def test_tight_mode_holds_low_priority_requests_to_two_in_flight_until_the_body():
    """Blink: before the <body>, a request below High starts only while fewer than two are in
    flight; High and above start at once; after the <body> the rest start."""
    hosts = {i: "https://a.example" for i in range(10)}
    s, sent = _scheduler(hosts)
    s.connected("https://a.example")
    s.ask(0, HIGH)  # a parser-blocking script
    s.ask(1, LOW)
    s.ask(2, LOW)
    s.ask(3, LOW)
    assert sent == [0, 1]
    s.ask(4, VERY_HIGH)  # a stylesheet: not held
    assert sent == [0, 1, 4]
    s.finished(1)
    assert sent == [0, 1, 4]  # still two (0 and 4) in flight
    s.finished(0)
    assert sent == [0, 1, 4, 2]  # 4 and 2 in flight
    s.ask(5, LOW)
    s.finished(4)
    assert sent == [0, 1, 4, 2, 3]  # in the order asked
    s.body_reached()
    assert sent == [0, 1, 4, 2, 3, 5]


def test_tight_mode_lets_two_medium_requests_through_whatever_is_in_flight():
    """Blink's image boost: the first images are Medium, and up to two Medium requests start
    in tight mode even when two or more requests are in flight."""
    hosts = {i: "https://a.example" for i in range(6)}
    s, sent = _scheduler(hosts)
    s.connected("https://a.example")
    s.ask(0, HIGH)
    s.ask(1, HIGH)
    s.ask(2, MEDIUM)
    s.ask(3, MEDIUM)
    s.ask(4, MEDIUM)
    assert sent == [0, 1, 2, 3]


def test_the_first_images_are_medium_and_a_captured_boost_is_ignored():
    """Chromium starts images at Low, the first five at Medium; a capture's last priority
    (High: raised once in the viewport) does not raise the initial one, a lower one lowers it."""
    s, _ = _scheduler({})
    ranks = [s.initial_priority("image", False, "High") for _ in range(BOOSTED_IMAGES + 2)]
    assert ranks == [MEDIUM] * BOOSTED_IMAGES + [LOW, LOW]
    assert s.initial_priority("stylesheet", True, None) == VERY_HIGH
    assert s.initial_priority("stylesheet", False, "Medium") == MEDIUM
    assert s.initial_priority("script", True, None) == HIGH
    assert s.initial_priority("script", False, None) == LOW


def test_waiting_requests_start_highest_priority_first():
    """Blink releases the highest priority first, in the order asked within a priority."""
    hosts = {i: "https://a.example" for i in range(6)}
    s, sent = _scheduler(hosts)
    s.connected("https://a.example")
    s.ask(0, HIGH)
    s.ask(1, HIGH)
    s.ask(2, LOW)
    s.ask(3, LOW)
    s.ask(4, MEDIUM)  # Medium goes through on its own allowance
    s.ask(5, LOW)
    assert sent == [0, 1, 4]
    s.finished(0)
    s.finished(1)
    s.finished(4)
    assert sent[3:] == [2, 3]  # Low in the order asked, two at a time


def test_network_service_holds_delayable_requests_only_to_hosts_not_known_to_multiplex():
    """The network service: once the body is reached, a host known to speak HTTP/2 or HTTP/3
    takes every request at once; another takes at most six in flight, and at most ten
    delayable requests are in flight in all."""
    n = 30
    hosts = {i: ("https://h2.example" if i < n else f"https://h1-{i % 3}.example") for i in range(2 * n)}
    s, sent = _scheduler(hosts)
    s.body_reached()
    s.connected("https://h2.example")
    for i in range(n):
        s.ask(i, LOW)
    assert sent == list(range(n))
    for i in range(n, 2 * n):
        s.ask(i, LOW)
    h1 = [i for i in sent if i >= n]
    assert len(h1) == MAX_DELAYABLE_IN_FLIGHT
    per_host = {h: sum(hosts[i] == h for i in h1) for h in {hosts[i] for i in h1}}
    assert max(per_host.values()) <= MAX_PER_HOST
    s.finished(h1[0])
    assert len([i for i in sent if i >= n]) == MAX_DELAYABLE_IN_FLIGHT + 1


def test_layout_raises_a_captured_image_above_the_delayable_limits():
    """Blink raises the images in the viewport after layout (their captured priority, High);
    a raised request is no longer delayable: it starts past the network service's ten-delayable
    limit, it frees its place in that count, and one asked for after the layout starts raised."""
    n = MAX_DELAYABLE_IN_FLIGHT + 4
    hosts = {i: "https://h1.example" if i < n else f"https://other-{i}.example" for i in range(n + 3)}
    s, sent = _scheduler(hosts)
    s.body_reached()
    initial = s.initial_priority("image", False, "High")
    assert s.layout_priority("image", initial, "High") == HIGH
    assert s.layout_priority("image", HIGH, "High") is None  # not above its initial one
    assert s.layout_priority("script", LOW, "High") is None  # only images are raised by layout
    for i in range(n):
        s.ask(i, LOW, HIGH if i >= n - 2 else None)
    assert len(sent) == MAX_PER_HOST  # one HTTP/1.1 host: six in flight
    s.ask(n, LOW)  # another host: delayable, counts toward the ten
    s.layout()
    assert sent[-2:] == [n - 2, n - 1]  # raised to High: not held by the host's six
    s.ask(n + 1, LOW, HIGH)  # after layout: asked at its raised priority
    assert sent[-1] == n + 1

    # Raised while in flight: no longer counted among the ten delayable ones.
    s, sent = _scheduler({i: f"https://host-{i}.example" for i in range(12)})
    s.body_reached()
    for i in range(MAX_DELAYABLE_IN_FLIGHT + 2):
        s.ask(i, LOW, HIGH if i < 2 else None)
    assert sent == list(range(MAX_DELAYABLE_IN_FLIGHT))
    s.layout()
    assert sent[MAX_DELAYABLE_IN_FLIGHT:] == [MAX_DELAYABLE_IN_FLIGHT, MAX_DELAYABLE_IN_FLIGHT + 1]


DOC = "https://www.site.example/"


def _images_page_har(images: list[str], viewport: list[str] | None = None) -> dict:
    """A Chromium HAR over HTTP/3: a document and its Low images (``_priority`` Low, each 20 kB
    on the document's host); with ``viewport``, the page's ``_viewportImages``."""
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2024, 6, 1, 10, 0, 0, tzinfo=timezone.utc)

    def entry(url, start_ms, mime, resource_type, priority, timings):
        return {
            "pageref": "p",
            "startedDateTime": (t0 + timedelta(milliseconds=start_ms)).isoformat(),
            "_resourceType": resource_type,
            "_priority": priority,
            "_initiator": {"type": "parser", "url": DOC},
            "request": {"method": "GET", "url": url, "httpVersion": "h3", "headers": [], "bodySize": 0},
            "response": {
                "status": 200,
                "httpVersion": "h3",
                "headers": [{"name": "content-type", "value": mime}],
                "content": {"size": 20_000, "mimeType": mime},
                "bodySize": 20_000,
            },
            "timings": timings,
        }

    fresh = {"blocked": 0, "dns": 0, "connect": 40, "ssl": 20, "send": 0, "wait": 25, "receive": 5}
    reused = {"blocked": 0, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 25, "receive": 5}
    entries = [entry(DOC, 0, "text/html", "document", "VeryHigh", fresh)]
    entries[0]["_initiator"] = {"type": "other"}
    entries += [entry(u, 75, "image/png", "image", "Low", reused) for u in images]
    page = {"id": "p", "startedDateTime": t0.isoformat(), "title": DOC, "pageTimings": {"onLoad": 200}}
    if viewport is not None:
        page["_viewportImages"] = viewport
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "http-workbench capture", "version": "1"},
            "browser": {"name": "Chromium", "version": "156.0.0.0"},
            "pages": [page],
            "entries": entries,
        }
    }


def _requested_s(har: dict, urls: list[str], discovery: str = "forced") -> list[float]:
    """When the model asks for each of ``urls`` (sorted), the page moved to 100 ms over HTTP/3."""
    from simulator.net.conditions import PathConditions
    from simulator.studies.fidelity import FidelityParams, infer_conditions, load_event_graph, simulate_page
    from simulator.studies.fidelity.study import moved_to
    from simulator.traces.har import parse_har
    from simulator.traces.pagegraph import page_graph

    trace = parse_har(har, path="page.har")
    page = trace.pages[0]
    graph = load_event_graph(page_graph(trace, page.id), page.on_load_s, page.start_s)
    at = PathConditions.parse("rtt=100ms,bw=50mbit")
    cond = moved_to(infer_conditions(graph, page.start_s, "h3"), at, "h3")
    params = FidelityParams(at=str(at), protocol="h3", h3_discovery=discovery)
    table = simulate_page(graph, cond, params, scheduler="chromium").resources
    return sorted(table[table["url"].isin(urls)]["requested_s"])


def test_a_host_known_only_by_forced_http3_keeps_its_delayable_requests_held():
    """Chromium knows a host supports priorities from HTTP/2 or from an Alt-Svc for HTTP/3
    (``HttpServerProperties::SupportsRequestPriority``); HTTP/3 forced by a flag, as the lab's
    Chromium runs, teaches it nothing.  A page of twelve Low images on one HTTP/3 host: found by
    an Alt-Svc every image goes at once, forced at most ``MAX_PER_HOST`` are in flight."""
    images = [f"{DOC}i{k}.png" for k in range(12)]
    har = _images_page_har(images)
    alt_svc, forced = _requested_s(har, images, "alt-svc"), _requested_s(har, images, "forced")
    assert alt_svc[0] == alt_svc[-1]  # all twelve at once
    assert forced[:MAX_PER_HOST] == [forced[0]] * MAX_PER_HOST
    assert forced[MAX_PER_HOST] > forced[0]  # the seventh waits for one of the six to finish
    assert forced[0] == alt_svc[0]


def test_layout_raises_images_in_the_viewport_to_high_where_the_capture_shows_no_raise():
    """Blink raises a visible image still loading to High at layout
    (``ResourceFetcher::ComputeLoadPriority``), whatever priority a fast capture ended with: the
    page's ``_viewportImages`` say which; a raised request is not delayable, so the network
    service's per-host six do not hold it.  Images out of the viewport stay Low and held."""
    s, _ = _scheduler({})
    assert s.layout_priority("image", LOW, "Low", in_viewport=True) == HIGH
    assert s.layout_priority("image", LOW, "Low", in_viewport=False) is None
    assert s.layout_priority("image", LOW, "VeryHigh", in_viewport=True) == VERY_HIGH  # the capture's, higher
    assert s.layout_priority("image", HIGH, "Low", in_viewport=True) is None  # not above its initial one
    assert s.layout_priority("script", LOW, "Low", in_viewport=True) is None

    images = [f"{DOC}i{k}.png" for k in range(MAX_PER_HOST + 2)]
    held = _requested_s(_images_page_har(images), images)
    assert held[MAX_PER_HOST] > held[0]  # no viewport recorded: as before, the seventh waits
    shown = _requested_s(_images_page_har(images, viewport=images), images)
    assert shown == [shown[0]] * len(images)  # all in the viewport: all at once
    assert shown[0] == held[0]
    below = images[-1]  # the last image below the fold: Low, and the host's six are taken
    partly = _requested_s(_images_page_har(images, viewport=images[:-1]), images)
    assert partly[:-1] == [partly[0]] * (len(images) - 1)
    assert partly[-1] > partly[0]
    assert _requested_s(_images_page_har(images, viewport=images[:-1]), [below]) == partly[-1:]


def test_viewport_images_are_read_and_written_with_the_page():
    """The page's ``_viewportImages`` (the lab's capture) reach each image of the page graph as
    ``in_viewport`` (a fragment aside, as the graph's URLs), and ``write_har`` keeps them; a
    page without them, or with something else there, knows nothing of the viewport (None)."""
    import json
    import os
    import tempfile

    from simulator.traces.har import load_har, parse_har
    from simulator.traces.harwrite import write_har
    from simulator.traces.pagegraph import page_graph

    images = [f"{DOC}a.png", f"{DOC}b.png"]
    trace = parse_har(_images_page_har(images, viewport=[f"{DOC}a.png#top"]), path="page.har")
    graph = page_graph(trace, "p")
    flags = {r.url: r.in_viewport for r in graph.resources}
    assert flags == {DOC: None, images[0]: True, images[1]: False}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.har")
        write_har(trace, path)
        with open(path, encoding="utf-8") as f:
            assert json.load(f)["log"]["pages"][0]["_viewportImages"] == [f"{DOC}a.png#top"]
        assert load_har(path).pages[0].viewport_images == (f"{DOC}a.png#top",)
    for viewport in (None, "a.png", [1, 2]):
        har = _images_page_har(images, viewport=viewport)
        assert {r.in_viewport for r in page_graph(parse_har(har, path="page.har"), "p").resources} == {None}
