"""Measured on this machine: the receivers on a real socket, fed by a real h2 server.

The server (``server.DataServer``) and the receiver share one process and one thread,
joined by a ``socket.socketpair()`` (AF_UNIX stream, non-blocking): the receiver's
reads are real ``recv_into`` calls, each event-loop turn is a real ``poll`` call, and its
WINDOW_UPDATEs are real ``send`` calls.  The server plays a server on another core of the
same host: before every read of the receiver it takes the WINDOW_UPDATEs the socket
holds and writes what the windows admit until the socket is full.  Its time (h2 building
frames, the writes) is measured apart and taken out: ``receiver_s`` is the CPU time of
the receive loop minus the server's.

Wall-clock time: this module measures this machine (a shared 2-core one), and is the
only part of the study that reads a clock (the thread's CPU time, user + system).
Report ratios measured in the same run.
``trace_memory=True`` runs the transfer once more under ``tracemalloc`` (not timed) for
the peak of the Python heap during the receive.
"""

from __future__ import annotations

import gc
import select
import socket
import time
import tracemalloc
import zlib

from .receivers import Consumer, make_receiver
from .server import DataServer, stream_payload

__all__ = ["measure"]

_PUMP_BYTES = 256 * 1024
# CPU time of this thread (user + system): a shared machine's other processes do not
# count against a receiver that was preempted; the cyclic GC is off during a transfer so
# a collection triggered by the server's allocations does not land in a receiver's time.
_clock = time.thread_time


class _Link:
    """Both ends of the socket pair; the server side runs inside ``refill``."""

    def __init__(self, server: DataServer) -> None:
        self.server = server
        self.srv, self.cli = socket.socketpair()
        self.srv.setblocking(False)
        self.cli.setblocking(False)
        self.pending = bytearray()
        self.server_s = 0.0

    def refill(self) -> None:
        t0 = _clock()
        srv = self.srv
        while True:  # the client's WINDOW_UPDATEs
            try:
                data = srv.recv(65536)
            except BlockingIOError:
                break
            if not data:
                break
            self.server.receive(data)
        pending = self.pending
        while True:
            if not pending:
                chunk = self.server.pump(_PUMP_BYTES)
                if not chunk:
                    break
                pending += chunk
            try:
                n = srv.send(pending)
            except BlockingIOError:
                break
            del pending[:n]
        self.server_s += _clock() - t0

    # the receiver's source
    def recv_into(self, view) -> int:
        self.refill()
        try:
            return self.cli.recv_into(view)
        except BlockingIOError:
            return 0

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = self.cli.send(view)
            except BlockingIOError:
                self.refill()  # the server reads, making room
                continue
            view = view[n:]

    def close(self) -> None:
        self.srv.close()
        self.cli.close()


def endpoints(strategy: str, cfg: dict, impl) -> tuple[DataServer, Consumer, object]:
    """The server after its handshake, the application, and the receiver of ``strategy``
    (the same on a real socket and over the TCP model)."""
    server = DataServer(
        cfg["streams"], cfg["stream_bytes"], cfg["window_bytes"], cfg["interleaving"], cfg["frame_bytes"]
    )
    server.handshake()
    sizes = {sid: cfg["stream_bytes"] for sid in server.ids}
    consumer = Consumer(sizes, cfg["window_bytes"], cfg["work"])
    rx = make_receiver(
        strategy,
        consumer,
        read_bytes=cfg["read_bytes"],
        max_frame_bytes=max(16384, cfg["frame_bytes"]),
        scanner_impl=impl,
        reading=cfg["reading"],
        side_bytes=cfg["side_bytes"],
    )
    return server, consumer, rx


def _transfer(strategy: str, cfg: dict, impl) -> dict:
    server, consumer, rx = endpoints(strategy, cfg, impl)
    link = _Link(server)
    poller = select.poll()
    poller.register(link.cli.fileno(), select.POLLIN)
    idle = 0
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        t0 = _clock()
        while not rx.done:
            link.refill()
            ready = poller.poll(0)  # the event loop's turn
            if not ready and not rx.has_pending:
                idle += 1
                if idle > 3:
                    raise RuntimeError(
                        f"{strategy}: the transfer stalled with {consumer.consumed_total} of "
                        f"{consumer.total} bytes consumed"
                    )
                continue
            idle = 0
            rx.wakeup(link)
        total_s = _clock() - t0
    finally:
        if gc_was_enabled:
            gc.enable()
        link.close()
    return {"rx": rx, "server": server, "total_s": total_s, "server_s": link.server_s}


def _expected_crc(sid: int, size: int) -> int:
    pattern = stream_payload(sid)
    crc, left = 0, size
    while left:
        n = min(left, len(pattern))
        crc = zlib.crc32(memoryview(pattern)[:n], crc)
        left -= n
    return crc


def measure(strategy: str, cfg: dict, impl, *, trace_memory: bool = False) -> dict:
    """One transfer through ``strategy``; counters, times and (optionally) heap peak."""
    out = _transfer(strategy, cfg, impl)
    rx, server = out["rx"], out["server"]
    c = rx.consumer
    if c.work == "crc32":
        for sid, size in c.sizes.items():
            if c.crc[sid] != _expected_crc(sid, size):
                raise RuntimeError(f"{strategy}: stream {sid} was delivered corrupted or out of order")
    receiver_s = max(out["total_s"] - out["server_s"], 1e-9)
    row = {
        "receiver_s": receiver_s,
        "server_s": out["server_s"],
        "throughput_mb_s": c.total / receiver_s / 1e6,
        **counters(rx),
        "window_updates_sent": c.window_updates,
        "server_frames": server.frames_sent,
        "scanner_allocations": rx.scanner.allocations,
    }
    if trace_memory:
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base, _ = tracemalloc.get_traced_memory()
            _transfer(strategy, cfg, impl)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        row["py_heap_peak_bytes"] = peak - base
    return row


def counters(rx) -> dict:
    """The receiver's deterministic counters as row fields."""
    return {
        "bytes": rx.consumer.total,
        "reads": rx.reads,
        "frames": rx.frames,
        "data_frames": rx.data_frames,
        "wakeups": rx.wakeups,
        "dispatches": rx.dispatches,
        "copied_bytes": rx.copied_bytes,
        "peak_buffered_bytes": rx.peak_buffered_bytes,
        "peak_stream_buffered_bytes": max(rx.peak_stream_buffered.values()),
        "read_buffer_bytes": len(rx.rb),
    }
