"""The trailers study: its parameters, ``run`` (every strategy x version x stack over the
same responses and draws) and its summary.

A run simulates every response once per strategy, version and stack, each packet of it, so
the work grows as responses x runs: the 9 model runs over the synthetic pages' bodies take
about 7 ms of CPU per response on this project's 2-core test machine (a 20,000-entry HAR:
142 s and 740 MB; 50,000 entries, the HAR limit: 354 s and 1.7 GB).  Issue 33 asks that a
huge input be refused up front, in one line, rather than run for minutes: ``run`` counts the
work before it simulates anything (``work_units``: each response of each run is 1 + its body
/ 64 KiB, times the run's weight, ``RUN_WEIGHT``, measured; about 0.5 ms of CPU a unit) and
refuses more than ``MAX_WORK_UNITS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ... import __version__
from ...errors import InputError
from ...hops import chain
from ...hops.fields import METADATA
from ...http.framing import VERSIONS
from ..base import StudyParams, StudyResult, records, steps
from .model import make_exchanges, make_plans, model_rows, real_rows

__all__ = [
    "TrailersParams",
    "TrailersResult",
    "run",
    "work_units",
    "STRATEGIES",
    "STACKS",
    "REAL_VERSIONS",
    "MAX_WORK_UNITS",
    "RUN_WEIGHT",
]

STRATEGIES = ("buffer", "trailer", "in-body")
STACKS = ("model", "real", "both")
REAL_VERSIONS = ("h2", "h3")  # the real stacks: h2 (over the TCP model) and aioquic
# The work a run may take, in units of one response of at most 64 KiB in one model run of the
# average version: about 40 s of CPU.  A 5,000-entry synthetic HAR through the 9 model runs is
# 67,000 units (33 s, 330 MB); 1,000 default 256 KiB responses 45,000 (21 s); a 20,000-entry
# HAR 267,000 (refused; its import alone is 6 s).
MAX_WORK_UNITS = 80_000
_UNIT_BODY_BYTES = 64 * 1024
# What a response costs per run, against the unit (measured on the synthetic pages and at 4 KiB
# and 256 KiB bodies): the HTTP/2 model runs pure-Python HPACK both ways, the HTTP/1.1 one no
# header compression; real h2 over the TCP model costs 2-5x its model, aioquic 15-40x (each of
# its packets encrypted).
RUN_WEIGHT = {("model", "h1"): 0.5, ("model", "h2"): 1.4, ("model", "h3"): 1.1, ("real", "h2"): 5, ("real", "h3"): 40}
# Parameters every response and hop row carries.
ROW_PARAMS = (
    "seed",
    "rtt_s",
    "bandwidth_bps",
    "loss",
    "rate_bytes_per_s",
    "chunk_bytes",
    "hops",
    "te_trailers",
    "metadata",
)


@dataclass(frozen=True)
class TrailersParams(StudyParams):
    """Everything that determines a run.  Units are in the names."""

    NOT_PARAMETERS = ("max_work_units",)  # a guard on the cost, not on the result

    strategies: tuple[str, ...] = STRATEGIES
    versions: tuple[str, ...] = VERSIONS
    stack: str = "model"  # model | real (h2, h3) | both
    body_bytes: int | None = None  # None: the trace's sizes, or 256 KiB without one
    rate_bytes_per_s: float | None = 500_000.0  # body generation rate (None: all at once)
    chunk_bytes: int = 16384  # the server writes each chunk as soon as it is produced
    rtt_s: float = 0.050
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    hops: tuple[str, ...] = ()  # intermediaries, from the client toward the origin
    hop_rtt_s: float = 0.010
    hop_bandwidth_bps: float | None = 1e9
    te_trailers: float = 1.0  # probability that a request carries TE: trailers
    metadata: tuple[str, ...] = ("digest", "status")
    responses: int = 1  # without a trace
    spacing_s: float = 1.0  # response i starts at i * spacing_s
    think_s: float = 0.0
    qpack_table_bytes: int = 4096
    qpack_blocked_streams: int = 16
    cc: str = "reno"
    seed: int = 1
    # The most work a run takes on (``work_units``; about 0.5 ms of CPU a unit here): past it
    # the run is refused up front instead of running for minutes (``--max-work``).
    max_work_units: int = MAX_WORK_UNITS

    def __post_init__(self) -> None:
        super().__post_init__()
        if type(self.max_work_units) is not int or self.max_work_units < 1:
            raise InputError(f"--max-work must be a whole number of units, at least 1, got {self.max_work_units!r}")

        def bad(message: str) -> None:
            raise InputError(message)

        for name, values, known in (
            ("strategy", self.strategies, STRATEGIES),
            ("version", self.versions, VERSIONS),
            ("hop policy", self.hops, chain.POLICIES),
            ("metadata kind", self.metadata, METADATA),
        ):
            for v in values:
                if v not in known:
                    bad(f"unknown {name} {v!r} (choose from {', '.join(known)})")
        if not self.strategies or not self.versions:
            bad("give at least one strategy and one HTTP version")
        if not self.metadata:
            bad("give at least one metadata kind (the study is about metadata known at the end)")
        if "signature" in self.metadata and "digest" not in self.metadata:
            bad("the signature covers the content digest: metadata 'signature' needs 'digest' too")
        if self.stack not in STACKS:
            bad(f"unknown stack {self.stack!r} (choose from {', '.join(STACKS)})")
        if self.stack != "model" and self.hops:
            bad("the real stacks run without intermediaries: use --stack model with --hops")
        if self.stack == "real" and not set(self.versions) & set(REAL_VERSIONS):
            bad("the real stacks are HTTP/2 (h2) and HTTP/3 (aioquic): add h2 or h3 to --versions")
        if self.body_bytes is not None and self.body_bytes < 0:
            bad(f"body size must be >= 0 bytes, got {self.body_bytes}")
        if self.rate_bytes_per_s is not None and not self.rate_bytes_per_s > 0:
            bad(f"generation rate must be above 0 bytes/s, got {self.rate_bytes_per_s}")
        if self.chunk_bytes < 1:
            bad(f"chunk size must be at least 1 byte, got {self.chunk_bytes}")
        if self.hop_rtt_s <= 0:
            bad(f"hop RTT must be above 0, got {self.hop_rtt_s}")
        if self.hop_bandwidth_bps is not None and self.hop_bandwidth_bps <= 0:
            bad(f"hop bandwidth must be above 0, got {self.hop_bandwidth_bps}")
        if not 0.0 <= self.te_trailers <= 1.0:
            bad(f"--te is a probability in [0, 1], got {self.te_trailers}")
        if self.responses < 1:
            bad(f"responses must be at least 1, got {self.responses}")
        if self.spacing_s < 0 or self.think_s < 0:
            bad("spacing and think time must be >= 0")
        if self.qpack_table_bytes < 0 or self.qpack_blocked_streams < 0:
            bad("QPACK table capacity and blocked streams must be >= 0")


@dataclass
class TrailersResult(StudyResult):
    """``responses``: one row per (stack, version, strategy, response); ``hops``: one row
    per response and hop (model runs); ``summary``: one row per (stack, version, strategy)."""

    responses: pd.DataFrame
    hops: pd.DataFrame
    summary: pd.DataFrame
    params: dict
    trace: dict

    def to_dict(self) -> dict:
        """The summary rows, the parameters and the trace."""
        return {"summary": records(self.summary), "params": self.params, "trace": self.trace}

    def tables(self) -> dict[str, pd.DataFrame]:
        """Summary, responses and hops, without the parameter columns the batch adds."""
        # The batch adds every parameter to each row: the rows' own copies are dropped.
        return {
            "summary": self.summary,
            "responses": self.responses.drop(columns=[c for c in ROW_PARAMS if c in self.responses.columns]),
            "hops": self.hops.drop(columns=[c for c in ROW_PARAMS if c in self.hops.columns]),
        }


def run(trace=None, params: TrailersParams | None = None, *, progress: bool = False) -> TrailersResult:
    """Every strategy x version (x stack) over the same responses and draws."""
    params = params or TrailersParams()
    exchanges = make_exchanges(trace, params)
    jobs = []
    if params.stack in ("model", "both"):
        jobs += [("model", v, s) for v in params.versions for s in params.strategies]
    if params.stack in ("real", "both"):
        jobs += [("real", v, s) for v in params.versions if v in REAL_VERSIONS for s in params.strategies]
    work = work_units(exchanges, jobs)
    if work > params.max_work_units:
        n = len(exchanges)
        raise InputError(
            f"{n:,} response(s) x {len(jobs)} run(s) (strategies x versions x stacks) is {work:,.0f} units of work, "
            f"above the limit of {params.max_work_units:,} (about 0.5 ms of CPU a unit on a 2-core machine): "
            "give fewer or smaller responses (--responses, --body, a part of the trace), fewer --strategy or "
            "--versions, or raise --max-work",
            path=trace.source if trace is not None else None,
        )
    rows, hop_rows, totals, plans = [], [], {}, {}
    for stack, version, strategy in steps(jobs, "runs", progress):
        if strategy not in plans:  # the same for every version and stack
            plans[strategy] = make_plans(exchanges, strategy, params)
        if stack == "model":
            r, h, t = model_rows(exchanges, strategy, version, params, plans[strategy])
            hop_rows += h
        else:
            r, t = real_rows(exchanges, strategy, version, params, plans[strategy])
        rows += r
        totals[(stack, version, strategy)] = t
    responses = pd.DataFrame(rows)
    hops = pd.DataFrame(
        hop_rows,
        columns=[
            "http_version",
            "strategy",
            "response",
            "hop",
            "policy",
            "te_down",
            "buffered",
            "held_max_bytes",
            "hold_s",
            "trailer_fields_in",
            "trailer_fields_out",
            "merged",
            "dropped",
        ],
    )
    pdict = params.to_dict()
    for k in ROW_PARAMS:
        responses[k] = pdict[k]
        hops[k] = pdict[k]
    summary = _summarize(responses, totals)
    tinfo = {}
    if trace is not None:
        tinfo = {
            "source": trace.source,
            "format": trace.format,
            "content_hash": trace.content_hash(),
            "exchanges": len(exchanges),
        }
    return TrailersResult(
        responses=responses, hops=hops, summary=summary, params={**pdict, "version": __version__}, trace=tinfo
    )


def work_units(exchanges, jobs) -> float:
    """The work of running ``exchanges`` in ``jobs`` ((stack, version, strategy) runs): per response
    and run, 1 + its body / 64 KiB, times the run's ``RUN_WEIGHT``."""
    per_run = sum(1.0 + ex.body_bytes / _UNIT_BODY_BYTES for ex in exchanges)
    return sum(per_run * RUN_WEIGHT[(stack, version)] for stack, version, _ in jobs)


def _summarize(df: pd.DataFrame, totals: dict) -> pd.DataFrame:
    rows = []
    for (stack, version, strategy), g in df.groupby(["stack", "http_version", "strategy"], sort=False):
        known = g["metadata_s"].dropna()
        rows.append(
            {
                "stack": stack,
                "http_version": version,
                "strategy": strategy,
                "responses": int(len(g)),
                "ttfb_mean_s": float(g["ttfb_s"].mean()),
                "ttfb_p50_s": float(g["ttfb_s"].median()),
                "metadata_mean_s": float(known.mean()) if len(known) else math.nan,
                "ttlb_mean_s": float(g["ttlb_s"].mean()),
                "metadata_lost_responses": int((g["fields_lost"] > 0).sum()),
                "integrity_lost": int(g["integrity_lost"].sum()),
                "status_lost": int(g["status_lost"].sum()),
                "head_bytes_mean": float(g["head_bytes"].mean()),
                "trailer_bytes_mean": float(g["trailer_bytes"].mean()),
                "trailer_encoder_bytes_mean": float(g["trailer_encoder_bytes"].mean()),
                "overhead_bytes_mean": float(g["overhead_bytes"].mean()),
                "origin_held_max_bytes": float(g["origin_held_max_bytes"].max()),
                "hops_held_max_bytes": float(g["hops_held_max_bytes"].max()),
                "hops_hold_mean_s": float(g["hops_hold_s"].mean()),
                **totals[(stack, version, strategy)],
            }
        )
    return pd.DataFrame(rows)
