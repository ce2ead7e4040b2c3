"""Pacing (RFC 9002 section 7.7) with aioquic's rule, for the QUIC model.

Written by hand after the behaviour of aioquic's ``recovery.QuicPacketPacer`` (no code
copied): rate ``cwnd / smoothed_rtt``, a burst of at most max(2, min(cwnd / 4, 16))
datagrams after idle, the rate set at each RTT sample, nothing paced before the first
one.  The endpoint keeps the pacer's timer (slot ``pace``) and asks ``next_send_s``
before each packet.  ``late_s`` (``TransportConfig.pacer_late_s``): how late the server's
event loop wakes the pacer.  aioquic's credit then holds a little more than one interval at
each wake-up, so two packets leave at a time: the lab's aioquic (under hypercorn) sent its
paced packets in pairs, one pair per interval, about 0.7 ms late (its qlog at 300 ms).

This is the reference; ``simulator.net._quic``'s ``QuicCore`` holds its C twin (the same
arithmetic), chosen by ``net.native`` (``WORKBENCH_NET=python``: this class).
"""

from __future__ import annotations

__all__ = ["Pacer"]


class Pacer:
    """RFC 9002 section 7.7 pacing with aioquic's rule (``recovery.QuicPacketPacer``), written here
    after its behaviour: the rate is ``cwnd / smoothed_rtt`` (N = 1), one packet may leave
    every ``max_datagram / rate`` seconds, and idle time builds a credit of at most
    ``max(2, min(cwnd / 4, 16 datagrams))`` packets' worth (a short burst).  The rate is set
    at each RTT sample (``set_rate``); before the first one nothing is paced.  Like aioquic's,
    a packet may leave whenever any credit is left, so float rounding that leaves a tiny
    credit after a send lets a second one through (aioquic sends such pairs too).
    """

    __slots__ = ("max_datagram_bytes", "late_s", "interval_s", "credit_s", "credit_max_s", "updated_s")

    def __init__(self, max_datagram_bytes: int, late_s: float = 0.0) -> None:
        self.max_datagram_bytes = max_datagram_bytes
        self.late_s = late_s  # the wake-up's lateness (an event loop's; 0: on time)
        self.interval_s: float | None = None  # time per packet at the pacing rate
        self.credit_s = 0.0  # sending time saved up while idle
        self.credit_max_s = 0.0
        self.updated_s = 0.0

    def _refill(self, now: float) -> None:
        if now > self.updated_s:
            self.credit_s = min(self.credit_s + (now - self.updated_s), self.credit_max_s)
            self.updated_s = now

    def next_send_s(self, now: float) -> float | None:
        """None if a packet may leave now, else when the pacer wakes to send the next."""
        if self.interval_s is None:
            return None
        self._refill(now)
        return now + self.interval_s + self.late_s if self.credit_s <= 0 else None

    def on_packet_sent(self, now: float) -> None:
        """A packet left at ``now``: spend one interval of credit."""
        if self.interval_s is None:
            return
        self._refill(now)
        self.credit_s = 0.0 if self.credit_s < self.interval_s else self.credit_s - self.interval_s

    def set_rate(self, cwnd_bytes: float, smoothed_rtt_s: float) -> None:
        """Pace at ``cwnd_bytes / smoothed_rtt_s`` (called at each RTT sample, as aioquic)."""
        rate = cwnd_bytes / max(smoothed_rtt_s, 1e-6)  # bytes per second
        self.interval_s = max(1e-6, min(self.max_datagram_bytes / rate, 1.0))
        burst_bytes = max(2 * self.max_datagram_bytes, min(cwnd_bytes // 4, 16 * self.max_datagram_bytes))
        self.credit_max_s = burst_bytes / rate
        if self.credit_s > self.credit_max_s:
            self.credit_s = self.credit_max_s
