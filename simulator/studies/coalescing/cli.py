"""``workbench coalescing``: the coalescing study's flags, its command, and its registration."""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from ... import argtypes
from ...units import parse_duration
from ..base import Study, add_network_flags, comma_list, median_over_seeds, network_from_args
from ...browser import page_graph
from ...browser.flags import add_page_flags, think_from_args
from .study import MODES, CoalescingParams, run, topology_for

__all__ = ["STUDY", "add_arguments", "params_from_args"]


def params_from_args(args: argparse.Namespace) -> CoalescingParams:
    """The study's parameters from its parsed flags (units applied)."""
    return CoalescingParams(
        modes=comma_list(args.mode),
        backend=args.backend,
        dns_lookup_s=parse_duration(args.dns_lookup),
        p421=float(args.p421),
        p421_announced=float(args.p421_announced),
        altsvc_cache=args.altsvc_cache,
        wait_pending=not args.no_wait_pending,
        cache=args.cache,
        dns_file=args.dns,
        cert_file=args.cert,
        scheduler=args.scheduler,
        page=args.page,
        **think_from_args(args),
        **network_from_args(args),
    )


def _cmd(args: argparse.Namespace) -> int:
    from ...traces import load

    params = params_from_args(args)
    trace = load(args.trace)
    topology_for(page_graph(trace, params.page), params)  # bad --dns / --cert files fail here, before any output
    result = median_over_seeds(run, trace, params, args.seeds, progress=not args.json and sys.stderr.isatty())
    topo = result.topology
    if args.write_topology:
        from ...outfiles import write_output

        write_output(args.write_topology, (json.dumps(topo.to_dict(), indent=2, sort_keys=True) + "\n").encode("utf-8"))
    if args.json:
        print(result.to_json())
        return 0
    t = result.trace
    print(
        f"page {t['page'] or '-'} of {t['source']}: {t['resources']} resources, {t['origins']} origins; "
        f"RTT {params.rtt_s * 1000:g} ms, DNS {params.dns_lookup_s * 1000:g} ms, loss {params.loss}, "
        f"p421 {params.p421:g}, Alt-Svc cache {params.altsvc_cache}, seed {params.seed}"
        + (f" (median of {args.seeds} seeds)" if args.seeds > 1 else "")
        + f"; DNS from {topo.sources['dns']}, certificates from {topo.sources['cert']}"
    )
    cols = [
        "connections",
        "h3_connections",
        "handshake_rtts",
        "handshake_bytes",
        "dns_lookups",
        "coalesced_requests",
        "misdirected_421",
        "render_blocking_s",
        "onload_s",
        "gain_onload_s",
        "gain_onload_rtts",
    ]
    with pd.option_context("display.width", 220, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string())
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The study's flags: the command line's, and the batch grid's parameters."""
    add_page_flags(p)
    p.add_argument(
        "--mode",
        default=",".join(MODES),
        type=argtypes.names(MODES, "mode"),
        help="comma-separated: " + ",".join(MODES),
    )
    p.add_argument("--dns", help="JSON/TOML file: host -> address or list of addresses (others: seeded default)")
    p.add_argument("--cert", help="JSON/TOML file: host -> SAN list, or {san = [...], origin = [...], h3 = bool}")
    p.add_argument(
        "--p421",
        default="0",
        type=argtypes.probability,
        help="probability a server refuses a request coalesced onto it (421)",
    )
    p.add_argument(
        "--p421-announced",
        default="0",
        type=argtypes.probability,
        help="the same for an origin the server announced in ORIGIN",
    )
    p.add_argument(
        "--altsvc-cache",
        default="warm",
        choices=["warm", "cold"],
        help="h3-altsvc: warm = Alt-Svc cached from an earlier visit, cold = first view",
    )
    p.add_argument(
        "--no-wait-pending", action="store_true", help="never wait for another host's connection still in its handshake"
    )
    p.add_argument(
        "--backend",
        default="model",
        choices=["model", "stacks"],
        help="model (transport models) or stacks (the real h2 stack, over TLS 1.3 unless --no-tls)",
    )
    p.add_argument(
        "--dns-lookup",
        default="30ms",
        type=argtypes.duration,
        help="time of one DNS lookup (once per host and page load)",
    )
    add_network_flags(p, rtt="100ms", bw="10mbit", loss="0", cc="reno", tls=True, seed=1)
    p.add_argument(
        "--write-topology",
        metavar="JSON",
        type=argtypes.output_file,
        help="write the DNS answers and certificates used to this JSON file",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


STUDY = Study(
    name="coalescing",
    help="connection coalescing: none / RFC 9113 9.1.1 / ORIGIN / h3 Alt-Svc",
    add_arguments=add_arguments,
    params_from_args=params_from_args,
    run=run,
    command=_cmd,
    optional_tables=("connections", "resources"),
    cli_only=frozenset({"write-topology"}),
)
