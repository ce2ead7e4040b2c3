"""The response schedulers of ``simulator.http.priority``, rule by rule (RFC 9218, RFC 7540
section 5.3), driven sans-I/O: responses added, chunks picked and written, the order of
bytes compared with what the rule demands."""

from __future__ import annotations

import pandas as pd
import pytest

from simulator.errors import InputError
from simulator.http.priority import (
    CHAIN,
    ROOT,
    PrioritySignal,
    PriorityPlan,
    make_scheduler,
    parse_priority_field,
    scheduler_names,
)

CHUNK = 100


def drain(scheduler, sizes: dict[int, int], limit: int | None = None) -> list[int]:
    """The stream of each chunk written until every response is out (``sizes``: bytes left)."""
    out = []
    while sizes and (limit is None or len(out) < limit):
        sid = scheduler.pick()
        n = min(CHUNK, sizes[sid])
        sizes[sid] -= n
        scheduler.wrote(sid, n)
        out.append(sid)
        if not sizes[sid]:
            del sizes[sid]
            scheduler.remove(sid)
    return out


def load(name: str, streams) -> tuple:
    """A scheduler with ``streams`` [(stream, bytes, signal)] added in that order."""
    s = make_scheduler(name)
    sizes = {}
    for order, (sid, size, signal) in enumerate(streams, 1):
        s.add(sid, signal, order)
        sizes[sid] = size
    return s, sizes


def test_rfc9218_s4_1_lower_urgency_goes_first():
    s, sizes = load("rfc9218", [(1, 300, PrioritySignal(urgency=5)), (3, 300, PrioritySignal(urgency=1))])
    assert drain(s, sizes) == [3, 3, 3, 1, 1, 1]


def test_rfc9218_s10_non_incremental_one_at_a_time_in_request_order():
    s, sizes = load("rfc9218", [(1, 200, PrioritySignal()), (3, 200, PrioritySignal()), (5, 200, PrioritySignal())])
    assert drain(s, sizes) == [1, 1, 3, 3, 5, 5]


def test_rfc9218_s4_2_incremental_share_round_robin_after_non_incremental():
    inc = PrioritySignal(urgency=3, incremental=True)
    s, sizes = load("rfc9218", [(1, 200, inc), (3, 200, inc), (5, 200, PrioritySignal(urgency=3))])
    assert drain(s, sizes) == [5, 5, 1, 3, 1, 3]


def test_rfc9218_s7_priority_update_moves_a_waiting_response():
    s, sizes = load("rfc9218", [(1, 300, PrioritySignal(urgency=3)), (3, 300, PrioritySignal(urgency=4))])
    first = drain(s, sizes, limit=1)
    s.update(3, PrioritySignal(urgency=0))
    assert first + drain(s, sizes) == [1, 3, 3, 3, 1, 1]


def test_fifo_lifo_and_rr_ignore_the_signals():
    streams = [
        (1, 200, PrioritySignal(urgency=7)),
        (3, 200, PrioritySignal(urgency=0)),
        (5, 200, PrioritySignal(urgency=0, incremental=True)),
    ]
    assert drain(*load("fifo", streams)) == [1, 1, 3, 3, 5, 5]
    assert drain(*load("lifo", streams)) == [5, 5, 3, 3, 1, 1]
    assert drain(*load("rr", streams)) == [1, 3, 5, 1, 3, 5]


def test_herbots_profiles_urgency_respected_incremental_ignored():
    streams = [
        (1, 200, PrioritySignal(urgency=2)),
        (3, 200, PrioritySignal(urgency=2)),
        (5, 100, PrioritySignal(urgency=1, incremental=True)),
    ]
    assert drain(*load("urgency-rr", streams)) == [5, 1, 3, 1, 3]
    assert drain(*load("urgency-fifo", streams)) == [5, 1, 1, 3, 3]


def test_cloudflare_modes_are_distinct_exclusive_shared_sequential_shared():
    """Cloudflare's concurrency 0 (exclusive sequential), 1 (shared sequential: half the
    bytes against the shared group) and n (shared): the incremental flag (RFC 9218
    section 4.2) is replaced by the mode, so exclusive sends even incremental ones whole."""
    inc = PrioritySignal(urgency=3, incremental=True)
    streams = [(1, 200, PrioritySignal()), (3, 200, PrioritySignal()), (5, 200, inc), (7, 200, inc)]
    # The sequential group (1 then 3) alternates with the shared rotation (5, 7).
    assert drain(*load("cf-shared-sequential", streams)) == [1, 5, 1, 7, 3, 5, 3, 7]
    assert drain(*load("cf-exclusive-sequential", streams)) == [1, 1, 3, 3, 5, 5, 7, 7]
    assert drain(*load("rfc9218", streams)) == [1, 1, 3, 3, 5, 7, 5, 7]
    assert drain(*load("cf-shared", streams)) == [1, 3, 5, 7, 1, 3, 5, 7]


def test_rfc7540_s5_3_2_siblings_share_by_weight():
    s, sizes = load("tree", [(1, 2000, PrioritySignal(weight=48)), (3, 2000, PrioritySignal(weight=16))])
    first = drain(s, sizes, limit=16)
    assert first.count(1) == 12 and first.count(3) == 4  # 3:1, as the weights


def test_rfc7540_s5_3_1_a_dependent_waits_for_its_parent():
    s, sizes = load(
        "tree", [(1, 300, PrioritySignal()), (3, 300, PrioritySignal(parent=1)), (5, 100, PrioritySignal(parent=ROOT))]
    )
    order = drain(s, sizes)
    assert order.index(3) > max(i for i, sid in enumerate(order) if sid == 1)  # 3 only after 1 is done
    assert order[:2] == [1, 5]  # 1 and 5 share the root


def test_rfc7540_s5_3_1_exclusive_adopts_the_parents_children():
    s, sizes = load(
        "tree", [(1, 200, PrioritySignal()), (3, 200, PrioritySignal()), (5, 200, PrioritySignal(exclusive=True))]
    )
    assert drain(s, sizes) == [5, 5, 1, 3, 1, 3]


def test_rfc7540_s5_3_4_children_of_a_finished_stream_move_up():
    s, sizes = load(
        "tree",
        [
            (1, 100, PrioritySignal(weight=16)),
            (3, 1000, PrioritySignal(parent=1, weight=8)),
            (5, 1000, PrioritySignal(parent=1, weight=24)),
            (7, 1000, PrioritySignal(weight=16)),
        ],
    )
    order = drain(s, sizes, limit=17)
    assert order[0] == 1
    # 1's weight 16 split 1:3 between 3 and 5 (4 and 12) against 7's 16: 3, 5 and 7 share 4:12:16.
    rest = order[1:]
    assert (rest.count(3), rest.count(5), rest.count(7)) == (2, 6, 8)


def test_chromium_chain_is_sequential_by_priority_then_order():
    chain = [
        (1, 200, PrioritySignal(urgency=0, parent=CHAIN)),
        (3, 200, PrioritySignal(urgency=3, parent=CHAIN)),
        (5, 200, PrioritySignal(urgency=1, parent=CHAIN)),
        (7, 200, PrioritySignal(urgency=1, parent=CHAIN)),
    ]
    assert drain(*load("tree", chain)) == [1, 1, 5, 5, 7, 7, 3, 3]


def test_firefox_placeholders_leaders_before_followers():
    leader = PrioritySignal(parent="leader", tree="firefox", weight=21)
    follower = PrioritySignal(parent="follower", tree="firefox", weight=11)
    # Followers hang under the leader placeholder, which never has data: they share with the
    # leaders at the follower group's weight 1 against the leader's 21 (RFC 7540 section 5.3.2).
    s, sizes = load("tree", [(1, 4400, follower), (3, 2200, leader)])
    first = drain(s, sizes, limit=23)
    assert first.count(3) == 22 and first.count(1) == 1


def test_rfc9218_s5_priority_field_parsing():
    assert parse_priority_field(b"u=0, i") == (0, True)
    assert parse_priority_field(b"i") == (3, True)
    assert parse_priority_field(b'u=5, i=?0, x="a,b";p=1') == (5, False)
    assert parse_priority_field(b"") == (3, False)
    for bad in (b"u=9", b"u=a", b"i=1", b"U=1", b"u=1,,=2"):
        with pytest.raises(ValueError):
            parse_priority_field(bad)


def test_rfc9218_s4_1_urgency_outside_0_to_7_is_bad_input():
    with pytest.raises(InputError, match="0..7"):
        PrioritySignal(urgency=8)
    with pytest.raises(InputError, match="choose from rfc9218, tree"):
        PriorityPlan(scheduler="nope")
    assert {
        "rfc9218",
        "tree",
        "fifo",
        "rr",
        "lifo",
        "cf-exclusive-sequential",
        "cf-shared-sequential",
        "cf-shared",
        "urgency-rr",
        "urgency-fifo",
    } <= set(scheduler_names())


def test_same_input_same_order_every_time():
    streams = [
        (
            i,
            100 * (i % 7 + 1),
            PrioritySignal(urgency=i % 8, incremental=bool(i % 2), weight=1 + i * 3, parent=CHAIN if i % 3 else ROOT),
        )
        for i in range(1, 60, 2)
    ]
    for name in scheduler_names():
        assert drain(*load(name, streams)) == drain(*load(name, streams))


@pytest.mark.parametrize(
    "scheduler",
    [
        "rfc9218",
        "fifo",
        "rr",
        "lifo",
        "urgency-rr",
        "urgency-fifo",
        "cf-exclusive-sequential",
        "cf-shared",
        "cf-shared-sequential",
    ],
)
def test_native_writer_sends_as_the_python_one_rfc9218_section_4(scheduler, monkeypatch):
    """Over the C TCP the level schedulers run on the C writer (``_NativeLevelWriter``): every
    response of an h2 page load ready at the same time as with ``ScheduledWriter``, the LCP
    image's PRIORITY_UPDATE (RFC 9218 section 7) included."""
    from types import SimpleNamespace

    from simulator.http import priority, priority_writer
    from simulator.net import native
    from simulator.studies import priorities as pr
    from simulator.browser import page_graph
    from simulator.traces import load

    if native.C is None:
        pytest.skip("no C extension")
    graph = page_graph(load("traces/synthetic-page.har"))
    params = pr.PrioritiesParams(schedulers=(scheduler,), browsers=("chromium", "firefox"), protocol="h2")
    made = []
    real = priority.scheduled_writer
    monkeypatch.setattr(priority, "scheduled_writer", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    monkeypatch.setattr("simulator.http.network.scheduled_writer", priority.scheduled_writer)
    native_run = pr.run(graph, params).resources
    assert made and all(type(w).__name__ == "_NativeLevelWriter" for w in made)
    monkeypatch.setattr(priority_writer, "native", SimpleNamespace(C=None))
    python_run = pr.run(graph, params).resources
    pd.testing.assert_frame_equal(native_run, python_run)


@pytest.mark.parametrize(
    "scheduler,loss,kind",
    [
        ("tree", "0", "_NativeScheduledWriter"),
        ("tree", "0.02", "_NativeScheduledWriter"),
        ("cf-shared-sequential", "0.02", "_NativeLevelWriter"),
    ],
)
def test_native_writers_send_as_the_python_one_with_loss_rfc7540_section_5_3(scheduler, loss, kind, monkeypatch):
    """Over the C TCP the RFC 7540 section 5.3 tree runs on the C writer with its
    ``pick``/``wrote``/``remove`` as hooks (``_NativeScheduledWriter``), Cloudflare's split on
    the C writer's levels: every response of an h2 page load ready at the same time as with
    ``ScheduledWriter``, with loss and with the LCP image's PRIORITY_UPDATE or PRIORITY frame
    (RFC 9218 section 7, RFC 7540 section 5.3.3), for three browsers' signals."""
    from types import SimpleNamespace

    from simulator.http import priority, priority_writer
    from simulator.net import native
    from simulator.studies import priorities as pr
    from simulator.browser import page_graph
    from simulator.traces import load

    if native.C is None:
        pytest.skip("no C extension")
    graph = page_graph(load("traces/synthetic-page.har"))
    params = pr.PrioritiesParams(
        schedulers=(scheduler,), browsers=("chromium", "firefox", "safari"), protocol="h2", loss=loss
    )
    made = []
    real = priority.scheduled_writer
    monkeypatch.setattr(priority, "scheduled_writer", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    monkeypatch.setattr("simulator.http.network.scheduled_writer", priority.scheduled_writer)
    native_run = pr.run(graph, params).resources
    assert made and all(type(w).__name__ == kind for w in made)
    # the tree picks through its C twin (StrideTree), no Python call per chunk
    assert all((getattr(w.scheduler, "_twin", None) is not None) == (scheduler == "tree") for w in made)
    monkeypatch.setattr(priority_writer, "native", SimpleNamespace(C=None))
    python_run = pr.run(graph, params).resources
    pd.testing.assert_frame_equal(native_run, python_run)


def test_native_tree_over_quic_sends_as_the_python_one_rfc7540_section_5_3(monkeypatch):
    """Over QUIC ``ScheduledWriter`` picks and charges the tree through its C twin
    (``StrideTree``): every response of an h3 page load ready at the same time as with the
    Python tree's own picks, for three browsers' signals (h3 carries no tree, RFC 9218
    section 2.1: every stream a sibling under the root) with the LCP image's update."""
    from types import SimpleNamespace

    from simulator.http import priority, priority_writer
    from simulator.net import native
    from simulator.studies import priorities as pr
    from simulator.browser import page_graph
    from simulator.traces import load

    if native.C is None or native.IMPLEMENTATION != "c":
        pytest.skip("no C extension")
    graph = page_graph(load("traces/synthetic-page.har"))
    params = pr.PrioritiesParams(schedulers=("tree",), browsers=("chromium", "firefox", "safari"), protocol="h3")
    made = []
    real = priority.scheduled_writer
    monkeypatch.setattr(priority, "scheduled_writer", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    monkeypatch.setattr("simulator.http.network.scheduled_writer", priority.scheduled_writer)
    native_run = pr.run(graph, params).resources
    assert made and all(w.scheduler._twin is not None for w in made)
    monkeypatch.setattr(priority_writer, "native", SimpleNamespace(C=None))
    python_run = pr.run(graph, params).resources
    pd.testing.assert_frame_equal(native_run, python_run)


def drain_runs(scheduler, sizes: dict[int, int]) -> list[int]:
    """``drain`` as the C writer does it: ``pick_run`` names a stream and a run of chunks, the
    run is written and ``settle`` told its bytes (a short last chunk ends it)."""
    out = []
    while sizes:
        sid, run = scheduler.pick_run(CHUNK)
        full = 0
        while True:
            n = min(CHUNK, sizes[sid])
            sizes[sid] -= n
            out.append(sid)
            if n < CHUNK:
                scheduler.settle(sid, full, CHUNK, n)
                break
            full += 1
            if full == run or not sizes[sid]:
                scheduler.settle(sid, full, CHUNK, 0)
                break
        if not sizes[sid]:
            del sizes[sid]
            scheduler.remove(sid)
    return out


@pytest.mark.parametrize("name", scheduler_names())
def test_rfc7540_s5_3_2_runs_of_picks_give_the_order_of_one_pick_per_chunk(name):
    """``pick_run``/``settle`` (the C writer's hooks) make the same choices as a ``pick`` and a
    ``wrote`` per chunk: weights sharing siblings (RFC 7540 section 5.3.2), Chromium's chain,
    Firefox's placeholders, ties between placeholders of equal pass."""
    streams = [
        (
            i,
            900 * (i % 7 + 1) + 37 * (i % 3),
            PrioritySignal(
                urgency=i % 8,
                incremental=bool(i % 2),
                weight=1 + (i * 37) % 256,
                parent=(CHAIN, ROOT, "leader", "other", "follower")[i % 5] if i % 5 else ROOT,
                tree="firefox" if i % 5 > 1 else None,
            ),
        )
        for i in range(1, 80, 2)
    ]
    assert drain_runs(*load(name, streams)) == drain(*load(name, streams))
    few = [
        (1, 30000, PrioritySignal(weight=256)),
        (3, 20000, PrioritySignal(weight=16)),
        (5, 9000, PrioritySignal(weight=1)),
        (7, 5000, PrioritySignal(weight=16, parent=3)),
    ]
    assert drain_runs(*load(name, few)) == drain(*load(name, few))


@pytest.mark.parametrize("seed", range(6))
def test_rfc7540_s5_3_3_runs_cut_by_reprioritization_give_the_order_of_one_pick_per_chunk(seed):
    """Runs of ``pick_run`` ended early by a change (a new stream, a reprioritization, RFC 7540
    section 5.3.3, a cancel), as the C writer ends them, settled before the change: the same
    chunks as a pick per chunk, over random trees of Firefox's placeholders, Chromium's chain
    and plain dependencies."""
    import random

    def events(rng):
        out, sid = [], 1
        for at in sorted(rng.sample(range(400), 60)):
            kind = rng.choice(["add", "add", "update", "remove"])
            parent = rng.choice([ROOT, CHAIN, "leader", "other", "follower", sid - 2 if sid > 2 else ROOT])
            signal = PrioritySignal(
                urgency=rng.randint(0, 7),
                weight=rng.choice([1, 16, 32, 201, 256]),
                parent=parent,
                exclusive=rng.random() < 0.3,
                tree="firefox" if parent in ("leader", "other", "follower") else None,
            )
            out.append((at, kind, sid, rng.randint(1, 30) * CHUNK + rng.randint(0, 99), signal, rng.random()))
            sid += 2
        return out

    def drive(runs: bool) -> list[int]:
        s, sizes, out, order, plan = make_scheduler("tree"), {}, [], 0, events(random.Random(seed))
        for at, kind, sid, size, signal, pick in plan:
            while sizes and len(out) < at:
                if runs:
                    first, run = s.pick_run(CHUNK)
                    written = 0
                    while len(out) < at and written < run and sizes.get(first):
                        n = min(CHUNK, sizes[first])
                        sizes[first] -= n
                        out.append(first)
                        written += 1
                        if n < CHUNK:
                            s.settle(first, written - 1, CHUNK, n)
                            break
                    else:
                        s.settle(first, written, CHUNK, 0)
                    sid_done = first
                else:
                    sid_done = s.pick()
                    n = min(CHUNK, sizes[sid_done])
                    sizes[sid_done] -= n
                    s.wrote(sid_done, n)
                    out.append(sid_done)
                if not sizes[sid_done]:
                    del sizes[sid_done]
                    s.remove(sid_done)
            live = sorted(sizes)
            if kind == "add":
                order += 1
                sizes[sid] = size
                s.add(sid, signal, order)
            elif live and kind == "update":
                s.update(live[int(pick * len(live))], signal)
            elif live:
                gone = live[int(pick * len(live))]
                del sizes[gone]
                s.remove(gone)
        return out

    assert drive(True) == drive(False)


def _tree_in_c():
    """A ``tree`` scheduler picking through its C twin (``net._tcp.StrideTree``), or skip."""
    from simulator.net import native

    if native.C is None or not hasattr(native.C, "StrideTree"):
        pytest.skip("no C extension")
    s = make_scheduler("tree")
    assert s.run_in_c(native.C.StrideTree())
    return s


@pytest.mark.parametrize("seed", range(24))
def test_rfc7540_s5_3_c_twin_picks_as_the_python_tree(seed):
    """The tree's C twin (``StrideTree``: the C writer's picks with weighted siblings) makes
    the same choices as the Python tree's ``pick`` and ``wrote``, chunk for chunk: random
    trees of Firefox's placeholders, Chromium's chain and plain dependencies (some on a
    stream's own descendant, RFC 7540 section 5.3.3), exclusive placements (5.3.1), weights
    1-256 shared by siblings (5.3.2), children of finished and cancelled streams moved up
    with the weight shared (5.3.4), reprioritizations, chunks of random length (QUIC's
    pulls) as well as full ones, and a stream 0 (the first request over QUIC, RFC 9000
    section 2.1)."""
    import random

    rng = random.Random(seed)
    events, sid = [], seed % 2  # even seeds: stream 0 too (QUIC's first request)
    for at in sorted(rng.sample(range(1500), 150)):
        kind = rng.choice(["add", "add", "add", "update", "update", "remove"])
        parent = rng.choice(
            [ROOT, CHAIN, "leader", "follower", "other", "speculative", rng.randrange(seed % 2, sid + 2, 2), sid - 2]
        )
        signal = PrioritySignal(
            urgency=rng.randint(0, 7),
            weight=rng.choice([1, 2, 16, 21, 22, 32, 101, 201, 255, 256, rng.randint(1, 256)]),
            parent=parent if not isinstance(parent, int) or parent > 0 else ROOT,
            exclusive=rng.random() < 0.25,
            tree="firefox" if isinstance(parent, str) and parent not in (ROOT, CHAIN) else None,
        )
        events.append((at, kind, sid, rng.randint(1, 40) * CHUNK + rng.randint(0, 99), signal, rng.random()))
        sid += 2
    limits = [rng.choice([CHUNK, CHUNK, CHUNK, rng.randint(1, 3 * CHUNK)]) for _ in range(4000)]

    def drive(s) -> list[tuple[int, int]]:
        sizes, out, order = {}, [], 0
        for at, kind, sid, size, signal, pick in events:
            while sizes and len(out) < at:
                chosen = s.pick()
                n = min(limits[len(out)], sizes[chosen])
                sizes[chosen] -= n
                s.wrote(chosen, n)
                out.append((chosen, n))
                if not sizes[chosen]:
                    del sizes[chosen]
                    s.remove(chosen)
            live = sorted(sizes)
            if kind == "add":
                order += 1
                sizes[sid] = size
                s.add(sid, signal, order)
            elif live and kind == "update":
                moved = live[int(pick * len(live))]
                if signal.parent != moved:  # RFC 7540 5.3.1: never on itself (a PROTOCOL_ERROR)
                    s.update(moved, signal)
            elif live:
                gone = live[int(pick * len(live))]
                del sizes[gone]
                s.remove(gone)
        while sizes:
            chosen = s.pick()
            n = min(CHUNK, sizes[chosen])
            sizes[chosen] -= n
            s.wrote(chosen, n)
            out.append((chosen, n))
            if not sizes[chosen]:
                del sizes[chosen]
                s.remove(chosen)
        return out

    python, in_c = drive(make_scheduler("tree")), drive(_tree_in_c())
    assert len(python) > 1000
    assert in_c == python


def test_rfc7540_s5_3_2_c_twin_weighted_siblings_and_safari_weights():
    """Siblings of weights 256, 16 and 1 under the root (Safari's HTTP/2 signals have only
    weights) and a dependent of the middle one: the twin's chunks are the Python tree's."""
    few = [
        (1, 30000, PrioritySignal(weight=256)),
        (3, 20000, PrioritySignal(weight=16)),
        (5, 9000, PrioritySignal(weight=1)),
        (7, 5000, PrioritySignal(weight=16, parent=3)),
        (9, 7000, PrioritySignal(weight=24)),
    ]
    s = _tree_in_c()
    sizes = {}
    for order, (sid, size, signal) in enumerate(few, 1):
        s.add(sid, signal, order)
        sizes[sid] = size
    assert drain(s, sizes) == drain(*load("tree", few))


def test_rfc7540_s5_3_1_c_twin_refuses_a_stream_on_itself_and_a_late_hand_over():
    """A stream cannot depend on itself (RFC 7540 section 5.3.1: a PROTOCOL_ERROR): the C twin
    refuses the move; a tree that already holds streams stays in Python."""
    s = _tree_in_c()
    s.add(1, PrioritySignal(), 1)
    s.add(3, PrioritySignal(parent=1), 2)
    with pytest.raises(ValueError):
        s.update(3, PrioritySignal(parent=3))
    assert s.pick() == 1
    late = make_scheduler("tree")
    late.add(1, PrioritySignal(), 1)
    from simulator.net import native

    assert not late.run_in_c(native.C.StrideTree())
    assert late.pick() == 1 and late._twin is None


@pytest.mark.parametrize("in_c", [False, True])
def test_rfc7540_s5_3_1_the_root_is_not_quics_stream_0(in_c):
    """Over QUIC the first request is stream 0 (RFC 9000 section 2.1), which on HTTP/2 names
    the tree's root (RFC 7540 section 5.3.1).  A response placed under the root while that
    request is open is its sibling, sharing by weight (5.3.2), not its child waiting for it."""
    from simulator.net import native

    tree = make_scheduler("tree")
    if in_c:
        if native.C is None or not hasattr(native.C, "StrideTree"):
            pytest.skip("the C extension is not built")
        assert tree.run_in_c(native.C.StrideTree())
    tree.add(0, PrioritySignal(urgency=3, weight=16, parent=ROOT), 0)
    tree.add(4, PrioritySignal(urgency=3, weight=16, parent=ROOT), 1)
    picks = []
    for _ in range(6):
        sid = tree.pick()
        picks.append(sid)
        tree.wrote(sid, 1000)
    assert picks.count(0) == picks.count(4) == 3
