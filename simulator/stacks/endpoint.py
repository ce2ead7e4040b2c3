"""The HTTP behaviour of one end of a real-stack run (client or server), over the
primitives each stack gives: what ``common``'s docstring describes (request, 103 Early
Hints, pushes, think time, body production, trailers, resets), written once for both
stacks.  Written by hand."""

from __future__ import annotations

import math

from ..engine import Simulator
from ..traces.model import HeaderList
from .common import ExchangeSpec, PushSpec, Recorder, StackParams, body_bytes, production_schedule

__all__ = ["Endpoint"]


class _Op:
    __slots__ = ("kind", "headers", "remaining", "end", "ready", "role")

    def __init__(
        self, kind: str, headers=None, remaining: int = 0, end: bool = False, ready: int | None = None, role: str = ""
    ) -> None:
        self.kind = kind  # "headers" | "data" | "reset"
        self.headers = headers
        self.remaining = remaining  # body bytes still to write
        self.end = end
        # body bytes produced and not yet written (None: all of ``remaining``)
        self.ready = remaining if ready is None else ready
        self.role = role  # headers: "response" or "trailer" (their sizes are recorded)


class Endpoint:
    """One end of an HTTP connection over a real stack.  Subclasses give the primitives.

    Primitives (all act on the stack object; ``flush()`` then moves its output onto
    the simulated network):
      ``_writable(stream_id) -> int``   body bytes flow control admits now
      ``_write_headers(stream_id, headers, end) -> (frame bytes, encoder-stream bytes)``
      ``_write_data(stream_id, data, end)``
      ``_write_reset(stream_id)``
      ``_open_stream() -> int``         a new request stream (client)
      ``_push(stream_id, request_headers) -> int``  push promise; the pushed stream's id
      ``flush()``
    """

    max_chunk_bytes = 1 << 30

    def __init__(self, session: "object", *, is_client: bool) -> None:
        self.session = session
        self.sim: Simulator = session.sim
        self.params: StackParams = session.params
        self.recorder: Recorder = session.recorder
        self.is_client = is_client
        self._queues: dict[int, list[_Op]] = {}
        self.headers_frames_sent = 0  # HEADERS frames this end sent (HTTP/2 and HTTP/3)
        self.data_bytes_written: dict[int, int] = {}  # body bytes handed to the stack, per stream

    # -- outgoing operations --------------------------------------------------------
    def queue(self, stream_id: int, op: _Op) -> None:
        """Append ``op`` to ``stream_id``'s queue of outgoing operations (sent by ``pump``)."""
        self._queues.setdefault(stream_id, []).append(op)

    def pump(self, stream_id: int | None = None) -> None:
        """Write queued operations in order, body bytes as far as flow control allows."""
        if not self._queues:
            self.flush()  # the common case: after every packet and timer
            return
        ids = [stream_id] if stream_id is not None else list(self._queues)
        for sid in ids:
            ops = self._queues.get(sid)
            while ops:
                op = ops[0]
                if op.kind == "headers":
                    frame_bytes, encoder_bytes = self._write_headers(sid, op.headers, op.end)
                    self.headers_frames_sent += 1
                    if op.role:
                        self._record_headers_bytes(sid, op.role, frame_bytes, encoder_bytes)
                elif op.kind == "reset":
                    self._write_reset(sid)
                elif op.kind == "data":
                    while op.remaining > 0:
                        n = min(op.ready, self._writable(sid), self.max_chunk_bytes)
                        if n <= 0:
                            break
                        op.remaining -= n
                        op.ready -= n
                        self.data_bytes_written[sid] = self.data_bytes_written.get(sid, 0) + n
                        self._write_data(sid, body_bytes(n), op.end and op.remaining == 0)
                    if op.remaining > 0:
                        break  # flow control, or not yet produced: resume later
                ops.pop(0)
            if ops is not None and not ops:
                del self._queues[sid]
        self.flush()

    # -- client ---------------------------------------------------------------------
    def start_request(self, spec: ExchangeSpec, row: dict) -> None:
        """Open a request stream for ``spec``, queue its headers (and body) and send what flow control admits."""
        sid = self._open_stream()
        row["stream_id"] = sid
        row["request_sent_s"] = self.sim.now
        self.session.client_rows[sid] = (spec, row)
        has_body = spec.request_body_bytes > 0
        self.queue(sid, _Op("headers", headers=spec.request_headers, end=not has_body))
        if has_body:
            self.queue(sid, _Op("data", remaining=spec.request_body_bytes, end=True))
        self.pump(sid)

    def on_response_headers(self, stream_id: int, headers: HeaderList, ended: bool) -> None:
        """Record a header section: 1xx (Link values to the listener), the final response, or trailers."""
        entry = self.session.client_rows.get(stream_id)
        if entry is None:
            return
        _, row = entry
        self.recorder.progress()
        status = _status(headers)
        if 100 <= status < 200:
            if math.isnan(row["informational_s"]):
                row["informational_s"] = self.sim.now
            row["link_headers"] += sum(1 for n, _ in headers if n == b"link")
            if self.recorder.listener is not None:
                self.recorder.listener.informational(row, headers)
            return
        if row["status"]:  # a second HEADERS after the final ones: trailers
            row["trailers"] = True
            row["trailers_s"] = self.sim.now
        else:
            row["status"] = status
            row["headers_s"] = self.sim.now
            if row["kind"] == "push" and self.recorder.listener is not None:
                self.recorder.listener.push_headers(row)
        if ended:
            self.recorder.end(row)

    def on_response_data(self, stream_id: int, n: int, ended: bool) -> None:
        """Count ``n`` body bytes; reset the stream once a client-side reset's byte count is reached (RFC 9113 8.7)."""
        entry = self.session.client_rows.get(stream_id)
        if entry is None:
            return
        spec, row = entry
        self.recorder.progress()
        if n and math.isnan(row["first_byte_s"]):
            row["first_byte_s"] = self.sim.now
        row["body_bytes"] += n
        if ended:
            self.recorder.end(row)
        elif (
            spec is not None
            and spec.reset_by == "client"
            and math.isnan(row["ended_s"])
            and row["body_bytes"] >= spec.reset_after_bytes
        ):
            # RFC 9113 section 8.7 / RFC 9114 section 4.1.1: the client cancels the request.
            self._write_reset(stream_id)
            self.recorder.end(row, reset="client")
            self.flush()

    def on_stream_reset(self, stream_id: int) -> None:
        """The server reset the stream: the exchange ends, reset by the server."""
        entry = self.session.client_rows.get(stream_id)
        if entry is not None:
            self.recorder.end(entry[1], reset="server")

    def on_push_promise(self, parent_stream_id: int, pushed_stream_id: int | None, push_key, headers) -> None:
        """Record a promised push as a row of its own and tell the listener."""
        parent = self.session.client_rows.get(parent_stream_id)
        exchange = parent[1]["exchange"] if parent else -1
        path = dict(headers).get(b":path", b"").decode("latin-1")
        expected = -1
        if parent:
            for push in parent[0].pushes:
                if push.path.decode("latin-1") == path:
                    expected = push.body_bytes
        row = self.recorder.new_row(
            kind="push",
            exchange=exchange,
            origin=self.session.origin,
            path=path,
            start_s=self.sim.now,
            expected_body_bytes=expected,
        )
        row["stream_id"] = pushed_stream_id if pushed_stream_id is not None else -1
        self.session.client_rows[push_key] = (None, row)
        if self.recorder.listener is not None:
            self.recorder.listener.push_promised(row, headers)

    # -- server ---------------------------------------------------------------------
    def on_request_ended(self, stream_id: int) -> None:
        """The server has the whole request: send 103 and pushes at once, the response after the think time."""
        # Both ends run in one process: the server finds the spec by the request's stream id
        # (the same number at both ends in HTTP/2 and HTTP/3), so no header is added to mark it.
        self.recorder.progress()
        spec = self.session.client_rows[stream_id][0]
        if spec.early_hints or spec.pushes:
            self._early(stream_id, spec)
        think_s = self.params.think_s if spec.think_s is None else spec.think_s
        self.sim.call_later(think_s, self._respond, stream_id, spec)

    def _early(self, stream_id: int, spec: ExchangeSpec) -> None:
        """What the server sends before its final response is ready: a 103 and pushes."""
        if spec.early_hints:  # RFC 8297: 103 Early Hints, Link headers
            hints = ((b":status", b"103"),) + tuple((b"link", v) for v in spec.early_hints)
            self.queue(stream_id, _Op("headers", headers=hints))
        for push in spec.pushes:
            self.pump(stream_id)  # the promise follows what is already queued
            request = _push_request(spec, push)
            pushed = self._push(stream_id, request)
            response = ((b":status", b"200"), (b"content-length", str(push.body_bytes).encode()))
            self.queue(pushed, _Op("headers", headers=response, end=push.body_bytes == 0))
            if push.body_bytes:
                self.queue(pushed, _Op("data", remaining=push.body_bytes, end=True))
        self.pump()

    def _respond(self, stream_id: int, spec: ExchangeSpec) -> None:
        body = spec.response_body_bytes
        headers = spec.response_headers
        if spec.reset_by == "server":
            sent = min(spec.reset_after_bytes, body)
            self.queue(stream_id, _Op("headers", headers=headers))
            if sent:
                self.queue(stream_id, _Op("data", remaining=sent))
            self.queue(stream_id, _Op("reset"))
        elif spec.body_rate_bytes_per_s is not None or spec.buffer_body or spec.body_tail_bytes:
            self._produce(stream_id, spec)
            return
        else:
            trailers = spec.trailers
            self.queue(stream_id, _Op("headers", headers=headers, end=body == 0 and not trailers, role="response"))
            if body:
                self.queue(stream_id, _Op("data", remaining=body, end=not trailers))
            if trailers:
                self.queue(stream_id, _Op("headers", headers=tuple(trailers), end=True, role="trailer"))
        self.pump()

    def _produce(self, stream_id: int, spec: ExchangeSpec) -> None:
        """The body is generated over time (``production_schedule``): each produced chunk
        becomes writable at its instant; with ``buffer_body`` everything, the header
        section included, waits for the last byte."""
        body, tail, trailers = spec.response_body_bytes, spec.body_tail_bytes, spec.trailers
        total = body + tail
        schedule = production_schedule(body, spec.body_rate_bytes_per_s, spec.body_chunk_bytes)
        data = _Op("data", remaining=total, end=not trailers, ready=0)
        last_s = schedule[-1][0]

        def write_all() -> None:
            self.queue(
                stream_id,
                _Op("headers", headers=spec.response_headers, end=total == 0 and not trailers, role="response"),
            )
            if total:
                self.queue(stream_id, _Op("data", remaining=total, end=not trailers))
            if trailers:
                self.queue(stream_id, _Op("headers", headers=tuple(trailers), end=True, role="trailer"))
            self.pump(stream_id)

        def produced(n: int, last: bool) -> None:
            data.ready += n + (tail if last else 0)
            if last and trailers:
                self.queue(stream_id, _Op("headers", headers=tuple(trailers), end=True, role="trailer"))
            self.pump(stream_id)

        if spec.buffer_body:
            self.sim.call_later(last_s, write_all)
            return
        self.queue(
            stream_id, _Op("headers", headers=spec.response_headers, end=total == 0 and not trailers, role="response")
        )
        if total:
            self.queue(stream_id, data)
        self.pump(stream_id)
        for i, (at_s, n) in enumerate(schedule):
            self.sim.call_later(at_s, produced, n, i == len(schedule) - 1)

    def _record_headers_bytes(self, stream_id: int, role: str, frame_bytes: int, encoder_bytes: int) -> None:
        entry = self.session.client_rows.get(stream_id)
        if entry is not None and not self.is_client:
            row = entry[1]
            row[f"{role}_frame_bytes"] += frame_bytes
            row[f"{role}_encoder_bytes"] += encoder_bytes

    # -- primitives -----------------------------------------------------------------
    def _writable(self, stream_id: int) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def _write_headers(self, stream_id: int, headers, end: bool) -> tuple[int, int]:  # pragma: no cover
        """Returns the bytes of the HEADERS (+ CONTINUATION) frames written, frame headers
        included, and the QPACK encoder-stream bytes they caused (0 for HTTP/2)."""
        raise NotImplementedError

    def _write_data(self, stream_id: int, data: bytes, end: bool) -> None:  # pragma: no cover
        raise NotImplementedError

    def _write_reset(self, stream_id: int) -> None:  # pragma: no cover
        raise NotImplementedError

    def _open_stream(self) -> int:  # pragma: no cover
        raise NotImplementedError

    def _push(self, stream_id: int, request_headers) -> int:  # pragma: no cover
        raise NotImplementedError

    def flush(self) -> None:  # pragma: no cover
        """Move the stack's pending output onto the simulated network."""
        raise NotImplementedError


def _status(headers: HeaderList) -> int:
    for n, v in headers:
        if n == b":status":
            return int(v) if v.isdigit() else 0
    return 0


def _push_request(spec: ExchangeSpec, push: PushSpec) -> HeaderList:
    """The request a push promise carries (RFC 9113 section 8.4.1: safe, cacheable, no body)."""
    req = dict(spec.request_headers)
    authority = push.authority or req.get(b":authority", b"server.example")
    return (
        (b":method", b"GET"),
        (b":scheme", req.get(b":scheme", b"https")),
        (b":authority", authority),
        (b":path", push.path),
    )
