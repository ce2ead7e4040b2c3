"""QUIC transport model: RFC 9000 streams and ACKs, RFC 9002 loss detection and congestion control.

Written by hand.  This is a model of QUIC's *transport behaviour* inside the
discrete-event engine, not a wire implementation: no crypto and no real packet encoding
(the real aioquic stack is a separate piece; where RFC 9000/9002 leave a choice the model
takes aioquic's, so that the two can be cross-validated).  Sizes are accounted as on
the wire so that timing and throughput are right:

- a packet on the link is its UDP payload (at most ``config.max_datagram_bytes``) plus
  28 bytes of IPv4 + UDP header;
- every packet carries a 1-RTT short header of 1 (flags) + 8 (DCID) + 2 (packet
  number) bytes and a 16-byte AEAD tag;
- every STREAM frame costs type (1) + varint stream id + varint offset (left out at
  offset 0, the OFF bit) + varint length, with RFC 9000 section 16 varint sizes;
- ACK frames (RFC 9000 section 19.3) cost type + largest + delay + range count +
  first range + gap/length pairs; they ride in data packets when some leave, else go in
  ACK-only packets (subject to the reverse link's loss like any packet).

Behaviour modelled:

- Streams (RFC 9000 section 2.1 ids): ``open_stream`` gives client bidi 0, 4, 8...,
  client uni 2, 6..., server bidi 1, 5..., server uni 3, 7...  A server answers on the
  client's bidirectional stream.  Receivers deliver each stream's bytes as soon as they
  are contiguous *in that stream's order* (no head-of-line blocking across streams).
- Packetisation: frames of several streams share a packet; writes made at the same
  virtual instant are coalesced (one flush is scheduled with ``sim.call_soon``).
  Scheduling across streams is FIFO in write order, with lost data (retransmissions)
  first: a packet is filled from the retransmission queue, then from the queue of new
  data in the order it was written.
- ACKs (RFC 9000 section 13.2): any packet with data sent while ack-eliciting packets
  wait to be acknowledged carries an ACK frame.  An ACK is *due* after
  ``config.ack_every_packets`` ack-eliciting packets (13.2.2), after the local ACK
  delay (timer slot ``ack``; ``ack_delay_s``, by default ``config.max_ack_delay_s``;
  aioquic's is 1 ms), or at once when an ack-eliciting packet arrives out of order
  (13.2.1); a due ACK goes in the next packet if data leaves at that instant (it lets one
  packet past the pacer, as in aioquic), else in an ACK-only packet.  ACK frames report
  the ack delay and up to ``MAX_ACK_RANGES`` ranges.
- Pull writer (optional, ``on_send_ready``): when a packet may leave (window and pacer
  allow) and no data waits, the endpoint asks the application to write now, so data the
  application has not handed over yet (aioquic's per-stream send buffers, served
  round-robin when a packet is built) is scheduled at send time, not at write time;
  ``want_to_send()`` tells the endpoint that the application has some.
- Pacing (RFC 9002 section 7.7, ``pacing=True``): ``Pacer``, aioquic's rule (rate
  ``cwnd / smoothed_rtt``, a burst of at most max(2, min(cwnd / 4, 16)) datagrams after
  idle, the rate set at each RTT sample, nothing paced before the first one; timer
  slot ``pace``).
- Handshake (RFC 9001, ``handshake=True``; off by default): the client sends its
  Initial padded to the full datagram (RFC 9000 section 14.1), the server answers with
  its Initial + Handshake flight (``server_flight_bytes`` of TLS, one full datagram for
  aioquic's Ed25519 certificate), the client then has 1-RTT keys: it sends its Finished
  (padded: the datagram holds the Initial ACK) and its 1-RTT data, one RTT after the
  start (no 0-RTT).  The server processes 1-RTT packets only once the Finished arrived
  (RFC 9001 5.7: it holds them), then sends HANDSHAKE_DONE in its first 1-RTT packet,
  which confirms the handshake to the client.  Each side takes an RTT sample from the
  handshake.  Lost handshake datagrams are resent at a probe timeout (timer slot
  ``handshake``): aioquic's, twice the initial RTT before any RTT sample, then
  smoothed_rtt + max(4 rttvar, 1 ms), doubling at each expiry (RFC 9002 6.2.1); a server
  that sees the ClientHello again resends its flight at once, once (6.2.3, as aioquic).
  Handshake datagrams are outside the congestion window.
- Loss detection (RFC 9002 section 6): packet threshold (6.1.1), time threshold
  ``time_threshold * max(smoothed_rtt, latest_rtt)`` with a loss timer (6.1.2), and the
  probe timeout ``smoothed_rtt + max(4 rttvar, 1 ms) + max_ack_delay`` with exponential
  backoff (6.2), sending two probe packets (new or lost data if any, otherwise a copy
  of the oldest unacknowledged data).  Loss timer and PTO share the timer slot
  ``loss``.  Lost STREAM data is sent again in new packets with new packet numbers,
  ahead of new data, or (``retransmit_in_turn=True``, as aioquic, which hands lost
  bytes back to their stream's send buffer and serves streams round-robin) behind the
  data already queued.
- A probe timeout declares what it resends lost (``pto_declares_lost=True``, off by
  default): aioquic's ``reschedule_data`` does, although RFC 9002 section 6.2 says a PTO must
  not, so an ACK of a handshake datagram sent before the resend yields no RTT sample (5.1).
  Above twice the initial RTT the handshake then gives no sample, and the first window
  leaves unpaced (the pacer has no rate before a sample).
- Slow-start exit on a rising RTT (``slow_start_rtt_exit=True``, off by default): aioquic's
  Reno and CUBIC end slow start when RTT samples keep rising (``cc.RttIncreaseMonitor``),
  which behind a deep queue happens long before a loss.
- Congestion control (RFC 9002 section 7) through ``cc.Reno`` / ``cc.Cubic``: window
  in bytes of UDP payload, initial window ``initial_window_segments *
  max_datagram_bytes``, bytes in flight counted over ack-eliciting packets (ACK-only
  packets are not in flight, 7 / A.1), one reduction per recovery period (7.3.2: a
  loss of a packet sent before the recovery started does not reduce again), no window
  growth for packets sent during recovery.

Not modelled (on purpose): flow control (MAX_DATA / MAX_STREAM_DATA: windows are
unlimited), persistent congestion (RFC 9002 7.6), the application-limited rule for
window growth (7.8), spurious-loss undo, connection close and stream resets, 0-RTT,
Retry, the anti-amplification limit (3x, never reached by one-datagram flights), and
coalescing the client's first 1-RTT packet into its Finished datagram (aioquic does; here
it follows in its own datagram: one extra header and datagram on the first request).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import deque
from heapq import heappop, heappush
from itertools import islice
from typing import Callable

from ..engine import Simulator
from .cc import RttEstimator, RttIncreaseMonitor, make_congestion_control
from .link import Packet, Path
from .transport import DataCallback, TransportConfig, stream_id_for

__all__ = [
    "QuicConnection", "QuicEndpoint", "QuicPacket", "varint_len",
    "SHORT_HEADER_BYTES", "UDP_IP_HEADER_BYTES", "MAX_ACK_RANGES",
]

UDP_IP_HEADER_BYTES = 28          # IPv4 (20) + UDP (8)
SHORT_HEADER_BYTES = 1 + 8 + 2 + 16   # flags + DCID + packet number + AEAD tag (RFC 9001 5.3)
ACK_DELAY_EXPONENT = 3            # RFC 9000 section 18.2 default
MAX_ACK_RANGES = 32               # ranges kept and reported by a receiver
PROBE_PACKETS = 2                 # RFC 9002 section 6.2.4: one or two probes per PTO
LOSS_EPSILON_S = 1e-9             # guard against float rounding at a loss deadline
# Handshake (RFC 9001) sizes, as aioquic sends them on this link with its Ed25519 test
# certificate: the client's Initial and its Handshake flight are padded to the full datagram
# (a client datagram holding an Initial packet: RFC 9000 section 14.1), the server's
# Initial + Handshake flight (ServerHello ... Finished, about 1.1 kB) fills one datagram.
SERVER_FLIGHT_CRYPTO_BYTES = 1100
CRYPTO_PACKET_OVERHEAD_BYTES = 2 * (1 + 4 + 1 + 8 + 1 + 8 + 2 + 2 + 16)   # two long headers (17.2) + AEAD tags
CRYPTO_ACK_BYTES = 1 + 4 + 1 + 8 + 1 + 8 + 2 + 16 + 5   # a long-header packet holding only an ACK frame
HANDSHAKE_DONE_BYTES = 200        # the server's first 1-RTT packet: HANDSHAKE_DONE, NEW_CONNECTION_IDs (19.15)


def varint_len(value: int) -> int:
    """Bytes of a QUIC variable-length integer (RFC 9000 section 16)."""
    if value < 0x40:
        return 1
    if value < 0x4000:
        return 2
    if value < 0x40000000:
        return 4
    return 8


def stream_frame_header_len(stream_id: int, offset: int, length: int) -> int:
    """STREAM frame header (RFC 9000 section 19.8): type, id, offset (OFF bit), length (LEN bit)."""
    return 1 + varint_len(stream_id) + (varint_len(offset) if offset else 0) + varint_len(length)


class QuicPacket:
    """One QUIC packet: the payload of a link ``Packet`` and, at its sender, the sent-packet record.

    ``frames`` are STREAM frames ``(stream_id, offset, data, fin)``; ``ack`` is an ACK
    frame ``(ranges, ack_delay_s)`` with ranges ``(low, high)`` inclusive, highest first.
    """

    __slots__ = ("pn", "time_sent_s", "size_bytes", "frames", "ack", "ack_eliciting", "done", "probe")

    def __init__(self, pn: int, time_sent_s: float, size_bytes: int, frames: list, ack=None,
                 ack_eliciting: bool = True, probe: bool = False) -> None:
        self.pn = pn
        self.time_sent_s = time_sent_s
        self.size_bytes = size_bytes          # UDP payload bytes (what RFC 9002 counts in flight)
        self.frames = frames
        self.ack = ack
        self.ack_eliciting = ack_eliciting
        self.done = False                     # acknowledged or declared lost (sender side)
        self.probe = probe

    def __repr__(self) -> str:
        kind = "ack" if self.ack is not None else "data"
        return f"QuicPacket(pn={self.pn}, {kind}, {self.size_bytes} B, {len(self.frames)} frames)"


class Pacer:
    """RFC 9002 section 7.7 pacing with aioquic's rule (``recovery.QuicPacketPacer``), written here
    after its behaviour: the rate is ``cwnd / smoothed_rtt`` (N = 1), one packet may leave
    every ``max_datagram / rate`` seconds, and idle time builds a credit of at most
    ``max(2, min(cwnd / 4, 16 datagrams))`` packets' worth (a short burst).  The rate is set
    at each RTT sample (``set_rate``); before the first one nothing is paced.  Like aioquic's,
    a packet may leave whenever any credit is left, so float rounding that leaves a tiny
    credit after a send lets a second one through (aioquic sends such pairs too).
    """

    __slots__ = ("max_datagram_bytes", "interval_s", "credit_s", "credit_max_s", "updated_s")

    def __init__(self, max_datagram_bytes: int) -> None:
        self.max_datagram_bytes = max_datagram_bytes
        self.interval_s: float | None = None     # time per packet at the pacing rate
        self.credit_s = 0.0                      # sending time saved up while idle
        self.credit_max_s = 0.0
        self.updated_s = 0.0

    def _refill(self, now: float) -> None:
        if now > self.updated_s:
            self.credit_s = min(self.credit_s + (now - self.updated_s), self.credit_max_s)
            self.updated_s = now

    def next_send_s(self, now: float) -> float | None:
        """None if a packet may leave now, else when the next one may."""
        if self.interval_s is None:
            return None
        self._refill(now)
        return now + self.interval_s if self.credit_s <= 0 else None

    def on_packet_sent(self, now: float) -> None:
        if self.interval_s is None:
            return
        self._refill(now)
        self.credit_s = 0.0 if self.credit_s < self.interval_s else self.credit_s - self.interval_s

    def set_rate(self, cwnd_bytes: float, smoothed_rtt_s: float) -> None:
        rate = cwnd_bytes / max(smoothed_rtt_s, 1e-6)              # bytes per second
        self.interval_s = max(1e-6, min(self.max_datagram_bytes / rate, 1.0))
        burst_bytes = max(2 * self.max_datagram_bytes, min(cwnd_bytes // 4, 16 * self.max_datagram_bytes))
        self.credit_max_s = burst_bytes / rate
        if self.credit_s > self.credit_max_s:
            self.credit_s = self.credit_max_s


class CryptoDatagram:
    """A handshake datagram (Initial / Handshake packets, RFC 9001): ``kind`` is
    "client_initial", "server_flight", "client_finished" or "ack" (an ACK of the peer's
    handshake datagrams and nothing else); ``index`` numbers the datagrams of a flight;
    ``echo_s`` is the send time of the peer datagram this one acknowledges (RTT sample)."""

    __slots__ = ("kind", "index", "size_bytes", "time_sent_s", "echo_s", "acked")

    def __init__(self, kind: str, index: int, size_bytes: int, time_sent_s: float, echo_s: float | None = None,
                 acked: tuple = ()) -> None:
        self.kind = kind
        self.index = index
        self.size_bytes = size_bytes
        self.time_sent_s = time_sent_s
        self.echo_s = echo_s
        self.acked = acked                     # indices of the peer's current flight it acknowledges

    def __repr__(self) -> str:
        return f"CryptoDatagram({self.kind} {self.index}, {self.size_bytes} B)"


class _RangeSet:
    """Sorted disjoint half-open byte ranges [start, end)."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, lo: int, hi: int) -> None:
        if hi <= lo:
            return
        starts, ends = self.starts, self.ends
        if starts and starts[-1] <= lo <= ends[-1]:       # common case: extends the last range
            if hi > ends[-1]:
                ends[-1] = hi
            return
        i = bisect_left(ends, lo)        # first range that ends at or after lo
        j = bisect_right(starts, hi)     # ranges [i, j) touch [lo, hi)
        if i == j:
            starts.insert(i, lo)
            ends.insert(i, hi)
        else:
            starts[i:j] = [min(lo, starts[i])]
            ends[i:j] = [max(hi, ends[j - 1])]

    def prefix(self) -> int:
        """End of the range starting at 0 (0 if none)."""
        return self.ends[0] if self.starts and self.starts[0] == 0 else 0

    def missing(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Sub-ranges of [lo, hi) not in the set."""
        starts, ends = self.starts, self.ends
        out = []
        cur = lo
        i = bisect_right(ends, lo)
        while cur < hi and i < len(starts):
            s = starts[i]
            if s >= hi:
                break
            if s > cur:
                out.append((cur, s))
            if ends[i] > cur:
                cur = ends[i]
            i += 1
        if cur < hi:
            out.append((cur, hi))
        return out


class _SendStream:
    __slots__ = ("stream_id", "buf", "fin", "fin_offset", "acked", "acked_prefix", "fin_acked")

    def __init__(self, stream_id: int) -> None:
        self.stream_id = stream_id
        self.buf = bytearray()            # every byte written (kept for retransmission)
        self.fin = False
        self.fin_offset = -1
        self.acked = _RangeSet()
        self.acked_prefix = 0
        self.fin_acked = False


class _RecvStream:
    __slots__ = ("delivered", "fin_offset", "heap", "heap_bytes", "finished")

    def __init__(self) -> None:
        self.delivered = 0                # bytes handed to the application, in order
        self.fin_offset = -1
        self.heap: list[tuple[int, bytes]] = []   # out-of-order (offset, data)
        self.heap_bytes = 0
        self.finished = False


class QuicEndpoint:
    """One side of a ``QuicConnection`` (sender and receiver).  See ``transport.Endpoint``."""

    __slots__ = (
        "sim", "conn", "config", "is_client", "name", "peer", "link", "timers",
        "on_data", "on_stream_acked", "on_packet_acked", "on_send_ready",
        # streams
        "_next_bidi", "_next_uni", "_send_streams", "_recv_streams",
        # sending
        "_next_pn", "_new_queue", "_retx_queue", "_flush_scheduled", "_max_payload",
        # loss detection (RFC 9002 appendix A)
        "rtt", "cc", "_sent", "_sent_order", "_largest_acked", "_loss_time_s",
        "_last_ack_eliciting_s", "_pto_count", "bytes_in_flight", "_recovery_start_s",
        # ACK generation
        "_recv_lows", "_recv_highs", "_largest_recv_pn", "_largest_recv_time_s", "_unacked_eliciting",
        "_ack_due", "_ack_delay_s",
        # pacing (RFC 9002 section 7.7) and the handshake (RFC 9001)
        "pacer", "retransmit_in_turn", "rtt_monitor", "ready", "handshake_done_s", "_hs_flight", "_hs_pto_count", "_hs_peer_received",
        "_hs_peer_echo_s", "_hs_sped_up", "_hs_sent_s", "_hs_pto_s", "pto_declares_lost", "_held", "crypto_datagrams_sent", "handshake_ptos",
        # statistics
        "packets_sent", "ack_packets_sent", "probe_packets_sent", "packets_lost",
        "lost_by_packet_threshold", "lost_by_time_threshold", "ptos", "congestion_events",
        "bytes_sent", "stream_bytes_sent", "stream_bytes_retransmitted", "bytes_delivered",
        "reorder_bytes", "max_reorder_bytes", "cwnd_log",
    )

    def __init__(self, sim: Simulator, conn: "QuicConnection", config: TransportConfig, *,
                 is_client: bool, name: str, log_cwnd: bool, pacing: bool = True,
                 ack_delay_s: float | None = None, handshake: bool = False,
                 retransmit_in_turn: bool = False, slow_start_rtt_exit: bool = False,
                 pto_declares_lost: bool = False) -> None:
        self.sim = sim
        self.conn = conn
        self.config = config
        self.is_client = is_client
        self.name = name
        self.peer: QuicEndpoint | None = None
        self.link = None
        self.timers = sim.timers(name, ("loss", "ack", "pace", "handshake"))
        self.on_data: DataCallback | None = None
        self.on_stream_acked: Callable[[int, int], None] | None = None
        self.on_packet_acked: Callable[[int, list], None] | None = None
        # Pull writer: called when a packet may leave and no data waits, to write more now.
        self.on_send_ready: Callable[[], bool] | None = None

        self._next_bidi = 0
        self._next_uni = 0
        self._send_streams: dict[int, _SendStream] = {}
        self._recv_streams: dict[int, _RecvStream] = {}

        self._next_pn = 0
        self._new_queue: deque[list] = deque()    # [stream_id, offset, length, fin], write order
        self._retx_queue: deque[list] = deque()   # lost data, sent before new data
        self._flush_scheduled = False
        self._max_payload = config.max_datagram_bytes - SHORT_HEADER_BYTES

        self.rtt = RttEstimator(initial_rtt_s=config.initial_rtt_s)
        self.cc = make_congestion_control(config.cc, config.max_datagram_bytes,
                                          initial_window_segments=config.initial_window_segments)
        self._sent: dict[int, QuicPacket] = {}    # outstanding ack-eliciting packets by number
        self._sent_order: deque[QuicPacket] = deque()   # the same, oldest first (lazily pruned)
        self._largest_acked = -1
        self._loss_time_s: float | None = None
        self._last_ack_eliciting_s = 0.0
        self._pto_count = 0
        self.bytes_in_flight = 0
        self._recovery_start_s = -1.0

        self._recv_lows: list[int] = []           # received packet numbers, inclusive ranges, ascending
        self._recv_highs: list[int] = []
        self._largest_recv_pn = -1
        self._largest_recv_time_s = 0.0
        self._unacked_eliciting = 0
        self._ack_due = False                     # an ACK must go out now (with data, or alone)
        self._ack_delay_s = config.max_ack_delay_s if ack_delay_s is None else ack_delay_s

        self.pacer = Pacer(config.max_datagram_bytes) if pacing else None
        self.retransmit_in_turn = retransmit_in_turn
        self.rtt_monitor = RttIncreaseMonitor() if slow_start_rtt_exit else None
        self.ready = not handshake                # 1-RTT keys in use (RFC 9001 section 4.1.4)
        self.handshake_done_s = 0.0 if not handshake else None
        self._hs_flight: list[CryptoDatagram] = []    # this side's current handshake flight
        self._hs_pto_count = 0
        self._hs_peer_received: set[int] = set()      # indices of the peer's flight received
        self._hs_peer_echo_s: float | None = None     # send time of the peer datagram to echo
        self._hs_sped_up = False
        self._hs_sent_s = 0.0
        self._hs_pto_s: float | None = None        # when a probe (or a speed-up) last resent the flight
        self.pto_declares_lost = pto_declares_lost
        self._held: list[Packet] = []             # 1-RTT packets received before the handshake completed
        self.crypto_datagrams_sent = 0
        self.handshake_ptos = 0

        self.packets_sent = 0
        self.ack_packets_sent = 0
        self.probe_packets_sent = 0
        self.packets_lost = 0
        self.lost_by_packet_threshold = 0
        self.lost_by_time_threshold = 0
        self.ptos = 0
        self.congestion_events = 0
        self.bytes_sent = 0
        self.stream_bytes_sent = 0
        self.stream_bytes_retransmitted = 0
        self.bytes_delivered = 0
        self.reorder_bytes = 0
        self.max_reorder_bytes = 0
        self.cwnd_log: list[tuple[float, float]] | None = [(0.0, self.cc.cwnd_bytes)] if log_cwnd else None

    # -- application interface -------------------------------------------------------
    def open_stream(self, unidirectional: bool = False) -> int:
        """A new stream id of this endpoint (RFC 9000 section 2.1)."""
        if unidirectional:
            index = self._next_uni
            self._next_uni += 1
        else:
            index = self._next_bidi
            self._next_bidi += 1
        stream_id = stream_id_for(index, client=self.is_client, unidirectional=unidirectional)
        self._send_streams[stream_id] = _SendStream(stream_id)
        return stream_id

    def write(self, stream_id: int, data: bytes, end: bool = False) -> None:
        """Queue ``data`` on ``stream_id`` (``end``: this is the last write, FIN)."""
        stream = self._send_streams.get(stream_id)
        if stream is None:
            own = (stream_id & 1) == (0 if self.is_client else 1)
            if own:
                raise ValueError(f"{self.name}: stream {stream_id} was not opened")
            if stream_id & 2:
                raise ValueError(f"{self.name}: stream {stream_id} is the peer's unidirectional stream")
            stream = self._send_streams[stream_id] = _SendStream(stream_id)   # answer on a peer's bidi stream
        if stream.fin:
            raise ValueError(f"{self.name}: stream {stream_id} already ended")
        offset = len(stream.buf)
        stream.buf += data
        if end:
            stream.fin = True
            stream.fin_offset = len(stream.buf)
        if not data and not end:
            return
        queue = self._new_queue
        last = queue[-1] if queue else None
        if (last is not None and last[0] == stream_id and last[1] + last[2] == offset and not last[3]
                and not last[4]):
            last[2] += len(data)             # same stream, contiguous: one chunk
            last[3] = end
        else:
            queue.append([stream_id, offset, len(data), end, False])
        self._schedule_flush()

    def want_to_send(self) -> None:
        """The application has data for ``on_send_ready`` to write: try to send at this instant."""
        self._schedule_flush()

    # -- sending ---------------------------------------------------------------------
    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.sim.call_soon(self._flush)

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
        while self.bytes_in_flight < cc.cwnd_bytes:
            queued = self._retx_queue or self._new_queue
            if not queued and pull is None:
                break
            if pacer is not None and not self._ack_due:
                when_s = pacer.next_send_s(self.sim.now)
                if when_s is not None:
                    self.timers.set("pace", when_s, self._flush)
                    break
            if not queued and not pull():     # the pull writer has nothing more now
                break
            built = self._build_frames(self._pending_ack_bytes())
            if built is None:
                break
            self._send_packet(*built)
            if pacer is not None:
                pacer.on_packet_sent(self.sim.now)
            sent = True
        if sent:
            self._set_loss_detection_timer()
        if self._ack_due:
            self._send_ack()

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
                if retx:                       # skip what was acknowledged meanwhile (e.g. a probe copy)
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
                data = bytes(stream.buf[offset:offset + take])
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

    # -- receiving -------------------------------------------------------------------
    def _on_packet(self, link_packet: Packet) -> None:
        packet = link_packet.payload
        if packet.__class__ is CryptoDatagram:
            self._on_crypto_datagram(packet)
            return
        if not self.ready:
            if self.is_client:
                return                            # cannot happen: the server sends 1-RTT only once ready
            self._held.append(link_packet)        # RFC 9001 5.7: buffered until the handshake completes
            return
        if self.handshake_done_s is None:         # client: a 1-RTT packet confirms the handshake (4.1.2)
            self._handshake_confirmed()
        if packet.ack is not None:
            self._on_ack_frame(*packet.ack)
        for stream_id, offset, data, fin in packet.frames:
            self._on_stream_frame(stream_id, offset, data, fin)
        self._on_packet_number(packet.pn, packet.ack_eliciting)

    def _on_stream_frame(self, stream_id: int, offset: int, data: bytes, fin: bool) -> None:
        stream = self._recv_streams.get(stream_id)
        if stream is None:
            stream = self._recv_streams[stream_id] = _RecvStream()
        end = offset + len(data)
        if fin:
            stream.fin_offset = end
        if stream.finished:
            return
        delivered = stream.delivered
        if offset > delivered:                   # a hole before it: hold back (this stream only)
            heappush(stream.heap, (offset, data))
            stream.heap_bytes += len(data)
            self.reorder_bytes += len(data)
            if self.reorder_bytes > self.max_reorder_bytes:
                self.max_reorder_bytes = self.reorder_bytes
            return
        parts = []
        if end > delivered:
            parts.append(data if offset == delivered else data[delivered - offset:])
            delivered = end
        heap = stream.heap
        while heap and heap[0][0] <= delivered:
            held_offset, held = heappop(heap)
            stream.heap_bytes -= len(held)
            self.reorder_bytes -= len(held)
            held_end = held_offset + len(held)
            if held_end > delivered:
                parts.append(held[delivered - held_offset:])
                delivered = held_end
        new_bytes = delivered - stream.delivered
        stream.delivered = delivered
        done = stream.fin_offset >= 0 and delivered >= stream.fin_offset
        if new_bytes or done:
            if done:
                stream.finished = True
            self.bytes_delivered += new_bytes
            if self.on_data is not None:
                chunk = parts[0] if len(parts) == 1 else b"".join(parts)
                self.on_data(stream_id, chunk, done, self.sim.now)

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

    # -- handshake (RFC 9001): its datagrams, their sizes and timing; no TLS ---------------
    def start_handshake(self) -> None:
        """Client: send the Initial (ClientHello), padded to the full datagram (RFC 9000 14.1)."""
        self._hs_send_flight("client_initial", [self.config.max_datagram_bytes])

    def _hs_send_flight(self, kind: str, sizes: list[int]) -> None:
        self._hs_flight = [[kind, index, size, False] for index, size in enumerate(sizes)]
        self._hs_pto_count = 0
        for kind_, index, size, _ in self._hs_flight:
            self._hs_transmit(kind_, index, size)
        self._hs_arm()

    def _hs_transmit(self, kind: str, index: int, size_bytes: int) -> None:
        now = self.sim.now
        datagram = CryptoDatagram(kind, index, size_bytes, now, self._hs_peer_echo_s,
                                  tuple(sorted(self._hs_peer_received)))
        self._hs_sent_s = now
        self.crypto_datagrams_sent += 1
        wire = size_bytes + UDP_IP_HEADER_BYTES
        self.bytes_sent += wire
        self.link.send(Packet(wire, datagram), self.peer._on_packet)

    def _hs_send_ack(self, size_bytes: int = CRYPTO_ACK_BYTES) -> None:
        """A datagram that only acknowledges the peer's handshake datagrams."""
        self._hs_transmit("ack", 0, size_bytes)

    def _hs_arm(self) -> None:
        """The handshake's probe timeout: aioquic's rule, twice the initial RTT before any RTT
        sample, then smoothed_rtt + max(4 rttvar, 1 ms) without max_ack_delay (RFC 9002
        6.2.1), doubling at each expiry (6.2.1)."""
        if all(entry[3] for entry in self._hs_flight):
            self.timers.cancel("handshake")
            return
        rtt = self.rtt
        if rtt.srtt_s is None:
            pto = 2 * self.config.initial_rtt_s
        else:
            pto = rtt.smoothed_s + max(4 * rtt.rttvar_s, rtt.granularity_s)
        self.timers.set("handshake", self._hs_sent_s + pto * (2 ** self._hs_pto_count), self._hs_timeout)

    def _hs_timeout(self) -> None:
        """Resend what of the flight is unacknowledged (RFC 9002 6.2.4: probes carry the CRYPTO data)."""
        self.handshake_ptos += 1
        self._hs_pto_count += 1
        self._hs_pto_s = self.sim.now
        for kind, index, size, acked in self._hs_flight:
            if not acked:
                self._hs_transmit(kind, index, size)
        self._hs_arm()

    def _hs_mark_acked(self, acked: tuple) -> None:
        for entry in self._hs_flight:
            if (entry[0], entry[1]) in acked:
                entry[3] = True
        self._hs_arm()

    def _hs_rtt_sample(self, echo_s: float | None) -> None:
        """The RTT sample of the handshake (RFC 9002 section 5.1): from the peer's echo of
        the send time of the datagram it acknowledges.  ``pto_declares_lost`` (aioquic): a
        probe timeout, or the server's speed-up on a repeated ClientHello, declares the
        datagrams it resends lost (``reschedule_data``), so an acknowledgement of a copy sent
        before the resend finds nothing to sample (RFC 9002 section 6.2 says a PTO must not
        declare packets lost; aioquic does)."""
        if echo_s is None:
            return
        if self.pto_declares_lost and self._hs_pto_s is not None and echo_s < self._hs_pto_s:
            return
        self._rtt_sample(self.sim.now - echo_s)

    def _rtt_sample(self, sample_s: float) -> None:
        self.rtt.update(sample_s, 0.0)
        self._slow_start_check(sample_s)
        if self.pacer is not None:
            self.pacer.set_rate(self.cc.cwnd_bytes, self.rtt.smoothed_s)

    def _on_crypto_datagram(self, datagram: CryptoDatagram) -> None:
        now = self.sim.now
        kind = datagram.kind
        if datagram.acked:
            self._hs_mark_acked(datagram.acked)
        if kind == "ack":
            return
        key = (kind, datagram.index)
        duplicate = key in self._hs_peer_received
        self._hs_peer_received.add(key)
        if self.is_client:
            if kind != "server_flight":
                return
            flight = self.conn.server_flight_sizes
            if self.ready:
                self._hs_send_ack()                # a late copy: acknowledge it (Handshake ACK)
                return
            self._hs_peer_echo_s = datagram.time_sent_s
            if all(("server_flight", i) in self._hs_peer_received for i in range(len(flight))):
                # The server's flight is complete: the client has 1-RTT keys and sends its
                # Finished (with the Initial ACK, so padded, 14.1), then 1-RTT data (RFC 9001 4.1).
                self._hs_rtt_sample(datagram.echo_s)
                self.ready = True
                self._hs_mark_acked((("client_initial", 0),))
                self._hs_send_flight("client_finished", [self.config.max_datagram_bytes])
                self._schedule_flush()
            else:
                self._hs_send_ack(self.config.max_datagram_bytes)   # holds an Initial ACK: padded
            return
        # server
        if kind == "client_initial":
            if not self._hs_flight:
                self._hs_peer_echo_s = datagram.time_sent_s
                self._hs_send_flight("server_flight", self.conn.server_flight_sizes)
            elif (duplicate and not self._hs_sped_up and not all(e[3] for e in self._hs_flight)
                  and self._hs_sent_s < now):      # (not when its own PTO just resent it)
                # aioquic: a repeated ClientHello means the client lacks the server's flight:
                # resend it at once, once (RFC 9002 6.2.3, speeding up the handshake).
                self._hs_sped_up = True
                self._hs_pto_s = now              # aioquic declares the flight lost here too
                for kind_, index, size, acked in self._hs_flight:
                    if not acked:
                        self._hs_transmit(kind_, index, size)
                self._hs_arm()
            else:
                self._hs_send_ack()
        elif kind == "client_finished":
            self._hs_mark_acked(tuple(("server_flight", i) for i in range(len(self.conn.server_flight_sizes))))
            if self.ready:
                self._hs_send_ack()                # the client probes: it has not seen our 1-RTT packets
                return
            self._hs_rtt_sample(datagram.echo_s)
            self.ready = True
            self.handshake_done_s = now
            held, self._held = self._held, []
            for link_packet in held:
                self._on_packet(link_packet)
            # HANDSHAKE_DONE (RFC 9000 19.20) and new connection ids, in the first 1-RTT packet.
            self._send_packet([], HANDSHAKE_DONE_BYTES)
            self._set_loss_detection_timer()
            self._schedule_flush()

    def _handshake_confirmed(self) -> None:
        """Client: a 1-RTT packet from the server acknowledges the Finished (RFC 9001 4.1.2)."""
        self.handshake_done_s = self.sim.now
        for entry in self._hs_flight:
            entry[3] = True
        self.timers.cancel("handshake")

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
                if self.on_stream_acked is not None:
                    self.on_stream_acked(stream_id, prefix)
        self._log_cwnd()
        self._detect_lost_packets()
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
        self.ptos += 1
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

    # -- statistics ------------------------------------------------------------------
    def stats(self) -> dict:
        out = {
            "packets_sent": self.packets_sent,
            "ack_packets_sent": self.ack_packets_sent,
            "probe_packets_sent": self.probe_packets_sent,
            "packets_lost": self.packets_lost,
            "lost_by_packet_threshold": self.lost_by_packet_threshold,
            "lost_by_time_threshold": self.lost_by_time_threshold,
            "ptos": self.ptos,
            "congestion_events": self.congestion_events,
            "bytes_sent": self.bytes_sent,
            "stream_bytes_sent": self.stream_bytes_sent,
            "stream_bytes_retransmitted": self.stream_bytes_retransmitted,
            "bytes_delivered": self.bytes_delivered,
            "max_reorder_buffer_bytes": self.max_reorder_bytes,
            "cwnd_bytes": self.cc.cwnd_bytes,
            "srtt_s": self.rtt.srtt_s,
            "min_rtt_s": self.rtt.min_rtt_s,
            "crypto_datagrams_sent": self.crypto_datagrams_sent,
            "handshake_ptos": self.handshake_ptos,
            "handshake_done_s": self.handshake_done_s,
        }
        if self.cwnd_log is not None:
            out["cwnd_log"] = list(self.cwnd_log)
        return out


class QuicConnection:
    """A QUIC connection over ``path``: ``client`` sends on ``path.forward``, ``server`` on ``path.reverse``.

    ``log_cwnd=True`` records ``(time_s, cwnd_bytes)`` at every window change of each
    endpoint (``stats()["client"]["cwnd_log"]``) for plots.
    """

    def __init__(self, sim: Simulator, path: Path, config: TransportConfig | None = None,
                 name: str = "quic", *, log_cwnd: bool = False, pacing: bool = True,
                 ack_delay_s: float | None = None, handshake: bool = False, retransmit_in_turn: bool = False,
                 slow_start_rtt_exit: bool = False, pto_declares_lost: bool = False,
                 server_flight_bytes: int = SERVER_FLIGHT_CRYPTO_BYTES) -> None:
        self.sim = sim
        self.path = path
        self.config = config = config if config is not None else TransportConfig()
        self.name = name
        options = dict(log_cwnd=log_cwnd, pacing=pacing, ack_delay_s=ack_delay_s, handshake=handshake,
                       retransmit_in_turn=retransmit_in_turn, slow_start_rtt_exit=slow_start_rtt_exit,
                       pto_declares_lost=pto_declares_lost)
        self.client = QuicEndpoint(sim, self, config, is_client=True, name=f"{name}/client", **options)
        self.server = QuicEndpoint(sim, self, config, is_client=False, name=f"{name}/server", **options)
        # The server's Initial + Handshake flight: full datagrams (RFC 9000 14.1 pads Initials).
        per_datagram = config.max_datagram_bytes - CRYPTO_PACKET_OVERHEAD_BYTES
        self.server_flight_sizes = [config.max_datagram_bytes] * max(1, -(-server_flight_bytes // per_datagram))
        if handshake:
            sim.call_soon(self.client.start_handshake)
        self.client.peer, self.server.peer = self.server, self.client
        self.client.link, self.server.link = path.forward, path.reverse
        link_payload = config.max_datagram_bytes + UDP_IP_HEADER_BYTES
        if link_payload > path.mtu_bytes:
            raise ValueError(f"max_datagram_bytes {config.max_datagram_bytes} + 28 exceeds the path MTU {path.mtu_bytes}")

    def stats(self) -> dict:
        """Totals over both endpoints, and each endpoint's own figures under "client" / "server".

        Keys (per endpoint; the top level sums them, and takes the max of the buffer):
        packets_sent (all QUIC packets, ACK-only included), ack_packets_sent,
        probe_packets_sent, packets_lost (declared lost by loss detection),
        lost_by_packet_threshold, lost_by_time_threshold, ptos (PTO expirations),
        congestion_events (window reductions), bytes_sent (on the wire, IPv4 + UDP
        headers included), stream_bytes_sent (STREAM payload incl. retransmissions),
        stream_bytes_retransmitted, bytes_delivered (stream bytes handed in order to
        this endpoint's application), max_reorder_buffer_bytes (most stream bytes held
        out of order at once), cwnd_bytes, srtt_s, min_rtt_s, and cwnd_log if enabled.
        """
        client, server = self.client.stats(), self.server.stats()
        out = {key: client[key] + server[key] for key in
               ("packets_sent", "packets_lost", "ptos", "bytes_sent", "bytes_delivered",
                "stream_bytes_sent", "stream_bytes_retransmitted")}
        out["max_reorder_buffer_bytes"] = max(client["max_reorder_buffer_bytes"],
                                              server["max_reorder_buffer_bytes"])
        out["client"] = client
        out["server"] = server
        return out
