"""The real ``aioquic`` QUIC + HTTP/3 stack over the simulated link, in virtual time.

Written by hand; aioquic (``QuicConnection``, ``H3Connection``) is used as published
and driven the sans-I/O way: every ``now`` passed to it is the simulation clock, each
datagram from ``datagrams_to_send(now)`` becomes one link ``Packet`` of
``len(datagram) + 28`` bytes (IPv4 20 + UDP 8) on the path, each arriving packet goes
to ``receive_datagram(data, addr, now)``, and ``get_timer()`` / ``handle_timer(now)``
run on one engine timer slot per endpoint.

Determinism
- The server certificate is generated in memory: an Ed25519 key from the run's seed
  and a self-signed certificate with fixed names, serial and validity.  Ed25519
  signatures are deterministic and always 64 bytes (ECDSA ones vary in length and
  would shift packet sizes).  The client does not verify the certificate
  (``verify_mode = CERT_NONE``): verification would read the wall clock (validity).
- Peer addresses are fixed (``CLIENT_ADDR`` / ``SERVER_ADDR``); connection ids are
  8 bytes.  aioquic draws connection ids, TLS randoms and key shares from the OS
  (``os.urandom`` / OpenSSL).  We do not patch that: those values only change
  encrypted *contents*, never a size or a time, so the same seed gives identical
  timings and packet counts (a test checks it); captures differ in their bytes.
- aioquic orders the streams it serves by a ``set`` of stream objects, which
  iterates by memory address: ``aioquic_patches`` makes that set insertion-ordered, so
  the same seed gives byte-identical results in separate processes.
- The trap of the loss-detection timer: aioquic can report a timer due at exactly the
  instant it just fired, because ``sent_time + loss_delay`` rounds to a deadline at
  which ``now - loss_delay < sent_time`` still holds, so nothing is declared lost and
  the same deadline comes back forever.  A deadline at or before the instant the
  timer last fired is moved ``TIMER_NUDGE_S`` later, doubling (up to 16 ms) while it
  keeps coming back (``timer_nudges`` counts them), so no run can spin.
- A connection that cannot progress is closed by aioquic's idle timeout
  (``StackParams.idle_timeout_s``); the run then ends with ``StackStalled``
  ("idle timeout reached"), never a hang.

qlog: aioquic's ``QuicLoggerTrace`` stamps events with ``time.time()``; ``SimQuicLogger``
stamps them with the simulation clock and writes ``<name>-client.qlog`` /
``<name>-server.qlog`` when the session closes.  It is built only when asked for
(``qlog_dir``): aioquic encodes every frame of every packet for it, which used to be
a large share of a replay.  The count of resent STREAM frames in ``stats()`` comes from
aioquic's loss recovery instead (``SimQuicConnection``, in ``h3_quic`` with the server's CRYPTO
bytes ``server_crypto_bytes``; both re-exported here), and equals the qlog's.

Stall detection is by events: a connection that terminates, or a request started on a
terminated one, calls ``sim.stop()`` so that the run loop looks at ``H3Session.check``
then, and only then (``common.run_until``).

HTTP/3 settings: aioquic hard-codes the QPACK table capacity (4096) and the blocked
streams limit (16) it announces, and MAX_PUSH_ID 8 at the client; ``SimH3Connection``
makes all three parameters.  Its QPACK decoder is wrapped (``TimedQpackDecoder``) to
timestamp every header block that blocks (RFC 9204 section 2.1.2) and when it is
unblocked.

Server push as far as aioquic allows (RFC 9114 section 4.6): PUSH_PROMISE and push
streams work.  aioquic does not let a client raise MAX_PUSH_ID after the first one
(so at most ``max_push_id + 1`` pushes per connection), has no API to send or act on
CANCEL_PUSH (a client can only STOP_SENDING a push stream once it exists), and cannot
promise the same push id on a second request stream.
"""

from __future__ import annotations

import ssl
from collections import Counter

import pylsqpack
from aioquic.buffer import Buffer
from aioquic.h3 import events as h3e
from aioquic.h3.connection import H3_ALPN, ErrorCode, H3Connection
from aioquic.quic import events as qe
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.packet import pull_quic_header

from ..engine import Simulator
from ..net.link import Packet, Path
from ..net.quic.packet import UDP_IP_HEADER_BYTES  # IPv4 (20) + UDP (8)
from . import aioquic_patches
from .common import CLIENT_ADDR, SERVER_ADDR, Recorder, StackParams, StackStalled
from .endpoint import Endpoint
from .h3_quic import SentRanges, SimQuicConnection, server_crypto_bytes
from .qlog import SimQuicLogger, stream_frames_resent_in_qlog
from .tls import make_certificate  # shared with the h2 stack's TLS

__all__ = [
    "H3Session",
    "H3End",
    "SimH3Connection",
    "SimQuicConnection",
    "SentRanges",
    "TimedQpackDecoder",
    "SimQuicLogger",
    "server_crypto_bytes",
    "make_certificate",
    "stream_frames_resent_in_qlog",
    "UDP_IP_HEADER_BYTES",
    "TIMER_NUDGE_S",
]

CONNECTION_ID_BYTES = 8
TIMER_NUDGE_S = 1e-6  # first step past a deadline that came back unchanged
_MAX_NUDGE_DOUBLINGS = 14  # steps grow to at most 16 ms

# h3_quic's import has run aioquic_patches.check(): the aioquic these patches were written for.
aioquic_patches.install()  # stream service order by insertion, not by memory address


# ---------------------------------------------------------------------------------------
# HTTP/3 with configurable settings and a timed QPACK decoder


def _frame_len(frame_type: int, payload_bytes: int) -> int:
    """An HTTP/3 frame's size: type and length varints (RFC 9000 section 16) + payload."""
    from ..frames import varint_len

    return varint_len(frame_type) + varint_len(payload_bytes) + payload_bytes


class TimedQpackDecoder:
    """Wraps ``pylsqpack.Decoder``: records when a header block blocks and when it is unblocked.

    ``blocked`` is a list of dicts ``{stream_id, blocked_s, unblocked_s}`` (NaN while still
    blocked).
    """

    def __init__(self, decoder: pylsqpack.Decoder, clock) -> None:
        self._decoder = decoder
        self._clock = clock
        self.blocked: list[dict] = []
        self._open: dict[int, dict] = {}
        self.max_blocked_at_once = 0

    def feed_header(self, stream_id: int, data: bytes):
        """pylsqpack's ``feed_header``; a block that blocks (RFC 9204 section 2.1.2) is recorded with its time."""
        try:
            return self._decoder.feed_header(stream_id, data)
        except pylsqpack.StreamBlocked:
            record = {"stream_id": stream_id, "blocked_s": self._clock(), "unblocked_s": float("nan")}
            self.blocked.append(record)
            self._open[stream_id] = record
            self.max_blocked_at_once = max(self.max_blocked_at_once, len(self._open))
            raise

    def feed_encoder(self, data: bytes):
        """pylsqpack's ``feed_encoder``; the streams it unblocks get their unblocking time."""
        unblocked = self._decoder.feed_encoder(data)
        now = self._clock()
        for stream_id in unblocked:
            record = self._open.pop(stream_id, None)
            if record is not None:
                record["unblocked_s"] = now
        return unblocked

    def resume_header(self, stream_id: int):
        """pylsqpack's ``resume_header`` for a stream the encoder stream unblocked."""
        return self._decoder.resume_header(stream_id)

    def cancel_stream(self, stream_id: int):
        """Forget a blocked stream that was reset (RFC 9204 section 4.4.2) and tell pylsqpack."""
        self._open.pop(stream_id, None)
        return self._decoder.cancel_stream(stream_id)


class SimH3Connection(H3Connection):
    """``H3Connection`` announcing our QPACK settings and MAX_PUSH_ID, counting frames sent."""

    def __init__(
        self, quic: QuicConnection, *, table_bytes: int, blocked_streams: int, max_push_id: int, clock
    ) -> None:
        self._sim_settings = (table_bytes, blocked_streams, max_push_id)
        self._clock = clock
        self.frames_sent: Counter = Counter()
        self._last_encoded = (0, 0)  # (header block bytes, encoder-stream bytes) of the last section
        super().__init__(quic)

    def _init_connection(self) -> None:
        # H3Connection.__init__ has just built a 4096 / 16 decoder: replace it before the
        # SETTINGS frame (RFC 9204 section 5) is written.
        table_bytes, blocked_streams, max_push_id = self._sim_settings
        self._max_table_capacity = table_bytes
        self._blocked_streams = blocked_streams
        self._decoder = TimedQpackDecoder(pylsqpack.Decoder(table_bytes, blocked_streams), self._clock)
        if self._is_client:
            self._max_push_id = max_push_id
        super()._init_connection()

    def send_headers(self, stream_id: int, headers, end_stream: bool = False) -> tuple[int, int]:
        """As aioquic's, and returns the HEADERS frame's bytes (type and length varints
        included, RFC 9114 section 7.1) and the encoder-stream bytes it caused."""
        super().send_headers(stream_id, headers, end_stream)
        self.frames_sent["HEADERS"] += 1
        block, encoder = self._last_encoded
        return _frame_len(0x1, block), encoder

    def _encode_headers(self, stream_id: int, headers) -> bytes:
        before = self._encoder_bytes_sent
        frame_data = super()._encode_headers(stream_id, headers)
        self._last_encoded = (len(frame_data), self._encoder_bytes_sent - before)
        return frame_data

    def send_push_promise(self, stream_id: int, headers) -> int:
        """aioquic's PUSH_PROMISE (RFC 9114 section 7.2.5), counted; returns the pushed stream id."""
        pushed = super().send_push_promise(stream_id, headers)
        self.frames_sent["PUSH_PROMISE"] += 1
        return pushed


# ---------------------------------------------------------------------------------------
# One end: QuicConnection + SimH3Connection + timer + link


class _H3End(Endpoint):
    quic_class = SimQuicConnection  # the server's QUIC connection (made on the client's first Initial)

    def __init__(self, session: "H3Session", *, is_client: bool, out_link, addr, peer_addr) -> None:
        super().__init__(session, is_client=is_client)
        self.out_link = out_link
        self.addr = addr
        self.peer_addr = peer_addr
        self.peer: _H3End | None = None
        self.quic: QuicConnection | None = None
        self.h3: SimH3Connection | None = None
        # aioquic's one timer (get_timer / handle_timer); timer.when_s is the deadline it holds
        self.timer = self.sim.timer(f"{session.name}/{'client' if is_client else 'server'}", self._on_timer)
        self._fired_at_s = -1.0
        self._stuck = 0
        self.timer_nudges = 0
        self.terminated: qe.ConnectionTerminated | None = None
        self.handshake_done_s: float | None = None

    def configuration(self) -> QuicConfiguration:
        p = self.params
        window = p.flow_window_bytes
        config = QuicConfiguration(
            is_client=self.is_client,
            alpn_protocols=H3_ALPN,
            connection_id_length=CONNECTION_ID_BYTES,
            idle_timeout=p.idle_timeout_s,
            max_datagram_size=p.max_datagram_bytes,
            congestion_control_algorithm=p.cc,
            max_data=4 * window,
            max_stream_data=window,
            quic_logger=self.session.qlog,
            secrets_log_file=self.session.keylog if self.is_client else None,
        )
        if self.is_client:
            config.verify_mode = ssl.CERT_NONE
            config.server_name = "server.example"
        else:
            config.certificate, config.private_key = make_certificate(p.seed)
        return config

    def start_quic(self, quic: QuicConnection) -> None:
        self.quic = quic
        p = self.params
        self.h3 = SimH3Connection(
            quic,
            table_bytes=p.qpack_table_bytes,
            blocked_streams=p.qpack_blocked_streams,
            max_push_id=p.max_push_id,
            clock=lambda: self.sim.now,
        )

    # -- primitives ----------------------------------------------------------------
    def _writable(self, stream_id: int) -> int:
        return 1 << 40  # aioquic buffers stream data and obeys flow control itself

    def _write_headers(self, stream_id: int, headers, end: bool) -> tuple[int, int]:
        return self.h3.send_headers(stream_id, list(headers), end_stream=end)

    def _write_data(self, stream_id: int, data: bytes, end: bool) -> None:
        self.h3.send_data(stream_id, data, end_stream=end)

    def _write_reset(self, stream_id: int) -> None:
        if self.is_client:
            # RFC 9114 section 4.1.1: a client abandons a response with STOP_SENDING (the
            # request side has already ended); the server's QUIC answers with RESET_STREAM.
            self.quic.stop_stream(stream_id, ErrorCode.H3_REQUEST_CANCELLED)
        else:
            self.quic.reset_stream(stream_id, ErrorCode.H3_REQUEST_CANCELLED)

    def _open_stream(self) -> int:
        return self.quic.get_next_available_stream_id()

    def _push(self, stream_id: int, request_headers) -> int:
        return self.h3.send_push_promise(stream_id, list(request_headers))

    def flush(self) -> None:
        self.transmit()

    # -- network -------------------------------------------------------------------
    def transmit(self) -> None:
        """Datagrams aioquic has to send onto the link, then its timer onto the engine slot."""
        quic = self.quic
        if quic is None:
            return
        now = self.sim.now
        datagrams = quic.datagrams_to_send(now=now)
        if datagrams:
            send, deliver = self.out_link.send, self.peer.on_packet
            for data, _addr in datagrams:
                send(Packet(len(data) + UDP_IP_HEADER_BYTES, data), deliver)
        when_s = quic.get_timer()
        timer = self.timer
        if when_s is None:
            timer.cancel()
            return
        if when_s <= self._fired_at_s:
            # The deadline that just fired came back (float rounding at a loss deadline,
            # see the module docstring): step past it, doubling while it keeps coming back.
            self.timer_nudges += 1
            when_s = self._fired_at_s + TIMER_NUDGE_S * (1 << min(self._stuck, _MAX_NUDGE_DOUBLINGS))
            self._stuck += 1
        else:
            self._stuck = 0
        if when_s < now:
            when_s = now  # as Timer.set would
        if when_s != timer.when_s:  # the slot already holds this deadline: nothing to do
            timer.set(when_s)

    def _on_timer(self) -> None:
        now = self.sim.now  # (the slot emptied itself when it fired)
        self._fired_at_s = now
        quic = self.quic
        quic.handle_timer(now=now)
        if quic._events:
            self._process_events()
        if self._queues:
            self.pump()  # writes what flow control now admits, then transmits
        else:
            self.transmit()

    def on_packet(self, packet: Packet) -> None:
        quic = self.quic
        if quic is None:  # the server is created by the client's first Initial
            self.session.accept(packet.payload)
            quic = self.quic
        quic.receive_datagram(packet.payload, self.peer_addr, now=self.sim.now)
        if quic._events:  # most datagrams (ACKs) raise no event
            self._process_events()
        if self._queues:
            self.pump()
        else:
            self.transmit()

    def _process_events(self) -> None:
        events, h3, handle = self.quic._events, self.h3, self._handle
        while events:  # quic.next_event() until None, without a call per event
            event = events.popleft()
            kind = type(event)  # aioquic's event classes are final: `is`, not isinstance
            if kind is qe.StreamDataReceived:
                pass  # by far the most common: only the h3 layer acts on it
            elif kind is qe.ConnectionTerminated:
                self.terminated = event
                self.sim.stop()  # the run loop looks at H3Session.check now (run_until)
            elif kind is qe.HandshakeCompleted:
                self.handshake_done_s = self.sim.now
            elif kind is qe.StreamReset and self.is_client:
                self.on_stream_reset(event.stream_id)
            for h3_event in h3.handle_event(event):
                handle(h3_event)

    def _handle(self, event) -> None:
        kind = type(event)
        if kind is h3e.DataReceived:  # the most common first
            if self.is_client:
                key = ("push", event.push_id) if event.push_id is not None else event.stream_id
                self.on_response_data(key, len(event.data), event.stream_ended)
            elif event.stream_ended:
                self.on_request_ended(event.stream_id)
        elif kind is h3e.HeadersReceived:
            if self.is_client:
                key = ("push", event.push_id) if event.push_id is not None else event.stream_id
                if event.push_id is not None:  # the push stream exists now: its id is known
                    entry = self.session.client_rows.get(key)
                    if entry is not None and entry[1]["stream_id"] < 0:
                        entry[1]["stream_id"] = event.stream_id
                self.on_response_headers(key, tuple(event.headers), event.stream_ended)
            else:
                self.recorder.progress()
                if event.stream_ended:
                    self.on_request_ended(event.stream_id)
        elif kind is h3e.PushPromiseReceived:
            self.on_push_promise(event.stream_id, None, ("push", event.push_id), tuple(event.headers))


H3End = _H3End  # an end, for servers of their own (``H3Session(server_end=...)``)


class H3Session:
    """An aioquic HTTP/3 client and server for one origin, exchanging datagrams over ``path``."""

    stack = "h3"

    def __init__(
        self,
        sim: Simulator,
        path: Path,
        params: StackParams,
        recorder: Recorder,
        origin: str,
        name: str = "h3",
        *,
        qlog_dir: str | None = None,
        keylog=None,
        server_end=None,
    ) -> None:
        self.sim = sim
        self.path = path
        self.params = params
        self.recorder = recorder
        self.origin = origin
        self.name = name
        self.client_rows: dict = {}
        self.qlog_dir = qlog_dir
        # Built only when asked for: aioquic encodes every frame for it (the resend count
        # comes from SimQuicConnection instead).
        self.qlog = SimQuicLogger(lambda: sim.now) if qlog_dir is not None else None
        self.keylog = keylog
        self.client = _H3End(self, is_client=True, out_link=path.forward, addr=CLIENT_ADDR, peer_addr=SERVER_ADDR)
        # ``server_end``: another server (a subclass of ``H3End``, called as it is, its QUIC
        # connection of its ``quic_class``), e.g. one with a scheduler (``http.priority_stacks_h3``).
        self.server = (server_end or _H3End)(
            self, is_client=False, out_link=path.reverse, addr=SERVER_ADDR, peer_addr=CLIENT_ADDR
        )
        self.client.peer, self.server.peer = self.server, self.client
        self.client.start_quic(SimQuicConnection(configuration=self.client.configuration()))
        sim.call_soon(self._connect)  # after the caller has attached its observers (pcap)

    def _connect(self) -> None:
        self.client.quic.connect(SERVER_ADDR, now=self.sim.now)
        self.client.transmit()

    def accept(self, datagram: bytes) -> None:
        """Start the server's QUIC connection on the client's first Initial datagram."""
        header = pull_quic_header(Buffer(data=datagram), host_cid_length=CONNECTION_ID_BYTES)
        quic = self.server.quic_class(
            configuration=self.server.configuration(), original_destination_connection_id=header.destination_cid
        )
        self.server.start_quic(quic)

    def request(self, spec, row) -> None:
        """Open the exchange of ``spec`` on the client (its row records it)."""
        self.client.start_request(spec, row)
        if self.client.terminated is not None or self.server.terminated is not None:
            self.sim.stop()  # an exchange opened on a closed connection: check() fails

    def check(self) -> None:
        """Raise ``StackStalled`` if a connection terminated with request exchanges open.  That
        can only start being true when a connection terminates or a request starts on a
        terminated one; both call ``sim.stop()``, so the run loop calls this only then."""
        for end in (self.client, self.server):
            event = end.terminated
            if event is not None and any(
                r[1]["kind"] == "request" and r[1]["ended_s"] != r[1]["ended_s"] for r in self.client_rows.values()
            ):
                reason = event.reason_phrase or "no reason given"
                if reason == "Idle timeout":
                    raise StackStalled(
                        f"idle timeout reached: the QUIC connection to {self.origin} closed after "
                        f"{self.params.idle_timeout_s:g} s without progress "
                        f"(at {self.sim.now:.3f} s of virtual time)"
                    )
                raise StackStalled(
                    f"the QUIC connection to {self.origin} closed (error 0x{event.error_code:x}: "
                    f"{reason}) with exchanges still open"
                )

    def close(self) -> None:
        """Write the qlog files, when asked for."""
        if self.qlog is not None:
            self.qlog.write(self.qlog_dir, self.name)

    @property
    def qpack_blocked(self) -> list[dict]:
        """Header blocks that blocked at the client's decoder (responses) and the server's (requests)."""
        out = []
        for end, direction in ((self.client, "responses"), (self.server, "requests")):
            if end.h3 is not None:
                for r in end.h3._decoder.blocked:
                    out.append({**r, "direction": direction})
        return out

    def stats(self) -> dict:
        """Frames sent by type, QPACK blocking and resent STREAM frames of this session."""
        frames = Counter()
        for end in (self.client, self.server):
            if end.h3 is not None:
                frames.update(end.h3.frames_sent)
        blocked = self.qpack_blocked
        retransmissions = sum(
            end.quic.stream_frames_resent for end in (self.client, self.server) if end.quic is not None
        )
        return {
            "headers_frames": frames["HEADERS"],
            "push_promise_frames": frames["PUSH_PROMISE"],
            "timer_nudges": self.client.timer_nudges + self.server.timer_nudges,
            "qpack_blocked_blocks": len(blocked),
            "qpack_blocked_total_s": sum(
                r["unblocked_s"] - r["blocked_s"] for r in blocked if r["unblocked_s"] == r["unblocked_s"]
            ),
            "stream_frames_resent": retransmissions,
        }
