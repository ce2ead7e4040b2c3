"""Where a document's tags are (``traces.doctext``), read from the HAR's ``content.text``, and what
the page-load model does with it: a child whose tag is near the top of its document is found with
the bytes that hold it, over QUIC with the first packets (RFC 9000 section 2.2: stream data in
order as it arrives) and over TLS and TCP once its whole record is in (RFC 8446 section 5.2)."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import InputError
from simulator.traces.doctext import mention_end_by_spelling, tag_share
from simulator.traces.har import parse_har

ROOT = Path(__file__).resolve().parent.parent
DOC = "https://a.example/dir/index.html"


@pytest.mark.parametrize(
    "spelled",
    [
        "https://a.example/dir/app.js?x=1&y=2",  # absolute
        "//a.example/dir/app.js?x=1&y=2",  # scheme-relative (RFC 3986 4.2)
        "/dir/app.js?x=1&y=2",  # root-relative
        "app.js?x=1&y=2",  # relative to the document (RFC 3986 5.2)
        "https://a.example/dir/app.js?x=1&amp;y=2",  # HTML's character reference for "&"
    ],
)
def test_a_tag_is_found_however_the_document_spells_its_url_rfc3986_4_2(spelled):
    head = '<html><head><script src="'
    text = head + spelled + '"></script></head><body>' + "x" * 1000 + "</body></html>"
    share = tag_share(text, "https://a.example/dir/app.js?x=1&y=2", DOC)
    assert share == pytest.approx((len(head) + len(spelled)) / len(text))


def test_the_first_mention_counts_and_an_absent_url_is_none():
    text = "<p>" + "y" * 500 + '<img src="/i.png"><img src="/i.png">' + "z" * 500
    first_end = text.index("/i.png") + len("/i.png")
    assert tag_share(text, "https://a.example/i.png", DOC) == pytest.approx(first_end / len(text))
    assert tag_share(text, "https://a.example/other.png", DOC) is None
    assert tag_share("", "https://a.example/i.png", DOC) is None


@pytest.mark.parametrize("name", ["sub.js", "hero.js"])
def test_a_relative_spelling_is_not_the_tail_of_another_path(name):
    # The name is in "/lib/<name>" (another file) before its own tag: only the own tag counts.
    text = f'<script src="/lib/{name}"></script>' + "w" * 100 + f'<script src="{name}"></script>'
    share = tag_share(text, f"https://a.example/dir/{name}", DOC)
    assert share == pytest.approx((text.rindex(name) + len(name)) / len(text))


def _har(text: str | None, encoding: str | None = None, resource_type: str = "document") -> dict:
    content = {"size": 2000, "mimeType": "text/html"}
    if text is not None:
        content["text"] = text
    if encoding:
        content["encoding"] = encoding
    entry = {
        "startedDateTime": "2026-01-01T00:00:00.000Z",
        "time": 50,
        "request": {"method": "GET", "url": DOC, "httpVersion": "h2", "headers": [], "headersSize": -1, "bodySize": 0},
        "response": {
            "status": 200,
            "httpVersion": "h2",
            "headers": [{"name": "content-type", "value": "text/html"}],
            "content": content,
            "headersSize": -1,
            "bodySize": 2000,
        },
        "timings": {"send": 0, "wait": 20, "receive": 30},
        "_resourceType": resource_type,
    }
    return {"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [entry]}}


_PIECES = ["https:", "//a.example", "/d", "/x.js", "x.js", "?q=1", "&amp;", "&", '"', "=", " ", "y", "/"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=30),
    st.sampled_from(
        [
            "https://a.example/d/x.js",
            "https://a.example/x.js?q=1&amp;",
            "https://b.example/x.js",
            "https://a.example/d/x.js?q=1&y",
        ]
    ),
)
def test_one_search_per_spelling_family_finds_what_each_spelling_would(pieces, url):
    """``tag_share`` searches once for the shortest spelling each longer one ends with and checks
    the longer ones where it ends: the same first mention as searching every spelling apart."""
    text, doc = "".join(pieces), "https://a.example/d/index.html"
    end = mention_end_by_spelling(text, url, doc)
    assert tag_share(text, url, doc) == (None if end is None or not text else end / len(text))


def test_a_documents_text_is_read_plain_or_base64_har_1_2_content():
    text = "<html><body>é</body></html>"
    assert parse_har(_har(text)).exchanges[0].document_text == text
    coded = base64.b64encode(text.encode()).decode()
    assert parse_har(_har(coded, "base64")).exchanges[0].document_text == text
    assert parse_har(_har(None)).exchanges[0].document_text is None
    # Another type's body is not kept: only where a document's tags are is used.
    assert parse_har(_har("body{}", resource_type="stylesheet")).exchanges[0].document_text is None


def test_a_documents_text_survives_writing_the_har_again():
    from simulator.traces.harwrite import har_dict

    text = "<html><body><img src=/i.png></body></html>"
    again = parse_har(har_dict(parse_har(_har(text), path="a.har")), path="again.har")
    assert again.exchanges[0].document_text == text


def test_a_text_that_says_base64_and_is_not_is_one_line_input_error():
    with pytest.raises(InputError) as err:
        parse_har(_har("not base64 at all!", "base64"), path="page.har")
    message = str(err.value)
    assert "page.har" in message and "entry 0" in message and "base64" in message and "\n" not in message


def test_the_c_entry_reader_leaves_a_document_with_text_to_the_reference():
    """The C twin of the entry reader hands a document with ``content.text`` back, so what the
    Python reader makes of it (its text) is what every reader gives."""
    from simulator.traces import har as harmod

    if harmod._NATIVE_ENTRY is None:
        pytest.skip("the C entry reader is not built")
    doc = _har("<html></html>")
    entry = copy.deepcopy(doc["log"]["entries"][0])
    assert harmod._NATIVE_ENTRY(entry, "entry 0", "x.har") is None
    plain = copy.deepcopy(entry)
    del plain["response"]["content"]["text"]
    # An image with a body stays in C (only documents' text is read).
    image = copy.deepcopy(entry)
    image["_resourceType"] = "image"
    image["response"]["content"]["mimeType"] = "image/png"
    for e in (plain, image):
        found = harmod._NATIVE_ENTRY(e, "entry 0", "x.har")
        if found is not None:
            assert found[1].document_text is None


# ------------------------------------------------------------------------- the page-load model


def _page(doc_bytes: int, protocol: str = "h2") -> dict:
    """A recorded page: a document of ``doc_bytes`` whose one image's tag is its first line, asked
    for 5 ms after the document ended (at 20 ms RTT the whole document came in one flight)."""
    text = '<html><body><img src="/i.png">' + "x" * 200 + "</body></html>"

    def entry(url, rtype, start_ms, size, init):
        return {
            "startedDateTime": f"2026-01-01T00:00:00.{start_ms:03d}Z",
            "time": 45,
            "request": {
                "method": "GET",
                "url": url,
                "httpVersion": protocol,
                "headers": [],
                "headersSize": -1,
                "bodySize": 0,
            },
            "response": {
                "status": 200,
                "httpVersion": protocol,
                "headers": [{"name": "content-type", "value": "text/html" if rtype == "document" else "image/png"}],
                "content": {"size": size, "mimeType": "text/html" if rtype == "document" else "image/png"},
                "headersSize": -1,
                "bodySize": size,
                "_transferSize": size + 100,
            },
            "timings": {"blocked": 0, "dns": 0, "connect": 20, "ssl": 0, "send": 0, "wait": 21, "receive": 4},
            "_resourceType": rtype,
            "_initiator": init,
            "pageref": "p",
        }

    doc = entry("https://a.example/", "document", 0, doc_bytes, {"type": "other"})
    doc["response"]["content"]["text"] = text
    img = entry("https://a.example/i.png", "image", 50, 2000, {"type": "parser", "url": "https://a.example/"})
    img["timings"]["connect"] = -1
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "t", "version": "1"},
            "browser": {"name": "Chrome", "version": "130"},
            "pages": [
                {"startedDateTime": "2026-01-01T00:00:00.000Z", "id": "p", "title": "p", "pageTimings": {"onLoad": 120}}
            ],
            "entries": [doc, img],
        }
    }


def _image_found(har: dict, at: str, protocol: str, full_records: bool = False) -> tuple[float, float]:
    """(when the model found the image, when the document was in), from the page's start."""
    from simulator.net.conditions import PathConditions
    from simulator.studies.fidelity.conditions import infer_conditions
    from simulator.studies.fidelity.study import FidelityParams, load_event_graph, moved_to, simulate_page
    from simulator.traces.pagegraph import page_graph

    trace = parse_har(json.loads(json.dumps(har)), path="page.har")
    page = trace.pages[0]
    graph = load_event_graph(page_graph(trace, page.id), page.on_load_s, page.start_s)
    cond = moved_to(infer_conditions(graph, page.start_s, protocol), PathConditions.parse(at), protocol)
    params = FidelityParams(at=at, protocol=protocol, server_tls_full_records=full_records)
    rows = simulate_page(graph, cond, params).resources.set_index("index")
    return float(rows.loc[1, "discovered_s"]), float(rows.loc[0, "arrived_s"])


def test_over_quic_a_tag_at_the_top_is_found_with_the_first_packets_rfc9000_2_2():
    found, doc_in = _image_found(_page(60_000, "h2"), "rtt=300ms,bw=50mbit", "h3")
    # 60 kB need more than the first flight: the tag came a round trip or more before the end.
    assert found < doc_in - 0.25


def test_over_tls_a_tag_is_found_once_its_whole_record_is_in_rfc8446_5_2():
    # Read per segment, the tag at the top comes with the first flight, as over QUIC.
    per_segment, doc_in = _image_found(_page(60_000), "rtt=300ms,bw=50mbit", "h2")
    assert per_segment < doc_in - 0.25
    # Read a 16 KiB record at a time: the first record needs more than the ten segments of the
    # server's first flight (RFC 6928), so the tag waits a round trip more, yet not for the end.
    whole, doc_in_whole = _image_found(_page(60_000), "rtt=300ms,bw=50mbit", "h2", full_records=True)
    assert whole >= per_segment + 0.25
    assert whole < doc_in_whole
    # A document inside one record: found at its end, plus the recorded 5 ms after it.
    small, small_in = _image_found(_page(8_000), "rtt=300ms,bw=50mbit", "h2", full_records=True)
    assert small == pytest.approx(small_in + 0.005, abs=0.002)


def test_without_the_text_a_child_found_after_the_document_ended_waits_for_its_end():
    har = _page(60_000)
    del har["log"]["entries"][0]["response"]["content"]["text"]
    found, doc_in = _image_found(har, "rtt=300ms,bw=50mbit", "h3")
    assert found == pytest.approx(doc_in + 0.005, abs=0.002)
