"""The schedulers of urgency levels and groups (every built-in one but ``tree``): per
level a sequential group, one response at a time, and a shared group, round-robin a chunk
per turn.  Written by hand, sans-I/O and deterministic (ties go to the earlier request).

Speed: the most urgent level is kept until the set of levels changes, and a rotation is
turned as its stream is picked, so ``pick`` is a few attribute reads; over the C TCP
and QUIC endpoints the writer hands these groups to the C writer instead
(``http.priority_writer._NativeLevelWriter``).
"""

from __future__ import annotations

import bisect
from collections import deque

from .priority_signals import PrioritySignal, Scheduler

__all__ = ["LevelScheduler"]


class _Level:
    """One urgency's responses: the sequential ones in order, the shared ones in rotation."""

    __slots__ = ("sequential", "shared", "sent")

    def __init__(self) -> None:
        self.sequential: list[tuple[int, int]] = []  # (sort key, stream), served head first
        self.shared: deque = deque()  # streams in turn
        self.sent = [0, 0]  # bytes: sequential, shared (cf-shared-sequential)


class LevelScheduler(Scheduler):
    """Urgency levels (or one level, ``by_urgency=False``), each with a sequential group
    (one response at a time) and a shared group (round-robin, a chunk per turn).

    ``sequential``: which responses go to the sequential group ("non-incremental", "all"
    or "none"); ``newest_first``: the sequential group's order (LIFO); ``split``: the
    two groups take turns by bytes (Cloudflare's shared sequential) instead of the
    sequential group first."""

    def __init__(
        self, name: str, *, by_urgency: bool, sequential: str, newest_first: bool = False, split: bool = False
    ) -> None:
        self.name, self.by_urgency, self.sequential_rule = name, by_urgency, sequential
        self.newest_first, self.split = newest_first, split
        self.charges_bytes = split  # only the split counts bytes
        self._levels: dict[int, _Level] = {}
        self._top: _Level | None = None  # the most urgent level with a response
        self._where: dict[int, tuple[int, bool, int]] = {}  # stream -> (level, sequential, order)

    def _is_sequential(self, signal: PrioritySignal) -> bool:
        rule = self.sequential_rule
        return rule == "all" or (rule == "non-incremental" and not signal.incremental)

    def add(self, stream_id, signal, order):
        """Into its urgency's level: the sequential group by order, or the back of the rotation."""
        level = signal.urgency if self.by_urgency else 0
        sequential = self._is_sequential(signal)
        lv = self._levels.get(level)
        if lv is None:
            lv = self._levels[level] = _Level()
            # The most urgent level is decided again only when the set of levels changes.
            self._top = self._levels[min(self._levels)]
        if sequential:
            bisect.insort(lv.sequential, (-order if self.newest_first else order, stream_id))
        else:
            lv.shared.append(stream_id)
        self._where[stream_id] = (level, sequential, order)

    def pick(self):
        """The most urgent level's sequential head, or its rotation's next (turned as it is picked)."""
        lv = self._top
        shared = lv.shared
        if not shared:
            return lv.sequential[0][1]
        if lv.sequential and (not self.split or lv.sent[0] <= lv.sent[1]):
            return lv.sequential[0][1]
        stream_id = shared[0]
        shared.rotate(-1)  # its turn is used: to the back of the rotation
        return stream_id

    def wrote(self, stream_id, nbytes):
        """Count the bytes against its group (read only by the split of cf-shared-sequential)."""
        level, sequential, _ = self._where[stream_id]
        self._levels[level].sent[0 if sequential else 1] += nbytes

    def remove(self, stream_id):
        """Out of its group; a level left empty goes, and the most urgent one is found again."""
        where = self._where.pop(stream_id, None)
        if where is None:
            return
        level, sequential, order = where
        lv = self._levels[level]
        if sequential:
            lv.sequential.remove((-order if self.newest_first else order, stream_id))
        else:
            lv.shared.remove(stream_id)
        if not lv.sequential or not lv.shared:
            lv.sent = [0, 0]  # the split starts afresh when a group empties
        if not lv.sequential and not lv.shared:
            del self._levels[level]
            self._top = self._levels[min(self._levels)] if self._levels else None

    def update(self, stream_id, signal):
        """A PRIORITY_UPDATE (RFC 9218 section 7): out of its group, into the new one, same order."""
        where = self._where.get(stream_id)
        if where is None:
            return
        self.remove(stream_id)
        self.add(stream_id, signal, where[2])
