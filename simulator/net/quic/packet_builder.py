"""Building and sending the QUIC model's 1-RTT packets (RFC 9000 sections 12.3, 13, 19.8).

Written by hand: the model builds packets as lists of STREAM frames with their sizes
(``packet``), not as bytes.

- Packetisation: frames of several streams share a packet; writes made at the same
  virtual instant are coalesced (one flush is scheduled with ``sim.call_soon``).
  Scheduling across streams is FIFO in write order, with lost data (retransmissions)
  first: a packet is filled from the retransmission queue, then from the queue of new
  data in the order it was written.
- Packets leave while the congestion window (RFC 9002 section 7) and the pacer
  (section 7.7, ``pacer.Pacer``) allow; a due ACK rides in the first packet that leaves
  (``ack.AckGeneration``) and lets one packet past the pacer, as in aioquic.
- Pull writer (optional, ``on_send_ready``): when a packet may leave (window and pacer
  allow) and no data waits, the endpoint asks the application to write now, so data the
  application has not handed over yet (aioquic's per-stream send buffers, served
  round-robin when a packet is built) is scheduled at send time, not at write time;
  ``want_to_send()`` tells the endpoint that the application has some.  The flush its
  writes schedule during a flush is held (its place in the event queue taken) and pushed
  there at the flush's end, unless it would run next and find nothing to do (the window
  full or the pacer holding): the same packets, with one event less per such flush.

The Python here is the reference; ``simulator.net._quic`` is its C twin (the flush, packet
contents, sending), chosen by ``net.native`` (``WORKBENCH_NET=python``: this code;
``tests/test_net_quic_native.py`` compares them).

``PacketBuilder`` is a part of ``connection.QuicEndpoint`` (its methods, the endpoint's
state): the queues ``_new_queue`` / ``_retx_queue`` of chunks ``[stream_id, offset,
length, fin, retransmission]``, ``_next_pn``, ``_max_payload``, ``pacer``.
"""

from __future__ import annotations

from ..link import Packet
from .packet import SHORT_HEADER_BYTES, UDP_IP_HEADER_BYTES, QuicPacket, stream_frame_header_len

__all__ = ["PacketBuilder"]


class PacketBuilder:
    """The sending side of ``QuicEndpoint``: flushes, packet contents, packet numbers."""

    __slots__ = ()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            if self._flushing:  # the pull writer's write during a flush: its place taken, the push
                self._held_flush = self.sim._queue.reserve()  # decided at that flush's end
            else:
                self.sim.call_soon(self._flush)

    def _release_held_flush(self, idle: bool) -> None:
        """At a flush's end, the flush its pull writer's writes scheduled: not pushed when it
        would run next and find nothing to do (the window full or the pacer holding, as this
        flush left them, and no event before it at this instant to change that), else pushed
        at the place it was scheduled, as ``sim.call_soon`` would have."""
        seq = self._held_flush
        self._held_flush = 0
        sim = self.sim
        next_s = sim._queue.next_s()
        if idle and (next_s is None or next_s > sim.now):
            self._flush_scheduled = False  # as its run would have left it
        else:
            sim._queue.push_at(sim.now, seq, self._flush, ())

    def _flush(self) -> None:
        """Send packets while the congestion window (RFC 9002 section 7) and the pacer (7.7)
        allow.  A due ACK rides in the first packet; if none can go, it goes alone (RFC 9000
        13.2).  As aioquic does, a due ACK lets one packet past the pacer."""
        self._flush_scheduled = False
        if not self.ready:
            return
        cc = self.cc
        pacer = self.pacer
        sent = False
        pull = self.on_send_ready
        idle = True  # the loop ended on the window, the pacer or nothing queued
        self._flushing = True
        while self.bytes_in_flight < cc.cwnd_bytes:
            queued = self._retx_queue or self._new_queue
            if not queued and pull is None:
                break
            if pacer is not None and not self._ack_due:
                when_s = pacer.next_send_s(self.sim.now)
                if when_s is not None:
                    self.timers.set("pace", when_s, self._flush)
                    break
            if not queued and not pull():  # the pull writer has nothing more now
                idle = False
                break
            built = self._build_frames(self._pending_ack_bytes())
            if built is None:
                idle = False
                break
            self._send_packet(*built)
            if pacer is not None:
                pacer.on_packet_sent(self.sim.now)
            sent = True
        self._flushing = False
        if sent:
            self._set_loss_detection_timer()
        if self._ack_due:
            self._send_ack()
        if self._held_flush:
            self._release_held_flush(idle)

    def _build_frames(self, reserved_bytes: int = 0) -> tuple[list, int] | None:
        """Fill one packet from the retransmission queue, then new data (FIFO in write order),
        leaving ``reserved_bytes`` for an ACK frame."""
        budget = self._max_payload - reserved_bytes
        frames = []
        streams = self._send_streams
        full = False
        for queue in (self._retx_queue, self._new_queue):
            while queue:
                chunk = queue[0]
                stream_id, offset, length, fin, retx = chunk
                stream = streams[stream_id]
                if retx:  # skip what was acknowledged meanwhile (e.g. a probe copy)
                    end = offset + length
                    if offset < stream.acked_prefix:
                        offset = min(stream.acked_prefix, end)
                        length = end - offset
                        chunk[1], chunk[2] = offset, length
                    if length == 0 and (not fin or stream.fin_acked):
                        queue.popleft()
                        continue
                header = stream_frame_header_len(stream_id, offset, min(length, budget))
                take = min(length, budget - header)
                if take < 0 or (take == 0 and length > 0):
                    full = True
                    break
                last = take == length
                data = stream.data(offset, take)
                frames.append((stream_id, offset, data, fin and last))
                budget -= header + take
                self.stream_bytes_sent += take
                if retx:
                    self.stream_bytes_retransmitted += take
                if last:
                    queue.popleft()
                else:
                    chunk[1] = offset + take
                    chunk[2] = length - take
                    full = True
                    break
            if full:
                break
        if not frames:
            return None
        return frames, self._max_payload - reserved_bytes - budget + SHORT_HEADER_BYTES

    def _send_packet(self, frames: list, size_bytes: int, probe: bool = False) -> None:
        """Send an ack-eliciting packet with a new packet number (never reused, RFC 9000 12.3).
        An ACK of ack-eliciting packets not yet acknowledged rides along (RFC 9000 13.2)."""
        now = self.sim.now
        ack = None
        if self._unacked_eliciting:
            ack, ack_bytes = self._ack_frame()
            size_bytes += ack_bytes
            self._acked_now()
        packet = QuicPacket(self._next_pn, now, size_bytes, frames, ack=ack, probe=probe)
        self._next_pn += 1
        self._sent[packet.pn] = packet
        self._sent_order.append(packet)
        self.bytes_in_flight += size_bytes
        self._last_ack_eliciting_s = now
        self.packets_sent += 1
        if probe:
            self.probe_packets_sent += 1
        wire = size_bytes + UDP_IP_HEADER_BYTES
        self.bytes_sent += wire
        self.link.send(Packet(wire, packet), self.peer._on_packet)
