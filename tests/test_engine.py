"""The discrete-event engine: virtual clock, FIFO order, timer slots, seeded streams."""

import pytest

from simulator.engine import Simulator, derive_seed


def test_events_run_in_time_order_and_fifo_among_equal_times():
    sim = Simulator()
    out = []
    sim.call_at(2.0, out.append, "c")
    sim.call_at(1.0, out.append, "a")
    sim.call_at(1.0, out.append, "b")          # same time: scheduled later, runs later
    sim.call_later(0.5, out.append, "first")
    sim.run()
    assert out == ["first", "a", "b", "c"]
    assert sim.now == 2.0


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
    timers.set("rto", 3.0, lambda: fired.append(("rto-new", sim.now)))   # later: old must not fire
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
        timers.set(f"s{i}", 10.0 - i, lambda: None)   # each earlier than the last
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
    b.rng("jitter").random()          # another component draws first
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
        timers.set("loss_timer", sim.now, on_loss_timer)   # "nothing lost, same deadline"

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
    sim.call_at(5.0, out.append, "d")           # scheduled later at the same time: runs last
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
        fired_slots, cb_slots = _timer_script(slots_sim, lambda t: slots.set("quic", t, cb_slots),
                                              lambda: slots.cancel("quic"), seed)
        timer = timer_sim.timer("quic", lambda: cb_timer())
        fired_timer, cb_timer = _timer_script(timer_sim, timer.set, timer.cancel, seed)
        slots_sim.run()
        timer_sim.run()
        assert fired_timer == fired_slots and len(fired_timer) > 20
        assert timer_sim.events_run == slots_sim.events_run
        assert [t for t, _ in timer_sim.trace] == [t for t, _ in slots_sim.trace]
