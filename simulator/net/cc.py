"""RTT estimation and congestion control shared by the TCP and QUIC models.

Written by hand: these are the textbook algorithms, sized to run inside the engine.
- ``RttEstimator``: RFC 6298 section 2 (TCP RTO) and RFC 9002 section 5 (QUIC), which
  share the smoothing (alpha 1/8, beta 1/4).
- ``Reno``: slow start and congestion avoidance of RFC 5681 section 3.1 (appropriate
  byte counting, RFC 3465), multiplicative decrease by 1/2 (RFC 9002 section 7.3.2 for
  QUIC uses the same).
- ``Cubic``: RFC 9438 (C = 0.4, beta = 0.7, with the Reno-friendly region).
- ``RttIncreaseMonitor``: aioquic's delay-based exit from slow start (a HyStart-style
  test on RTT samples, which both its Reno and its CUBIC apply), for the QUIC model.
- ``LinuxHyStart``: Linux CUBIC's exit from slow start (``net/ipv4/tcp_cubic.c``), for the
  TCP model of a Linux server.
Both keep ``cwnd_bytes`` and ``ssthresh_bytes`` and are told of acks, losses and
timeouts; the transports own recovery periods and flight size.
"""

from __future__ import annotations

import math

__all__ = [
    "RttEstimator",
    "Reno",
    "Cubic",
    "RttIncreaseMonitor",
    "LinuxHyStart",
    "make_congestion_control",
    "INITIAL_WINDOW_SEGMENTS",
]

INITIAL_WINDOW_SEGMENTS = 10  # RFC 6928 / RFC 9002 section 7.2


class RttEstimator:
    """Smoothed RTT, RTT variation and the RFC 6298 retransmission timeout."""

    def __init__(
        self,
        initial_rtt_s: float = 0.333,
        min_rto_s: float = 0.2,
        max_rto_s: float = 120.0,
        granularity_s: float = 0.001,
    ) -> None:
        # RFC 6298 (2.4) asks for a 1 s minimum RTO; Linux uses 200 ms (TCP_RTO_MIN),
        # which is what real HTTP/2 servers run with, so that is the default here.  The
        # ceiling is Linux's TCP_RTO_MAX, 120 s (RFC 6298 (2.5) allows any of at least 60 s).
        self.initial_rtt_s = initial_rtt_s
        self.min_rto_s = min_rto_s
        self.max_rto_s = max_rto_s
        self.granularity_s = granularity_s
        self.srtt_s: float | None = None
        self.rttvar_s = initial_rtt_s / 2
        self.min_rtt_s = math.inf
        self.latest_rtt_s = initial_rtt_s

    def update(self, sample_s: float, ack_delay_s: float = 0.0) -> None:
        """Take an RTT sample in seconds: min RTT, then SRTT/RTTVAR (RFC 6298 2.2-2.3, ack delay per RFC 9002 5.3)."""
        self.latest_rtt_s = sample_s
        if sample_s < self.min_rtt_s:
            self.min_rtt_s = sample_s
        if self.srtt_s is None:  # RFC 6298 (2.2)
            self.srtt_s = sample_s
            self.rttvar_s = sample_s / 2
            return
        # RFC 9002 section 5.3: subtract the peer's ack delay when it keeps the sample >= min_rtt.
        adjusted = sample_s
        if sample_s - ack_delay_s >= self.min_rtt_s:
            adjusted = sample_s - ack_delay_s
        self.rttvar_s = 0.75 * self.rttvar_s + 0.25 * abs(self.srtt_s - adjusted)  # RFC 6298 (2.3)
        self.srtt_s = 0.875 * self.srtt_s + 0.125 * adjusted

    @property
    def smoothed_s(self) -> float:
        """Seconds of smoothed RTT; the initial RTT until the first sample (RFC 9002 6.2.2)."""
        return self.srtt_s if self.srtt_s is not None else self.initial_rtt_s

    def rto_s(self) -> float:
        """The TCP retransmission timeout as Linux computes it: SRTT + max(G, 4 * RTTVAR, min_rto),
        at most max_rto; 1 s before the first sample (RFC 6298 (2.1)).

        RFC 6298 (2.3) says SRTT + max(G, 4 * RTTVAR) and (2.4) rounds that up to the
        minimum RTO; Linux (net/ipv4/tcp_input.c, ``tcp_rtt_estimator`` and
        ``__tcp_set_rto``) instead floors the variance term at TCP_RTO_MIN, so its timeout
        is never under SRTT + 200 ms: with a 50 ms path and a steady RTT, RFC 6298 gives
        200 ms and Linux 250 ms, and a queue that doubles the RTT in one round trip
        does not fire it.  Linux also keeps the per-round maximum of its deviation
        (``mdev_max``) and gives falling samples less weight; the model keeps RFC 6298's
        smoothing (alpha 1/8, beta 1/4), which is Linux's for rising samples."""
        if self.srtt_s is None:
            return max(self.min_rto_s, min(self.max_rto_s, 1.0))  # RFC 6298 (2.1): 1 s
        rto = self.srtt_s + max(self.granularity_s, 4 * self.rttvar_s, self.min_rto_s)
        return min(self.max_rto_s, rto)

    def pto_s(self, max_ack_delay_s: float = 0.025) -> float:
        """RFC 9002 section 6.2.1: smoothed_rtt + max(4 * rttvar, kGranularity) + max_ack_delay."""
        return self.smoothed_s + max(4 * self.rttvar_s, self.granularity_s) + max_ack_delay_s


class Reno:
    """Reno/NewReno window arithmetic (the recovery bookkeeping lives in the transport)."""

    name = "reno"

    def __init__(
        self, mss_bytes: int, initial_window_segments: int = INITIAL_WINDOW_SEGMENTS, min_window_segments: int = 2
    ) -> None:
        self.mss_bytes = mss_bytes
        self.cwnd_bytes = float(initial_window_segments * mss_bytes)
        self.ssthresh_bytes = math.inf
        self.min_window_bytes = min_window_segments * mss_bytes
        self._ca_acc = 0.0

    @property
    def in_slow_start(self) -> bool:
        """True while cwnd is below ssthresh (RFC 5681 3.1)."""
        return self.cwnd_bytes < self.ssthresh_bytes

    def on_ack(self, acked_bytes: int, now_s: float, srtt_s: float) -> None:
        """Grow cwnd for ``acked_bytes``: slow start with ABC L=2 (RFC 3465), else about one MSS per RTT (RFC 5681)."""
        if self.in_slow_start:
            # RFC 3465 appropriate byte counting, L = 2 SMSS per ack.
            self.cwnd_bytes += min(acked_bytes, 2 * self.mss_bytes)
        else:
            # RFC 5681 (3): cwnd += SMSS*SMSS/cwnd per ack, i.e. about one MSS per RTT.
            self.cwnd_bytes += self.mss_bytes * acked_bytes / self.cwnd_bytes

    def on_congestion_event(self, now_s: float, flight_bytes: int) -> None:
        """A loss detected by acks (fast retransmit / packet or time threshold)."""
        self.ssthresh_bytes = max(self.cwnd_bytes / 2, self.min_window_bytes)
        self.cwnd_bytes = self.ssthresh_bytes

    def on_timeout(self, flight_bytes: int) -> None:
        """RTO (TCP, RFC 5681 (4)) or persistent congestion (QUIC, RFC 9002 section 7.6)."""
        self.ssthresh_bytes = max(flight_bytes / 2, self.min_window_bytes)
        self.cwnd_bytes = float(self.mss_bytes)


class Cubic(Reno):
    """CUBIC (RFC 9438): window growth as a cubic function of time since the last reduction."""

    name = "cubic"
    C = 0.4
    BETA = 0.7

    def __init__(
        self, mss_bytes: int, initial_window_segments: int = INITIAL_WINDOW_SEGMENTS, min_window_segments: int = 2
    ) -> None:
        super().__init__(mss_bytes, initial_window_segments, min_window_segments)
        self.w_max_segments = 0.0
        self.k_s = 0.0
        self.epoch_start_s: float | None = None
        self.w_est_segments = 0.0

    def on_ack(self, acked_bytes: int, now_s: float, srtt_s: float) -> None:
        """Grow cwnd to the cubic target an RTT ahead or the Reno-friendly estimate if higher (RFC 9438 4.2-4.5)."""
        if self.in_slow_start:
            super().on_ack(acked_bytes, now_s, srtt_s)
            return
        mss = self.mss_bytes
        cwnd_seg = self.cwnd_bytes / mss
        if self.epoch_start_s is None:  # RFC 9438 section 4.2 (first ack of an epoch)
            self.epoch_start_s = now_s
            if self.w_max_segments < cwnd_seg:
                self.w_max_segments = cwnd_seg
            self.k_s = ((self.w_max_segments - cwnd_seg) / self.C) ** (1 / 3)
            self.w_est_segments = cwnd_seg
        t = now_s - self.epoch_start_s
        target = self.C * (t + srtt_s - self.k_s) ** 3 + self.w_max_segments  # eq. 1 at t + RTT
        target = min(max(target, cwnd_seg), 1.5 * cwnd_seg)
        # Reno-friendly estimate (section 4.3): alpha = 3 (1 - beta) / (1 + beta).
        alpha = 3 * (1 - self.BETA) / (1 + self.BETA)
        self.w_est_segments += alpha * (acked_bytes / mss) / cwnd_seg
        if self.w_est_segments > target:
            target = self.w_est_segments
        self.cwnd_bytes += (target - cwnd_seg) / cwnd_seg * acked_bytes

    def on_congestion_event(self, now_s: float, flight_bytes: int) -> None:
        """Remember W_max (with fast convergence, RFC 9438 4.7), cut cwnd to beta = 0.7 of itself (4.6)."""
        cwnd_seg = self.cwnd_bytes / self.mss_bytes
        # Fast convergence (section 4.7).
        if cwnd_seg < self.w_max_segments:
            self.w_max_segments = cwnd_seg * (1 + self.BETA) / 2
        else:
            self.w_max_segments = cwnd_seg
        self.ssthresh_bytes = max(self.cwnd_bytes * self.BETA, self.min_window_bytes)
        self.cwnd_bytes = self.ssthresh_bytes
        self.epoch_start_s = None

    def on_timeout(self, flight_bytes: int) -> None:
        """Reno's timeout reduction, and a new cubic epoch starts at the next ack."""
        super().on_timeout(flight_bytes)
        self.epoch_start_s = None


class RttIncreaseMonitor:
    """Leave slow start when the RTT keeps rising: aioquic's rule (its ``QuicRttMonitor``),
    written here after its behaviour.  At most one RTT sample per ``granularity_s`` is kept,
    in a window of the last ``size`` samples.  Once the window is full, the smallest window
    maximum seen so far is the base; a window whose minimum exceeds the base by a quarter
    of it counts as an increase, a window above the base by less resets the count, and
    ``size`` increases in a row end slow start (the sender sets ssthresh to its window).
    With a deep bottleneck queue this ends slow start long before a loss would."""

    __slots__ = ("size", "granularity_s", "_samples", "_index", "_full", "_last_s", "_base_s", "_increases")

    def __init__(self, size: int = 5, granularity_s: float = 0.001) -> None:
        self.size = size
        self.granularity_s = granularity_s
        self._samples = [0.0] * size
        self._index = 0
        self._full = False
        self._last_s = 0.0
        self._base_s: float | None = None
        self._increases = 0

    def increasing(self, now_s: float, rtt_s: float) -> bool:
        """Take an RTT sample at ``now_s``; True when slow start should end."""
        if now_s <= self._last_s + self.granularity_s:
            return False
        self._last_s = now_s
        self._samples[self._index] = rtt_s
        self._index = (self._index + 1) % self.size
        if self._index == 0:
            self._full = True
        if not self._full:
            return False
        low, high = min(self._samples), max(self._samples)
        if self._base_s is None or self._base_s > high:
            self._base_s = high
        delta = low - self._base_s
        if 4 * delta >= self._base_s:
            self._increases += 1
            return self._increases >= self.size
        if delta > 0:
            self._increases = 0
        return False


class LinuxHyStart:
    """Linux CUBIC's exit from slow start: HyStart (Ha and Rhee, 2011) as the kernel runs it
    (``net/ipv4/tcp_cubic.c``, ``hystart=1``, ``hystart_detect=3``), written here after its
    code.  Rounds begin when the ACKs pass what was sent when the last one began.  Once the
    window holds ``LOW_WINDOW`` segments, in slow start, each ACK's RTT sample is tested:

    * ACK train: ACKs each within ``ACK_DELTA_S`` of the last for longer than half of
      (the minimum RTT + ``ACK_DELAY_S``) since the round began: the window fills the path.
    * Delay: the smallest of the round's samples, from its ``MIN_SAMPLES``-th on, above the
      minimum RTT by an eighth of it (held to 4-16 ms): a queue is building.

    Either sets ssthresh to the window (``sample`` returns True; the caller sets it), ending
    slow start with nothing lost: behind a deep drop-tail queue the window then grows by
    CUBIC's curve, where without this test it doubles each round until the queue holds the
    whole transfer.  A timeout starts the test afresh (``cubictcp_state``, TCP_CA_Loss).
    The kernel's allowance for ACKs delayed by pacing (``hystart_ack_delay``: 4 GSO-sized
    bursts at the pacing rate, at most 1 ms) is its 1 ms at every rate a page sees."""

    LOW_WINDOW = 16  # hystart_low_window, segments
    MIN_SAMPLES = 8  # HYSTART_MIN_SAMPLES
    ACK_DELTA_S = 0.002  # hystart_ack_delta_us
    ACK_DELAY_S = 0.001  # hystart_ack_delay
    DELAY_MIN_S, DELAY_MAX_S = 0.004, 0.016  # HYSTART_DELAY_MIN / _MAX

    __slots__ = ("found", "delay_min_s", "round_start_s", "last_ack_s", "end_seq", "curr_rtt_s", "sample_cnt")

    def __init__(self) -> None:
        self.restart(0.0, 0)  # the first sample past the low window begins a round

    def restart(self, now_s: float, snd_nxt: int) -> None:
        """A new connection or a timeout (``bictcp_reset``, which clears the minimum RTT
        too, and ``bictcp_hystart_reset``)."""
        self.found = False
        self.delay_min_s = 0.0  # 0: no sample yet (ca->delay_min)
        self._round(now_s, snd_nxt)

    def _round(self, now_s: float, snd_nxt: int) -> None:
        self.round_start_s = self.last_ack_s = now_s
        self.end_seq = snd_nxt
        self.curr_rtt_s = math.inf
        self.sample_cnt = 0

    def sample(self, now_s: float, rtt_s: float, snd_una: int, snd_nxt: int, cwnd_segments: float, cc: Reno) -> bool:
        """Take one ACK's RTT sample (``cubictcp_acked``); True when it ends slow start."""
        epoch = getattr(cc, "epoch_start_s", None)
        if epoch is not None and now_s - epoch < 1.0:
            return False  # samples just after a window reduction are not used (the kernel's HZ)
        if self.delay_min_s == 0.0 or self.delay_min_s > rtt_s:
            self.delay_min_s = rtt_s
        if self.found or not cc.in_slow_start or cwnd_segments < self.LOW_WINDOW:
            return False
        if snd_una > self.end_seq:
            self._round(now_s, snd_nxt)
        if now_s - self.last_ack_s <= self.ACK_DELTA_S:
            self.last_ack_s = now_s
            if now_s - self.round_start_s > (self.delay_min_s + self.ACK_DELAY_S) / 2:
                self.found = True
        if self.curr_rtt_s > rtt_s:
            self.curr_rtt_s = rtt_s
        if self.sample_cnt < self.MIN_SAMPLES:
            self.sample_cnt += 1
        elif self.curr_rtt_s > self.delay_min_s + min(max(self.delay_min_s / 8, self.DELAY_MIN_S), self.DELAY_MAX_S):
            self.found = True
        return self.found


CONGESTION_CONTROLS = {"reno": Reno, "newreno": Reno, "cubic": Cubic}  # name (lower case) -> class


def make_congestion_control(name: str, mss_bytes: int, **kw) -> Reno:
    """A ``Reno`` or ``Cubic`` for ``name`` ("reno", "newreno", "cubic"); InputError otherwise."""
    cls = CONGESTION_CONTROLS.get(name.lower())
    if cls is None:
        from ..errors import InputError

        raise InputError(f"unknown congestion control {name!r} (choose reno or cubic)")
    return cls(mss_bytes, **kw)
