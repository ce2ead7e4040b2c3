"""The replay's run loop and bookkeeping: stall detection by events gives exactly the
result of checking after every event; resent STREAM frames counted from aioquic's loss
recovery equal the count read from its qlog; the qlog is built only when asked for."""

from __future__ import annotations

import json
import random

import pytest

from simulator.engine import Simulator
from simulator.http import model_replay
from simulator.stacks import replay
from simulator.stacks.common import ExchangeSpec, StackParams, StackStalled
from simulator.stacks.h3 import SentRanges, stream_frames_resent_in_qlog
from simulator.traces.synth import generate

REQ = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"a.example"), (b":path", b"/x"))
OK = ((b":status", b"200"),)


@pytest.fixture(scope="module")
def page():
    # 40 exchanges over a dozen origins: several connections, loss on each.
    return generate(pages=1, seed=3, requests=40, origins=12, third_party_share=0.6, third_party_zipf_s=0.3)


def _same(a, b) -> None:
    assert a.summary == b.summary
    assert a.exchanges.equals(b.exchanges)


@pytest.mark.parametrize("stack", ["h2", "h3"])
def test_event_driven_stall_checks_equal_checking_after_every_event(stack, page):
    params = StackParams(stack=stack, loss="0.03", seed=5, rtt_s=0.08, bandwidth_bps=20e6)
    fast = replay.run(page, params)
    _same(fast, replay.run(page, params, check_every_event=True))
    assert fast.summary["completed"] == 40 and fast.summary["packets_lost"] > 0
    model = model_replay.run(page, params)
    _same(model, model_replay.run(page, params, check_every_event=True))


@pytest.mark.parametrize("stack", ["h2", "h3"])
def test_sessions_are_looked_at_on_events_not_after_every_event(stack, page, monkeypatch):
    """Stall detection by events: on a page that completes, the run loop walks the
    sessions only when something stopped the run (all requests started, no exchange
    open), a handful of times in all, not once per engine event as the reference loop
    does.  A loop that still walked after every event fails here, though its results
    would be the same."""
    from simulator.stacks.h2 import H2Session
    from simulator.stacks.h3 import H3Session

    calls = [0]
    cls = H3Session if stack == "h3" else H2Session
    original = cls.check

    def counted(self):
        calls[0] += 1
        return original(self)

    monkeypatch.setattr(cls, "check", counted)
    params = StackParams(stack=stack, loss="0.03", seed=5, rtt_s=0.08, bandwidth_bps=20e6)
    fast = replay.run(page, params)
    connections, events = fast.summary["connections"], fast.summary["events"]
    assert connections >= 10 and events > 100 * connections
    assert calls[0] <= 4 * connections, (calls[0], connections, events)
    calls[0] = 0
    replay.run(page, params, check_every_event=True)
    assert calls[0] >= connections * events // 2  # the reference: every session after every event


@pytest.mark.parametrize("stack", ["h2", "h3"])
def test_stall_message_and_instant_same_as_checking_every_event(stack):
    """An exchange that cannot progress ends with StackStalled at the same event, with the
    same one-line message, whichever loop looks for it."""
    spec = ExchangeSpec(0, REQ, OK, 50000)
    params = StackParams(stack=stack, loss="0.97", idle_timeout_s=5.0)
    messages = []
    for every in (False, True):
        with pytest.raises(StackStalled, match="idle timeout reached") as info:
            replay.run_specs([spec], params, check_every_event=every)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "\n" not in messages[0]


def test_request_on_a_quic_connection_closed_by_its_idle_timeout_stalls_at_once():
    """RFC 9000 section 10.1: aioquic closes a connection idle for the idle timeout; an
    exchange started on it later cannot progress.  The session reports it when the request
    starts (a stop, not a per-event walk), at the same instant as the per-event check."""
    other = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"b.example"), (b":path", b"/y"))
    specs = [
        ExchangeSpec(0, REQ, OK, 1000),
        ExchangeSpec(1, REQ, OK, 1000, start_s=12.0),
        ExchangeSpec(2, other, OK, 1000, start_s=20.0, origin="https://b.example"),
    ]
    params = StackParams(stack="h3", idle_timeout_s=5.0)
    messages = []
    for every in (False, True):
        with pytest.raises(StackStalled, match="closed after 5 s without progress") as info:
            replay.run_specs(specs, params, check_every_event=every)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "(at 12.000 s of virtual time)" in messages[0]


def test_quic_connection_closed_with_an_exchange_open_stalls_when_it_closes():
    """The server thinks longer than the idle timeout: aioquic closes the connection with
    the request open (RFC 9000 section 10.1) while another origin's connection still runs.
    The stall is reported at the close (the session stops the run), not at a later event."""
    other = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"b.example"), (b":path", b"/y"))
    specs = [ExchangeSpec(0, REQ, OK, 5000), ExchangeSpec(1, other, OK, 5000, start_s=3.0, origin="https://b.example")]
    params = StackParams(stack="h3", think_s=8.0, idle_timeout_s=5.0)
    messages = []
    for every in (False, True):
        with pytest.raises(StackStalled, match="closed after 5 s without progress") as info:
            replay.run_specs(specs, params, check_every_event=every)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "(at 5.1" in messages[0]  # idle timeout after the request's last packet


@pytest.mark.parametrize("loss, seed", [("0.03", 1), ("0.05", 2), ("ge:0.02,0.3", 3)])
def test_resent_stream_frames_from_recovery_equal_the_qlog_count(tmp_path, page, loss, seed):
    """RFC 9000 section 13.3: lost STREAM data is sent again in new frames.  Counted from
    the frames of the packets aioquic's loss recovery declares lost (only the streams that
    lost one are watched), the number of STREAM frames whose bytes one earlier frame already
    carried equals the count read from every frame of every packet in the qlog (bursty
    Gilbert-Elliott loss included: adjacent lost frames are resent merged, not inside one)."""
    params = StackParams(stack="h3", loss=loss, seed=seed, rtt_s=0.08, bandwidth_bps=20e6)
    with_qlog = replay.run(page, params, qlog_dir=str(tmp_path))
    traces = [json.loads(p.read_text())["traces"][0]["events"] for p in sorted(tmp_path.glob("*.qlog"))]
    assert len(traces) == 2 * with_qlog.summary["connections"]
    from_qlog = stream_frames_resent_in_qlog(traces)
    assert from_qlog > 0
    assert with_qlog.summary["stream_frames_resent"] == from_qlog
    # ... and without a qlog the run, and so the count, is the same.
    without = replay.run(page, params)
    _same(with_qlog, without)


def test_qlog_built_only_when_asked(tmp_path):
    from simulator.net.link import Path
    from simulator.stacks.common import Recorder
    from simulator.stacks.h3 import H3Session

    sim = Simulator(1)
    params = StackParams(stack="h3")
    plain = H3Session(sim, Path(sim, rtt_s=0.02), params, Recorder(sim), "https://a.example")
    assert plain.qlog is None and plain.client.quic._quic_logger is None
    logged = H3Session(sim, Path(sim, rtt_s=0.02), params, Recorder(sim), "https://b.example", qlog_dir=str(tmp_path))
    assert logged.qlog is not None and logged.client.quic._quic_logger is not None


def test_sent_ranges_answer_as_the_walk_over_every_frame():
    rng = random.Random(4)
    for _ in range(200):
        ranges, sent = SentRanges(), []
        for _ in range(rng.randint(1, 40)):
            start = rng.randint(0, 60)
            end = start + rng.randint(1, 20)
            expected = any(lo <= start and end <= hi for lo, hi in sent)
            assert ranges.covers(start, end) == expected
            assert ranges.add(start, end) == expected
            sent.append((start, end))


def test_engine_stop_ends_run_after_the_running_event():
    sim = Simulator()
    out = []
    sim.call_at(1.0, out.append, "a")
    sim.call_at(2.0, lambda: (out.append("b"), sim.stop()))
    sim.call_at(2.0, out.append, "c")
    sim.call_at(3.0, out.append, "d")
    assert sim.run() == 2.0 and sim.stopped
    assert out == ["a", "b"] and sim.next_s == 2.0 and sim.events_run == 2
    sim.run()
    assert out == ["a", "b", "c", "d"] and not sim.stopped and sim.next_s is None


@pytest.mark.parametrize("bulk", [False, True])
def test_run_loop_never_spins_at_one_instant(bulk):
    """A callback that re-schedules itself for the instant it runs at is a bug: the loop
    raises instead of hanging, with and without bulk runs."""
    from simulator.stacks.common import run_until

    sim = Simulator()

    def again() -> None:
        sim.call_soon(again)

    sim.call_at(1.0, again)
    with pytest.raises(RuntimeError, match="no progress in virtual time at 1.0 s"):
        run_until(sim, lambda: False, check=lambda: None, deadline_s=100.0, safe_until=(lambda: 50.0) if bulk else None)
