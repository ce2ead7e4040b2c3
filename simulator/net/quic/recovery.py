"""Loss detection and congestion control of the QUIC model (RFC 9002 sections 5 to 7, appendix A).

Written by hand after RFC 9002's pseudocode (appendix A), with aioquic's choices where
the RFC leaves one; the RTT estimator and the congestion controllers are the TCP
model's (``net.cc``: ``RttEstimator``, ``Reno`` / ``Cubic``, ``RttIncreaseMonitor``).

- RTT (section 5): a sample when the largest acknowledged packet is newly acknowledged
  (5.1), the ack delay taken up to ``max_ack_delay`` (5.3); each sample also sets the
  pacing rate (``pacer.Pacer``, as aioquic).
- Loss detection (section 6): packet threshold (6.1.1), time threshold
  ``time_threshold * max(smoothed_rtt, latest_rtt)`` with a loss timer (6.1.2), and the
  probe timeout ``smoothed_rtt + max(4 rttvar, 1 ms) + max_ack_delay`` with exponential
  backoff (6.2), sending two probe packets (new or lost data if any, otherwise a copy
  of the oldest unacknowledged data), declaring nothing lost and leaving the window as
  it is (6.2: a PTO is not a loss signal; persistent congestion, 7.6, is not modelled).
  ``spurious_ptos`` counts the PTOs after which every packet then in flight was
  acknowledged with none declared lost: timers that fired on a late ACK, not a loss.
  Loss timer and PTO share the timer slot
  ``loss``.  Lost STREAM data is sent again in new packets with new packet numbers,
  ahead of new data, or (``retransmit_in_turn=True``, as aioquic, which hands lost
  bytes back to their stream's send buffer and serves streams round-robin) behind the
  data already queued.
- Slow-start exit on a rising RTT (``slow_start_rtt_exit=True``, off by default): aioquic's
  Reno and CUBIC end slow start when RTT samples keep rising (``cc.RttIncreaseMonitor``),
  which behind a deep queue happens long before a loss.
- Congestion control (section 7) through ``cc.Reno`` / ``cc.Cubic``: window in bytes of
  UDP payload, initial window ``initial_window_segments * max_datagram_bytes``, bytes in
  flight counted over ack-eliciting packets (ACK-only packets are not in flight, 7 /
  A.1), one reduction per recovery period (7.3.2: a loss of a packet sent before the
  recovery started does not reduce again), no window growth for packets sent during
  recovery.

The Python here is the reference; ``simulator.net._quic`` (``QuicCore``, driven by
``native.NativeQuicEndpoint``) is its C twin, chosen by ``net.native`` (``WORKBENCH_NET=python``:
this code), and ``tests/test_net_quic_native.py`` holds the two to the same events.

``LossRecovery`` is a part of ``connection.QuicEndpoint`` (its methods, the endpoint's
state: ``rtt``, ``cc``, ``_sent`` / ``_sent_order``, ``_largest_acked``,
``_loss_time_s``, ``_pto_count``, ``bytes_in_flight``, ``_recovery_start_s``).
"""

from __future__ import annotations

import math
from itertools import islice

from .packet import SHORT_HEADER_BYTES, QuicPacket

__all__ = ["LossRecovery", "PROBE_PACKETS", "LOSS_EPSILON_S"]

PROBE_PACKETS = 2                 # RFC 9002 section 6.2.4: one or two probes per PTO
LOSS_EPSILON_S = 1e-9             # guard against float rounding at a loss deadline


class LossRecovery:
    """The sender's recovery in ``QuicEndpoint``: ACK processing, RTT samples, loss detection, PTO."""

    __slots__ = ()

    # -- ACK processing and loss detection (RFC 9002 section 6, appendix A) ---------
    def _on_ack_frame(self, ranges: list, ack_delay_s: float) -> None:
        now = self.sim.now
        sent = self._sent
        order = self._sent_order
        while order and order[0].done:
            order.popleft()
        if not order:
            return
        smallest = order[0].pn
        largest_sent = self._next_pn - 1
        newly_acked: list[QuicPacket] = []
        for low, high in ranges:                  # highest first
            if high < smallest:
                break
            for pn in range(min(high, largest_sent), max(low, smallest) - 1, -1):   # highest first
                packet = sent.pop(pn, None)
                if packet is not None:
                    newly_acked.append(packet)
        if not newly_acked:
            return
        largest_in_frame = ranges[0][1]
        if largest_in_frame > self._largest_acked:
            self._largest_acked = largest_in_frame
        # RTT sample (5.1): the largest acknowledged packet is newly acknowledged.
        if newly_acked[0].pn == largest_in_frame:
            self.rtt.update(now - newly_acked[0].time_sent_s,
                            min(ack_delay_s, self.config.max_ack_delay_s))
            self._slow_start_check(now - newly_acked[0].time_sent_s)
            if self.pacer is not None:            # aioquic sets the pacing rate at each RTT sample
                self.pacer.set_rate(self.cc.cwnd_bytes, self.rtt.smoothed_s)
        newly_acked.reverse()                     # oldest first
        cc = self.cc
        srtt = self.rtt.smoothed_s
        acked_streams: set[int] = set()
        for packet in newly_acked:
            packet.done = True
            self.bytes_in_flight -= packet.size_bytes
            # 7.3.2: no window growth for packets sent before the recovery period started.
            if packet.time_sent_s > self._recovery_start_s:
                cc.on_ack(packet.size_bytes, now, srtt)
            for stream_id, offset, data, fin in packet.frames:
                stream = self._send_streams[stream_id]
                stream.acked.add(offset, offset + len(data))
                if fin:
                    stream.fin_acked = True
                acked_streams.add(stream_id)
            if self.on_packet_acked is not None:
                self.on_packet_acked(packet.pn, [(sid, off, len(data)) for sid, off, data, _ in packet.frames])
        for stream_id in sorted(acked_streams):
            stream = self._send_streams[stream_id]
            prefix = stream.acked.prefix()
            if prefix > stream.acked_prefix:
                stream.acked_prefix = prefix
                stream.drop_acked()            # never sent again (RFC 9000 13.3): not kept
                if self.on_stream_acked is not None:
                    self.on_stream_acked(stream_id, prefix)
        self._log_cwnd()
        self._detect_lost_packets()
        if self._pto_watch_pn >= 0 and (not self._sent or next(iter(self._sent)) > self._pto_watch_pn):
            # Every packet in flight at the PTOs is settled: they fired with nothing lost?
            if not self._pto_watch_lost:
                self.spurious_ptos += self._pto_watch_ptos
            self._pto_watch_pn = -1
        self._pto_count = 0                       # A.7: reset the PTO backoff on an ACK
        self._set_loss_detection_timer()
        if self._retx_queue or self._new_queue or self.on_send_ready is not None:
            self._schedule_flush()

    def _slow_start_check(self, latest_rtt_s: float) -> None:
        """``slow_start_rtt_exit``: aioquic's exit from slow start on a rising RTT (before
        any loss: its congestion controllers test only while ssthresh is unset)."""
        monitor = self.rtt_monitor
        cc = self.cc
        if monitor is not None and cc.ssthresh_bytes == math.inf and monitor.increasing(self.sim.now, latest_rtt_s):
            cc.ssthresh_bytes = cc.cwnd_bytes

    def _loss_delay_s(self) -> float:
        rtt = self.rtt
        return max(self.config.time_threshold * max(rtt.latest_rtt_s, rtt.smoothed_s), rtt.granularity_s)

    def _detect_lost_packets(self) -> None:
        """A.10 DetectAndRemoveLostPackets: packet threshold (6.1.1) and time threshold (6.1.2)."""
        self._loss_time_s = None
        largest_acked = self._largest_acked
        loss_delay = self._loss_delay_s()
        now = self.sim.now
        threshold = self.config.packet_threshold
        lost: list[QuicPacket] = []
        loss_time = None
        for packet in self._sent_order:
            if packet.pn > largest_acked:
                break
            if packet.done:
                continue
            deadline = packet.time_sent_s + loss_delay
            if largest_acked >= packet.pn + threshold:
                self.lost_by_packet_threshold += 1
                lost.append(packet)
            elif deadline <= now + LOSS_EPSILON_S:   # same sum as the timer's: no spinning
                self.lost_by_time_threshold += 1
                lost.append(packet)
            elif loss_time is None or deadline < loss_time:
                loss_time = deadline
        self._loss_time_s = loss_time
        if lost:
            self._on_packets_lost(lost)

    def _on_packets_lost(self, lost: list[QuicPacket]) -> None:
        sent = self._sent
        for packet in lost:
            packet.done = True
            del sent[packet.pn]
            if packet.pn <= self._pto_watch_pn:
                self._pto_watch_lost = True
            self.bytes_in_flight -= packet.size_bytes
            self.packets_lost += 1
            self._queue_retransmission(packet.frames)
        # 7.3.2 OnCongestionEvent: one reduction per recovery period.
        if lost[-1].time_sent_s > self._recovery_start_s:
            self._recovery_start_s = self.sim.now
            self.cc.on_congestion_event(self.sim.now, self.bytes_in_flight)
            self.congestion_events += 1
            self._log_cwnd()
        self._schedule_flush()

    def _queue_retransmission(self, frames) -> None:
        """RFC 9000 section 13.3: lost STREAM data (what is still unacknowledged) goes out again."""
        queue = self._new_queue if self.retransmit_in_turn else self._retx_queue
        for stream_id, offset, data, fin in frames:
            stream = self._send_streams[stream_id]
            end = offset + len(data)
            missing = stream.acked.missing(offset, end)
            for low, high in missing:
                queue.append([stream_id, low, high - low, fin and high == end and not stream.fin_acked, True])
            if fin and not stream.fin_acked and (not missing or missing[-1][1] != end):
                queue.append([stream_id, end, 0, True, True])    # only the FIN is missing

    def _set_loss_detection_timer(self) -> None:
        """A.8 SetLossDetectionTimer: the loss time if any, else the PTO if anything is in flight."""
        if self._loss_time_s is not None:
            self.timers.set("loss", self._loss_time_s, self._on_loss_detection_timeout)
            return
        if not self._sent:                        # no ack-eliciting packet in flight
            self.timers.cancel("loss")
            return
        pto = self.rtt.pto_s(self.config.max_ack_delay_s) * (2 ** self._pto_count)
        self.timers.set("loss", self._last_ack_eliciting_s + pto, self._on_loss_detection_timeout)

    def _on_loss_detection_timeout(self) -> None:
        """A.9 OnLossDetectionTimeout."""
        if self._loss_time_s is not None:
            self._detect_lost_packets()
            self._set_loss_detection_timer()
            return
        if not self._sent:
            return
        # 6.2.4: PTO expired: back off and send probes, whatever the congestion window.
        # Nothing is declared lost and the window is not cut (6.2: a PTO is no loss signal).
        self.ptos += 1
        if self._pto_watch_pn < 0:
            self._pto_watch_ptos = 0
            self._pto_watch_lost = False
        self._pto_watch_ptos += 1
        self._pto_watch_pn = next(reversed(self._sent))   # the newest packet in flight
        self._pto_count += 1
        for i in range(PROBE_PACKETS):
            built = self._build_frames() if (self._retx_queue or self._new_queue) else None
            if built is None:
                built = self._oldest_unacked_frames(i)
            self._send_packet(*built, probe=True)
        self._set_loss_detection_timer()

    def _oldest_unacked_frames(self, index: int) -> tuple[list, int]:
        """A copy of the ``index``-th oldest outstanding packet's frames (or of the oldest)."""
        outstanding = list(islice((p for p in self._sent_order if not p.done), index + 1))
        packet = outstanding[-1]
        if packet.frames:
            return packet.frames, packet.size_bytes
        return [], SHORT_HEADER_BYTES + 1           # PING frame (RFC 9000 section 19.2)

    def _log_cwnd(self) -> None:
        log = self.cwnd_log
        if log is not None and log[-1][1] != self.cc.cwnd_bytes:
            log.append((self.sim.now, self.cc.cwnd_bytes))

    def _rtt_sample(self, sample_s: float) -> None:
        """An RTT sample without ack delay (the handshake's): the estimate, slow start, the pacing rate."""
        self.rtt.update(sample_s, 0.0)
        self._slow_start_check(sample_s)
        if self.pacer is not None:
            self.pacer.set_rate(self.cc.cwnd_bytes, self.rtt.smoothed_s)
