"""The trailers study's runs: each response as a ``hops.chain.ResponsePlan`` per strategy,
replayed through the hop models (``model``) or the real stacks (``real``), as table rows."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ...engine import derive_seed
from ...errors import InputError
from ...net.conditions import handing_over
from ...hops import chain
from ...hops.fields import INTEGRITY, STATUS, metadata_fields
from ...http.framing import GRPC_WEB_PREFIX_BYTES, grpc_web_trailer_frame
from ...net.transport import TIMER_KEYS

__all__ = ["make_exchanges", "make_plans", "model_rows", "real_rows", "warmup_s", "DEFAULT_BODY_BYTES"]

DEFAULT_BODY_BYTES = 256 * 1024
_AUTHORITY = b"server.example"


@dataclass(frozen=True)
class _Exchange:
    index: int
    start_s: float
    request: tuple  # without TE
    response: tuple  # :status first, no Content-Length
    body_bytes: int
    te: bool


def make_exchanges(trace, params) -> list[_Exchange]:
    """The responses of a run: one per exchange of ``trace`` with a request, or ``params.responses``
    synthetic ones without a trace; each draws TE: trailers from the seeded stream ``te``."""
    rng = random.Random(derive_seed(params.seed, "te"))
    out = []
    if trace is None:
        for i in range(params.responses):
            body = DEFAULT_BODY_BYTES if params.body_bytes is None else params.body_bytes
            request = (
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", _AUTHORITY),
                (b":path", b"/r/%d" % i),
                (b"user-agent", b"workbench"),
                (b"accept", b"*/*"),
            )
            response = ((b":status", b"200"), (b"content-type", b"application/octet-stream"))
            out.append(_Exchange(i, i * params.spacing_s, request, response, body, rng.random() < params.te_trailers))
        return out
    from ...stacks.replay import request_headers_for, response_headers_for

    exchanges = [e for e in trace.exchanges if e.request_headers is not None]
    if not exchanges:
        raise InputError("the trace has no exchanges with a request to replay", path=trace.source)
    for i, e in enumerate(exchanges):
        body = e.response_body_bytes if params.body_bytes is None else params.body_bytes
        request = request_headers_for(e.request_headers, e.origin)
        response, _ = response_headers_for(e.response_headers or ((b":status", b"200"),), body)
        if response[0][1] in (b"204", b"304"):  # statuses without a body (RFC 9110 6.4.1): answer 200
            response = ((b":status", b"200"),) + response[1:]
        response = tuple((n, v) for n, v in response if n != b"content-length")
        out.append(_Exchange(i, i * params.spacing_s, request, response, body, rng.random() < params.te_trailers))
    return out


def make_plans(exchanges, strategy: str, params) -> list[chain.ResponsePlan]:
    """Each exchange as the origin answers it under ``strategy``.  The plans depend on the
    strategy alone, not on the HTTP version or the stack (the metadata, a signature included,
    are computed once per response and strategy), so a run makes them once per strategy."""
    return [_plan(ex, strategy, params) for ex in exchanges]


def _plan(ex: _Exchange, strategy: str, params) -> chain.ResponsePlan:
    rate = params.rate_bytes_per_s
    production_s = ex.body_bytes / rate if rate else 0.0
    status = int(ex.response[0][1])
    request = ex.request + (((b"te", b"trailers"),) if ex.te else ())
    md = metadata_fields(
        params.metadata,
        body_bytes=ex.body_bytes,
        production_s=production_s,
        status=status,
        in_trailers=strategy == "trailer",
        index=ex.index,
        seed=params.seed,
    )
    common = dict(
        index=ex.index,
        start_s=ex.start_s,
        request_headers=request,
        metadata=md,
        rate_bytes_per_s=rate,
        chunk_bytes=params.chunk_bytes,
    )
    if strategy == "buffer":
        head = ex.response + ((b"content-length", str(ex.body_bytes).encode()),) + md
        return chain.ResponsePlan(head=head, body_bytes=ex.body_bytes, buffer=True, **common)
    if strategy == "trailer":
        announce = b", ".join(dict.fromkeys(n for n, _ in md))
        return chain.ResponsePlan(
            head=ex.response + ((b"trailer", announce),), body_bytes=ex.body_bytes, trailers=md, **common
        )
    # in-body: one length-prefixed message per produced chunk, the metadata as the last one
    messages = math.ceil(ex.body_bytes / params.chunk_bytes) if ex.body_bytes else 0
    framed = ex.body_bytes + GRPC_WEB_PREFIX_BYTES * messages
    common["chunk_bytes"] = params.chunk_bytes + GRPC_WEB_PREFIX_BYTES
    if rate:  # the same instants as the payload's chunks
        common["rate_bytes_per_s"] = rate * common["chunk_bytes"] / params.chunk_bytes
    return chain.ResponsePlan(
        head=ex.response, body_bytes=framed, tail_bytes=len(grpc_web_trailer_frame(md)), metadata_in_body=True, **common
    )


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
        "fields_sent": len(names),
        "fields_delivered": len(names) - len(lost),
        "fields_lost": len(lost),
        "lost_fields": ",".join(n.decode() for n in lost),
        "integrity_lost": any(n in INTEGRITY for n in lost),
        "status_lost": any(n in STATUS for n in lost),
    }


def model_rows(exchanges, strategy: str, version: str, params, plans=None):
    """Run the exchanges under ``strategy`` through the hop-chain model: per-response rows, per-hop rows, totals
    (``plans``: ``make_plans``'s for this strategy, made here when not given)."""
    plans = make_plans(exchanges, strategy, params) if plans is None else plans
    config = chain.ChainConfig(
        version=version,
        hops=params.hops,
        rtt_s=params.rtt_s,
        bandwidth_bps=params.bandwidth_bps,
        loss=params.loss,
        hop_rtt_s=params.hop_rtt_s,
        hop_bandwidth_bps=params.hop_bandwidth_bps,
        think_s=params.think_s,
        qpack_table_bytes=params.qpack_table_bytes,
        qpack_blocked_streams=params.qpack_blocked_streams,
        cc=params.cc,
        seed=params.seed,
        network=params.network,
    )
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
            "stack": "model",
            "http_version": version,
            "strategy": strategy,
            "response": plan.index,
            "body_bytes": ex.body_bytes,
            "te": ex.te,
            "te_at_origin": o["te_at_origin"],
            "start_s": start,
            "ttfb_s": c["headers_s"] - start,
            "first_body_s": c["first_body_s"] - start,
            "ttlb_s": c["end_s"] - start,
            "trailers_s": c["trailers_s"] - start,
            **_metadata_columns(plan, c["arrived"]),
            "head_bytes": b["head"],
            "head_encoder_bytes": b["head_encoder"],
            "trailer_bytes": b["trailers"],
            "trailer_encoder_bytes": b["trailer_encoder"],
            "data_framing_bytes": b["data_framing"],
            "end_bytes": b["end"],
            "http_bytes": http_bytes,
            "overhead_bytes": http_bytes - ex.body_bytes,
            "origin_held_max_bytes": o["held_max_bytes"],
            "hops_held_max_bytes": max((r.held_max_bytes for r in relays), default=0),
            "hops_held_sum_bytes": sum(r.held_max_bytes for r in relays),
            "hops_hold_s": sum(r.head_out_s - r.head_in_s for r in relays),
        }
        row["metadata_s"] = row.pop("metadata_at_s") - start
        rows.append(row)
        for k, r in enumerate(relays):
            hop_rows.append(
                {
                    "http_version": version,
                    "strategy": strategy,
                    "response": plan.index,
                    "hop": k + 1,
                    "policy": params.hops[k],
                    "te_down": r.te_down,
                    "buffered": r.buffering,
                    "held_max_bytes": r.held_max_bytes,
                    "hold_s": r.head_out_s - r.head_in_s,
                    "trailer_fields_in": r.trailers_in,
                    "trailer_fields_out": r.trailers_out,
                    "merged": ",".join(n.decode() for n in r.merged),
                    "dropped": ",".join(n.decode() for n in r.dropped),
                }
            )
    seg = out.segments[0]
    totals = {
        "packets": seg["packets"],
        "packets_lost": seg["lost"],
        "connections": seg["connections"],
        **{k: seg[k] for k in TIMER_KEYS},
    }
    return rows, hop_rows, totals


def warmup_s(params) -> float:
    """Real stacks: requests start after this (both handshakes done), times are from there."""
    return 1.0 + 4 * params.rtt_s


def real_rows(exchanges, strategy: str, version: str, params, plans=None):
    """Replay the exchanges under ``strategy`` on the real h2/h3 stacks: per-response rows and packet totals
    (``plans`` as in ``model_rows``)."""
    from ...stacks import replay
    from ...stacks.common import ExchangeSpec, StackParams

    plans = make_plans(exchanges, strategy, params) if plans is None else plans
    offset = warmup_s(params)
    specs = [
        ExchangeSpec(
            index=p.index,
            request_headers=p.request_headers,
            response_headers=p.head,
            response_body_bytes=p.body_bytes,
            start_s=offset + p.start_s,
            origin="https://server.example",
            trailers=p.trailers,
            body_rate_bytes_per_s=p.rate_bytes_per_s,
            body_chunk_bytes=p.chunk_bytes,
            buffer_body=p.buffer,
            body_tail_bytes=p.tail_bytes,
        )
        for p in plans
    ]
    longest = max((p.body_bytes / p.rate_bytes_per_s if p.rate_bytes_per_s else 0.0) for p in plans)
    # h2 cleartext: the study compares HTTP framing against the hop models, which have no TLS
    # records (over TLS a record is read only when whole, so a first byte waits for up to 16 KiB).
    with handing_over(params.network):
        sp = StackParams(
            stack=version,
            rtt_s=params.rtt_s,
            bandwidth_bps=params.bandwidth_bps,
            loss=params.loss,
            seed=params.seed,
            think_s=params.think_s,
            cc=params.cc,
            tls=version == "h3",
            qpack_table_bytes=params.qpack_table_bytes,
            qpack_blocked_streams=params.qpack_blocked_streams,
            idle_timeout_s=30.0 + params.think_s + longest,
        )
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
            "stack": "real",
            "http_version": version,
            "strategy": strategy,
            "response": plan.index,
            "body_bytes": ex.body_bytes,
            "te": ex.te,
            "te_at_origin": ex.te,
            "start_s": start,
            "ttfb_s": r["headers_s"] - start,
            "first_body_s": r["first_byte_s"] - start,
            "ttlb_s": r["complete_s"] - start,
            "trailers_s": r["trailers_s"] - start,
            **_metadata_columns(plan, arrived),
            "head_bytes": int(r["response_frame_bytes"]),
            "head_encoder_bytes": int(r["response_encoder_bytes"]),
            "trailer_bytes": int(r["trailer_frame_bytes"]),
            "trailer_encoder_bytes": int(r["trailer_encoder_bytes"]),
            "data_framing_bytes": math.nan,
            "end_bytes": math.nan,
            "http_bytes": math.nan,
            "overhead_bytes": math.nan,
            "origin_held_max_bytes": math.nan,
            "hops_held_max_bytes": 0,
            "hops_held_sum_bytes": 0,
            "hops_hold_s": 0.0,
        }
        row["metadata_s"] = row.pop("metadata_at_s") - start
        rows.append(row)
    s = result.summary
    return rows, {
        "packets": s["packets_sent"],
        "packets_lost": s["packets_lost"],
        "connections": s["connections"],
        **{k: s.get(k, 0) for k in TIMER_KEYS},
    }
