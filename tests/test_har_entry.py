"""A HAR entry read into its ``Exchange`` by the C twin of ``har._exchange``
(``simulator.traces._harheaders.exchange``), and into its row by the twin of
``_EntryReader.add``'s reading (``entry``: ``_check``, then ``_exchange``): for every entry
they read, the Python reference's answer, field by field and type by type; every other
entry (and every one the reference refuses) handed back as None, for the reference to read.
Entries from real producers' HARs, a synthetic page, and seeded mutations of them (wrong
types, huge and non-finite numbers, redirects, posted bodies, initiator stacks, WebPageTest
fields, missing pseudo-header fields, non-ASCII text, URLs of every shape, cached entries,
odd start times)."""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from pathlib import Path

import pytest

from simulator.traces import har

ROOT = Path(__file__).resolve().parent.parent
HARS = sorted((ROOT / "traces").glob("**/*.har")) + sorted((ROOT / "tests" / "data").glob("**/*.har"))

pytestmark = pytest.mark.skipif(har._NATIVE_EXCHANGE is None, reason="the C extension is not built")


def _entries(path: Path) -> list:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError, UnicodeDecodeError):
        return []
    log = doc.get("log") if isinstance(doc, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _synthetic() -> list:
    from simulator.traces.harwrite import har_dict
    from simulator.traces.synth import generate

    return har_dict(generate(requests=150, seed=4))["log"]["entries"]


def _reference(entry, where):
    try:
        return har._exchange(entry, where, "page.har")
    except Exception as exc:  # noqa: BLE001 - any refusal: the twin must hand the entry back
        return exc


def _same(entry, where) -> bool:
    """The twin's answer for ``entry`` is the reference's, or None; True when it read it."""
    want = _reference(entry, where)  # first: it lets the entry's :authority pass (the set the twin reads)
    got = har._NATIVE_EXCHANGE(entry, where, "page.har")
    if got is None:
        return False
    assert not isinstance(want, Exception), f"the reference refused what the twin read: {want}"
    for f in dataclasses.fields(want[0]):
        a, b = getattr(got[0], f.name), getattr(want[0], f.name)
        assert a == b and type(a) is type(b), (f.name, a, b)
    assert got[1:] == want[1:] and [type(x) for x in got[1:]] == [type(x) for x in want[1:]]
    return True


def _same_row(entry, where) -> bool:
    """``entry()``, the twin of ``_EntryReader.add``'s reading (``_check``, then ``_exchange``):
    the reference reader's row, or None for an entry it refused, left out or marks refused."""
    reader = har._EntryReader("page.har")
    native, har._NATIVE_ENTRY = har._NATIVE_ENTRY, None
    try:
        reader.count = int(where.split()[-1])
        reader.add(entry)
    finally:
        har._NATIVE_ENTRY = native
    got = native(entry, where, "page.har")
    if got is None:
        return False
    assert reader.refused is None and not reader.cached and not reader.no_network and len(reader.rows) == 1
    t, _, want, url, status, _, transfer = reader.rows[0]
    assert not isinstance(want, Exception), f"the reference refused what the twin read: {want}"
    assert got[0] == t and type(got[0]) is type(t) and url == entry["request"]["url"]
    for f in dataclasses.fields(want):
        a, b = getattr(got[1], f.name), getattr(want, f.name)
        assert a == b and type(a) is type(b), (f.name, a, b)
    assert got[2:] == (status, transfer)
    return True


def _both(entry, where) -> bool:
    return _same(entry, where) + _same_row(entry, where) > 0


def test_the_c_entry_reader_gives_the_reference_exchange_on_real_and_synthetic_hars():
    read = total = 0
    for path in HARS:
        for i, entry in enumerate(_entries(path)):
            total += 1
            read += _both(entry, f"entry {i}")
    synthetic = _synthetic()
    assert sum(_same(e, f"entry {i}") for i, e in enumerate(synthetic)) >= 0.9 * len(synthetic)
    assert sum(_same_row(e, f"entry {i}") for i, e in enumerate(synthetic)) >= 0.9 * len(synthetic)
    assert total > 100 and read > 0


_ODD_VALUES = [
    None,
    -1,
    -2,
    0,
    1,
    101,
    200,
    204,
    304,
    301,
    404,
    1000,
    2**63,
    2**70,
    1e308,
    float("nan"),
    float("inf"),
    -0.0,
    3.5,
    True,
    False,
    "",
    " ",
    "12",
    "١٢",
    "x",
    "caf\u00e9",
    "http://[::1",
    "//cdn.example/x.js",
    "../a.js",
    "h3",
    "http/1.1",
    "HTTP/2",
    "spdy/3",
    "unknown",
    "High",
    "LOWEST",
    " low ",
    "Very High",
    [],
    [1],
    {},
    {"text": "abc"},
    {"url": "https://a.example/x.js", "type": "script"},
    {"url": "//cdn.example/x.js", "type": "parser"},
    {"url": "HTTP://cdn.example/y.js?", "type": "script"},
    {"url": "../a.js"},
    {"stack": {"callFrames": [{"url": "https://b.example/s.js"}]}},
    {"type": "parser", "url": ""},
    {"send": 1, "wait": "5"},
    {"wait": 2e9},
    {"blocked": -1, "wait": 1.5, "_queued": 3},
]

_PATHS = [
    ("response", "status"),
    ("response", "bodySize"),
    ("response", "headersSize"),
    ("response", "_transferSize"),
    ("response", "content"),
    ("response", "content", "size"),
    ("response", "content", "compression"),
    ("response", "headers"),
    ("response", "redirectURL"),
    ("response", "statusText"),
    ("response", "httpVersion"),
    ("request", "bodySize"),
    ("request", "postData"),
    ("request", "headers"),
    ("request", "url"),
    ("request", "method"),
    ("request", "httpVersion"),
    ("_initiator",),
    ("_initiator_type",),
    ("_initiator_detail",),
    ("_resourceType",),
    ("_priority",),
    ("_initialPriority",),
    ("_protocol",),
    ("timings",),
    ("_ttfb_ms",),
    ("_dns_ms",),
    ("_objectSize",),
    ("connection",),
    ("_socket",),
    ("_renderBlocking",),
    ("pageref",),
    ("_noRequestHeaders",),
    ("_contentType",),
    ("response",),
    ("request",),
    ("_fromCache",),
    ("startedDateTime",),
    ("request", "url"),
    ("request", "url"),
]

_URLS = [
    "data:text/plain,x",
    "blob:https://a.example/1",
    "HTTPS://Cdn.Example/a.js",
    "http://a.example:8080/x?y#z",
    "https://a b.example/",
    "https://[::1]/x",
    "https://[::1/x",
    "https://a.example:99999/",
    "https://a.example:x/",
    "https://" + "a" * 70 + ".example/",
    "https://a..example/",
    "https://xn--caf-dma.example/",
    "https://café.example/",
    "ftp://a.example/x",
    "https:///x",
    "https://a.example/\x7f",
    "https://a.example",
    "//a.example/x",
    "https://user@a.example/",
]
_TIMES = [
    "2024-06-01T09:00:00Z",
    "2024-06-01T09:00:00.5+02:00",
    "2024-06-01",
    "garbage",
    5,
    None,
    "",
    "2024-13-01T00:00:00Z",
]


def _mutated(entry, rng: random.Random):
    e = copy.deepcopy(entry)
    for _ in range(rng.randrange(1, 4)):
        path = rng.choice(_PATHS)
        node = e
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        roll = rng.random()
        if roll < 0.15:
            node.pop(path[-1], None)
        elif roll < 0.3 and isinstance(node.get("headers"), list) and node["headers"]:
            headers = node["headers"]
            k = rng.randrange(len(headers))
            pick = rng.choice(["drop", "status", "location", "coding", "odd"])
            if pick == "drop":
                del headers[k]
            elif pick == "status":
                headers.insert(0, {"name": ":status", "value": rng.choice(["204", "302", "abc"])})
            elif pick == "location":
                headers.append({"name": "Location", "value": rng.choice(["/next", "http://[::1"])})
            elif pick == "coding":
                headers.append({"name": "content-encoding", "value": rng.choice(["gzip", "identity"])})
            else:
                headers[k] = rng.choice([{"name": "x"}, {"name": "a", "value": 1}, "h", {"name": "é", "value": "v\nw"}])
        elif path == ("request", "url"):
            node["url"] = rng.choice(_URLS)
        elif path == ("startedDateTime",):
            node["startedDateTime"] = rng.choice(_TIMES)
        elif path == ("_fromCache",):
            node["_fromCache"] = rng.choice(["memory", "disk", "", None, 1])
        else:
            node[path[-1]] = copy.deepcopy(rng.choice(_ODD_VALUES))
    return e


def test_the_c_entry_reader_hands_back_or_matches_every_mutated_entry():
    rng = random.Random(33)
    bases = _synthetic()[:60]
    for path in HARS:
        bases += _entries(path)[:8]
    read = 0
    for n in range(3000):
        read += _both(_mutated(rng.choice(bases), rng), f"entry {n}")
    assert read > 100  # the mutations leave many entries the twin reads


def test_the_c_entry_reader_hands_back_sizes_that_need_the_headers_or_object_size():
    base = _synthetic()[0]
    coded = copy.deepcopy(base)  # bodySize == content.size, _transferSize below: maybe coded
    coded["response"].update(bodySize=5000, _transferSize=1200, headersSize=-1)
    coded["response"]["content"].update(size=5000)
    unknown = copy.deepcopy(base)
    for key in ("bodySize", "_transferSize"):
        unknown["response"].pop(key, None)
    unknown["response"]["content"].pop("size", None)
    unknown["_objectSize"] = 77
    for entry in (coded, unknown):
        _reference(entry, "entry 0")
        assert har._NATIVE_EXCHANGE(entry, "entry 0", "page.har") is None


def test_the_c_entry_reader_sizes_every_status_and_size_combination_as_the_reference():
    """``harfields.wire_and_decoded_sizes``' choices (bodySize, _transferSize less the header
    bytes, content.size less compression; no body for 1xx, 204 and 304) for each combination."""
    import itertools

    base = _synthetic()[1]
    gone = object()
    read = 0
    for status, body, size, transfer, headers, saved in itertools.product(
        (101, 200, 204, 304, 404),
        (gone, -1, 0, 500),
        (gone, -1, 0, 700),
        (gone, -1, 0, 50, 900),
        (-1, 0, 120),
        (gone, 100),
    ):
        e = copy.deepcopy(base)
        response, content = e["response"], e["response"].setdefault("content", {})
        for node, key, value in (
            (response, "status", status),
            (response, "bodySize", body),
            (content, "size", size),
            (response, "_transferSize", transfer),
            (response, "headersSize", headers),
            (content, "compression", saved),
        ):
            node.pop(key, None)
            if value is not gone:
                node[key] = value
        read += _same(e, "entry 1")
        _same_row(e, "entry 1")
    assert read > 1000


def test_a_url_joined_as_is_is_what_urljoin_gives_rfc3986_5_2():
    """``harheaders.joined_as_is`` says True only where ``urljoin(scheme://, ref)`` is ``ref``:
    URLs of every part (scheme case, authority, path, parameters, query, fragment, empty ones)."""
    import itertools
    from urllib.parse import urljoin

    from simulator.traces.harheaders import joined_as_is

    schemes = ["https", "http", "HTTPS", "Https", "ws", "ftp", "foo", "data"]
    netlocs = ["a.example", "", "u@a.example:8443", "[::1]", "a b", "a.example:"]
    paths = ["", "/", "/x.js", "//x", "/a;b", "/a/b;", "/%7Ex", "/\u00e9", "/a\\b", "/a\tb"]
    tails = ["", "?", "?q=1", "#", "#f", "?#", "?q#", "#f?g", "?q#f", "??", "##"]
    seen = 0
    for scheme, netloc, path, tail in itertools.product(schemes, netlocs, paths, tails):
        ref = f"{scheme}://{netloc}{path}{tail}"
        if joined_as_is(ref):
            seen += 1
            for base in ("https", "http", "ftp", "foo", "data"):
                assert urljoin(base + "://", ref) == ref, (base, ref)
    assert seen > 100


def test_the_c_entry_reader_reads_priority_and_version_as_the_reference():
    """The priority a non-blank ``_priority`` names (kept by that string) and, for a blank
    one, ``_initialPriority``'s; the version of ``_protocol``, else the response's, else the
    request's (harfields.priority, harfields.http_version), in every order of entries."""
    import itertools

    base = _synthetic()[2]
    gone = object()
    for priority, initial, protocol, version in itertools.product(
        ("", " ", "High", " high ", "LOWEST", "x", gone, 3),
        ("Low", "HIGHEST", "", gone),
        (gone, "h3", "", "x"),
        ("h2", "HTTP/1.1", "unknown", gone),
    ):
        e = copy.deepcopy(base)
        for node, key, value in (
            (e, "_priority", priority),
            (e, "_initialPriority", initial),
            (e, "_protocol", protocol),
            (e["response"], "httpVersion", version),
        ):
            node.pop(key, None)
            if value is not gone:
                node[key] = value
        _same(e, "entry 2")


def test_the_c_entry_reader_joins_initiator_urls_as_the_reference_rfc3986_5_2():
    """An initiator URL joined to the entry's (``har._join``): network-path references on an
    http and an https page, absolute URLs of either scheme, relative ones."""
    import itertools

    base = _synthetic()[3]
    for page, ref in itertools.product(
        ("http://www.example/a/b.html", "https://www.example/a/", "HTTPS://www.example/", "https://[::1]/x"),
        ("//cdn.example/x.js", "//cdn.example", "https://cdn.example/y.js", "http://cdn.example/y.js?", "../c.js", "d"),
    ):
        e = copy.deepcopy(base)
        e["request"]["url"] = page
        e["_initiator"] = {"type": "script", "url": ref}
        _same(e, "entry 3")
        _same_row(e, "entry 3")
