"""Trace loaders: HAR, QIF, QPACK interop, format detection, bad input, the trace CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pylsqpack
import pytest

from simulator.cli import main
from simulator.errors import InputError
from simulator.traces import TraceError, detect_format, load, load_many
from simulator.traces.har import load_har, parse_har, write_har
from simulator.traces.harfields import response_header_bytes
from simulator.traces.interop import load_interop, read_records, write_records
from simulator.traces.qif import load_qif, parse_qif, write_qif

TRACES = Path(__file__).resolve().parents[1] / "traces"  # bundled QIFs and interop files (MIT, see traces/README.md)


def entry(url, headers=(), method="GET", status=200, resp_headers=(), started="2024-06-01T10:00:00.000Z", **extra):
    e = {
        "startedDateTime": started,
        "time": 10,
        "request": {
            "method": method,
            "url": url,
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": n, "value": v} for n, v in headers],
            "queryString": [],
            "headersSize": -1,
            "bodySize": -1,
        },
        "response": {
            "status": status,
            "statusText": "OK",
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": n, "value": v} for n, v in resp_headers],
            "content": {"size": 1234, "mimeType": "text/html"},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
        },
        "cache": {},
        "timings": {"send": 1, "wait": 5, "receive": 4},
    }
    e.update(extra)
    return e


def har(*entries, pages=()):
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "test", "version": "1"},
            "pages": list(pages),
            "entries": list(entries),
        }
    }


def write_json(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc))
    return path


# ------------------------------------------------------------------------ HAR


def test_pseudo_headers_rebuilt_per_rfc9113_8_3_1(tmp_path):
    doc = har(
        entry(
            "https://user:pw@Example.com:8443/a/b?x=1&y=2",
            headers=[
                ("Host", "example.com:8443"),
                ("Connection", "keep-alive"),
                ("Keep-Alive", "timeout=5"),
                ("Proxy-Connection", "keep-alive"),
                ("Transfer-Encoding", "chunked"),
                ("Upgrade", "h2c"),
                ("TE", "gzip"),
                ("User-Agent", "UA/1"),
                ("Accept", "*/*"),
                ("Cookie", "a=1; b=2"),
            ],
            resp_headers=[("Content-Type", "text/html"), ("Transfer-Encoding", "chunked"), ("Connection", "close")],
        )
    )
    trace = parse_har(doc, path="x.har")
    e = trace.exchanges[0]
    assert e.request_headers == (
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"example.com:8443"),
        (b":path", b"/a/b?x=1&y=2"),
        (b"user-agent", b"UA/1"),
        (b"accept", b"*/*"),
        (b"cookie", b"a=1; b=2"),
    )  # cookie kept whole
    assert e.response_headers == ((b":status", b"200"), (b"content-type", b"text/html"))
    assert e.origin == "https://example.com:8443"
    assert trace.format == "har"


def test_pseudo_headers_from_url_without_host_and_te_trailers_kept():
    doc = har(entry("http://example.org", headers=[("te", "trailers"), ("accept", "*/*")], method="POST"))
    e = parse_har(doc).exchanges[0]
    assert e.request_headers == (
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":authority", b"example.org"),
        (b":path", b"/"),
        (b"te", b"trailers"),
        (b"accept", b"*/*"),
    )
    assert e.origin == "http://example.org"


def test_connect_has_only_method_and_authority():
    doc = har(entry("https://proxy.example:443", method="CONNECT"))
    assert parse_har(doc).exchanges[0].request_headers == (
        (b":method", b"CONNECT"),
        (b":authority", b"proxy.example:443"),
    )


def test_existing_pseudo_headers_keep_wire_order():
    headers = [
        (":method", "GET"),
        (":authority", "a.example"),
        (":scheme", "https"),
        (":path", "/x"),
        ("accept", "*/*"),
    ]
    doc = har(entry("https://a.example/x", headers=headers, resp_headers=[(":status", "200"), ("server", "s")]))
    e = parse_har(doc).exchanges[0]
    assert [n for n, _ in e.request_headers] == [b":method", b":authority", b":scheme", b":path", b"accept"]
    assert e.response_headers == ((b":status", b"200"), (b"server", b"s"))


def test_chrome_extras_sizes_sorting_pages():
    doc = har(
        entry(
            "https://a.example/late.js",
            started="2024-06-01T10:00:01.500Z",
            pageref="p1",
            _priority="High",
            _resourceType="script",
            _initiator={
                "type": "script",
                "stack": {
                    "callFrames": [],
                    "parent": {"callFrames": [{"url": ""}, {"url": "https://a.example/app.js"}]},
                },
            },
        ),
        entry(
            "https://a.example/",
            started="2024-06-01T10:00:00.250Z",
            pageref="p1",
            _priority="VeryHigh",
            _resourceType="document",
            _initiator={"type": "other"},
            connection="42",
        ),
        pages=[{"startedDateTime": "2024-06-01T10:00:00.000Z", "id": "p1", "title": "A", "pageTimings": {}}],
    )
    doc["log"]["entries"][0]["response"]["content"]["size"] = -1
    doc["log"]["entries"][0]["response"]["bodySize"] = -1
    doc["log"]["entries"][0]["response"]["_transferSize"] = 999
    trace = parse_har(doc)
    first, second = trace.exchanges
    assert first.url == "https://a.example/" and first.start_s == 0.0 and first.index == 0
    assert second.start_s == pytest.approx(1.25)
    assert first.priority == "VeryHigh" and first.resource_type == "document"
    assert first.initiator is None and first.initiator_type == "other" and first.connection == "42"
    assert second.initiator == "https://a.example/app.js" and second.initiator_type == "script"
    # bodySize and content.size unknown (-1): Chrome's _transferSize less the header section's bytes.
    assert first.response_body_bytes == 1234
    assert second.response_body_bytes == 999 - response_header_bytes([]) and second.body_bytes_from == "_transferSize"
    assert trace.meta["transfer_sizes"] == [None, 999]
    assert first.timings == {"send": 1, "wait": 5, "receive": 4}
    assert [p.id for p in trace.pages] == ["p1"] and trace.pages[0].start_s == pytest.approx(-0.25)
    assert first.page == "p1" and trace.timed


def test_multiline_set_cookie_becomes_separate_fields():
    doc = har(entry("https://a.example/", resp_headers=[("Set-Cookie", "a=1\nb=2")]))
    assert parse_har(doc).exchanges[0].response_headers[1:] == ((b"set-cookie", b"a=1"), (b"set-cookie", b"b=2"))


def test_har_write_read_round_trip(tmp_path):
    doc = har(
        entry(
            "https://a.example/x?q=1",
            headers=[("Accept", "*/*"), ("Cookie", "s=\u00e9t\u00e9")],
            resp_headers=[("Server", "nginx")],
            pageref="p",
            _priority="Low",
        ),
        entry("https://b.example/", started="2024-06-01T10:00:00.125Z"),
        pages=[{"startedDateTime": "2024-06-01T10:00:00.000Z", "id": "p", "title": "t"}],
    )
    trace = parse_har(doc)
    write_har(trace, tmp_path / "out.har")
    again = load_har(tmp_path / "out.har")
    assert again.exchanges == trace.exchanges
    assert again.pages == trace.pages
    assert again.content_hash() == trace.content_hash()


# ------------------------------------------------------------------------ QIF

QIF = b"""# a comment
:method\tGET
:scheme\thttps
:authority\twww.example.com
:path\t/index.html
user-agent\tUA\twith tab

:status\t200
content-type\ttext/html

:method\tGET
:path\t/b
host\tother.example
"""


def test_qif_is_one_stream_of_header_lists_in_file_order_per_the_qpack_offline_interop(tmp_path):
    """The QPACK offline interop (draft-ietf-quic-qpack, RFC 9204's drafts; the qpackers/qifs
    format): a QIF file is one encoder's input, a stream of header lists, each one field
    section, in file order.  A response list after a request list is a list of its own, not
    that request's response: three lists, three exchanges."""
    path = tmp_path / "a.qif"
    path.write_bytes(QIF)
    trace = load_qif(path)
    assert trace.format == "qif" and len(trace) == 3 and len(trace.header_lists("both")) == 3
    a, b, c = trace.exchanges
    assert [e.index for e in trace.exchanges] == [0, 1, 2]
    assert a.request_headers[-1] == (b"user-agent", b"UA\twith tab") and a.response_headers is None
    assert a.origin == "https://www.example.com"
    assert b.request_headers is None and b.response_headers == ((b":status", b"200"), (b"content-type", b"text/html"))
    assert c.response_headers is None and c.origin == "https://other.example"
    assert not trace.timed


def test_the_interop_responses_qif_counts_every_list(capsys):
    """``fb-resp-hq.qif`` of the QPACK offline interop's collection holds 383 response lists:
    383 exchanges, as ``workbench trace info`` prints them (none paired with another)."""
    path = Path(__file__).resolve().parents[1] / "traces" / "qif" / "fb-resp-hq.qif"
    trace = load(path)
    assert len(trace) == 383 and len(trace.header_lists("responses")) == 383
    assert not trace.header_lists("requests")
    assert [e.index for e in trace] == list(range(383))
    assert main(["trace", "info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["exchanges"] == 383


def test_har_to_qif_to_trace_gives_same_header_lists(tmp_path):
    trace = load(Path(__file__).resolve().parents[1] / "traces" / "synthetic-page.har")
    write_qif(trace, tmp_path / "out.qif")
    back = load(tmp_path / "out.qif")
    assert [h for _, _, h in back.header_lists()] == [h for _, _, h in trace.header_lists()]
    write_qif(trace, tmp_path / "req.qif", direction="requests")
    assert [e.request_headers for e in load(tmp_path / "req.qif")] == [e.request_headers for e in trace]
    write_qif([h for _, _, h in trace.header_lists("responses")], tmp_path / "resp.qif")
    assert all(e.response_headers is not None for e in load(tmp_path / "resp.qif"))


def test_write_qif_refuses_line_breaks(tmp_path):
    with pytest.raises(InputError, match="header list 0"):
        write_qif([((b"a", b"x\ny"),)], tmp_path / "x.qif")
    assert not (tmp_path / "x.qif").exists()


# ------------------------------------------------------------------------ interop


def encode_interop(lists, capacity=4096, blocked=100):
    """Encode header lists with pylsqpack into interop records (no acknowledgements)."""
    encoder = pylsqpack.Encoder()
    encoder.apply_settings(capacity, blocked)
    records = []
    for i, headers in enumerate(lists):
        enc, block = encoder.encode(i + 1, list(headers))
        if enc:
            records.append((0, enc))
        records.append((i + 1, block))
    return records


def test_interop_records_round_trip_and_decode(tmp_path):
    lists = [
        h
        for _, _, h in load(Path(__file__).resolve().parents[1] / "traces" / "synthetic-page.har").header_lists(
            "requests"
        )
    ]
    path = tmp_path / "page.out.4096.100.0"
    records = encode_interop(lists)
    write_records(path, records)
    assert read_records(path) == records
    trace = load(path)
    assert trace.format == "qpack-interop"
    assert [e.request_headers for e in trace] == lists
    assert trace.meta["max_table_capacity"] == 4096 and trace.meta["blocked_streams"] == 100
    # Settings may be given explicitly when the name does not carry them.
    other = tmp_path / "page.bin"
    write_records(other, records)
    assert [e.request_headers for e in load_interop(other, 4096, 100)] == lists
    with pytest.raises(InputError, match="table capacity"):
        load(other)


def test_interop_blocked_streams_resume(tmp_path):
    # Encoder-stream records after the sections that need them: the sections block, then resume.
    lists = [((b":method", b"GET"), (b"x-long", b"v" * 50))] * 3
    records = encode_interop(lists)
    encoder_records = [r for r in records if r[0] == 0]
    sections = [r for r in records if r[0] != 0]
    path = tmp_path / "blk.out.4096.100.0"
    write_records(path, sections + encoder_records)
    assert [e.request_headers for e in load(path)] == lists


# ------------------------------------------------------------------------ detection


def test_detect_by_content_not_extension(tmp_path):
    har_as_txt = write_json(tmp_path / "capture.txt", har(entry("https://a.example/")))
    assert load(har_as_txt).format == "har"
    qif_as_har = tmp_path / "lists.har"
    qif_as_har.write_bytes(QIF)
    assert load(qif_as_har).format == "qif"
    interop_as_qif = tmp_path / "x.qif"
    write_records(interop_as_qif, encode_interop([((b":method", b"GET"),)], capacity=0, blocked=0))
    assert detect_format(interop_as_qif.read_bytes()) == "qpack-interop"
    assert load(interop_as_qif, max_table_capacity=0, blocked_streams=0).format == "qpack-interop"


# ------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "name, content, where",
    [
        ("empty.har", b"", "empty"),
        ("blank.qif", b"\n\n  \n", "empty"),
        ("trunc.har", b'{"log": {"entries": [\n  {"request": ', "line 2, column"),
        ("nonjson.har", b'{"log": nope}', "line 1, column 9"),
        ("nolog.har", b'{"foo": 1}', '"log"'),
        ("noentries.har", b'{"log": {"version": "1.2"}}', '"entries"'),
        (
            "noreq.har",
            json.dumps(har(entry("https://a.example/"), {"startedDateTime": "2024-06-01T10:00:00Z"})).encode(),
            "entry 1: has no request",
        ),
        (
            "nourl.har",
            json.dumps({"log": {"entries": [{"request": {"method": "GET"}}]}}).encode(),
            "entry 0: request has no url",
        ),
        ("badtime.har", json.dumps(har(entry("https://a.example/", started="yesterday"))).encode(), "entry 0"),
        ("notab.qif", b":method\tGET\n:path\t/\nbroken line\n", "line 3"),
        ("trunc.out.0.0.0", b"\x00" * 7 + b"\x01" + b"\x00\x00\x00\x10" + b"abc", "byte offset 0"),
        ("trunchdr.out.0.0.0", b"\x00" * 7 + b"\x01" + b"\x00\x00\x00\x01" + b"a" + b"\x00\x00\x00", "byte offset 13"),
    ],
)
def test_bad_input_names_file_and_place(tmp_path, name, content, where):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        load(path)
    message = str(info.value)
    assert name in message and where in message
    assert "\n" not in message
    assert TraceError is InputError


def test_truncated_interop_record_message(tmp_path):
    path = tmp_path / "t.out.0.0.0"
    path.write_bytes(b"\x00" * 7 + b"\x01" + b"\x00\x00\x00\x10" + b"abc")
    with pytest.raises(InputError, match=r"byte offset 0: truncated record for stream 1: it declares 16 bytes"):
        read_records(path)


def test_load_many_skips_bad_file(tmp_path):
    good = write_json(tmp_path / "good.har", har(entry("https://a.example/")))
    bad = tmp_path / "bad.qif"
    bad.write_bytes(b"no tab here\n")
    seen = []
    traces, errors = load_many([bad, good, tmp_path / "missing.har"], on_error=lambda p, e: seen.append(p))
    assert [t.source for t in traces] == [str(good)]
    assert [p for p, _ in errors] == [str(bad), str(tmp_path / "missing.har")]
    assert "line 1" in str(errors[0][1]) and seen == [p for p, _ in errors]
    with pytest.raises(InputError):
        load_many([bad], on_error="raise")


# ------------------------------------------------------------------------ CLI


def test_cli_info_json_and_text(tmp_path, capsys):
    page = str(Path(__file__).resolve().parents[1] / "traces" / "synthetic-page.har")
    assert main(["trace", "info", page, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "har" and info["exchanges"] == 79 and info["pages"] == 1
    assert info["origin_count"] == len(info["origins"]) and info["timed"] is True
    assert info["raw_header_bytes"] == info["raw_request_header_bytes"] + info["raw_response_header_bytes"]
    assert main(["trace", "info", page]) == 0
    out = capsys.readouterr().out
    assert "exchanges" in out and "raw header bytes" in out


def test_cli_convert_and_synth(tmp_path, capsys):
    out_har = tmp_path / "s.har"
    assert main(["trace", "synth", str(out_har), "--pages", "2", "--seed", "7"]) == 0
    assert main(["trace", "convert", str(out_har), str(tmp_path / "s.qif"), "--direction", "requests"]) == 0
    trace, qif = load(out_har), load(tmp_path / "s.qif")
    assert [e.request_headers for e in qif] == [e.request_headers for e in trace]
    assert main(["trace", "synth", str(tmp_path / "q.qif"), "--seed", "7", "--requests", "10"]) == 0
    assert load(tmp_path / "q.qif").format == "qif"


@pytest.mark.parametrize("content", [b"", b'{"log": {"entries": [', b"no tab\n"])
def test_cli_bad_input_exit_2_one_line(tmp_path, capsys, content):
    path = tmp_path / "bad.har"
    path.write_bytes(content)
    assert main(["trace", "info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and str(path) in err


def test_cli_subprocess_exit_status(tmp_path):
    exe = Path(sys.executable).parent / "workbench"
    if not exe.exists():
        pytest.skip("workbench entry point not installed")
    path = tmp_path / "notab.qif"
    path.write_bytes(b":method\tGET\nbroken\n")
    run = subprocess.run([str(exe), "trace", "info", str(path)], capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "line 2" in run.stderr and "Traceback" not in run.stderr


# ------------------------------------------------------------------------ bundled real traces


def test_bundled_qif_counts_and_raw_bytes():
    req = load(TRACES / "qif" / "fb-req-hq.qif")
    resp = load(TRACES / "qif" / "fb-resp-hq.qif")
    assert len(req) == 383 and len(resp) == 383
    assert len(req.header_lists("requests")) == 383 and len(resp.header_lists("responses")) == 383
    assert resp.raw_header_bytes() == 340_737
    assert len(req.origins()) == 10
    assert len(load(TRACES / "qif" / "netbsd.qif")) == 18
    assert len(parse_qif((TRACES / "qif" / "draft-examples.qif").read_bytes())) == 3


@pytest.mark.parametrize(
    "path", sorted((TRACES / "qpack-interop").glob("*/*.out.*")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_bundled_interop_decodes_to_qif(path):
    qif = load(TRACES / "qif" / (path.name.split(".out.")[0] + ".qif"))
    trace = load(path)
    assert trace.format == "qpack-interop"
    decoded = [sorted(h) for _, _, h in trace.header_lists()]
    expected = [sorted(h) for _, _, h in qif.header_lists()]
    assert decoded == expected


def test_untimed_trace_stays_untimed_through_har(tmp_path):
    qif = tmp_path / "a.qif"
    qif.write_bytes(QIF)
    write_har(load(qif), tmp_path / "a.har")
    again = load(tmp_path / "a.har")
    assert not again.timed
    assert [e.request_headers for e in again][0] == load(qif).exchanges[0].request_headers


@pytest.mark.parametrize(
    "rel", ["synthetic-page.har", "qif/netbsd.qif", "qpack-interop/ls-qpack/fb-req-hq.out.256.100.1"]
)
def test_load_from_bytes_names_the_trace_and_never_opens_the_path(tmp_path, rel):
    """A Dask worker loads a trace from the bytes the client sent: the path only names it
    (interop settings come from the name), and the trace equals the one loaded from disk."""
    src = TRACES / rel
    from_disk = load(src)
    ghost = tmp_path / "not-here" / src.name  # never exists
    from_bytes = load(ghost, data=src.read_bytes())
    assert from_bytes.content_hash() == from_disk.content_hash()
    assert len(from_bytes.exchanges) == len(from_disk.exchanges)
    assert not ghost.parent.exists()
