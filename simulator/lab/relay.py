"""The relay process of a lab run (``python -m simulator.lab.relay``, started by ``Lab``).

It reads one line of JSON on standard input (the two namespaces, each direction's link and
the seed), opens a TUN device ``lab0`` in each namespace, gives the client end 192.0.2.1
and the server end 192.0.2.2 (RFC 5737), routes the client's traffic for the server
ranges through its device, prints ``ready`` and hands both devices to the C relay
(``simulator.lab._relay``) until standard input says ``stop`` or closes.  It then prints
the relay's counters as one line of JSON.

Standard input is also the owner's lifeline: if it closes without ``stop`` (the owner was
killed), the relay removes both namespaces and every process in them before it exits.
The devices are not persistent: they vanish with the relay's descriptors.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import struct
import subprocess
import sys

from . import netns

TUNSETIFF = 0x400454CA  # _IOW('T', 202, int), linux/if_tun.h
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
DEVICE = "lab0"


def open_tun(name: str) -> int:
    """A new TUN device ``name`` (IP packets, no packet-information header) in the calling
    thread's namespace; its descriptor."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", name.encode(), IFF_TUN | IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    return fd


def _ip(ns: str, *args: str) -> None:
    subprocess.run(["ip", "-n", ns, *args], check=True, capture_output=True)


def configure(client_ns: str, server_ns: str) -> None:
    """Addresses and routes of the link's two ends (point to point, no ARP on TUN)."""
    _ip(client_ns, "addr", "add", netns.CLIENT_ADDR, "peer", netns.SERVER_ADDR, "dev", DEVICE)
    _ip(server_ns, "addr", "add", netns.SERVER_ADDR, "peer", netns.CLIENT_ADDR, "dev", DEVICE)
    for ns in (client_ns, server_ns):
        _ip(ns, "link", "set", DEVICE, "up")
    for net in netns.SERVER_NETS:
        _ip(client_ns, "route", "add", net, "dev", DEVICE)


def main() -> int:
    """Run one relay from the configuration on standard input; see the module docstring."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the owner's to handle
    config = json.loads(sys.stdin.buffer.readline())
    # SIGTERM/SIGHUP while the C loop runs without the GIL: Python's handler writes to the
    # wake-up pipe, which the loop watches, so the relay stops and cleans up.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, -10)  # an instrument: ahead of the load it carries
    from .._extension import load_extension

    relay = load_extension("simulator.lab._relay", "WORKBENCH_RELAY_EXT")
    client_ns, server_ns = config["client_ns"], config["server_ns"]
    fds = []
    try:
        for ns in (client_ns, server_ns):
            with netns.entered(ns):
                fds.append(open_tun(DEVICE))
        configure(client_ns, server_ns)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"cannot set up the link: {exc}", file=sys.stderr, flush=True)
        return 1
    print("ready", flush=True)
    stats = relay.run(
        fds[0],
        fds[1],
        sys.stdin.fileno(),
        config["uplink"],
        config["downlink"],
        int(config["seed"]) & (2**64 - 1),
        wake_fd=wake_r,
    )
    word = b""
    with contextlib.suppress(OSError):
        os.set_blocking(sys.stdin.fileno(), False)
        word = os.read(sys.stdin.fileno(), 64)
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(BrokenPipeError, OSError):
        print(json.dumps(stats, sort_keys=True), flush=True)
    if not word.startswith(b"stop"):
        for ns in (client_ns, server_ns):  # the owner is gone: clean up for it
            netns.remove(ns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
