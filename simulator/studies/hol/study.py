"""The HOL study: its parameters, the schedule of header lists, ``run`` and its summary.

``run`` keeps its rows (the block records, one summary row per scheme) and makes its
DataFrames when first read: ``--json`` reads the summary rows themselves, so the command
line's JSON needs neither pandas nor NumPy (about half a second of its start-up).  The
summary's figures are computed as NumPy computed them from the table (its pairwise sum,
its linear percentile), so they are the same floats."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ... import __version__
from ...errors import InputError
from ...net.link import Jitter
from ...traces.model import Trace
from ..base import StudyParams, StudyResult, jsonable, rows_by_index, steps
from .model import HeaderItem, SchemeRun

if TYPE_CHECKING:
    import pandas as pd

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
        if not self.schemes:
            raise InputError(f"give at least one scheme ({', '.join(schemes())})")
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


class HolResult(StudyResult):
    """One row per header block (``blocks``) and one per scheme (``summary``).

    Both are DataFrames, made from the run's rows when first read (``run`` keeps each
    scheme's block records and its summary row): ``to_dict`` (``--json``) reads the summary
    rows themselves, so the command line's JSON needs no pandas."""

    def __init__(self, blocks, summary, params: dict, trace: dict) -> None:
        self._blocks, self._summary = blocks, summary
        self.params, self.trace = params, trace

    @property
    def blocks(self) -> pd.DataFrame:
        """One row per header block and scheme, in send order within a scheme (made when first read)."""
        if isinstance(self._blocks, _BlockRecords):
            self._blocks = self._blocks.frame()
        return self._blocks

    @blocks.setter
    def blocks(self, value: pd.DataFrame) -> None:
        """Replace the per-block table."""
        self._blocks = value

    @property
    def summary(self) -> pd.DataFrame:
        """One row per scheme, indexed by its name (made when first read)."""
        if isinstance(self._summary, dict):
            self._summary = _summary_frame(self._summary)
        return self._summary

    @summary.setter
    def summary(self, value: pd.DataFrame) -> None:
        """Replace the summary (``median_over_seeds`` does)."""
        self._summary = value

    def __repr__(self) -> str:
        tables = f"blocks={self.blocks!r}, summary={self.summary!r}"
        return f"HolResult({tables}, params={self.params!r}, trace={self.trace!r})"

    def to_dict(self) -> dict:
        """The per-scheme rows, the parameters and the trace."""
        rows = self._summary if isinstance(self._summary, dict) else None
        if rows is None or not _as_frame_gives(rows):
            rows = rows_by_index(self.summary)
        else:
            rows = {scheme: {k: jsonable(v) for k, v in row.items()} for scheme, row in rows.items()}
        return {"schemes": rows, "params": self.params, "trace": self.trace}

    def tables(self) -> dict[str, pd.DataFrame]:
        """Summary and per-block tables, without the parameter columns the batch adds."""
        # The batch adds every parameter to each row: the blocks' own copies are dropped.
        return {
            "summary": self.summary.reset_index(),
            "blocks": self.blocks.drop(columns=[c for c in ROW_PARAMS if c in self.blocks.columns]),
        }


class _BlockRecords:
    """Each scheme's block records as its run left them (in decode order) and the parameters
    every row carries, made into the ``blocks`` table when read."""

    __slots__ = ("by_scheme", "row_params")

    def __init__(self, by_scheme: list[list[dict]], row_params: dict) -> None:
        self.by_scheme, self.row_params = by_scheme, row_params

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        frames = []
        for records in self.by_scheme:
            df = pd.DataFrame.from_records(records)
            df = df.drop(columns=[c for c in df.columns if c.startswith("_")])
            df["hol_delay_ms"] = (df["decoded_s"] - df["arrived_s"]) * 1000.0
            df["blocked"] = df["hol_delay_ms"] > 1e-6
            frames.append(df.sort_values(["sent_s", "seq"], kind="stable").reset_index(drop=True))
        blocks = pd.concat(frames, ignore_index=True)
        for k, v in self.row_params.items():
            blocks[k] = v
        return blocks


def _summary_frame(rows: dict) -> pd.DataFrame:
    import pandas as pd

    summary = pd.DataFrame.from_dict(rows, orient="index")
    summary.index.name = "scheme"
    return summary


def _as_frame_gives(rows: dict) -> bool:
    """Whether the summary rows are what its DataFrame gives back (``to_dict``): every row has
    the same columns in the same order, and each column's values are of one type (a column
    of ints and floats would come back as floats)."""
    first = next(iter(rows.values()), None)
    if first is None:
        return False
    for row in rows.values():
        if list(row) != list(first) or any(type(v) is not type(first[k]) for k, v in row.items()):
            return False
    return all(type(v) in (int, float, bool, str) for v in first.values())


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
    records, summaries = [], {}
    for scheme in steps(params.schemes, "schemes", progress):
        sr = SchemeRun(scheme, items, params)
        totals = sr.execute()
        records.append(sr.blocks)
        summaries[scheme] = _summarize(sr.blocks, totals)
    pdict = params.to_dict()
    tinfo = {
        "source": trace.source,
        "format": trace.format,
        "content_hash": trace.content_hash(),
        "header_lists": len(items),
        "timed": trace.timed,
    }
    return HolResult(
        blocks=_BlockRecords(records, {k: pdict[k] for k in ROW_PARAMS}),
        summary=summaries,
        params={**pdict, "direction_given": given_direction, "version": __version__},
        trace=tinfo,
    )


def _summarize(records: list[dict], totals: dict) -> dict:
    """One scheme's summary row, of its blocks in the order of the ``blocks`` table (by send
    time, then seq: the sums below depend on the order)."""
    ordered = sorted(records, key=lambda r: (r["sent_s"], r["seq"]))
    hol = [(r["decoded_s"] - r["arrived_s"]) * 1000.0 for r in ordered]
    hol_blocked = [h for h in hol if h > 1e-6]
    hol_sorted = sorted(hol)
    raw = sum(r["raw_bytes"] for r in records)
    header = sum(r["header_bytes"] for r in records)
    enc = sum(r["encoder_stream_bytes"] for r in records)
    return {
        "blocks": len(records),
        "blocked": len(hol_blocked),
        "hol_total_ms": _numpy_sum(hol),
        "hol_p50_ms": _numpy_percentile(hol_sorted, 50),
        "hol_p95_ms": _numpy_percentile(hol_sorted, 95),
        "hol_p99_ms": _numpy_percentile(hol_sorted, 99),
        "hol_max_ms": _numpy_max(hol),
        "hol_mean_blocked_ms": _numpy_sum(hol_blocked) / len(hol_blocked) if hol_blocked else 0.0,
        "raw_bytes": raw,
        "header_bytes": header,
        "encoder_stream_bytes": enc,
        "ratio": (header + enc) / raw if raw else math.nan,
        "saving_percent": 100.0 - 100.0 * (header + enc) / raw if raw else math.nan,
        "may_block": sum(1 for r in records if r["may_block"]),
        **totals,
    }


# NumPy's float64 reductions, written out so that the summary needs no NumPy and gives the
# very floats it gave (a float sum depends on the order of its additions).


def _numpy_sum(values: list[float], start: int = 0, n: int | None = None) -> float:
    """``np.sum`` of ``values[start:start + n]``: NumPy's pairwise summation (eight running
    sums over blocks of at most 128 values, the halves of longer runs summed apart)."""
    if n is None:
        n = len(values)
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += values[i]
        return total
    if n <= 128:
        r = values[start : start + 8]
        end_of_eights = start + n - n % 8
        for i in range(start + 8, end_of_eights, 8):
            for j in range(8):
                r[j] += values[i + j]
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(end_of_eights, start + n):
            total += values[i]
        return total
    half = n // 2
    half -= half % 8
    return _numpy_sum(values, start, half) + _numpy_sum(values, start + half, n - half)


def _numpy_max(values: list[float]) -> float:
    """``np.max``: NaN when any value is NaN."""
    return math.nan if any(v != v for v in values) else max(values)


def _numpy_percentile(ascending: list[float], percent: int) -> float:
    """``np.percentile(values, percent)`` (method "linear") of the values sorted ascending:
    the same index, weight and interpolation as NumPy's, so the same float; NaN when any
    value is NaN (NumPy sorts NaN last and gives it)."""
    n = len(ascending)
    if n == 0 or any(v != v for v in ascending):
        return math.nan
    virtual = (n - 1) * (percent / 100)
    if virtual >= n - 1:  # NumPy takes index -1 for both neighbours, the weight from it
        below_i = above_i = -1
    else:
        below_i = math.floor(virtual)
        above_i = below_i + 1
    below, above = ascending[below_i], ascending[above_i]
    weight = virtual - below_i
    diff = above - below
    # NumPy's lerp: from the nearer end, so that weight 1 gives ``above`` exactly.
    return above - diff * (1 - weight) if weight >= 0.5 else below + diff * weight
