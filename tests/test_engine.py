"""The discrete-event engine: virtual clock, FIFO order, timer slots, seeded streams.

Every test runs on each event-queue implementation that is available (the C extension
``simulator._engine`` and its Python twin); further tests check the two agree event for
event on random schedules."""

import gc
import math
import random
import weakref

import pytest

from simulator import engine as engine_module
from simulator.engine import EVENT_QUEUES, Simulator, derive_seed


@pytest.fixture(autouse=True, params=sorted(EVENT_QUEUES))
def engine(request, monkeypatch):
    """Run the test with this event queue as every Simulator's default."""
    monkeypatch.setattr(engine_module, "ENGINE_IMPLEMENTATION", request.param)
    return request.param


def test_events_run_in_time_order_and_fifo_among_equal_times():
    sim = Simulator()
    out = []
    sim.call_at(2.0, out.append, "c")
    sim.call_at(1.0, out.append, "a")
    sim.call_at(1.0, out.append, "b")  # same time: scheduled later, runs later
    sim.call_later(0.5, out.append, "first")
    sim.run()
    assert out == ["first", "a", "b", "c"]
    assert sim.now == 2.0


def test_a_reserved_place_runs_where_a_push_then_would_have_run():
    """``reserve()`` takes a place among equal times; ``push_at`` fills it later (the QUIC
    model's flush held during a flush, ``packet_builder``); an unused place is no event."""
    sim = Simulator()
    out = []
    queue = sim._queue
    sim.call_at(1.0, out.append, "a")
    held = queue.reserve()
    queue.reserve()  # a place never filled: no event
    sim.call_at(1.0, out.append, "c")
    queue.push_at(1.0, held, out.append, ("b",))
    with pytest.raises(ValueError):
        queue.push_at(1.0, 0, out.append, ("x",))
    assert sim.run() == 1.0 and out == ["a", "b", "c"] and sim.events_run == 3


def test_call_soon_runs_after_everything_already_due_now():
    sim = Simulator()
    out = []

    def at_one():
        out.append("x")
        sim.call_soon(out.append, "soon")

    sim.call_at(1.0, at_one)
    sim.call_at(1.0, out.append, "y")
    sim.run()
    assert out == ["x", "y", "soon"]


def test_run_until_stops_the_clock_at_the_horizon():
    sim = Simulator()
    out = []
    sim.call_at(5.0, out.append, 5)
    assert sim.run(until_s=3.0) == 3.0
    assert out == [] and sim.pending == 1
    sim.run()
    assert out == [5]


def test_scheduling_in_the_past_is_a_bug():
    sim = Simulator()
    sim.call_at(1.0, lambda: None)
    sim.run()
    with pytest.raises(ValueError):
        sim.call_at(0.5, lambda: None)


def test_timer_slot_replaced_expiry_never_fires():
    """libcurl-style timer ids: setting a slot again replaces its pending expiry."""
    sim = Simulator()
    timers = sim.timers("conn", ["rto", "ack"])
    fired = []
    timers.set("rto", 1.0, lambda: fired.append(("rto-old", sim.now)))
    timers.set("rto", 3.0, lambda: fired.append(("rto-new", sim.now)))  # later: old must not fire
    timers.set("ack", 2.0, lambda: fired.append(("ack", sim.now)))
    sim.run()
    assert fired == [("ack", 2.0), ("rto-new", 3.0)]


def test_timer_slot_cancelled_never_fires_and_earlier_reset_fires_early():
    sim = Simulator()
    timers = sim.timers("conn", ["a", "b"])
    fired = []
    timers.set("a", 5.0, lambda: fired.append("a"))
    timers.set("b", 4.0, lambda: fired.append("b"))
    timers.cancel("b")
    timers.set("a", 1.0, lambda: fired.append(("a-early", sim.now)))
    sim.run()
    assert fired == [("a-early", 1.0)]


def test_only_the_owners_earliest_expiry_sits_in_the_global_queue():
    sim = Simulator()
    timers = sim.timers("conn", ["s%d" % i for i in range(10)])
    for i in range(10):
        timers.set(f"s{i}", 10.0 - i, lambda: None)  # each earlier than the last
    # Re-arming later slots adds no heap entry; each new minimum adds one.
    before = sim.pending
    for i in range(10):
        timers.set(f"s{i}", 20.0 + i, lambda: None)
    assert sim.pending == before


def test_a_timer_can_rearm_itself_from_its_callback():
    sim = Simulator()
    timers = sim.timers("pacer", ["tick"])
    ticks = []

    def tick():
        ticks.append(sim.now)
        if len(ticks) < 5:
            timers.set("tick", sim.now + 0.25, tick)

    timers.set("tick", 0.25, tick)
    sim.run()
    assert ticks == [0.25, 0.5, 0.75, 1.0, 1.25]


def test_random_streams_are_independent_of_other_components():
    """Adding a component never changes another component's draws."""
    a = Simulator(seed=7)
    draws_a = [a.rng("loss").random() for _ in range(5)]
    b = Simulator(seed=7)
    b.rng("jitter").random()  # another component draws first
    draws_b = [b.rng("loss").random() for _ in range(5)]
    assert draws_a == draws_b
    c = Simulator(seed=8)
    assert [c.rng("loss").random() for _ in range(5)] != draws_a


def test_derived_seeds_are_stable_across_runs():
    # SHA-256 based, so not subject to Python's per-process hash randomisation.
    assert derive_seed(1, "path/fwd/loss") == derive_seed(1, "path/fwd/loss")
    assert derive_seed(1, "a") != derive_seed(2, "a")


def test_a_timer_rearmed_for_now_cannot_spin_within_one_event():
    """A callback that re-arms its own slot for the current time (the float-rounding trap
    of loss-detection timers) yields to the event loop, so max_events bounds it."""
    sim = Simulator()
    timers = sim.timers("loss", ["loss_timer"])
    calls = []

    def on_loss_timer():
        calls.append(sim.now)
        timers.set("loss_timer", sim.now, on_loss_timer)  # "nothing lost, same deadline"

    timers.set("loss_timer", 1.0, on_loss_timer)
    sim.run(max_events=50)
    assert 0 < len(calls) <= 50


def test_run_until_leaves_later_events_in_fifo_order():
    """run(until_s) stops before the first later event and leaves it scheduled exactly as it
    was: events of equal time still run in the order they were scheduled."""
    sim = Simulator()
    out = []
    for label in "abc":
        sim.call_at(5.0, out.append, label)
    sim.call_at(1.0, out.append, "early")
    assert sim.run(until_s=3.0) == 3.0
    assert out == ["early"] and sim.pending == 3 and sim.next_s == 5.0
    sim.call_at(5.0, out.append, "d")  # scheduled later at the same time: runs last
    sim.run()
    assert out == ["early", "a", "b", "c", "d"] and sim.events_run == 5


def _timer_script(sim, timer_set, timer_cancel, seed: int) -> list:
    """Drive one timer through a seeded random mix of set (earlier, later, now, in the past),
    cancel and re-arm from its own callback; return what fired and when."""
    import random

    rnd = random.Random(seed)
    fired = []

    def on_timer():
        fired.append(sim.now)
        if rnd.random() < 0.3:
            timer_set(sim.now + rnd.choice([0.0, 0.01, 0.5]))

    def step():
        r = rnd.random()
        if r < 0.15:
            timer_cancel()
        else:
            timer_set(sim.now + rnd.choice([-0.1, 0.0, 0.003, 0.02, 0.02, 0.4, 1.0]))

    for k in range(300):
        sim.call_at(k * 0.01, step)
    return fired, on_timer


def test_one_slot_timer_runs_exactly_the_events_of_a_one_slot_timer_slots():
    """``Timer`` is the one-slot ``TimerSlots`` in fewer steps: the same expiries fire at the
    same times, and the same heap entries (stale ones included) make the same event count."""
    for seed in range(5):
        slots_sim, timer_sim = Simulator(trace=True), Simulator(trace=True)
        slots = slots_sim.timers("quic", ["quic"])
        fired_slots, cb_slots = _timer_script(
            slots_sim, lambda t: slots.set("quic", t, cb_slots), lambda: slots.cancel("quic"), seed
        )
        timer = timer_sim.timer("quic", lambda: cb_timer())
        fired_timer, cb_timer = _timer_script(timer_sim, timer.set, timer.cancel, seed)
        slots_sim.run()
        timer_sim.run()
        assert fired_timer == fired_slots and len(fired_timer) > 20
        assert timer_sim.events_run == slots_sim.events_run
        assert [t for t, _ in timer_sim.trace] == [t for t, _ in slots_sim.trace]


# -- the two event queues agree ------------------------------------------------------------


def _random_schedule(sim: Simulator, seed: int) -> list:
    """A schedule with many equal times, events that schedule more events (now, later, at the
    same instant), stop() calls and timers; returns the log the run fills in."""
    rng = random.Random(seed)
    log = []
    timers = sim.timers("t", ("a", "b"))
    one = sim.timer("one", lambda: log.append(("one", sim.now)))

    def event(label: int, depth: int) -> None:
        log.append((label, sim.now))
        r = rng.random()
        if depth < 3 and r < 0.3:
            sim.call_soon(event, label * 10 + 1, depth + 1)
        elif depth < 3 and r < 0.6:
            sim.call_later(rng.choice([0.0, 0.5, 1.0, rng.random()]), event, label * 10 + 2, depth + 1)
        elif r < 0.7:
            sim.stop()
        elif r < 0.8:
            timers.set(rng.choice("ab"), sim.now + rng.choice([0.0, 0.25, 1.0]), lambda: log.append(("slot", sim.now)))
        elif r < 0.9:
            one.set(sim.now + rng.choice([0.0, 0.5, 2.0]))
        else:
            one.cancel()

    for label in range(200):
        sim.call_at(float(rng.randrange(20)) / 4, event, label, 0)
    return log


def _drive(sim: Simulator) -> list:
    """Run in pieces (until, max_events, stop), noting where each piece ended."""
    ends = []
    horizon = 0.0
    while sim.pending:
        horizon += 0.7
        sim.run(until_s=horizon, max_events=37)
        ends.append((sim.now, sim.stopped, sim.events_run, sim.pending, sim.next_s))
    return ends


@pytest.mark.skipif("c" not in EVENT_QUEUES, reason="the C extension simulator._engine is not built")
@pytest.mark.parametrize("seed", range(8))
def test_c_and_python_queues_run_the_same_events_in_the_same_order(seed):
    runs = {}
    for name in ("c", "python"):
        sim = Simulator(engine=name)
        log = _random_schedule(sim, seed)
        runs[name] = (_drive(sim), log)
    assert runs["c"] == runs["python"]
    assert len(runs["c"][1]) > 200


def test_the_clock_takes_the_very_time_object_scheduled():
    """``now`` is the scheduled value itself (an int stays an int), as the Python heap gave it."""
    sim = Simulator()
    seen = []
    sim.call_at(2, lambda: seen.append(sim.now))
    sim.call_at(1.5, lambda: seen.append(sim.now))
    sim.run(until_s=1)
    assert sim.now == 1 and type(sim.now) is int
    sim.run()
    assert seen == [1.5, 2] and type(seen[1]) is int


def test_stop_ends_the_run_after_the_current_event_and_is_reset_by_the_next_run():
    sim = Simulator()
    out = []
    sim.call_at(1.0, lambda: (out.append(1), sim.stop()))
    sim.call_at(1.0, out.append, 2)
    sim.call_at(2.0, out.append, 3)
    sim.run()
    assert out == [1] and sim.stopped and sim.now == 1.0 and sim.pending == 2
    sim.run()
    assert out == [1, 2, 3] and not sim.stopped and sim.events_run == 3


def test_an_exception_in_an_event_propagates_and_the_rest_stays_scheduled():
    sim = Simulator()
    out = []

    def boom():
        raise KeyError("bug")

    sim.call_at(1.0, boom)
    sim.call_at(2.0, out.append, 2)
    with pytest.raises(KeyError):
        sim.run()
    assert sim.pending == 1
    sim.run()
    assert out == [2] and sim.now == 2.0


def test_bad_events_are_refused():
    sim = Simulator()
    with pytest.raises(ValueError):
        sim.call_at(math.nan, lambda: None)  # would never compare as due
    with pytest.raises(TypeError):
        sim._push(1.0, lambda: None, [1])  # args must be a tuple
    assert sim.pending == 0


def test_running_again_from_inside_an_event_is_refused():
    sim = Simulator()
    caught = []

    def nested():
        try:
            sim.run()
        except RuntimeError as exc:
            caught.append(str(exc))

    sim.call_at(1.0, nested)
    sim.run()
    assert caught and "already running" in caught[0]


def test_a_reference_cycle_through_scheduled_events_is_collected():
    """The queue takes part in garbage collection (a simulation references itself through
    the callbacks it has scheduled)."""

    class Owner:
        pass

    owner = Owner()
    owner.sim = Simulator()
    owner.sim.call_at(1.0, lambda o=owner: None)
    ref = weakref.ref(owner)
    del owner
    gc.collect()
    assert ref() is None


def test_an_unknown_engine_is_a_clear_error():
    with pytest.raises(LookupError, match="not available"):
        Simulator(engine="fortran")


# -- the C Timer and the Python Timer agree --------------------------------------------------


def _timer_schedule(sim: Simulator, make_timer, seed: int) -> tuple[list, list]:
    """Three one-slot timers driven by a seeded random mix of set (in the past, now, earlier,
    later than the pending expiry), cancel, re-arm and stop() from a timer's own callback,
    among plain events at many equal times; returns the log and the timers."""
    rng = random.Random(seed)
    log = []
    timers = []

    def on_expiry(k: int) -> None:
        log.append(("fire", k, sim.now, timers[k].when_s))
        r = rng.random()
        if r < 0.3:
            timers[k].set(sim.now + rng.choice([-1.0, 0.0, 0.0, 0.125, 0.5]))  # re-arm
        elif r < 0.4:
            timers[rng.randrange(3)].cancel()
        elif r < 0.5:
            sim.stop()

    for k in range(3):
        timers.append(make_timer(sim, f"conn{k}", lambda k=k: on_expiry(k)))

    def event(label: int) -> None:
        log.append(("event", label, sim.now))
        timer = rng.choice(timers)
        r = rng.random()
        if r < 0.15:
            timer.cancel()
        elif r < 0.2:
            sim.stop()
        elif r < 0.3:
            sim.call_soon(event, label + 1000)
        else:
            timer.set(sim.now + rng.choice([-0.5, 0.0, 0.001, 0.125, 0.125, 0.25, 1.0, 3.0]))
        log.append(("when", [t.when_s for t in timers]))

    for label in range(300):
        sim.call_at(rng.randrange(40) / 8, event, label)
    return log, timers


def _drive_timers(sim: Simulator, timers: list, rng: random.Random) -> list:
    """Run in random pieces (until_s, max_events, to the end), noting where each ended."""
    ends = []
    horizon = 0.0
    while sim.pending:
        horizon += rng.choice([0.0, 0.05, 0.3, 1.0])
        until_s = rng.choice([None, horizon, horizon])
        max_events = rng.choice([None, 1, 2, 7, 50])
        sim.run(until_s=until_s, max_events=max_events)
        ends.append(
            (sim.now, type(sim.now), sim.stopped, sim.events_run, sim.pending, sim.next_s, [t.when_s for t in timers])
        )
    return ends


@pytest.mark.skipif("c" not in EVENT_QUEUES, reason="the C extension simulator._engine is not built")
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("traced", [False, True])
def test_c_timer_and_python_timer_run_the_same_events_and_counts(seed, traced):
    """The C Timer skips its stale heap entries inside the C loop; each still counts as one
    event and still moves the clock, so events_run, sim.now after partial runs (until_s,
    max_events, stop), what fires and when are those of the Python Timer, on either queue.
    ``traced`` runs through pop() and timer._fire(gen) instead of the C loop."""
    runs = {}
    for name, engine, make_timer in (
        ("c", "c", lambda sim, owner, cb: sim.timer(owner, cb)),
        ("py-timer-on-c-queue", "c", engine_module.Timer),
        ("python", "python", engine_module.Timer),
    ):
        sim = Simulator(engine=engine, trace=traced)
        log, timers = _timer_schedule(sim, make_timer, seed)
        ends = _drive_timers(sim, timers, random.Random(seed))
        trace = None if sim.trace is None else [(t, label.rsplit(".", 1)[-1]) for t, label in sim.trace]
        runs[name] = (log, ends, trace)
    assert type(Simulator(engine="c").timer("x", print)) is engine_module.C_TIMER
    assert runs["c"] == runs["py-timer-on-c-queue"] == runs["python"]
    fires = [entry for entry in runs["python"][0] if entry[0] == "fire"]
    assert len(fires) > 25 and runs["python"][1][-1][3] > 400  # it did exercise timers


def test_a_timer_expiry_in_the_past_fires_now_and_a_stale_entry_still_counts():
    """set() before now means now; a replaced later entry stays in the heap, pops as one
    event (moving the clock to its time) and fires nothing."""
    sim = Simulator()
    fired = []
    timer = sim.timer("conn", lambda: fired.append(sim.now))
    sim.call_at(1.0, timer.set, 0.5)  # in the past: due now, an entry at 1.0
    sim.call_at(1.0, timer.set, 4.0)  # later than pending: waits for 1.0's entry
    sim.call_at(1.5, timer.set, 2.0)  # earlier than 4.0: the 4.0 entry goes stale
    # the 1.0 entry pops: 4.0 is not due (nothing fires), so it gets its own entry
    assert sim.run(until_s=1.0) == 1.0 and sim.events_run == 3
    assert fired == [] and timer.when_s == 4.0 and sim.next_s == 1.5
    sim.run(max_events=1)
    assert sim.now == 1.5 and timer.when_s == 2.0 and sim.pending == 2
    sim.run()
    # entry@2.0 fires; the stale entry@4.0 is one more event and leaves the clock at 4.0
    assert fired == [2.0] and sim.now == 4.0 and sim.events_run == 6 and timer.when_s is None


def test_the_traced_run_pops_a_timer_entry_as_its_fire_method_and_generation():
    sim = Simulator()
    fired = []
    timer = sim.timer("conn", lambda: fired.append(sim.now))
    timer.set(2.0)
    timer.set(1.0)  # a new generation; the 2.0 entry is stale
    time_s, callback, args = sim._queue.pop()
    assert time_s == 1.0 and callback == timer._fire and len(args) == 1
    assert callback.__qualname__ == "Timer._fire"
    sim.now = time_s
    callback(args[0] - 1)  # a stale generation: nothing
    assert fired == [] and timer.when_s == 1.0
    callback(*args)
    assert fired == [1.0] and timer.when_s is None


def test_a_reference_cycle_through_a_timer_is_collected():
    """sim -> queue -> the timer's heap entry -> timer -> callback -> owner -> sim."""

    class Owner:
        def on_timer(self):
            pass

    owner = Owner()
    owner.sim = Simulator()
    owner.timer = owner.sim.timer("conn", owner.on_timer)
    owner.timer.set(2.0)
    owner.timer.set(1.0)  # two heap entries, one stale
    ref = weakref.ref(owner)
    del owner
    gc.collect()
    assert ref() is None


def test_timer_cycles_leak_no_references():
    """Set and fire many times: the callback and the time objects end with the references
    they started with (the C Timer's heap entries hold their own)."""
    import sys

    sim = Simulator()
    callback = lambda: None  # noqa: E731
    when = float(str(10**9))  # an object of its own, not a shared constant
    timer = sim.timer("conn", callback)
    before = (sys.getrefcount(callback), sys.getrefcount(when), sys.getrefcount(timer))
    for _ in range(2000):
        timer.set(sim.now + 0.5)
        timer.set(sim.now + 0.25)  # earlier: the 0.5 entry goes stale
        timer.set(when)
        sim.run(max_events=2)
    timer.cancel()
    sim.run()
    assert sim.now is when and sim.pending == 0
    sim.now = 0.0
    assert (sys.getrefcount(callback), sys.getrefcount(when), sys.getrefcount(timer)) == before
