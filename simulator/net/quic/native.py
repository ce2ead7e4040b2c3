"""The QUIC endpoint with its per-packet path in C: ``NativeQuicEndpoint``.

Written by hand.  ``QuicEndpoint`` (with its parts ``recovery``, ``ack``, ``packet_builder``,
``pacer`` and the window of ``net.cc``) is the reference; this subclass runs its per-packet
path in one ``simulator.net._quic.QuicCore`` per endpoint (see the comment at the top of
``_quic.c``): packets arriving once the handshake is confirmed, writes on open streams, the
flush, packet contents and sending, ACK generation and ACK frames received, loss detection,
probe timeouts, the pacer and the window, in the core's own ``TimerSlots`` and ``QuicPacket``.
The core works on this endpoint's own objects (slots, queues, ``stream`` records, ``rangeset``
lists), so what stays Python (opening streams, a stream's first write, the handshake, the
statistics, the application's callbacks) reads and writes the same state as the reference.
The methods below are thin calls into the core, kept for the Python that calls them (the
handshake, the reference's ``_on_packet`` before the handshake is confirmed).

``QuicConnection(..., implementation=...)`` picks this class when the C implementation is
chosen (``net.native.resolve_quic``: the default when ``_quic`` is built, unless
``WORKBENCH_NET=python`` or ``WORKBENCH_PURE_PYTHON=1``); ``tests/test_net_quic_native.py``
compares the two event by event.
"""

from __future__ import annotations

from ...engine import Simulator
from ..cc import CONGESTION_CONTROLS, make_congestion_control
from ..link import Packet
from ..native import C, QUIC
from ..transport import TransportConfig
from .connection import QuicEndpoint
from .packet import SHORT_HEADER_BYTES
from .recovery import PROBE_PACKETS

__all__ = ["NativeQuicEndpoint"]


def _core_field(name: str, core_name: str | None = None) -> property:
    """An attribute of the endpoint kept by the core (the reference keeps it in a slot)."""
    core_name = core_name or name

    def get(self):
        return getattr(self._core, core_name)

    def set_(self, value) -> None:
        setattr(self._core, core_name, value)

    return property(get, set_, doc=f"``{name}``, kept by the C core.")


class NativeQuicEndpoint(QuicEndpoint):
    """``QuicEndpoint`` whose loss recovery, ACK ranges, pacer and window are the C core's."""

    __slots__ = ("_core", "_flush_event", "_deliver", "_ack_now_event")

    packets_lost = _core_field("packets_lost")
    lost_by_packet_threshold = _core_field("lost_by_packet_threshold")
    lost_by_time_threshold = _core_field("lost_by_time_threshold")
    ptos = _core_field("ptos")
    spurious_ptos = _core_field("spurious_ptos")
    congestion_events = _core_field("congestion_events")
    packets_sent = _core_field("packets_sent")
    probe_packets_sent = _core_field("probe_packets_sent")
    ack_packets_sent = _core_field("ack_packets_sent")
    bytes_sent = _core_field("bytes_sent")
    stream_bytes_sent = _core_field("stream_bytes_sent")
    stream_bytes_retransmitted = _core_field("stream_bytes_retransmitted")
    bytes_delivered = _core_field("bytes_delivered")
    reorder_bytes = _core_field("reorder_bytes")
    max_reorder_bytes = _core_field("max_reorder_bytes")
    _next_pn = _core_field("_next_pn", "next_pn")
    _unacked_eliciting = _core_field("_unacked_eliciting", "unacked_eliciting")
    _ack_due = _core_field("_ack_due", "ack_due")
    _flush_scheduled = _core_field("_flush_scheduled", "flush_scheduled")
    # stream.SendStream and RecvStream with their fields in C: the core reads them in place.
    _SendStream = QUIC.SendStream if QUIC is not None else None
    _RecvStream = QUIC.RecvStream if QUIC is not None else None

    def __init__(
        self,
        sim: Simulator,
        conn,
        config: TransportConfig,
        *,
        pacing: bool = True,
        slow_start_rtt_exit: bool = False,
        **options,
    ) -> None:
        if config.cc.lower() not in CONGESTION_CONTROLS:
            make_congestion_control(config.cc, config.max_datagram_bytes)  # the reference's InputError
        self._core = core = QUIC.QuicCore(
            config.cc.lower(),
            config.max_datagram_bytes,
            config.initial_window_segments,
            config.initial_rtt_s,
            config.max_ack_delay_s,
            config.time_threshold,
            config.packet_threshold,
            pacing,
            slow_start_rtt_exit,
            config.pacer_late_s,
        )
        super().__init__(sim, conn, config, pacing=pacing, slow_start_rtt_exit=slow_start_rtt_exit, **options)
        # What the engine runs to flush and to send a delayed ACK, and what a link hands packets
        # to: the core's, in one call.
        self._flush_event, self._deliver, self._ack_now_event = core.callables(self)
        self._sent = self._sent_order = None  # the core's records
        core.cwnd_log = self.cwnd_log
        core.bind(
            QUIC.QuicPacket,
            Packet if C is None else C.Packet,  # link.Packet's C twin when built: no Python __init__ per packet
            self._retx_queue,
            self._new_queue,
            self._send_streams,
            self._max_payload,
            self._recv_streams,
            self._RecvStream,
            config.ack_every_packets,
            sim,
            self.timers,
            self._on_loss_detection_timeout,
            self._SendStream,
            self.is_client,
        )

    def _parts(self, config: TransportConfig, pacing: bool, slow_start_rtt_exit: bool) -> tuple:
        """The core's: timer slots (engine.TimerSlots's, in C), RTT estimator and window; the core
        paces (it reads as a Pacer: interval_s, credit_s) and watches the RTT itself."""
        core = self._core
        return QUIC.TimerSlots(self.sim, self.name), core.rtt, core.cc, core if pacing else None, None

    def _zero_sending_state(self) -> None:
        """Nothing to do: the core starts its packet number, flags and counters at zero."""

    @property
    def bytes_in_flight(self) -> int:
        """Bytes of ack-eliciting packets in flight (RFC 9002 appendix A.1), the core's count."""
        return self._core.bytes_in_flight

    @bytes_in_flight.setter
    def bytes_in_flight(self, value: int) -> None:
        """Only the reference's initial 0: the core counts."""
        if value != self._core.bytes_in_flight:
            raise AttributeError("bytes_in_flight is counted by the C core")

    # -- application interface -----------------------------------------------------------
    def write(self, stream_id: int, data: bytes, end: bool = False) -> None:
        """``QuicEndpoint.write``: on an open stream in the core; a new or ended one as the reference."""
        stream = self._send_streams.get(stream_id)
        if stream is None or stream.fin:
            QuicEndpoint.write(self, stream_id, data, end)
        else:
            self._core.write(self, stream, stream_id, data, end)

    # -- receiving -----------------------------------------------------------------------
    def _on_packet(self, link_packet: Packet) -> None:
        """``QuicEndpoint._on_packet``: 1-RTT packets once the handshake is confirmed in the core,
        the handshake's datagrams and what comes before as the reference."""
        packet = link_packet.payload
        if packet.__class__ is QUIC.QuicPacket and self.ready and self.handshake_done_s is not None:
            self._core.receive(self, packet)
        else:
            QuicEndpoint._on_packet(self, link_packet)

    # -- sending (packet_builder) ------------------------------------------------------
    def _schedule_flush(self) -> None:
        """``PacketBuilder._schedule_flush``, in the core."""
        self._core.schedule_flush()

    def want_to_send(self) -> None:
        """``QuicEndpoint.want_to_send``: a flush at this instant, scheduled by the core."""
        self._core.schedule_flush()

    def _flush(self) -> None:
        """``PacketBuilder._flush`` (with ``_build_frames``), in the core."""
        self._core.flush(self)

    def _send_packet(self, frames: list, size_bytes: int, probe: bool = False) -> None:
        """``PacketBuilder._send_packet``, in the core."""
        self._core.send_packet(self, frames, size_bytes, probe)

    # -- ACKs (ack) --------------------------------------------------------------------
    def _on_packet_number(self, pn: int, ack_eliciting: bool) -> None:
        """``AckGeneration._on_packet_number``, the ranges kept by the core."""
        out_of_order = self._core.on_packet_number(pn, self.sim.now)
        if not ack_eliciting:
            return
        self._unacked_eliciting += 1
        if out_of_order or self._unacked_eliciting >= self.config.ack_every_packets:
            self._ack_now()
        elif self.timers.expiry("ack") is None:
            self.timers.set("ack", self.sim.now + self._ack_delay_s, self._ack_now)

    def _pending_ack_bytes(self) -> int:
        return self._core.ack_frame_size(self.sim.now) if self._unacked_eliciting else 0

    def _ack_frame(self) -> tuple[tuple, int]:
        """``AckGeneration._ack_frame``: the core's."""
        return self._core.ack_frame(self.sim.now)

    def _send_ack(self) -> None:
        """``AckGeneration._send_ack``, in the core."""
        self._core.send_ack(self)

    # -- recovery ----------------------------------------------------------------------
    def _on_ack_frame(self, ranges: list, ack_delay_s: float) -> None:
        """``LossRecovery._on_ack_frame``, in the core (the packets, then their streams' ranges,
        the reports to the application, loss detection, the timer)."""
        self._core.on_ack_frame(self, ranges, ack_delay_s)

    def _requeue_lost(self, lost: list) -> None:
        """The end of ``LossRecovery._on_packets_lost``: the lost data queued again, a flush."""
        for packet in lost:
            packet.done = True
            self._queue_retransmission(packet.frames)
        self._schedule_flush()

    def _set_loss_detection_timer(self) -> None:
        """``LossRecovery._set_loss_detection_timer`` (A.8), in the core."""
        self._core.set_loss_timer(self)

    def _on_loss_detection_timeout(self) -> None:
        """``LossRecovery._on_loss_detection_timeout`` (A.9): the core decides, Python sends the probes."""
        outcome = self._core.on_loss_timeout(self.sim.now)
        if outcome is None:
            return
        if outcome is not True:  # the loss time: what it declares lost
            if outcome:
                self._requeue_lost(outcome)
            self._set_loss_detection_timer()
            return
        for i in range(PROBE_PACKETS):  # 6.2.4: a PTO, two probes
            built = self._build_frames() if (self._retx_queue or self._new_queue) else None
            if built is None:
                built = self._oldest_unacked_frames(i)
            self._send_packet(*built, probe=True)
        self._set_loss_detection_timer()

    def _oldest_unacked_frames(self, index: int) -> tuple[list, int]:
        packet = self._core.outstanding(index)
        if packet.frames:
            return packet.frames, packet.size_bytes
        return [], SHORT_HEADER_BYTES + 1  # PING frame (RFC 9000 section 19.2)

    def _rtt_sample(self, sample_s: float) -> None:
        self._core.rtt_sample(sample_s, self.sim.now)


# A traced run labels each event with its callback's qualified name: the overrides that are
# callbacks carry the reference's names, so both implementations' traces read the same.
for _name in ("_flush", "_on_loss_detection_timeout", "_on_packet", "write"):
    getattr(NativeQuicEndpoint, _name).__qualname__ = getattr(QuicEndpoint, _name).__qualname__
del _name
