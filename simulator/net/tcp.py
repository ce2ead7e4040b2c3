"""TCP transport model: one ordered byte stream per direction with SACK loss recovery.

Written by hand (no maintained library models TCP inside this engine).  The model is
sized for sweeps of thousands of runs: segments are small ``__slots__`` objects whose
payload is a tuple of memoryview slices of the application's writes, and no work is
done per byte.

What is modelled
- Data: each endpoint's writes are appended, in write order, to that direction's one
  connection byte stream and cut into segments of at most ``config.mss_bytes``.  A
  packet on the link is payload + ``config.header_overhead_bytes``.  Writes made at the
  same virtual instant are coalesced (one flush via ``sim.call_soon``); there is no
  Nagle (HTTP/2 stacks set TCP_NODELAY), so a flush sends a short tail segment when the
  window allows.  Stream ids (RFC 9000 section 2.1 numbering) are labels only: the
  model keeps, with each segment, the ``(stream_id, stream_offset, bytes, end)``
  pieces it carries so the receiver can report delivery per stream.
- Receiver (RFC 9293 section 3.10.7.4, RFC 5681 section 4.2): cumulative ACKs;
  out-of-order segments are buffered; an ACK every ``config.ack_every_packets``
  segments or after ``config.max_ack_delay_s`` (delayed ACK); an immediate ACK on an
  out-of-order or duplicate segment and on one that fills a hole.  ACKs are pure
  ACK packets of ``header_overhead_bytes`` (40 B) on the reverse link, subject to its
  loss and queue.  Bytes reach the application strictly in connection order: a hole
  holds back every later byte, whatever stream it belongs to.  With SACK
  (``config.sack``, on as Linux's ``tcp_sack``) each ACK carries the SACK option
  (RFC 2018, ``TcpAck.sack``): the blocks of data held above the ACK point, the block
  of the segment that triggered the ACK first, then the others most recently changed
  first (section 4), at most 3 beside timestamps and 4 without (section 3).
- Sender: initial window ``config.initial_window_segments``; slow start and congestion
  avoidance are ``cc.Reno`` / ``cc.Cubic`` (``config.cc``); limited transmit (RFC 3042).
  The window counts bytes (RFC 5681), or with ``config.cwnd_in_packets`` segments, grown
  only while it limits the sender, as Linux keeps it (``tcp_window``).
- Loss recovery with SACK (default), as Linux runs it: a scoreboard of the sent segments
  (RFC 6675 section 4; each ``TcpSegment.mark``: in flight, SACKed, lost, lost and resent,
  Linux's TCPCB_SACKED_ACKED / TCPCB_LOST / TCPCB_SACKED_RETRANS).  Recovery starts on
  ``config.packet_threshold`` duplicate ACKs, when IsLost(SND.UNA) (DupThresh SACKed
  segments above it, counted in segments as Linux counts packets), or when RACK shows it
  lost (RFC 8985 section 6.2: sent at least the reordering window, min RTT / 4, before the
  latest sent segment known delivered), only above the last recovery point (RFC 6675
  section 5): one congestion reduction per episode (``cc``'s multiplicative decrease),
  RecoveryPoint = SND.MAX.  In the recovery, each ACK marks
  losses, by DupThresh and by RACK (RFC 8985 section 6.2 with a zero reordering window, as
  Linux's RACK runs in recovery until it has seen reordering: every unSACKed segment sent
  before the latest sent one known delivered is lost, a retransmission included, so a lost
  retransmission is resent without waiting for the RTO); computes pipe (RFC 6675 SetPipe);
  and sets cwnd = pipe + sndcnt by Proportional Rate Reduction (RFC 6937 section 3,
  PRR-SSRB as Linux; the proportional part in whole segments, as Linux counts packets).
  Sending is NextSeg() rules 1 and 2: the first segment marked lost and not resent since,
  else new data.  The fast retransmit of the first hole goes out whatever PRR allows
  (RFC 6675 (4.3)).  At the end (an ACK at RecoveryPoint) cwnd = ssthresh (RFC 6937).  The
  RTO timer restarts on every ACK of new data (RFC 6298 5.3).
- Without SACK (``sack=False``): fast retransmit after ``config.packet_threshold``
  duplicate ACKs with NewReno fast recovery (RFC 6582: window inflation, partial ACKs
  retransmit the next hole and stay in recovery, the "Impatient" timer variant, no second
  fast retransmit for losses of the window that timed out).
- Retransmission timer, as Linux runs it (net/ipv4/tcp_input.c, tcp_timer.c):
  RTO = SRTT + max(4 * RTTVAR, min RTO) (``cc.RttEstimator.rto_s``; ``config.min_rto_s``
  200 ms, Linux's TCP_RTO_MIN), 1 s before the first sample (RFC 6298 2.1), at most 120 s
  (TCP_RTO_MAX).  This departs from RFC 6298 (2.4), max(min RTO, SRTT + 4 * RTTVAR):
  Linux floors the variance term, so a timeout never comes sooner than SRTT + 200 ms and
  a queue that builds up within a round trip does not fire it.  An RTT sample per ACK
  from the oldest newly acked segment with Karn's rule (no sample when a newly acked
  segment was ever retransmitted), exponential backoff on repeated timeouts (5.5) kept
  until a fresh sample.  RFC 6298's smoothing is kept; Linux's per-round maximum of the
  deviation (``mdev_max``) and lighter weight for falling samples are not modelled.
- Spurious timeouts, detected and undone as Linux does.  A timeout cuts ssthresh
  (RFC 5681 (4)) and cwnd to one segment, remembers the window it cut (Linux
  ``prior_cwnd``/``prior_ssthresh``) and resends the first unacknowledged segment.
  Then: (a) with timestamps (``config.timestamps``, on as in Linux; RFC 7323: each ACK
  echoes the send time of the segment that held the receiver's last ACK point,
  TS.Recent), an ACK in the recovery whose echo predates the episode's first
  retransmission answers an original: the timeout was spurious (Eifel detection,
  RFC 3522; Linux ``tcp_packet_delayed``); (b) F-RTO (RFC 5682 section 2, Linux
  ``tcp_process_loss`` with ``tcp_frto`` = 2), not when the timeout ends a fast recovery
  or an RTO recovery under way unless the same segment timed out again: an ACK that
  acknowledges segments sent before the timeout and never resent declares it spurious
  (step 3b, applied to the first ACK as Linux does); an ACK of the resent segment only
  sends up to two new segments whatever the window (step 2b) and waits for the next; a
  duplicate ACK after those (step 3a), an ACK reaching all that timed out, or no new data
  to send, falls back to go-back-N from the first unacknowledged segment (with cwnd at most
  3 segments after 3a).  A spurious timeout is undone as Linux's ``tcp_try_undo_loss``:
  cwnd = max(cwnd, prior), ssthresh = max(ssthresh, prior), no more resending (the
  Eifel response of RFC 4015 without its RTO adaptation), recover = SND.NXT.  Linux
  judges "never resent and not SACKed"; the model subtracts the duplicate ACKs seen when
  the timer fired (segments the receiver held) before calling a timeout spurious, so a
  lost first segment behind one or two received ones stays a loss.  A timeout clears the
  SACK scoreboard (RFC 2018 section 8) and go-back-N resends SACKed segments too; Linux
  keeps the SACKed marks and resends only the rest.
- Optional three-way handshake (``handshake=True``): SYN, SYN-ACK and ACK are 40-byte
  packets that can be lost; the client sends data one RTT after start, the server once
  the handshake's final ACK (or any client segment) arrives.  SYN and SYN-ACK are
  retransmitted on the RFC 6298 timer (1 s, doubling).  The SYN exchange gives the
  first RTT sample.  Without it the connection is established at time 0.

Simplifications (on purpose)
- No flow control: the receive window is unlimited (the receive buffer's out-of-order
  occupancy is measured, not bounded).  No DSACK (so no undo of a fast recovery found
  spurious), no ECN.  RACK-TLP (RFC 8985) only in part: RACK's loss marks at each ACK
  (above), not its reordering timer (a hole sent within min RTT / 4 of the latest
  delivered segment, with fewer than DupThresh SACKed above it, waits for more ACKs or
  for the RTO, where Linux's timer resends it about 1.25 RTT after it left) nor its
  adaptive reordering window (there is no reordering to adapt to but the links' jitter),
  and no tail loss probe (TLP, which Linux sends about 2 SRTT after a tail): a lost tail
  waits for the RTO.  NextSeg()'s rules 3 and 4 are not modelled (Linux has neither).  The
  receiver keeps every SACK block it holds (Linux keeps 4), so its blocks are exact.
  Timestamps and SACK blocks are modelled only as what the sender reads
  (``TcpAck.echo_s``, ``TcpAck.sack``): the options' bytes (12, and 2 + 8 per block) are
  not on the wire, and RTT samples keep Karn's rule (none from SACKed segments).
- ACKs are never piggybacked on data: every ACK is its own packet.
- Segment boundaries are fixed at first transmission; retransmissions resend the same
  segment (no repacketization).
- A zero-length ``write(sid, b"", end=True)`` occupies one sequence number (as a FIN
  does) so that its end-of-stream mark is delivered reliably and in order.

``stats()`` returns one flat dict.  Totals over both directions:
  packets_sent        data segments sent, retransmissions included (pure ACKs and
                      handshake packets not counted)
  packets_lost        data segments retransmitted (the sender's count of losses)
  rtos                retransmission timeouts fired (SYN / SYN-ACK ones included)
  spurious_rtos       timeouts found spurious (timestamp echo or F-RTO)
  undone_reductions   window reductions restored for them
  fast_retransmits    fast retransmits (entries into fast recovery)
  bytes_sent          payload bytes sent, retransmissions included
  bytes_delivered     application bytes delivered in order to the receivers
  acks_sent           pure ACK packets sent
  max_receive_buffer_bytes   max out-of-order bytes held by either receiver
The same keys prefixed ``c2s_`` (client to server) and ``s2c_`` (server to client)
give each direction, plus ``<dir>_srtt_s``, ``<dir>_rto_s`` and ``<dir>_cwnd_bytes`` at the end.

``TcpConnection(..., cwnd_log=True)`` keeps ``endpoint.cwnd_log``, a list of
``(time_s, cwnd_bytes)`` of that endpoint's sending direction, for plots.

``TcpEndpoint`` (``tcp_endpoint.py`` and its mixins ``tcp_loss``, ``tcp_sack``, ``tcp_receiver`` and
``tcp_window``, with ``cc.Reno``/``cc.Cubic``, ``cc.RttEstimator`` and the engine's
``TimerSlots``) is the reference implementation.  A ``TcpConnection`` gets endpoints of
its C twin, ``simulator.net._tcp.TcpEndpoint``, when that is built (``native.py``; the
``implementation`` argument chooses): same events in the same order, same numbers, so the
same results, at a fraction of the cost per packet.  Its segments, ACKs and handshake
packets are instances of the classes in ``tcp_packets`` too (``isinstance`` holds, for the capture
writer).
"""

from __future__ import annotations

from ..engine import Simulator
from . import native
from .link import Path
from .tcp_endpoint import TcpEndpoint
from .tcp_packets import TcpAck, TcpControl, TcpSegment
from .transport import TransportConfig

__all__ = ["TcpConnection", "TcpEndpoint", "TcpSegment", "TcpAck", "TcpControl"]

_SUM_KEYS = (
    "packets_sent",
    "packets_lost",
    "rtos",
    "spurious_rtos",
    "undone_reductions",
    "fast_retransmits",
    "bytes_sent",
    "bytes_delivered",
    "acks_sent",
)


def _c_endpoints(config: TransportConfig) -> bool:
    """The C endpoint reads the configuration once, as C numbers: for a configuration whose
    values are of the types the reference computes with (an int where Python would keep
    an int in a result it reports), so the two print the same; else the reference runs."""
    ints = (
        config.mss_bytes,
        config.header_overhead_bytes,
        config.initial_window_segments,
        config.ack_every_packets,
        config.packet_threshold,
    )
    floats = (config.min_rto_s, config.initial_rtt_s, config.max_ack_delay_s)
    return (
        all(type(v) is int for v in ints)
        and all(type(v) is float for v in floats)
        and type(config.timestamps) is bool
        and type(config.sack) is bool
        and type(config.cwnd_in_packets) is bool
        and type(config.hystart) is bool
        and isinstance(config.cc, str)
        and config.cc.lower() in ("reno", "newreno", "cubic")
    )


class TcpConnection:
    """A TCP connection over ``path``: ``client`` sends on ``path.forward``, ``server`` on ``path.reverse``.

    ``implementation`` picks the endpoints': ``"c"`` or ``"python"`` (default:
    ``native.IMPLEMENTATION``); both give the same results."""

    def __init__(
        self,
        sim: Simulator,
        path: Path,
        config: TransportConfig | None = None,
        name: str = "tcp",
        *,
        handshake: bool = False,
        cwnd_log: bool = False,
        implementation: str | None = None,
    ) -> None:
        self.sim = sim
        self.path = path
        self.config = config if config is not None else TransportConfig()
        self.name = name
        endpoint = TcpEndpoint
        if native.resolve(implementation) == "c" and _c_endpoints(self.config):
            endpoint = native.C.TcpEndpoint
        self.implementation = "c" if endpoint is not TcpEndpoint else "python"
        self.client = endpoint(self, is_client=True, out_link=path.forward, cwnd_log=cwnd_log)
        self.server = endpoint(self, is_client=False, out_link=path.reverse, cwnd_log=cwnd_log)
        self.client._connect(self.server)
        self.server._connect(self.client)
        if handshake:
            self.client.established = False
            self.server.established = False
            sim.call_soon(self.client._start_handshake)

    def stats(self) -> dict:
        """Counters of both directions: totals, then per direction with a ``c2s_``/``s2c_`` prefix."""
        c2s = self.client.direction_stats()
        s2c = self.server.direction_stats()
        out: dict = {k: c2s[k] + s2c[k] for k in _SUM_KEYS}
        out["max_receive_buffer_bytes"] = max(c2s["max_receive_buffer_bytes"], s2c["max_receive_buffer_bytes"])
        for prefix, d in (("c2s_", c2s), ("s2c_", s2c)):
            for k, v in d.items():
                out[prefix + k] = v
        return out
