"""A server's response writer over a transport model: responses in turns, written as the
transport drains.  Written by hand (it stands for an HTTP/2 or HTTP/3 stack's scheduler,
with responses counted in bytes, as the page-load model needs).

Responses wait in rotations, one per urgency level (RFC 9218: the lowest level first;
round-robin among equals, a packet's worth, ``chunk_bytes``, per turn).  Over TCP the
writer keeps the congestion window written but not yet acknowledged (at least two
segments: ``fill``), as TCP sends whatever its window allows, so a response stopped on the
way (a cancelled push) stops where it is; over QUIC the transport pulls a packet's worth
at a time (``pull``, the endpoint's ``on_send_ready``).  Bytes are padding of the response's size.

A real server commits more than that to its socket (``ahead_windows``, ``ahead_bytes``, both 0 by
default): what it has written is sent in the order written, whatever comes ready after it.
Linux sizes a socket's send buffer at about twice the window's segments (``tcp_sndbuf_expand``),
so about one window more waits unsent in the kernel; a server on asyncio's TLS transport
goes on writing until 512 KiB wait above that (``FLOW_CONTROL_HIGH_WATER_SSL_WRITE``).  The
writer then keeps ``window x (1 + ahead_windows) + ahead_bytes`` written but unacknowledged,
and a response that comes ready later (a document after its 103's preloads) queues behind them.

``ResponseWriter`` is the reference.  ``response_writer`` gives its C twins: for a C
``TcpEndpoint`` ``simulator.net._tcp.ResponseWriter``, for a ``NativeQuicEndpoint``
``simulator.net._quic.ResponseWriter`` (which writes into the endpoint's C core without a
Python call per packet); the same writes in the same order, so the same results.
"""

from __future__ import annotations

import functools
from collections import deque
from typing import Callable

from . import native
from .quic.native import NativeQuicEndpoint

__all__ = ["ResponseWriter", "response_writer"]


@functools.lru_cache(maxsize=1 << 12)
def _pad(size: int) -> bytes:
    """``size`` bytes standing for a response's (the models only count them), shared."""
    return b"r" * size


class ResponseWriter:
    """Responses written into ``endpoint`` in turns (see the module docstring).

    ``written`` (stream -> bytes written on it) is shared with the caller, who may write on
    streams itself and then adds to ``unacked_bytes`` too; ``on_written(stream_id)`` is
    called when a response has been written in full.  With ``fill_on_ack`` (TCP) every
    acknowledgement refills the window."""

    __slots__ = (
        "endpoint",
        "chunk_bytes",
        "written",
        "on_written",
        "fill_on_ack",
        "unacked_bytes",
        "ahead_windows",
        "ahead_bytes",
        "_active",
        "_order",
        "_acked",
    )

    def __init__(
        self,
        endpoint,
        chunk_bytes: int,
        written: dict[int, int],
        on_written: Callable[[int], None],
        *,
        fill_on_ack: bool,
    ) -> None:
        self.endpoint = endpoint
        self.chunk_bytes = chunk_bytes
        self.written = written
        self.on_written = on_written
        self.fill_on_ack = fill_on_ack
        self.unacked_bytes = 0  # written, not yet acknowledged
        self.ahead_windows = 0  # windows written beyond the window (a kernel's send buffer)
        self.ahead_bytes = 0  # and bytes beyond those (a server's own buffer)
        # Per urgency level a rotation of [stream_id, bytes left to write, order]; only
        # levels with a response waiting.
        self._active: dict[int, deque] = {}
        self._order = 0
        self._acked: dict[int, int] = {}

    @property
    def waiting(self) -> bool:
        """Some response still has bytes to write."""
        return bool(self._active)

    def add(self, stream_id: int, size: int, level: int) -> None:
        """A response of ``size`` bytes joins the rotation of ``level``."""
        self._order += 1
        self._active.setdefault(level, deque()).append([stream_id, size, self._order])

    def stop(self, stream_id: int) -> None:
        """Nothing more of ``stream_id`` is written (its cancel reached the server)."""
        active = {}
        for level, queue in self._active.items():
            queue = deque(e for e in queue if e[0] != stream_id)
            if queue:
                active[level] = queue
        self._active = active

    def write_next(self, limit: int) -> int:
        """Write up to ``limit`` bytes of the next response in turn; the bytes written."""
        active = self._active  # only levels with a response waiting
        if not active:
            return 0
        level = min(active) if len(active) > 1 else next(iter(active))
        queue = active[level]
        entry = queue.popleft()
        stream_id, remaining, _ = entry
        n = remaining if remaining < limit else limit
        remaining -= n
        entry[1] = remaining
        written = self.written
        written[stream_id] = written.get(stream_id, 0) + n
        self.unacked_bytes += n
        self.endpoint.write(stream_id, _pad(n), end=not remaining)
        if not remaining:
            if not queue:
                del active[level]
            self.on_written(stream_id)
        else:
            queue.append(entry)  # served: to the back of its rotation
        return n

    def pull(self) -> bool:
        """QUIC's ``on_send_ready``: a packet may leave now, so write about one packet's worth
        (``chunk_bytes``) from the rotations, as aioquic builds a packet from its streams' send
        buffers; False if nothing waits."""
        wrote, chunk = 0, self.chunk_bytes
        while wrote < chunk:
            n = self.write_next(chunk - wrote)
            if not n:
                break
            wrote += n
        return wrote > 0

    def fill(self) -> None:
        """TCP: keep the congestion window written but not acknowledged (at least two
        segments), as TCP sends whatever its window allows.  (A cap of two bandwidth-delay
        products here held a busy connection's share of a deep bottleneck queue below what
        the h2 stack's TCP takes.)"""
        if not self._active:
            return
        chunk = self.chunk_bytes
        window = max(self.endpoint.cwnd_bytes, 2 * chunk)
        if self.ahead_windows or self.ahead_bytes:
            window = window * (1 + self.ahead_windows) + self.ahead_bytes
        while self.unacked_bytes < window and self.write_next(chunk):
            pass

    def on_stream_acked(self, stream_id: int, acked_offset: int) -> None:
        """The transport's ``on_stream_acked``: the first ``acked_offset`` bytes of the stream are acknowledged."""
        acked = min(acked_offset, self.written.get(stream_id, 0))
        self.unacked_bytes -= acked - self._acked.get(stream_id, 0)
        self._acked[stream_id] = acked
        if self.fill_on_ack:
            self.fill()


def response_writer(
    endpoint, chunk_bytes: int, written: dict[int, int], on_written: Callable[[int], None], *, fill_on_ack: bool
):
    """A ``ResponseWriter`` for ``endpoint``: its C twin when the endpoint is the C ``TcpEndpoint``
    or a ``NativeQuicEndpoint``."""
    if native.C is not None and type(endpoint) is native.C.TcpEndpoint:
        return native.C.ResponseWriter(endpoint, chunk_bytes, written, on_written, fill_on_ack)
    if native.QUIC is not None and type(endpoint) is NativeQuicEndpoint:
        return native.QUIC.ResponseWriter(endpoint, chunk_bytes, written, on_written, fill_on_ack)
    return ResponseWriter(endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack)
