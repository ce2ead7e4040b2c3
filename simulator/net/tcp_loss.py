"""The TCP model's answers to loss on the sending side: duplicate ACKs (RFC 5681 section 3.2's
fast retransmit and RFC 6582's NewReno fast recovery, or, with SACK, the entry into RFC 6675's
recovery whose scoreboard is ``tcp_sack``) and the retransmission timer (RFC 6298 section 5,
go-back-N from the first hole) with F-RTO (RFC 5682) and the undo of a spurious timeout's
reduction (RFC 3522 detection, Linux's ``tcp_try_undo_loss``): the part of
``tcp_endpoint.TcpEndpoint``'s sender that ``_on_new_ack`` and the timer call into.  A mixin of
the Python reference only (the C twin ``_tcp.c`` has the same in one place).  Written by hand."""

from __future__ import annotations

from .tcp_packets import _MAX_BACKOFF

__all__ = ["LossRecovery"]


class LossRecovery:
    """Duplicate ACKs and the retransmission timeout of ``TcpEndpoint``'s sender (its state
    lives in ``TcpEndpoint``'s slots)."""

    __slots__ = ()

    # -- retransmission timer (RFC 6298), F-RTO (RFC 5682) and its undo ----------------------
    def _rto_s(self) -> float:
        return min(self.rtt.rto_s() * self._rto_backoff, self.rtt.max_rto_s)

    def _undo_timeout(self) -> None:
        """The timeout was spurious: restore the window it cut (Linux ``tcp_try_undo_loss``:
        cwnd = max(cwnd, prior cwnd), ssthresh = max(ssthresh, prior ssthresh), the Eifel
        response of RFC 4015 section 4 without its RTT adaptation) and resume with new data."""
        self.spurious_rtos += 1
        self._frto = False
        self._high_seq = -1  # out of RTO recovery
        if self._undo_marker:
            cc = self.cc
            if self._prior_cwnd_bytes > cc.cwnd_bytes:
                cc.cwnd_bytes = self._prior_cwnd_bytes
            if self._prior_ssthresh_bytes > cc.ssthresh_bytes:
                cc.ssthresh_bytes = self._prior_ssthresh_bytes
            self._undo_marker = False
            self.undone_reductions += 1
        self._recover = self.snd_max  # RFC 5682 step 3b: recover = SND.NXT
        self.snd_nxt = self.snd_max  # nothing the timeout marked is resent

    # -- duplicate ACKs (RFC 5681 section 3.2, RFC 6582, RFC 6675 section 5) -----------------
    def _on_duplicate_ack(self, ack: int, sack: tuple = ()) -> None:
        newly_sacked = self._take_sack(sack, self.sim.now) if sack and self._sack else 0
        if self._frto:
            if self.snd_max == self._high_seq:
                return  # step 2: an ACK of data sent before the timeout tells nothing (Linux)
            # RFC 5682 step 3a: the new segments drew a duplicate ACK, the loss is real:
            # conventional recovery with cwnd at most 3 * SMSS, go-back-N from the hole.
            self._frto = False
            if self.cc.cwnd_bytes > 3 * self.mss:
                self.cc.cwnd_bytes = 3 * self.mss
            self.snd_nxt = self.snd_una
        self._dupacks += 1
        threshold = self.config.packet_threshold
        if self._sack:
            if self._in_recovery:
                self._prr_ack(newly_sacked, newly_sacked > 0, False)
                self._log_cwnd()
            elif ack > self._recover and (
                self._dupacks >= threshold
                or (self._sacked_bytes and (self._lost_boundary() > ack or self._rack_head_lost()))
            ):
                # RFC 6675 section 5: DupThresh duplicate ACKs or IsLost(HighACK + 1).
                self._enter_sack_recovery()
                self._prr_ack(newly_sacked, True, True)
                self._log_cwnd()
        elif self._in_recovery:
            self._inflation_bytes += self.mss  # RFC 6582 step 3 / RFC 5681 step 4
            self._log_cwnd()
        elif self._dupacks == threshold and ack > self._recover:
            # RFC 5681 3.2 / RFC 6582 3.2 step 2: fast retransmit, enter fast recovery.
            # (ack <= recover: the duplicate ACKs may come from segments resent after a timeout.)
            self._in_recovery = True
            self._partial_acks = 0
            self._recover = self.snd_max
            self._save_undo()
            self._retrans_stamp_s = self.sim.now
            self.cc.on_congestion_event(self.sim.now, self.snd_nxt - self.snd_una)
            self._inflation_bytes = float(threshold * self.mss)
            self.fast_retransmits += 1
            seg = self._by_seq[ack]
            if self.snd_nxt < ack + seg.length:
                self.snd_nxt = ack + seg.length
            self._transmit(seg, True)
            self._log_cwnd()
        self._send_more()

    def _save_undo(self) -> None:
        """Remember the window a reduction is about to cut, for an undo (Linux ``prior_cwnd``)."""
        self._prior_cwnd_bytes = self.cc.cwnd_bytes
        self._prior_ssthresh_bytes = self.cc.ssthresh_bytes
        self._undo_marker = True

    def _on_rto(self) -> None:
        if not self.established:
            self._handshake_timeout()
            return
        if self.snd_una >= self.snd_max:
            return
        self.rtos += 1
        repeated = self._rto_seq == self.snd_una
        if not (repeated or self._in_recovery):
            self._retrans_stamp_s = self.sim.now  # the episode's first retransmission
        # F-RTO (RFC 5682 step 1, Linux tcp_enter_loss): not when the timeout ends a fast
        # recovery or an RTO recovery still under way, unless the same segment timed out again.
        frto = repeated or not (self._in_recovery or self.snd_una < self._high_seq)
        if repeated or self._in_recovery:
            # The same segment timed out again (RFC 5681 section 3.1), or the timeout ends a
            # fast recovery whose loss already reduced ssthresh (as Linux does; FlightSize
            # is inflated there by segments the receiver holds): hold ssthresh.
            self.cc.cwnd_bytes = float(self.mss)
        else:
            self._save_undo()
            self.cc.on_timeout(self.snd_nxt - self.snd_una)  # RFC 5681 (4): ssthresh = FlightSize / 2
        if self._sack:
            # RFC 2018 section 8: after a timeout the scoreboard is cleared (go-back-N resends
            # all); Linux keeps the SACKed marks and resends only the rest, the model does not.
            for seg in self._unacked:
                seg.mark = 0
            self._sacked_bytes = 0
        self._rto_seq = self.snd_una
        self._frto = frto
        self._frto_held = self._dupacks  # with SACK these would be SACKed
        self._high_seq = self.snd_max
        self._in_recovery = False
        self._inflation_bytes = 0.0
        self._dupacks = 0
        self._recover = self.snd_max  # RFC 6582 section 4: no fast retransmit
        # on dup ACKs of go-back-N duplicates
        self._rto_backoff = min(self._rto_backoff * 2, _MAX_BACKOFF)  # RFC 6298 (5.5)
        if self._hystart is not None:
            self._hystart.restart(self.sim.now, self.snd_max)
        self.snd_nxt = self.snd_una  # go-back-N from the first hole
        self._log_cwnd()
        self._send_more()  # (5.4) and (5.6) via _transmit
