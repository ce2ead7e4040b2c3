"""The lab's relay: its own CPU while it carries a bulk TCP transfer, side by side with
the endpoints' CPU in the same run, at 10 and 50 Mbit/s, and the highest rate it carries
on an unlimited link (what ``simulator.lab.link.MAX_RATE_BPS`` is set below).

End to end for the link: a real sender in the server namespace, the relay, a real
receiver in the client namespace, all as separate processes; figures are the relay's CPU
seconds (from /proc, user + system) per wall second of the transfer (a share of one
core), per packet carried, and as a ratio to the two endpoints' CPU together.  Needs root
and /dev/net/tun; without them it says so and returns nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

PROBE = [sys.executable, "-m", "simulator.lab.probe"]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _transfer(rate_bps: float | None, size_bytes: int) -> dict:
    from simulator.lab import netns
    from simulator.lab.link import Lab, LinkConditions

    with Lab(LinkConditions(rtt_s=0.020, bandwidth_bps=rate_bps)) as lab:
        sender = lab.start(
            "server", [*PROBE, "listen-tcp", "5010", "--bind", netns.SERVER_ADDR, "--send", str(size_bytes)]
        )
        lab.wait_listening(sender, 10.0)
        relay_pid = lab._relay.pid
        relay0, sender0, t0 = _cpu_s(relay_pid), _cpu_s(sender.pid), time.perf_counter()
        receiver = subprocess.Popen(
            netns.exec_argv(lab.client_ns, [*PROBE, "bulk", netns.SERVER_ADDR, "5010"]),
            stdout=subprocess.PIPE,
            text=True,
        )
        # The receiver's CPU is read just before it exits: poll its /proc entry.
        receiver_cpu = 0.0
        while receiver.poll() is None:
            try:
                receiver_cpu = _cpu_s(receiver.pid)
            except (OSError, IndexError):
                pass
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        got = json.loads(receiver.stdout.read().strip().splitlines()[-1])
        relay_cpu, sender_cpu = _cpu_s(relay_pid) - relay0, _cpu_s(sender.pid) - sender0
    packets = lab.stats["downlink"]["packets_out"] + lab.stats["uplink"]["packets_out"]
    return {
        "rate_mbit": None if rate_bps is None else rate_bps / 1e6,
        "wall_s": wall,
        "goodput_mbit": got["goodput_bps"] / 1e6,
        "relay_cpu_share": relay_cpu / wall,
        "relay_us_per_packet": relay_cpu / max(packets, 1) * 1e6,
        "relay_over_endpoints": relay_cpu / max(sender_cpu + receiver_cpu, 1e-9),
        "packets": packets,
    }


def run(quick: bool = False) -> dict:
    """Measure and print; returns the figures."""
    from simulator.lab.link import relay_available

    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or not relay_available():
        print("lab: needs root, /dev/net/tun and the built relay; skipped", file=sys.stderr)
        return {"skipped": "needs root, /dev/net/tun and the built relay"}
    cases = [(10e6, 6_000_000), (50e6, 25_000_000), (None, 200_000_000)]
    if quick:
        cases = [(10e6, 2_000_000), (50e6, 8_000_000), (None, 40_000_000)]
    rows = [_transfer(rate, size) for rate, size in cases]
    print(f"{'link':>12} {'goodput':>12} {'relay CPU':>11} {'us/packet':>10} {'relay/endpoints':>16}")
    for r in rows:
        link = "unlimited" if r["rate_mbit"] is None else f"{r['rate_mbit']:g} Mbit/s"
        print(
            f"{link:>12} {r['goodput_mbit']:>8.1f} Mbit/s {r['relay_cpu_share']:>10.1%} "
            f"{r['relay_us_per_packet']:>10.2f} {r['relay_over_endpoints']:>15.2f}x"
        )
    return {"rows": rows}
