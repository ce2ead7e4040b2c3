"""The QUIC model's connection and endpoints: streams in, streams out, packets received.

Written by hand (RFC 9000 section 2 streams, section 13 packetisation; the rest of the
endpoint's behaviour is in the modules of its parts, see ``simulator.net.quic``).

- Streams (RFC 9000 section 2.1 ids): ``open_stream`` gives client bidi 0, 4, 8...,
  client uni 2, 6..., server bidi 1, 5..., server uni 3, 7...  A server answers on the
  client's bidirectional stream.  Receivers deliver each stream's bytes as soon as they
  are contiguous *in that stream's order* (no head-of-line blocking across streams).
- ``QuicEndpoint`` is one object with all of its state in ``__slots__`` (declared and
  initialised here, by part); its methods come from its parts: ``PacketBuilder``
  (sending), ``AckGeneration`` (ACKs), ``LossRecovery`` (RFC 9002) and ``Handshake``
  (RFC 9001).  One object, not one per part as in aioquic: the per-packet paths stay
  plain method calls and slot reads.

This is the reference.  ``native.NativeQuicEndpoint`` is the endpoint whose per-packet path
(receiving 1-RTT packets, writes on open streams, sending, ACKs, recovery, timers) is the C
twin ``simulator.net._quic``; ``QuicConnection(implementation=...)`` picks one
(``net.native.QUIC_IMPLEMENTATION`` by default, ``WORKBENCH_NET=python``: this one).
"""

from __future__ import annotations

from collections import deque
from heapq import heappop, heappush
from typing import Callable

from ...engine import Simulator
from ..cc import RttEstimator, RttIncreaseMonitor, make_congestion_control
from ..link import Packet, Path
from ..native import resolve_quic
from ..transport import DataCallback, TransportConfig, stream_id_for
from .ack import AckGeneration
from .handshake import SERVER_FLIGHT_CRYPTO_BYTES, CryptoDatagram, Handshake, server_flight_sizes
from .pacer import Pacer
from .packet import SHORT_HEADER_BYTES, UDP_IP_HEADER_BYTES, QuicPacket
from .packet_builder import PacketBuilder
from .recovery import LossRecovery
from .stream import RecvStream, SendStream

__all__ = ["QuicConnection", "QuicEndpoint"]


class QuicEndpoint(PacketBuilder, AckGeneration, LossRecovery, Handshake):
    """One side of a ``QuicConnection`` (sender and receiver).  See ``transport.Endpoint``."""

    __slots__ = (
        "sim",
        "conn",
        "config",
        "is_client",
        "name",
        "peer",
        "link",
        "timers",
        "on_data",
        "on_stream_acked",
        "on_packet_acked",
        "on_send_ready",
        # streams
        "_next_bidi",
        "_next_uni",
        "_send_streams",
        "_recv_streams",
        # sending (packet_builder)
        "_next_pn",
        "_new_queue",
        "_retx_queue",
        "_flush_scheduled",
        "_flushing",
        "_held_flush",
        "_max_payload",
        # loss detection (recovery; RFC 9002 appendix A)
        "rtt",
        "cc",
        "_sent",
        "_sent_order",
        "_largest_acked",
        "_loss_time_s",
        "_last_ack_eliciting_s",
        "_pto_count",
        "bytes_in_flight",
        "_recovery_start_s",
        "_pto_watch_pn",
        "_pto_watch_ptos",
        "_pto_watch_lost",
        # ACK generation (ack)
        "_recv_lows",
        "_recv_highs",
        "_largest_recv_pn",
        "_largest_recv_time_s",
        "_unacked_eliciting",
        "_ack_due",
        "_ack_delay_s",
        # pacing (pacer; RFC 9002 section 7.7) and the handshake (handshake; RFC 9001)
        "pacer",
        "retransmit_in_turn",
        "rtt_monitor",
        "ready",
        "handshake_done_s",
        "_hs_flight",
        "_hs_pto_count",
        "_hs_peer_received",
        "_hs_peer_echo_s",
        "_hs_sped_up",
        "_hs_sent_s",
        "_hs_pto_s",
        "pto_declares_lost",
        "chromium_client_hello",
        "_hs_ping_s",
        "_held",
        "crypto_datagrams_sent",
        "handshake_ptos",
        # statistics
        "packets_sent",
        "ack_packets_sent",
        "probe_packets_sent",
        "packets_lost",
        "lost_by_packet_threshold",
        "lost_by_time_threshold",
        "ptos",
        "spurious_ptos",
        "congestion_events",
        "bytes_sent",
        "stream_bytes_sent",
        "stream_bytes_retransmitted",
        "bytes_delivered",
        "reorder_bytes",
        "max_reorder_bytes",
        "cwnd_log",
    )
    # The stream records an endpoint makes (the C twin's endpoint makes its C types').
    _SendStream = SendStream
    _RecvStream = RecvStream

    def __init__(
        self,
        sim: Simulator,
        conn: "QuicConnection",
        config: TransportConfig,
        *,
        is_client: bool,
        name: str,
        log_cwnd: bool,
        pacing: bool = True,
        ack_delay_s: float | None = None,
        handshake: bool = False,
        retransmit_in_turn: bool = False,
        slow_start_rtt_exit: bool = False,
        pto_declares_lost: bool = False,
        chromium_client_hello: bool = False,
    ) -> None:
        self.sim = sim
        self.conn = conn
        self.config = config
        self.is_client = is_client
        self.name = name
        self.peer: QuicEndpoint | None = None
        self.link = None
        self.on_data: DataCallback | None = None
        self.on_stream_acked: Callable[[int, int], None] | None = None
        self.on_packet_acked: Callable[[int, list], None] | None = None
        # Pull writer: called when a packet may leave and no data waits, to write more now.
        self.on_send_ready: Callable[[], bool] | None = None

        self._next_bidi = 0
        self._next_uni = 0
        self._send_streams: dict[int, SendStream] = {}
        self._recv_streams: dict[int, RecvStream] = {}

        self._new_queue: deque[list] = deque()  # [stream_id, offset, length, fin], write order
        self._retx_queue: deque[list] = deque()  # lost data, sent before new data
        self._max_payload = config.max_datagram_bytes - SHORT_HEADER_BYTES

        self.timers, self.rtt, self.cc, self.pacer, self.rtt_monitor = self._parts(config, pacing, slow_start_rtt_exit)
        self._sent: dict[int, QuicPacket] = {}  # outstanding ack-eliciting packets by number
        self._sent_order: deque[QuicPacket] = deque()  # the same, oldest first (lazily pruned)
        self._largest_acked = -1
        self._loss_time_s: float | None = None
        self._last_ack_eliciting_s = 0.0
        self._pto_count = 0
        self._pto_watch_pn = -1  # PTOs fired while packets up to it were in flight,
        self._pto_watch_ptos = 0  # how many, and whether one of those was lost
        self._pto_watch_lost = False
        self._recovery_start_s = -1.0

        self._recv_lows: list[int] = []  # received packet numbers, inclusive ranges, ascending
        self._recv_highs: list[int] = []
        self._largest_recv_pn = -1
        self._largest_recv_time_s = 0.0
        self._ack_delay_s = config.max_ack_delay_s if ack_delay_s is None else ack_delay_s

        self.retransmit_in_turn = retransmit_in_turn
        self.ready = not handshake  # 1-RTT keys in use (RFC 9001 section 4.1.4)
        self.handshake_done_s = 0.0 if not handshake else None
        self._hs_flight: list[CryptoDatagram] = []  # this side's current handshake flight
        self._hs_pto_count = 0
        self._hs_peer_received: set[int] = set()  # indices of the peer's flight received
        self._hs_peer_echo_s: float | None = None  # send time of the peer datagram to echo
        self._hs_sped_up = False
        self._hs_sent_s = 0.0
        self._hs_pto_s: float | None = None  # when a probe (or a speed-up) last resent the flight
        self.pto_declares_lost = pto_declares_lost
        self.chromium_client_hello = chromium_client_hello  # handshake: Chromium's two-piece ClientHello
        self._hs_ping_s: float | None = None  # server: when its probe's PING left, until acknowledged
        self._held: list[Packet] = []  # 1-RTT packets received before the handshake completed
        self.crypto_datagrams_sent = 0
        self.handshake_ptos = 0

        self._zero_sending_state()
        self.bytes_delivered = 0
        self.reorder_bytes = 0
        self.max_reorder_bytes = 0
        self.cwnd_log: list[tuple[float, float]] | None = [(0.0, self.cc.cwnd_bytes)] if log_cwnd else None

    def _parts(self, config: TransportConfig, pacing: bool, slow_start_rtt_exit: bool) -> tuple:
        """The timer slots, RTT estimator, congestion window, pacer and RTT monitor
        (``native.NativeQuicEndpoint``'s are its C core's)."""
        return (
            self.sim.timers(self.name, ("loss", "ack", "pace", "handshake")),
            RttEstimator(initial_rtt_s=config.initial_rtt_s),
            make_congestion_control(
                config.cc, config.max_datagram_bytes, initial_window_segments=config.initial_window_segments
            ),
            Pacer(config.max_datagram_bytes, config.pacer_late_s) if pacing else None,
            RttIncreaseMonitor() if slow_start_rtt_exit else None,
        )

    def _zero_sending_state(self) -> None:
        """The packet number, flags and counters of the sending path at their start
        (``native.NativeQuicEndpoint``'s core starts them there itself)."""
        self._next_pn = 0
        self._flush_scheduled = False
        self._flushing = False  # in _flush: a write's flush is held (packet_builder)
        self._held_flush = 0  # its place in the event queue (seq), 0: none
        self.bytes_in_flight = 0
        self._unacked_eliciting = 0
        self._ack_due = False  # an ACK must go out now (with data, or alone)
        self.packets_sent = 0
        self.ack_packets_sent = 0
        self.probe_packets_sent = 0
        self.packets_lost = 0
        self.lost_by_packet_threshold = 0
        self.lost_by_time_threshold = 0
        self.ptos = 0
        self.spurious_ptos = 0
        self.congestion_events = 0
        self.bytes_sent = 0
        self.stream_bytes_sent = 0
        self.stream_bytes_retransmitted = 0

    # -- application interface -------------------------------------------------------
    def open_stream(self, unidirectional: bool = False) -> int:
        """A new stream id of this endpoint (RFC 9000 section 2.1)."""
        if unidirectional:
            index = self._next_uni
            self._next_uni += 1
        else:
            index = self._next_bidi
            self._next_bidi += 1
        stream_id = stream_id_for(index, client=self.is_client, unidirectional=unidirectional)
        self._send_streams[stream_id] = self._SendStream(stream_id)
        return stream_id

    def write(self, stream_id: int, data: bytes, end: bool = False) -> None:
        """Queue ``data`` on ``stream_id`` (``end``: this is the last write, FIN)."""
        stream = self._send_streams.get(stream_id)
        if stream is None:
            own = (stream_id & 1) == (0 if self.is_client else 1)
            if own:
                raise ValueError(f"{self.name}: stream {stream_id} was not opened")
            if stream_id & 2:
                raise ValueError(f"{self.name}: stream {stream_id} is the peer's unidirectional stream")
            stream = self._send_streams[stream_id] = self._SendStream(stream_id)  # answer on a peer's bidi stream
        if stream.fin:
            raise ValueError(f"{self.name}: stream {stream_id} already ended")
        offset = stream.written
        stream.append(data if type(data) is bytes else bytes(data))  # the caller may reuse a mutable buffer
        if end:
            stream.fin = True
            stream.fin_offset = stream.written
        if not data and not end:
            return
        queue = self._new_queue
        last = queue[-1] if queue else None
        if last is not None and last[0] == stream_id and last[1] + last[2] == offset and not last[3] and not last[4]:
            last[2] += len(data)  # same stream, contiguous: one chunk
            last[3] = end
        else:
            queue.append([stream_id, offset, len(data), end, False])
        self._schedule_flush()

    def want_to_send(self) -> None:
        """The application has data for ``on_send_ready`` to write: try to send at this instant."""
        self._schedule_flush()

    # -- receiving -------------------------------------------------------------------
    def _on_packet(self, link_packet: Packet) -> None:
        packet = link_packet.payload
        if packet.__class__ is CryptoDatagram:
            self._on_crypto_datagram(packet)
            return
        if not self.ready:
            if self.is_client:
                return  # cannot happen: the server sends 1-RTT only once ready
            self._held.append(link_packet)  # RFC 9001 5.7: buffered until the handshake completes
            return
        if self.handshake_done_s is None:  # client: a 1-RTT packet confirms the handshake (4.1.2)
            self._handshake_confirmed()
        if packet.ack is not None:
            self._on_ack_frame(*packet.ack)
        for stream_id, offset, data, fin in packet.frames:
            self._on_stream_frame(stream_id, offset, data, fin)
        self._on_packet_number(packet.pn, packet.ack_eliciting)

    def _on_stream_frame(self, stream_id: int, offset: int, data: bytes, fin: bool) -> None:
        stream = self._recv_streams.get(stream_id)
        if stream is None:
            stream = self._recv_streams[stream_id] = self._RecvStream()
        end = offset + len(data)
        if fin:
            stream.fin_offset = end
        if stream.finished:
            return
        delivered = stream.delivered
        if offset > delivered:  # a hole before it: hold back (this stream only)
            heappush(stream.heap, (offset, data))
            stream.heap_bytes += len(data)
            self.reorder_bytes += len(data)
            if self.reorder_bytes > self.max_reorder_bytes:
                self.max_reorder_bytes = self.reorder_bytes
            return
        parts = []
        if end > delivered:
            parts.append(data if offset == delivered else data[delivered - offset :])
            delivered = end
        heap = stream.heap
        while heap and heap[0][0] <= delivered:
            held_offset, held = heappop(heap)
            stream.heap_bytes -= len(held)
            self.reorder_bytes -= len(held)
            held_end = held_offset + len(held)
            if held_end > delivered:
                parts.append(held[delivered - held_offset :])
                delivered = held_end
        new_bytes = delivered - stream.delivered
        stream.delivered = delivered
        done = stream.fin_offset >= 0 and delivered >= stream.fin_offset
        if new_bytes or done:
            if done:
                stream.finished = True
            self.bytes_delivered += new_bytes
            if self.on_data is not None:
                chunk = parts[0] if len(parts) == 1 else b"".join(parts)
                self.on_data(stream_id, chunk, done, self.sim.now)

    # -- statistics ------------------------------------------------------------------
    def stats(self) -> dict:
        """This endpoint's figures (the keys are listed at ``QuicConnection.stats``)."""
        out = {
            "packets_sent": self.packets_sent,
            "ack_packets_sent": self.ack_packets_sent,
            "probe_packets_sent": self.probe_packets_sent,
            "packets_lost": self.packets_lost,
            "lost_by_packet_threshold": self.lost_by_packet_threshold,
            "lost_by_time_threshold": self.lost_by_time_threshold,
            "ptos": self.ptos,
            "spurious_ptos": self.spurious_ptos,
            "congestion_events": self.congestion_events,
            "bytes_sent": self.bytes_sent,
            "stream_bytes_sent": self.stream_bytes_sent,
            "stream_bytes_retransmitted": self.stream_bytes_retransmitted,
            "bytes_delivered": self.bytes_delivered,
            "max_reorder_buffer_bytes": self.max_reorder_bytes,
            "cwnd_bytes": self.cc.cwnd_bytes,
            "srtt_s": self.rtt.srtt_s,
            "min_rtt_s": self.rtt.min_rtt_s,
            "crypto_datagrams_sent": self.crypto_datagrams_sent,
            "handshake_ptos": self.handshake_ptos,
            "handshake_done_s": self.handshake_done_s,
        }
        if self.cwnd_log is not None:
            out["cwnd_log"] = list(self.cwnd_log)
        return out


_NATIVE_ENDPOINT = None  # native.NativeQuicEndpoint once imported (it imports this module)


def _native_endpoint() -> type:
    global _NATIVE_ENDPOINT
    from .native import NativeQuicEndpoint

    _NATIVE_ENDPOINT = NativeQuicEndpoint
    return NativeQuicEndpoint


class QuicConnection:
    """A QUIC connection over ``path``: ``client`` sends on ``path.forward``, ``server`` on ``path.reverse``.

    ``log_cwnd=True`` records ``(time_s, cwnd_bytes)`` at every window change of each
    endpoint (``stats()["client"]["cwnd_log"]``) for plots.  ``implementation`` ("python",
    "c", default ``native.QUIC_IMPLEMENTATION``) picks the endpoints: this module's
    ``QuicEndpoint`` (the reference) or ``native.NativeQuicEndpoint`` (its recovery in C).
    """

    def __init__(
        self,
        sim: Simulator,
        path: Path,
        config: TransportConfig | None = None,
        name: str = "quic",
        *,
        log_cwnd: bool = False,
        pacing: bool = True,
        ack_delay_s: float | None = None,
        handshake: bool = False,
        retransmit_in_turn: bool = False,
        slow_start_rtt_exit: bool = False,
        pto_declares_lost: bool = False,
        chromium_client_hello: bool = False,
        server_flight_bytes: int = SERVER_FLIGHT_CRYPTO_BYTES,
        implementation: str | None = None,
    ) -> None:
        self.sim = sim
        self.implementation = resolve_quic(implementation)
        endpoint_class = (_NATIVE_ENDPOINT or _native_endpoint()) if self.implementation == "c" else QuicEndpoint
        self.path = path
        self.config = config = config if config is not None else TransportConfig()
        self.name = name
        options = dict(
            log_cwnd=log_cwnd,
            pacing=pacing,
            ack_delay_s=ack_delay_s,
            handshake=handshake,
            retransmit_in_turn=retransmit_in_turn,
            slow_start_rtt_exit=slow_start_rtt_exit,
            pto_declares_lost=pto_declares_lost,
            chromium_client_hello=chromium_client_hello,
        )
        self.client = endpoint_class(sim, self, config, is_client=True, name=f"{name}/client", **options)
        self.server = endpoint_class(sim, self, config, is_client=False, name=f"{name}/server", **options)
        self.server_flight_sizes = server_flight_sizes(config, server_flight_bytes)
        if handshake:
            sim.call_soon(self.client.start_handshake)
        self.client.peer, self.server.peer = self.server, self.client
        self.client.link, self.server.link = path.forward, path.reverse
        link_payload = config.max_datagram_bytes + UDP_IP_HEADER_BYTES
        if link_payload > path.mtu_bytes:
            raise ValueError(
                f"max_datagram_bytes {config.max_datagram_bytes} + 28 exceeds the path MTU {path.mtu_bytes}"
            )

    def stats(self) -> dict:
        """Totals over both endpoints, and each endpoint's own figures under "client" / "server".

        Keys (per endpoint; the top level sums them, and takes the max of the buffer):
        packets_sent (all QUIC packets, ACK-only included), ack_packets_sent,
        probe_packets_sent, packets_lost (declared lost by loss detection),
        lost_by_packet_threshold, lost_by_time_threshold, ptos (PTO expirations),
        spurious_ptos (PTOs after which every packet then in flight was acknowledged, none lost),
        congestion_events (window reductions), bytes_sent (on the wire, IPv4 + UDP
        headers included), stream_bytes_sent (STREAM payload incl. retransmissions),
        stream_bytes_retransmitted, bytes_delivered (stream bytes handed in order to
        this endpoint's application), max_reorder_buffer_bytes (most stream bytes held
        out of order at once), cwnd_bytes, srtt_s, min_rtt_s, and cwnd_log if enabled.
        """
        client, server = self.client.stats(), self.server.stats()
        out = {
            key: client[key] + server[key]
            for key in (
                "packets_sent",
                "packets_lost",
                "ptos",
                "spurious_ptos",
                "bytes_sent",
                "bytes_delivered",
                "stream_bytes_sent",
                "stream_bytes_retransmitted",
            )
        }
        out["max_reorder_buffer_bytes"] = max(client["max_reorder_buffer_bytes"], server["max_reorder_buffer_bytes"])
        out["client"] = client
        out["server"] = server
        return out

    def timer_stats(self) -> dict:
        """``stats()``'s retransmission timer counts alone (``transport.TIMER_KEYS``: the probe
        timeouts of RFC 9002 section 6.2, summed over both endpoints), without building the rest."""
        client, server = self.client, self.server
        return {"ptos": client.ptos + server.ptos, "spurious_ptos": client.spurious_ptos + server.spurious_ptos}

    def release(self) -> None:
        """Break the connection's reference cycles once its run is over.  Its endpoints hold
        each other, their application's callbacks and (the C twin) a core that holds them:
        cycles only the cyclic collector frees, with all they hold.  Emptied of their streams
        and queues and let go of each other and of the application, what they held is freed
        by reference counts at once (``browser.client.load_page``)."""
        for endpoint in (self.client, self.server):
            endpoint._send_streams.clear()  # (the C core's too: it holds these same objects)
            endpoint._recv_streams.clear()
            endpoint._new_queue.clear()
            endpoint._retx_queue.clear()
            endpoint.peer = endpoint.conn = endpoint.link = None
            endpoint.on_data = endpoint.on_stream_acked = endpoint.on_packet_acked = endpoint.on_send_ready = None
        self.__dict__.clear()
