"""Make aioquic's stream service order independent of memory addresses.  Written by hand.

Why: ``QuicConnection._write_application`` (aioquic 1.7.2) collects the streams it
served into a built-in ``set`` of ``QuicStream`` objects and appends that set to the
back of its service queue (``self._streams_queue.extend(sent)``).  A ``QuicStream``
hashes by ``id()``, i.e. by its memory address, so the order in which streams are
served next -- and with it which STREAM frames share a packet, which frames a loss
hits, and every completion time -- changed from one process to the next for the same
seed.  The fix keeps aioquic's intent (served streams go to the back, in the order
they were served: round robin) and makes it exact: inside ``aioquic.quic.connection``
the name ``set`` is bound to ``InsertionOrderedSet``, a set that iterates in insertion
order.  Nothing else changes: the module's other uses of ``set`` (connection-id
sequence numbers, a version comparison) only test membership and equality.

``install()`` is idempotent and is called when ``simulator.stacks.h3`` is imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["InsertionOrderedSet", "install"]


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
