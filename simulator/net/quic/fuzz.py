"""Differential fuzzing of the QUIC model's C twin (``simulator.net._quic``) against the
Python reference (``quic.QuicEndpoint``).

Written by hand.  Each case is one connection (or two sharing a bottleneck) with loss
patterns and ACK orders drawn from a seed: seeded drop lists in both directions (data and
ACKs lost, in bursts or alone), reordering jitter, Reno or CUBIC, the handshake or not,
aioquic's options or the RFC's, pacing on or off, and the application writing at once or
through the pull writer.  Both implementations run it; the events (time and callback
name, in order), the deliveries and acknowledgement reports, every packet on both links
(with its payload's repr) and every counter and estimate must be identical.  A crash or an
out-of-bounds access (under ``make asan``, which runs this) fails the run.  First a
deterministic corpus from ``--seed``, then fresh cases until the time budget runs out.

    python -m simulator.net.quic.fuzz --seconds 20 [--seed N] [--corpus-size N]
"""

from __future__ import annotations

import argparse
import random
import sys
import time

__all__ = ["run", "run_case", "draw_case"]


def draw_case(rnd: random.Random) -> dict:
    """One scenario's parameters, drawn from ``rnd``."""
    burst = rnd.random() < 0.3
    drops = []
    for span, most in ((400, 40), (200, 25)):
        picked = set()
        for _ in range(rnd.randrange(0, most)):
            start = rnd.randrange(span)
            picked.update(range(start, start + (rnd.randrange(1, 8) if burst else 1)))
        drops.append(sorted(picked))
    return {
        "seed": rnd.randrange(1 << 30), "drops": drops, "cc": rnd.choice(("reno", "cubic")),
        "jitter": rnd.choice((None, (0.05, 0.01), (0.2, 0.03))), "handshake": rnd.random() < 0.5,
        "aioquic": rnd.random() < 0.5, "pacing": rnd.random() < 0.8, "pull": rnd.random() < 0.3,
        "connections": rnd.choice((1, 1, 2)), "sizes": rnd.choice(((30_000,), (200_000, 5_000), (1, 70_000))),
    }


def run_case(implementation: str, case: dict) -> dict:
    """Run ``case`` on ``implementation`` ("python" or "c"); everything both must agree on."""
    from ...engine import Simulator
    from ..link import DelayedPath, DropList, Jitter, Path
    from ..transport import TransportConfig
    from .connection import QuicConnection

    sim = Simulator(case["seed"], trace=True)
    jitter = Jitter(*case["jitter"]) if case["jitter"] else None
    path = Path(sim, rtt_s=0.05, bandwidth_bps=10e6, queue_bytes=60_000, jitter=jitter)
    path.forward.loss, path.reverse.loss = DropList(case["drops"][0]), DropList(case["drops"][1])
    packets: list = []
    for tag, link in (("fwd", path.forward), ("rev", path.reverse)):
        link.observers.append(lambda p, tag=tag: packets.append(
            (tag, p.size_bytes, p.link_seq, p.sent_s, p.arrived_s, p.lost, repr(p.payload))))
    events: list = []
    draw = random.Random(case["seed"])
    options = dict(retransmit_in_turn=True, slow_start_rtt_exit=True, pto_declares_lost=True,
                   ack_delay_s=0.001) if case["aioquic"] else {}
    conns = []
    for i in range(case["connections"]):
        conn = QuicConnection(sim, path if i == 0 else DelayedPath(path, 0.01 * i),
                              TransportConfig(cc=case["cc"], initial_rtt_s=0.1), name=f"quic{i}",
                              handshake=case["handshake"], log_cwnd=True, pacing=case["pacing"],
                              implementation=implementation, **options)
        conns.append(conn)
        for end in (conn.client, conn.server):
            tag = (i, end.is_client)
            end.on_data = lambda sid, data, fin, t, tag=tag: events.append((tag, "data", sid, len(data), fin, t))
            end.on_stream_acked = lambda sid, offset, tag=tag: events.append((tag, "acked", sid, offset))
            end.on_packet_acked = lambda pn, ranges, tag=tag: events.append((tag, "packet", pn, ranges))
        pending: list = []
        if case["pull"]:
            def pull_one(server=conn.server, pending=pending) -> bool:
                if not pending:
                    return False
                sid, left = pending[0]
                n = min(left, 1000)
                server.write(sid, b"p" * n, end=n == left)
                pending[0:1] = [] if n == left else [(sid, left - n)]
                return True
            conn.server.on_send_ready = pull_one
        for k in range(3):
            sid = conn.client.open_stream()
            start = draw.random() * 0.2
            size = draw.choice(case["sizes"])
            sim.call_at(start, conn.client.write, sid, b"q" * draw.randrange(50, 3000), True)
            if case["pull"]:
                sim.call_at(start + 0.1, lambda sid=sid, size=size, conn=conn, pending=pending: (
                    pending.append((sid, size)), conn.server.want_to_send()))
            else:
                sim.call_at(start + 0.1, conn.server.write, sid, bytes([k]) * size, True)
    sim.run(until_s=600.0)
    ends = [end for conn in conns for end in (conn.client, conn.server)]
    return {
        "trace": sim.trace, "now": sim.now, "events": events, "packets": packets,
        "stats": [conn.stats() for conn in conns],
        "estimates": [(end.rtt.srtt_s, end.rtt.rttvar_s, end.rtt.min_rtt_s, end.cc.cwnd_bytes, end.cc.ssthresh_bytes,
                       end.bytes_in_flight, end._next_pn) for end in ends],
    }


def _differences(case: dict) -> list[str]:
    ref, twin = run_case("python", case), run_case("c", case)
    return [key for key in ref if repr(ref[key]) != repr(twin[key])]


def run(seconds: float = 3.0, seed: int = 0, corpus_size: int = 20, verbose: bool = False) -> int:
    """Check the corpus of ``corpus_size`` cases from ``seed``, then fresh cases for ``seconds``;
    the number of cases run.  AssertionError (with the case) at the first difference."""
    rnd = random.Random(seed)
    deadline = time.monotonic() + seconds     # a fuzzer's budget, not the simulation's clock
    count = 0
    while count < corpus_size or time.monotonic() < deadline:
        case = draw_case(rnd)
        diff = _differences(case)
        assert not diff, f"the C twin differs from the reference in {diff} on {case}"
        count += 1
    if verbose:
        print(f"{count} cases, C twin and Python reference identical")
    return count


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m simulator.net.quic.fuzz --seconds S [--seed N] [--corpus-size N]``."""
    from ..native import QUIC
    p = argparse.ArgumentParser(prog="python -m simulator.net.quic.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus-size", type=int, default=20)
    args = p.parse_args(argv)
    if QUIC is None:
        print("simulator.net._quic is not built: nothing to compare", file=sys.stderr)
        return 2
    run(args.seconds, args.seed, args.corpus_size, verbose=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
