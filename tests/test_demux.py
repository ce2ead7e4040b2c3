"""The receive-side demultiplexing study: protocol rules (RFC 9113 section 6.9 flow
control) and the behaviour each receiver strategy must have, on the real socket (both
frame scanners) and over the TCP model."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from simulator.errors import InputError
from simulator.net.conditions import Network
from simulator.frames import get_implementation, implementations
from simulator.studies import demux
from simulator.studies.demux import model, real
from simulator.studies.demux.model import CpuCosts
from simulator.studies.demux.receivers import STRATEGIES
from simulator.studies.demux.server import INTERLEAVINGS

IMPLS = sorted(implementations())
KiB = 1024


def cfg(**kw) -> dict:
    base = dict(
        streams=4,
        stream_bytes=256 * KiB,
        window_bytes=64 * KiB,
        interleaving="runs",
        frame_bytes=16384,
        read_bytes=64 * KiB,
        side_bytes=32 * KiB,
        reading="eager",
        work="crc32",
    )
    base.update(kw)
    return base


def simulate(strategy, c, *, rtt_s=0.01, costs=CpuCosts(), seed=1, bandwidth_bps=1e9, mss_bytes=16000):
    return model.simulate(
        strategy,
        c,
        get_implementation(),
        network=Network(bandwidth_bps=bandwidth_bps, seed=seed),
        rtt_s=rtt_s,
        mss_bytes=mss_bytes,
        costs=costs,
    )


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("interleaving", INTERLEAVINGS)
def test_rfc9113_6_9_peak_buffered_never_exceeds_the_advertised_windows(impl, interleaving):
    """RFC 9113 section 6.9: a receiver never holds more DATA than it advertised: per
    stream at most the window, in all at most N x window (the connection window).
    Every body arrives intact and in order (CRC-32 against the sent pattern)."""
    c = cfg(interleaving=interleaving)
    for strategy in STRATEGIES:
        r = real.measure(strategy, c, implementations()[impl])
        assert r["peak_stream_buffered_bytes"] <= c["window_bytes"], strategy
        assert r["peak_buffered_bytes"] <= c["streams"] * c["window_bytes"], strategy
        assert r["bytes"] == c["streams"] * c["stream_bytes"]
        m = simulate(strategy, c)
        assert m["peak_stream_buffered_bytes"] <= c["window_bytes"], strategy
        assert m["peak_buffered_bytes"] <= c["streams"] * c["window_bytes"], strategy


def test_eager_per_stream_buffers_grow_to_n_windows_direct_holds_one_read():
    """All that N windows admit is read before anything is consumed: per-stream buffers
    reach N x window (the 500 MB of 50 x 10 MB); direct dispatch never holds more than
    the payload of one read buffer."""
    c = cfg(streams=6, stream_bytes=512 * KiB, window_bytes=128 * KiB)
    per = real.measure("per-stream", c, get_implementation())
    direct = real.measure("direct", c, get_implementation())
    assert per["peak_buffered_bytes"] == c["streams"] * c["window_bytes"]
    assert direct["peak_buffered_bytes"] <= direct["read_buffer_bytes"]
    assert direct["copied_bytes"] == 0 and per["copied_bytes"] == c["streams"] * c["stream_bytes"]
    paced = real.measure("per-stream", {**c, "reading": "paced"}, get_implementation())
    assert paced["peak_buffered_bytes"] <= paced["read_buffer_bytes"]


@pytest.mark.parametrize("impl", IMPLS)
def test_fine_interleaving_stop_the_train_dispatches_at_least_once_per_frame(impl):
    """Round-robin DATA frames (windows never binding): every frame is for another
    stream than the one before, so the train stops and re-dispatches at each frame;
    on long runs it stops only between runs."""
    c = cfg(interleaving="round-robin", window_bytes=256 * KiB)
    rr = real.measure("stop-the-train", c, implementations()[impl])
    assert rr["dispatches"] >= rr["data_frames"]
    assert rr["wakeups"] >= rr["data_frames"] - 1
    runs = real.measure("stop-the-train", {**c, "interleaving": "runs"}, implementations()[impl])
    assert runs["dispatches"] <= c["streams"] + 1
    assert runs["wakeups"] < runs["data_frames"] / 4
    # direct dispatch hands every frame on once, whatever the order
    d = real.measure("direct", c, implementations()[impl])
    assert d["dispatches"] == d["data_frames"]


def test_one_stream_every_strategy_is_the_same():
    """With one stream there is nothing to demultiplex: no train stops, nothing parked,
    the same frames and reads, and over the TCP model (network-bound) the same
    completion time and window stalls for all four strategies."""
    c = cfg(streams=1, stream_bytes=512 * KiB, window_bytes=64 * KiB, reading="paced")
    tiny = CpuCosts(
        read_s=1e-12, frame_s=1e-12, dispatch_s=1e-12, wakeup_s=1e-12, copy_bytes_per_s=1e15, consume_bytes_per_s=1e15
    )
    rows = {s: real.measure(s, c, get_implementation()) for s in STRATEGIES}
    assert len({r["data_frames"] for r in rows.values()}) == 1
    for r in rows.values():  # paced: one read at most, whatever the strategy
        assert r["peak_buffered_bytes"] <= r["read_buffer_bytes"]
    assert rows["stop-the-train"]["dispatches"] == 1  # one train, never stopped
    assert rows["side-track"]["copied_bytes"] == 0  # nothing out of turn
    sims = {s: simulate(s, c, costs=tiny) for s in STRATEGIES}
    for key in ("completion_s", "window_stall_s"):
        assert len({round(m[key], 6) for m in sims.values()}) == 1, key
    for key in ("reads", "wakeups", "peak_buffered_bytes", "window_updates_sent"):
        assert len({m[key] for m in sims.values()}) == 1, key


def test_rfc9113_6_9_window_updates_bound_completion_by_rtt():
    """A stream cannot run more than one window ahead of the WINDOW_UPDATEs that reach
    the server: each stream moves at most a window per RTT, so completion >= (S - W) /
    W x RTT, and it grows with the RTT (flow-control stalls)."""
    c = cfg(streams=2, stream_bytes=512 * KiB, window_bytes=64 * KiB)
    times = []
    for rtt in (0.01, 0.04):
        m = simulate("direct", c, rtt_s=rtt)
        assert m["completion_s"] >= (c["stream_bytes"] - c["window_bytes"]) / c["window_bytes"] * rtt
        assert m["window_stall_s"] > 0
        times.append(m["completion_s"])
    assert times[1] > 3 * times[0]
    # windows of a whole body: no stall from flow control
    wide = simulate("direct", {**c, "window_bytes": c["stream_bytes"]}, rtt_s=0.04)
    assert wide["completion_s"] < times[1] / 2


def test_ranking_changes_with_the_interleaving_in_the_model():
    """Stop-the-train costs a wakeup per change of stream: as good as direct dispatch
    on long runs (it even dispatches less), well behind it on round-robin: a 40 Gbit/s
    path with a 0.5 ms RTT, where the receiver's CPU is the bottleneck."""
    c = cfg(streams=4, stream_bytes=1024 * KiB, window_bytes=512 * KiB, work="count")
    ratio = {}
    for il in ("runs", "round-robin"):
        kw = dict(rtt_s=0.0005, bandwidth_bps=40e9, mss_bytes=64000)
        stt = simulate("stop-the-train", {**c, "interleaving": il}, **kw)
        d = simulate("direct", {**c, "interleaving": il}, **kw)
        ratio[il] = stt["completion_s"] / d["completion_s"]
        assert d["receiver_busy_share"] > 0.5
    assert ratio["runs"] <= 1.0
    assert ratio["round-robin"] > 1.2


def test_model_same_seed_same_rows_and_params_in_every_row():
    p = demux.DemuxParams(
        streams=2,
        stream_bytes=128 * KiB,
        window_bytes=64 * KiB,
        part="model",
        rtts_s=(0.01,),
        loss="0.01",
        interleavings=("round-robin",),
        seed=5,
    )
    a = demux.run(None, p).to_json()
    b = demux.run(None, p).to_json()
    assert a == b
    rows = json.loads(a)["rows"]
    assert len(rows) == len(STRATEGIES)
    for r in rows:
        assert r["seed"] == 5 and r["window_bytes"] == 64 * KiB and r["loss"] == "0.01" and r["rtt_s"] == 0.01


def test_real_part_ratio_to_direct_in_the_same_run():
    p = demux.DemuxParams(
        streams=2,
        stream_bytes=256 * KiB,
        window_bytes=64 * KiB,
        part="real",
        repeat=1,
        interleavings=("runs",),
        trace_memory=True,
    )
    df = demux.run(None, p).real
    assert (df.loc[df["strategy"] == "direct", "throughput_ratio_vs_direct"] == 1.0).all()
    assert (df["py_heap_peak_bytes"] > 0).all()
    assert (df["measured"] == "this machine (CPU time)").all()


@pytest.mark.parametrize(
    "args",
    [
        ["--window", "0"],
        ["--interleaving", "zigzag"],
        ["--side", "1KiB"],
        ["--streams", "x"],
        ["--frame", "1000"],
        ["--rtt", "0ms"],
        ["--streams", "3000", "--window", "1MiB"],
        ["--loss", "maybe"],
    ],
)
def test_bad_input_exits_2_with_one_line(args):
    proc = subprocess.run(
        [sys.executable, "-m", "simulator.cli", "demux", "--part", "model", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("workbench: error:"), proc.stderr
    assert proc.stdout == ""


def test_params_check_raises_input_error():
    with pytest.raises(InputError):
        demux.DemuxParams(reading="lazy")


@pytest.mark.slow
def test_reference_case_direct_more_than_doubles_the_worst():
    """The reference case (50 x 100 MB, 10 MB window, long runs): per-stream buffers
    reach N x window (500 MB); direct dispatch holds one read buffer and measures more
    than twice the throughput of the worst strategy on this machine."""
    p = demux.DemuxParams(**demux.FULL, part="real", repeat=1, interleavings=("runs",))
    df = demux.run(None, p).real.set_index("strategy")
    assert df.loc["per-stream", "peak_buffered_bytes"] == 50 * 10_000_000
    assert df.loc["direct", "peak_buffered_bytes"] <= df.loc["direct", "read_buffer_bytes"]
    assert df.loc["direct", "throughput_mb_s"] > 2 * df["throughput_mb_s"].min()


def test_batch_demux_runs_the_model_without_traces(tmp_path):
    """``workbench batch demux``: no traces, one job per grid point and seed, every row
    with its parameters and seed; the real (wall-clock) part never reaches batch rows."""
    from simulator.batch import load
    from simulator.batch.runner import run_batch

    grid = {
        "rtt": ["5ms"],
        "window": ["64KiB", "128KiB"],
        "streams": [2],
        "size": ["128KiB"],
        "interleaving": ["round-robin"],
    }
    report = run_batch("demux", None, grid, 2, out=tmp_path / "res", workers=0, progress=False)
    assert report.failed == 0 and report.ok == 4
    df = load(tmp_path / "res")
    assert len(df) == 4 * len(STRATEGIES)
    assert set(df["seed"]) == {1, 2} and set(df["window_bytes"]) == {64 * KiB, 128 * KiB}
    assert (df["part"] == "model").all() and (df["rtt_s"] == 0.005).all()
    with pytest.raises(InputError):
        run_batch("demux", "traces/", grid, 1, out=tmp_path / "other", workers=0, progress=False)


def test_model_slow_application_fills_per_stream_buffers_toward_n_windows():
    """Over the TCP model with an application slower than the path, an eager loop reads
    ahead of it: per-stream buffers approach N x window, never beyond (RFC 9113 section
    6.9), while direct dispatch leaves the backlog in the socket and holds one read."""
    c = cfg(streams=4, stream_bytes=1024 * KiB, window_bytes=256 * KiB, work="count")
    slow = CpuCosts(consume_bytes_per_s=10e6)
    per = simulate("per-stream", c, rtt_s=0.001, costs=slow, bandwidth_bps=10e9, mss_bytes=64000)
    direct = simulate("direct", c, rtt_s=0.001, costs=slow, bandwidth_bps=10e9, mss_bytes=64000)
    windows = c["streams"] * c["window_bytes"]
    assert 0.75 * windows <= per["peak_buffered_bytes"] <= windows
    assert direct["peak_buffered_bytes"] <= direct["read_buffer_bytes"]
    assert direct["peak_socket_queue_bytes"] > 0.5 * windows  # the backlog waits in the kernel
