"""Response schedulers: which stream's data a server sends next.  Written by hand (the
real stacks have no scheduler to borrow: ``h2`` leaves the order to its caller and
aioquic rotates its streams), sans-I/O and deterministic (no clock, no randomness: ties
go to the earlier request).

Where things are: the signals and the ``Scheduler`` interface in ``priority_signals``
(a scheduler names, each time the transport may take more, the stream whose next chunk
goes: ``add``, ``pick``, ``wrote``, ``remove``, ``update``), the schedulers of levels and
groups in ``priority_levels``, the dependency tree in ``priority_tree``, the writers that
put a scheduler on a connection in ``priority_writer``; this module holds the table of
built-in schedulers, ``make_scheduler`` and the page-load model's ``PriorityPlan``, and
re-exports the rest.

Speed: over the C TCP endpoint and the C QUIC one ``scheduled_writer`` puts every scheduler
on the C writer of ``net.writer`` (the turns shared by both, ``net/_writer_turns.h``): one
of levels and groups as its levels (Cloudflare's split counted there too), ``tree`` in its
C twin (``StrideTree``: the picks and charges of each chunk in C, the tree's changes still
decided here), any other (added ones) with its ``pick_run``/``settle`` as hooks, one Python
call a run of chunks; so over h2 and h3 a scheduler costs about what the fixed writer does
(``workbench bench priorities``).  Elsewhere (the Python endpoints, a qlog) ``ScheduledWriter``
runs in Python (with ``tree``'s ``pick`` and ``wrote`` from the twin when the C extension is
in use).

Each stream comes with the signals a client sends (``PrioritySignal``): RFC 9218's
urgency (0-7, lower first, default 3) and incremental flag, and RFC 7540's dependency
tree placement (parent, weight 1-256, exclusive), which only HTTP/2 carries.

Built in (``SCHEDULERS``; one line in ``ADDED_SCHEDULERS`` adds another, docs/extending.md):

- ``rfc9218``: the lowest urgency first; within one urgency the non-incremental
  responses one at a time in request order, then the incremental ones round-robin
  (RFC 9218 sections 4 and 10);
- ``tree``: the RFC 7540 section 5.3 dependency tree: a stream is served only when no
  ancestor has data ready, siblings share by weight (stride scheduling over bytes);
- ``fifo`` (first come, first served: each response whole, in request order), ``rr``
  (round-robin over every response, whatever its signals), ``lifo`` (the latest
  request first);
- Cloudflare's three modes (its 2019 "Enhanced HTTP/2 Prioritization": per priority level
  a concurrency replacing the client's incremental flag), each applied to every response
  of an urgency: ``cf-exclusive-sequential`` (concurrency 0: one response at a time, in
  order of importance, urgency then request, each with the whole connection; the
  incremental flag not read, so it schedules as ``urgency-fifo`` does),
  ``cf-shared-sequential`` (concurrency 1 for the non-incremental responses: one at a time,
  taking half the bytes while the shared ones, the incremental, round-robin the other
  half) and ``cf-shared`` (concurrency n: all of the urgency round-robin, as
  ``urgency-rr``);
- the server behaviours Herbots et al. (ANRW 2024) found, named for the behaviour:
  ``urgency-rr`` (urgency respected, ``incremental`` ignored: round-robin within an
  urgency; the page-load model's ``urgency`` writer), ``urgency-fifo`` (urgency
  respected, first come first served within it).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InputError
from .priority_levels import LevelScheduler
from .priority_signals import (
    CHAIN,
    DEFAULT_URGENCY,
    DEFAULT_WEIGHT,
    PLACEHOLDER_TREES,
    ROOT,
    PrioritySignal,
    Scheduler,
    parse_priority_field,
    with_urgency,
)
from .priority_tree import TreeScheduler
from .priority_writer import ScheduledWriter, scheduled_writer

__all__ = [
    "PrioritySignal",
    "Scheduler",
    "LevelScheduler",
    "TreeScheduler",
    "ScheduledWriter",
    "SCHEDULERS",
    "ADDED_SCHEDULERS",
    "scheduler_names",
    "make_scheduler",
    "scheduled_writer",
    "parse_priority_field",
    "PLACEHOLDER_TREES",
    "DEFAULT_URGENCY",
    "DEFAULT_WEIGHT",
    "ROOT",
    "CHAIN",
    "with_urgency",
    "PriorityPlan",
]


# ---------------------------------------------------------------------------------------
# The table


def rfc9218() -> Scheduler:
    """RFC 9218 sections 4 and 10: urgency first; non-incremental in order, then incremental round-robin."""
    return LevelScheduler("rfc9218", by_urgency=True, sequential="non-incremental")


def tree() -> Scheduler:
    """RFC 7540 section 5.3: the dependency tree with weights."""
    return TreeScheduler()


def fifo() -> Scheduler:
    """First come, first served: each response whole, in request order, whatever its signals."""
    return LevelScheduler("fifo", by_urgency=False, sequential="all")


def rr() -> Scheduler:
    """Round-robin over every response with data, a chunk per turn, whatever its signals."""
    return LevelScheduler("rr", by_urgency=False, sequential="none")


def lifo() -> Scheduler:
    """The latest request first, each response whole."""
    return LevelScheduler("lifo", by_urgency=False, sequential="all", newest_first=True)


def cf_exclusive_sequential() -> Scheduler:
    """Cloudflare's exclusive sequential: per urgency, every response one at a time with the whole connection."""
    return LevelScheduler("cf-exclusive-sequential", by_urgency=True, sequential="all")


def cf_shared_sequential() -> Scheduler:
    """Cloudflare's shared sequential: per urgency, non-incremental one at a time with half the bytes."""
    return LevelScheduler("cf-shared-sequential", by_urgency=True, sequential="non-incremental", split=True)


def cf_shared() -> Scheduler:
    """Cloudflare's shared: per urgency, every response round-robin."""
    return LevelScheduler("cf-shared", by_urgency=True, sequential="none")


def urgency_rr() -> Scheduler:
    """Herbots et al.: urgency respected, ``incremental`` ignored (round-robin within an urgency)."""
    return LevelScheduler("urgency-rr", by_urgency=True, sequential="none")


def urgency_fifo() -> Scheduler:
    """Herbots et al.: urgency respected, first come first served within an urgency."""
    return LevelScheduler("urgency-fifo", by_urgency=True, sequential="all")


SCHEDULERS: dict[str, Callable[[], Scheduler]] = {
    "rfc9218": rfc9218,
    "tree": tree,
    "fifo": fifo,
    "rr": rr,
    "lifo": lifo,
    "cf-exclusive-sequential": cf_exclusive_sequential,
    "cf-shared-sequential": cf_shared_sequential,
    "cf-shared": cf_shared,
    "urgency-rr": urgency_rr,
    "urgency-fifo": urgency_fifo,
}
# Schedulers added outside this module: name -> the module whose ``make()`` returns one.
ADDED_SCHEDULERS: dict[str, str] = {}


def scheduler_names() -> tuple[str, ...]:
    """Every scheduler's name, built-in ones first."""
    return tuple(SCHEDULERS) + tuple(ADDED_SCHEDULERS)


def make_scheduler(name: str) -> Scheduler:
    """A fresh scheduler ``name`` (one per connection)."""
    if name in SCHEDULERS:
        return SCHEDULERS[name]()
    if name in ADDED_SCHEDULERS:
        return importlib.import_module(ADDED_SCHEDULERS[name]).make()
    raise InputError(f"unknown scheduler {name!r} (choose from {', '.join(scheduler_names())})")


@dataclass(frozen=True)
class PriorityPlan:
    """What the page-load model's network needs to schedule responses with a scheduler of
    this module: its name, each resource's signals (by the page's resource index; others
    and pushes get the defaults, RFC 9218 section 4), and reprioritizations
    (``updates``: resource -> the signals of a PRIORITY_UPDATE the client sends once the
    load's render-blocking set is ready, RFC 9218 section 7)."""

    scheduler: str
    signals: tuple = ()  # ((index, PrioritySignal), ...)
    updates: tuple = ()  # ((index, PrioritySignal), ...)
    render_blocking: frozenset = frozenset()
    qlog: object = field(default=None, compare=False, repr=False)  # a priority_qlog.PriorityQlog: HTTP/3 events

    def __post_init__(self) -> None:
        if self.scheduler not in scheduler_names():
            make_scheduler(self.scheduler)  # raises InputError naming the choices
        object.__setattr__(self, "_by_index", dict(self.signals))

    def qlog_trace(self, connection: str, sim, transport: str):
        """The qlog trace of one connection's server (``priority_qlog``), or None: none asked for, or
        not HTTP/3 (qlog defines HTTP/3 events only)."""
        if self.qlog is None or transport != "quic":
            return None
        return self.qlog.trace(connection, lambda: sim.now)

    def signal(self, index: int | None, default_urgency: int = DEFAULT_URGENCY) -> PrioritySignal:
        """The signals of resource ``index`` (None: a push, at ``default_urgency``)."""
        found = self._by_index.get(index) if index is not None else None
        return found if found is not None else PrioritySignal(urgency=default_urgency)
