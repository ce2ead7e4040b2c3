"""The HOL study: its parameters, the schedule of header lists, ``run`` and its summary."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ... import __version__
from ...errors import InputError
from ...net.link import Jitter
from ...traces.model import Trace
from ..base import StudyParams, StudyResult, rows_by_index, steps
from .model import HeaderItem, SchemeRun

__all__ = [
    "HolParams",
    "HolResult",
    "run",
    "resolve_direction",
    "schedule",
    "SCHEMES",
    "schemes",
    "DIRECTIONS",
    "TRANSPORTS",
]

SCHEMES = ("hpack", "qpack", "qcram", "qcram-blocking")


def schemes() -> tuple[str, ...]:
    """The schemes this study runs: the built-in ones and every scheme added to ``compression``."""
    from ...compression import ADDED_SCHEMES

    return SCHEMES + tuple(ADDED_SCHEMES)


DIRECTIONS = ("auto", "requests", "responses", "both")
# quic and tcp: the transport models; ref2017: the 2017 simulator's own network model.
TRANSPORTS = ("quic", "tcp", "ref2017")
# Parameters every per-block row carries (``blocks``).
ROW_PARAMS = (
    "transport",
    "rtt_s",
    "bandwidth_bps",
    "loss",
    "table_bytes",
    "max_blocked",
    "direction",
    "seed",
    "spacing_s",
)


@dataclass(frozen=True)
class HolParams(StudyParams):
    """Everything that determines a run.  Units are in the names."""

    schemes: tuple[str, ...] = ("hpack", "qpack", "qcram")
    transport: str = "quic"
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"  # "0.01" Bernoulli, "ge:P,R[,h,k]" Gilbert-Elliott
    table_bytes: int = 4096  # dynamic table capacity (SETTINGS_QPACK_MAX_TABLE_CAPACITY)
    max_blocked: int = 100  # SETTINGS_QPACK_BLOCKED_STREAMS (2017 default 100)
    direction: str = "auto"  # auto: what the trace holds (requests, responses or both)
    seed: int = 1
    spacing_s: float = 0.010  # untimed traces: request i starts at i * spacing_s
    max_idle_s: float = 1.0  # timed traces: idle gaps capped (2017 model)
    coalesce_s: float = 0.001  # timed traces: starts within one bucket share packets
    think_s: float = 0.0  # direction "both": server think time before a response
    jitter_prob: float = 0.0  # 2017 model used 0.05 ...
    jitter_max_s: float = 0.100  # ... with an extra U(0, 100 ms)
    queue_bytes: int | None = None  # bottleneck queue; None = one BDP, at least 64 KiB
    cc: str = "reno"
    cookie_crumbs: bool = True  # RFC 9113 section 8.2.3 / RFC 9114 section 4.2.1 split

    def network_fields(self) -> dict:
        """The network with this study's own defaults: a queue of one BDP, at least 64 KiB,
        when none is given, and the 2017 model's jitter when ``jitter_prob`` is set."""
        fields = super().network_fields()
        bdp_bits = None if self.bandwidth_bps is None else self.bandwidth_bps * self.rtt_s
        if self.queue_bytes is None and bdp_bits is not None and math.isfinite(bdp_bits):
            fields["queue_bytes"] = max(65536, int(bdp_bits / 8))
        fields["jitter"] = Jitter(self.jitter_prob, self.jitter_max_s) if self.jitter_prob > 0 else None
        return fields

    def __post_init__(self) -> None:
        super().__post_init__()
        for s in self.schemes:
            if s not in schemes():
                raise InputError(f"unknown scheme {s!r} (choose from {', '.join(schemes())})")
        if self.transport not in TRANSPORTS:
            raise InputError(f"unknown transport {self.transport!r} (choose {', '.join(TRANSPORTS)})")
        if self.transport == "ref2017" and self.network.loss.gilbert_elliott:
            raise InputError(f"the 2017 reference model has independent loss only, not {str(self.loss)!r}")
        if self.direction not in DIRECTIONS:
            raise InputError(f"unknown direction {self.direction!r} (choose {', '.join(DIRECTIONS)})")
        if self.table_bytes < 0 or self.max_blocked < 0:
            raise InputError("table size and max blocked streams must be >= 0")
        if self.spacing_s < 0:
            raise InputError(f"request spacing must be >= 0, got {self.spacing_s}")


@dataclass
class HolResult(StudyResult):
    """One row per header block (``blocks``) and one per scheme (``summary``)."""

    blocks: pd.DataFrame
    summary: pd.DataFrame
    params: dict
    trace: dict

    def to_dict(self) -> dict:
        """The per-scheme rows, the parameters and the trace."""
        schemes = rows_by_index(self.summary)
        return {"schemes": schemes, "params": self.params, "trace": self.trace}

    def tables(self) -> dict[str, pd.DataFrame]:
        """Summary and per-block tables, without the parameter columns the batch adds."""
        # The batch adds every parameter to each row: the blocks' own copies are dropped.
        return {
            "summary": self.summary.reset_index(),
            "blocks": self.blocks.drop(columns=[c for c in ROW_PARAMS if c in self.blocks.columns]),
        }


def resolve_direction(trace: Trace, direction: str) -> str:
    """``auto`` -> the header lists the trace holds: ``both`` when it has requests and
    responses (a HAR), else ``requests`` or ``responses`` (a QIF holds one kind)."""
    if direction != "auto":
        return direction
    has_requests = any(e.request_headers is not None for e in trace.exchanges)
    has_responses = any(e.response_headers is not None for e in trace.exchanges)
    if has_requests and has_responses:
        return "both"
    if has_responses:
        return "responses"
    if has_requests:
        return "requests"
    raise InputError("the trace has no header lists to replay", path=trace.source)


def schedule(trace: Trace, params: HolParams) -> list[HeaderItem]:
    """The header lists to send, each with its sender, stream kind and start time."""
    direction = resolve_direction(trace, params.direction)
    lists = trace.header_lists(direction)
    if not lists:
        raise InputError(f"the trace has no {direction} header lists to replay", path=trace.source)
    if trace.timed:
        starts, prev_raw, prev_t = {}, None, 0.0
        ordered = sorted({e.index: e for e, _, _ in lists}.values(), key=lambda e: (e.start_s or 0.0, e.index))
        for e in ordered:
            raw = e.start_s or 0.0
            t = 0.0 if prev_raw is None else prev_t + min(max(raw - prev_raw, 0.0), params.max_idle_s)
            prev_raw, prev_t = raw, t
            starts[e.index] = t
        quantum = params.coalesce_s
        start_of = {i: (math.floor(t / quantum + 1e-9) * quantum if quantum > 0 else t) for i, t in starts.items()}
    else:
        start_of = {}
        for n, index in enumerate(dict.fromkeys(e.index for e, _, _ in lists)):
            start_of[index] = n * params.spacing_s
    items = []
    for e, kind, headers in lists:
        has_request = direction == "both" and e.request_headers is not None
        start = None if (kind == "response" and has_request) else start_of[e.index]
        items.append(HeaderItem(e.index, kind, headers, e.origin or "-", start))
    return items


# ---------------------------------------------------------------------------------------
# Entry points


def run(trace: Trace, params: HolParams | None = None, *, progress: bool = False) -> HolResult:
    """Replay ``trace`` once per scheme in ``params.schemes`` and measure HOL blocking."""
    params = params or HolParams()
    given_direction = params.direction
    params = params.derive(direction=resolve_direction(trace, params.direction))
    items = schedule(trace, params)
    frames, summaries = [], {}
    for scheme in steps(params.schemes, "schemes", progress):
        sr = SchemeRun(scheme, items, params)
        totals = sr.execute()
        df = pd.DataFrame.from_records(sr.blocks)
        df = df.drop(columns=[c for c in df.columns if c.startswith("_")])
        df["hol_delay_ms"] = (df["decoded_s"] - df["arrived_s"]) * 1000.0
        df["blocked"] = df["hol_delay_ms"] > 1e-6
        df = df.sort_values(["sent_s", "seq"], kind="stable").reset_index(drop=True)
        frames.append(df)
        summaries[scheme] = _summarize(df, totals)
    blocks = pd.concat(frames, ignore_index=True)
    pdict = params.to_dict()
    for k in ROW_PARAMS:
        blocks[k] = pdict[k]
    tinfo = {
        "source": trace.source,
        "format": trace.format,
        "content_hash": trace.content_hash(),
        "header_lists": len(items),
        "timed": trace.timed,
    }
    summary = pd.DataFrame.from_dict(summaries, orient="index")
    summary.index.name = "scheme"
    return HolResult(
        blocks=blocks,
        summary=summary,
        params={**pdict, "direction_given": given_direction, "version": __version__},
        trace=tinfo,
    )


def _summarize(df: pd.DataFrame, totals: dict) -> dict:
    hol = df["hol_delay_ms"].to_numpy()
    raw = int(df["raw_bytes"].sum())
    header = int(df["header_bytes"].sum())
    enc = int(df["encoder_stream_bytes"].sum())
    blocked = df["blocked"].to_numpy()
    return {
        "blocks": int(len(df)),
        "blocked": int(blocked.sum()),
        "hol_total_ms": float(hol.sum()),
        "hol_p50_ms": float(np.percentile(hol, 50)),
        "hol_p95_ms": float(np.percentile(hol, 95)),
        "hol_p99_ms": float(np.percentile(hol, 99)),
        "hol_max_ms": float(hol.max()),
        "hol_mean_blocked_ms": float(hol[blocked].mean()) if blocked.any() else 0.0,
        "raw_bytes": raw,
        "header_bytes": header,
        "encoder_stream_bytes": enc,
        "ratio": (header + enc) / raw if raw else math.nan,
        "saving_percent": 100.0 - 100.0 * (header + enc) / raw if raw else math.nan,
        "may_block": int(df["may_block"].sum()),
        **totals,
    }
