"""A scheduler's choices as qlog HTTP/3 events (draft-ietf-quic-qlog-h3-events, the
``http3`` event schema, names and fields of draft-10), so that a run of the model can be
laid beside a real stack's qlog.  Written by hand: aioquic's ``QuicLogger`` logs QUIC
connections, and the model has none to give it.

Per HTTP/3 connection, stamped with the simulation clock in milliseconds:

- ``http3:priority_updated`` (``stream_id``, ``new``: the Priority field value, RFC 9218
  section 5, ``trigger: "client_signal_received"``) when a response with data ready takes
  its client's signals, and again, with ``old``, when a PRIORITY_UPDATE reaches the server
  (RFC 9218 section 7);
- ``http3:frame_parsed`` of that PRIORITY_UPDATE (``frame_type: "priority_update"``,
  ``stream_id`` the prioritized request stream, ``priority_field_value``) on the client's
  control stream (stream 2: its first unidirectional stream, RFC 9114 section 6.2.1, as
  aioquic's client opens it);
- ``http3:frame_created`` for every chunk the scheduler picked (``frame_type: "data"``,
  its ``raw.payload_length``), in the order written: the per-stream byte order the
  schedulers are compared on.

Departures: the model writes a response's HEADERS and body as one run of chunks, so the
first chunk of a response carries its HEADERS frame's bytes as well, logged as data; a
chunk is a packet's worth, where a real server's DATA frames are up to 16 KiB.
"""

from __future__ import annotations

import json

from .priority_signals import PrioritySignal
from .priority_writer import ScheduledWriter

__all__ = [
    "PriorityQlog",
    "QlogTrace",
    "QlogScheduledWriter",
    "priority_field_value",
    "CLIENT_CONTROL_STREAM",
    "data_frames",
]

CLIENT_CONTROL_STREAM = 2  # RFC 9000 section 2.1: the client's first unidirectional stream
HTTP3_SCHEMA = "urn:ietf:params:qlog:events:http3"


def priority_field_value(signal: PrioritySignal) -> str:
    """The ``Priority`` field value of ``signal`` (RFC 9218 section 5): ``u=N``, and ``i`` when incremental."""
    return f"u={signal.urgency}, i" if signal.incremental else f"u={signal.urgency}"


class QlogTrace:
    """The events of one connection end (the server's), stamped by ``clock`` (seconds)."""

    def __init__(self, title: str, clock) -> None:
        self.title, self._clock = title, clock
        self.events: list[dict] = []

    def event(self, name: str, data: dict) -> None:
        """Record ``http3:<name>`` now (time in milliseconds, qlog's default unit)."""
        self.events.append({"time": round(self._clock() * 1000, 6), "name": "http3:" + name, "data": data})

    def to_dict(self) -> dict:
        """The trace as qlog's JSON serialization holds it."""
        return {
            "title": self.title,
            "vantage_point": {"type": "server"},
            "event_schemas": [HTTP3_SCHEMA],
            "common_fields": {
                "time_format": "relative_to_epoch",
                "reference_time": {"clock_type": "monotonic", "epoch": "unknown"},
            },
            "events": self.events,
        }


class PriorityQlog:
    """The traces of a run, one per HTTP/3 connection of every load; ``write`` puts them in one file."""

    def __init__(self, title: str = "workbench priorities") -> None:
        self.title = title
        self.traces: list[QlogTrace] = []
        self.label = ""  # prefixed to each new trace's title (the load: browser and scheduler)

    def trace(self, connection: str, clock) -> QlogTrace:
        """A new trace for ``connection`` (its key: the origin), stamped by ``clock``."""
        t = QlogTrace(f"{self.label} {connection}".strip(), clock)
        self.traces.append(t)
        return t

    def to_dict(self) -> dict:
        """The whole file: qlog's contained JSON file schema with every trace."""
        return {
            "file_schema": "urn:ietf:params:qlog:file:contained",
            "serialization_format": "application/qlog+json",
            "title": self.title,
            "traces": [t.to_dict() for t in self.traces],
        }

    def write(self, path) -> None:
        """Write the file (``outfiles.write_output``: a file replaced whole, a device written through)."""
        from ..outfiles import write_output

        write_output(path, json.dumps(self.to_dict(), separators=(",", ":")).encode("utf-8"))


def data_frames(trace: dict) -> list[tuple[int, int]]:
    """(stream_id, payload bytes) of every DATA frame a qlog trace (a dict) says was created,
    in order: the model's ``http3:frame_created`` and aioquic's ``http:frame_created``
    (whose length is the event's ``length``) alike."""
    out = []
    for ev in trace.get("events", []):
        name = ev.get("name") if isinstance(ev, dict) else None
        if name not in ("http3:frame_created", "http:frame_created"):
            continue
        data = ev.get("data", {})
        frame = data.get("frame", {})
        if frame.get("frame_type") != "data":
            continue
        size = frame.get("raw", {}).get("payload_length", data.get("length"))
        out.append((data["stream_id"], size))
    return out


class QlogScheduledWriter(ScheduledWriter):
    """``ScheduledWriter`` that records its choices into a ``QlogTrace``: the same chunks in
    the same order (``fill`` is ``write_next`` in a loop, as ``ScheduledWriter.fill`` inlines it)."""

    __slots__ = ("qlog", "_signals")

    def __init__(
        self,
        endpoint,
        chunk_bytes: int,
        written: dict[int, int],
        on_written,
        *,
        fill_on_ack: bool,
        scheduler,
        qlog: QlogTrace,
    ) -> None:
        super().__init__(endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack, scheduler=scheduler)
        self.qlog = qlog
        self._signals: dict[int, PrioritySignal] = {}

    def add(self, stream_id: int, size: int, signal: PrioritySignal) -> None:
        """As ``ScheduledWriter.add``, logging the signals the response takes (``priority_updated``)."""
        self._signals[stream_id] = signal
        self.qlog.event(
            "priority_updated",
            {"stream_id": stream_id, "new": priority_field_value(signal), "trigger": "client_signal_received"},
        )
        super().add(stream_id, size, signal)

    def update(self, stream_id: int, signal: PrioritySignal) -> None:
        """As ``ScheduledWriter.update``, logging the PRIORITY_UPDATE frame and the change it makes."""
        value = priority_field_value(signal)
        self.qlog.event(
            "frame_parsed",
            {
                "stream_id": CLIENT_CONTROL_STREAM,
                "frame": {"frame_type": "priority_update", "stream_id": stream_id, "priority_field_value": value},
            },
        )
        if stream_id in self._left:
            old = self._signals.get(stream_id)
            self._signals[stream_id] = signal
            data = {"stream_id": stream_id, "new": value, "trigger": "client_signal_received"}
            if old is not None:
                data["old"] = priority_field_value(old)
            self.qlog.event("priority_updated", data)
        super().update(stream_id, signal)

    def write_next(self, limit: int) -> int:
        """As ``ScheduledWriter.write_next``, logging the chunk as a DATA frame (``frame_created``)."""
        left = self._left
        if not left:
            return 0
        stream_id = self.scheduler.pick()
        n = min(left[stream_id], limit)
        self.qlog.event(
            "frame_created", {"stream_id": stream_id, "frame": {"frame_type": "data", "raw": {"payload_length": n}}}
        )
        self._write_chunk(stream_id, n)
        return n

    def fill(self) -> None:
        """Chunks the scheduler picks until the window is full, each logged."""
        window = max(self.endpoint.cwnd_bytes, 2 * self.chunk_bytes)
        while self._left and self.unacked_bytes < window:
            self.write_next(self.chunk_bytes)
