"""HTTP/2 receive-side demultiplexing.

The question: how should a single-threaded HTTP/2 client hand each DATA frame to its
stream's consumer when it downloads many large responses in parallel over one
connection?  The reference case is libcurl's: 50 downloads of 100 MB each from a server
on the same host.  Earlier designs stopped reading at a frame of a stream that was not
being serviced ("stop the train"), parked such frames in a small side area, or copied
them into per-stream receive buffers that could grow to the whole flow-control window
(about 500 MB: a 10 MB window x 50 streams); dispatching every frame directly to its
stream's consumer, as curl's reworked HTTP/2 receive path does (2024: DATA frames go
straight to the transfer, no buffering), held about 12 MB and more than doubled the throughput.  Which
design buffers how much depends on the server: one sends long runs of one stream,
another interleaves finely.  Work per frame counts too: removing small allocations from
curl's transfer loop cut a 512 MB download from 33,961 allocations to 129 and raised
localhost throughput about 30% (2.2 to 2.9 GB/s; D. Stenberg, "Fewer mallocs in curl",
April 2017).

A single-threaded client downloads N responses of S bytes over one HTTP/2 connection
with a per-stream flow-control window W (its SETTINGS_INITIAL_WINDOW_SIZE; the
connection window is N x W).  The server is a real ``h2`` server connection whose
frame interleaving is a parameter (``h2demux.server``: ``runs`` of a whole window per
stream, ``round-robin`` one DATA frame per stream in turn, ``h2`` the event-driven loop
of h2's documentation).  Four receivers (``h2demux.receivers``), all reading frames with
the project's frame scanner (C, or its pure-Python twin): ``stop-the-train``,
``side-track``, ``per-stream`` buffers and ``direct`` dispatch.  The application takes
every stream's bytes (``work``: count them, or CRC-32 them), and the receiver returns
the windows with WINDOW_UPDATEs as it consumes (h2's own algorithm, RFC 9113 section
6.9), so the server only sends what the windows allow.

Two parts, one ``run()``:

- ``real`` (measured on this machine: the CPU time of the receive loop): each receiver reads a real socket
  fed by the h2 server (``h2demux.real``); throughput in MB/s of this machine and as a
  ratio to ``direct`` in the same run (best of ``repeat`` runs, interleaved), peak
  payload bytes buffered, bytes copied per MB, the C scanner's heap allocations
  (``scanner_allocations``), the Python heap peak under ``tracemalloc``
  (``trace_memory``), wakeups and dispatches per DATA frame;
- ``model`` (deterministic, seeded): the same receivers over the TCP model with a CPU
  cost per operation (``h2demux.model``), for each RTT: completion time, the time the
  server sat with no window (flow-control stalls: a WINDOW_UPDATE needs half an RTT to
  reach it), the receiver's busy share, and the same counters.

What it shows: with ``reading="eager"`` (a loop that reads until the socket is empty
while a same-host server keeps it full) per-stream buffers grow to N x W, all the
windows allow, while direct dispatch holds one read buffer; stop-the-train costs a
wakeup and a dispatch per change of stream, nothing on long runs and one per frame on
round-robin, so the ranking moves with the interleaving.

``--full`` is the reference case: 50 x 100 MB with a 10 MB window.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field, replace

import pandas as pd

from .. import __version__, argtypes
from ..errors import InputError
from ..units import parse_bandwidth, parse_byte_rate, parse_duration, parse_size
from .h2demux.model import CpuCosts
from .h2demux.receivers import READING, STRATEGIES, WORK
from .h2demux.server import INTERLEAVINGS
from .summary_json import jsonable

__all__ = ["DemuxParams", "DemuxResult", "run", "STRATEGIES", "INTERLEAVINGS", "PARTS", "FULL"]

PARTS = ("real", "model", "both")
SCANNERS = ("c", "python")
MAX_WINDOW = 2**31 - 1                      # RFC 9113 section 6.9.1
FULL = dict(streams=50, stream_bytes=100_000_000, window_bytes=10_000_000)   # the reference case


@dataclass(frozen=True)
class DemuxParams:
    """Everything that determines a run.  Units are in the names."""

    streams: int = 8
    stream_bytes: int = 4 * 1024 * 1024
    window_bytes: int = 1024 * 1024           # SETTINGS_INITIAL_WINDOW_SIZE; connection window N x this
    frame_bytes: int = 16384                  # the server's DATA payload per frame
    read_bytes: int = 65536                   # one recv
    side_bytes: int = 65536                   # side-track area
    interleavings: tuple[str, ...] = INTERLEAVINGS
    strategies: tuple[str, ...] = STRATEGIES
    reading: str = "eager"
    work: str = "count"
    part: str = "both"
    scanners: tuple[str, ...] = ("c",)        # real part: which frame scanner(s)
    repeat: int = 3                           # real part: best of N (interleaved)
    trace_memory: bool = False                # real part: one more run under tracemalloc
    rtts_s: tuple[float, ...] = (0.001, 0.01, 0.05)
    bandwidth_bps: float | None = 10e9
    loss: str = "0"
    mss_bytes: int = 64000                    # loopback-sized segments: the server is on the same host
    costs: CpuCosts = field(default_factory=CpuCosts)
    seed: int = 1

    def __post_init__(self) -> None:
        def bad(message: str) -> None:
            raise InputError(message)

        for name, values, known in (("interleaving", self.interleavings, INTERLEAVINGS),
                                    ("strategy", self.strategies, STRATEGIES), ("scanner", self.scanners, SCANNERS)):
            if not values:
                bad(f"give at least one {name}")
            for v in values:
                if v not in known:
                    bad(f"unknown {name} {v!r} (choose from {', '.join(known)})")
        if self.reading not in READING:
            bad(f"unknown reading {self.reading!r} (choose from {', '.join(READING)})")
        if self.work not in WORK:
            bad(f"unknown work {self.work!r} (choose from {', '.join(WORK)})")
        if self.part not in PARTS:
            bad(f"unknown part {self.part!r} (choose from {', '.join(PARTS)})")
        if self.streams < 1:
            bad(f"--streams must be at least 1, got {self.streams}")
        if self.stream_bytes < 1:
            bad(f"--size must be at least 1 byte, got {self.stream_bytes}")
        if not 1 <= self.window_bytes <= MAX_WINDOW:
            bad(f"--window must be 1..{MAX_WINDOW} bytes (RFC 9113 section 6.9.1), got {self.window_bytes}")
        if self.window_bytes * self.streams > MAX_WINDOW:
            bad(f"streams x window must fit the connection window ({MAX_WINDOW} bytes, RFC 9113 section 6.9.1), "
                f"got {self.streams} x {self.window_bytes}")
        if not 16384 <= self.frame_bytes <= (1 << 24) - 1:
            bad(f"--frame must be 16384..16777215 bytes (SETTINGS_MAX_FRAME_SIZE, RFC 9113 section 6.5.2), "
                f"got {self.frame_bytes}")
        if self.read_bytes < 9:
            bad(f"--read must be at least 9 bytes (one frame header), got {self.read_bytes}")
        if self.side_bytes < self.frame_bytes:
            bad(f"--side must hold at least one frame ({self.frame_bytes} bytes), got {self.side_bytes}")
        if self.repeat < 1:
            bad(f"--repeat must be at least 1, got {self.repeat}")
        if not self.rtts_s or any(r <= 0 for r in self.rtts_s):
            bad("RTTs must be above 0")
        if self.bandwidth_bps is not None and self.bandwidth_bps <= 0:
            bad(f"bandwidth must be above 0, got {self.bandwidth_bps}")
        if not 536 <= self.mss_bytes <= 65495:
            bad(f"--mss must be 536..65495 bytes, got {self.mss_bytes}")
        for k, v in asdict(self.costs).items():
            if not v > 0:
                bad(f"CPU cost {k} must be above 0, got {v}")
        from ..net.link import parse_loss
        import random
        parse_loss(self.loss, random.Random(0))          # a bad loss spec fails here, before any work

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("interleavings", "strategies", "scanners"):
            d[k] = ",".join(d[k])
        d["rtts_s"] = ",".join(repr(r) for r in self.rtts_s)
        d.pop("costs")
        d.update({f"cost_{k}": v for k, v in self.costs.to_dict().items()})
        return d


@dataclass
class DemuxResult:
    """``real``: one row per (scanner, interleaving, strategy), measured on this machine;
    ``model``: one row per (rtt, interleaving, strategy), deterministic; ``summary``:
    both, with a ``part`` column."""

    real: pd.DataFrame
    model: pd.DataFrame
    summary: pd.DataFrame
    params: dict

    def to_dict(self) -> dict:
        return {"rows": [{k: jsonable(v) for k, v in r.items()} for r in self.summary.to_dict(orient="records")],
                "params": self.params}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


_ROW_PARAMS = ("streams", "stream_bytes", "window_bytes", "frame_bytes", "read_bytes", "side_bytes", "reading", "work",
               "seed")
ROW_PARAMS = _ROW_PARAMS + ("bandwidth_bps", "loss", "mss_bytes")      # every row carries these


def _cfg(params: DemuxParams, interleaving: str) -> dict:
    return dict(streams=params.streams, stream_bytes=params.stream_bytes, window_bytes=params.window_bytes,
                interleaving=interleaving, frame_bytes=params.frame_bytes, read_bytes=params.read_bytes,
                side_bytes=params.side_bytes, reading=params.reading, work=params.work)


def _per_frame(row: dict) -> None:
    frames = max(row["data_frames"], 1)
    mb = row["bytes"] / 1e6
    row["wakeups_per_frame"] = row["wakeups"] / frames
    row["dispatches_per_frame"] = row["dispatches"] / frames
    row["copied_bytes_per_mb"] = row["copied_bytes"] / mb


def _real_rows(params: DemuxParams, progress: bool) -> list[dict]:
    from ..frames import implementations
    from .h2demux import real

    impls = implementations()
    for name in params.scanners:
        if name not in impls:
            raise InputError(f"the {name} frame scanner is not available here (built: {', '.join(sorted(impls))}); "
                             f"use --scanner {','.join(sorted(impls))}")
    jobs = [(s, il) for s in params.scanners for il in params.interleavings]
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(jobs) * params.repeat * len(params.strategies), desc="real runs", leave=False)
    rows = []
    for scanner, interleaving in jobs:
        impl = impls[scanner]
        cfg = _cfg(params, interleaving)
        best: dict[str, dict] = {}
        for rep in range(params.repeat):
            for strategy in params.strategies:      # interleaved: drift hits every strategy alike
                r = real.measure(strategy, cfg, impl, trace_memory=params.trace_memory and rep == 0)
                if strategy not in best or r["receiver_s"] < best[strategy]["receiver_s"]:
                    heap = best.get(strategy, {}).get("py_heap_peak_bytes", r.get("py_heap_peak_bytes"))
                    best[strategy] = {**r, "py_heap_peak_bytes": heap}
                if bar is not None:
                    bar.update()
        direct = best.get("direct")
        for strategy in params.strategies:
            r = best[strategy]
            mb = r["bytes"] / 1e6
            row = {"part": "real", "measured": "this machine (CPU time)", "scanner": scanner,
                   "interleaving": interleaving, "strategy": strategy, "rtt_s": None, **r,
                   "scanner_allocations_per_mb": r["scanner_allocations"] / mb,
                   "throughput_ratio_vs_direct": (r["throughput_mb_s"] / direct["throughput_mb_s"]) if direct else None,
                   "repeat": params.repeat}
            if row.get("py_heap_peak_bytes") is None:
                row["py_heap_peak_bytes"] = None
            _per_frame(row)
            rows.append(row)
    if bar is not None:
        bar.close()
    return rows


def _model_rows(params: DemuxParams, progress: bool) -> list[dict]:
    from ..frames import get_implementation
    from .h2demux import model

    impl = get_implementation()       # the counters, hence the model, are the same with either scanner
    jobs = [(rtt, il, s) for rtt in params.rtts_s for il in params.interleavings for s in params.strategies]
    iterator = jobs
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(jobs, desc="model runs", leave=False)
    rows = []
    for rtt, interleaving, strategy in iterator:
        r = model.simulate(strategy, _cfg(params, interleaving), impl, rtt_s=rtt, bandwidth_bps=params.bandwidth_bps,
                           loss=params.loss, mss_bytes=params.mss_bytes, costs=params.costs, seed=params.seed)
        row = {"part": "model", "measured": "model (virtual time)", "scanner": None, "interleaving": interleaving,
               "strategy": strategy, "rtt_s": rtt, **r}
        _per_frame(row)
        rows.append(row)
    df = pd.DataFrame(rows)
    if "direct" in params.strategies:
        ref = df[df["strategy"] == "direct"].set_index(["rtt_s", "interleaving"])["completion_s"]
        df["completion_ratio_vs_direct"] = [c / ref[(r, i)] for c, r, i in
                                            zip(df["completion_s"], df["rtt_s"], df["interleaving"])]
    return df.to_dict(orient="records")


def run(trace=None, params: DemuxParams | None = None, *, progress: bool = False) -> DemuxResult:
    """Every interleaving x strategy, measured (``real``), simulated (``model``) or both.
    ``trace`` is not used (the study makes its own byte stream); it is accepted so the
    batch runner can call every study alike."""
    params = params or DemuxParams()
    real_rows = _real_rows(params, progress) if params.part in ("real", "both") else []
    model_rows = _model_rows(params, progress) if params.part in ("model", "both") else []
    pdict = params.to_dict()
    windows = params.streams * params.window_bytes
    frames = []
    for rows in (real_rows, model_rows):
        df = pd.DataFrame(rows)
        if len(df):
            df["windows_bytes"] = windows          # all the windows allow: RFC 9113 section 6.9
            for k in _ROW_PARAMS:
                df[k] = pdict[k]
            if rows is model_rows:
                df["bandwidth_bps"] = params.bandwidth_bps
                df["loss"] = params.loss
                df["mss_bytes"] = params.mss_bytes
        frames.append(df)
    real_df, model_df = frames
    summary = pd.concat([f for f in frames if len(f)], ignore_index=True) if any(len(f) for f in frames) \
        else pd.DataFrame()
    return DemuxResult(real=real_df, model=model_df, summary=summary, params={**pdict, "version": __version__})


# ---------------------------------------------------------------------------------------
# CLI


def _list(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in str(text).split(",") if s.strip())


def _int(flag: str, text) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        raise InputError(f"{flag} must be an integer, got {text!r}") from None


def params_from_args(args: argparse.Namespace) -> DemuxParams:
    sizes = dict(streams=_int("--streams", args.streams), stream_bytes=parse_size(args.size),
                 window_bytes=parse_size(args.window))
    if args.full:
        sizes = dict(FULL)
    rate = parse_byte_rate(args.consume_rate)
    if rate is None:
        raise InputError("--consume-rate must be a finite rate, e.g. 2GB/s")
    costs = CpuCosts(read_s=parse_duration(args.cost_read), frame_s=parse_duration(args.cost_frame),
                     dispatch_s=parse_duration(args.cost_dispatch), wakeup_s=parse_duration(args.cost_wakeup),
                     copy_bytes_per_s=parse_byte_rate(args.copy_rate) or 0.0, consume_bytes_per_s=rate)
    return DemuxParams(
        **sizes, frame_bytes=parse_size(args.frame), read_bytes=parse_size(args.read), side_bytes=parse_size(args.side),
        interleavings=_list(args.interleaving), strategies=_list(args.strategy), reading=args.reading, work=args.work,
        part=args.part, scanners=_list(args.scanner), repeat=_int("--repeat", args.repeat),
        trace_memory=bool(args.memory), rtts_s=tuple(parse_duration(r) for r in _list(args.rtt)),
        bandwidth_bps=parse_bandwidth(args.bw), loss=str(args.loss), mss_bytes=_int("--mss", args.mss), costs=costs,
        seed=_int("--seed", args.seed),
    )


def _cmd(args: argparse.Namespace) -> int:
    params = params_from_args(args)
    result = run(None, params, progress=not args.json and sys.stderr.isatty())
    if args.rows:
        result.summary.to_csv(args.rows, index=False)
    if args.json:
        print(result.to_json())
        return 0
    print(f"{params.streams} streams x {params.stream_bytes:,} B, window {params.window_bytes:,} B "
          f"(all windows {params.streams * params.window_bytes:,} B), frames {params.frame_bytes:,} B, "
          f"reads {params.read_bytes:,} B, {params.reading} reading, work {params.work}, seed {params.seed}")
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        if len(result.real):
            print("\nmeasured on this machine (CPU time of the receive loop, best of %d):" % params.repeat)
            cols = ["scanner", "interleaving", "strategy", "throughput_mb_s", "throughput_ratio_vs_direct",
                    "peak_buffered_bytes", "copied_bytes_per_mb", "scanner_allocations_per_mb", "py_heap_peak_bytes",
                    "wakeups_per_frame", "dispatches_per_frame"]
            print(result.real[cols].to_string(index=False))
        if len(result.model):
            print("\nmodel over the TCP model (virtual time, deterministic):")
            cols = ["rtt_s", "interleaving", "strategy", "completion_s", "completion_ratio_vs_direct",
                    "window_stall_s", "receiver_busy_share", "peak_buffered_bytes", "wakeups_per_frame",
                    "dispatches_per_frame"]
            cols = [c for c in cols if c in result.model.columns]
            print(result.model[cols].to_string(index=False))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--streams", type=argtypes.count(1), default=8, help="parallel responses on the connection")
    p.add_argument("--size", type=argtypes.positive_size, default="4MiB", help="bytes per response body")
    p.add_argument("--window", type=argtypes.positive_size, default="1MiB",
                   help="per-stream flow-control window (SETTINGS_INITIAL_WINDOW_SIZE)")
    p.add_argument("--full", action="store_true", help="the reference case: 50 x 100 MB, 10 MB window (slow)")
    p.add_argument("--frame", type=argtypes.positive_size, default="16KiB", help="the server's DATA frame payload")
    p.add_argument("--read", type=argtypes.positive_size, default="64KiB", help="bytes per recv")
    p.add_argument("--side", type=argtypes.positive_size, default="64KiB", help="side-track area")
    p.add_argument("--interleaving", type=argtypes.names(INTERLEAVINGS, "interleaving"),
                   default=",".join(INTERLEAVINGS),
                   help="comma-separated: " + ",".join(INTERLEAVINGS))
    p.add_argument("--strategy", type=argtypes.names(STRATEGIES, "strategy"), default=",".join(STRATEGIES),
                   help="comma-separated: " + ",".join(STRATEGIES))
    p.add_argument("--reading", default="eager", choices=list(READING),
                   help="eager: read until the socket is empty; paced: one read per wakeup")
    p.add_argument("--work", default="count", choices=list(WORK), help="the application's work per byte")
    p.add_argument("--part", default="both", choices=list(PARTS),
                   help="real: measured on this machine; model: over the TCP model (deterministic)")
    p.add_argument("--scanner", type=argtypes.names(SCANNERS, "scanner"), default="c",
                   help="real part: c, python or c,python")
    p.add_argument("--repeat", type=argtypes.count(1), default=3, help="real part: best of N runs")
    p.add_argument("--memory", action="store_true", help="real part: Python heap peak under tracemalloc (slower)")
    p.add_argument("--rtt", type=argtypes.durations, default="1ms,10ms,50ms", help="model: comma-separated RTTs")
    p.add_argument("--bw", type=argtypes.bandwidth, default="10gbit",
                   help="model: bottleneck bandwidth (none = unlimited)")
    p.add_argument("--loss", type=argtypes.loss, default="0", help="model: 0.01 (Bernoulli) or ge:P,R[,h,k]")
    p.add_argument("--mss", type=argtypes.count(1), default=64000,
                   help="model: TCP segment payload (loopback-sized by default)")
    p.add_argument("--consume-rate", type=argtypes.byte_rate, default="2GB/s",
                   help="model: the application's bytes per second")
    p.add_argument("--copy-rate", type=argtypes.byte_rate, default="5GB/s",
                   help="model: bytes copied into a buffer per second")
    p.add_argument("--cost-read", type=argtypes.duration, default="2us", help="model: CPU per recv")
    p.add_argument("--cost-frame", type=argtypes.duration, default="0.1us", help="model: CPU per frame scanned")
    p.add_argument("--cost-dispatch", type=argtypes.duration, default="0.5us",
                   help="model: CPU per hand-off to a consumer")
    p.add_argument("--cost-wakeup", type=argtypes.duration, default="5us", help="model: CPU per event-loop turn")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rows", type=argtypes.output_file, metavar="CSV", help="also write the rows to CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_commands(sub) -> None:
    p = sub.add_parser("demux", help="HTTP/2 receive-side demultiplexing: stop-the-train, side track, "
                                     "per-stream buffers, direct dispatch")
    add_arguments(p)
    p.set_defaults(func=_cmd)


def with_seed(params: DemuxParams, seed: int) -> DemuxParams:
    return replace(params, seed=int(seed))
