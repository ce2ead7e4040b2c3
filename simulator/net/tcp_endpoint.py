"""The TCP model's endpoint, the Python reference: the sender of one direction and the
receiver of the other, with SACK loss recovery (RFC 2018, RFC 6675, PRR of RFC 6937, RACK's
loss marks of RFC 8985) or NewReno, delayed ACKs, Linux's retransmission timer with F-RTO
and its undo, and the optional handshake, as ``tcp``'s docstring describes.  Mixins hold
parts of it (the class docstring lists them); this module keeps the state, the writes, sending
and the new ACK.
``simulator.net._tcp.TcpEndpoint`` is its C twin (same events, same numbers).  Written by hand."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Callable

from .cc import LinuxHyStart, RttEstimator, make_congestion_control
from .link import Link, Packet
from .tcp_loss import LossRecovery
from .tcp_packets import _LOST, _RESENT, _SACKED, TcpSegment
from .tcp_receiver import TcpReceiver
from .tcp_sack import SackScoreboard
from .tcp_window import LinuxWindow
from .transport import DataCallback, stream_id_for

if TYPE_CHECKING:
    from .tcp import TcpConnection

__all__ = ["TcpEndpoint"]

_EMPTY = memoryview(b"")


class TcpEndpoint(LossRecovery, SackScoreboard, TcpReceiver, LinuxWindow):
    """One side of a TCP connection: the sender of one direction and the receiver of the other
    (duplicate ACKs and the retransmission timeout in ``tcp_loss``, the SACK scoreboard in
    ``tcp_sack``, the receiving side and the handshake in ``tcp_receiver``, Linux's window in
    segments in ``tcp_window``)."""

    __slots__ = (
        "sim",
        "conn",
        "is_client",
        "name",
        "peer",
        "out_link",
        "timers",
        "config",
        "mss",
        "header_bytes",
        "cc",
        "rtt",
        "_hystart",
        "established",
        "on_data",
        "on_stream_acked",
        "on_received",
        "on_established",
        "cwnd_log",
        # application streams
        "_next_stream_index",
        "_send_offset",
        "_ended",
        # sender (RFC 9293 names: SND.UNA, SND.NXT; snd_max is the highest SND.NXT so far)
        "snd_una",
        "snd_nxt",
        "snd_max",
        "_pending",
        "_pending_len",
        "_flush_scheduled",
        "_unacked",
        "_by_seq",
        "_dupacks",
        "_in_recovery",
        "_recover",
        "_partial_acks",
        "_inflation_bytes",
        "_rto_backoff",
        "_rto_seq",
        # F-RTO (RFC 5682) and the undo of a spurious timeout's reduction (Linux's names)
        "_frto",
        "_high_seq",
        "_frto_held",
        "_undo_marker",
        "_prior_cwnd_bytes",
        "_prior_ssthresh_bytes",
        "_retrans_stamp_s",
        "_timestamps",
        # SACK (RFC 2018) and its loss recovery (RFC 6675 scoreboard and pipe, RFC 6937 PRR)
        "_sack",
        "_sacked_bytes",
        "_lost_hint",
        "_rack_xmit_s",
        "_rack_end",
        "_pipe",
        "_prr_delivered",
        "_prr_out",
        "_recover_fs",
        "_deliver_segment",
        "_deliver_ack",
        "_handshake_retransmitted",
        "_handshake_sent_s",
        "_packets",
        "_max_packets_out",
        "_cwnd_usage_seq",
        "_is_cwnd_limited",
        "nodelay",  # tcp_window
        # receiver (RCV.NXT)
        "rcv_nxt",
        "_ooo",
        "_ooo_bytes",
        "max_ooo_bytes",
        "_segments_since_ack",
        "_ts_recent_s",
        "_last_ack_sent",
        "_sack_blocks",
        "_sack_report",
        # counters
        "segments_sent",
        "segments_retransmitted",
        "rtos",
        "spurious_rtos",
        "undone_reductions",
        "fast_retransmits",
        "bytes_sent",
        "bytes_delivered",
        "acks_sent",
    )

    def __init__(self, conn: "TcpConnection", *, is_client: bool, out_link: Link, cwnd_log: bool) -> None:
        sim = conn.sim
        config = conn.config
        self.sim = sim
        self.conn = conn
        self.is_client = is_client
        self.name = f"{conn.name}/{'client' if is_client else 'server'}"
        self.peer: TcpEndpoint | None = None
        self.out_link = out_link
        self.timers = sim.timers(self.name, ("rto", "delack"))
        self.config = config
        self.mss = config.mss_bytes
        self.header_bytes = config.header_overhead_bytes
        self.cc = make_congestion_control(
            config.cc, config.mss_bytes, initial_window_segments=config.initial_window_segments
        )
        self.rtt = RttEstimator(initial_rtt_s=config.initial_rtt_s, min_rto_s=config.min_rto_s)
        # Linux CUBIC's HyStart (cc.LinuxHyStart), with config.hystart; Reno has none.
        self._hystart = LinuxHyStart() if config.hystart and self.cc.name == "cubic" else None
        self.established = True
        self.on_data: DataCallback | None = None
        self.on_stream_acked: Callable[[int, int], None] | None = None
        self.on_received: Callable[[int, int, int, float], None] | None = None
        self.on_established: Callable[[], None] | None = None  # the three-way handshake is done
        self.cwnd_log: list[tuple[float, float]] | None = [] if cwnd_log else None

        self._next_stream_index = [0, 0]  # bidirectional, unidirectional
        self._send_offset: dict[int, int] = {}
        self._ended: set[int] = set()

        self.snd_una = self.snd_nxt = self.snd_max = 0
        self._pending: deque[list] = deque()  # [stream_id, offset, memoryview, end] not yet segmented
        self._pending_len = 0  # sequence numbers waiting in _pending
        self._flush_scheduled = False
        self._unacked: deque[TcpSegment] = deque()  # sent, not yet cumulatively acked, in order
        self._by_seq: dict[int, TcpSegment] = {}
        self._dupacks = 0
        self._in_recovery = False
        # RFC 6582 "recover", kept as an end (the highest seq sent + 1, as FreeBSD's snd_recover):
        # a full ACK has ack >= recover; a fast retransmit needs ack - 1 >= recover.
        self._recover = -1
        self._partial_acks = 0
        self._inflation_bytes = 0.0  # fast-recovery window inflation (RFC 6582 steps 2-4)
        self._rto_backoff = 1
        self._rto_seq = -1  # snd_una at the last timeout
        self._frto = False  # an F-RTO detection is under way
        self._high_seq = -1  # snd_max at the timeout: in RTO recovery below it
        self._frto_held = 0  # segments the receiver held when the timer fired
        self._undo_marker = False  # a reduction that an undo may restore
        self._prior_cwnd_bytes = self._prior_ssthresh_bytes = 0.0
        self._retrans_stamp_s = 0.0  # when the episode's first retransmission went out
        self._timestamps = config.timestamps  # RFC 7323 option in use: Eifel detection (RFC 3522)
        self._sack = config.sack  # RFC 2018 option in use: RFC 6675 recovery instead of NewReno
        self._sacked_bytes = 0  # bytes of unacked segments marked SACKed
        self._lost_hint = 0  # no segment below it is marked lost and not resent
        self._rack_xmit_s = -1.0  # RFC 8985 RACK.xmit_ts and RACK.end_seq: the latest
        self._rack_end = 0  # sent segment known delivered
        self._pipe = 0  # RFC 6675 pipe, bytes, in a recovery
        self._prr_delivered = self._prr_out = self._recover_fs = 0  # RFC 6937 PRR state
        self._handshake_retransmitted = False
        self._handshake_sent_s = 0.0
        self._init_window(config)  # tcp_window: the window in segments, TCP_NODELAY

        self.rcv_nxt = 0
        self._ooo: dict[int, TcpSegment] = {}  # out-of-order segments by seq
        self._ooo_bytes = 0
        self.max_ooo_bytes = 0
        self._segments_since_ack = 0
        self._ts_recent_s = 0.0  # RFC 7323 TS.Recent: the send time echoed
        self._last_ack_sent = 0  # RFC 7323 Last.ACK.sent
        self._sack_blocks: list[tuple[int, int]] = []  # held blocks, most recently changed first (RFC 2018 4)
        # RFC 2018 section 3: 40 bytes of options hold 4 blocks, 3 beside the 10-byte timestamp option.
        self._sack_report = 3 if config.timestamps else 4

        self.segments_sent = 0
        self.segments_retransmitted = 0
        self.rtos = self.spurious_rtos = self.undone_reductions = 0
        self.fast_retransmits = 0
        self.bytes_sent = 0
        self.bytes_delivered = 0
        self.acks_sent = 0

    def _connect(self, peer: "TcpEndpoint") -> None:
        self.peer = peer
        self._deliver_segment = peer._on_segment
        self._deliver_ack = peer._on_ack

    # -- application interface (transport.Endpoint) -------------------------------------
    def open_stream(self, unidirectional: bool = False) -> int:
        """A new stream id of this endpoint, numbered as RFC 9000 section 2.1 (a label only)."""
        kind = 1 if unidirectional else 0
        index = self._next_stream_index[kind]
        self._next_stream_index[kind] = index + 1
        return stream_id_for(index, client=self.is_client, unidirectional=unidirectional)

    def write(self, stream_id: int, data: bytes, end: bool = False) -> None:
        """Append ``data`` of ``stream_id`` to this direction's byte stream."""
        if stream_id in self._ended:
            raise ValueError(f"{self.name}: write on stream {stream_id} after its end")
        if stream_id & 0x2 and bool(stream_id & 0x1) == self.is_client:
            raise ValueError(f"{self.name}: stream {stream_id} is the peer's unidirectional stream")
        n = len(data)
        if n == 0 and not end:
            return
        if not isinstance(data, bytes):
            data = bytes(data)  # the caller may reuse a mutable buffer
        offset = self._send_offset.get(stream_id, 0)
        self._send_offset[stream_id] = offset + n
        if end:
            self._ended.add(stream_id)
        self._pending.append([stream_id, offset, memoryview(data) if n else _EMPTY, end])
        self._pending_len += n if n else 1  # an empty end mark takes one sequence number (like FIN)
        if self.nodelay:
            # A send() on a TCP_NODELAY socket: out now if the window allows (tcp_window).
            self._send_more()
            return
        if not self._flush_scheduled:
            # Writes at the same virtual instant share segments: one flush after them all.
            self._flush_scheduled = True
            self.sim.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        self._send_more()

    # -- sender ---------------------------------------------------------------------------
    @property
    def cwnd_bytes(self) -> float:
        """The congestion window in use (including fast-recovery inflation)."""
        return max(self.cc.cwnd_bytes + self._inflation_bytes, self.mss)

    @property
    def flight_bytes(self) -> int:
        """Bytes sent and not yet acknowledged: SND.NXT - SND.UNA (RFC 9293 3.3.1)."""
        return self.snd_nxt - self.snd_una

    def _log_cwnd(self) -> None:
        if self.cwnd_log is not None:
            self.cwnd_log.append((self.sim.now, self.cwnd_bytes))

    def _send_more(self, window: float | None = None) -> None:
        """Send what the congestion window (or ``window``) allows: go-back-N resends first, then new data."""
        if self._in_recovery and self._sack:
            self._send_recovery()
            return
        if not self.established or (not self._pending_len and self.snd_nxt >= self.snd_max):
            return  # nothing to send (e.g. a flush after an ACK sent it)
        mss = self.mss
        if window is None:
            window = self.cc.cwnd_bytes + self._inflation_bytes
            if 0 < self._dupacks < self.config.packet_threshold and not self._in_recovery:
                window += self._dupacks * mss  # RFC 3042 limited transmit
            if window < mss:
                window = mss
        by_seq = self._by_seq
        snd_una = self.snd_una  # sending never moves it
        packets = self._packets
        limited = False
        while True:
            nxt = self.snd_nxt
            flight = nxt - snd_una
            if nxt < self.snd_max:  # resending after a timeout
                seg = by_seq[nxt]
                if flight + seg.length > window:
                    limited = True
                    break
                self.snd_nxt = nxt + seg.length
                self._transmit(seg, True)
            elif self._pending_len:
                pending_len = self._pending_len
                # With ``packets`` (tcp_window) a segment takes one of the window's, whatever its size.
                if (
                    (len(self._unacked) + 1) * mss if packets else flight + (mss if mss < pending_len else pending_len)
                ) > window:
                    limited = True
                    break
                self._send_new_segment(nxt)
            else:
                break
        if packets:
            self._cwnd_validate(limited or (len(self._unacked) + 1) * mss > window)

    def _send_new_segment(self, nxt: int) -> TcpSegment:
        """Cut the next segment of new data at ``nxt`` (= SND.NXT = SND.MAX) and send it."""
        pending = self._pending
        pending_len = self._pending_len
        mss = self.mss
        entry = pending[0]
        n = len(entry[2])
        if n == mss or 0 < n == pending_len < mss:
            # One whole write fills the segment, or is all there is: _new_segment's
            # result without its loop (the model's writers write a segment at a time).
            pending.popleft()
            self._pending_len = pending_len - n
            seg = TcpSegment(nxt, n, n, ((entry[0], entry[1], entry[2], entry[3]),))
        else:
            seg = self._new_segment(nxt)
        self._unacked.append(seg)
        self._by_seq[nxt] = seg
        self.snd_nxt = self.snd_max = nxt + seg.length
        self._transmit(seg, False)
        return seg

    def _send_recovery(self) -> None:
        """RFC 6675 section 5 step (C): while the window leaves room above pipe, send NextSeg():
        the first segment marked lost and not resent since (rule 1, as Linux's
        ``tcp_xmit_retransmit_queue``), else new data (rule 2).  Rules 3 and 4 (resending
        unSACKed data not deemed lost, the rescue retransmission) are not modelled (Linux sends
        neither): a lost tail waits for the RTO."""
        cwnd = self.cc.cwnd_bytes
        by_seq = self._by_seq
        while True:
            seq = self._lost_hint if self._lost_hint > self.snd_una else self.snd_una
            snd_max = self.snd_max
            seg = None
            while seq < snd_max:
                candidate = by_seq[seq]
                if candidate.mark == _LOST:
                    seg = candidate
                    break
                seq += candidate.length
            self._lost_hint = seq
            if seg is not None:
                if self._pipe + seg.length > cwnd:
                    break
                seg.mark = _RESENT
                self._transmit(seg, True)
            elif self._pending_len and self.established:
                pending_len = self._pending_len
                if self._pipe + (self.mss if self.mss < pending_len else pending_len) > cwnd:
                    break
                seg = self._send_new_segment(self.snd_nxt)
            else:
                break
            self._pipe += seg.length
            self._prr_out += seg.length

    def _new_segment(self, seq: int) -> TcpSegment:
        """Cut up to one MSS off the pending writes."""
        room = self.mss
        pending = self._pending
        pieces = []
        length = payload = 0
        while pending and room > 0:
            entry = pending[0]
            data = entry[2]
            n = len(data)
            if n == 0:  # empty end mark: one sequence number
                pieces.append((entry[0], entry[1], data, entry[3]))
                pending.popleft()
                room -= 1
                length += 1
            elif n <= room:
                pieces.append((entry[0], entry[1], data, entry[3]))
                pending.popleft()
                room -= n
                length += n
                payload += n
            else:
                pieces.append((entry[0], entry[1], data[:room], False))
                entry[1] += room
                entry[2] = data[room:]
                length += room
                payload += room
                room = 0
        self._pending_len -= length
        return TcpSegment(seq, length, payload, tuple(pieces))

    def _transmit(self, seg: TcpSegment, retransmission: bool) -> None:
        if self._packets and self.timers.expiry("delack") is not None:
            self._send_ack()  # tcp_window: the ACK rides on this segment
        now = self.sim.now
        seg.sent_s = now
        if retransmission:
            seg.retransmitted = True  # Karn: never an RTT sample from it
            self.segments_retransmitted += 1
        self.segments_sent += 1
        payload_bytes = seg.payload_bytes
        self.bytes_sent += payload_bytes
        self.out_link.send(Packet(payload_bytes + self.header_bytes, seg), self._deliver_segment)
        timers = self.timers
        if timers.expiry("rto") is None:  # RFC 6298 (5.1)
            timers.set("rto", now + self._rto_s(), self._on_rto)

    def _on_ack(self, packet: Packet) -> None:
        payload = packet.payload
        ack = payload.ack
        if ack > self.snd_una:
            self._on_new_ack(ack, payload.echo_s, payload.sack)
        elif ack == self.snd_una and self.snd_max > ack:
            self._on_duplicate_ack(ack, payload.sack)
        # else: an old ACK overtaken by a newer one; nothing to learn

    def _on_new_ack(self, ack: int, echo_s: float, sack: tuple = ()) -> None:
        now = self.sim.now
        mss = self.mss
        old_una = self.snd_una
        sacked_before = self._sacked_bytes
        sack_on = self._sack
        # RFC 3522 (Eifel detection, Linux tcp_packet_delayed): in an RTO recovery, an ACK
        # whose timestamp echo predates the first retransmission answers an original.
        delayed = (
            self._timestamps and self.snd_una < self._high_seq and self._undo_marker and echo_s < self._retrans_stamp_s
        )
        newly_acked = ack - self.snd_una
        self.snd_una = ack
        if self.snd_nxt < ack:  # the receiver already held what go-back-N would resend
            self.snd_nxt = ack
        unacked = self._unacked
        by_seq = self._by_seq
        report = self.on_stream_acked
        acked_streams: dict[int, int] | None = {} if report is not None else None
        first_sent_s = unacked[0].sent_s
        any_retransmitted = False
        frto = self._frto
        original = 0  # never-retransmitted segments sent before the timeout
        popleft = unacked.popleft
        acked_segments = len(unacked)
        while unacked and unacked[0].seq < ack:
            seg = popleft()
            last_sent_s = seg.sent_s
            del by_seq[seg.seq]
            if seg.mark == _SACKED:
                self._sacked_bytes -= seg.length
            elif sack_on:
                self._rack_note(seg, now)
            if seg.retransmitted:
                any_retransmitted = True
            elif frto and seg.seq + seg.length <= self._high_seq:
                original += 1
            if acked_streams is not None:
                for stream_id, offset, data, _end in seg.pieces:
                    acked_streams[stream_id] = offset + len(data)
        acked_segments -= len(unacked)
        newly_sacked = self._take_sack(sack, now) if sack and sack_on else 0
        # RFC 6298 section 3: an RTT sample per ACK, from the oldest newly acked segment, and
        # none (Karn's algorithm) when any newly acked segment was retransmitted.  A fresh
        # sample recomputes the RTO, ending an exponential backoff (RFC 6298 section 5 note).
        if not any_retransmitted:
            self.rtt.update(now - first_sent_s)
            self._rto_backoff = 1
            # Linux's congestion control is given the RTT of the latest sent segment acked.
            hystart = self._hystart
            if hystart is not None and hystart.sample(
                now, now - last_sent_s, ack, self.snd_max, self.cc.cwnd_bytes / mss, self.cc
            ):
                self.cc.ssthresh_bytes = self.cc.cwnd_bytes  # tcp_cubic.c: snd_ssthresh = snd_cwnd
        self._dupacks = 0
        restart_timer = True
        frto_new_data = False
        if delayed:
            self._undo_timeout()  # Linux tcp_try_undo_loss, before F-RTO's tests
        elif frto:
            if original > self._frto_held:
                # RFC 5682 step 3b as Linux applies it (tcp_process_loss): data sent before the
                # timeout and never resent is acknowledged, so it was not lost: spurious.
                self._undo_timeout()
            elif ack < self._high_seq == self.snd_max and self._pending_len:
                frto_new_data = True  # step 2b: the ACK covers the resent segment only
            else:
                # Step 2a/3a (or all that timed out is acknowledged, or no new data to probe
                # with): conventional RTO recovery, go-back-N from the first unacked byte.
                self._frto = False
                if ack < self._high_seq:
                    self.snd_nxt = ack
            self._frto_held -= original if original <= self._frto_held else self._frto_held
        if self._in_recovery:
            if ack >= self._recover:
                self._in_recovery = False
                self._inflation_bytes = 0.0
                if sack_on:
                    self._leave_sack_recovery()
                else:
                    # RFC 6582 3.2 step 3, full ACK: cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS).
                    flight = self.snd_nxt - ack
                    self.cc.cwnd_bytes = min(self.cc.ssthresh_bytes, max(flight, mss) + mss)
            elif sack_on:
                # A partial ACK (RFC 6675 keeps the recovery going; RACK marks what it shows lost).
                self._prr_ack(ack - old_una + self._sacked_bytes - sacked_before, newly_sacked > 0, False)
            else:
                # Step 4, partial ACK: retransmit the next hole, deflate by the newly acked
                # amount, add back one SMSS; reset the timer on the first one only (Impatient).
                seg = by_seq[ack]
                if self.snd_nxt < ack + seg.length:
                    self.snd_nxt = ack + seg.length
                self._transmit(seg, True)
                self._inflation_bytes -= newly_acked
                if newly_acked >= mss:
                    self._inflation_bytes += mss
                self._partial_acks += 1
                restart_timer = self._partial_acks == 1
        elif not self._packets:
            self.cc.on_ack(newly_acked, now, self.rtt.smoothed_s)
        elif self._may_grow():
            # Linux counts what an ACK delivers in segments (tcp_slow_start, tcp_cong_avoid_ai).
            self.cc.on_ack(acked_segments * mss, now, self.rtt.smoothed_s)
        # RFC 6298 (5.2) stop the timer when all is acked, (5.3) else restart it.
        if self.snd_una >= self.snd_max:
            self.timers.cancel("rto")
        elif restart_timer:
            self.timers.set("rto", now + self._rto_s(), self._on_rto)
        if self.cwnd_log is not None:
            self._log_cwnd()
        if acked_streams:
            for stream_id, offset in acked_streams.items():
                report(stream_id, offset)
        if (
            self._sacked_bytes
            and not self._in_recovery
            and ack > self._recover
            and (self._lost_boundary() > ack or self._rack_head_lost())
        ):
            # RFC 6675 section 5: IsLost(HighACK + 1) on an ACK that moved SND.UNA too.
            self._enter_sack_recovery()
            self._prr_ack(ack - old_una + self._sacked_bytes - sacked_before, True, True)
            self._log_cwnd()
        if frto_new_data and self._frto:
            # RFC 5682 step 2b: up to two new segments, whatever the window, and wait for
            # the next ACK; the segments the timeout would resend are left alone for now.
            self.snd_nxt = self.snd_max
            self._send_more(self.snd_max - self.snd_una + 2 * mss)
        else:
            self._send_more()

    # -- statistics -------------------------------------------------------------------------
    def direction_stats(self) -> dict:
        """Counters of the direction this endpoint sends (receiver side from the peer)."""
        peer = self.peer
        return {
            "packets_sent": self.segments_sent,
            "packets_lost": self.segments_retransmitted,
            "rtos": self.rtos,
            "spurious_rtos": self.spurious_rtos,
            "undone_reductions": self.undone_reductions,
            "fast_retransmits": self.fast_retransmits,
            "bytes_sent": self.bytes_sent,
            "bytes_delivered": peer.bytes_delivered,
            "acks_sent": peer.acks_sent,
            "max_receive_buffer_bytes": peer.max_ooo_bytes,
            "srtt_s": self.rtt.smoothed_s,
            "rto_s": self._rto_s(),
            "cwnd_bytes": self.cwnd_bytes,
        }
