"""``workbench lab``: the lab's commands.

    workbench lab shell [--rtt 100ms] [--bw 10mbit] [--loss 0.01] [--queue 64KiB] [--seed 1]
                        [--up-trace FILE] [--down-trace FILE] [--link relay|netem]
                        [--server 'CMD'] [--stats FILE] -- CMD [ARG ...]
    workbench lab clean

``shell`` is Mahimahi's shells in one: it makes the two namespaces and the link, starts
the server command (``sh -c``) in the server namespace and waits until it listens, runs
CMD in the client namespace, then removes everything and exits with CMD's status.  Both
get the server's address in ``LAB_SERVER_ADDR`` (and the client's in ``LAB_CLIENT_ADDR``).
``clean`` removes what a killed lab run left behind (every run also does so on start).
"""

from __future__ import annotations

import argparse
import json

from .. import argtypes
from ..errors import InputError
from ..units import parse_bandwidth, parse_duration, parse_size

__all__ = ["add_commands", "add_link_flags", "conditions_from_args"]


def add_link_flags(p: argparse.ArgumentParser) -> None:
    """The link's flags, spelt and checked as the models' network flags are."""
    p.add_argument("--rtt", default="100ms", type=argtypes.duration, help="round-trip time (half each way), e.g. 100ms")
    p.add_argument("--bw", default="none", type=argtypes.bandwidth,
                   help="bottleneck rate of each direction, e.g. 10mbit (none = unlimited)")
    p.add_argument("--loss", default="0", type=argtypes.loss,
                   help="loss per packet in each direction: 0.01 (Bernoulli) or ge:P,R[,h,k] (Gilbert-Elliott)")
    p.add_argument("--queue", default=None, type=argtypes.positive_size,
                   help="drop-tail queue of each direction in bytes, e.g. 64KiB (default: unlimited, as the models)")
    p.add_argument("--seed", default=1, type=argtypes.count(0), help="seed of the loss draws")
    p.add_argument("--up-trace", default=None, metavar="FILE",
                   help="client-to-server packet-delivery trace (Mahimahi format), instead of --bw")
    p.add_argument("--down-trace", default=None, metavar="FILE",
                   help="server-to-client packet-delivery trace (Mahimahi format), instead of --bw")
    p.add_argument("--link", default="relay", choices=("relay", "netem"),
                   help="relay: the lab's C relay between TUN devices; netem: veth + netem, where the kernel has it")


def conditions_from_args(args: argparse.Namespace):
    """The ``LinkConditions`` of the flags ``add_link_flags`` added (checked once, there)."""
    from .link import LinkConditions

    return LinkConditions(rtt_s=parse_duration(args.rtt), bandwidth_bps=parse_bandwidth(args.bw), loss=args.loss,
                          queue_bytes=None if args.queue is None else parse_size(args.queue), seed=args.seed,
                          uplink_trace=args.up_trace, downlink_trace=args.down_trace)


def _shell(args: argparse.Namespace) -> int:
    from .link import Lab

    command = list(args.cmd)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise InputError("give the client command after --, e.g. workbench lab shell --rtt 50ms -- curl ...")
    conditions = conditions_from_args(args)
    try:
        with Lab(conditions, link=args.link) as lab:
            if args.server:
                server = lab.start("server", ["sh", "-c", args.server])
                if not lab.wait_listening(server, parse_duration(args.server_wait)) and server.poll() is not None:
                    raise InputError(f"the --server command exited with status {server.returncode} "
                                     "before the client started.")
            status = lab.run_client(command)
    except KeyboardInterrupt:
        return 130
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({"conditions": conditions.describe(), "relay": lab.stats}, f, indent=1, sort_keys=True)
            f.write("\n")
    return 128 - status if status < 0 else status


def _clean(args: argparse.Namespace) -> int:
    from . import netns

    netns.check_can_run()
    gone = netns.sweep_stale()
    print(f"removed {len(gone)} namespace(s) left by lab runs that are gone" + (f": {', '.join(gone)}" if gone else ""))
    return 0


def add_commands(sub) -> None:
    """Register ``workbench lab shell`` and ``workbench lab clean``."""
    p = sub.add_parser("lab", help="real browser and servers over an emulated link (needs root)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lab_sub = p.add_subparsers(dest="lab_command", metavar="LAB_COMMAND", parser_class=type(p))
    sh = lab_sub.add_parser("shell", help="run a server and a client command over the emulated link")
    add_link_flags(sh)
    sh.add_argument("--server", default=None, metavar="CMD", help="server command, run with sh -c in the server namespace")
    sh.add_argument("--server-wait", default="5s", type=argtypes.positive_duration,
                    help="how long to wait for the server to listen before the client starts")
    sh.add_argument("--stats", default=None, type=argtypes.output_file, metavar="FILE",
                    help="write the link's conditions and the relay's counters (JSON) here after the run")
    sh.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the client command")
    sh.set_defaults(func=_shell)
    cl = lab_sub.add_parser("clean", help="remove namespaces left by lab runs whose process is gone")
    cl.set_defaults(func=_clean)
