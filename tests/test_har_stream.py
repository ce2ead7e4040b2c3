"""The HAR import read one entry at a time (``traces.harjson``): the same trace and the same
refusal as a reading of the whole document, and no entry's body held while the others are read."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from simulator.errors import InputError
from simulator.traces.har import _read_json, load_har, parse_har


def entry(url, started):
    return {
        "startedDateTime": started,
        "time": 10,
        "request": {
            "method": "GET",
            "url": url,
            "httpVersion": "h2",
            "headers": [{"name": "accept", "value": "*/*"}],
            "headersSize": -1,
            "bodySize": -1,
        },
        "response": {
            "status": 200,
            "httpVersion": "h2",
            "headers": [{"name": "content-type", "value": "text/js"}],
            "content": {"size": 1234, "mimeType": "text/javascript"},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": 1000,
        },
        "timings": {"send": 1, "wait": 5, "receive": 4},
    }


def har(*entries, pages=()):
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "test", "version": "1"},
            "pages": list(pages),
            "entries": list(entries),
        }
    }


def _both(doc_text: str, tmp_path):
    """(streamed load, whole-document parse) of the same HAR text: traces, or refusal messages."""
    path = tmp_path / "p.har"
    path.write_text(doc_text)
    out = []
    for read in (lambda: load_har(str(path)), lambda: parse_har(_read_json(str(path)), path=str(path))):
        try:
            t = read()
            out.append((t.exchanges, t.pages, t.meta))
        except InputError as exc:
            out.append(str(exc))
    return out


def _page(n=3):
    return har(
        *[entry(f"https://a.example/{k}.js", started=f"2024-06-01T10:00:0{k}.000Z") for k in range(n)],
        pages=[{"id": "page_1", "startedDateTime": "2024-06-01T10:00:00.000Z", "pageTimings": {"onLoad": 900}}],
    )


def test_streamed_import_equals_whole_document_rfc8259_members_in_any_order(tmp_path):
    """RFC 8259 section 4: an object's members are unordered; ``entries`` before ``pages``,
    ``creator`` and ``_untimed`` reads the same, whitespace and a byte-order mark included."""
    doc = _page()
    log = doc["log"]
    reordered = {
        "log": {"entries": log["entries"], "pages": log["pages"], "creator": log["creator"]},
        "x": [1, {"y": 2}],
    }
    for text in (json.dumps(doc), json.dumps(reordered, indent="\t"), " \r\n" + json.dumps(reordered) + "\n"):
        streamed, whole = _both(text, tmp_path)
        assert streamed == whole
        assert len(streamed[0]) == 3 and streamed[1][0].on_load_s == 0.9


def test_streamed_import_duplicate_key_keeps_the_last_as_json_does(tmp_path):
    """RFC 8259 section 4 leaves duplicate names to the parser; Python's keeps the last one."""
    text = json.dumps(_page()).replace('"entries": [', '"entries": [], "entries": [', 1)
    streamed, whole = _both(text, tmp_path)
    assert streamed == whole and len(streamed[0]) == 3


def test_streamed_import_refuses_in_the_whole_document_order(tmp_path):
    """The refusal a reading of the whole document gives: a syntax error before a bad field,
    an entry that is no exchange (its URL) before a bad field of an earlier entry."""
    doc = _page()
    doc["log"]["entries"][0]["response"]["bodySize"] = "x"
    doc["log"]["entries"][2]["request"]["url"] = "https://[::zz]/"
    streamed, whole = _both(json.dumps(doc), tmp_path)
    assert streamed == whole and "entry 2" in streamed and "url" in streamed
    streamed, whole = _both(json.dumps(doc)[:-40], tmp_path)
    assert streamed == whole and "truncated" in streamed
    doc["log"]["entries"][2]["request"]["url"] = "https://a.example/2.js"
    doc["log"]["entries"][1]["timings"]["wait"] = float("inf")
    streamed, whole = _both(json.dumps(doc), tmp_path)  # two bad fields: the earlier start time's
    assert streamed == whole and streamed.endswith("response.bodySize is the string 'x', not a number.")


@pytest.mark.parametrize(
    "text",
    [
        '{"log": {"entries": {}}}',
        "[1]",
        '{"log": {"pages": []}}',
        '{"log": {"entries": [1]}}',
        '{"log": {"entries": []}} x',
    ],
)
def test_streamed_import_other_shapes_refused_as_before(text, tmp_path):
    """A document of another shape, or extra data after it (RFC 8259 section 2), as before."""
    streamed, whole = _both(text, tmp_path)
    assert streamed == whole and isinstance(streamed, str)


def test_import_does_not_hold_every_body_at_once(tmp_path):
    """Fifty entries with 100 kB bodies (``content.text``, which the workbench never reads):
    the import's peak memory stays below twice the file (the text, one entry, the trace),
    where holding the parsed document would hold every body besides the text."""
    body = "b" * 100_000
    doc = _page(1)
    e = doc["log"]["entries"][0]
    doc["log"]["entries"] = []
    for k in range(50):
        e = json.loads(json.dumps(e))
        e["request"]["url"] = f"https://a.example/{k}.js"
        e["response"]["content"]["text"] = body + str(k)
        doc["log"]["entries"].append(e)
    path = tmp_path / "bodies.har"
    data = json.dumps(doc).encode()
    path.write_bytes(data)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        trace = load_har(str(path), data=data)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert len(trace.exchanges) == 50
    assert peak < 1.5 * len(data), f"peak {peak} bytes for a {len(data)}-byte file"
