"""h2 with the scanner-driven incoming buffer behaves exactly like h2 with its own.

Each scenario is a scripted exchange between a real h2 client and server; it runs once
with h2's stock ``FrameBuffer`` (and hpack's own Huffman decoder) and once per scanner
implementation with ``simulator.frames.h2buffer.install`` on both ends (and the C
Huffman decoder), feeding the bytes in the same random chunks.  The traces (every event
repr, every exception, every byte sent) must be identical.
"""

from __future__ import annotations

import copy
import random
import re

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import hpack
import pytest
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    HeadersFrame,
    PingFrame,
    SettingsFrame,
    WindowUpdateFrame,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.frames import implementations
from simulator.frames.fuzz import mutate
from simulator.frames.h2buffer import ScannerFrameBuffer, install, uninstall_huffman
from simulator.frames.h2frames import frame_classes

IMPLS = sorted(implementations())
_ADDR = re.compile(r" at 0x[0-9a-f]+")


def _clean(text: str) -> str:
    """Object addresses (e.g. ``<memory at 0x...>`` in hpack's messages) differ run to run."""
    return _ADDR.sub(" at 0x?", text)


class RecordingLogger:
    """h2's logger interface (``debug``, ``trace``): keeps every message, formatted --
    among them h2's ``Received frame: %s`` with each frame's repr."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def debug(self, fmt, *args) -> None:
        self.lines.append(_clean(fmt % args))

    trace = debug


class Pair:
    def __init__(self, impl, seed: int, chunking: str = "random", log: bool = False) -> None:
        self.logs = (RecordingLogger(), RecordingLogger()) if log else (None, None)
        self.client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, logger=self.logs[0]))
        self.server = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, validate_inbound_headers=True, logger=self.logs[1])
        )
        if impl is not None:
            install(self.client, impl=impl)
            install(self.server, impl=impl)
            assert isinstance(self.server.incoming_buffer, ScannerFrameBuffer)
        self.rnd = random.Random(seed)
        self.chunking = chunking
        self.trace: list = []

    def _chunks(self, data: bytes):
        if self.chunking == "whole" or not data:
            yield data
            return
        i = 0
        while i < len(data):
            n = self.rnd.choice([1, 2, 5, 9, 10, 64, 1000, 20000])
            yield data[i : i + n]
            i += n

    def deliver(self, sender: str, raw: bytes | None = None) -> None:
        src, dst = (self.client, self.server) if sender == "client" else (self.server, self.client)
        data = src.data_to_send() if raw is None else raw
        self.trace.append((sender, "bytes", data))
        for chunk in self._chunks(data):
            try:
                events = dst.receive_data(chunk)
            except Exception as exc:  # noqa: BLE001 - compare whatever h2 raises
                self.trace.append((sender, "raise", type(exc).__name__, _clean(str(exc))))
                self.trace.append((sender, "after", dst.data_to_send()))
                return
            self.trace.append((sender, "events", [_clean(repr(e)) for e in events]))
            for e in events:
                self.on_event(dst, e)

    def on_event(self, conn, event) -> None:
        if isinstance(event, h2.events.DataReceived) and event.flow_controlled_length:
            if conn.state_machine.state != h2.connection.ConnectionState.CLOSED:
                try:
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                except h2.exceptions.StreamClosedError:
                    pass

    def both(self, rounds: int = 3) -> None:
        for _ in range(rounds):
            self.deliver("client")
            self.deliver("server")


def send(conn, sid: int, data: bytes, end: bool = False, pad: int | None = None) -> None:
    """Send as much of ``data`` as flow control allows, in frames h2 accepts."""
    step = conn.max_outbound_frame_size - (0 if pad is None else pad + 1)
    window = conn.local_flow_control_window(sid)
    data = data[: max(0, window - 300)] if len(data) > window - 300 else data
    for i in range(0, len(data), step):
        piece = data[i : i + step]
        conn.send_data(sid, piece, end_stream=end and i + step >= len(data), pad_length=pad)
    if not data and end:
        conn.send_data(sid, b"", end_stream=True)


def req(path: str = "/", extra=()):
    return [(":method", "GET"), (":path", path), (":scheme", "https"), (":authority", "example.com"), *extra]


def s_basic(p: Pair) -> None:
    p.client.initiate_connection()
    p.server.initiate_connection()
    p.client.send_headers(1, req(), end_stream=True)
    p.both(1)
    p.server.send_headers(1, [(":status", "200"), ("content-type", "text/plain")])
    send(p.server, 1, b"hello world" * 100, end=True)
    p.both(2)


def s_many_streams_flow_control(p: Pair) -> None:
    p.client.initiate_connection()
    p.server.initiate_connection()
    p.both(1)
    for k in range(8):
        sid = 1 + 2 * k
        p.client.send_headers(
            sid, [(":method", "POST"), (":path", f"/up/{k}"), (":scheme", "https"), (":authority", "example.com")]
        )
        send(p.client, sid, bytes([k]) * (5000 + 3000 * k), end=True)
    p.both(2)
    for k in range(8):
        sid = 1 + 2 * k
        p.server.send_headers(sid, [(":status", "200")])
        send(p.server, sid, b"x" * 40000, pad=k if k % 2 else None)
    p.both(3)


def s_continuation(p: Pair) -> None:
    p.client.initiate_connection()
    p.server.initiate_connection()
    p.both(1)
    big = [("x-big-%d" % i, "v" * 3000 + str(i)) for i in range(20)]  # > 16 KiB: CONTINUATION
    p.client.send_headers(1, req("/big", big), end_stream=True)
    p.both(1)
    p.server.send_headers(1, [(":status", "200"), *big])
    p.server.send_data(1, b"body")
    p.server.send_headers(1, [("x-trailer", "t" * 20000)], end_stream=True)  # trailers in CONTINUATIONs
    p.both(2)


def s_control(p: Pair) -> None:
    p.client.initiate_connection()
    p.server.initiate_connection()
    p.both(1)
    p.client.ping(b"12345678")
    p.client.update_settings(
        {h2.settings.SettingCodes.MAX_FRAME_SIZE: 32768, h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 20}
    )
    p.server.update_settings({h2.settings.SettingCodes.MAX_FRAME_SIZE: 65536})
    p.both(2)
    p.client.send_headers(1, req("/a"), end_stream=False)
    p.client.prioritize(1, weight=200, depends_on=0, exclusive=False)
    send(p.client, 1, b"q" * 60000, end=True)
    p.client.send_headers(3, req("/b"), end_stream=True)
    p.both(1)
    p.server.push_stream(1, 2, req("/pushed"))
    p.server.send_headers(2, [(":status", "200")], end_stream=False)
    send(p.server, 2, b"pushed!" * 5000, end=True)
    p.server.reset_stream(3, error_code=8)
    p.server.send_headers(1, [(":status", "200")], end_stream=True)
    p.both(2)
    p.client.increment_flow_control_window(100000)
    p.server.close_connection(error_code=0, additional_data=b"bye")
    p.both(1)


# Malformed input, each fed to a server after a valid client start.
def _frames(*frames) -> bytes:
    return b"".join(f.serialize() for f in frames)


def _raw(length: int, ftype: int, flags: int, sid: int, payload: bytes) -> bytes:
    return length.to_bytes(3, "big") + bytes([ftype, flags]) + sid.to_bytes(4, "big") + payload


BAD_INPUTS = {
    "bad-preface": b"PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n",
    "data-stream-0": _raw(3, 0, 0, 0, b"abc"),
    "settings-length": _raw(5, 4, 0, 0, b"\x00" * 5),
    "settings-stream": _raw(6, 4, 0, 3, b"\x00\x03\x00\x00\x00\x64"),
    "ping-length": _raw(7, 6, 0, 0, b"1234567"),
    "window-update-length": _raw(3, 8, 0, 0, b"\x00\x00\x01"),
    "priority-length": _raw(4, 2, 0, 1, b"\x00\x00\x00\x00"),
    "too-large": _raw(20000, 0, 0, 1, b"\x00" * 20000),
    "too-large-header-only": _raw(20000, 0, 0, 1, b""),
    "padding": _raw(4, 0, 0x8, 1, b"\x09abc"),
    "padding-equal-to-length": _raw(3, 0, 0x8, 1, b"\x03ab"),  # RFC 9113 6.1: padding too long
    "padded-empty-data": _raw(3, 0, 0x9, 1, b"\x02\x00\x00"),  # valid: no data, 2 bytes of padding
    "padded-no-pad-length": _raw(0, 0, 0x8, 1, b""),  # PADDED without its Pad Length byte
    "data-unknown-flags": _raw(2, 0, 0xF6, 1, b"ok"),  # undefined flags are ignored (4.1)
    "data-in-header-block": _raw(1, 1, 0, 1, b"\x82") + _raw(2, 0, 0, 1, b"no"),  # RFC 9113 6.10
    "data-idle-stream": _raw(2, 0, 0, 7, b"no"),  # RFC 9113 5.1: idle stream
    # Incomplete frames whose header alone is wrong (h2 rejects them before the payload is in):
    "partial-data-stream-0": _raw(100, 0, 0, 0, b"ab"),
    "partial-settings-stream-3": _raw(60, 4, 0, 3, b"\x00\x03"),
    "partial-goaway-stream-1": _raw(60, 7, 0, 1, b"\x00"),
    "partial-window-update-stream-0": _raw(60, 8, 0, 0, b"\x00"),  # either kind of stream: no error yet
    "interleaved-continuation": (_raw(1, 1, 0, 1, b"\x82") + _raw(8, 6, 0, 0, b"12345678")),
    "lonely-continuation": _raw(1, 9, 0x4, 1, b"\x82"),
    "unknown-type": _raw(5, 0x77, 0xFF, 9, b"hello") + _frames(PingFrame(0, opaque_data=b"abcdefgh")),
    "bad-hpack": _frames(HeadersFrame(1, data=b"\xff\xff\xff\xff", flags=["END_HEADERS", "END_STREAM"])),
    "bad-huffman": _frames(
        HeadersFrame(1, data=b"\x82\x86\x84\x41\x83\xff\xff\xff", flags=["END_HEADERS", "END_STREAM"])
    ),
    # HEADERS that end their block (the scanner builds those itself), RFC 9113 section 6.2:
    "headers-padded-priority": _raw(
        15, 1, 0x2D, 3, b"\x03" + b"\x80\x00\x00\x01\x10" + b"\x82\x86\x84\x41\x01x" + b"\x00" * 3
    ),
    "headers-padding-too-long": _raw(4, 1, 0x0C, 3, b"\x03\x82\x86\x84"),  # padding not shorter than the rest
    "headers-priority-short": _raw(3, 1, 0x24, 3, b"\x00\x00\x00"),  # PRIORITY without its 5 bytes
    "headers-stream-0": _raw(1, 1, 0x04, 0, b"\x82"),
    "headers-in-header-block": _raw(1, 1, 0, 3, b"\x82") + _raw(1, 1, 0x04, 3, b"\x82"),  # RFC 9113 6.10
}


def _client_start() -> bytes:
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    c.send_headers(1, req(), end_stream=False)
    c.send_data(1, b"abc" * 1000, end_stream=False)
    return c.data_to_send()


def run_bad(p: Pair, bad: bytes, with_start: bool = True) -> None:
    p.server.initiate_connection()
    if bad.startswith(b"PRI"):
        p.deliver("client", bad)
        return
    p.deliver("client", (_client_start() if with_start else b"") + bad)
    p.deliver("client", _frames(PingFrame(0, opaque_data=b"zzzzzzzz")))


SCENARIOS = {
    "basic": s_basic,
    "many-streams": s_many_streams_flow_control,
    "continuation": s_continuation,
    "control": s_control,
}


def _trace(impl, scenario, seed, chunking, log=False):
    uninstall_huffman()
    p = Pair(impl, seed, chunking, log)
    try:
        scenario(p)
    finally:
        uninstall_huffman()
    return (p.trace, p.logs[0].lines, p.logs[1].lines) if log else p.trace


@pytest.mark.parametrize("impl_name", IMPLS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("chunking", ["whole", "random"])
def test_h2_exchanges_identical(impl_name, name, chunking):
    impl = implementations()[impl_name]
    for seed in range(3 if chunking == "random" else 1):
        baseline = _trace(None, SCENARIOS[name], seed, chunking)
        ours = _trace(impl, SCENARIOS[name], seed, chunking)
        assert ours == baseline
        assert any(kind == "events" and events for _, kind, *rest in baseline for events in rest[:1])


@pytest.mark.parametrize("impl_name", IMPLS)
@pytest.mark.parametrize("bad", sorted(BAD_INPUTS))
def test_h2_malformed_identical(impl_name, bad):
    impl = implementations()[impl_name]
    for seed, chunking in ((0, "whole"), (1, "random"), (2, "random")):
        baseline = _trace(None, lambda p: run_bad(p, BAD_INPUTS[bad]), seed, chunking)
        ours = _trace(impl, lambda p: run_bad(p, BAD_INPUTS[bad]), seed, chunking)
        assert ours == baseline


@pytest.mark.parametrize("impl_name", IMPLS)
def test_h2_mutated_streams_identical(impl_name):
    """Mutations of a real client byte stream: same events or same exception, chunk by chunk."""
    impl = implementations()[impl_name]
    rnd = random.Random(7)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    c.send_headers(1, req("/x", [("x-a", "b" * 40000)]), end_stream=False)
    c.send_data(1, b"d" * 3000, end_stream=True)
    c.ping(b"pingping")
    c.send_headers(3, req("/y"), end_stream=True)
    valid = c.data_to_send()
    extra = _frames(
        SettingsFrame(0, settings={4: 100}),
        WindowUpdateFrame(0, window_increment=5),
        DataFrame(3, data=b"late", flags=["PADDED"], pad_length=3),
        HeadersFrame(5, data=b"\x82", flags=["PADDED"], pad_length=2),
        ContinuationFrame(5, data=b"\x84", flags=["END_HEADERS"]),
    )
    base = valid + extra
    for _ in range(120):
        data = base[:24] + mutate(rnd, base[24:], [base[24:]])
        seed = rnd.randrange(1000)

        def scenario(p, data=data):
            p.server.initiate_connection()
            p.deliver("client", data)

        assert _trace(impl, scenario, seed, "random") == _trace(None, scenario, seed, "random")


def test_install_refuses_a_used_connection():
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    conn.receive_data(b"PRI * HTTP/2.0\r\n")
    with pytest.raises(RuntimeError):
        install(conn)


def _flood_client(impl):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    if impl is not None:
        install(conn, impl=impl, huffman=False)
    conn.initiate_connection()
    conn.send_headers(1, req("/flood"), end_stream=True)
    return conn


def _receive_measured(conn, data: bytes):
    import tracemalloc

    tracemalloc.start()
    try:
        conn.receive_data(data)
        error = None
    except h2.exceptions.ProtocolError as exc:
        error = str(exc)
    peak_bytes = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return error, peak_bytes


@pytest.mark.parametrize("impl_name", IMPLS)
def test_frame_flood_rejected_at_first_bad_frame_with_bounded_memory(impl_name):
    """RFC 9113 section 4.1: a frame's length is 24 bits; a peer writing a 2^24-byte body
    with a wrapped length of 0 leaves 16 MiB of zeros, i.e. ~1.86 million empty DATA
    frames on stream 0 (a connection error, RFC 9113 section 6.1).  h2's own buffer
    rejects the second frame after the wrap; the scanner buffer must reject it as early
    (the same error), queue at most one scan slice of frames, and peak within 2x of stock
    h2's memory -- not scan and queue the whole read first (it once took 273 MiB)."""
    from simulator.frames.h2buffer import SCAN_SLICE_BYTES

    impl = implementations()[impl_name]
    headers = HeadersFrame(1, data=hpack.Encoder().encode([(":status", "200")]), flags=["END_HEADERS"])
    wrapped = bytes([0, 0, 0, 0x0, 0x0, 0, 0, 0, 1])  # DATA, length 0 (2^24 wrapped), stream 1
    flood = _frames(SettingsFrame(0), headers) + wrapped + bytes(1 << 24)

    stock_error, stock_peak = _receive_measured(_flood_client(None), flood)
    conn = _flood_client(impl)
    error, peak = _receive_measured(conn, flood)
    assert stock_error is not None and "non-zero" in stock_error
    assert error == stock_error
    assert peak <= 2 * stock_peak, (peak, stock_peak)
    scanner = conn.incoming_buffer._scanner
    assert len(scanner) <= SCAN_SLICE_BYTES // 9 + 1  # records of one feed: all ever queued at once
    assert scanner.offset <= len(flood) - (1 << 24) + SCAN_SLICE_BYTES  # the rest never scanned


@pytest.mark.parametrize("impl_name", IMPLS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_h2_trace_log_identical(impl_name, name):
    """h2 logs ``repr(frame)`` of every frame it receives: the DATA frames the scanner
    builds must print exactly as hyperframe's (padded or not, END_STREAM or not)."""
    impl = implementations()[impl_name]
    baseline = _trace(None, SCENARIOS[name], 1, "random", log=True)
    ours = _trace(impl, SCENARIOS[name], 1, "random", log=True)
    assert ours == baseline
    received = [line for line in baseline[1] + baseline[2] if line.startswith("Received frame: DataFrame")]
    assert received


# --------------------------------------------------------------------------------------
# The DATA frames H2Scanner.next_frame builds, against hyperframe's


def _raw_data_frames():
    """DATA frames (RFC 9113 section 6.1) that hyperframe accepts or rejects: any stream
    id, any flags byte, padded or not, with a Pad Length that fits or does not."""

    def build(sid, flags, data, pad, lie):
        if flags & 0x8:
            pad_length = max(0, min(255, pad + lie))  # lie: a Pad Length beyond the padding
            payload = bytes([pad_length]) + data + bytes(pad)
        else:
            payload = data
        return _raw(len(payload), 0, flags, sid, payload)

    return st.builds(
        build,
        st.sampled_from([0, 1, 2, 3, 0x7FFFFFFF, 0x80000001]),
        st.integers(0, 255),
        st.binary(max_size=40),
        st.integers(0, 20),
        st.sampled_from([0, 0, 0, 1, 5, 300]),
    )


def _hyperframe_data(wire: bytes):
    try:
        frame, length = Frame.parse_frame_header(memoryview(wire[:9]))
        frame.parse_body(memoryview(wire[9 : 9 + length]))
    except Exception:  # noqa: BLE001 - any rejection: the frame goes through hyperframe in h2buffer
        return None
    return frame


def _same_as_hyperframe(mine, ref) -> None:
    assert type(mine).__name__ == type(ref).__name__ == "DataFrame"
    assert isinstance(mine, DataFrame)
    assert list(vars(mine)) == list(vars(ref))  # same attributes, set in the same order
    assert {k: v for k, v in vars(mine).items() if k != "flags"} == {k: v for k, v in vars(ref).items() if k != "flags"}
    assert type(mine.flags) is type(ref.flags)
    assert list(vars(mine.flags)) == list(vars(ref.flags))
    assert mine.flags._valid_flags == ref.flags._valid_flags and mine.flags._flags == ref.flags._flags
    assert type(mine.data) is bytes
    assert repr(mine) == repr(ref) == Frame.__repr__(mine)
    assert mine.flow_controlled_length == ref.flow_controlled_length
    assert ("END_STREAM" in mine.flags) == ("END_STREAM" in ref.flags)
    assert mine.serialize() == ref.serialize()


@settings(max_examples=400, deadline=None)
@given(_raw_data_frames(), st.sampled_from([0, 5, 16384, (1 << 24) - 1]))
def test_scanner_data_frames_are_hyperframes(wire, max_frame_size):
    """A DATA frame is built by the scanner exactly when hyperframe accepts it and it fits
    SETTINGS_MAX_FRAME_SIZE (RFC 9113 sections 4.2, 6.1); it then equals hyperframe's
    object attribute by attribute, repr included.  Otherwise it is left to hyperframe."""
    ref = _hyperframe_data(wire)
    length = int.from_bytes(wire[:3], "big")
    for impl in implementations().values():
        frame_classes(impl)
        sc = impl.H2Scanner((1 << 24) - 1, preface=False, validate=False)
        got = sc.next_frame(bytearray(wire), 0, max_frame_size, 8192)
        if ref is not None and length <= max_frame_size:
            assert type(got) in frame_classes(impl)
            _same_as_hyperframe(got, ref)
            assert sc.consumed == len(wire)
            assert sc.next_frame(bytearray(wire), 0, max_frame_size, 8192) is None
        else:
            assert got == (0, wire[4], int.from_bytes(wire[5:9], "big") & 0x7FFFFFFF, 9, length)
            assert sc.consumed == 0  # left for hyperframe until consume()
            sc.consume()
            assert sc.consumed == len(wire)


def _edits():
    """Changes a program could make to a frame object after h2 got it."""
    return {
        "none": lambda f: None,
        "data-memoryview": lambda f: setattr(f, "data", memoryview(b"0123456789abcdef")),
        "data-bytearray": lambda f: setattr(f, "data", bytearray(b"xyz")),
        "data-str": lambda f: setattr(f, "data", "text"),
        "data-empty": lambda f: setattr(f, "data", b""),
        "data-long": lambda f: setattr(f, "data", bytes(range(256)) * 100),
        "pad-300": lambda f: setattr(f, "pad_length", 300),
        "pad-255": lambda f: setattr(f, "pad_length", 255),
        "pad-negative": lambda f: setattr(f, "pad_length", -1),
        "pad-bool": lambda f: setattr(f, "pad_length", True),
        "pad-huge": lambda f: setattr(f, "pad_length", 1 << 70),
        "flags-add": lambda f: f.flags.add("PADDED"),
        "flags-discard": lambda f: f.flags.discard("PADDED"),
        "flags-replaced": lambda f: setattr(f, "flags", "PADDED"),
        "flags-frozen": lambda f: setattr(f.flags, "_flags", frozenset(["END_STREAM"])),
        "flags-unsortable": lambda f: f.flags._flags.add(3),
        "sid-bool": lambda f: setattr(f, "stream_id", True),
        "sid-huge": lambda f: setattr(f, "stream_id", 1 << 80),
        "sid-str": lambda f: setattr(f, "stream_id", "seven"),
        "del-data": lambda f: delattr(f, "data"),
        "del-stream-id": lambda f: delattr(f, "stream_id"),
        "del-flags-set": lambda f: delattr(f.flags, "_flags"),
        "subclass": lambda f: setattr(f, "__class__", type("DataFrame", (type(f),), {"__slots__": ()})),
    }


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - compare whatever is raised
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("impl_name", IMPLS)
@pytest.mark.parametrize("edit", sorted(_edits()))
@pytest.mark.parametrize(
    "wire",
    [
        _raw(13, 0, 0x9, 5, b"\x02" + b"0123456789" + b"\x00\x00"),
        _raw(4, 0, 0x0, 5, b"abcd"),
        _raw(0, 0, 0x1, 5, b""),
        _raw(11, 0, 0x8, 5, b"\x0a" + bytes(10)),
    ],
    ids=["padded", "plain", "empty", "all-padding"],
)
def test_data_frame_repr_is_hyperframes_after_edits(impl_name, edit, wire):
    """The scanner's repr gives hyperframe's string (or hyperframe's exception) whatever a
    program did to the frame: unusual attribute values go to hyperframe's own repr."""
    impl = implementations()[impl_name]
    frame_classes(impl)
    frames = [
        impl.H2Scanner((1 << 24) - 1, preface=False, validate=False).next_frame(wire, 0, 16384, 8192) for _ in range(2)
    ]
    for f in frames:
        _edits()[edit](f)
    # hyperframe's repr may convert a memoryview in .data to bytes: one frame each.
    assert _outcome(lambda: repr(frames[0])) == _outcome(lambda: Frame.__repr__(frames[1]))


@pytest.mark.parametrize("impl_name", IMPLS)
def test_next_frame_contract(impl_name):
    """next_frame's bookkeeping: lazy scanning in slices, records left until consume(),
    the buffer's base offset checked, bad arguments refused."""
    impl = implementations()[impl_name]
    frame_classes(impl)
    ping = _frames(PingFrame(0, opaque_data=b"abcdefgh"))
    data = _raw(3, 0, 0x1, 1, b"abc")
    wire = bytearray(ping + data + data[:10])
    sc = impl.H2Scanner((1 << 24) - 1, preface=False, validate=False)
    assert sc.next_frame(wire, 0, 16384, 4) == (6, 0, 0, 9, 8)  # a PING record
    assert sc.offset == 20  # scanned 4 bytes at a time, no further
    assert sc.next_frame(wire, 0, 16384, 4) == (6, 0, 0, 9, 8)  # not consumed yet
    sc.consume()
    assert sc.consumed == 17
    del wire[:17]
    frame = sc.next_frame(wire, 17, 16384, 4)
    assert frame.data == b"abc" and frame.stream_id == 1 and "END_STREAM" in frame.flags
    assert sc.consumed == 29
    assert sc.next_frame(wire, 17, 16384, 4) is None  # the rest is a partial frame
    assert sc.current == (0, 1, 1, 38, 3)
    with pytest.raises(ValueError, match="no frame to consume"):
        sc.consume()
    with pytest.raises(ValueError, match="beyond the scanned offset"):
        sc.next_frame(wire, 10**6, 16384, 4)
    with pytest.raises(ValueError, match="slice_bytes"):
        sc.next_frame(wire, 17, 16384, 0)
    with pytest.raises(ValueError, match="negative"):
        sc.next_frame(wire, -1, 16384, 4)
    wire += data[10:] + data + data
    frame = sc.next_frame(wire, 17, 16384, 8192)  # scans the rest: two more frames queued
    assert frame.data == b"abc" and len(sc) == 3
    with pytest.raises(ValueError, match="does not hold the frame"):
        sc.next_frame(wire[:30], 17, 16384, 8192)  # a buffer too short for the next one


def test_install_maps_the_scanner_classes_to_h2s_handlers():
    for impl in implementations().values():
        conn = install(h2.connection.H2Connection(), impl=impl)
        for built, hyperframe_cls in frame_classes(impl).items():
            assert issubclass(built, hyperframe_cls)
            assert conn._frame_dispatch_table[built] == conn._frame_dispatch_table[hyperframe_cls]


@pytest.mark.parametrize("impl_name", IMPLS)
def test_scanner_data_frames_pickle_and_copy_like_hyperframes(impl_name):
    import copy
    import pickle

    impl = implementations()[impl_name]
    frame_classes(impl)
    wire = _raw(6, 0, 0x9, 3, b"\x01abcd\x00")
    mine = impl.H2Scanner((1 << 24) - 1, preface=False, validate=False).next_frame(wire, 0, 16384, 8192)
    ref = _hyperframe_data(wire)
    for clone in (pickle.loads(pickle.dumps(mine)), copy.copy(mine), copy.deepcopy(mine)):
        assert type(clone) is type(mine)
        _same_as_hyperframe(clone, ref)
    assert copy.copy(mine).flags is mine.flags and copy.deepcopy(mine).flags is not mine.flags


# --------------------------------------------------------------------------------------
# The HEADERS frames H2Scanner.next_frame builds, against hyperframe's


def _raw_headers_frames():
    """HEADERS frames (RFC 9113 section 6.2) that hyperframe accepts or rejects: any
    stream id and flags byte, padded or not, with or without priority fields, with a Pad
    Length that fits or does not, and payloads too short for what the flags announce."""

    def build(sid, flags, block, pad, lie, dep, weight, cut):
        payload = b""
        if flags & 0x8:
            payload += bytes([max(0, min(255, pad + lie))])
        if flags & 0x20:
            payload += dep.to_bytes(4, "big") + bytes([weight])
        payload += block + (bytes(pad) if flags & 0x8 else b"")
        payload = payload[: max(0, len(payload) - cut)]
        return _raw(len(payload), 1, flags, sid, payload)

    return st.builds(
        build,
        st.sampled_from([0, 1, 2, 3, 0x7FFFFFFF, 0x80000001]),
        st.integers(0, 255),
        st.binary(max_size=40),
        st.integers(0, 20),
        st.sampled_from([0, 0, 0, 1, 5, 300]),
        st.sampled_from([0, 1, 3, 0x7FFFFFFF, 0x80000003, 0xFFFFFFFF]),
        st.integers(0, 255),
        st.sampled_from([0, 0, 0, 1, 3, 6, 30]),
    )


def _same_headers_as_hyperframe(mine, ref) -> None:
    assert type(mine).__name__ == type(ref).__name__ == "HeadersFrame"
    assert isinstance(mine, HeadersFrame)
    assert list(vars(mine)) == list(vars(ref))  # same attributes, set in the same order
    assert {k: v for k, v in vars(mine).items() if k != "flags"} == {k: v for k, v in vars(ref).items() if k != "flags"}
    assert [type(v) for k, v in vars(mine).items()] == [type(v) for k, v in vars(ref).items()]
    assert type(mine.flags) is type(ref.flags)
    assert list(vars(mine.flags)) == list(vars(ref.flags))
    assert mine.flags._valid_flags == ref.flags._valid_flags and mine.flags._flags == ref.flags._flags
    assert repr(mine) == repr(ref) == Frame.__repr__(mine)
    # serialize() sets body_len to the serialized body (Pad Length byte included): on copies.
    assert copy.copy(mine).serialize() == copy.copy(ref).serialize()


@settings(max_examples=600, deadline=None)
@given(_raw_headers_frames(), st.sampled_from([0, 5, 16384, (1 << 24) - 1]))
def test_scanner_headers_frames_are_hyperframes(wire, max_frame_size):
    """A HEADERS frame is built by the scanner exactly when hyperframe accepts it, it fits
    SETTINGS_MAX_FRAME_SIZE and it ends its header block (END_HEADERS; RFC 9113 sections
    4.2, 6.2, 6.10); it then equals hyperframe's object attribute by attribute (Pad
    Length, the priority fields' E bit, dependency and weight), repr included.  Otherwise
    it is left to hyperframe."""
    ref = _hyperframe_data(wire)
    length = int.from_bytes(wire[:3], "big")
    for impl in implementations().values():
        frame_classes(impl)
        sc = impl.H2Scanner((1 << 24) - 1, preface=False, validate=False)
        got = sc.next_frame(bytearray(wire), 0, max_frame_size, 8192)
        if ref is not None and length <= max_frame_size and "END_HEADERS" in ref.flags:
            assert type(got) in frame_classes(impl)
            _same_headers_as_hyperframe(got, ref)
            assert sc.consumed == len(wire)
        else:
            assert got == (1, wire[4], int.from_bytes(wire[5:9], "big") & 0x7FFFFFFF, 9, length)
            assert sc.consumed == 0  # left for hyperframe until consume()


def _headers_edits():
    """Changes a program (or h2's header-block assembly) could make to a HEADERS frame."""
    return {
        "none": lambda f: None,
        "data-joined": lambda f: setattr(f, "data", b"".join([f.data, b"more-header-block-bytes"])),
        "data-memoryview": lambda f: setattr(f, "data", memoryview(b"0123456789abcdef")),
        "data-str": lambda f: setattr(f, "data", "text"),
        "data-empty": lambda f: setattr(f, "data", b""),
        "exclusive-int": lambda f: setattr(f, "exclusive", 1),
        "depends-on-bool": lambda f: setattr(f, "depends_on", True),
        "weight-str": lambda f: setattr(f, "stream_weight", "16"),
        "flags-add": lambda f: f.flags.add("END_HEADERS"),
        "flags-replaced": lambda f: setattr(f, "flags", "PADDED"),
        "flags-unsortable": lambda f: f.flags._flags.add(3),
        "sid-huge": lambda f: setattr(f, "stream_id", 1 << 80),
        "del-data": lambda f: delattr(f, "data"),
        "del-exclusive": lambda f: delattr(f, "exclusive"),
        "del-flags-set": lambda f: delattr(f.flags, "_flags"),
        "subclass": lambda f: setattr(f, "__class__", type("HeadersFrame", (type(f),), {"__slots__": ()})),
    }


@pytest.mark.parametrize("impl_name", IMPLS)
@pytest.mark.parametrize("edit", sorted(_headers_edits()))
@pytest.mark.parametrize(
    "wire",
    [
        _raw(31, 1, 0x2D, 5, b"\x02" + b"\x80\x00\x00\x03\x0f" + b"0123456789abcdef" + b"\x00\x00" + b"\x00" * 7),
        _raw(4, 1, 0x5, 5, b"abcd"),
        _raw(0, 1, 0x4, 5, b""),
    ],
    ids=["padded-priority", "plain", "empty"],
)
def test_headers_frame_repr_is_hyperframes_after_edits(impl_name, edit, wire):
    """The scanner's HEADERS repr gives hyperframe's string (or hyperframe's exception)
    whatever was done to the frame: unusual attribute values go to hyperframe's own repr."""
    impl = implementations()[impl_name]
    frame_classes(impl)
    frames = [
        impl.H2Scanner((1 << 24) - 1, preface=False, validate=False).next_frame(wire, 0, 16384, 8192) for _ in range(2)
    ]
    assert all(type(f).__name__ == "HeadersFrame" for f in frames)
    for f in frames:
        _headers_edits()[edit](f)
    assert _outcome(lambda: repr(frames[0])) == _outcome(lambda: Frame.__repr__(frames[1]))


@pytest.mark.parametrize("impl_name", IMPLS)
def test_scanner_headers_frames_pickle_and_copy_like_hyperframes(impl_name):
    import pickle

    impl = implementations()[impl_name]
    frame_classes(impl)
    wire = _raw(12, 1, 0x25, 3, b"\x00\x00\x00\x01\x20" + b"abcdefg")
    mine = impl.H2Scanner((1 << 24) - 1, preface=False, validate=False).next_frame(wire, 0, 16384, 8192)
    ref = _hyperframe_data(wire)
    for clone in (pickle.loads(pickle.dumps(mine)), copy.copy(mine), copy.deepcopy(mine)):
        assert type(clone) is type(mine)
        _same_headers_as_hyperframe(clone, ref)
