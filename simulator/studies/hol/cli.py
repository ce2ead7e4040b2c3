"""``workbench hol``: the HOL study's flags, its command, and its registration."""

from __future__ import annotations

import argparse
import os
import sys

from ... import argtypes
from ...errors import InputError
from ...traces.model import Trace
from ...units import parse_duration, parse_size
from ..base import Study, add_network_flags, comma_list, network_from_args
from .study import DIRECTIONS, TRANSPORTS, HolParams, run, schemes

__all__ = ["STUDY", "add_arguments", "params_from_args"]


def params_from_args(args: argparse.Namespace) -> HolParams:
    """The study's parameters from its parsed flags (units applied)."""
    if not 0.0 <= float(args.jitter) <= 1.0:
        raise InputError(f"--jitter is a probability in [0, 1], got {args.jitter}")
    # --table / --blocked not given: the defaults (an interop trace's own, in _cmd).
    table = HolParams.table_bytes if args.table is None else parse_size(args.table)
    blocked = HolParams.max_blocked if args.blocked is None else int(args.blocked)
    return HolParams(
        schemes=comma_list(args.scheme),
        transport=args.transport,
        table_bytes=table,
        max_blocked=blocked,
        direction=args.direction,
        spacing_s=parse_duration(args.spacing),
        think_s=parse_duration(args.think),
        jitter_prob=float(args.jitter),
        **network_from_args(args),
    )


def _interop_table(trace: Trace, params: HolParams, args: argparse.Namespace) -> HolParams:
    """A QPACK interop file was encoded with the table capacity and blocked-streams limit of
    its name (``<name>.out.<capacity>.<blocked>.<ack>``, read as ``workbench interop decode``
    and the loader read it): the study uses them too unless --table / --blocked are given."""
    if trace.format != "qpack-interop" or (args.table is not None and args.blocked is not None):
        return params
    taken = {}
    if args.table is None:
        taken["table_bytes"] = int(trace.meta["max_table_capacity"])
    if args.blocked is None:
        taken["max_blocked"] = int(trace.meta["blocked_streams"])
    said = " and ".join(
        f"{'table capacity' if k == 'table_bytes' else 'max blocked streams'} {v}" for k, v in taken.items()
    )
    print(
        f"workbench: note: {said} from the interop file name {os.path.basename(trace.source)} "
        f"(give --table / --blocked to override)",
        file=sys.stderr,
    )
    return params.derive(**taken)


def _cmd(args: argparse.Namespace) -> int:
    from ...traces import load

    params = params_from_args(args)
    trace = load(args.trace)
    params = _interop_table(trace, params, args)
    result = run(trace, params, progress=not args.json and sys.stderr.isatty())
    if args.blocks:
        from ...outfiles import write_output

        write_output(args.blocks, result.blocks.to_csv(index=False).encode("utf-8"))
    if args.json:
        print(result.to_json())
        return 0
    cols = [
        "blocks",
        "blocked",
        "hol_total_ms",
        "hol_p50_ms",
        "hol_p95_ms",
        "hol_max_ms",
        "raw_bytes",
        "header_bytes",
        "encoder_stream_bytes",
        "ratio",
        "packets",
        "losses",
    ]
    print(
        f"trace {trace.source} ({len(trace)} exchanges, {result.trace['header_lists']} header lists), "
        f"{params.transport}, RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, seed {params.seed}"
    )
    import pandas as pd  # the table (``--json`` needs none)

    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string())
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The study's flags: the command line's, and the batch grid's parameters."""
    p.add_argument("--trace", required=True, help="HAR, QIF or QPACK interop file")
    p.add_argument(
        "--scheme",
        default="hpack,qpack,qcram",
        type=argtypes.names(schemes(), "scheme"),
        help="comma-separated: " + ",".join(schemes()),
    )
    p.add_argument(
        "--transport",
        default="quic",
        choices=list(TRANSPORTS),
        help="quic or tcp (transport models), or ref2017 (the 2017 simulator's network model)",
    )
    add_network_flags(p, rtt="100ms", bw="10mbit", loss="0", cc="reno", seed=1)
    p.add_argument(
        "--table",
        default=None,
        type=argtypes.table_size,
        help="dynamic table capacity in bytes (default 4096; a QPACK interop trace: from its file name)",
    )
    p.add_argument(
        "--blocked",
        default=None,
        type=argtypes.count(0, 65_535),
        help="max blocked streams (default 100; a QPACK interop trace: from its file name)",
    )
    p.add_argument(
        "--direction",
        default="auto",
        choices=list(DIRECTIONS),
        help="header lists to replay; auto (default): what the trace holds",
    )
    p.add_argument("--spacing", default="10ms", type=argtypes.duration, help="request spacing for untimed traces (QIF)")
    p.add_argument(
        "--think", default="0ms", type=argtypes.duration, help="server think time before a response (direction both)"
    )
    p.add_argument("--jitter", default="0", type=argtypes.probability, help="probability of an extra U(0,100ms) delay")
    p.add_argument("--blocks", metavar="CSV", type=argtypes.output_file, help="also write the per-block table to CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")


STUDY = Study(
    name="hol",
    help="header-compression HOL blocking: HPACK vs QPACK vs QCRAM",
    add_arguments=add_arguments,
    params_from_args=params_from_args,
    run=run,
    command=_cmd,
    optional_tables=("blocks",),
    cli_only=frozenset({"blocks"}),
)
