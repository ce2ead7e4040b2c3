"""The RFC 7540 section 5.3 dependency tree as a scheduler (``tree``), with the placements
browsers build: Firefox's placeholders (``PLACEHOLDER_TREES``) and Chromium's exclusive
chain (``CHAIN``).  Written by hand: stride scheduling over bytes among siblings, the
tree's rules cited per section.  HTTP/3 carries no tree (RFC 9218 section 2.1): there every
stream sits under the root at the default weight.

Speed: with weighted siblings (Firefox's and Safari's trees) a stream's turn is one chunk,
so ``pick_run`` names runs of one and a writer would call Python per chunk.  A writer over
the C extension therefore hands the tree to its C twin (``run_in_c``: the ``StrideTree`` of
``net._tcp`` or ``net._quic``, ``net/_stride_tree.h``, the same steps with the same
floating-point operations in the same order): the tree's picks, charges, placements and
removals run there, and this class keeps only where a new or reprioritized stream goes (its
parent, Chromium's chain, Firefox's placeholders).  The Python tree below stays the reference
the C one is tested against.
"""

from __future__ import annotations

from ..errors import InputError
from .priority_signals import CHAIN, DEFAULT_URGENCY, DEFAULT_WEIGHT, PLACEHOLDER_TREES, ROOT, PrioritySignal, Scheduler

__all__ = ["TreeScheduler"]


class _Node:
    __slots__ = ("key", "parent", "children", "weight", "ready", "active", "pass_", "vtime", "order", "urgency")

    def __init__(self, key, weight: int, order: int, urgency: int = DEFAULT_URGENCY) -> None:
        self.key, self.weight, self.order, self.urgency = key, weight, order, urgency
        self.parent: _Node | None = None
        self.children: list[_Node] = []
        self.ready = False  # a stream with data ready (placeholders never are)
        self.active = 0  # ready nodes in this subtree, itself included
        self.pass_ = 0.0  # stride scheduling: bytes served / weight, against its siblings
        self.vtime = 0.0  # the pass of the child last served (a newcomer starts there)


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
        self._nodes: dict = {ROOT: self._root}
        self._trees: set[str] = set()
        self._twin = None  # a StrideTree (net._tcp's or net._quic's) once ``run_in_c`` is called

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
        children, node.children = node.children, []
        total = sum(c.weight for c in children) or 1
        self._detach(node)
        for child in children:
            # RFC 7540 section 5.3.4: the closed stream's weight shared among its children.
            child.weight = max(1, node.weight * child.weight // total)
            child.parent = None
            self._attach(child, parent, False)

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

    # -- in C -----------------------------------------------------------------------------
    def run_in_c(self, stride_tree) -> bool:
        """Run this tree in ``stride_tree`` (a fresh ``StrideTree`` of ``net._tcp`` or
        ``net._quic``, the C twin): from now on ``add``, ``pick``, ``wrote``, ``remove`` and
        ``update`` are its steps, and this object keeps only what placing a stream needs (each
        stream's number there, urgency and order; the placeholders' numbers).  Only while no
        stream has joined (nor a twin taken over): whether it did."""
        if len(self._nodes) > 1 or self._twin is not None:
            return False
        self._twin = stride_tree
        self._streams: dict = {}  # stream -> [number in the twin, urgency, order]
        # ``_nodes``' keys that are not placeholders -> number (ROOT: the twin's node 0).
        self._numbers: dict = {ROOT: 0}
        self._places: dict = {}  # placeholder (tree, name) -> number
        self.add, self.remove, self.update = self._c_add, self._c_remove, self._c_update
        self.pick, self.wrote = stride_tree.pick, stride_tree.wrote
        self.pick_run = lambda chunk_bytes: (stride_tree.pick(), 1)
        self.settle = lambda stream_id, chunks, chunk_bytes, last_bytes: Scheduler.settle(
            self, stream_id, chunks, chunk_bytes, last_bytes
        )
        return True

    def _c_parent(self, signal: PrioritySignal, exclude=None) -> tuple[int, bool]:
        """``_parent_of`` over the twin: the parent's number and whether the placement is exclusive."""
        parent = signal.parent
        if parent == CHAIN:
            # _chain_parent: the youngest open stream of the same urgency, else of the nearest more urgent one
            best = None
            for sid, entry in self._streams.items():
                if entry[1] > signal.urgency or sid == exclude:
                    continue
                if best is None or (entry[1], entry[2]) > (best[1], best[2]):
                    best = entry
            return (best[0] if best is not None else 0), True
        if isinstance(parent, str):
            tree = signal.tree
            if tree not in self._trees:
                if tree not in PLACEHOLDER_TREES:
                    raise InputError(
                        f"unknown placeholder set {tree!r} (choose {', '.join(sorted(PLACEHOLDER_TREES))})"
                    )
                self._trees.add(tree)
                twin, places = self._twin, self._places
                for name, above, weight in PLACEHOLDER_TREES[tree]:
                    number = places[(tree, name)] = twin.node(None, weight, 0)
                    twin.attach(number, self._numbers[above] if above == ROOT else places[(tree, above)], False, weight)
            return self._places[(tree, parent)], signal.exclusive
        # RFC 7540 section 5.3.1: a dependency on a stream not in the tree gets the default priority.
        number = self._numbers.get(parent)
        if number is None:
            return 0, False
        return number, signal.exclusive

    def _c_add(self, stream_id, signal, order):
        """``add`` in the twin."""
        parent, exclusive = self._c_parent(signal)
        number = self._numbers[stream_id] = self._twin.add(stream_id, order, parent, exclusive, signal.weight)
        self._streams[stream_id] = [number, signal.urgency, order]

    def _c_remove(self, stream_id):
        """``remove`` in the twin."""
        entry = self._streams.pop(stream_id, None)
        if entry is not None:
            del self._numbers[stream_id]
            self._twin.remove(entry[0])

    def _c_update(self, stream_id, signal):
        """``update`` in the twin."""
        entry = self._streams.get(stream_id)
        if entry is None:
            return
        entry[1] = signal.urgency
        parent, exclusive = self._c_parent(signal, exclude=stream_id)
        self._twin.move(entry[0], parent, exclusive, signal.weight)
