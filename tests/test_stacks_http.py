"""Real h2 and aioquic HTTP/3 stacks in virtual time: exchanges, 103, push, trailers,
resets, determinism, stalls, the timer trap, QPACK blocking, qlog and the CLI."""

import json
import os

import pytest

from simulator.cli import main
from simulator.stacks import replay
from simulator.stacks.common import ExchangeSpec, PushSpec, StackParams, StackStalled
from simulator.traces import load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "traces", "synthetic-page.har")
REQ = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"a.example"), (b":path", b"/x"))
OK = ((b":status", b"200"),)


def _features():
    return [
        ExchangeSpec(
            0,
            REQ,
            OK,
            20000,
            early_hints=(b"</s.css>; rel=preload", b"</f.woff2>; rel=preload"),
            pushes=(PushSpec(b"/p.js", 3000),),
            trailers=((b"server-timing", b"app;dur=1"),),
        ),
        ExchangeSpec(1, REQ, OK, 200000, start_s=0.01, reset_by="server", reset_after_bytes=5000),
        ExchangeSpec(2, REQ, OK, 200000, start_s=0.01, reset_by="client", reset_after_bytes=5000),
        ExchangeSpec(3, REQ, OK, 0, start_s=0.01, request_body_bytes=100000),
        ExchangeSpec(4, REQ, OK, 1_000_000, start_s=0.02),
    ]


@pytest.mark.parametrize("stack", ["h2", "h3"])
def test_features_on_both_stacks(stack):
    result = replay.run_specs(_features(), StackParams(stack=stack))
    df = result.exchanges
    req = df[df["kind"] == "request"].set_index("exchange")
    # Bodies of the given sizes arrive, the exchange completes.
    assert req.loc[0, "body_bytes"] == 20000 and req.loc[0, "completed"]
    assert req.loc[4, "body_bytes"] == 1_000_000 and req.loc[4, "completed"]
    assert req.loc[3, "completed"] and req.loc[3, "status"] == 200  # request with a body
    # 103 with two Link headers, before the final response.
    assert req.loc[0, "link_headers"] == 2
    assert req.loc[0, "informational_s"] < req.loc[0, "headers_s"]
    # Trailers after the body.
    assert bool(req.loc[0, "trailers"])
    # Resets end the exchange without completing it.
    assert req.loc[1, "reset"] == "server" and not req.loc[1, "completed"]
    assert req.loc[2, "reset"] == "client" and not req.loc[2, "completed"]
    assert req.loc[2, "body_bytes"] >= 5000
    # Push: a PUSH_PROMISE and a pushed response of the given size.
    pushed = df[df["kind"] == "push"]
    assert len(pushed) == 1
    assert pushed.iloc[0]["path"] == "/p.js" and pushed.iloc[0]["body_bytes"] == 3000 and pushed.iloc[0]["completed"]
    assert result.summary["push_promise_frames"] == 1
    assert result.summary["completed"] == 3 and result.summary["reset"] == 2


def test_h3_push_limited_by_max_push_id():
    # aioquic's client announces MAX_PUSH_ID once (8 by default, here 1): push ids 0 and 1.
    spec = ExchangeSpec(0, REQ, OK, 1000, pushes=tuple(PushSpec(f"/p{i}".encode(), 100) for i in range(2)))
    result = replay.run_specs([spec], StackParams(stack="h3", max_push_id=1))
    assert result.summary["pushed"] == 2
    from aioquic.h3.exceptions import NoAvailablePushIDError

    spec3 = ExchangeSpec(0, REQ, OK, 1000, pushes=tuple(PushSpec(f"/p{i}".encode(), 100) for i in range(3)))
    with pytest.raises(NoAvailablePushIDError):
        replay.run_specs([spec3], StackParams(stack="h3", max_push_id=1))


@pytest.mark.parametrize("stack", ["h2", "h3"])
def test_same_seed_same_timings_and_packet_counts(stack):
    trace = load(PAGE)
    params = StackParams(stack=stack, loss="0.02", seed=3)
    a = replay.run(trace, params)
    b = replay.run(trace, params)
    assert a.summary == b.summary
    assert a.exchanges.equals(b.exchanges)
    assert a.summary["packets_lost"] > 0
    c = replay.run(trace, StackParams(stack=stack, loss="0.02", seed=4))
    assert c.summary["last_completion_s"] != a.summary["last_completion_s"]


@pytest.mark.parametrize("stack", ["h2", "h3"])
def test_a_run_that_cannot_progress_ends_with_idle_timeout(stack):
    spec = ExchangeSpec(0, REQ, OK, 50000)
    with pytest.raises(StackStalled, match="idle timeout reached"):
        replay.run_specs([spec], StackParams(stack=stack, loss="0.97", idle_timeout_s=5.0))


def test_loss_timer_that_comes_back_unchanged_cannot_spin(monkeypatch):
    # Force the float-rounding trap: after 60 ms, aioquic's timer always reports the same
    # deadline (60 ms), and firing it changes nothing.  The driver must step past it.
    from aioquic.quic.connection import QuicConnection

    original = QuicConnection.get_timer

    def stuck_timer(self):
        when = original(self)
        return when if when is None or when < 0.060 else 0.060

    monkeypatch.setattr(QuicConnection, "get_timer", stuck_timer)
    spec = ExchangeSpec(0, REQ, OK, 30000)
    result = replay.run_specs([spec], StackParams(stack="h3", rtt_s=0.05))
    assert result.summary["completed"] == 1
    assert result.summary["timer_nudges"] > 0
    assert result.summary["events"] < 20000


def test_qpack_blocking_measured_with_small_table_and_blocked_limit():
    # Distinct header values on each request: the encoder inserts them and references the
    # new entries at once (up to the blocked-streams limit), so lost encoder-stream packets
    # block header blocks at the decoder.
    specs = [
        ExchangeSpec(
            i,
            REQ + ((b"x-token", f"value-{i:04d}-{'z' * 300}".encode()),),
            OK + ((b"x-r", f"r{i}-{'y' * 300}".encode()),),
            2000,
        )
        for i in range(60)
    ]
    params = StackParams(stack="h3", loss="0.1", seed=3, qpack_table_bytes=4096, qpack_blocked_streams=4)
    result = replay.run_specs(specs, params)
    assert result.summary["completed"] == 60
    assert result.summary["qpack_blocked_blocks"] >= 2
    assert result.summary["qpack_blocked_total_s"] > 0
    none = replay.run_specs(specs, StackParams(stack="h3", loss="0.1", seed=3, qpack_blocked_streams=0))
    assert none.summary["qpack_blocked_blocks"] == 0  # blocking not allowed: never blocks


def test_h3_settings_announce_our_qpack_parameters():
    from simulator.stacks.h3 import H3Session
    from simulator.stacks.common import Recorder
    from simulator.engine import Simulator
    from simulator.net.link import Path

    sim = Simulator(1)
    params = StackParams(stack="h3", qpack_table_bytes=777, qpack_blocked_streams=3)
    session = H3Session(sim, Path(sim, rtt_s=0.02), params, Recorder(sim), "https://a.example")
    sim.run(until_s=0.5)
    settings = session.server.h3.received_settings
    assert settings[0x1] == 777 and settings[0x7] == 3


def test_qlog_has_simulated_timestamps(tmp_path):
    spec = ExchangeSpec(0, REQ, OK, 5000, start_s=0.5)
    replay.run_specs([spec], StackParams(stack="h3", rtt_s=0.1), qlog_dir=str(tmp_path))
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["h30-client.qlog", "h30-server.qlog"]
    data = json.loads((tmp_path / "h30-client.qlog").read_text())
    times = [e["time"] for e in data["traces"][0]["events"]]
    assert times[0] == 0.0 and max(times) < 2000.0  # milliseconds of virtual time
    assert times == sorted(times)


def test_cli_replay_json_and_errors(capsys, tmp_path):
    assert main(["replay", "--trace", PAGE, "--stack", "h2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("exchanges", "completed", "last_completion_s", "packets_sent", "packets_lost"):
        assert key in out
    assert out["completed"] == len(out["exchanges"]) == 79
    assert main(["replay", "--trace", PAGE, "--stack", "h2"]) == 0
    text = capsys.readouterr().out
    assert "completed 79 of 79" in text
    for argv in (
        ["replay", "--trace", str(tmp_path / "missing.har"), "--stack", "h3"],
        ["replay", "--trace", PAGE, "--stack", "h2", "--loss", "lots"],
        ["replay", "--trace", PAGE, "--stack", "h2", "--rtt", "fast"],
        ["replay", "--trace", PAGE, "--stack", "h2", "--qlog", str(tmp_path)],
        ["replay", "--trace", PAGE, "--stack", "h3", "--qlog", str(tmp_path / "nodir")],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("workbench: error:") and err.count("\n") == 1 and "Traceback" not in err
    bad = tmp_path / "bad.har"
    bad.write_text('{"log": {"entries": []}}')
    assert main(["replay", "--trace", str(bad), "--stack", "h2"]) == 2


def test_trace_headers_are_sanitised_for_the_wire():
    headers, body = replay.response_headers_for(
        ((b":status", b"204"), (b"Content-Length", b"99"), (b"connection", b"close")), 500
    )
    assert headers == ((b":status", b"204"),) and body == 0
    headers, body = replay.response_headers_for(((b":status", b"200"), (b"content-length", b"1")), 300)
    assert (b"content-length", b"300") in headers and body == 300
    req = replay.request_headers_for(((b":path", b"/a"), (b"Host", b"x"), (b"accept", b" */* ")), "https://o.example")
    assert req[:4] == ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"o.example"), (b":path", b"/a"))
    assert (b"accept", b"*/*") in req and all(n != b"host" for n, _ in req)
