"""``workbench trailers``: the trailers study's flags, its command, and its registration."""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from ... import argtypes
from ...errors import InputError
from ...hops import chain
from ...hops.fields import METADATA
from ...http.framing import VERSIONS
from ...units import parse_bandwidth, parse_byte_rate, parse_duration, parse_size
from ..base import Study, add_network_flags, comma_list, network_from_args
from .study import MAX_WORK_UNITS, STACKS, STRATEGIES, TrailersParams, run

__all__ = ["STUDY", "add_arguments", "params_from_args"]


def params_from_args(args: argparse.Namespace) -> TrailersParams:
    """The study's parameters from its parsed flags (units applied)."""
    try:
        te = float(args.te)
    except ValueError:
        raise InputError(f"--te must be a probability in [0, 1], got {args.te!r}") from None
    return TrailersParams(
        strategies=comma_list(args.strategy),
        versions=comma_list(args.versions),
        stack=args.stack,
        body_bytes=None if args.body is None else parse_size(args.body),
        rate_bytes_per_s=parse_byte_rate(args.rate),
        chunk_bytes=parse_size(args.chunk),
        hops=comma_list(args.hops),
        hop_rtt_s=parse_duration(args.hop_rtt),
        hop_bandwidth_bps=parse_bandwidth(args.hop_bw),
        te_trailers=te,
        metadata=comma_list(args.metadata),
        responses=int(args.responses),
        spacing_s=parse_duration(args.spacing),
        think_s=parse_duration(args.think),
        max_work_units=int(args.max_work),
        **network_from_args(args),
    )


def _cmd(args: argparse.Namespace) -> int:
    params = params_from_args(args)
    trace = None
    if args.trace:
        from ...traces import load

        trace = load(args.trace)
    result = run(trace, params, progress=not args.json and sys.stderr.isatty())
    if args.rows:
        from ...outfiles import write_output

        write_output(args.rows, result.responses.to_csv(index=False).encode("utf-8"))
    if args.json:
        print(result.to_json())
        return 0
    hops = ",".join(params.hops) or "none"
    rate = "at once" if params.rate_bytes_per_s is None else f"{params.rate_bytes_per_s:,.0f} B/s"
    print(
        f"{len(result.responses['response'].unique())} response(s), generated {rate}, "
        f"RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, hops {hops}, TE: trailers p={params.te_trailers:g}, "
        f"seed {params.seed}"
    )
    cols = [
        "stack",
        "http_version",
        "strategy",
        "ttfb_mean_s",
        "metadata_mean_s",
        "ttlb_mean_s",
        "metadata_lost_responses",
        "head_bytes_mean",
        "trailer_bytes_mean",
        "overhead_bytes_mean",
        "origin_held_max_bytes",
        "hops_held_max_bytes",
    ]
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string(index=False))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The study's flags: the command line's, and the batch grid's parameters."""
    p.add_argument("--trace", help="HAR or QIF trace: one response per exchange (optional)")
    p.add_argument(
        "--strategy",
        default=",".join(STRATEGIES),
        type=argtypes.names(STRATEGIES, "strategy"),
        help="comma-separated: " + ",".join(STRATEGIES),
    )
    p.add_argument(
        "--versions",
        default=",".join(VERSIONS),
        type=argtypes.names(VERSIONS, "version"),
        help="comma-separated: h1,h2,h3",
    )
    p.add_argument(
        "--stack", default="model", choices=list(STACKS), help="transport models, real stacks (h2, aioquic), or both"
    )
    p.add_argument(
        "--body", default=None, type=argtypes.size, help="body size, e.g. 256KiB (default: the trace's, or 256 KiB)"
    )
    p.add_argument(
        "--rate", default="500kB/s", type=argtypes.byte_rate, help="body generation rate, e.g. 500kB/s, 4mbit, inf"
    )
    p.add_argument(
        "--chunk",
        default="16KiB",
        type=argtypes.positive_size,
        help="the server writes each chunk of this size as produced",
    )
    add_network_flags(p, rtt="50ms", bw="10mbit", loss="0", cc="reno", seed=1)
    p.add_argument(
        "--hops",
        default="",
        type=argtypes.names(chain.POLICIES, "hop policy", empty=True),
        help="intermediaries from the client: pass,drop,merge,store",
    )
    p.add_argument(
        "--hop-rtt", default="10ms", type=argtypes.positive_duration, help="RTT of each segment behind the first hop"
    )
    p.add_argument(
        "--hop-bw", default="1gbit", type=argtypes.bandwidth, help="bandwidth of each segment behind the first hop"
    )
    p.add_argument(
        "--te", default="1", type=argtypes.probability, help="probability that a request carries TE: trailers"
    )
    p.add_argument(
        "--metadata",
        default="digest,status",
        type=argtypes.names(METADATA, "metadata kind"),
        help="comma-separated: " + ",".join(METADATA),
    )
    p.add_argument(
        "--responses", default=1, type=argtypes.count(1, 100_000), help="responses without a trace (at most 100,000)"
    )
    p.add_argument("--spacing", default="1s", type=argtypes.duration, help="response i starts at i * spacing")
    p.add_argument("--think", default="0ms", type=argtypes.duration, help="server think time before production starts")
    p.add_argument(
        "--max-work",
        default=MAX_WORK_UNITS,
        type=argtypes.count(1, 10**9),
        help=f"refuse a run above this many units of work (about 0.5 ms of CPU each; default {MAX_WORK_UNITS:,})",
    )
    p.add_argument("--rows", metavar="CSV", type=argtypes.output_file, help="also write the per-response table to CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")


STUDY = Study(
    name="trailers",
    help="metadata at the end of a body: buffer vs trailers vs in-body, hops",
    add_arguments=add_arguments,
    params_from_args=params_from_args,
    run=run,
    command=_cmd,
    optional_tables=("responses", "hops"),
    cli_only=frozenset({"rows"}),
)
