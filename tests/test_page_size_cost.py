"""Cost that follows the work, not what a trace claims (issue 33): the per-field memos of the
header path give the libraries' own answers, a declared body is written in bounded chunks,
and the QUIC model's ACK processing looks at the packets an ACK names, not at all it sent.
No test here times anything: memory is measured with ``tracemalloc``, work by counting."""

from __future__ import annotations

import hpack
from h2.utilities import normalize_outbound_headers


def _odd_lists():
    """Header lists with what h2's normalisation changes: upper-case names, surrounding
    whitespace, connection-specific fields, short and long cookies, credentials."""
    base = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"a.example"), (b":path", b"/x")]
    extras = [
        (b"Accept", b" text/html "),
        (b"connection", b"keep-alive"),
        (b"cookie", b"a=1"),
        (b"cookie", b"session=0123456789abcdefghij"),
        (b"authorization", b"Basic eA=="),
        (b"proxy-authorization", b"x"),
        (b"TE", b"trailers"),
        (b"x-empty", b""),
        (b"upgrade", b"h2c"),
        (b"user-agent", b"UA/1.0"),
        (b"keep-alive", b"timeout=5"),
        (b"transfer-encoding", b"chunked"),
    ]
    for i in range(len(extras)):
        yield tuple(base + extras[i:] + extras[:i])
        yield tuple(base + extras[:i])


def test_h2_normalized_is_h2s_normalisation_rfc9113_8_2():
    """RFC 9113 section 8.2 (lower-case names, no connection-specific fields) and h2's
    never-indexed credentials and short cookies (RFC 7541 section 7.1.3): the per-field memo
    gives h2's own list, field classes included, for every list, twice (memo cold and warm)."""
    from simulator.http.header_sizes import h2_normalized

    for _ in range(2):
        for headers in _odd_lists():
            h2_normalized.cache_clear()
            ours = h2_normalized(headers)
            theirs = tuple(normalize_outbound_headers(headers, None))
            assert ours == theirs
            assert [type(f) for f in ours] == [type(f) for f in theirs]


def test_block_sizes_with_the_field_memo_are_hpacks_rfc7541():
    """RFC 7541 sections 6.1-6.2: with the per-field memo warm from other connections, each
    block's size is still what hpack's encoder writes on this connection (the dynamic table,
    never-indexed fields, str fields, entries that empty the table)."""
    from simulator.http.header_sizes import HeaderBlockSizer, h2_normalized

    lists = list(_odd_lists())
    lists.append(((b":status", b"200"), (b"x-big", b"v" * 5000), (b"etag", b'"1"')))
    lists.append((("x-text", "value"), (b"authorization", b"secret", True), (b"etag", b'"1"')))
    for rounds in range(3):
        encoder, sizer = hpack.Encoder(), HeaderBlockSizer()
        for headers in lists[rounds:] + lists[:rounds]:
            if rounds == 1 and all(type(h) is tuple and len(h) == 2 for h in headers):
                headers = h2_normalized(headers)
            assert sizer.encoded_size(headers) == len(encoder.encode(list(headers)))


def test_the_replay_header_clean_up_is_per_field_rfc9113_8_2_2():
    """RFC 9113 section 8.2.2: connection-specific fields dropped, names lower-cased, CR, LF
    and NUL gone from values; the same answer with the memo cold and warm, and for fields
    given as lists (not hashable)."""
    from simulator.stacks import replay

    headers = [(b" Accept ", b" a\r\nb\x00 "), (b"Connection", b"close"), (b"", b"x"), (b"host", b"h"), (b"x-a", b"1")]
    want = [(b"accept", b"ab"), (b"x-a", b"1")]
    replay._CLEANED.clear()
    assert replay._clean(headers) == want
    assert replay._clean(headers) == want
    assert replay._clean([list(h) for h in headers]) == want


def test_the_c_header_clean_up_is_the_python_reference_rfc9113_8_2_2(monkeypatch):
    """``replay._clean_split``'s C twin (``simulator.stacks._headers``) cleans and splits every
    list as the Python loop does (RFC 9113 8.2.2 and 8.3: connection-specific fields dropped,
    names lower-cased, CR, LF and NUL gone from values; pseudo-header fields apart, content-length
    left out), with the memo cold and warm, and so do the request and response lists built on
    it; lists it does not read (a field given as a list) go to the Python loop."""
    import random

    import pytest

    from simulator.stacks import replay

    if replay._NATIVE is None:
        pytest.skip("the C extension is not built")
    rng = random.Random(9)
    names = [
        b":method",
        b":path",
        b":status",
        b"Accept",
        b" x-a ",
        b"content-length",
        b"connection",
        b"te",
        b"",
        b"host",
        b"\tKeep-Alive\x0b",
        b" ",
        b"X-\xc3\x89",
    ]
    values = [b"GET", b"/", b"200", b"", b" a\r\nb\x00 ", b"12", b"304", b"v" * 20, b"\x0c\r\n", b"\x1cv\x1f"]
    lists = []
    for _ in range(300):
        fields = [(rng.choice(names), rng.choice(values)) for _ in range(rng.randrange(0, 10))]
        if rng.random() < 0.1:
            fields.append([b"x-list", b"1"])
        lists.append(tuple(fields))
    native = replay._NATIVE
    for cold in (True, False):
        if cold:
            replay._CLEANED.clear()
        got = [(replay._clean_split(h), replay.request_headers_for(h, "https://a.example", 3)) for h in lists]
        got += [replay.response_headers_for(h, 5) for h in lists]
        monkeypatch.setattr(replay, "_NATIVE", None)
        want = [(replay._clean_split(h), replay.request_headers_for(h, "https://a.example", 3)) for h in lists]
        want += [replay.response_headers_for(h, 5) for h in lists]
        monkeypatch.setattr(replay, "_NATIVE", native)
        assert got == want
    assert native.clean_split(((b"a", b"1"), [b"x", b"2"]), {}, replay._clean_field, 8, set()) is None
    # Each (bytes, bytes) field's clean form as the C twin made it is _clean_field's.
    for field, cleaned in replay._CLEANED.items():
        if type(field[0]) is bytes and type(field[1]) is bytes:
            assert cleaned == replay._clean_field(*field), field


def test_the_c_request_and_response_lists_after_clean_up_are_the_python_reference_rfc9113_8_3(monkeypatch):
    """``request_headers_for`` and ``response_headers_for`` built whole by the C twin
    (``simulator.stacks._headers``) are the Python code's (``WORKBENCH_PURE_PYTHON=1``'s): the four
    request pseudo-header fields first, the last of a name given twice, an empty :path as "/",
    the origin's authority by default; :status first, the first of two, 1xx and odd statuses as
    200, no body and no content-length for 204 and 304 (RFC 9110 sections 6.4.1 and 15); what the
    twin does not read (a body not an int, a field given as a list) goes to the Python code."""
    import random

    import pytest

    from simulator.stacks import replay

    if replay._NATIVE is None:
        pytest.skip("the C extension is not built")
    rng = random.Random(33)
    names = [
        b":method",
        b":scheme",
        b":authority",
        b":path",
        b":status",
        b":Path ",
        b"accept",
        b"Host",
        b"content-length",
    ]
    values = [b"GET", b"", b"/a", b"204", b"304", b"101", b"20x", b"2000", b" 404 ", b"https", b"x.example", b"\r\n"]
    lists = []
    for _ in range(400):
        fields = [(rng.choice(names), rng.choice(values)) for _ in range(rng.randrange(0, 8))]
        if rng.random() < 0.05:
            fields.append([b"x-list", b"1"])
        lists.append(tuple(fields))
    cases = [
        (h, rng.choice(["https://a.example", "http://b.example:8080", None]), rng.choice([0, 1, 3, 10**6, 2**70, True]))
        for h in lists
    ]
    native = replay._NATIVE
    made = sum(native.request_headers(h, {}, replay._clean_field, 8, set(), b"a", 0) is not None for h, _, _ in cases)
    assert made > 350  # the twin answers nearly every list itself
    for cold in (True, False):
        if cold:
            replay._CLEANED.clear()
        got = [(replay.request_headers_for(h, o, b), replay.response_headers_for(h, b)) for h, o, b in cases]
        monkeypatch.setattr(replay, "_NATIVE", None)
        want = [(replay.request_headers_for(h, o, b), replay.response_headers_for(h, b)) for h, o, b in cases]
        monkeypatch.setattr(replay, "_NATIVE", native)
        assert got == want
        # The body returned is the same type as the reference's (an int, 0 for 204 and 304).
        assert [type(g[1][1]) for g in got] == [type(w[1][1]) for w in want]


DECLARED_BYTES = 2 << 30  # 2 GiB: far above what any run here could hold


class _Listener:
    """The browser's side of ``ModelNetwork`` as far as these tests need it: counts what arrives."""

    done = False
    response_marks = None

    def __init__(self):
        self.complete = []

    def on_response_complete(self, index):
        self.complete.append(index)


def _peak_bytes_while(run) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_2_gib_declared_body_is_simulated_in_bounded_memory_rfc9113_8_1():
    """RFC 9113 section 8.1 / RFC 9114 section 4.1: a message's body is a sequence of DATA
    frames of the declared length; the model writes them as slices of one shared block, so a
    response (fifo: handed to the transport whole, as the h2 stack does) and a request body
    declared at 2 GiB run in the memory of what is in flight: the first second of each, over
    h2 on the TCP model and h3 on the QUIC model, adds under 40 MB (tracemalloc), where the
    bytes themselves would be 2 GiB each; and bytes do arrive."""
    from simulator.browser.client import LoadParams
    from simulator.engine import Simulator
    from simulator.http.network import ModelNetwork
    from simulator.stacks.common import ExchangeSpec

    request = ((b":method", b"POST"), (b":scheme", b"https"), (b":authority", b"a.example"), (b":path", b"/up"))
    response = ((b":status", b"200"),)
    for protocol in ("h2", "h3"):
        for direction in ("response", "request"):
            sim = Simulator(seed=1)
            listener = _Listener()
            params = LoadParams(protocol=protocol, scheduler="fifo", bandwidth_bps=100e6, rtt_s=0.02)
            net = ModelNetwork(sim, params, listener)
            spec = ExchangeSpec(
                index=0,
                request_headers=request,
                response_headers=response,
                origin="https://a.example",
                response_body_bytes=DECLARED_BYTES if direction == "response" else 10,
                request_body_bytes=DECLARED_BYTES if direction == "request" else 0,
                think_s=0.0,
            )
            net.fetch("https://a.example", spec)
            peak = _peak_bytes_while(lambda: sim.run(until_s=1.0))
            conn = net.conns["https://a.example"]
            sender = conn.t.server if direction == "response" else conn.t.client
            assert peak < 40e6, (protocol, direction, peak)
            assert sender.bytes_sent > 10e6 and not listener.complete, (protocol, direction)


def test_write_padding_writes_the_declared_bytes_in_order_rfc9293_3_10_2():
    """RFC 9293 section 3.10.2 / RFC 9000 section 2.2: a stream delivers the bytes written, in
    order; padding written as shared slices arrives as exactly its size, over the TCP model (C
    and Python) and the QUIC model, with the end of the stream on its last byte."""
    from simulator.engine import Simulator
    from simulator.net.link import Path
    from simulator.net.quic import QuicConnection
    from simulator.net.tcp import TcpConnection
    from simulator.net.transport import PADDING_CHUNK_BYTES, TransportConfig, write_padding

    size = 2 * PADDING_CHUNK_BYTES + 12_345
    for make in (
        lambda s, p: TcpConnection(s, p, TransportConfig()),
        lambda s, p: QuicConnection(s, p, TransportConfig()),
    ):
        sim = Simulator(seed=1)
        conn = make(sim, Path(sim, rtt_s=0.02, bandwidth_bps=100e6, queue_bytes=250_000))
        got, ends = [0], []

        def on_data(stream_id, data, end, time_s):
            assert set(bytes(data)) <= {ord("z")}
            got[0] += len(data)
            if end:
                ends.append(got[0])

        conn.client.on_data = on_data
        sid = conn.server.open_stream(unidirectional=True)
        write_padding(conn.server, sid, size, end=True, fill=b"z")
        sim.run()
        assert got[0] == size and ends == [size], type(conn).__name__


def test_the_collector_is_paused_for_a_model_load_and_resumed_after_it():
    """The page-load model's load runs with the cyclic collector paused (its cycles are the
    load's own state, per resource and connection) and resumes it after, also when the load
    raises; a paused collector stays paused; the load's cycles are collectable after it."""
    import gc

    from simulator.stacks.common import collector_paused

    seen = []
    with collector_paused(True):
        seen.append(gc.isenabled())
    assert seen == [False] and gc.isenabled()
    try:
        with collector_paused(True):
            raise ValueError
    except ValueError:
        pass
    assert gc.isenabled()
    with collector_paused(False):
        assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused(True):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_c_chunk_path_gives_the_python_reference_loads(monkeypatch):
    """``_Conn._client_data``'s fast path in C (``simulator.http._network.ClientData``: a
    chunk that only counts its bytes and meets its stream's marks) gives page loads equal to
    the Python method's, every resource's times and every counter, over h2 and h3, with pushes
    promised, used and cancelled (a warm cache) and 103 hints."""
    from dataclasses import replace as _replace
    from pathlib import Path

    import pytest

    from simulator.http import network
    from simulator.studies import push
    from simulator.traces import load

    if network._NATIVE is None:
        pytest.skip("the C extension is not built")
    native = network._NATIVE
    root = Path(__file__).resolve().parent.parent / "traces"
    for name, protocol, cache in (("synthetic-page.har", "h2", "warm"), ("synthetic-many-origins.har", "h3", "cold")):
        params = _replace(push.PushParams(), protocol=protocol, cache=cache)
        trace = load(str(root / name))
        got = push.run(trace, params).to_dict()
        monkeypatch.setattr(network, "_NATIVE", None)
        want = push.run(trace, params).to_dict()
        monkeypatch.setattr(network, "_NATIVE", native)
        assert got == want


def test_page_graph_resources_are_the_dataclass_s_own():
    """``page_graph`` makes its ``Resource``s without the frozen ``__init__`` (the fields set
    at once): each equals and reads as ``Resource(**fields)``, its fields set in the
    declared order, and ``Resource`` has nothing ``__init__`` would add (no ``__post_init__``,
    no slots, every field given)."""
    import dataclasses

    from simulator.traces.pagegraph import Resource, page_graph
    from simulator.traces.synth import generate

    names = [f.name for f in dataclasses.fields(Resource)]
    assert not hasattr(Resource, "__post_init__") and not hasattr(Resource, "__slots__")
    graph = page_graph(generate(requests=300, seed=3))
    assert len(graph.resources) > 100
    for r in graph.resources:
        assert list(vars(r)) == names
        made = Resource(**vars(r))
        assert made == r and repr(made) == repr(r)


def test_each_resources_frame_is_found_once_down_a_deep_initiator_chain(monkeypatch):
    """A resource's frame (its nearest document ancestor, for the page's render-blocking set) is
    shared down its initiator chain: a chain of 3,000 scripts, each inserted by the one before,
    asks whether a resource is a document about once per resource, not once per ancestor of
    each (a walk per resource cost 71 s of CPU at 20,000)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_push import SITE, _exchange

    from simulator.traces import pagegraph
    from simulator.traces.model import Trace

    n = 3000
    ex = [_exchange(0, f"{SITE}/", "document", 1000)]
    for i in range(1, n):
        parent = f"{SITE}/" if i == 1 else f"{SITE}/s{i - 1}.js"
        ex.append(_exchange(i, f"{SITE}/s{i}.js", "script", 100, initiator=parent, itype="script", priority="Low"))
    calls = 0
    is_document = pagegraph._is_document

    def counted(e):
        nonlocal calls
        calls += 1
        return is_document(e)

    monkeypatch.setattr(pagegraph, "_is_document", counted)
    graph = pagegraph.page_graph(Trace(exchanges=ex, format="har", source="chain.har"))
    assert len(graph) == n and graph.render_blocking == [0]
    assert calls <= 6 * n, calls


def test_exchange_headers_memo_is_the_functions_answer_rfc9113_8_3():
    """RFC 9113 section 8.3 (pseudo-header fields first): ``exchange_headers``' memo (by the
    identity of the lists) gives ``request_headers_for`` and ``response_headers_for``'s own
    answers, cold and warm, for tuples and lists, odd statuses and pseudo-fields out of place;
    and ``urgency``'s look through the names gives the loop's answer (RFC 9218 section 4.1)."""
    from simulator.http.network_server import DEFAULT_URGENCY, urgency
    from simulator.stacks.replay import exchange_headers, request_headers_for, response_headers_for

    responses = [
        ((b":status", b"200"), (b"content-length", b"9"), (b"X-A", b" b ")),
        ((b"server", b"s"), (b":status", b"304")),
        ((b":status", b"103"),),
        ((b":status", b"abc"), (b":status", b"204")),
        (),
    ]
    for request in _odd_lists():
        for response in responses:
            for origin, body in (("https://a.example", 10), (None, 0), ("http://b.example:8080", 0)):
                want = (request_headers_for(request, origin), *response_headers_for(response, body))
                assert exchange_headers(request, response, origin, body) == want
                assert exchange_headers(request, response, origin, body) == want  # warm
                assert exchange_headers(list(request), list(response), origin, body) == want
        assert request_headers_for(request, "https://a.example", 5)[-1] == (b"content-length", b"5")
        assert urgency(request) == DEFAULT_URGENCY
        for value, u in ((b"u=1", 1), (b"i", DEFAULT_URGENCY), (b"u=9", DEFAULT_URGENCY)):
            with_priority = request + ((b"priority", b"i"), (b"priority", value))
            assert urgency(with_priority) == urgency(list(with_priority)) == (u if value != b"i" else DEFAULT_URGENCY)
