"""The TCP model's SACK scoreboard (RFC 6675 section 4, RACK's loss marks of RFC 8985
section 6.2, PRR of RFC 6937): the part of ``tcp_endpoint.TcpEndpoint``'s sender that reads SACK
blocks, marks segments SACKed or lost, counts the pipe and paces recovery.  A mixin of the Python
reference only (the C twin ``_tcp.c`` has the same in one place).  Written by hand."""

from __future__ import annotations

import math

from .tcp_packets import _LOST, _SACKED, TcpSegment

__all__ = ["SackScoreboard"]


class SackScoreboard:
    """The SACK part of ``TcpEndpoint``'s sender (its state lives in ``TcpEndpoint``'s slots)."""

    __slots__ = ()

    # -- SACK scoreboard (RFC 6675 section 4, RACK of RFC 8985 section 6.2) ------------------
    def _rack_note(self, seg: TcpSegment, now: float) -> None:
        """RFC 8985 section 6.2 step 2: remember the latest sent segment delivered; a resent one
        whose RTT is under the minimum may answer its original, and is skipped."""
        sent = seg.sent_s
        if seg.retransmitted and now - sent < self.rtt.min_rtt_s:
            return
        end = seg.seq + seg.length
        if sent > self._rack_xmit_s or (sent == self._rack_xmit_s and end > self._rack_end):
            self._rack_xmit_s = sent
            self._rack_end = end

    def _take_sack(self, blocks, now: float) -> int:
        """Mark the unacked segments the SACK blocks cover (RFC 6675 Update()); the bytes newly SACKed.
        The receiver's blocks are unions of whole segments, whose boundaries never change."""
        newly = 0
        by_seq = self._by_seq
        for start, end in blocks:
            seq = start if start > self.snd_una else self.snd_una
            while seq < end:
                seg = by_seq.get(seq)
                if seg is None or seq + seg.length > end:
                    break
                if seg.mark != _SACKED:
                    seg.mark = _SACKED
                    newly += seg.length
                    self._rack_note(seg, now)
                seq += seg.length
        self._sacked_bytes += newly
        return newly

    def _lost_boundary(self) -> int:
        """RFC 6675 IsLost() counted in segments, as Linux counts SACKed packets: an unSACKed
        segment is lost when DupThresh SACKed segments lie above it; the seq below which that
        holds (-1 if nowhere)."""
        count = 0
        threshold = self.config.packet_threshold
        for seg in reversed(self._unacked):
            if seg.mark == _SACKED:
                count += 1
                if count >= threshold:
                    return seg.seq
        return -1

    def _rack_head_lost(self) -> bool:
        """RFC 8985 section 6.2 outside a recovery, at an ACK: the first unacked segment was
        sent at least the reordering window (min RTT / 4) before the latest sent one known
        delivered.  (RACK's timer, for a segment sent within the window, is not modelled.)"""
        head = self._by_seq[self.snd_una]
        return head.mark != _SACKED and self._rack_xmit_s - head.sent_s >= self.rtt.min_rtt_s / 4

    def _mark_lost_and_pipe(self, dupthresh: bool) -> int:
        """Mark losses, then RFC 6675 SetPipe().  Lost: (``dupthresh``) an unSACKed segment
        below the IsLost() boundary, and (RFC 8985 section 6.2 step 5, with the reordering
        window 0 as Linux's RACK keeps it in recovery while it has seen no reordering) any
        unSACKed segment sent before the latest sent one delivered, a resent one included
        (a lost retransmission, which RFC 6675 alone leaves to the RTO).  Pipe: the unSACKed
        segments not lost, and the lost ones resent since (in flight once more)."""
        boundary = self._lost_boundary() if dupthresh else -1
        rack_s = self._rack_xmit_s
        rack_end = self._rack_end
        hint = self._lost_hint
        pipe = 0
        for seg in self._unacked:
            mark = seg.mark
            if mark == _SACKED or mark == _LOST:
                continue
            sent = seg.sent_s
            if (
                (mark == 0 and seg.seq < boundary)
                or rack_s > sent
                or (rack_s == sent and rack_end > seg.seq + seg.length)
            ):
                seg.mark = _LOST
                if seg.seq < hint:
                    hint = seg.seq
            else:
                pipe += seg.length
        self._lost_hint = hint
        return pipe

    def _enter_sack_recovery(self) -> None:
        """RFC 6675 section 5 (4.1-4.3) with RFC 6937's initialisation: RecoveryPoint =
        HighData, one congestion reduction (ssthresh and cwnd from ``cc``), the first
        unacked segment presumed lost; sending is then PRR's (``_prr_ack``)."""
        self._in_recovery = True
        self._partial_acks = 0
        self._recover = self.snd_max
        self._save_undo()
        self._retrans_stamp_s = self.sim.now
        self.cc.on_congestion_event(self.sim.now, self.snd_nxt - self.snd_una)
        self.fast_retransmits += 1
        self._prr_delivered = self._prr_out = 0
        self._recover_fs = self.snd_nxt - self.snd_una  # RFC 6937: RecoverFS = snd.nxt - snd.una
        head = self._by_seq[self.snd_una]
        if head.mark == 0:
            head.mark = _LOST
        self._lost_hint = self.snd_una

    def _leave_sack_recovery(self) -> None:
        """RFC 6937 section 3 (Linux's tcp_end_cwnd_reduction): cwnd = ssthresh.  Lost marks
        left on data sent during the recovery are dropped; DupThresh finds them again."""
        self.cc.cwnd_bytes = self.cc.ssthresh_bytes
        for seg in self._unacked:
            if seg.mark != _SACKED:
                seg.mark = 0

    def _prr_ack(self, delivered: int, dupthresh: bool, entering: bool) -> None:
        """An ACK in a SACK recovery: losses marked, pipe, then RFC 6937 section 3 (PRR with
        the slow-start reduction bound, as Linux): cwnd = pipe + sndcnt."""
        self._prr_delivered += delivered
        self._pipe = pipe = self._mark_lost_and_pipe(dupthresh)
        ssthresh = self.cc.ssthresh_bytes
        if pipe > ssthresh:
            # Rounded up to whole segments, as Linux counts PRR in packets (a byte count would
            # hold back a segment until a whole one is due, and send less than Linux does).
            sndcnt = math.ceil(self._prr_delivered * ssthresh / self._recover_fs / self.mss) * self.mss - self._prr_out
        else:
            limit = max(self._prr_delivered - self._prr_out, delivered) + self.mss
            sndcnt = min(ssthresh - pipe, limit)
        if entering:
            # The fast retransmit goes out whatever PRR allows (RFC 6675 (4.3); Linux's
            # tcp_cwnd_reduction sends at least it).
            head = self._by_seq[self.snd_una].length
            if sndcnt < head:
                sndcnt = head
        elif sndcnt < 0:
            sndcnt = 0
        self.cc.cwnd_bytes = float(pipe + sndcnt)
