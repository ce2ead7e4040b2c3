"""The TCP model's window as Linux keeps it (``TransportConfig.cwnd_in_packets``), a mixin of
``tcp_endpoint.TcpEndpoint``.  Written by hand, after the kernel's ``net/ipv4/tcp_output.c``
and ``include/net/tcp.h``.

RFC 5681 counts the congestion window in bytes; Linux counts it in segments
(``tcp_sock.snd_cwnd``), and that differs wherever segments are short:

- **A segment takes one of the window's, whatever its size** (``tcp_cwnd_test``: packets in
  flight below ``snd_cwnd``).  A server that writes a TLS session ticket, its HTTP/2 SETTINGS
  and their ACK as writes of their own (TCP_NODELAY: each leaves at once as its own segment)
  has three of its ten first segments spent before the first response byte.
- **The window grows by the segments an ACK covers, and only while it limited the sender**
  (``tcp_is_cwnd_limited``; RFC 7661 section 4.3 asks the same): in slow start while it is
  under twice the most segments in flight in the last window (``max_packets_out``), else only
  if sending was held back by it in that window (``is_cwnd_limited``), as
  ``tcp_cwnd_validate`` records per window of data.  The ACKs of a TLS server flight of three
  or four segments therefore leave an initial window of ten at ten.

- **An ACK rides on data**: a delayed ACK pending when the endpoint sends a segment leaves with
  it (the model sends it as its own packet at that instant; RFC 9293 section 3.10.7.4, Linux
  ``tcp_event_ack_sent``), so a client's TLS Finished acknowledges the server's flight at once
  instead of a delayed-ACK timer later, freeing that segment's slot for the first response.

``nodelay`` is the application's socket option (HTTP/2 servers and browsers set TCP_NODELAY):
a write goes out at once when the window allows, as its own segments, and what the window
holds back waits in the queue, where later writes join it (``tcp_sendmsg`` appends to the
unsent tail).  Without it writes of one instant share segments, as the model always did.

The C twin (``_tcp.c``: ``cwnd_validate``, ``may_grow``, the ``nodelay`` write and the ACK in
``endpoint_transmit``) does the same, compared event by event in ``tests/test_net_native.py``.
"""

from __future__ import annotations

__all__ = ["LinuxWindow"]


class LinuxWindow:
    """Linux's window validation for ``TcpEndpoint`` (see the module docstring)."""

    __slots__ = ()

    def _init_window(self, config) -> None:
        self._packets = config.cwnd_in_packets
        self._max_packets_out = 0  # tcp_sock.max_packets_out
        self._cwnd_usage_seq = 0  # tcp_sock.cwnd_usage_seq: the window it describes ends here
        self._is_cwnd_limited = False  # tcp_sock.is_cwnd_limited
        self.nodelay = False

    def _cwnd_validate(self, is_cwnd_limited: bool) -> None:
        """Linux ``tcp_cwnd_validate``: per window of data, whether the window held the sender
        back, else the most segments it had in flight."""
        packets_out = len(self._unacked)
        if (
            self.snd_una >= self._cwnd_usage_seq
            or is_cwnd_limited
            or (not self._is_cwnd_limited and packets_out > self._max_packets_out)
        ):
            self._is_cwnd_limited = is_cwnd_limited
            self._max_packets_out = packets_out
            self._cwnd_usage_seq = self.snd_nxt

    def _may_grow(self) -> bool:
        """Linux ``tcp_is_cwnd_limited``: may an ACK grow the window (see the module docstring)."""
        if self._is_cwnd_limited:
            return True
        cc = self.cc
        if cc.cwnd_bytes < cc.ssthresh_bytes:
            return cc.cwnd_bytes < 2 * self._max_packets_out * self.mss
        return False
