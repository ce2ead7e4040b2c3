"""Response schedulers: which stream's data a server sends next.  Written by hand (the
real stacks have no scheduler to borrow: ``h2`` leaves the order to its caller and
aioquic rotates its streams), sans-I/O and deterministic (no clock, no randomness: ties
go to the earlier request).

A scheduler holds the responses that have data ready and, each time the transport may
take more, names the stream whose next chunk goes (``pick``); the writer
(``ScheduledWriter``) writes that chunk, about a packet's worth, and tells the scheduler
(``wrote``; a scheduler whose ``charges_bytes`` is false is not told).  A stream leaves
when its last byte is written or its cancel arrives (``remove``); ``update`` changes its
signal (a PRIORITY_UPDATE frame, RFC 9218 section 7, or an HTTP/2 PRIORITY frame, RFC 7540
section 6.3).

Speed: ``scheduled_writer`` puts a scheduler of levels and groups (every one but ``tree``
and ``cf-shared-sequential``) over the C TCP endpoint on the C writer of ``net.writer``
(``_NativeLevelWriter``: its levels keyed so that it writes the same chunks in the same
order), so over h2 such a scheduler costs about what the fixed writer does; elsewhere
``ScheduledWriter`` runs in Python, the most urgent level kept until the set of levels
changes and a rotation turned as its stream is picked.

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

import bisect
import importlib
import re
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable

from ..errors import InputError
from ..net import native
from ..net.writer import ResponseWriter, _pad

__all__ = ["PrioritySignal", "Scheduler", "LevelScheduler", "TreeScheduler", "ScheduledWriter", "SCHEDULERS",
           "ADDED_SCHEDULERS", "scheduler_names", "make_scheduler", "scheduled_writer", "parse_priority_field",
           "PLACEHOLDER_TREES", "DEFAULT_URGENCY", "DEFAULT_WEIGHT"]

DEFAULT_URGENCY = 3                   # RFC 9218 section 4.1
DEFAULT_WEIGHT = 16                   # RFC 7540 section 5.3.5
ROOT = 0                              # RFC 7540 section 5.3.1: stream 0, the tree's root
CHAIN = "chain"                       # parent: Chromium's placement (TreeScheduler._chain_parent)


@dataclass(frozen=True)
class PrioritySignal:
    """What a client says about one response: RFC 9218 urgency and incremental, and the
    RFC 7540 tree placement (``parent``: a stream, ``ROOT``, the name of a placeholder of
    ``tree``'s set, or ``CHAIN``)."""

    urgency: int = DEFAULT_URGENCY
    incremental: bool = False
    parent: object = ROOT
    weight: int = DEFAULT_WEIGHT
    exclusive: bool = False
    tree: str | None = None               # the placeholder set (PLACEHOLDER_TREES) ``parent`` names

    def __post_init__(self) -> None:
        if not (isinstance(self.urgency, int) and 0 <= self.urgency <= 7):
            raise InputError(f"urgency must be 0..7 (RFC 9218 section 4.1), got {self.urgency!r}")
        if not (isinstance(self.weight, int) and 1 <= self.weight <= 256):
            raise InputError(f"weight must be 1..256 (RFC 7540 section 5.3.2), got {self.weight!r}")


# Placeholders a browser opens at the start of an HTTP/2 connection (PRIORITY frames for
# streams never opened) and hangs its requests under: name -> (parent, weight), parents first.
# Firefox (Http2Session: leader 3, other 5, background 7, speculative 9 under 7, follower
# 0xB under 3, urgentStart 0xD); its weight bytes 200/100/0/0/0/240 are weights 201/101/1/1/1/241
# (RFC 7540 section 6.3: the field is the weight minus one).
PLACEHOLDER_TREES: dict[str, tuple[tuple[str, object, int], ...]] = {
    "firefox": (("leader", ROOT, 201), ("other", ROOT, 101), ("background", ROOT, 1),
                ("speculative", "background", 1), ("follower", "leader", 1), ("urgent-start", ROOT, 241)),
}

# -- the Priority field (RFC 9218 section 5, a Structured Fields Dictionary, RFC 8941 3.2)
_KEY = re.compile(r"^[a-z*][a-z0-9_\-.*]*$")
_BARE_ITEM = re.compile(r'^(?:\?[01]|-?\d{1,15}(?:\.\d{1,3})?|"(?:[^"\\]|\\.)*"'
                        r"|[A-Za-z*][A-Za-z0-9:/!#$%&'*+\-.^_`|~]*|:[A-Za-z0-9+/=]*:)$")


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside quoted strings and inner lists."""
    parts, depth, quoted, start, i = [], 0, False, 0, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def parse_priority_field(value) -> tuple[int, bool]:
    """(urgency, incremental) of a ``Priority`` field value (RFC 9218 section 5): ``u`` an
    Integer 0-7, ``i`` a Boolean (bare ``i`` is true); other members are ignored (section
    4).  Raises ``ValueError`` naming the fault when the value is not a well-formed
    Dictionary or ``u``/``i`` are of the wrong type or range (a trace that carries one is
    bad input; a live server would ignore the member instead)."""
    text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
    urgency, incremental = DEFAULT_URGENCY, False
    if not text.strip():
        return urgency, incremental
    for member in _split_top(text, ","):
        member = member.strip(" \t")
        item, *params = _split_top(member, ";")
        key, eq, val = item.partition("=")
        key = key.strip()
        if not _KEY.match(key):
            raise ValueError(f"member {member!r} has no valid key")
        val = val.strip() if eq else "?1"
        if not (val.startswith("(") and val.endswith(")")) and not _BARE_ITEM.match(val):
            raise ValueError(f"member {member!r} has a malformed value")
        for p in params:
            if not _KEY.match(p.partition("=")[0].strip()):
                raise ValueError(f"member {member!r} has a malformed parameter")
        if key == "u":
            if not re.fullmatch(r"-?\d+", val) or not 0 <= int(val) <= 7:
                raise ValueError(f"urgency {val!r} is not an integer 0..7")
            urgency = int(val)
        elif key == "i":
            if val not in ("?0", "?1"):
                raise ValueError(f"incremental {val!r} is not a boolean (?0 or ?1)")
            incremental = val == "?1"
    return urgency, incremental


# ---------------------------------------------------------------------------------------
# Schedulers


class Scheduler:
    """The interface every scheduler offers (``stream_id``: the transport's stream label;
    ``order``: the response's rank in the order responses became ready, 1, 2, ...)."""

    name = ""
    charges_bytes = True                  # False: ``wrote`` does nothing (the writer skips it)

    def add(self, stream_id: int, signal: PrioritySignal, order: int) -> None:
        """A response with data ready joins."""
        raise NotImplementedError

    def pick(self) -> int:
        """The stream whose next chunk goes now (only called while some stream waits; the
        writer writes a chunk of it before it asks again)."""
        raise NotImplementedError

    def wrote(self, stream_id: int, nbytes: int) -> None:
        """``nbytes`` of ``stream_id`` were written (its turn is used)."""

    def remove(self, stream_id: int) -> None:
        """``stream_id`` has nothing more to write (written in full, or stopped)."""
        raise NotImplementedError

    def update(self, stream_id: int, signal: PrioritySignal) -> None:
        """New signals for a waiting stream (RFC 9218 section 7; RFC 7540 section 5.3.3)."""
        raise NotImplementedError


class _Level:
    """One urgency's responses: the sequential ones in order, the shared ones in rotation."""

    __slots__ = ("sequential", "shared", "sent")

    def __init__(self) -> None:
        self.sequential: list[tuple[int, int]] = []      # (sort key, stream), served head first
        self.shared: deque = deque()                     # streams in turn
        self.sent = [0, 0]                               # bytes: sequential, shared (cf-shared-sequential)


class LevelScheduler(Scheduler):
    """Urgency levels (or one level, ``by_urgency=False``), each with a sequential group
    (one response at a time) and a shared group (round-robin, a chunk per turn).

    ``sequential``: which responses go to the sequential group ("non-incremental", "all"
    or "none"); ``newest_first``: the sequential group's order (LIFO); ``split``: the
    two groups take turns by bytes (Cloudflare's shared sequential) instead of the
    sequential group first."""

    def __init__(self, name: str, *, by_urgency: bool, sequential: str, newest_first: bool = False,
                 split: bool = False) -> None:
        self.name, self.by_urgency, self.sequential_rule = name, by_urgency, sequential
        self.newest_first, self.split = newest_first, split
        self.charges_bytes = split                           # only the split counts bytes
        self._levels: dict[int, _Level] = {}
        self._top: _Level | None = None                       # the most urgent level with a response
        self._where: dict[int, tuple[int, bool, int]] = {}      # stream -> (level, sequential, order)

    def _is_sequential(self, signal: PrioritySignal) -> bool:
        rule = self.sequential_rule
        return rule == "all" or (rule == "non-incremental" and not signal.incremental)

    def add(self, stream_id, signal, order):
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
        lv = self._top
        shared = lv.shared
        if not shared:
            return lv.sequential[0][1]
        if lv.sequential and (not self.split or lv.sent[0] <= lv.sent[1]):
            return lv.sequential[0][1]
        stream_id = shared[0]
        shared.rotate(-1)                                 # its turn is used: to the back of the rotation
        return stream_id

    def wrote(self, stream_id, nbytes):
        level, sequential, _ = self._where[stream_id]
        self._levels[level].sent[0 if sequential else 1] += nbytes

    def remove(self, stream_id):
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
            lv.sent = [0, 0]                              # the split starts afresh when a group empties
        if not lv.sequential and not lv.shared:
            del self._levels[level]
            self._top = self._levels[min(self._levels)] if self._levels else None

    def update(self, stream_id, signal):
        where = self._where.get(stream_id)
        if where is None:
            return
        self.remove(stream_id)
        self.add(stream_id, signal, where[2])


class _Node:
    __slots__ = ("key", "parent", "children", "weight", "ready", "active", "pass_", "vtime", "order", "urgency")

    def __init__(self, key, weight: int, order: int, urgency: int = DEFAULT_URGENCY) -> None:
        self.key, self.weight, self.order, self.urgency = key, weight, order, urgency
        self.parent: _Node | None = None
        self.children: list[_Node] = []
        self.ready = False            # a stream with data ready (placeholders never are)
        self.active = 0               # ready nodes in this subtree, itself included
        self.pass_ = 0.0              # stride scheduling: bytes served / weight, against its siblings
        self.vtime = 0.0              # the pass of the child last served (a newcomer starts there)


_STRIDE = 256.0                       # bytes x STRIDE / weight: a pass advance


class TreeScheduler(Scheduler):
    """The RFC 7540 section 5.3 dependency tree.  A stream is served only when none of its
    ancestors has data ready (5.3.1: a dependent stream gets resources when those it
    depends on cannot progress); among siblings with something ready below them the
    bytes go in proportion to their weights (5.3.2), by stride scheduling: the sibling
    with the least bytes-per-weight served goes next, ties to the earlier request.
    Exclusive placement adopts the parent's children (5.3.1); a finished stream's children
    move to its parent with its weight shared among them in proportion (5.3.4)."""

    name = "tree"

    def __init__(self) -> None:
        self._root = _Node(ROOT, DEFAULT_WEIGHT, 0)
        self._nodes: dict = {ROOT: self._root}
        self._trees: set[str] = set()

    # -- the tree ---------------------------------------------------------------------
    def _attach(self, node: _Node, parent: _Node, exclusive: bool) -> None:
        own = node.active
        if exclusive:
            for child in parent.children:
                child.parent = node
                node.children.append(child)
                node.active += child.active
            parent.children = []
        node.parent = parent
        parent.children.append(node)
        node.pass_ = max(node.pass_, parent.vtime)
        self._bump(parent, own)                 # adopted children were counted under the parent already

    def _detach(self, node: _Node) -> None:
        parent = node.parent
        parent.children.remove(node)
        self._bump(parent, -node.active)
        node.parent = None

    @staticmethod
    def _bump(node: _Node | None, delta: int) -> None:
        while node is not None and delta:
            node.active += delta
            node = node.parent

    def _placeholders(self, tree: str) -> None:
        """Open a browser's placeholder set the first time one of its streams arrives."""
        if tree in self._trees:
            return
        self._trees.add(tree)
        for name, parent, weight in PLACEHOLDER_TREES[tree]:
            node = self._nodes[(tree, name)] = _Node((tree, name), weight, 0)
            self._attach(node, self._nodes[parent if parent == ROOT else (tree, parent)], False)

    def _chain_parent(self, urgency: int, exclude=None) -> tuple[_Node, bool]:
        """Chromium's HTTP/2 placement (``Http2PriorityDependencies::OnStreamCreation``):
        exclusively under the youngest open stream of the same priority, else of the
        nearest more urgent one that has an open stream, else under the root."""
        best = None
        for node in self._nodes.values():
            if not node.ready or node.urgency > urgency or node.key == exclude:
                continue
            if best is None or (node.urgency, node.order) > (best.urgency, best.order):
                best = node
        return (best or self._root), True

    def _parent_of(self, signal: PrioritySignal, exclude=None) -> tuple[_Node, bool]:
        parent = signal.parent
        if parent == CHAIN:
            return self._chain_parent(signal.urgency, exclude)
        if isinstance(parent, str):
            if signal.tree not in PLACEHOLDER_TREES:
                raise InputError(f"unknown placeholder set {signal.tree!r} "
                                 f"(choose {', '.join(sorted(PLACEHOLDER_TREES))})")
            self._placeholders(signal.tree)
            return self._nodes[(signal.tree, parent)], signal.exclusive
        # RFC 7540 section 5.3.1: a dependency on a stream not in the tree gets the default priority.
        node = self._nodes.get(parent)
        if node is None:
            return self._root, False
        return node, signal.exclusive

    # -- the interface ------------------------------------------------------------------
    def add(self, stream_id, signal, order):
        parent, exclusive = self._parent_of(signal)
        node = self._nodes[stream_id] = _Node(stream_id, signal.weight, order, signal.urgency)
        node.ready, node.active = True, 0
        self._attach(node, parent, exclusive)
        self._bump(node, 1)

    def pick(self):
        node = self._root
        while True:
            if node.ready:
                return node.key
            best = None
            for child in node.children:
                if child.active and (best is None or (child.pass_, child.order) < (best.pass_, best.order)):
                    best = child
            node.vtime = best.pass_
            node = best

    def wrote(self, stream_id, nbytes):
        node = self._nodes[stream_id]
        while node.parent is not None:
            node.pass_ += nbytes * _STRIDE / node.weight
            node = node.parent

    def remove(self, stream_id):
        node = self._nodes.pop(stream_id, None)
        if node is None:
            return
        parent = node.parent
        self._bump(node, -1)
        node.ready = False
        children, node.children = node.children, []
        total = sum(c.weight for c in children) or 1
        self._detach(node)
        for child in children:
            # RFC 7540 section 5.3.4: the closed stream's weight shared among its children.
            child.weight = max(1, node.weight * child.weight // total)
            child.parent = None
            self._attach(child, parent, False)

    def update(self, stream_id, signal):
        node = self._nodes.get(stream_id)
        if node is None:
            return
        node.urgency = signal.urgency
        node.weight = signal.weight
        parent, exclusive = self._parent_of(signal, exclude=stream_id)
        # RFC 7540 section 5.3.3: a stream made dependent on its own descendant: that
        # descendant first moves to the stream's former parent.
        p = parent
        while p is not None and p is not node:
            p = p.parent
        if p is node:
            self._detach(parent)
            self._attach(parent, node.parent, False)
        self._detach(node)
        self._attach(node, parent, exclusive)


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
    "rfc9218": rfc9218, "tree": tree, "fifo": fifo, "rr": rr, "lifo": lifo,
    "cf-exclusive-sequential": cf_exclusive_sequential, "cf-shared-sequential": cf_shared_sequential,
    "cf-shared": cf_shared, "urgency-rr": urgency_rr, "urgency-fifo": urgency_fifo,
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


# ---------------------------------------------------------------------------------------
# The writer


class ScheduledWriter(ResponseWriter):
    """``net.writer.ResponseWriter`` with a scheduler choosing each chunk's stream: the
    same window keeping over TCP and the same pulls over QUIC, ``add`` taking a
    ``PrioritySignal`` where the fixed writer takes an urgency level."""

    __slots__ = ("scheduler", "_left", "_count")

    def __init__(self, endpoint, chunk_bytes: int, written: dict[int, int], on_written, *, fill_on_ack: bool,
                 scheduler: Scheduler) -> None:
        super().__init__(endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack)
        self.scheduler = scheduler
        self._left: dict[int, int] = {}            # stream -> bytes still to write
        self._count = 0

    @property
    def waiting(self) -> bool:
        return bool(self._left)

    def add(self, stream_id: int, size: int, signal: PrioritySignal) -> None:
        self._count += 1
        self._left[stream_id] = size
        self.scheduler.add(stream_id, signal, self._count)

    def update(self, stream_id: int, signal: PrioritySignal) -> None:
        """A PRIORITY_UPDATE (or PRIORITY frame) for ``stream_id`` reached the server."""
        if stream_id in self._left:
            self.scheduler.update(stream_id, signal)

    def stop(self, stream_id: int) -> None:
        if self._left.pop(stream_id, None) is not None:
            self.scheduler.remove(stream_id)

    def write_next(self, limit: int) -> int:
        left = self._left
        if not left:
            return 0
        scheduler = self.scheduler
        stream_id = scheduler.pick()
        remaining = left[stream_id]
        n = remaining if remaining < limit else limit
        remaining -= n
        written = self.written
        written[stream_id] = written.get(stream_id, 0) + n
        self.unacked_bytes += n
        self.endpoint.write(stream_id, _pad(n), end=not remaining)
        if scheduler.charges_bytes:
            scheduler.wrote(stream_id, n)
        if remaining:
            left[stream_id] = remaining
        else:
            del left[stream_id]
            scheduler.remove(stream_id)
            self.on_written(stream_id)
        return n

    def fill(self) -> None:
        # write_next's body inlined: the writer's hot loop over TCP (one pass per acknowledgement).
        left = self._left
        if not left:
            return
        chunk = self.chunk_bytes
        endpoint = self.endpoint
        window = max(endpoint.cwnd_bytes, 2 * chunk)
        scheduler = self.scheduler
        pick, charges = scheduler.pick, scheduler.charges_bytes
        written, write, pad = self.written, endpoint.write, _pad
        while left and self.unacked_bytes < window:
            stream_id = pick()
            remaining = left[stream_id]
            n = remaining if remaining < chunk else chunk
            remaining -= n
            written[stream_id] = written.get(stream_id, 0) + n
            self.unacked_bytes += n
            write(stream_id, pad(n), end=not remaining)
            if charges:
                scheduler.wrote(stream_id, n)
            if remaining:
                left[stream_id] = remaining
            else:
                del left[stream_id]
                scheduler.remove(stream_id)
                self.on_written(stream_id)

    def on_stream_acked(self, stream_id: int, acked_offset: int) -> None:
        """ResponseWriter's, with the refill skipped when nothing waits (most acknowledgements
        near a load's end): called from the transport for every acknowledgement."""
        written = self.written.get(stream_id, 0)
        acked = acked_offset if acked_offset < written else written
        done = self._acked
        self.unacked_bytes -= acked - done.get(stream_id, 0)
        done[stream_id] = acked
        if self._left and self.fill_on_ack:
            self.fill()


class _NativeLevelWriter:
    """``ScheduledWriter`` with a ``LevelScheduler`` (without the split) over the C
    ``TcpEndpoint``: the same writes in the same order, on the C writer
    (``net._tcp.ResponseWriter``), whose rotations per level take the scheduler's groups as
    levels: a sequential response is a level of its own keyed by its order (newest first:
    by minus its order), the shared group of an urgency one level after them.  The h2 hot
    path (a chunk per acknowledgement) then runs in C, as the fixed writer's does."""

    __slots__ = ("_c", "scheduler", "written", "_body", "_count", "_on_written", "fill", "write_next",
                 "on_stream_acked")

    def __init__(self, endpoint, chunk_bytes: int, written: dict[int, int], on_written, *, fill_on_ack: bool,
                 scheduler: "LevelScheduler") -> None:
        self._c = native.C.ResponseWriter(endpoint, chunk_bytes, written, self._done, fill_on_ack)
        self.scheduler, self.written, self._on_written = scheduler, written, on_written
        self._body: dict[int, tuple[int, int, int]] = {}      # stream -> (offset of its body, size, order)
        self._count = 0
        self.fill, self.write_next, self.on_stream_acked = self._c.fill, self._c.write_next, self._c.on_stream_acked

    @property
    def unacked_bytes(self) -> int:
        return self._c.unacked_bytes

    @unacked_bytes.setter
    def unacked_bytes(self, value: int) -> None:
        self._c.unacked_bytes = value

    @property
    def waiting(self) -> bool:
        return bool(self._body)

    def _level(self, signal: PrioritySignal, order: int) -> int:
        s = self.scheduler
        level = (signal.urgency if s.by_urgency else 0) << 42
        if s._is_sequential(signal):
            return level + (-order if s.newest_first else order)
        return level + (1 << 41)

    def add(self, stream_id: int, size: int, signal: PrioritySignal) -> None:
        self._count += 1
        self._body[stream_id] = (self.written.get(stream_id, 0), size, self._count)
        self._c.add(stream_id, size, self._level(signal, self._count))

    def update(self, stream_id: int, signal: PrioritySignal) -> None:
        """As ``LevelScheduler.update``: out of its group, into the new one (at the back of a rotation)."""
        body = self._body.get(stream_id)
        if body is None:
            return
        offset, size, order = body
        self._c.stop(stream_id)
        self._c.add(stream_id, size - (self.written.get(stream_id, 0) - offset), self._level(signal, order))

    def stop(self, stream_id: int) -> None:
        if self._body.pop(stream_id, None) is not None:
            self._c.stop(stream_id)

    def _done(self, stream_id: int) -> None:
        self._body.pop(stream_id, None)
        self._on_written(stream_id)


def scheduled_writer(endpoint, chunk_bytes: int, written: dict[int, int], on_written, *, fill_on_ack: bool,
                     scheduler: Scheduler):
    """A writer with ``scheduler`` choosing each chunk's stream: on the C writer when the
    endpoint is the C ``TcpEndpoint`` and the scheduler is one of levels and groups
    (``_NativeLevelWriter``), else ``ScheduledWriter``."""
    if (native.C is not None and type(endpoint) is native.C.TcpEndpoint and type(scheduler) is LevelScheduler
            and not scheduler.split):
        return _NativeLevelWriter(endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack,
                                  scheduler=scheduler)
    return ScheduledWriter(endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack, scheduler=scheduler)


def with_urgency(signal: PrioritySignal, urgency: int, incremental: bool | None = None) -> PrioritySignal:
    """``signal`` with another urgency (and incremental flag): a PRIORITY_UPDATE's content."""
    return replace(signal, urgency=urgency, incremental=signal.incremental if incremental is None else incremental)


@dataclass(frozen=True)
class PriorityPlan:
    """What the page-load model's network needs to schedule responses with a scheduler of
    this module: its name, each resource's signals (by the page's resource index; others
    and pushes get the defaults, RFC 9218 section 4), and reprioritizations
    (``updates``: resource -> the signals of a PRIORITY_UPDATE the client sends once the
    load's render-blocking set is ready, RFC 9218 section 7)."""

    scheduler: str
    signals: tuple = ()                   # ((index, PrioritySignal), ...)
    updates: tuple = ()                   # ((index, PrioritySignal), ...)
    render_blocking: frozenset = frozenset()

    def __post_init__(self) -> None:
        if self.scheduler not in scheduler_names():
            make_scheduler(self.scheduler)              # raises InputError naming the choices
        object.__setattr__(self, "_by_index", dict(self.signals))

    def signal(self, index: int | None, default_urgency: int = DEFAULT_URGENCY) -> PrioritySignal:
        """The signals of resource ``index`` (None: a push, at ``default_urgency``)."""
        found = self._by_index.get(index) if index is not None else None
        return found if found is not None else PrioritySignal(urgency=default_urgency)
