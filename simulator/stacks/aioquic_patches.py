"""Where the workbench reaches into aioquic's internals, and the check that they are still
there.  Written by hand, for aioquic 1.7 (``WRITTEN_FOR``; ``pyproject.toml`` pins it).

``check()`` (run when ``simulator.stacks.h3`` is imported) refuses another aioquic minor
version, and any aioquic whose private names below have gone, with one line, rather than
letting a patch silently do nothing:

- ``aioquic.quic.connection``'s module-level ``set`` (rebound here, see below) and
  ``QuicConnection._write_application``, which uses it;
- ``QuicConnection._push_crypto_data`` and ``_crypto_buffers`` (``h3.server_crypto_bytes``
  counts the CRYPTO bytes a server sends);
- ``QuicPacketRecovery._on_packets_lost`` and ``QuicStreamSender.get_frame`` /
  ``on_data_delivery`` / ``_stream_id`` (``h3.SimQuicConnection`` counts resent STREAM frames);
- ``H3Connection._init_connection``, ``_encode_headers``, ``_encoder_bytes_sent``,
  ``_decoder``, ``_max_table_capacity``, ``_blocked_streams``, ``_max_push_id``,
  ``_is_client`` (``h3.SimH3Connection`` announces its QPACK settings and MAX_PUSH_ID and
  sizes its HEADERS frames).

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

``install()`` is idempotent and is called when ``simulator.stacks.h3`` is imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["InsertionOrderedSet", "install", "check", "WRITTEN_FOR"]

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
)
# instance attributes, checked on the source of the method that sets them
_INSTANCE_NAMES = (
    ("aioquic.quic.connection", "QuicConnection", "__init__", ("_crypto_buffers", "_loss")),
    ("aioquic.quic.stream", "QuicStreamSender", "__init__", ("_stream_id",)),
    ("aioquic.h3.connection", "H3Connection", "__init__",
     ("_encoder_bytes_sent", "_decoder", "_max_table_capacity", "_blocked_streams", "_max_push_id", "_is_client")),
)


def check() -> None:
    """Raise ``RuntimeError`` (one line) unless the installed aioquic is the version these
    patches were written for and has every internal name they use."""
    import importlib
    import inspect

    import aioquic

    version = aioquic.__version__
    if version.split(".")[:2] != WRITTEN_FOR.split("."):
        raise RuntimeError(f"simulator.stacks was written for aioquic {WRITTEN_FOR}.x and found aioquic {version}: "
                           "check simulator/stacks/aioquic_patches.py against it, then update WRITTEN_FOR")
    missing = [f"{cls}.{name}" for module, cls, name in _CLASS_NAMES
               if not hasattr(getattr(importlib.import_module(module), cls), name)]
    for module, cls, method, names in _INSTANCE_NAMES:
        source = inspect.getsource(getattr(getattr(importlib.import_module(module), cls), method))
        missing += [f"{cls}.{name}" for name in names if f"self.{name}" not in source]
    write_application = importlib.import_module("aioquic.quic.connection").QuicConnection._write_application
    if "set(" not in inspect.getsource(write_application):
        missing.append("the set of served streams in QuicConnection._write_application")
    if missing:
        raise RuntimeError(f"aioquic {version} lacks what simulator/stacks/aioquic_patches.py relies on: "
                           + ", ".join(missing))


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
