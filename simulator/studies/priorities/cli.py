"""``workbench priorities``: the study's flags, its command, and its registration."""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from ... import argtypes
from ...browser.priorities import profile_names
from ...http.priority import scheduler_names
from ...errors import InputError
from ...http.priority_qlog import PriorityQlog
from ...units import parse_duration, parse_named_durations
from ..base import Study, add_network_flags, comma_list, median_over_seeds, network_from_args
from ...browser.client import BACKENDS, PROTOCOLS
from .study import DEFAULT_PARSE_DELAY, PrioritiesParams, run

__all__ = ["STUDY", "add_arguments", "params_from_args"]


def params_from_args(args: argparse.Namespace) -> PrioritiesParams:
    """The study's parameters from the parsed flags."""
    return PrioritiesParams(schedulers=comma_list(args.scheduler), browsers=comma_list(args.browser),
                            protocol=args.protocol, reprioritize=not args.no_reprioritize,
                            think_s=parse_duration(args.think), parse_delay=args.parse_delay, page=args.page,
                            backend=args.backend,
                            **network_from_args(args))


def _cmd(args: argparse.Namespace) -> int:
    from ...traces import load

    params = params_from_args(args)
    if args.qlog is not None and params.protocol != "h3":
        raise InputError("--qlog needs --protocol h3 (qlog defines HTTP/3 events, draft-ietf-quic-qlog-h3-events)")
    trace = load(args.trace)
    if args.qlog is not None:      # every load of the command (each seed) goes into the one file
        params = params.derive(qlog=PriorityQlog(f"workbench priorities {args.trace}"))
    result = median_over_seeds(run, trace, params, args.seeds, by=("browser", "scheduler"),
                               progress=not args.json and sys.stderr.isatty())
    if params.qlog is not None:
        params.qlog.write(args.qlog)
    if args.json:
        print(result.to_json())
        return 0
    t = result.trace
    print(f"page {t['page'] or '-'} of {t['source']}: {t['resources']} resources; {params.protocol}, "
          f"RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, seed {params.seed}"
          + (f" (median of {args.seeds} seeds)" if args.seeds > 1 else ""))
    cols = ["browser", "scheduler", "render_blocking_done_s", "lcp_estimate_s", "speed_index_estimate_s", "onload_s"]
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string(index=False))
    for note in result.notes:
        print("note:", note)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``workbench priorities`` (and of ``workbench batch priorities``'s grid)."""
    p.add_argument("--trace", required=True, help="HAR of a page load (Chrome's _initiator gives the graph)")
    p.add_argument("--page", help="page id in the HAR (default: the first page)")
    p.add_argument("--scheduler", default="rfc9218,tree,fifo,rr,lifo",
                   type=argtypes.names(scheduler_names(), "scheduler"),
                   help="comma-separated server schedulers: " + ",".join(scheduler_names()))
    p.add_argument("--browser", default="chromium,firefox", type=argtypes.names(profile_names(), "browser profile"),
                   help="comma-separated browser priority profiles: " + ",".join(profile_names()))
    p.add_argument("--protocol", default="h2", choices=list(PROTOCOLS), help="h2 (over TCP) or h3 (over QUIC)")
    p.add_argument("--backend", default="model", choices=list(BACKENDS),
                   help="model (the page-load model's network) or stacks (the real h2 or aioquic stack, its "
                        "server scheduling with the same scheduler)")
    add_network_flags(p, rtt="100ms", bw="10mbit", loss="0", tls=True, seed=1)
    p.add_argument("--no-reprioritize", action="store_true",
                   help="no PRIORITY_UPDATE for the LCP image after layout (RFC 9218 section 7)")
    p.add_argument("--think", default="0ms", type=argtypes.duration, help="server think time of every response")
    p.add_argument("--parse-delay", default=DEFAULT_PARSE_DELAY,
                   type=argtypes.checked(lambda t: parse_named_durations(t, "parse delay", require_unit=True),
                                         "parse delay"),
                   help="parse/CPU delay before a parent's references are found, per resource type")
    p.add_argument("--seeds", default=1, type=argtypes.count(1, 1000),
                   help="run seeds SEED..SEED+N-1 and report medians (at most 1000)")
    p.add_argument("--qlog", metavar="FILE", type=argtypes.output_file,
                   help="write each HTTP/3 connection's scheduling as qlog http3 events (h3; the first seed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


STUDY = Study(name="priorities", help="HTTP prioritization: server schedulers x browser priority signals",
              add_arguments=add_arguments, params_from_args=params_from_args, run=run, command=_cmd,
              optional_tables=("resources",))
