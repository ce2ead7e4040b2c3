"""The lab's QUIC servers' qlog, written as it happens: one JSON-SEQ file per connection.

aioquic's own ``QuicFileLogger`` writes a connection's trace when the connection ends; the
lab stops its servers at the end of a load with Chromium's connections still open, so those
traces would never be written.  ``StreamingQlog`` writes every event at once instead, in
qlog's streaming form (JSON Text Sequences, RFC 7464: a header record, then one record per
event, each after an RS byte and ending in a newline; ``.sqlog``, which qvis reads).  The
events are aioquic's own (its ``QuicLoggerTrace`` encodes them); only the writing is here.
Written by hand: no kept library streams aioquic's qlog.
"""

from __future__ import annotations

import json
import os
import time

from aioquic.quic.logger import QLOG_VERSION, QuicLogger, QuicLoggerTrace

__all__ = ["StreamingQlog", "read_sqlog"]

RS = "\x1e"  # RFC 7464 section 2: each JSON text starts with RS


class _StreamingTrace(QuicLoggerTrace):
    """aioquic's trace of one connection, each event appended to ``path`` as it is logged."""

    def __init__(self, *, is_client: bool, odcid: bytes, path: str) -> None:
        super().__init__(is_client=is_client, odcid=odcid)
        self._file = open(path, "x", encoding="utf-8")  # noqa: SIM115 - open for the connection's life
        header = {
            "qlog_version": QLOG_VERSION,
            "qlog_format": "JSON-SEQ",
            "trace": {"common_fields": {"ODCID": odcid.hex()}, "vantage_point": self._vantage_point},
        }
        self._write(header)

    def _write(self, record: dict) -> None:
        self._file.write(RS + json.dumps(record, default=str) + "\n")
        self._file.flush()  # the server may be stopped at any moment

    def log_event(self, *, category: str, event: str, data: dict) -> None:
        """One event, written now (aioquic's fields: time in ms, ``category:event``, data)."""
        self._write({"time": self.encode_time(time.time()), "name": f"{category}:{event}", "data": data})

    def close(self) -> None:
        """Close the file (the connection has ended)."""
        self._file.close()


class StreamingQlog(QuicLogger):
    """An aioquic ``quic_logger`` writing ``DIR/<original destination connection id>.sqlog``
    for each connection, event by event."""

    def __init__(self, directory: str) -> None:
        super().__init__()
        self.directory = directory

    def start_trace(self, is_client: bool, odcid: bytes) -> QuicLoggerTrace:
        """A connection begins: its file."""
        path = os.path.join(self.directory, f"{odcid.hex()}.sqlog")
        return _StreamingTrace(is_client=is_client, odcid=odcid, path=path)

    def end_trace(self, trace: QuicLoggerTrace) -> None:
        """A connection ended: its file is complete."""
        trace.close()


def read_sqlog(path: str) -> tuple[dict, list[dict]]:
    """A JSON-SEQ qlog file: (its header, its events); a record cut short at the end (the
    server stopped mid-write) is left out."""
    with open(path, encoding="utf-8") as f:
        texts = f.read().split(RS)
    records = []
    for text in texts:
        if text.strip():
            try:
                records.append(json.loads(text))
            except ValueError:
                if text is not texts[-1]:
                    raise
    return records[0], records[1:]
