"""Trailers: metadata known only at the end of a body (RFC 9110 section 6.5).

The question: when metadata (an integrity digest, RFC 9530 ``Content-Digest``; a
signature, RFC 9421; a gRPC ``grpc-status``; a ``Server-Timing``) is known only once the
body is done, what do a first byte and a last byte cost if the server buffers the body
and sends the metadata as a header, against streaming it and sending a trailer, over
body size, production rate and RTT, and what is lost when an intermediary drops or
merges the trailer?  (Browsers cannot read trailers: the Fetch standard added
``Response.trailer`` in 2016 and removed it in 2019 when no engine shipped it, which is
why gRPC-Web moves them into the body.)

A digest, a signature, a call status or a timing is known only once the server has
produced the last byte of a body it generates at ``rate_bytes_per_s``.  Three ways to
deliver it:

- ``buffer``: the server buffers the whole body, then sends the metadata as header
  fields (with a Content-Length) and the body;
- ``trailer``: the server streams the body as it is produced and sends the metadata in a
  trailer section (RFC 9110 section 6.5): HTTP/1.1 chunked coding (RFC 9112 section
  7.1.2), HTTP/2 a final HEADERS frame with END_STREAM (RFC 9113 section 8.1), HTTP/3 a
  trailing HEADERS frame (RFC 9114 section 4.1); the header section announces them
  (``Trailer``, RFC 9110 section 6.6.2);
- ``in-body``: the gRPC-Web way: the body is a sequence of length-prefixed messages
  (one per produced chunk) and the metadata its last message, flag 0x80
  (grpc/grpc doc/PROTOCOL-WEB.md); the production rate applies to the framed bytes.

For each response, over the transport models (``hops.chain``: HTTP/1.1 and HTTP/2 over
the TCP model, HTTP/3 over the QUIC model) and, for HTTP/2 and HTTP/3, over the real
stacks (``stacks.replay``: ``h2`` and ``aioquic``, ``stack="real"`` or ``"both"``):

- ``ttfb_s``: request sent -> the response's header section received;
- ``first_body_s``, ``ttlb_s``: -> first body byte, -> the response complete;
- ``metadata_s``: -> every metadata field that reached the client is known (NaN when
  none did): header section (buffer, or merged by a hop), trailer section, or the end
  of the body (in-body);
- bytes on the wire of the client's connection, from the real codecs (``hops.framing``):
  header and trailer sections (QPACK encoder-stream bytes apart), data framing, end of
  message; ``overhead_bytes`` is everything but the body's own bytes;
- memory: the most body bytes the origin held (produced, not yet acknowledged by its
  peer) and each hop held (received, not yet acknowledged downstream);
- through a chain of intermediaries (``hops``, from the client toward the origin, each
  ``pass``, ``drop``, ``merge`` or ``store``; see ``hops.chain``): what each holds, how
  long it held the header section back, and which metadata fields silently disappeared
  (``integrity_lost``: the digest or signature; ``status_lost``: grpc-status).

Whether a request carries ``TE: trailers`` (RFC 9110 section 10.1.4) is drawn per
response with probability ``te_trailers`` from the seeded stream ``te`` (1: every client
says so, as gRPC clients do; 0: none does, as browsers).  All strategies, versions and
stacks of a run see the same draws.  Real-stack runs start each request after a warm-up
(both stacks' handshakes done), as the models' connections are warm; they do not run
through hops.  The real h2 stack runs cleartext here (``tls=False``): the hop models have
no TLS records, which would hold a first byte until its whole record (up to 16 KiB) is in.

``run(trace, params)``: with a trace, one response per exchange that has a request
(its request and response header lists; its response body size unless ``body_bytes``
is set); without one, ``responses`` synthetic responses of ``body_bytes``.  Response
``i`` starts at ``i * spacing_s``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import asdict, dataclass, replace

import pandas as pd

from .. import __version__, argtypes
from ..engine import derive_seed
from ..errors import InputError
from ..hops import chain
from ..hops.fields import INTEGRITY, METADATA, STATUS, metadata_fields
from ..hops.framing import GRPC_WEB_PREFIX_BYTES, VERSIONS, grpc_web_trailer_frame
from ..units import parse_bandwidth, parse_byte_rate, parse_duration, parse_size
from .summary_json import jsonable

__all__ = ["TrailersParams", "TrailersResult", "run", "STRATEGIES", "STACKS", "parse_byte_rate"]

STRATEGIES = ("buffer", "trailer", "in-body")
STACKS = ("model", "real", "both")
REAL_VERSIONS = ("h2", "h3")              # the real stacks: h2 (over the TCP model) and aioquic
DEFAULT_BODY_BYTES = 256 * 1024
_AUTHORITY = b"server.example"


@dataclass(frozen=True)
class TrailersParams:
    """Everything that determines a run.  Units are in the names."""

    strategies: tuple[str, ...] = STRATEGIES
    versions: tuple[str, ...] = VERSIONS
    stack: str = "model"                     # model | real (h2, h3) | both
    body_bytes: int | None = None            # None: the trace's sizes, or 256 KiB without one
    rate_bytes_per_s: float | None = 500_000.0   # body generation rate (None: all at once)
    chunk_bytes: int = 16384                 # the server writes each chunk as soon as it is produced
    rtt_s: float = 0.050
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    hops: tuple[str, ...] = ()               # intermediaries, from the client toward the origin
    hop_rtt_s: float = 0.010
    hop_bandwidth_bps: float | None = 1e9
    te_trailers: float = 1.0                 # probability that a request carries TE: trailers
    metadata: tuple[str, ...] = ("digest", "status")
    responses: int = 1                       # without a trace
    spacing_s: float = 1.0                   # response i starts at i * spacing_s
    think_s: float = 0.0
    qpack_table_bytes: int = 4096
    qpack_blocked_streams: int = 16
    cc: str = "reno"
    seed: int = 1

    def __post_init__(self) -> None:
        def bad(message: str) -> None:
            raise InputError(message)

        for name, values, known in (("strategy", self.strategies, STRATEGIES), ("version", self.versions, VERSIONS),
                                    ("hop policy", self.hops, chain.POLICIES), ("metadata kind", self.metadata,
                                                                                  METADATA)):
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
        if self.rtt_s <= 0 or self.hop_rtt_s <= 0:
            bad("RTTs must be above 0")
        for bw in (self.bandwidth_bps, self.hop_bandwidth_bps):
            if bw is not None and bw <= 0:
                bad(f"bandwidth must be above 0, got {bw}")
        if not 0.0 <= self.te_trailers <= 1.0:
            bad(f"--te is a probability in [0, 1], got {self.te_trailers}")
        if self.responses < 1:
            bad(f"responses must be at least 1, got {self.responses}")
        if self.spacing_s < 0 or self.think_s < 0:
            bad("spacing and think time must be >= 0")
        if self.qpack_table_bytes < 0 or self.qpack_blocked_streams < 0:
            bad("QPACK table capacity and blocked streams must be >= 0")
        if self.cc not in ("reno", "cubic"):
            bad(f"unknown congestion control {self.cc!r} (choose reno or cubic)")
        from ..net.link import parse_loss
        parse_loss(self.loss, random.Random(0))          # a bad loss spec fails here, before any work

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("strategies", "versions", "hops", "metadata"):
            d[k] = ",".join(d[k])
        return d


@dataclass
class TrailersResult:
    """``responses``: one row per (stack, version, strategy, response); ``hops``: one row
    per response and hop (model runs); ``summary``: one row per (stack, version, strategy)."""

    responses: pd.DataFrame
    hops: pd.DataFrame
    summary: pd.DataFrame
    params: dict
    trace: dict

    def to_dict(self) -> dict:
        return {"summary": [{k: jsonable(v) for k, v in r.items()} for r in self.summary.to_dict(orient="records")],
                "params": self.params, "trace": self.trace}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


# ---------------------------------------------------------------------------------------
# What each response is


@dataclass(frozen=True)
class _Exchange:
    index: int
    start_s: float
    request: tuple           # without TE
    response: tuple          # :status first, no Content-Length
    body_bytes: int
    te: bool


def _exchanges(trace, params: TrailersParams) -> list[_Exchange]:
    rng = random.Random(derive_seed(params.seed, "te"))
    out = []
    if trace is None:
        for i in range(params.responses):
            body = DEFAULT_BODY_BYTES if params.body_bytes is None else params.body_bytes
            request = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", _AUTHORITY),
                       (b":path", b"/r/%d" % i), (b"user-agent", b"workbench"), (b"accept", b"*/*"))
            response = ((b":status", b"200"), (b"content-type", b"application/octet-stream"))
            out.append(_Exchange(i, i * params.spacing_s, request, response, body, rng.random() < params.te_trailers))
        return out
    from ..stacks.replay import request_headers_for, response_headers_for

    exchanges = [e for e in trace.exchanges if e.request_headers is not None]
    if not exchanges:
        raise InputError("the trace has no exchanges with a request to replay", path=trace.source)
    for i, e in enumerate(exchanges):
        body = e.response_body_bytes if params.body_bytes is None else params.body_bytes
        request = request_headers_for(e.request_headers, e.origin)
        response, _ = response_headers_for(e.response_headers or ((b":status", b"200"),), body)
        if response[0][1] in (b"204", b"304"):     # statuses without a body (RFC 9110 6.4.1): answer 200
            response = ((b":status", b"200"),) + response[1:]
        response = tuple((n, v) for n, v in response if n != b"content-length")
        out.append(_Exchange(i, i * params.spacing_s, request, response, body, rng.random() < params.te_trailers))
    return out


def _plan(ex: _Exchange, strategy: str, params: TrailersParams) -> chain.ResponsePlan:
    rate = params.rate_bytes_per_s
    production_s = ex.body_bytes / rate if rate else 0.0
    status = int(ex.response[0][1])
    request = ex.request + (((b"te", b"trailers"),) if ex.te else ())
    md = metadata_fields(params.metadata, body_bytes=ex.body_bytes, production_s=production_s, status=status,
                         in_trailers=strategy == "trailer", index=ex.index, seed=params.seed)
    common = dict(index=ex.index, start_s=ex.start_s, request_headers=request, metadata=md,
                  rate_bytes_per_s=rate, chunk_bytes=params.chunk_bytes)
    if strategy == "buffer":
        head = ex.response + ((b"content-length", str(ex.body_bytes).encode()),) + md
        return chain.ResponsePlan(head=head, body_bytes=ex.body_bytes, buffer=True, **common)
    if strategy == "trailer":
        announce = b", ".join(dict.fromkeys(n for n, _ in md))
        return chain.ResponsePlan(head=ex.response + ((b"trailer", announce),), body_bytes=ex.body_bytes,
                                  trailers=md, **common)
    # in-body: one length-prefixed message per produced chunk, the metadata as the last one
    messages = math.ceil(ex.body_bytes / params.chunk_bytes) if ex.body_bytes else 0
    framed = ex.body_bytes + GRPC_WEB_PREFIX_BYTES * messages
    common["chunk_bytes"] = params.chunk_bytes + GRPC_WEB_PREFIX_BYTES
    if rate:          # the same instants as the payload's chunks
        common["rate_bytes_per_s"] = rate * common["chunk_bytes"] / params.chunk_bytes
    return chain.ResponsePlan(head=ex.response, body_bytes=framed, tail_bytes=len(grpc_web_trailer_frame(md)),
                              metadata_in_body=True, **common)


# ---------------------------------------------------------------------------------------
# Runs


def _metadata_columns(plan: chain.ResponsePlan, arrived: dict) -> dict:
    names = list(dict.fromkeys(n for n, _ in plan.metadata))
    lost = [n for n in names if n not in arrived]
    wheres = sorted({arrived[n][0] for n in names if n in arrived})
    times = [arrived[n][1] for n in names if n in arrived]
    return {
        "metadata_at_s": max(times) if times else math.nan,
        "metadata_where": "+".join(wheres) if wheres else "lost",
        "fields_sent": len(names), "fields_delivered": len(names) - len(lost), "fields_lost": len(lost),
        "lost_fields": ",".join(n.decode() for n in lost),
        "integrity_lost": any(n in INTEGRITY for n in lost),
        "status_lost": any(n in STATUS for n in lost),
    }


def _model_rows(exchanges, strategy: str, version: str, params: TrailersParams):
    plans = [_plan(ex, strategy, params) for ex in exchanges]
    config = chain.ChainConfig(version=version, hops=params.hops, rtt_s=params.rtt_s,
                               bandwidth_bps=params.bandwidth_bps, loss=params.loss, hop_rtt_s=params.hop_rtt_s,
                               hop_bandwidth_bps=params.hop_bandwidth_bps, think_s=params.think_s,
                               qpack_table_bytes=params.qpack_table_bytes,
                               qpack_blocked_streams=params.qpack_blocked_streams, cc=params.cc, seed=params.seed)
    out = chain.run_chain(plans, config)
    rows, hop_rows = [], []
    for plan, ex in zip(plans, exchanges):
        c = out.client[plan.index]
        o = out.origin[plan.index]
        b = c["exchange"].bytes
        start = c["start_s"]
        relays = [relays[plan.index] for relays in out.hops]
        http_bytes = sum(b.values())
        row = {
            "stack": "model", "http_version": version, "strategy": strategy, "response": plan.index,
            "body_bytes": ex.body_bytes, "te": ex.te, "te_at_origin": o["te_at_origin"], "start_s": start,
            "ttfb_s": c["headers_s"] - start, "first_body_s": c["first_body_s"] - start,
            "ttlb_s": c["end_s"] - start, "trailers_s": c["trailers_s"] - start,
            **_metadata_columns(plan, c["arrived"]),
            "head_bytes": b["head"], "head_encoder_bytes": b["head_encoder"],
            "trailer_bytes": b["trailers"], "trailer_encoder_bytes": b["trailer_encoder"],
            "data_framing_bytes": b["data_framing"], "end_bytes": b["end"], "http_bytes": http_bytes,
            "overhead_bytes": http_bytes - ex.body_bytes,
            "origin_held_max_bytes": o["held_max_bytes"],
            "hops_held_max_bytes": max((r.held_max_bytes for r in relays), default=0),
            "hops_held_sum_bytes": sum(r.held_max_bytes for r in relays),
            "hops_hold_s": sum(r.head_out_s - r.head_in_s for r in relays),
        }
        row["metadata_s"] = row.pop("metadata_at_s") - start
        rows.append(row)
        for k, r in enumerate(relays):
            hop_rows.append({
                "http_version": version, "strategy": strategy, "response": plan.index, "hop": k + 1,
                "policy": params.hops[k], "te_down": r.te_down, "buffered": r.buffering,
                "held_max_bytes": r.held_max_bytes, "hold_s": r.head_out_s - r.head_in_s,
                "trailer_fields_in": r.trailers_in, "trailer_fields_out": r.trailers_out,
                "merged": ",".join(n.decode() for n in r.merged), "dropped": ",".join(n.decode() for n in r.dropped),
            })
    seg = out.segments[0]
    totals = {"packets": seg["packets"], "packets_lost": seg["lost"], "connections": seg["connections"]}
    return rows, hop_rows, totals


def warmup_s(params: TrailersParams) -> float:
    """Real stacks: requests start after this (both handshakes done), times are from there."""
    return 1.0 + 4 * params.rtt_s


def _real_rows(exchanges, strategy: str, version: str, params: TrailersParams):
    from ..stacks import replay
    from ..stacks.common import ExchangeSpec, StackParams

    plans = [_plan(ex, strategy, params) for ex in exchanges]
    offset = warmup_s(params)
    specs = [ExchangeSpec(index=p.index, request_headers=p.request_headers, response_headers=p.head,
                          response_body_bytes=p.body_bytes, start_s=offset + p.start_s,
                          origin="https://server.example", trailers=p.trailers,
                          body_rate_bytes_per_s=p.rate_bytes_per_s, body_chunk_bytes=p.chunk_bytes,
                          buffer_body=p.buffer, body_tail_bytes=p.tail_bytes) for p in plans]
    longest = max((p.body_bytes / p.rate_bytes_per_s if p.rate_bytes_per_s else 0.0) for p in plans)
    # h2 cleartext: the study compares HTTP framing against the hop models, which have no TLS
    # records (over TLS a record is read only when whole, so a first byte waits for up to 16 KiB).
    sp = StackParams(stack=version, rtt_s=params.rtt_s, bandwidth_bps=params.bandwidth_bps, loss=params.loss,
                     seed=params.seed, think_s=params.think_s, cc=params.cc, tls=version == "h3",
                     qpack_table_bytes=params.qpack_table_bytes, qpack_blocked_streams=params.qpack_blocked_streams,
                     idle_timeout_s=30.0 + params.think_s + longest)
    result = replay.run_specs(specs, sp)
    df = result.exchanges.set_index("exchange")
    rows = []
    for plan, ex in zip(plans, exchanges):
        r = df.loc[plan.index]
        start = r["start_s"]
        arrived = {}
        for n, _ in plan.metadata:
            if plan.metadata_in_body:
                arrived[n] = ("body", r["complete_s"])
            elif plan.trailers and bool(r["trailers"]):
                arrived[n] = ("trailers", r["trailers_s"])
            elif not plan.trailers:
                arrived[n] = ("headers", r["headers_s"])
        row = {
            "stack": "real", "http_version": version, "strategy": strategy, "response": plan.index,
            "body_bytes": ex.body_bytes, "te": ex.te, "te_at_origin": ex.te, "start_s": start,
            "ttfb_s": r["headers_s"] - start, "first_body_s": r["first_byte_s"] - start,
            "ttlb_s": r["complete_s"] - start, "trailers_s": r["trailers_s"] - start,
            **_metadata_columns(plan, arrived),
            "head_bytes": int(r["response_frame_bytes"]), "head_encoder_bytes": int(r["response_encoder_bytes"]),
            "trailer_bytes": int(r["trailer_frame_bytes"]), "trailer_encoder_bytes": int(r["trailer_encoder_bytes"]),
            "data_framing_bytes": math.nan, "end_bytes": math.nan, "http_bytes": math.nan,
            "overhead_bytes": math.nan, "origin_held_max_bytes": math.nan, "hops_held_max_bytes": 0,
            "hops_held_sum_bytes": 0, "hops_hold_s": 0.0,
        }
        row["metadata_s"] = row.pop("metadata_at_s") - start
        rows.append(row)
    s = result.summary
    return rows, {"packets": s["packets_sent"], "packets_lost": s["packets_lost"], "connections": s["connections"]}


def run(trace=None, params: TrailersParams | None = None, *, progress: bool = False) -> TrailersResult:
    """Every strategy x version (x stack) over the same responses and draws."""
    params = params or TrailersParams()
    exchanges = _exchanges(trace, params)
    jobs = []
    if params.stack in ("model", "both"):
        jobs += [("model", v, s) for v in params.versions for s in params.strategies]
    if params.stack in ("real", "both"):
        jobs += [("real", v, s) for v in params.versions if v in REAL_VERSIONS for s in params.strategies]
    iterator = jobs
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(jobs, desc="runs", leave=False)
    rows, hop_rows, totals = [], [], {}
    for stack, version, strategy in iterator:
        if stack == "model":
            r, h, t = _model_rows(exchanges, strategy, version, params)
            hop_rows += h
        else:
            r, t = _real_rows(exchanges, strategy, version, params)
        rows += r
        totals[(stack, version, strategy)] = t
    responses = pd.DataFrame(rows)
    hops = pd.DataFrame(hop_rows, columns=["http_version", "strategy", "response", "hop", "policy", "te_down", "buffered",
                                           "held_max_bytes", "hold_s", "trailer_fields_in", "trailer_fields_out",
                                           "merged", "dropped"])
    pdict = params.to_dict()
    for k in ("seed", "rtt_s", "bandwidth_bps", "loss", "rate_bytes_per_s", "chunk_bytes", "hops", "te_trailers",
              "metadata"):
        responses[k] = pdict[k]
        hops[k] = pdict[k]
    summary = _summarize(responses, totals)
    tinfo = {}
    if trace is not None:
        tinfo = {"source": trace.source, "format": trace.format, "content_hash": trace.content_hash(),
                 "exchanges": len(exchanges)}
    return TrailersResult(responses=responses, hops=hops, summary=summary,
                          params={**pdict, "version": __version__}, trace=tinfo)


def _summarize(df: pd.DataFrame, totals: dict) -> pd.DataFrame:
    rows = []
    for (stack, version, strategy), g in df.groupby(["stack", "http_version", "strategy"], sort=False):
        known = g["metadata_s"].dropna()
        rows.append({
            "stack": stack, "http_version": version, "strategy": strategy, "responses": int(len(g)),
            "ttfb_mean_s": float(g["ttfb_s"].mean()), "ttfb_p50_s": float(g["ttfb_s"].median()),
            "metadata_mean_s": float(known.mean()) if len(known) else math.nan,
            "ttlb_mean_s": float(g["ttlb_s"].mean()),
            "metadata_lost_responses": int((g["fields_lost"] > 0).sum()),
            "integrity_lost": int(g["integrity_lost"].sum()), "status_lost": int(g["status_lost"].sum()),
            "head_bytes_mean": float(g["head_bytes"].mean()),
            "trailer_bytes_mean": float(g["trailer_bytes"].mean()),
            "trailer_encoder_bytes_mean": float(g["trailer_encoder_bytes"].mean()),
            "overhead_bytes_mean": float(g["overhead_bytes"].mean()),
            "origin_held_max_bytes": float(g["origin_held_max_bytes"].max()),
            "hops_held_max_bytes": float(g["hops_held_max_bytes"].max()),
            "hops_hold_mean_s": float(g["hops_hold_s"].mean()),
            **totals[(stack, version, strategy)],
        })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------
# CLI


def _list(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in str(text).split(",") if s.strip())


def params_from_args(args: argparse.Namespace) -> TrailersParams:
    try:
        te = float(args.te)
    except ValueError:
        raise InputError(f"--te must be a probability in [0, 1], got {args.te!r}") from None
    return TrailersParams(
        strategies=_list(args.strategy), versions=_list(args.versions), stack=args.stack,
        body_bytes=None if args.body is None else parse_size(args.body), rate_bytes_per_s=parse_byte_rate(args.rate),
        chunk_bytes=parse_size(args.chunk), rtt_s=parse_duration(args.rtt), bandwidth_bps=parse_bandwidth(args.bw),
        loss=str(args.loss), hops=_list(args.hops), hop_rtt_s=parse_duration(args.hop_rtt),
        hop_bandwidth_bps=parse_bandwidth(args.hop_bw), te_trailers=te, metadata=_list(args.metadata),
        responses=int(args.responses), spacing_s=parse_duration(args.spacing), think_s=parse_duration(args.think),
        cc=args.cc, seed=int(args.seed),
    )


def _cmd(args: argparse.Namespace) -> int:
    params = params_from_args(args)
    trace = None
    if args.trace:
        from ..traces import load
        trace = load(args.trace)
    result = run(trace, params, progress=not args.json and sys.stderr.isatty())
    if args.rows:
        result.responses.to_csv(args.rows, index=False)
    if args.json:
        print(result.to_json())
        return 0
    hops = ",".join(params.hops) or "none"
    rate = "at once" if params.rate_bytes_per_s is None else f"{params.rate_bytes_per_s:,.0f} B/s"
    print(f"{len(result.responses['response'].unique())} response(s), generated {rate}, RTT {params.rtt_s * 1000:g} ms, "
          f"loss {params.loss}, hops {hops}, TE: trailers p={params.te_trailers:g}, seed {params.seed}")
    cols = ["stack", "http_version", "strategy", "ttfb_mean_s", "metadata_mean_s", "ttlb_mean_s", "metadata_lost_responses",
            "head_bytes_mean", "trailer_bytes_mean", "overhead_bytes_mean", "origin_held_max_bytes",
            "hops_held_max_bytes"]
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string(index=False))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", help="HAR or QIF trace: one response per exchange (optional)")
    p.add_argument("--strategy", default=",".join(STRATEGIES), type=argtypes.names(STRATEGIES, "strategy"),
                   help="comma-separated: " + ",".join(STRATEGIES))
    p.add_argument("--versions", default=",".join(VERSIONS), type=argtypes.names(VERSIONS, "version"),
                   help="comma-separated: h1,h2,h3")
    p.add_argument("--stack", default="model", choices=list(STACKS),
                   help="transport models, real stacks (h2, aioquic), or both")
    p.add_argument("--body", default=None, type=argtypes.size,
                   help="body size, e.g. 256KiB (default: the trace's, or 256 KiB)")
    p.add_argument("--rate", default="500kB/s", type=argtypes.byte_rate,
                   help="body generation rate, e.g. 500kB/s, 4mbit, inf")
    p.add_argument("--chunk", default="16KiB", type=argtypes.positive_size,
                   help="the server writes each chunk of this size as produced")
    p.add_argument("--rtt", default="50ms", type=argtypes.positive_duration, help="round-trip time, e.g. 50ms")
    p.add_argument("--bw", default="10mbit", type=argtypes.bandwidth, help="bottleneck bandwidth (none = unlimited)")
    p.add_argument("--loss", default="0", type=argtypes.loss, help="0.01 (Bernoulli) or ge:P,R[,h,k] (Gilbert-Elliott)")
    p.add_argument("--hops", default="", type=argtypes.names(chain.POLICIES, "hop policy", empty=True),
                   help="intermediaries from the client: pass,drop,merge,store")
    p.add_argument("--hop-rtt", default="10ms", type=argtypes.positive_duration,
                   help="RTT of each segment behind the first hop")
    p.add_argument("--hop-bw", default="1gbit", type=argtypes.bandwidth,
                   help="bandwidth of each segment behind the first hop")
    p.add_argument("--te", default="1", type=argtypes.probability,
                   help="probability that a request carries TE: trailers")
    p.add_argument("--metadata", default="digest,status", type=argtypes.names(METADATA, "metadata kind"),
                   help="comma-separated: " + ",".join(METADATA))
    p.add_argument("--responses", default=1, type=argtypes.count(1), help="responses without a trace")
    p.add_argument("--spacing", default="1s", type=argtypes.duration, help="response i starts at i * spacing")
    p.add_argument("--think", default="0ms", type=argtypes.duration, help="server think time before production starts")
    p.add_argument("--cc", default="reno", choices=["reno", "cubic"])
    p.add_argument("--seed", default=1, type=int)
    p.add_argument("--rows", metavar="CSV", type=argtypes.output_file, help="also write the per-response table to CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_commands(sub) -> None:
    p = sub.add_parser("trailers", help="metadata at the end of a body: buffer vs trailers vs in-body, hops")
    add_arguments(p)
    p.set_defaults(func=_cmd)


def with_seed(params: TrailersParams, seed: int) -> TrailersParams:
    return replace(params, seed=int(seed))
