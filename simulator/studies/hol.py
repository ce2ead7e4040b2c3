"""Header-compression head-of-line blocking: HPACK vs QPACK vs QCRAM.

The question (research.md section 1): over QUIC, streams are delivered independently,
so a lost packet carrying one stream's data should not stall the others, unless the
header-compression scheme makes one stream's header block depend on another's.  This
study replays a trace's header lists over a simulated path, once per scheme with the
same seed, and measures, block by block, when each header block was sent, when all of
its own bytes had arrived, when the transport delivered it in order and when the
decoder could decode it.

- ``hol_delay`` = decoded - arrived: the time a block waited, with all of its own bytes
  already at the receiver, for something else: an earlier block (HPACK for QUIC decodes
  in encode order), an encoder-stream insert (QPACK, RFC 9204 section 2.1.2), or a hole
  in the connection's byte stream (any scheme over TCP, RFC 9293 in-order delivery).
- A block is *blocked* when its hol_delay is above zero.

The 2017 reference simulator (HTTP Workshop, London) is the baseline; this one adds a
real transport (loss recovery, congestion control, acks that can be lost), encoder and
decoder streams packetised on their own, per-block delay distributions, the
blocked-streams limit, both directions, and a decode of every block checked against
its input.

Schedule: a timed trace (HAR) replays at its start times, idle gaps capped at
``max_idle_s`` (1 s, as in 2017) and start times floored to ``coalesce_s`` (1 ms) so
that requests starting within the same millisecond share packets.  QIF traces carry no
timing: request ``i`` starts at ``i * spacing_s``.  How soon QPACK's acknowledgements come
back relative to that spacing decides how much of its table the encoder may reference,
so ``spacing_s`` is an explicit parameter of every result.

One compression context and one connection per origin (as in 2017); the request and
response directions have separate contexts (RFC 9204 section 2).
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..engine import Simulator
from ..errors import InputError
from ..net.link import Jitter, Path
from ..net.transport import TransportConfig
from ..traces.model import Trace, raw_size
from ..units import parse_duration, parse_rate, parse_size

__all__ = ["HolParams", "HolResult", "run", "run_seeds", "SCHEMES", "confidence_band"]

SCHEMES = ("hpack", "qpack", "qcram", "qcram-blocking")
DIRECTIONS = ("requests", "responses", "both")

# Unidirectional stream types (RFC 9204 section 4.2): QPACK encoder 0x02, decoder 0x03.
# QCRAM's control stream is given the encoder type: it plays the same role.
ENCODER_STREAM_TYPE = b"\x02"
DECODER_STREAM_TYPE = b"\x03"


@dataclass(frozen=True)
class HolParams:
    """Everything that determines a run.  Units are in the names."""

    schemes: tuple[str, ...] = ("hpack", "qpack", "qcram")
    transport: str = "quic"
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"                       # "0.01" Bernoulli, "ge:P,R[,h,k]" Gilbert-Elliott
    table_bytes: int = 4096               # dynamic table capacity (SETTINGS_QPACK_MAX_TABLE_CAPACITY)
    max_blocked: int = 100                # SETTINGS_QPACK_BLOCKED_STREAMS (2017 default 100)
    direction: str = "requests"
    seed: int = 1
    spacing_s: float = 0.010              # untimed traces: request i starts at i * spacing_s
    max_idle_s: float = 1.0               # timed traces: idle gaps capped (2017 model)
    coalesce_s: float = 0.001             # timed traces: starts within one bucket share packets
    think_s: float = 0.0                  # direction "both": server think time before a response
    jitter_prob: float = 0.0              # 2017 model used 0.05 ...
    jitter_max_s: float = 0.100           # ... with an extra U(0, 100 ms)
    queue_bytes: int | None = None        # bottleneck queue; None = one BDP, at least 64 KiB
    cc: str = "reno"
    cookie_crumbs: bool = True            # RFC 9113 section 8.2.3 / RFC 9204 section 4.2.1 split

    def __post_init__(self) -> None:
        for s in self.schemes:
            if s not in SCHEMES:
                raise InputError(f"unknown scheme {s!r} (choose from {', '.join(SCHEMES)})")
        if self.transport not in ("quic", "tcp"):
            raise InputError(f"unknown transport {self.transport!r} (choose quic or tcp)")
        if self.direction not in DIRECTIONS:
            raise InputError(f"unknown direction {self.direction!r} (choose {', '.join(DIRECTIONS)})")
        if self.table_bytes < 0 or self.max_blocked < 0:
            raise InputError("table size and max blocked streams must be >= 0")
        if self.rtt_s <= 0:
            raise InputError(f"RTT must be above 0, got {self.rtt_s}")
        if self.spacing_s < 0:
            raise InputError(f"request spacing must be >= 0, got {self.spacing_s}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["schemes"] = ",".join(self.schemes)
        return d


@dataclass
class HolResult:
    """One row per header block (``blocks``) and one per scheme (``summary``)."""

    blocks: pd.DataFrame
    summary: pd.DataFrame
    params: dict
    trace: dict

    def to_dict(self) -> dict:
        schemes = {name: {k: _jsonable(v) for k, v in row.items()}
                   for name, row in self.summary.to_dict(orient="index").items()}
        return {"schemes": schemes, "params": self.params, "trace": self.trace}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return None if math.isnan(v) else float(v)
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, np.bool_):
        return bool(v)
    return v


# ---------------------------------------------------------------------------------------
# The schedule


@dataclass(slots=True)
class _Item:
    """One header list to send: who sends it, when, on which stream."""

    exchange: int
    kind: str                 # "request" | "response"
    headers: tuple
    origin: str
    start_s: float | None     # None: a response sent when its request is decoded


def _schedule(trace: Trace, params: HolParams) -> list[_Item]:
    lists = trace.header_lists(params.direction)
    if not lists:
        raise InputError(f"the trace has no {params.direction} header lists to replay",
                         path=trace.source)
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
        has_request = params.direction == "both" and e.request_headers is not None
        start = None if (kind == "response" and has_request) else start_of[e.index]
        items.append(_Item(e.index, kind, headers, e.origin or "-", start))
    return items


# ---------------------------------------------------------------------------------------
# One scheme over one path per origin


def _h3_headers_frame(block: bytes) -> bytes:
    """RFC 9114 section 7.2.2: HEADERS frame, type 0x01, varint length."""
    return b"\x01" + _varint(len(block)) + block


def _h2_headers_frame(block: bytes, stream_id: int) -> bytes:
    """RFC 9113 section 6.2: 9-byte frame header, END_STREAM | END_HEADERS."""
    n = len(block)
    return struct.pack(">BHBBL", n >> 16, n & 0xFFFF, 0x1, 0x5, stream_id & 0x7FFFFFFF) + block


def _varint(v: int) -> bytes:
    """RFC 9000 section 16 variable-length integer."""
    if v < 0x40:
        return bytes([v])
    if v < 0x4000:
        return struct.pack(">H", v | 0x4000)
    if v < 0x40000000:
        return struct.pack(">L", v | 0x80000000)
    return struct.pack(">Q", v | 0xC000000000000000)


class _Side:
    """One direction's compression context on one connection: encoder at the sender,
    decoder at the receiver, and their streams."""

    def __init__(self, run: "_SchemeRun", conn, sender, receiver, scheme: str, kind: str) -> None:
        from .. import compression

        self.run = run
        self.kind = kind
        self.sender, self.receiver = sender, receiver
        p = run.params
        mode = run.params.transport
        self.encoder = compression.make_encoder(scheme, table_bytes=p.table_bytes, max_blocked=p.max_blocked,
                                                transport=mode, cookie_crumbs=p.cookie_crumbs)
        self.decoder = compression.make_decoder(scheme, table_bytes=p.table_bytes, max_blocked=p.max_blocked,
                                                transport=mode, cookie_crumbs=p.cookie_crumbs)
        self.encoder_stream = None
        self.decoder_stream = None
        self.encoder_stream_prefix = 0
        self.pending: dict[int, dict] = {}        # stream id -> block record awaiting decode
        self.frames_in_flight: dict[int, tuple[int, int]] = {}   # stream id -> (seq, frame bytes)
        self.buffered_bytes = 0
        self.max_buffered_bytes = 0

    # sender side ---------------------------------------------------------------
    def send(self, stream_id: int, item: _Item) -> dict:
        now = self.run.sim.now
        unit = self.encoder.encode(stream_id, item.headers)
        if unit.encoder_stream:
            if self.encoder_stream is None:
                self.encoder_stream = self.sender.open_stream(unidirectional=True)
                self.run.route[(id(self.receiver), self.encoder_stream)] = _UniStream("encoder", self)
                self.run.acked_route[(id(self.sender), self.encoder_stream)] = self
                self.sender.write(self.encoder_stream, ENCODER_STREAM_TYPE)
                self.encoder_stream_prefix = len(ENCODER_STREAM_TYPE)
            self.sender.write(self.encoder_stream, unit.encoder_stream)
        if self.run.params.transport == "quic":
            frame = _h3_headers_frame(unit.header_block)
        else:
            frame = _h2_headers_frame(unit.header_block, stream_id)
        self.run.route[(id(self.receiver), stream_id, self.kind)] = self
        record = {
            "scheme": self.run.scheme, "kind": item.kind, "exchange": item.exchange, "origin": item.origin,
            "stream_id": stream_id, "seq": unit.seq, "raw_bytes": raw_size(item.headers),
            "header_bytes": len(unit.header_block), "encoder_stream_bytes": len(unit.encoder_stream),
            "frame_bytes": len(frame), "may_block": bool(getattr(unit, "may_block", False)),
            "sent_s": now, "arrived_s": math.nan, "delivered_s": math.nan, "decoded_s": math.nan,
            "_headers": item.headers, "_buf": bytearray(),
        }
        self.pending[stream_id] = record
        # The frame is the first thing this side sends on the stream: acked once the
        # stream's acknowledged prefix covers it.
        self.run.acked_route[(id(self.sender), stream_id)] = self
        self.frames_in_flight[stream_id] = (unit.seq, len(frame))
        self.sender.write(stream_id, frame, end=True)
        return record

    def on_encoder_stream_acked(self, acked_offset: int) -> None:
        hook = getattr(self.encoder, "on_encoder_stream_acked", None)
        if hook is not None:
            hook(max(0, acked_offset - self.encoder_stream_prefix))

    def on_decoder_stream(self, data: bytes) -> None:
        self.encoder.feed_decoder_stream(data)

    # receiver side -------------------------------------------------------------
    def on_encoder_stream(self, data: bytes, time_s: float) -> None:
        for decoded in self.decoder.feed_encoder_stream(data):
            self._decoded(decoded, time_s)
        self._flush_decoder_stream()

    def on_block_received(self, stream_id: int, offset: int, length: int, time_s: float) -> None:
        """Bytes of a block's frame reached the receiver (maybe out of order): the block has
        *arrived* once every byte of its frame has, whatever the transport does next."""
        record = self.pending.get(stream_id)
        if record is None or not math.isnan(record["arrived_s"]):
            return
        cover = record.setdefault("_cover", [])
        cover.append((offset, offset + length))
        cover.sort()
        reach = 0
        for start, end in cover:
            if start > reach:
                return
            reach = max(reach, end)
        if reach >= record["frame_bytes"]:
            record["arrived_s"] = time_s

    def on_block_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        record = self.pending[stream_id]
        record["_buf"] += data
        if not end:
            return
        record["delivered_s"] = time_s
        if math.isnan(record["arrived_s"]):
            record["arrived_s"] = time_s
        frame = bytes(record.pop("_buf"))
        block = frame[len(frame) - record["header_bytes"]:]
        self.buffered_bytes += len(block)
        self.max_buffered_bytes = max(self.max_buffered_bytes, self.buffered_bytes)
        decoded = self.decoder.feed_header_block(stream_id, block, record["seq"])
        if decoded is not None:
            self._decoded(decoded, time_s)
        for extra in getattr(self.decoder, "take_unblocked", lambda: [])():
            self._decoded(extra, time_s)
        self._flush_decoder_stream()

    def _decoded(self, decoded, time_s: float) -> None:
        from .. import compression

        record = self.pending.pop(decoded.stream_id)
        compression.verify(record.pop("_headers"), decoded.headers,
                           where=f"{self.run.scheme} {record['kind']} block on stream {decoded.stream_id}")
        record["decoded_s"] = time_s
        self.buffered_bytes -= record["header_bytes"]
        self.run.blocks.append(record)
        self.run.on_decoded(self, record)

    def _flush_decoder_stream(self) -> None:
        data = self.decoder.take_decoder_stream()
        if not data:
            return
        if self.decoder_stream is None:
            self.decoder_stream = self.receiver.open_stream(unidirectional=True)
            self.run.route[(id(self.sender), self.decoder_stream)] = _UniStream("decoder", self)
            data = DECODER_STREAM_TYPE + data
        self.receiver.write(self.decoder_stream, data)


class _UniStream:
    """A unidirectional stream at its receiving end: strips the stream-type byte
    (RFC 9114 section 6.2) and hands the rest to the encoder or decoder side."""

    __slots__ = ("role", "side", "type_seen")

    def __init__(self, role: str, side: _Side) -> None:
        self.role, self.side, self.type_seen = role, side, False

    def deliver(self, data: bytes, time_s: float) -> None:
        if not self.type_seen:
            data, self.type_seen = data[1:], True
        if not data:
            return
        if self.role == "encoder":
            self.side.on_encoder_stream(data, time_s)
        else:  # the decoder stream, back at the encoder's endpoint
            self.side.on_decoder_stream(data)


class _SchemeRun:
    """One scheme over the whole trace: a simulator, one path and connection per origin."""

    def __init__(self, scheme: str, items: list[_Item], params: HolParams) -> None:
        self.scheme = scheme
        self.params = params
        self.sim = Simulator(seed=params.seed)
        self.items = items
        self.blocks: list[dict] = []
        self.route: dict[tuple, Any] = {}   # (endpoint, stream[, kind]) -> _UniStream | _Side
        self.acked_route: dict[tuple, _Side] = {}   # (sending endpoint, stream) -> _Side
        self.connections: dict[str, dict] = {}

    def connection(self, origin: str) -> dict:
        conn = self.connections.get(origin)
        if conn is not None:
            return conn
        p = self.params
        n = len(self.connections)
        queue = p.queue_bytes
        if queue is None and p.bandwidth_bps is not None:
            queue = max(65536, int(p.bandwidth_bps * p.rtt_s / 8))
        jitter = Jitter(p.jitter_prob, p.jitter_max_s) if p.jitter_prob > 0 else None
        path = Path(self.sim, rtt_s=p.rtt_s, bandwidth_bps=p.bandwidth_bps, queue_bytes=queue,
                    loss=p.loss, jitter=jitter, name=f"path{n}")
        config = TransportConfig(cc=p.cc)
        if p.transport == "quic":
            from ..net.quic import QuicConnection as cls
        else:
            from ..net.tcp import TcpConnection as cls
        transport = cls(self.sim, path, config, name=f"{p.transport}{n}")
        conn = {"transport": transport, "path": path, "sides": {}}
        self.connections[origin] = conn
        for endpoint in (transport.client, transport.server):
            endpoint.on_data = (lambda ep: lambda sid, data, end, t: self._on_data(ep, sid, data, end, t))(endpoint)
            endpoint.on_stream_acked = (lambda ep: lambda sid, off: self._on_acked(ep, sid, off))(endpoint)
            if hasattr(endpoint, "on_received"):
                endpoint.on_received = (lambda ep: lambda sid, off, n, t: self._on_received(ep, sid, off, n, t))(endpoint)
        return conn

    def side(self, origin: str, kind: str) -> _Side:
        conn = self.connection(origin)
        side = conn["sides"].get(kind)
        if side is None:
            t = conn["transport"]
            sender, receiver = (t.client, t.server) if kind == "request" else (t.server, t.client)
            side = conn["sides"][kind] = _Side(self, conn, sender, receiver, self.scheme, kind)
        return side

    def _on_data(self, endpoint, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        key = (id(endpoint), stream_id)
        uni = self.route.get(key)
        if uni is not None:
            uni.deliver(data, time_s)
            return
        # A bidirectional stream: requests arrive at the server, responses at the client.
        kind = "response" if endpoint.is_client else "request"
        self.route[(id(endpoint), stream_id, kind)].on_block_data(stream_id, data, end, time_s)

    def _on_received(self, endpoint, stream_id: int, offset: int, length: int, time_s: float) -> None:
        if stream_id & 2:
            return   # unidirectional: encoder/decoder streams
        kind = "response" if endpoint.is_client else "request"
        side = self.route.get((id(endpoint), stream_id, kind))
        if side is not None:
            side.on_block_received(stream_id, offset, length, time_s)

    def _on_acked(self, endpoint, stream_id: int, acked_offset: int) -> None:
        """Transport acknowledgements reach the encoder: QCRAM commits its inserts on the
        control stream's acks, and releases a block's references once its frame is acked."""
        side = self.acked_route.get((id(endpoint), stream_id))
        if side is None:
            return
        if side.encoder_stream == stream_id:
            side.on_encoder_stream_acked(acked_offset)
            return
        sent = side.frames_in_flight.get(stream_id)
        if sent is not None and acked_offset >= sent[1]:
            del side.frames_in_flight[stream_id]
            side.encoder.on_header_block_acked(sent[0])

    def start(self, item: _Item, stream_id: int | None = None) -> None:
        if stream_id is None:
            # Requests (and, without requests, responses) use the client's next bidi stream.
            stream_id = self.connection(item.origin)["transport"].client.open_stream()
        self.side(item.origin, item.kind).send(stream_id, item)

    def on_decoded(self, side: _Side, record: dict) -> None:
        # Direction "both": the response goes out when its request has been decoded.
        if record["kind"] == "request":
            response = self.responses.get(record["exchange"])
            if response is not None:
                self.sim.call_later(self.params.think_s, self.start, response, record["stream_id"])

    def execute(self) -> dict:
        self.responses = {it.exchange: it for it in self.items if it.kind == "response" and it.start_s is None}
        for it in self.items:
            if it.start_s is not None:
                self.sim.call_at(it.start_s, self.start, it)
        last_start = max((it.start_s for it in self.items if it.start_s is not None), default=0.0)
        self.sim.run(until_s=last_start + 3600.0)
        expected = len(self.items)
        if len(self.blocks) != expected:
            missing = expected - len(self.blocks)
            raise RuntimeError(f"{self.scheme}: {missing} of {expected} header blocks were never decoded "
                               f"(simulation stopped at {self.sim.now:.3f} s)")
        # Counted on the wire, the same way for both transports: every packet both ways
        # (acks included) and every packet the loss model or a full queue dropped.
        packets = losses = retransmissions = 0
        for conn in self.connections.values():
            for link in (conn["path"].forward, conn["path"].reverse):
                packets += link.stats.packets_sent
                losses += link.stats.packets_lost + link.stats.packets_dropped
            retransmissions += conn["transport"].stats().get("packets_lost", 0)
        max_buffered = 0
        for conn in self.connections.values():
            for side in conn["sides"].values():
                max_buffered = max(max_buffered, side.max_buffered_bytes)
        return {"packets": packets, "losses": losses, "retransmissions": retransmissions,
                "max_decoder_buffered_bytes": max_buffered,
                "connections": len(self.connections), "sim_end_s": self.sim.now}


# ---------------------------------------------------------------------------------------
# Entry points


def run(trace: Trace, params: HolParams | None = None, *, progress: bool = False) -> HolResult:
    """Replay ``trace`` once per scheme in ``params.schemes`` and measure HOL blocking."""
    params = params or HolParams()
    items = _schedule(trace, params)
    frames, summaries = [], {}
    schemes = params.schemes
    iterator = schemes
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(schemes, desc="schemes", leave=False)
    for scheme in iterator:
        sr = _SchemeRun(scheme, items, params)
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
    for k in ("transport", "rtt_s", "bandwidth_bps", "loss", "table_bytes", "max_blocked", "direction",
              "seed", "spacing_s"):
        blocks[k] = pdict[k]
    tinfo = {"source": trace.source, "format": trace.format, "content_hash": trace.content_hash(),
             "header_lists": len(items), "timed": trace.timed}
    summary = pd.DataFrame.from_dict(summaries, orient="index")
    summary.index.name = "scheme"
    return HolResult(blocks=blocks, summary=summary, params={**pdict, "version": __version__}, trace=tinfo)


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


def run_seeds(trace: Trace, params: HolParams, seeds, *, progress: bool = False) -> pd.DataFrame:
    """Summaries over several seeds: one row per (seed, scheme)."""
    rows = []
    seeds = list(seeds)
    iterator = seeds
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(seeds, desc="seeds")
    for seed in iterator:
        result = run(trace, replace(params, seed=seed))
        s = result.summary.reset_index()
        s["seed"] = seed
        rows.append(s)
    return pd.concat(rows, ignore_index=True)


def confidence_band(values, *, level: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean and a bootstrap percentile confidence interval (seeded, so reproducible)."""
    x = np.asarray(list(values), dtype=float)
    if len(x) == 0:
        return (math.nan, math.nan, math.nan)
    if len(x) == 1:
        return (float(x[0]), float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = rng.choice(x, size=(resamples, len(x)), replace=True).mean(axis=1)
    lo, hi = np.percentile(means, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return (float(x.mean()), float(lo), float(hi))


# ---------------------------------------------------------------------------------------
# CLI


def params_from_args(args: argparse.Namespace) -> HolParams:
    bw = None if str(args.bw).lower() in ("none", "inf", "0") else parse_rate(args.bw)
    return HolParams(
        schemes=tuple(s.strip() for s in args.scheme.split(",") if s.strip()),
        transport=args.transport, rtt_s=parse_duration(args.rtt), bandwidth_bps=bw, loss=str(args.loss),
        table_bytes=parse_size(args.table), max_blocked=int(args.blocked), direction=args.direction,
        seed=int(args.seed), spacing_s=parse_duration(args.spacing), think_s=parse_duration(args.think),
        jitter_prob=float(args.jitter), cc=args.cc,
    )


def _cmd(args: argparse.Namespace) -> int:
    from ..traces import load

    params = params_from_args(args)
    trace = load(args.trace)
    result = run(trace, params, progress=not args.json and sys.stderr.isatty())
    if args.blocks:
        result.blocks.to_csv(args.blocks, index=False)
    if args.json:
        print(result.to_json())
        return 0
    cols = ["blocks", "blocked", "hol_total_ms", "hol_p50_ms", "hol_p95_ms", "hol_max_ms",
            "raw_bytes", "header_bytes", "encoder_stream_bytes", "ratio", "packets", "losses"]
    print(f"trace {trace.source} ({len(trace)} exchanges, {result.trace['header_lists']} header lists), "
          f"{params.transport}, RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, seed {params.seed}")
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string())
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, help="HAR, QIF or QPACK interop file")
    p.add_argument("--scheme", default="hpack,qpack,qcram", help="comma-separated: " + ",".join(SCHEMES))
    p.add_argument("--transport", default="quic", choices=["quic", "tcp"])
    p.add_argument("--rtt", default="100ms")
    p.add_argument("--bw", default="10mbit", help="bottleneck bandwidth, e.g. 10mbit (none = unlimited)")
    p.add_argument("--loss", default="0", help="0.01 (Bernoulli) or ge:P,R[,h,k] (Gilbert-Elliott)")
    p.add_argument("--table", default="4096", help="dynamic table capacity in bytes")
    p.add_argument("--blocked", default=100, type=int, help="max blocked streams")
    p.add_argument("--direction", default="requests", choices=list(DIRECTIONS))
    p.add_argument("--spacing", default="10ms", help="request spacing for untimed traces (QIF)")
    p.add_argument("--think", default="0ms", help="server think time before a response (direction both)")
    p.add_argument("--jitter", default=0.0, type=float, help="probability of an extra U(0,100ms) delay")
    p.add_argument("--cc", default="reno", choices=["reno", "cubic"])
    p.add_argument("--seed", default=1, type=int)
    p.add_argument("--blocks", metavar="CSV", help="also write the per-block table to CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_commands(sub) -> None:
    p = sub.add_parser("hol", help="header-compression HOL blocking: HPACK vs QPACK vs QCRAM")
    add_arguments(p)
    p.set_defaults(func=_cmd)
