"""``workbench demux``: the demux study's flags, its command, and its registration."""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from ... import argtypes
from ...errors import InputError
from ...units import parse_byte_rate, parse_duration, parse_size
from ..base import Study, add_network_flags, comma_list, network_from_args
from .model import CpuCosts
from .receivers import READING, RECEIVERS, STRATEGIES, WORK
from .server import INTERLEAVINGS
from .study import FULL, PARTS, SCANNERS, DemuxParams, run

__all__ = ["STUDY", "add_arguments", "params_from_args"]


def params_from_args(args: argparse.Namespace) -> DemuxParams:
    """The study's parameters from its parsed flags (units applied)."""
    sizes = dict(streams=int(args.streams), stream_bytes=parse_size(args.size), window_bytes=parse_size(args.window))
    if args.full:
        sizes = dict(FULL)
    rate = parse_byte_rate(args.consume_rate)
    if rate is None:
        raise InputError("--consume-rate must be a finite rate, e.g. 2GB/s")
    costs = CpuCosts(
        read_s=parse_duration(args.cost_read),
        frame_s=parse_duration(args.cost_frame),
        dispatch_s=parse_duration(args.cost_dispatch),
        wakeup_s=parse_duration(args.cost_wakeup),
        copy_bytes_per_s=parse_byte_rate(args.copy_rate) or 0.0,
        consume_bytes_per_s=rate,
    )
    return DemuxParams(
        **sizes,
        frame_bytes=parse_size(args.frame),
        read_bytes=parse_size(args.read),
        side_bytes=parse_size(args.side),
        interleavings=comma_list(args.interleaving),
        strategies=comma_list(args.strategy),
        reading=args.reading,
        work=args.work,
        part=args.part,
        scanners=comma_list(args.scanner),
        repeat=int(args.repeat),
        trace_memory=bool(args.memory),
        rtts_s=tuple(parse_duration(r) for r in comma_list(args.rtt)),
        mss_bytes=int(args.mss),
        costs=costs,
        **network_from_args(args),
    )


def _cmd(args: argparse.Namespace) -> int:
    params = params_from_args(args)
    result = run(None, params, progress=not args.json and sys.stderr.isatty())
    if args.rows:
        from ...outfiles import write_output

        write_output(args.rows, result.summary.to_csv(index=False).encode("utf-8"))
    if args.json:
        print(result.to_json())
        return 0
    print(
        f"{params.streams} streams x {params.stream_bytes:,} B, window {params.window_bytes:,} B "
        f"(all windows {params.streams * params.window_bytes:,} B), frames {params.frame_bytes:,} B, "
        f"reads {params.read_bytes:,} B, {params.reading} reading, work {params.work}, seed {params.seed}"
    )
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        if len(result.real):
            print("\nmeasured on this machine (CPU time of the receive loop, best of %d):" % params.repeat)
            cols = [
                "scanner",
                "interleaving",
                "strategy",
                "throughput_mb_s",
                "throughput_ratio_vs_direct",
                "peak_buffered_bytes",
                "copied_bytes_per_mb",
                "scanner_allocations_per_mb",
                "py_heap_peak_bytes",
                "wakeups_per_frame",
                "dispatches_per_frame",
            ]
            print(result.real[cols].to_string(index=False))
        if len(result.model):
            print("\nmodel over the TCP model (virtual time, deterministic):")
            cols = [
                "rtt_s",
                "interleaving",
                "strategy",
                "completion_s",
                "completion_ratio_vs_direct",
                "window_stall_s",
                "receiver_busy_share",
                "peak_buffered_bytes",
                "wakeups_per_frame",
                "dispatches_per_frame",
            ]
            cols = [c for c in cols if c in result.model.columns]
            print(result.model[cols].to_string(index=False))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The study's flags: the command line's, and the batch grid's parameters."""
    p.add_argument("--streams", type=argtypes.count(1, 10_000), default=8, help="parallel responses on the connection")
    p.add_argument("--size", type=argtypes.positive_size, default="4MiB", help="bytes per response body")
    p.add_argument(
        "--window",
        type=argtypes.positive_size,
        default="1MiB",
        help="per-stream flow-control window (SETTINGS_INITIAL_WINDOW_SIZE)",
    )
    p.add_argument("--full", action="store_true", help="the reference case: 50 x 100 MB, 10 MB window (slow)")
    p.add_argument("--frame", type=argtypes.positive_size, default="16KiB", help="the server's DATA frame payload")
    p.add_argument("--read", type=argtypes.positive_size, default="64KiB", help="bytes per recv")
    p.add_argument("--side", type=argtypes.positive_size, default="64KiB", help="side-track area")
    p.add_argument(
        "--interleaving",
        type=argtypes.names(INTERLEAVINGS, "interleaving"),
        default=",".join(INTERLEAVINGS),
        help="comma-separated: " + ",".join(INTERLEAVINGS),
    )
    p.add_argument(
        "--strategy",
        type=argtypes.names(RECEIVERS, "strategy"),
        default=",".join(STRATEGIES),
        help="comma-separated: " + ",".join(RECEIVERS),
    )
    p.add_argument(
        "--reading",
        default="eager",
        choices=list(READING),
        help="eager: read until the socket is empty; paced: one read per wakeup",
    )
    p.add_argument("--work", default="count", choices=list(WORK), help="the application's work per byte")
    p.add_argument(
        "--part",
        default="both",
        choices=list(PARTS),
        help="real: measured on this machine; model: over the TCP model (deterministic)",
    )
    p.add_argument(
        "--scanner", type=argtypes.names(SCANNERS, "scanner"), default="c", help="real part: c, python or c,python"
    )
    p.add_argument("--repeat", type=argtypes.count(1, 1000), default=3, help="real part: best of N runs")
    p.add_argument("--memory", action="store_true", help="real part: Python heap peak under tracemalloc (slower)")
    p.add_argument(
        "--rtt", type=argtypes.durations, default="1ms,10ms,50ms", help="model: comma-separated RTTs (at most 100)"
    )
    add_network_flags(p, bw="10gbit", loss="0", seed=1)
    p.add_argument(
        "--mss", type=argtypes.count(1), default=64000, help="model: TCP segment payload (loopback-sized by default)"
    )
    p.add_argument(
        "--consume-rate", type=argtypes.byte_rate, default="2GB/s", help="model: the application's bytes per second"
    )
    p.add_argument(
        "--copy-rate", type=argtypes.byte_rate, default="5GB/s", help="model: bytes copied into a buffer per second"
    )
    p.add_argument("--cost-read", type=argtypes.duration, default="2us", help="model: CPU per recv")
    p.add_argument("--cost-frame", type=argtypes.duration, default="0.1us", help="model: CPU per frame scanned")
    p.add_argument(
        "--cost-dispatch", type=argtypes.duration, default="0.5us", help="model: CPU per hand-off to a consumer"
    )
    p.add_argument("--cost-wakeup", type=argtypes.duration, default="5us", help="model: CPU per event-loop turn")
    p.add_argument("--rows", type=argtypes.output_file, metavar="CSV", help="also write the rows to CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")


STUDY = Study(
    name="demux",
    help="HTTP/2 receive-side demultiplexing: stop-the-train, side track, per-stream buffers, direct dispatch",
    add_arguments=add_arguments,
    params_from_args=params_from_args,
    run=run,
    command=_cmd,
    input="none",
    cli_only=frozenset({"rows", "part", "scanner", "repeat", "memory"}),
)
