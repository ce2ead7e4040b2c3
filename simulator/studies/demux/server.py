"""The server side: a real ``h2`` server connection sending N response bodies.

``DataServer`` holds an ``h2.connection.H2Connection`` (server side).  The requests
come from a real ``h2`` client connection in ``handshake()``: the client preface, its
SETTINGS with SETTINGS_INITIAL_WINDOW_SIZE = the per-stream window (RFC 9113 section
6.5.2), a connection-level WINDOW_UPDATE that opens the connection window to N x
window (section 6.9.2: it starts at 65,535), and one GET per stream; the server answers
each with a HEADERS frame.  The bytes the receiver under study reads start after that:
DATA frames only (``data_phase_bytes``).

Every DATA frame goes through ``send_data`` (h2 checks the stream and connection
windows itself and raises on an overrun), ``frame_bytes`` at most, and the order in
which the server picks streams is the ``interleaving``:

- ``runs``: streams in a fixed rotation; the server sends all that the current
  stream's window admits (a whole window at first) before it moves on (servers that
  write a whole window per stream);
- ``round-robin``: one DATA frame per stream that has window, in turn (fine
  interleaving);
- ``h2``: the event-driven send loop of h2's documentation: each stream first sends
  what its window admits, in request order; afterwards, each ``WindowUpdated`` event h2
  reports sends that stream's newly admitted bytes at once (a connection-level update
  wakes every waiting stream in request order).  The order then follows the
  receiver's WINDOW_UPDATEs, and with h2's own receive-window rule (an update once
  half a window is consumed) the server sends half-window runs.

``receive(data)`` takes the client's bytes (WINDOW_UPDATE frames) and ``pump(limit)``
returns the next bytes the windows allow (empty when none do).  Written by hand around
the real library: h2 has no send scheduler.
"""

from __future__ import annotations

from collections import deque

import h2.config
import h2.connection
import h2.events
import h2.settings

__all__ = ["DataServer", "INTERLEAVINGS", "stream_payload", "stream_ids"]

INTERLEAVINGS = ("runs", "round-robin", "h2")
_PATTERN_BYTES = 1 << 16


def stream_ids(n_streams: int) -> list[int]:
    """Client-initiated stream ids (RFC 9113 section 5.1.1: odd, increasing)."""
    return [1 + 2 * k for k in range(n_streams)]


def stream_payload(stream_id: int) -> bytes:
    """The repeating 64 KiB pattern of a stream's body (distinct per stream, so a byte
    delivered to the wrong stream changes that stream's CRC)."""
    seed = bytes((stream_id * 131 + k * 7) & 0xFF for k in range(256))
    return seed * (_PATTERN_BYTES // 256)


class DataServer:
    """N responses of ``stream_bytes`` each, sent as the client's windows allow."""

    def __init__(
        self, n_streams: int, stream_bytes: int, window_bytes: int, interleaving: str, frame_bytes: int = 16384
    ) -> None:
        if interleaving not in INTERLEAVINGS:
            raise ValueError(f"unknown interleaving {interleaving!r}")
        self.interleaving = interleaving
        self.frame_bytes = frame_bytes
        self.window_bytes = window_bytes
        self.ids = stream_ids(n_streams)
        self.remaining = {sid: stream_bytes for sid in self.ids}
        self.sent = {sid: 0 for sid in self.ids}
        self._payload = {sid: memoryview(stream_payload(sid)) for sid in self.ids}
        self._rotation = 0  # runs / round-robin: index of the next stream
        self._ready: deque[int] = deque()  # h2: streams woken by an event, in event order
        self._queued: set[int] = set()
        self.frames_sent = 0
        self.window_updates_received = 0
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))

    # -- set-up ------------------------------------------------------------------------
    def handshake(self) -> bytes:
        """Requests from a real h2 client; returns the server's bytes up to its last
        HEADERS frame (what the client reads before the bodies start)."""
        client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        client.local_settings = h2.settings.Settings(
            client=True,
            initial_values={
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: self.window_bytes,
                h2.settings.SettingCodes.MAX_FRAME_SIZE: max(16384, self.frame_bytes),
            },
        )
        client.initiate_connection()
        connection_window = self.window_bytes * len(self.ids)
        if connection_window > 65535:
            client.increment_flow_control_window(min(connection_window, 2**31 - 1) - 65535)
        for sid in self.ids:
            client.send_headers(
                sid,
                [
                    (b":method", b"GET"),
                    (b":scheme", b"https"),
                    (b":authority", b"server.example"),
                    (b":path", b"/body/%d" % sid),
                ],
                end_stream=True,
            )
        self.conn.initiate_connection()
        self.conn.receive_data(client.data_to_send())
        for sid in self.ids:
            self.conn.send_headers(sid, [(b":status", b"200"), (b"content-length", b"%d" % self.remaining[sid])])
        head = self.conn.data_to_send()
        client.receive_data(head)  # the client ACKs the server's SETTINGS
        self.conn.receive_data(client.data_to_send())
        head += self.conn.data_to_send()
        for sid in self.ids:
            self._wake(sid)
        return head

    # -- the client's bytes ----------------------------------------------------------
    def receive(self, data) -> None:
        """Take the client's bytes: WINDOW_UPDATEs wake the streams they open; a reset is an error."""
        for event in self.conn.receive_data(bytes(data)):
            if isinstance(event, h2.events.WindowUpdated):
                self.window_updates_received += 1
                if event.stream_id == 0:
                    for sid in self.ids:
                        self._wake(sid)
                else:
                    self._wake(event.stream_id)
            elif isinstance(event, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                raise RuntimeError(f"the client ended the exchange: {event!r}")

    def _wake(self, sid: int) -> None:
        if sid in self.remaining and self.remaining[sid] and sid not in self._queued:
            self._queued.add(sid)
            self._ready.append(sid)

    # -- sending -------------------------------------------------------------------------
    def _allowed(self, sid: int) -> int:
        if not self.remaining[sid]:
            return 0
        return min(self.conn.local_flow_control_window(sid), self.remaining[sid])

    def _send_frame(self, sid: int, allowed: int) -> int:
        n = min(allowed, self.frame_bytes, self.conn.max_outbound_frame_size)
        at = self.sent[sid] % _PATTERN_BYTES
        chunk = self._payload[sid][at : at + n]
        if len(chunk) < n:  # wraps around the pattern
            chunk = bytes(chunk) + bytes(self._payload[sid][: n - len(chunk)])
        self.remaining[sid] -= n
        self.sent[sid] += n
        self.conn.send_data(sid, chunk, end_stream=self.remaining[sid] == 0)
        self.frames_sent += 1
        return n

    def pump(self, limit_bytes: int | None = None) -> bytes:
        """The next DATA frames the windows admit (up to about ``limit_bytes``)."""
        budget = limit_bytes if limit_bytes is not None else 1 << 62
        sent = 0
        if self.interleaving == "h2":
            while self._ready and sent < budget:
                sid = self._ready[0]
                allowed = self._allowed(sid)
                if allowed <= 0:
                    self._ready.popleft()
                    self._queued.discard(sid)
                    continue
                sent += self._send_frame(sid, allowed)
        else:
            ids = self.ids
            n = len(ids)
            idle = 0  # streams in a row that could not send
            while idle < n and sent < budget:
                sid = ids[self._rotation]
                allowed = self._allowed(sid)
                if allowed <= 0:
                    idle += 1
                    self._rotation = (self._rotation + 1) % n
                    continue
                idle = 0
                sent += self._send_frame(sid, allowed)
                if self.interleaving == "round-robin" or self._allowed(sid) <= 0:
                    self._rotation = (self._rotation + 1) % n
        return self.conn.data_to_send()

    @property
    def done(self) -> bool:
        """True when every response has been sent in full."""
        return not any(self.remaining.values())
