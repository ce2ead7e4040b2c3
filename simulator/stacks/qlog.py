"""qlog for the real HTTP/3 stack in virtual time: aioquic's in-memory logger with events
stamped by the simulation clock (draft-ietf-quic-qlog-main-schema, the version aioquic
writes), and the count of resent STREAM frames read back from such a log.  Written by hand
around aioquic's ``QuicLogger``."""

from __future__ import annotations

import json
import os

from aioquic.quic.logger import QuicLogger, QuicLoggerTrace

from ..outfiles import write_output

__all__ = ["SimQuicLogger", "SimQuicLoggerTrace", "stream_frames_resent_in_qlog"]


class SimQuicLoggerTrace(QuicLoggerTrace):
    """aioquic's qlog trace with each event stamped by the simulation clock instead of the wall clock."""

    def __init__(self, *, is_client: bool, odcid: bytes, clock) -> None:
        super().__init__(is_client=is_client, odcid=odcid)
        self._clock = clock
        self.is_client = is_client

    def log_event(self, *, category: str, event: str, data: dict) -> None:
        """Record one event at the current virtual time."""
        self._events.append({"data": data, "name": category + ":" + event, "time": self.encode_time(self._clock())})

    @property
    def events(self):
        """The events recorded so far."""
        return self._events


class SimQuicLogger(QuicLogger):
    """aioquic's in-memory logger, with events stamped by the simulation clock."""

    def __init__(self, clock) -> None:
        super().__init__()
        self._clock = clock

    def start_trace(self, is_client: bool, odcid: bytes) -> QuicLoggerTrace:
        """A new virtual-time trace for one connection end."""
        trace = SimQuicLoggerTrace(is_client=is_client, odcid=odcid, clock=self._clock)
        self._traces.append(trace)
        return trace

    def end_trace(self, trace: QuicLoggerTrace) -> None:
        """Nothing: every trace is written once, by ``write``."""
        pass  # written once, by write()

    def write(self, directory: str, name: str) -> list[str]:
        """Write one qlog 0.3 JSON file per trace, ``<name>-client.qlog`` / ``-server.qlog``; their paths."""
        paths = []
        for trace in self._traces:
            path = os.path.join(directory, f"{name}-{'client' if trace.is_client else 'server'}.qlog")
            doc = {"qlog_format": "JSON", "qlog_version": "0.3", "traces": [trace.to_dict()]}
            write_output(path, json.dumps(doc).encode("utf-8"))
            paths.append(path)
        return paths


def stream_frames_resent_in_qlog(traces) -> int:
    """STREAM frames whose bytes were all sent before in one frame, per sender, read from qlog
    ``packet_sent`` events (QUIC resends lost data in new packets, RFC 9000 section 13.3).
    ``traces``: each a list of qlog events (dicts with ``name`` and ``data``), e.g. the
    ``traces[0]["events"]`` of the files ``--qlog`` writes.  The replay counts the same thing
    without a qlog (``SimQuicConnection``); this is the reference it is checked against."""
    resent = 0
    for events in traces:
        sent: dict[int, list] = {}
        for event in events:
            if event["name"] != "transport:packet_sent":
                continue
            for frame in event["data"].get("frames", ()):
                if frame.get("frame_type") != "stream" or not frame.get("length"):
                    continue
                start, end = frame["offset"], frame["offset"] + frame["length"]
                ranges = sent.setdefault(frame["stream_id"], [])
                if any(lo <= start and end <= hi for lo, hi in ranges):
                    resent += 1
                ranges.append((start, end))
    return resent
