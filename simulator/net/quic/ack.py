"""ACK generation in the QUIC model (RFC 9000 sections 13.2 and 19.3).

Written by hand.

- Any packet with data sent while ack-eliciting packets wait to be acknowledged carries
  an ACK frame.  An ACK is *due* after ``config.ack_every_packets`` ack-eliciting
  packets (13.2.2), after the local ACK delay (timer slot ``ack``; ``ack_delay_s``, by
  default ``config.max_ack_delay_s``; aioquic's is 1 ms), or at once when an
  ack-eliciting packet arrives out of order (13.2.1); a due ACK goes in the next packet
  if data leaves at that instant (it lets one packet past the pacer, as in aioquic), else
  in an ACK-only packet (not ack-eliciting, not in flight, subject to the reverse link's
  loss like any packet).
- ACK frames (19.3) cost type + largest + delay + range count + first range + gap/length
  pairs, and report the ack delay and up to ``MAX_ACK_RANGES`` ranges of received packet
  numbers (kept as two sorted lists, ``_recv_lows`` / ``_recv_highs``, inclusive).

The Python here is the reference; ``simulator.net._quic`` is its C twin (received packet
numbers, ACK frames and their sizes, when to ACK), chosen by ``net.native``
(``WORKBENCH_NET=python``: this code; ``tests/test_net_quic_native.py`` compares them).

``AckGeneration`` is a part of ``connection.QuicEndpoint`` (its methods, the endpoint's
state).
"""

from __future__ import annotations

from bisect import bisect_left

from ..link import Packet
from .packet import (ACK_DELAY_EXPONENT, MAX_ACK_RANGES, SHORT_HEADER_BYTES, UDP_IP_HEADER_BYTES, QuicPacket,
                     varint_len)

__all__ = ["AckGeneration"]


class AckGeneration:
    """The receiver's ACKs of ``QuicEndpoint``: received packet numbers, when to ACK, ACK frames."""

    __slots__ = ()

    def _on_packet_number(self, pn: int, ack_eliciting: bool) -> None:
        """Record a received packet number and decide when to ACK (RFC 9000 section 13.2)."""
        lows, highs = self._recv_lows, self._recv_highs
        largest = self._largest_recv_pn
        if highs and pn == highs[-1] + 1:
            highs[-1] = pn
        else:
            i = bisect_left(lows, pn)
            if i > 0 and highs[i - 1] + 1 >= pn:
                if pn > highs[i - 1]:
                    highs[i - 1] = pn
                i -= 1
            else:
                lows.insert(i, pn)
                highs.insert(i, pn)
            if i + 1 < len(lows) and lows[i + 1] == highs[i] + 1:   # filled a gap: merge
                highs[i] = highs[i + 1]
                del lows[i + 1], highs[i + 1]
            if len(lows) > MAX_ACK_RANGES:
                del lows[0], highs[0]
        if pn > largest:
            self._largest_recv_pn = pn
            self._largest_recv_time_s = self.sim.now
        if not ack_eliciting:
            return
        self._unacked_eliciting += 1
        # 13.2.1: ACK at once when out of order (below the largest, or a gap before it).
        out_of_order = largest >= 0 and (pn < largest or pn > largest + 1)
        if out_of_order or self._unacked_eliciting >= self.config.ack_every_packets:
            self._ack_now()
        elif self.timers.expiry("ack") is None:
            self.timers.set("ack", self.sim.now + self._ack_delay_s, self._ack_now)

    def _ack_now(self) -> None:
        """The ACK is due (threshold, out of order, or the ACK delay timer): it goes in the next
        packet if data leaves at this instant, else alone (RFC 9000 section 13.2)."""
        self.timers.cancel("ack")
        if self._unacked_eliciting and not self._ack_due:
            self._ack_due = True
            self._schedule_flush()

    def _acked_now(self) -> None:
        self.timers.cancel("ack")
        self._unacked_eliciting = 0
        self._ack_due = False

    def _pending_ack_bytes(self) -> int:
        return self._ack_frame()[1] if self._unacked_eliciting else 0

    def _ack_frame(self) -> tuple[tuple, int]:
        """The ACK frame (ranges highest first, ack delay) and its size (RFC 9000 section 19.3)."""
        lows, highs = self._recv_lows, self._recv_highs
        ranges = [(lows[i], highs[i]) for i in range(len(lows) - 1, -1, -1)]   # highest first
        ack_delay_s = self.sim.now - self._largest_recv_time_s
        largest = ranges[0][1]
        size = (1 + varint_len(largest) + varint_len(int(ack_delay_s * 1e6) >> ACK_DELAY_EXPONENT)
                + varint_len(len(ranges) - 1) + varint_len(ranges[0][1] - ranges[0][0]))
        prev_low = ranges[0][0]
        for low, high in ranges[1:]:
            size += varint_len(prev_low - high - 2) + varint_len(high - low)
            prev_low = low
        return (ranges, ack_delay_s), size

    def _send_ack(self) -> None:
        """An ACK-only packet (not ack-eliciting, not in flight) with the received ranges."""
        pending = self._unacked_eliciting
        self._acked_now()
        if not pending or not self._recv_lows:
            return
        ack, size = self._ack_frame()
        ranges, ack_delay_s = ack
        ack_delay_s = self.sim.now - self._largest_recv_time_s
        size += SHORT_HEADER_BYTES
        packet = QuicPacket(self._next_pn, self.sim.now, size, (), ack=(ranges, ack_delay_s),
                            ack_eliciting=False)
        self._next_pn += 1
        self.packets_sent += 1
        self.ack_packets_sent += 1
        wire = size + UDP_IP_HEADER_BYTES
        self.bytes_sent += wire
        self.link.send(Packet(wire, packet), self.peer._on_packet)
