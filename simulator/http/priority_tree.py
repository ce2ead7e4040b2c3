"""The RFC 7540 section 5.3 dependency tree as a scheduler (``tree``), with the placements
browsers build: Firefox's placeholders (``PLACEHOLDER_TREES``) and Chromium's exclusive
chain (``CHAIN``).  Written by hand: stride scheduling over bytes among siblings, the
tree's rules cited per section.  HTTP/3 carries no tree (RFC 9218 section 2.1): there every
stream sits under the root at the default weight.

Speed: with weighted siblings (Firefox's and Safari's trees) a stream's turn is one chunk,
so ``pick_run`` names runs of one and the writer would call Python per chunk.  A writer
over the C extension therefore gives the tree a mirror (``mirror``: ``net._tcp.StrideTree``,
C code in ``net/_stride_tree.h``): every change is still decided here, step by step, and
each step is told to the mirror, which does the per-chunk picks and charges with the same
floating-point operations in the same order.
"""

from __future__ import annotations

from ..errors import InputError
from .priority_signals import CHAIN, DEFAULT_URGENCY, DEFAULT_WEIGHT, PLACEHOLDER_TREES, ROOT, PrioritySignal, Scheduler

__all__ = ["TreeScheduler"]


class _Node:
    __slots__ = (
        "key",
        "parent",
        "children",
        "weight",
        "ready",
        "active",
        "pass_",
        "vtime",
        "order",
        "urgency",
        "number",
    )

    def __init__(self, key, weight: int, order: int, urgency: int = DEFAULT_URGENCY) -> None:
        self.key, self.weight, self.order, self.urgency = key, weight, order, urgency
        self.parent: _Node | None = None
        self.children: list[_Node] = []
        self.ready = False  # a stream with data ready (placeholders never are)
        self.active = 0  # ready nodes in this subtree, itself included
        self.pass_ = 0.0  # stride scheduling: bytes served / weight, against its siblings
        self.vtime = 0.0  # the pass of the child last served (a newcomer starts there)
        self.number = -1  # its node in the mirror (StrideTree), once attached there


_STRIDE = 256.0  # bytes x STRIDE / weight: a pass advance
_MAX_RUN = 64  # pick_run's longest run (chunks)


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
        self._root.number = 0  # the mirror's root
        self._nodes: dict = {ROOT: self._root}
        self._trees: set[str] = set()
        self._mirror = None

    def mirror(self, stride_tree) -> None:
        """Keep ``stride_tree`` (a fresh ``net._tcp.StrideTree``) a copy of this tree and pick
        through it: from now on ``pick`` and ``wrote`` are the mirror's (the same choices and
        charges in C), and the passes kept here are no longer read.  Only before any stream."""
        if len(self._nodes) > 1:
            raise ValueError("mirror a tree before any stream joins it")
        self._mirror = stride_tree
        self.pick, self.wrote = stride_tree.pick, stride_tree.wrote
        self.pick_run = lambda chunk_bytes: (stride_tree.pick(), 1)
        self.settle = lambda stream_id, chunks, chunk_bytes, last_bytes: Scheduler.settle(
            self, stream_id, chunks, chunk_bytes, last_bytes
        )

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
        self._bump(parent, own)  # adopted children were counted under the parent already
        mirror = self._mirror
        if mirror is not None:
            if node.number < 0:
                node.number = mirror.node(node.key, node.weight, node.order)
            mirror.attach(node.number, parent.number, exclusive, node.weight)

    def _detach(self, node: _Node) -> None:
        parent = node.parent
        parent.children.remove(node)
        self._bump(parent, -node.active)
        node.parent = None
        if self._mirror is not None:
            self._mirror.detach(node.number)

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
                raise InputError(
                    f"unknown placeholder set {signal.tree!r} (choose {', '.join(sorted(PLACEHOLDER_TREES))})"
                )
            self._placeholders(signal.tree)
            return self._nodes[(signal.tree, parent)], signal.exclusive
        # RFC 7540 section 5.3.1: a dependency on a stream not in the tree gets the default priority.
        node = self._nodes.get(parent)
        if node is None:
            return self._root, False
        return node, signal.exclusive

    # -- the interface ------------------------------------------------------------------
    def add(self, stream_id, signal, order):
        """A new stream placed by its signal (RFC 7540 section 5.3.1), ready to send."""
        parent, exclusive = self._parent_of(signal)
        node = self._nodes[stream_id] = _Node(stream_id, signal.weight, order, signal.urgency)
        node.ready, node.active = True, 0
        self._attach(node, parent, exclusive)
        self._bump(node, 1)
        if self._mirror is not None:
            self._mirror.ready(node.number, True)

    def pick(self):
        """Down from the root, the sibling of least pass with something ready below, to a ready stream."""
        node = self._root
        while True:
            if node.ready:
                return node.key
            best, bp, bo = None, 0.0, 0
            for child in node.children:  # least (pass, order), the earlier child on a tie
                if child.active:
                    cp = child.pass_
                    if best is None or cp < bp or (cp == bp and child.order < bo):
                        best, bp, bo = child, cp, child.order
            node.vtime = bp
            node = best

    def wrote(self, stream_id, nbytes):
        """Advance the pass of the stream and of each ancestor by bytes over weight (RFC 7540 5.3.2)."""
        node = self._nodes[stream_id]
        while node.parent is not None:
            node.pass_ += nbytes * _STRIDE / node.weight
            node = node.parent

    def pick_run(self, chunk_bytes):
        """``pick``, and the picks of that stream in a row with ``chunk_bytes`` charged each: at
        every level of the way down, while the chosen child's pass (advanced as ``wrote``
        advances it) stays below the best other sibling's (ties to the earlier request, then
        to the earlier child, as ``pick`` breaks them)."""
        node, contests = self._root, []
        while not node.ready:
            best = rival = None
            bp = rp = 0.0
            bo = ro = bi = ri = 0
            for i, child in enumerate(node.children):  # the best and the second best, in one pass
                if not child.active:
                    continue
                cp, co = child.pass_, child.order
                if best is None or cp < bp or (cp == bp and co < bo):
                    rival, rp, ro, ri = best, bp, bo, bi
                    best, bp, bo, bi = child, cp, co, i
                elif rival is None or cp < rp or (cp == rp and co < ro):
                    rival, rp, ro, ri = child, cp, co, i
            node.vtime = bp
            if rival is not None:
                contests.append((bp, bo, bi < ri, rp, ro, chunk_bytes * _STRIDE / best.weight))
            node = best
        run = _MAX_RUN
        # The lowest level first: its rival is the nearest as a rule, so the levels above stop sooner.
        for bp, bo, first, rp, ro, step in reversed(contests):
            # the best stays best while (its pass, its order) is below the rival's, or equal with
            # the best the earlier child (pick's tie rule)
            p, picks = bp + step, 1
            while picks < run and (p < rp or (p == rp and (bo < ro or (bo == ro and first)))):
                picks += 1
                p += step
            run = picks
        return node.key, run

    def settle(self, stream_id, chunks, chunk_bytes, last_bytes):
        """A run of ``pick_run``: per chunk after the first, the passes a pick leaves on the path
        (``vtime``), and per chunk its bytes charged (``wrote``), in the order picks and writes
        would have made them."""
        node = self._nodes[stream_id]
        path = []  # the stream and its ancestors below the root
        while node.parent is not None:
            path.append(node)
            node = node.parent
        for i in range(chunks + (1 if last_bytes else 0)):
            if i:
                for n in path:
                    n.parent.vtime = n.pass_
            nbytes = chunk_bytes if i < chunks else last_bytes
            for n in path:  # as ``wrote``: the same float steps
                n.pass_ += nbytes * _STRIDE / n.weight

    def remove(self, stream_id):
        """Out of the tree; its children move to its parent sharing its weight (RFC 7540 5.3.4)."""
        node = self._nodes.pop(stream_id, None)
        if node is None:
            return
        parent = node.parent
        self._bump(node, -1)
        node.ready = False
        mirror = self._mirror
        if mirror is not None:
            mirror.ready(node.number, False)
        children, node.children = node.children, []
        total = sum(c.weight for c in children) or 1
        self._detach(node)
        for child in children:
            # RFC 7540 section 5.3.4: the closed stream's weight shared among its children.
            child.weight = max(1, node.weight * child.weight // total)
            child.parent = None
            self._attach(child, parent, False)
        if mirror is not None:
            mirror.drop(node.number)

    def update(self, stream_id, signal):
        """A reprioritization: new weight and parent (RFC 7540 section 5.3.3)."""
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
