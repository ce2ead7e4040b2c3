"""Where the workbench reaches into aioquic's internals, and the check that they are still
there.  Written by hand, for aioquic 1.7 (``WRITTEN_FOR``; ``pyproject.toml`` pins it).

``check()`` (run when ``simulator.stacks.h3`` is imported, by its ``h3_quic``) refuses another
aioquic minor version, and any aioquic whose private names below have gone, with one line,
rather than letting a patch silently do nothing:

- ``aioquic.quic.connection``'s module-level ``set`` (rebound here, see below) and
  ``QuicConnection._write_application``, which uses it;
- ``QuicConnection._push_crypto_data`` and ``_crypto_buffers`` (``h3_quic.server_crypto_bytes``
  counts the CRYPTO bytes a server sends);
- ``QuicPacketRecovery._on_packets_lost`` and ``QuicStreamSender.get_frame`` /
  ``on_data_delivery`` / ``_stream_id`` (``h3_quic.SimQuicConnection`` counts resent STREAM frames);
- ``H3Connection._init_connection``, ``_encode_headers``, ``_encoder_bytes_sent``,
  ``_decoder``, ``_max_table_capacity``, ``_blocked_streams``, ``_max_push_id``,
  ``_is_client`` (``h3.SimH3Connection`` announces its QPACK settings and MAX_PUSH_ID and
  sizes its HEADERS frames);
- ``H3Connection._local_control_stream_id`` and ``_peer_control_stream_id``
  (``http.priority_stacks_h3`` writes and reads RFC 9218's PRIORITY_UPDATE on the control
  streams, which aioquic has no API for);
- ``QuicConnection._write_application``'s ``_streams_queue`` and
  ``QuicPacketBuilder.remaining_flight_space`` (``StreamPull``, below).

The stream service order, made independent of memory addresses.  Why:
``QuicConnection._write_application`` (aioquic 1.7.2) collects the streams it served
into a built-in ``set`` of ``QuicStream`` objects and appends that set to the back of
its service queue (``self._streams_queue.extend(sent)``).  A ``QuicStream`` hashes by
``id()``, i.e. by its memory address, so the order in which streams are served next --
and with it which STREAM frames share a packet, which frames a loss hits, and every
completion time -- changed from one process to the next for the same seed.  The fix
keeps aioquic's intent (served streams go to the back, in the order they were served:
round robin) and makes it exact: inside ``aioquic.quic.connection`` the name ``set`` is
bound to ``InsertionOrderedSet``, a set that iterates in insertion order.  Nothing else
changes: the module's other uses of ``set`` (connection-id sequence numbers, a version
comparison) only test membership and equality.

A stream scheduler's hook (``StreamPull``, a mixin for a ``QuicConnection`` subclass):
aioquic serves its streams in its own rotation, each packet from the send buffers of the
streams in ``_streams_queue`` (``_write_application``: ``for stream in
self._streams_queue``, then the queue rebuilt with the served ones at the back), and has no
hook for a server to choose whose data goes next.  With ``StreamPull`` the connection reads
its queue through a view whose first iteration for each packet serves aioquic's queue as
before (control streams, QPACK streams, data already buffered: a lost frame's bytes) and
then asks ``stream_pull(builder)`` for more: a generator that writes a chunk on the stream
a scheduler picks (``H3Connection.send_data``) and yields that ``QuicStream``, which
aioquic then packs into the packet being built, chunk after chunk while there is room
(``builder.remaining_flight_space``).  So the application holds its responses and hands
aioquic one packet's worth at a time, in its own order.  Or ``stream_order(queue, builder)``,
for an application that hands aioquic its responses whole (the lab's server): it yields every
stream of the queue, once each, in the order the packet is to be filled from them.  The view's later iterations (the
queue's rebuild) and every other use of the queue see aioquic's list unchanged.

``install()`` is idempotent and is called when ``simulator.stacks.h3`` is imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["InsertionOrderedSet", "StreamPull", "install", "check", "WRITTEN_FOR"]

WRITTEN_FOR = "1.7"
# (module, class or None, attribute): what the patches and subclasses rely on
_CLASS_NAMES = (
    ("aioquic.quic.connection", "QuicConnection", "_write_application"),
    ("aioquic.quic.connection", "QuicConnection", "_push_crypto_data"),
    ("aioquic.quic.recovery", "QuicPacketRecovery", "_on_packets_lost"),
    ("aioquic.quic.stream", "QuicStreamSender", "get_frame"),
    ("aioquic.quic.stream", "QuicStreamSender", "on_data_delivery"),
    ("aioquic.h3.connection", "H3Connection", "_init_connection"),
    ("aioquic.h3.connection", "H3Connection", "_encode_headers"),
    ("aioquic.quic.packet_builder", "QuicPacketBuilder", "remaining_flight_space"),
)
# instance attributes, checked on the source of the method that sets them
_INSTANCE_NAMES = (
    ("aioquic.quic.connection", "QuicConnection", "__init__", ("_crypto_buffers", "_loss")),
    ("aioquic.quic.stream", "QuicStreamSender", "__init__", ("_stream_id", "buffer_is_empty")),
    (
        "aioquic.h3.connection",
        "H3Connection",
        "__init__",
        (
            "_encoder_bytes_sent",
            "_decoder",
            "_max_table_capacity",
            "_blocked_streams",
            "_max_push_id",
            "_is_client",
            "_local_control_stream_id",
            "_peer_control_stream_id",
        ),
    ),
)


def check() -> None:
    """Raise ``RuntimeError`` (one line) unless the installed aioquic is the version these
    patches were written for and has every internal name they use."""
    import importlib
    import inspect

    import aioquic

    version = aioquic.__version__
    if version.split(".")[:2] != WRITTEN_FOR.split("."):
        raise RuntimeError(
            f"simulator.stacks was written for aioquic {WRITTEN_FOR}.x and found aioquic {version}: "
            "check simulator/stacks/aioquic_patches.py against it, then update WRITTEN_FOR"
        )
    missing = [
        f"{cls}.{name}"
        for module, cls, name in _CLASS_NAMES
        if not hasattr(getattr(importlib.import_module(module), cls), name)
    ]
    for module, cls, method, names in _INSTANCE_NAMES:
        source = inspect.getsource(getattr(getattr(importlib.import_module(module), cls), method))
        missing += [f"{cls}.{name}" for name in names if f"self.{name}" not in source]
    write_application = importlib.import_module("aioquic.quic.connection").QuicConnection._write_application
    source = inspect.getsource(write_application)
    if "set(" not in source:
        missing.append("the set of served streams in QuicConnection._write_application")
    # StreamPull: the queue iterated once per packet, then rebuilt by assignment
    if "for stream in self._streams_queue:" not in source or "self._streams_queue = [" not in source:
        missing.append("the stream service queue (_streams_queue) of QuicConnection._write_application")
    if missing:
        raise RuntimeError(
            f"aioquic {version} lacks what simulator/stacks/aioquic_patches.py relies on: " + ", ".join(missing)
        )


class InsertionOrderedSet(dict):
    """A set whose iteration order is the order of first insertion: a ``dict`` whose keys are
    the members (values unused), with the ``set`` methods aioquic calls (``add``,
    ``discard``; ``in``, ``len``, iteration and ``==`` are the dict's own).  A dict
    subclass rather than a ``MutableSet``: aioquic tests membership of its served-streams
    sets over a million times in a large replay, and the dict answers in C."""

    __slots__ = ()

    def __init__(self, items: Iterable[Any] = ()) -> None:
        for item in items:
            self[item] = None

    def add(self, item: Any) -> None:
        """Add ``item`` (kept at its first insertion position if already present)."""
        self[item] = None

    def discard(self, item: Any) -> None:
        """Remove ``item`` if present."""
        self.pop(item, None)

    def __repr__(self) -> str:
        return f"InsertionOrderedSet({list(self)!r})"


def install() -> None:
    """Bind ``set`` inside ``aioquic.quic.connection`` to ``InsertionOrderedSet``."""
    from aioquic.quic import connection

    connection.set = InsertionOrderedSet


class _PulledQueue:
    """``StreamPull``'s view of a connection's stream queue (``list``): the first iteration
    after the queue was last assigned, while a packet is built, serves the list then the
    streams ``stream_pull`` yields; any other iteration, and ``append``/``extend``, the list."""

    __slots__ = ("queue", "conn")

    def __init__(self, queue: list, conn) -> None:
        self.queue, self.conn = queue, conn

    def __iter__(self):
        conn = self.conn
        if not conn._pull_armed:
            return iter(self.queue)
        conn._pull_armed = False
        return self._pulling(conn)

    def _pulling(self, conn):
        order = getattr(conn, "stream_order", None)
        if order is not None:  # the whole queue, in the order it gives
            yield from order(self.queue, conn._pull_builder)
            return
        yield from self.queue
        yield from conn.stream_pull(conn._pull_builder)

    def __len__(self) -> int:
        return len(self.queue)

    def append(self, stream) -> None:
        """As the list's (a new stream joins aioquic's rotation)."""
        self.queue.append(stream)

    def extend(self, streams) -> None:
        """As the list's (served streams to the back)."""
        self.queue.extend(streams)


class StreamPull:
    """Mixin for a ``QuicConnection`` subclass (put it first): ``stream_pull(builder)``, when
    set, is asked for streams to serve after aioquic's own queue, once per packet (the
    module docstring).  Written for aioquic 1.7's ``_write_application`` (``check()``)."""

    stream_pull = None  # callable(builder) -> iterator of QuicStream; None: aioquic's order only
    # callable(queue, builder) -> iterator over every stream of ``queue`` (each once), in the order
    # a packet is to be filled from them; None: aioquic's queue, then ``stream_pull``
    stream_order = None
    _pull_builder = None  # the packet builder while _write_application runs
    _pull_armed = False  # the next iteration of the queue is a packet's first

    def _write_application(self, builder, network_path, now) -> None:
        self._pull_builder = builder
        try:
            super()._write_application(builder, network_path, now)
        finally:
            self._pull_builder = None

    @property
    def _streams_queue(self):
        queue = self.__dict__["_pulled_queue"]
        if self._pull_builder is None or (self.stream_pull is None and self.stream_order is None):
            return queue
        return _PulledQueue(queue, self)

    @_streams_queue.setter
    def _streams_queue(self, queue) -> None:
        self.__dict__["_pulled_queue"] = queue
        self._pull_armed = True  # aioquic rebuilds its queue after each packet: the next iteration is a new packet's
