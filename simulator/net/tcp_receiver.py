"""The TCP model's receiving side and handshake: the part of ``tcp_endpoint.TcpEndpoint``
that takes segments in (in order or held out of order, RFC 9293 section 3.10.7.4), sends
(delayed) ACKs with SACK blocks (RFC 2018, RFC 1122 4.2.3.2) and runs the optional three-way
handshake (RFC 9293 section 3.5).  A mixin of the Python reference only (the C twin ``_tcp.c``
has the same).  Written by hand."""

from __future__ import annotations

from .link import Packet
from .tcp_packets import _MAX_BACKOFF, TcpAck, TcpControl, TcpSegment

__all__ = ["TcpReceiver"]


class TcpReceiver:
    """The receiving side of ``TcpEndpoint`` (its state lives in ``TcpEndpoint``'s slots)."""

    __slots__ = ()

    # -- receiver ---------------------------------------------------------------------------
    def _on_segment(self, packet: Packet) -> None:
        if not self.established:
            self._establish()  # a data segment implies the handshake completed
        seg: TcpSegment = packet.payload
        seq = seg.seq
        nxt = self.rcv_nxt
        received = self.on_received
        if received is not None and seq >= nxt and seq not in self._ooo:
            now = self.sim.now
            for stream_id, offset, data, _end in seg.pieces:
                received(stream_id, offset, len(data), now)
        if seq <= self._last_ack_sent < seq + seg.length:
            self._ts_recent_s = packet.sent_s  # RFC 7323 section 4.3 (2)
        if seq == nxt:
            ooo = self._ooo
            filled_hole = bool(ooo)
            nxt += seg.length
            if filled_hole:
                pieces = list(seg.pieces)
                while nxt in ooo:
                    held = ooo.pop(nxt)
                    self._ooo_bytes -= held.payload_bytes
                    pieces.extend(held.pieces)
                    nxt += held.length
            else:
                pieces = seg.pieces
            self.rcv_nxt = nxt
            if filled_hole and self._sack_blocks:
                self._sack_blocks = [b for b in self._sack_blocks if b[1] > nxt]
            self._deliver(pieces)
            if filled_hole:
                self._send_ack()  # RFC 5681 4.2: ACK at once a segment filling a gap
            else:
                self._segments_since_ack += 1
                if self._segments_since_ack >= self.config.ack_every_packets:
                    self._send_ack()
                elif self.timers.expiry("delack") is None:
                    self.timers.set("delack", self.sim.now + self.config.max_ack_delay_s, self._send_ack)
        elif seq > nxt:
            if seq not in self._ooo:
                self._ooo[seq] = seg
                self._ooo_bytes += seg.payload_bytes
                if self._ooo_bytes > self.max_ooo_bytes:
                    self.max_ooo_bytes = self._ooo_bytes
            if self._sack:
                self._sack_note(seq, seq + seg.length)
            self._send_ack()  # RFC 5681 4.2: immediate duplicate ACK
        else:
            self._send_ack()  # already received (spurious retransmission)

    def _sack_note(self, start: int, end: int) -> None:
        """RFC 2018 section 4: the block holding the segment just received goes first, merged
        with the held blocks it touches; the others follow, most recently changed first.
        Every held block is kept (Linux keeps 4), so the blocks are exact; the ACK reports the
        first ``_sack_report``."""
        kept = []
        for block in self._sack_blocks:
            if block[1] < start or block[0] > end:
                kept.append(block)
            else:
                if block[0] < start:
                    start = block[0]
                if block[1] > end:
                    end = block[1]
        kept.insert(0, (start, end))
        self._sack_blocks = kept

    def _deliver(self, pieces) -> None:
        """Hand in-order bytes to the application, one call per run of the same stream."""
        callback = self.on_data
        if callback is None:
            for piece in pieces:
                self.bytes_delivered += len(piece[2])
            return
        now = self.sim.now
        if len(pieces) == 1:
            stream_id, _offset, data, end = pieces[0]
            self.bytes_delivered += len(data)
            callback(stream_id, data.tobytes(), end, now)
            return
        run_stream = -1
        run: list = []
        run_end = False
        for stream_id, _offset, data, end in pieces:
            self.bytes_delivered += len(data)
            if stream_id != run_stream:
                if run_stream >= 0:
                    callback(run_stream, run[0].tobytes() if len(run) == 1 else b"".join(run), run_end, now)
                run_stream = stream_id
                run = [data]
            else:
                run.append(data)
            run_end = end
        if run_stream >= 0:
            callback(run_stream, run[0].tobytes() if len(run) == 1 else b"".join(run), run_end, now)

    def _send_ack(self) -> None:
        self._segments_since_ack = 0
        self.timers.cancel("delack")
        self.acks_sent += 1
        self._last_ack_sent = self.rcv_nxt
        sack = tuple(self._sack_blocks[: self._sack_report]) if self._sack_blocks else ()
        self.out_link.send(Packet(self.header_bytes, TcpAck(self.rcv_nxt, self._ts_recent_s, sack)), self._deliver_ack)

    # -- handshake (optional) ---------------------------------------------------------------
    def _send_control(self, kind: str) -> None:
        self.out_link.send(Packet(self.header_bytes, TcpControl(kind)), self.peer._on_control)

    def _start_handshake(self) -> None:
        self._handshake_sent_s = self.sim.now
        self._send_control("SYN")
        self.timers.set("rto", self.sim.now + self._rto_s(), self._on_rto)

    def _handshake_timeout(self) -> None:
        # RFC 6298 (5.5): retransmit the SYN (client) or SYN-ACK (server) with backoff.
        self.rtos += 1
        self._handshake_retransmitted = True
        self._rto_backoff = min(self._rto_backoff * 2, _MAX_BACKOFF)
        self._send_control("SYN" if self.is_client else "SYN-ACK")
        self.timers.set("rto", self.sim.now + self._rto_s(), self._on_rto)

    def _on_control(self, packet: Packet) -> None:
        kind = packet.payload.kind
        if kind == "SYN":
            if not self.established:  # server: answer every SYN (ours may have been lost)
                if self.timers.expiry("rto") is None:
                    self._handshake_sent_s = self.sim.now
                    self.timers.set("rto", self.sim.now + self._rto_s(), self._on_rto)
                else:
                    self._handshake_retransmitted = True  # Karn: the ACK may answer either SYN-ACK
                self._send_control("SYN-ACK")
        elif kind == "SYN-ACK":
            self._send_control("ACK")  # also re-ACK a retransmitted SYN-ACK
            if not self.established:
                self._establish()
        elif kind == "ACK" and not self.established:
            self._establish()

    def _establish(self) -> None:
        self.established = True
        self.timers.cancel("rto")
        if not self._handshake_retransmitted:  # Karn: no sample from a retransmitted SYN
            self.rtt.update(self.sim.now - self._handshake_sent_s)
        self._rto_backoff = 1
        self._send_more()
        if self.on_established is not None:
            self.on_established()
