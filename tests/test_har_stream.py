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


def test_the_c_header_loop_reads_header_objects_as_the_python_reference_rfc9113_8_2():
    """``harheaders._fields``' C twin (``simulator.traces._harheaders``) gives the Python
    loop's fields for every list of header objects (names lower-cased, connection-specific
    fields and non-token names left out, ``te`` kept only as "trailers", RFC 9113 8.2.1 and
    8.2.2; a value of several lines one field per line; CR and NUL dropped, whitespace
    stripped), with its memo cold and warm, and hands back (None) every list it does not read:
    objects that are not dicts, a missing member, a value that is not a string."""
    import itertools
    import random

    from simulator.traces import harfields, harheaders

    if harheaders._NATIVE is None:
        pytest.skip("the C extension is not built")
    rng = random.Random(3)
    names = ["Accept", "accept", " x-pad ", "Connection", "te", "TE", "cookie", "bad name", ":path", "set-cookie", "é"]
    values = [
        "*/*",
        " a ",
        "trailers",
        "gzip",
        "a\nb",
        "a\r\x00b",
        "",
        "caf\u00e9",
        "x\udcff",
        "v" * 30,
        "a\x1f",
        "\x0bb",
    ]
    memo = {}
    for _ in range(300):
        raw = [{"name": rng.choice(names), "value": rng.choice(values)} for _ in range(rng.randrange(0, 9))]
        want = list(
            itertools.chain.from_iterable(harheaders._header_fields.__wrapped__(h["name"], h["value"]) for h in raw)
        )
        for _ in range(2):  # the memo cold, then warm
            got, section, text = harheaders._NATIVE.fields(
                raw, memo, harheaders._field_name, harheaders._header_fields.__wrapped__
            )
            assert got == want
            assert section == sum(len(n) + len(v) + 32 for n, v in want)  # limits.check_field_section's total
            assert text + harfields._STATUS_LINE_BYTES == harfields.response_header_bytes(raw)
            assert harheaders._fields(raw, None, None) == want
    field = harheaders._field_name, harheaders._header_fields.__wrapped__
    for odd in ([1], [{"name": "a"}], [{"name": "a", "value": 1}], [{"name": None, "value": "v"}], [["a", "b"]]):
        assert harheaders._NATIVE.fields(odd, memo, *field) is None


def test_the_c_split_of_request_and_response_fields_is_the_python_reference_rfc9113_8_3(monkeypatch):
    """The C twin's loop of ``_request_headers`` and ``_response_headers`` gives the Python
    loop's lists (RFC 9113 8.3.1: pseudo-header fields first, rebuilt where some are missing,
    ``host`` as ``:authority``, the last of a pseudo-header field given twice; 8.3.2: the
    first ``:status``, first), on requests and responses of every mix of fields."""
    import random

    from simulator.traces import harheaders

    if harheaders._NATIVE is None:
        pytest.skip("the C extension is not built")
    rng = random.Random(4)
    names = [":method", ":path", ":authority", ":scheme", ":status", "host", "Host", "accept", "x-a", "content-length"]
    values = ["GET", "/a", "a.example", "https", "204", "b.example:8443", "*/*", "1"]
    cases = []
    for _ in range(400):
        headers = [{"name": rng.choice(names), "value": rng.choice(values)} for _ in range(rng.randrange(0, 9))]
        request = {"method": "GET", "url": "https://c.example/p?q", "headers": headers}
        response = {"status": rng.choice([200, 0, None, 304]), "headers": headers}
        cases.append((request, response))
    native = harheaders._NATIVE
    got = [(harheaders._request_headers(q, "w", None), harheaders._response_headers(r, "w", None)) for q, r in cases]
    monkeypatch.setattr(harheaders, "_NATIVE", None)
    want = [(harheaders._request_headers(q, "w", None), harheaders._response_headers(r, "w", None)) for q, r in cases]
    assert got == want
    assert native.split([(b"a", b"1"), ("b", b"2")], None) is None  # a str name: the Python loop's


def test_the_c_shape_check_of_an_entry_is_the_python_reference():
    """``harjson._shape_python``'s C twin (``simulator.traces._harheaders.shape``, the check
    of an entry's bytes before orjson reads them) gives the reference's answer: -1 for a run
    of 19 digits or more (an integer orjson may read as a float), else the count of "[" and
    "{"; on runs at the edges, digits split by other bytes, UTF-8 and random bytes."""
    import random

    from simulator.traces import harjson

    native = harjson._shape_native
    if native is None:
        pytest.skip("the C extension is not built")
    pieces = [b"", b"{", b"[]{}", b"0" * 18, b"0" * 19, b"9" * 40, b"{" + b"1" * 18 + b"}" + b"1" * 18]
    pieces += [b"1" * 18 + b"x" + b"1" * 18, b"[" * 2000, b'{"a":"\xc3\xa9' + b"7" * 19 + b'"}', "é{٣".encode()]
    pieces += [b"x" * k + b"5" * r + b"y" * j for k in range(40) for r in (18, 19) for j in (0, 1, 7)]
    rng = random.Random(5)
    alphabet = b'0123456789[]{}":, ax\xff\x00'
    for _ in range(2000):
        pieces.append(bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 60))))
        digits = bytes(rng.choice(b"0123456789") for _ in range(rng.randrange(15, 22)))
        pieces.append(bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 5))) + digits + b"{")
    for piece in pieces:
        assert native(piece) == harjson._shape_python(piece), piece
    for odd in ("{0}", bytearray(b"{"), None):
        with pytest.raises(TypeError):
            native(odd)


# --- orjson's reading of an entry held to json's (harjson._decode_entry) ----------------------

_JSON_TRICKY = [
    "NaN",
    "-Infinity",
    "1e400",
    "-1e999",
    "18446744073709551616",  # past 64 bits: orjson would read a float
    "-9223372036854775809",
    "9223372036854775807",
    "12345678901234567890123.5",
    "-0",
    "-0.0",
    "4.9e-324",
    "0.30000000000000004441",
    '"\\ud800"',  # a lone surrogate's escape: json keeps it, orjson refuses
    '"\\udc00\\ud800"',
    '"\\ud83d\\ude00"',
    '"1234567890123456789012"',  # a digit run in a string: read by json, the same value
    '"\\u2028 \\u00e9 \\/ \\u0000"',
    '"é \u2028"',
]


def _entry_texts(values):
    """An entry holding each value, in the layouts ``_decode_entry`` reads (a line of its
    own, pretty-printed) and others (a line shared, the last entry before ``]``)."""
    obj = {"request": {"url": "https://a.example/"}, "v": values, "n": {"k": [values, {}]}}
    compact = json.dumps(obj, separators=(",", ":")) if "NaN" not in str(values) else None
    for text in filter(
        None,
        [
            compact,
            json.dumps(obj),
            json.dumps(obj, indent=2),
            json.dumps(obj, indent="\t"),
        ],
    ):
        yield text


def _walked(text, use_orjson, monkeypatch, counted=None):
    from simulator.traces import harjson

    if not use_orjson:
        monkeypatch.setattr(harjson, "_orjson_loads", None)
    elif counted is not None:
        loads = harjson._orjson_loads

        def counting(piece):
            value = loads(piece)
            counted.append(1)
            return value

        monkeypatch.setattr(harjson, "_orjson_loads", counting)
    got = []
    try:
        log = harjson.walk(text, got.append)
    except (harjson.NotStreamable, ValueError, RecursionError) as exc:
        return type(exc).__name__
    finally:
        monkeypatch.undo()
    return repr((got, log))  # repr: NaN compares unequal to itself, and -0.0 equal to 0


@pytest.mark.parametrize("layout", ["lines", "indent", "tabs", "shared", "crlf"])
def test_orjson_reads_an_entry_as_json_does_rfc8259(layout, monkeypatch):
    """Each entry read by ``orjson`` where its end shows in the layout is the value json's
    ``raw_decode`` reads (held by repr: the types and the float bits); what orjson reads
    otherwise (NaN, Infinity, overflow, integers past 64 bits, lone surrogates) goes to json."""
    raw = [v for v in _JSON_TRICKY]
    entries = []
    for k, v in enumerate(raw):
        entries.append(f'{{"request": {{"url": "https://a.example/{k}"}}, "v": [{v}], "w": {{"x": {v}}}}}')
        entries.append(f'{{"request":{{"url":"https://a.example/{k}"}},"v":{v}}}')
    if layout == "lines":
        text = '{"log": {"entries": [\n' + ",\n".join(entries) + "\n]}}"
    elif layout == "crlf":
        text = '{"log": {"entries": [\r\n' + " ,\r\n".join(entries) + "\r\n]}}"
    elif layout == "shared":
        text = '{"log": {"entries": [' + ", ".join(entries) + "]}}"
    else:
        ind = "  " if layout == "indent" else "\t"
        pretty = []
        for e in entries:
            body = e[1:-1]
            pretty.append(f"{ind * 2}{{\n{ind * 3}" + body + f"\n{ind * 2}}}")
        text = f'{{\n{ind}"log": {{\n{ind}"entries": [\n' + ",\n".join(pretty) + f"\n{ind}]\n}}}}"
    read = []
    fast, slow = _walked(text, True, monkeypatch, read), _walked(text, False, monkeypatch)
    assert fast == slow and "nan" in slow and "18446744073709551616" in slow
    # orjson read the entries it reads as json does (those of strings and small numbers)
    assert len(read) >= (0 if layout == "shared" else 12)


def test_orjson_takes_a_slice_only_when_it_is_the_whole_value(monkeypatch):
    """A line that looks like an entry's end but is not (two entries on it, a nested ``}``
    at the entry's indentation, the last entry with the closing brackets, a syntax error):
    json's reading, or json's refusal."""
    texts = [
        '{"log": {"entries": [\n{"a": 1}, {"b": 2}\n]}}',
        '{"log": {"entries": [\n{"a": 1}]}}',
        '{"log": {"entries": [\n  {\n  "a": {\n  }, "b": 2\n  }\n]}}',
        '{"log": {"entries": [\n{"a": 1},\n{"b": 2,}\n]}}',
        '{"log": {"entries": [\n{"a": 1} {"b": 2}\n]}}',
        '{"log": {"entries": [\n{"a": [1, 2}\n]}}',
        '{"log": {"entries": [\n{"a": "x\ty"}\n]}}',
        '{"log": {"entries": [\n{"a": 1}\n,\n{"a": 2}\n]}}',
        '{"log": {"entries": [\n{"a": ' + "[" * 1100 + "]" * 1100 + "}\n]}}",
    ]
    for text in texts:
        assert _walked(text, True, monkeypatch) == _walked(text, False, monkeypatch), text


def test_orjson_entry_reading_on_random_documents(monkeypatch):
    """Random JSON values (hypothesis) as entries, in write_har's layout and pretty-printed:
    the same entries and log as json's reading."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**70), max_value=2**70)
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.text(max_size=12)
    )
    values = st.recursive(
        scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4)
    )
    entries = st.lists(st.dictionaries(st.text(max_size=5), values, max_size=5), max_size=4)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(entries, st.sampled_from([None, 1, 2, "\t"]))
    def check(es, indent):
        if indent is None:
            text = '{"log":{"entries":[\n' + ",\n".join(json.dumps(e, separators=(",", ":")) for e in es) + "\n]}}"
        else:
            text = json.dumps({"log": {"entries": es}}, indent=indent)
        assert _walked(text, True, monkeypatch) == _walked(text, False, monkeypatch)

    check()


def test_orjson_leaves_to_json_the_nesting_json_refuses(monkeypatch):
    """json's scanner counts its levels against the interpreter's recursion limit (the stack
    included) and refuses past it, where orjson reads up to 1,024 levels: an entry nested
    near that limit is refused (or read) as json does, under the default limit and a lower one."""
    import sys

    from simulator.traces.harjson import _depth

    def outcomes():
        out = []
        for depth in range(0, 1100, 7):
            text = '{"log":{"entries":[\n{"a":' + "[" * depth + "]" * depth + "}\n]}}"
            out.append((depth, _walked(text, True, monkeypatch) == _walked(text, False, monkeypatch)))
        return out

    assert all(same for _, same in outcomes())
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(_depth() + 300)
        assert all(same for _, same in outcomes())
    finally:
        sys.setrecursionlimit(limit)


def test_the_c_header_loop_reads_objects_of_any_member_order_extra_members_and_long_lists():
    """The C loop walks an object of just ``name`` and ``value`` (either order) and looks the
    members up in any other (a ``comment``, a third member): the Python loop's fields either
    way, for lists longer than the loop holds on its stack (48 objects) too."""
    import itertools
    import random

    from simulator.traces import harheaders

    if harheaders._NATIVE is None:
        pytest.skip("the C extension is not built")
    rng = random.Random(5)
    shapes = [
        lambda n, v: {"name": n, "value": v},
        lambda n, v: {"value": v, "name": n},
        lambda n, v: {"name": n, "value": v, "comment": "c"},
        lambda n, v: {"comment": "", "value": v, "name": n},
        lambda n, v: {"nam": "x", "name": n, "value": v},
    ]
    field = harheaders._field_name, harheaders._header_fields.__wrapped__
    memo = {}
    for size in (0, 1, 47, 48, 49, 120):
        for _ in range(5):
            pairs = [
                (rng.choice(["Accept", "x-a", "te", "Cookie"]), rng.choice(["*/*", " b ", "trailers", "c\nd"]))
                for _ in range(size)
            ]
            raw = [rng.choice(shapes)(n, v) for n, v in pairs]
            want = list(itertools.chain.from_iterable(harheaders._header_fields.__wrapped__(n, v) for n, v in pairs))
            got, section, text = harheaders._NATIVE.fields(raw, memo, *field)
            assert got == want and text == sum(len(n) + len(v) + 4 for n, v in pairs)
    for odd in (
        [{"name": "a", "x": "v"}],
        [{"value": "v", "x": "a"}],
        [{"name": "a", "value": "v"}] * 60 + [{"name": "a"}],
    ):
        assert harheaders._NATIVE.fields(odd, memo, *field) is None
