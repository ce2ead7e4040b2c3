"""The real ``h2`` stack over the TCP model, in virtual time.  Written by hand.

One ``h2.connection.H2Connection`` client and one server per origin over one
``TcpConnection`` (with its three-way handshake), and by default TLS 1.3 between them:
the real OpenSSL over memory BIOs (``tls.TlsEnd``), ALPN ``h2`` (RFC 9113 section 3.2).
The handshake flights and every application record travel as TCP bytes, so the
handshake's round trip and the records' 22 bytes each are paid on the simulated path,
and a record is opened only when all of it has arrived.  The client sends its
connection preface after its TLS Finished; the server its SETTINGS after the
client's Finished (no 0.5-RTT data).  Timeline without loss, ``d`` = one-way delay:
SYN at 0, ClientHello at 2d (after the SYN-ACK), the server's flight at 3d, the client's
Finished, preface and first requests at 4d, the first response leaves the server at
5d and arrives at 6d = 3 RTT (plus serialisation and think time).  With ``tls=False``:
cleartext HTTP/2 with prior knowledge (RFC 9113 section 3.3), the request leaving at
2d and the response arriving at 2 RTT.

Everything ``data_to_send()`` returns is written (through TLS, or directly) into the
``TcpConnection`` byte stream (one stream label, 0, for the whole connection: HTTP/2
multiplexes inside it), and every in-order delivery (``on_data``) goes (through TLS) to
``receive_data()``.  Both connections read frames through
``simulator.frames.h2buffer.install`` (the C scanner-driven incoming buffer).

h2 has no clock: the only time-dependent behaviour is the TCP model's, which runs on
the engine.  Flow control (RFC 9113 section 6.9): both ends announce
``flow_window_bytes`` as SETTINGS_INITIAL_WINDOW_SIZE and open the connection window
by the same amount, and hand every received DATA byte back at once
(``acknowledge_received_data``), so a comparison with the transport models (which
have no flow control) is not limited by windows.  Body bytes a window does not admit
stay queued and go out on the next WINDOW_UPDATE.

Frames sent are counted by type with the frame scanner on each direction's plaintext
(``frames_sent``), so a capture can be checked against them.
"""

from __future__ import annotations

from collections import Counter

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from ..engine import Simulator
from ..frames import H2Scanner, h2_type_name
from ..frames.h2buffer import install
from ..net.link import Path
from ..net.tcp import TcpConnection
from ..net.transport import TransportConfig
from .common import Recorder, StackParams
from .endpoint import Endpoint
from .tls import TlsContexts, TlsEnd, contexts, sni_name

__all__ = ["H2Session", "H2End"]

TCP_STREAM = 0  # the TCP model's stream label for the whole HTTP/2 connection
_PREFACE_LEN = 24  # RFC 9113 section 3.4


class _H2End(Endpoint):
    """One HTTP/2 end: an ``H2Connection`` and its side of the TCP connection."""

    def __init__(self, session: "H2Session", *, is_client: bool, tcp_end, tls: TlsContexts | None) -> None:
        super().__init__(session, is_client=is_client)
        config = h2.config.H2Configuration(client_side=is_client, header_encoding=None)
        conn = h2.connection.H2Connection(config=config)
        window = min(self.params.flow_window_bytes, 2**31 - 1)
        conn.local_settings = h2.settings.Settings(
            client=is_client,
            initial_values={
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window,
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000,
            },
        )
        install(conn)
        self.conn = conn
        self.tcp = tcp_end
        self.frames_sent: Counter = Counter()
        self._out = bytearray()  # frames taken from h2 but not yet written to TCP
        self._scanner = H2Scanner((1 << 24) - 1, preface=is_client, validate=False)
        tcp_end.on_data = self._on_tcp_data
        self.tls: TlsEnd | None = None
        self._send = self._write_tcp
        if tls is not None:
            self.tls = TlsEnd(
                tls, is_client=is_client, write_ciphertext=self._write_tcp, server_hostname=sni_name(session.origin)
            )
            self._send = self.tls.send
        conn.initiate_connection()
        if window > 65535:  # RFC 9113 section 6.9.2: the connection window starts at 65,535
            conn.increment_flow_control_window(window - 65535)
        self.flush()

    # -- primitives ----------------------------------------------------------------
    def _writable(self, stream_id: int) -> int:
        try:
            window = self.conn.local_flow_control_window(stream_id)
        except h2.exceptions.StreamClosedError:
            return 0
        return min(window, self.conn.max_outbound_frame_size)

    def _write_headers(self, stream_id: int, headers, end: bool) -> tuple[int, int]:
        # Drain what h2 had queued, so the bytes send_headers adds are exactly this
        # header section's HEADERS (+ CONTINUATION) frames; flush() sends both in order.
        self._out += self.conn.data_to_send()
        self.conn.send_headers(stream_id, headers, end_stream=end)
        frames = self.conn.data_to_send()
        self._out += frames
        return len(frames), 0

    def _write_data(self, stream_id: int, data: bytes, end: bool) -> None:
        self.conn.send_data(stream_id, data, end_stream=end)

    def _write_reset(self, stream_id: int) -> None:
        self.conn.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)

    def _open_stream(self) -> int:
        return self.conn.get_next_available_stream_id()

    def _push(self, stream_id: int, request_headers) -> int:
        # RFC 9113 section 8.4: server-initiated streams are even.
        pushed = self.conn.get_next_available_stream_id()
        self.conn.push_stream(stream_id, pushed, request_headers)
        return pushed

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if self._out:
            data = bytes(self._out) + data
            self._out.clear()
        if data:
            if self._scanner.feed(data):
                for ftype, *_ in self._scanner.results():
                    self.frames_sent[h2_type_name(ftype)] += 1
            self._send(data)

    def _write_tcp(self, data: bytes) -> None:
        self.tcp.write(TCP_STREAM, data)

    def send_extension_frame(self, frame_type: int, payload: bytes, stream_id: int = 0) -> None:
        """Write a frame type h2 has no API for (e.g. ORIGIN, type 0xc, RFC 8336): a
        hyperframe ``ExtensionFrame``, after what h2 has queued.  Its ``body_len`` is set
        here: the constructor leaves it at 0 (hyperframe sets it only when parsing)."""
        from hyperframe.frame import ExtensionFrame

        frame = ExtensionFrame(type=frame_type, stream_id=stream_id, body=payload)
        frame.body_len = len(payload)
        self._out += self.conn.data_to_send()
        self._out += frame.serialize()
        self.flush()

    # -- incoming ------------------------------------------------------------------
    def _on_tcp_data(self, _stream: int, data: bytes, _end: bool, _time_s: float) -> None:
        if self.tls is not None:
            data = self.tls.receive(data)
            if not data:
                self.pump()  # the handshake may have released held bytes
                return
        events = self.conn.receive_data(data)
        for event in events:
            self._handle(event)
        self.pump()

    def _handle(self, event) -> None:
        conn = self.conn
        if isinstance(event, h2.events.DataReceived):
            if event.flow_controlled_length:
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if self.is_client:
                self.on_response_data(event.stream_id, len(event.data), event.stream_ended is not None)
        elif isinstance(
            event, (h2.events.ResponseReceived, h2.events.InformationalResponseReceived, h2.events.TrailersReceived)
        ):
            if self.is_client:
                self.on_response_headers(
                    event.stream_id, tuple(event.headers), getattr(event, "stream_ended", None) is not None
                )
        elif isinstance(event, h2.events.RequestReceived):
            self.recorder.progress()
        elif isinstance(event, h2.events.StreamEnded):
            # h2 reports END_STREAM as its own event too (after RequestReceived or DataReceived).
            if not self.is_client:
                self.on_request_ended(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            if self.is_client:
                self.on_stream_reset(event.stream_id)
        elif isinstance(event, h2.events.PushedStreamReceived):
            self.on_push_promise(
                event.parent_stream_id, event.pushed_stream_id, event.pushed_stream_id, tuple(event.headers)
            )
        elif isinstance(event, (h2.events.RemoteSettingsChanged, h2.events.UnknownFrameReceived)):
            # The server's SETTINGS and extension frames (e.g. ORIGIN, RFC 8336), for a
            # browser model that watches its connections (studies.coalescing).
            if self.is_client and self.session.on_client_event is not None:
                self.session.on_client_event(event)
        elif isinstance(event, h2.events.ConnectionTerminated):
            raise RuntimeError(f"h2 connection terminated: {event.error_code!r} {event.additional_data!r}")


# One end of an HTTP/2 connection, for servers built on it outside this package.
H2End = _H2End


class H2Session:
    """An HTTP/2 client and server for one origin over one ``TcpConnection`` on ``path``,
    over TLS 1.3 when ``params.tls`` (``tls``: the run's contexts, e.g. with a key log;
    default: the cached ones of the seed; ``server_end``: the server's class, default ``H2End``)."""

    stack = "h2"

    def __init__(
        self,
        sim: Simulator,
        path: Path,
        params: StackParams,
        recorder: Recorder,
        origin: str,
        name: str = "h2",
        *,
        tls: TlsContexts | None = None,
        server_end=None,
    ) -> None:
        self.sim = sim
        self.path = path
        self.params = params
        self.recorder = recorder
        self.origin = origin
        self.client_rows: dict = {}
        self.on_client_event = None  # called with the client's RemoteSettingsChanged / UnknownFrameReceived
        config = TransportConfig(cc=params.cc)
        self.tcp = TcpConnection(sim, path, config, name=f"{name}/tcp", handshake=params.tcp_handshake)
        if params.tls and tls is None:
            tls = contexts(params.seed)
        elif not params.tls:
            tls = None
        self.client = _H2End(self, is_client=True, tcp_end=self.tcp.client, tls=tls)
        # ``server_end``: another server (a subclass of ``H2End``, called as it is), e.g. one
        # that schedules its responses (``http.priority_stacks``).
        self.server = (server_end or _H2End)(self, is_client=False, tcp_end=self.tcp.server, tls=tls)

    def request(self, spec, row) -> None:
        """Start the request ``spec`` on the client, recording into ``row``."""
        self.client.start_request(spec, row)

    def check(self) -> None:
        """Nothing to check: the TCP model never gives up; the run loop's idle timer does."""

    def close(self) -> None:
        """Nothing to release (the key log, if any, is written as secrets appear)."""

    def stats(self) -> dict:
        """TCP retransmissions, RTO timeouts and bytes, HTTP/2 frames sent per type and direction, TLS counters."""
        tcp = self.tcp.stats()
        frames = {}
        for end, label in ((self.client, "c2s"), (self.server, "s2c")):
            for ftype, n in end.frames_sent.items():
                frames[f"{label}_{ftype}_frames"] = n
        headers = self.client.frames_sent["HEADERS"] + self.server.frames_sent["HEADERS"]
        return {
            "retransmissions": tcp["packets_lost"],
            "rtos": tcp["rtos"],
            "spurious_rtos": tcp["spurious_rtos"],
            "undone_reductions": tcp["undone_reductions"],
            "headers_frames": headers,
            "tcp_bytes_sent": tcp["bytes_sent"],
            "c2s_tcp_bytes_sent": tcp["c2s_bytes_sent"],
            "s2c_tcp_bytes_sent": tcp["s2c_bytes_sent"],
            "push_promise_frames": self.server.frames_sent["PUSH_PROMISE"],
            "rst_stream_frames": self.client.frames_sent["RST_STREAM"] + self.server.frames_sent["RST_STREAM"],
            **frames,
            **self.tls_stats(),
        }

    def tls_stats(self) -> dict:
        """TLS bytes and records per direction (``c2s_tls_*``, ``s2c_tls_*``) and the totals
        ``tls_handshake_bytes``, ``tls_records``, ``tls_overhead_bytes`` (record bytes minus
        the plaintext they carry); nothing in cleartext."""
        if self.client.tls is None:
            return {}
        out = {"tls_handshake_bytes": 0, "tls_records": 0, "tls_overhead_bytes": 0}
        for end, label in ((self.client, "c2s"), (self.server, "s2c")):
            s = end.tls.stats()
            for k, v in s.items():
                out[f"{label}_tls_{k}"] = v
            out["tls_handshake_bytes"] += s["handshake_bytes"]
            out["tls_records"] += s["records"]
            out["tls_overhead_bytes"] += s["record_bytes"] - s["plaintext_bytes"]
        return out
