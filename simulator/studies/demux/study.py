"""The demux study: its parameters, the two parts of ``run`` (``real``: measured on this
machine; ``model``: over the TCP model, deterministic) and their rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import pandas as pd

from ... import __version__
from ...errors import InputError
from ..base import StudyParams, StudyResult, records, steps
from .model import CpuCosts
from .receivers import READING, RECEIVERS, STRATEGIES, WORK
from .server import INTERLEAVINGS

__all__ = [
    "DemuxParams",
    "DemuxResult",
    "run",
    "STRATEGIES",
    "INTERLEAVINGS",
    "PARTS",
    "SCANNERS",
    "FULL",
    "ROW_PARAMS",
]

PARTS = ("real", "model", "both")
SCANNERS = ("c", "python")
MAX_WINDOW = 2**31 - 1  # RFC 9113 section 6.9.1
# A sweep's RTTs: each is one model run per interleaving and strategy (12 at the defaults,
# about 1 s of CPU at the default sizes), so a list of thousands is hours of work, refused
# before any of it (issue 33: limits that say what they are).
MAX_RTTS = 100
FULL = dict(streams=50, stream_bytes=100_000_000, window_bytes=10_000_000)  # the reference case
# Each CPU cost's flag, for a refusal that names it.
_COST_FLAGS = {
    "read_s": "--cost-read",
    "frame_s": "--cost-frame",
    "dispatch_s": "--cost-dispatch",
    "wakeup_s": "--cost-wakeup",
    "copy_bytes_per_s": "--copy-rate",
    "consume_bytes_per_s": "--consume-rate",
}


@dataclass(frozen=True)
class DemuxParams(StudyParams):
    """Everything that determines a run.  Units are in the names."""

    streams: int = 8
    stream_bytes: int = 4 * 1024 * 1024
    window_bytes: int = 1024 * 1024  # SETTINGS_INITIAL_WINDOW_SIZE; connection window N x this
    frame_bytes: int = 16384  # the server's DATA payload per frame
    read_bytes: int = 65536  # one recv
    side_bytes: int = 65536  # side-track area
    interleavings: tuple[str, ...] = INTERLEAVINGS
    strategies: tuple[str, ...] = STRATEGIES
    reading: str = "eager"
    work: str = "count"
    part: str = "both"
    scanners: tuple[str, ...] = ("c",)  # real part: which frame scanner(s)
    repeat: int = 3  # real part: best of N (interleaved)
    trace_memory: bool = False  # real part: one more run under tracemalloc
    rtts_s: tuple[float, ...] = (0.001, 0.01, 0.05)
    bandwidth_bps: float | None = 10e9
    loss: str = "0"
    mss_bytes: int = 64000  # loopback-sized segments: the server is on the same host
    costs: CpuCosts = field(default_factory=CpuCosts)
    seed: int = 1

    # Batch runs are deterministic: the model part only; the real part's settings shape no batch row.
    BATCH_FIXED = {"part": "model"}
    BATCH_DROPPED = ("scanners", "repeat", "trace_memory")

    def __post_init__(self) -> None:
        super().__post_init__()

        def bad(message: str) -> None:
            raise InputError(message)

        for name, values, known in (
            ("interleaving", self.interleavings, INTERLEAVINGS),
            ("strategy", self.strategies, tuple(RECEIVERS)),
            ("scanner", self.scanners, SCANNERS),
        ):
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
            bad(
                f"streams x window must fit the connection window ({MAX_WINDOW} bytes, RFC 9113 section 6.9.1), "
                f"got {self.streams} x {self.window_bytes}"
            )
        if not 16384 <= self.frame_bytes <= (1 << 24) - 1:
            bad(
                f"--frame must be 16384..16777215 bytes (SETTINGS_MAX_FRAME_SIZE, RFC 9113 section 6.5.2), "
                f"got {self.frame_bytes}"
            )
        if self.read_bytes < 9:
            bad(f"--read must be at least 9 bytes (one frame header), got {self.read_bytes}")
        if self.side_bytes < self.frame_bytes:
            bad(f"--side must hold at least one frame ({self.frame_bytes} bytes), got {self.side_bytes}")
        if self.repeat < 1:
            bad(f"--repeat must be at least 1, got {self.repeat}")
        if not self.rtts_s or any(r <= 0 for r in self.rtts_s):
            bad("RTTs must be above 0")
        if len(self.rtts_s) > MAX_RTTS:
            bad(
                f"--rtt takes at most {MAX_RTTS} RTTs (each one a model run per interleaving and strategy), "
                f"got {len(self.rtts_s):,}"
            )
        if not 536 <= self.mss_bytes <= 65495:
            bad(f"--mss must be 536..65495 bytes, got {self.mss_bytes}")
        for k, v in asdict(self.costs).items():
            if not v > 0:
                bad(f"the CPU cost ({_COST_FLAGS.get(k, k)}, {k}) must be above 0, got {v:g}")

    def to_dict(self) -> dict:
        """The parameters, with each CPU cost flattened into a ``cost_<name>`` entry."""
        d = super().to_dict()
        d.pop("costs")
        d.update({f"cost_{k}": v for k, v in self.costs.to_dict().items()})
        return d


@dataclass
class DemuxResult(StudyResult):
    """``real``: one row per (scanner, interleaving, strategy), measured on this machine;
    ``model``: one row per (rtt, interleaving, strategy), deterministic; ``summary``:
    both, with a ``part`` column."""

    real: pd.DataFrame
    model: pd.DataFrame
    summary: pd.DataFrame
    params: dict

    def to_dict(self) -> dict:
        """The summary rows and the parameters."""
        return {"rows": records(self.summary), "params": self.params}

    def tables(self) -> dict[str, pd.DataFrame]:
        """Only the deterministic model rows (a batch runs the model), without the columns the batch adds."""
        # Batch runs are the model part; the batch adds every parameter to each row.
        return {"summary": self.model.drop(columns=[c for c in ROW_PARAMS if c in self.model])}


_ROW_PARAMS = (
    "streams",
    "stream_bytes",
    "window_bytes",
    "frame_bytes",
    "read_bytes",
    "side_bytes",
    "reading",
    "work",
    "seed",
)
ROW_PARAMS = _ROW_PARAMS + ("bandwidth_bps", "loss", "mss_bytes")  # every row carries these


def _cfg(params: DemuxParams, interleaving: str) -> dict:
    return dict(
        streams=params.streams,
        stream_bytes=params.stream_bytes,
        window_bytes=params.window_bytes,
        interleaving=interleaving,
        frame_bytes=params.frame_bytes,
        read_bytes=params.read_bytes,
        side_bytes=params.side_bytes,
        reading=params.reading,
        work=params.work,
    )


def _per_frame(row: dict) -> None:
    frames = max(row["data_frames"], 1)
    mb = row["bytes"] / 1e6
    row["wakeups_per_frame"] = row["wakeups"] / frames
    row["dispatches_per_frame"] = row["dispatches"] / frames
    row["copied_bytes_per_mb"] = row["copied_bytes"] / mb


def _real_rows(params: DemuxParams, progress: bool) -> list[dict]:
    from ...frames import implementations
    from . import real

    impls = implementations()
    for name in params.scanners:
        if name not in impls:
            raise InputError(
                f"the {name} frame scanner is not available here (built: {', '.join(sorted(impls))}); "
                f"use --scanner {','.join(sorted(impls))}"
            )
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
            for strategy in params.strategies:  # interleaved: drift hits every strategy alike
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
            row = {
                "part": "real",
                "measured": "this machine (CPU time)",
                "scanner": scanner,
                "interleaving": interleaving,
                "strategy": strategy,
                "rtt_s": None,
                **r,
                "scanner_allocations_per_mb": r["scanner_allocations"] / mb,
                "throughput_ratio_vs_direct": (r["throughput_mb_s"] / direct["throughput_mb_s"]) if direct else None,
                "repeat": params.repeat,
            }
            if row.get("py_heap_peak_bytes") is None:
                row["py_heap_peak_bytes"] = None
            _per_frame(row)
            rows.append(row)
    if bar is not None:
        bar.close()
    return rows


def _model_rows(params: DemuxParams, progress: bool) -> list[dict]:
    from ...frames import get_implementation
    from . import model

    impl = get_implementation()  # the counters, hence the model, are the same with either scanner
    jobs = [(rtt, il, s) for rtt in params.rtts_s for il in params.interleavings for s in params.strategies]
    rows = []
    for rtt, interleaving, strategy in steps(jobs, "model runs", progress):
        r = model.simulate(
            strategy,
            _cfg(params, interleaving),
            impl,
            network=params.network,
            rtt_s=rtt,
            mss_bytes=params.mss_bytes,
            costs=params.costs,
        )
        row = {
            "part": "model",
            "measured": "model (virtual time)",
            "scanner": None,
            "interleaving": interleaving,
            "strategy": strategy,
            "rtt_s": rtt,
            **r,
        }
        _per_frame(row)
        rows.append(row)
    df = pd.DataFrame(rows)
    if "direct" in params.strategies:
        ref = df[df["strategy"] == "direct"].set_index(["rtt_s", "interleaving"])["completion_s"]
        df["completion_ratio_vs_direct"] = [
            c / ref[(r, i)] for c, r, i in zip(df["completion_s"], df["rtt_s"], df["interleaving"])
        ]
    return df.to_dict(orient="records")


def run(trace=None, params: DemuxParams | None = None, *, progress: bool = False) -> DemuxResult:
    """Every interleaving x strategy, measured (``real``), simulated (``model``) or both.
    The study makes its own input (an h2 server's byte stream): ``trace`` is None."""
    params = params or DemuxParams()
    real_rows = _real_rows(params, progress) if params.part in ("real", "both") else []
    model_rows = _model_rows(params, progress) if params.part in ("model", "both") else []
    pdict = params.to_dict()
    windows = params.streams * params.window_bytes
    frames = []
    for rows in (real_rows, model_rows):
        df = pd.DataFrame(rows)
        if len(df):
            df["windows_bytes"] = windows  # all the windows allow: RFC 9113 section 6.9
            for k in _ROW_PARAMS:
                df[k] = pdict[k]
            if rows is model_rows:
                df["bandwidth_bps"] = params.bandwidth_bps
                df["loss"] = params.loss
                df["mss_bytes"] = params.mss_bytes
        frames.append(df)
    real_df, model_df = frames
    summary = (
        pd.concat([f for f in frames if len(f)], ignore_index=True) if any(len(f) for f in frames) else pd.DataFrame()
    )
    return DemuxResult(real=real_df, model=model_df, summary=summary, params={**pdict, "version": __version__})
