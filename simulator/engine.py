"""Discrete-event engine: a virtual clock, owner timer slots and seeded random streams.

Written by hand (SimPy is the model, but its generator processes cost more than the
simulator's callback style needs): a queue of events keyed by ``(time_s, seq)``; equal
times run in the order they were scheduled (FIFO, by ``seq``).  The queue and its run
loop have two implementations with one behaviour: ``simulator._engine.EventQueue`` in C
(built with the package; a replay over aioquic runs one event per packet and timer, and
the Python heap's tuple comparisons were the largest item of the workbench's own time)
and ``_PyEventQueue`` below, its twin, used when the extension is not built or
``WORKBENCH_PURE_PYTHON=1``.  Keys are unique, so both run events in the same order and
give byte-identical results (tests run both).

Timers follow libcurl's per-handle timer ids: an owner (a connection, a stream) has a
small fixed set of named slots.  Setting a slot replaces its pending expiry, cancelling
removes it, and a replaced or cancelled expiry never fires.  Only the owner's earliest
expiry sits in the global heap; stale heap entries are skipped when popped.  The one-slot
``Timer`` (``sim.timer``) has a C twin too, ``simulator._engine.Timer``, used with the C
queue: its heap entries carry the timer and a generation, and the C loop skips a stale one
without calling Python (it still counts as an event and still moves the clock, as the
Python ``Timer``'s no-op ``_fire`` did), so results are identical; ``Timer`` below is the
reference.

Randomness: one master seed; each component asks for ``sim.rng(name)`` and gets its
own ``random.Random`` seeded from SHA-256(seed, name), so adding a component never
changes another's draws.  Simulation code must never use the global ``random`` module
nor read the wall clock.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import os
import random
from typing import Any, Callable, Iterable

from ._extension import load_extension

__all__ = ["Simulator", "Timer", "TimerSlots", "derive_seed", "ENGINE_IMPLEMENTATION"]


class _PyEventQueue:
    """The event queue and run loop in Python: the twin of ``simulator._engine.EventQueue``
    (see that file's comment for the API) and the reference for its behaviour."""

    __slots__ = ("_heap", "_seq", "stopped", "_running")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[..., Any], tuple]] = []
        self._seq = 0
        self.stopped = False
        self._running = False

    def push(self, time_s: float, callback: Callable[..., Any], args: tuple) -> None:
        if time_s != time_s:
            raise ValueError("cannot schedule an event at time NaN")
        if type(args) is not tuple:
            raise TypeError("event args must be a tuple")
        self._seq += 1
        heapq.heappush(self._heap, (time_s, self._seq, callback, args))

    def reserve(self) -> int:
        """A scheduling position (seq) taken now, for an event that ``push_at`` may push
        later (or never): it runs where a ``push`` made now would have run."""
        self._seq += 1
        return self._seq

    def push_at(self, time_s: float, seq: int, callback: Callable[..., Any], args: tuple) -> None:
        """``push``, at the position ``seq`` that ``reserve`` gave."""
        if not 0 < seq <= self._seq:
            raise ValueError("push_at: seq is not a position reserve() gave")
        heapq.heappush(self._heap, (time_s, seq, callback, args))

    def run(self, sim: "Simulator", until_s: float | None, max_events: int | None) -> int:
        if self._running:
            raise RuntimeError("the event queue is already running")
        heap = self._heap
        pop = heapq.heappop
        until = math.inf if until_s is None else until_s
        limit = math.inf if max_events is None else max_events
        count = 0
        self.stopped = False
        self._running = True
        try:
            while heap:
                if heap[0][0] > until:
                    sim.now = until_s
                    break
                time_s, _, callback, args = pop(heap)
                sim.now = time_s
                callback(*args)
                count += 1
                if count >= limit or self.stopped:
                    break
        finally:
            self._running = False
        return count

    def pop(self) -> tuple[float, Callable[..., Any], tuple]:
        if not self._heap:
            raise IndexError("pop from an empty event queue")
        time_s, _, callback, args = heapq.heappop(self._heap)
        return time_s, callback, args

    def next_s(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def stop(self) -> None:
        self.stopped = True

    def __len__(self) -> int:
        return len(self._heap)


def _c_engine() -> Any:
    """The C extension module (``None`` when not built); its EventQueue and Timer go together."""
    return load_extension("simulator._engine", "WORKBENCH_ENGINE_EXT")  # the variable: a build elsewhere


_C_ENGINE = _c_engine()
C_EVENT_QUEUE = _C_ENGINE.EventQueue if _C_ENGINE is not None else None
C_TIMER = _C_ENGINE.Timer if _C_ENGINE is not None else None
_FORCE_PYTHON = os.environ.get("WORKBENCH_PURE_PYTHON", "") not in ("", "0")
EVENT_QUEUES: dict[str, type] = {"python": _PyEventQueue, **({"c": C_EVENT_QUEUE} if C_EVENT_QUEUE else {})}
ENGINE_IMPLEMENTATION = "c" if C_EVENT_QUEUE is not None and not _FORCE_PYTHON else "python"


def derive_seed(seed: int, name: str) -> int:
    """A 64-bit seed for component ``name`` under master ``seed`` (stable across runs and Python versions)."""
    digest = hashlib.sha256(f"{seed}\x00{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class Simulator:
    """The event loop.  ``now`` is virtual time in seconds.

    ``engine`` picks the event queue's implementation (``"c"`` or ``"python"``; default:
    C when built, see ``ENGINE_IMPLEMENTATION``); both give the same results."""

    # Slots for what the per-packet C paths read and the C loop sets each event (``now``,
    # ``_push``): a slot is read at a fixed offset, an instance dict by a lookup.  ``__dict__``
    # and ``__weakref__`` keep anything else settable, as before.
    __slots__ = (
        "seed",
        "now",
        "engine",
        "_queue",
        "_push",
        "_rngs",
        "events_run",
        "stopped",
        "trace",
        "__dict__",
        "__weakref__",
    )

    def __init__(self, seed: int = 1, *, trace: bool = False, engine: str | None = None) -> None:
        self.seed = seed
        self.now = 0.0
        self.engine = engine or ENGINE_IMPLEMENTATION
        if self.engine not in EVENT_QUEUES:
            raise LookupError(
                f"engine implementation {self.engine!r} is not available (have: {', '.join(sorted(EVENT_QUEUES))})"
            )
        self._queue = EVENT_QUEUES[self.engine]()
        # push(time_s, callback, args) without call_at's check: for callers that schedule
        # once per packet or timer and know time_s >= now (Link.send, Timer).
        self._push = self._queue.push
        self._rngs: dict[str, random.Random] = {}
        self.events_run = 0
        self.stopped = False  # the last run() ended because an event called stop()
        # Optional event trace (time, label) for determinism checks and debugging.
        self.trace: list[tuple[float, str]] | None = [] if trace else None

    # -- scheduling --------------------------------------------------------------
    def call_at(self, time_s: float, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` at virtual time ``time_s`` seconds (not before ``now``)."""
        if time_s < self.now:
            raise ValueError(f"cannot schedule in the past: {time_s} < now {self.now}")
        self._push(time_s, callback, args)

    def call_later(self, delay_s: float, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` ``delay_s`` seconds of virtual time from now."""
        if delay_s < 0:
            raise ValueError(f"negative delay {delay_s}")
        self._push(self.now + delay_s, callback, args)

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run at the current time, after everything already scheduled for it."""
        self._push(self.now, callback, args)

    def timers(self, owner: str, slots: Iterable[str]) -> "TimerSlots":
        """A ``TimerSlots`` of the named ``slots`` for ``owner`` on this loop."""
        return TimerSlots(self, owner, slots)

    def timer(self, owner: str, callback: Callable[[], Any]) -> "Timer":
        """One timer slot: the C ``simulator._engine.Timer`` on the C queue (its stale heap
        entries are skipped inside the C loop), else the Python ``Timer``; same behaviour."""
        if self.engine == "c":
            return C_TIMER(self._queue, self, owner, callback)
        return Timer(self, owner, callback)

    # -- running -----------------------------------------------------------------
    def run(self, until_s: float | None = None, max_events: int | None = None) -> float:
        """Run events until none is left, ``until_s`` is passed, ``max_events`` ran,
        or an event called ``stop()`` (then ``stopped`` is true until the next run).

        Returns the virtual time reached.  With ``until_s``, the clock is left at
        ``until_s`` when later events are still scheduled.
        """
        self.stopped = False
        if self.trace is None:
            count = self._queue.run(self, until_s, max_events)
        else:
            count = self._run_traced(until_s, max_events)
        self.events_run += count
        return self.now

    def _run_traced(self, until_s: float | None, max_events: int | None) -> int:
        """``run`` one event at a time, noting each in ``trace`` before it runs."""
        queue, trace = self._queue, self.trace
        count = 0
        while len(queue):
            if until_s is not None and queue.next_s() > until_s:
                self.now = until_s
                break
            time_s, callback, args = queue.pop()
            self.now = time_s
            trace.append((time_s, getattr(callback, "__qualname__", repr(callback))))
            callback(*args)
            count += 1
            if self.stopped or max_events is not None and count >= max_events:
                break
        return count

    def stop(self) -> None:
        """End the running ``run()`` once the event in progress returns (the rest stays
        scheduled): how an observer hands control back to whoever drives the run, at the
        exact event where something it watches changed, without the driver stepping
        one event at a time."""
        self.stopped = True
        self._queue.stop()

    @property
    def pending(self) -> int:
        """Events in the queue, including stale entries of cancelled or moved timers."""
        return len(self._queue)

    @property
    def next_s(self) -> float | None:
        """The time of the next scheduled event (``None`` when nothing is scheduled)."""
        return self._queue.next_s()

    # -- randomness --------------------------------------------------------------
    def rng(self, name: str) -> random.Random:
        """The random stream of component ``name`` (created on first use)."""
        stream = self._rngs.get(name)
        if stream is None:
            stream = self._rngs[name] = random.Random(derive_seed(self.seed, name))
        return stream


class TimerSlots:
    """A fixed set of named timer slots belonging to one owner.

    ``set(slot, when_s, callback)`` replaces whatever the slot held; ``cancel(slot)``
    empties it.  One heap entry per owner at a time is live: the earliest expiry.
    This is the reference of two C twins with the same heap entries: the TCP endpoint's
    (``simulator.net._tcp``) and the QUIC endpoint's (``simulator.net._quic.TimerSlots``).
    """

    __slots__ = ("sim", "owner", "_when", "_cb", "_scheduled_s", "_gen")

    def __init__(self, sim: Simulator, owner: str, slots: Iterable[str]) -> None:
        self.sim = sim
        self.owner = owner
        names = tuple(slots)
        self._when: dict[str, float | None] = {name: None for name in names}
        self._cb: dict[str, Callable[[], Any] | None] = {name: None for name in names}
        self._scheduled_s: float | None = None  # time of the live heap entry
        self._gen = 0

    def set(self, slot: str, when_s: float, callback: Callable[[], Any]) -> None:
        """Arm ``slot`` to run ``callback`` at ``when_s`` seconds (clamped to now), replacing what it held."""
        if slot not in self._when:
            raise KeyError(f"{self.owner} has no timer slot {slot!r}")
        sim = self.sim
        if when_s < sim.now:
            when_s = sim.now
        self._when[slot] = when_s
        self._cb[slot] = callback
        if self._scheduled_s is None or when_s < self._scheduled_s:
            # self._schedule(when_s), inlined: timers are set far more often than they fire
            self._gen += 1
            self._scheduled_s = when_s
            sim._push(when_s, self._fire, (self._gen,))

    def cancel(self, slot: str) -> None:
        """Empty ``slot``; its heap entry stays and finds nothing due when it pops."""
        # Lazy: the heap entry stays; when it pops it finds nothing due and reschedules.
        self._when[slot] = None
        self._cb[slot] = None

    def expiry(self, slot: str) -> float | None:
        """Seconds (virtual time) at which ``slot`` fires, or None when it is empty."""
        return self._when[slot]

    def armed(self) -> dict[str, float]:
        """The armed slots and their expiry times in seconds."""
        return {k: v for k, v in self._when.items() if v is not None}

    def _schedule(self, when_s: float) -> None:
        self._gen += 1
        self._scheduled_s = when_s
        self.sim.call_at(when_s, self._fire, self._gen)

    def _fire(self, gen: int) -> None:
        if gen != self._gen:
            return  # superseded by an earlier expiry
        self._scheduled_s = None
        now = self.sim.now
        when = self._when
        # Fire the slots due now, earliest first.  Only those due on entry: a callback that
        # re-arms a slot for `now` gets a fresh heap entry (via set), so it runs after the
        # other events of this instant and can never spin inside this call.
        due = [(w, s) for s, w in when.items() if w is not None and w <= now]
        if due:  # most entries that pop find a slot cancelled or moved later
            due.sort()
            for when_s, slot in due:
                if when[slot] != when_s:
                    continue  # cancelled or re-armed by an earlier callback of this batch
                callback = self._cb[slot]
                when[slot] = None
                self._cb[slot] = None
                callback()
        if self._scheduled_s is None:
            later = [w for w in when.values() if w is not None]
            if later:
                self._schedule(min(later))


class Timer:
    """One timer slot with a fixed callback: ``TimerSlots`` with a single slot, in fewer
    steps (a real stack's connection has one timer and sets it after every packet).

    ``set(when_s)`` replaces the pending expiry, ``cancel()`` empties the slot, ``when_s``
    is the expiry it holds (``None``: none).  The heap entries, and so the order of
    events, are exactly those of a one-slot ``TimerSlots``: one live entry, the earliest
    expiry; a later one waits for it to pop.  ``Simulator.timer`` gives the C twin
    (``simulator._engine.Timer``, same behaviour) on the C queue; this class is its reference.
    """

    __slots__ = ("sim", "owner", "callback", "when_s", "_scheduled_s", "_gen")

    def __init__(self, sim: Simulator, owner: str, callback: Callable[[], Any]) -> None:
        self.sim = sim
        self.owner = owner
        self.callback = callback
        self.when_s: float | None = None
        self._scheduled_s: float | None = None  # time of the live heap entry
        self._gen = 0

    def set(self, when_s: float) -> None:
        """Arm the timer for ``when_s`` seconds (clamped to now), replacing the previous expiry."""
        sim = self.sim
        if when_s < sim.now:
            when_s = sim.now
        self.when_s = when_s
        if self._scheduled_s is None or when_s < self._scheduled_s:
            # self._schedule(when_s), inlined: set after nearly every packet, and often earlier
            self._gen += 1
            self._scheduled_s = when_s
            sim._push(when_s, self._fire, (self._gen,))

    def cancel(self) -> None:
        """Disarm the timer (lazily: its heap entry stays and finds nothing due)."""
        self.when_s = None  # lazy, as in TimerSlots

    def _schedule(self, when_s: float) -> None:
        sim = self.sim
        self._gen += 1
        self._scheduled_s = when_s
        sim._push(when_s, self._fire, (self._gen,))

    def _fire(self, gen: int) -> None:
        if gen != self._gen:
            return  # superseded by an earlier expiry
        self._scheduled_s = None
        when_s = self.when_s
        if when_s is not None and when_s <= self.sim.now:
            self.when_s = None
            self.callback()
            when_s = self.when_s
        if when_s is not None and self._scheduled_s is None:
            self._schedule(when_s)
