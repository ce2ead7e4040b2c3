"""Responses through a chain of HTTP intermediaries, over the transport models.

    client ==segment 0== hop 1 ==segment 1== hop 2 ... hop N ==segment N== origin

Written by hand.  Each segment is its own HTTP connection on its own simulated path
(``segment.Segment``: the TCP model for HTTP/1.1 and HTTP/2, the QUIC model for HTTP/3,
warm connections, exact bytes per version from the real codecs).  Segment 0 (the
client's) has the run's RTT, bandwidth and loss; the segments behind the first hop
have ``hop_rtt_s`` and ``hop_bandwidth_bps`` and no loss (a backbone).

The origin produces each body over time (``stacks.common.production_schedule``, the
same schedule the real stacks use) and, as the plan says, writes each chunk as it is
produced or buffers the whole body before its header section.

Hop policies (``POLICIES``), with ``te_down`` = the request the hop received carried
``TE: trailers`` (RFC 9110 section 10.1.4; TE is hop-by-hop, section 7.6.1, so each
hop writes its own upstream):

- ``pass``: streams; forwards a trailer section only when ``te_down`` (RFC 9110
  section 6.5.1: TE "trailers" says the client accepts them "on behalf of itself and any
  downstream clients"), otherwise discards it ("in most cases, the trailers are simply
  discarded"); sends ``TE: trailers`` upstream only when ``te_down``;
- ``drop``: streams and always discards trailer sections (RFC 9112 section 7.1.2: a
  recipient that removes the chunked coding "MAY selectively retain or discard" them);
  never sends ``TE: trailers`` upstream;
- ``merge``: as ``pass`` when ``te_down``; otherwise, for a response whose header
  section announces trailer fields (``Trailer``, RFC 9110 section 6.6.2: it lets
  recipients "prepare for their receipt"), buffers the whole message and merges into
  the header section the trailer fields whose definition permits it
  (``fields.MERGEABLE``, RFC 9110 section 6.5.1 "If the entire message can be buffered
  in transit, some intermediaries could merge trailer fields into the header section"),
  dropping the others; the forwarded message has a Content-Length.  A response that
  announces nothing is streamed, and a trailer section it ends with is discarded;
- ``store``: store-and-forward (a cache or a scanning proxy): always buffers the whole
  message, then forwards the trailer section when ``te_down``, else merges as ``merge``.

Memory held (bytes of body): the origin holds what it produced and its peer has not
acknowledged yet; a hop what it received and its downstream peer has not acknowledged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..engine import Simulator
from ..net.conditions import Network
from ..stacks.common import production_schedule
from . import fields as _fields
from .segment import Exchange, Segment

__all__ = ["POLICIES", "ChainConfig", "ResponsePlan", "run_chain", "ChainRun"]

POLICIES = ("pass", "drop", "merge", "store")
_HOP_BY_HOP = (b"te", b"connection", b"transfer-encoding", b"keep-alive", b"upgrade", b"proxy-connection")


@dataclass(frozen=True)
class ChainConfig:
    """The network and the intermediaries (units in the names)."""

    version: str = "h2"
    hops: tuple[str, ...] = ()  # policies, from the client toward the origin
    rtt_s: float = 0.050  # segment 0 (client to first hop or origin)
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    hop_rtt_s: float = 0.010  # segments behind the first hop
    hop_bandwidth_bps: float | None = 1e9
    think_s: float = 0.0  # origin: request received -> production starts
    qpack_table_bytes: int = 4096  # the receiving decoder's SETTINGS (aioquic's defaults)
    qpack_blocked_streams: int = 16
    cc: str = "reno"
    seed: int = 1
    network: Network | None = None  # segment 0's, checked (None: built from the fields above)


@dataclass
class ResponsePlan:
    """One exchange as the origin will answer it (built by the study for a strategy)."""

    index: int
    start_s: float
    request_headers: tuple
    head: tuple  # the response header section the origin sends
    body_bytes: int  # produced at ``rate_bytes_per_s``
    tail_bytes: int = 0  # written at once after the last produced byte
    trailers: tuple | None = None  # the trailer section, if any
    buffer: bool = False  # nothing is written before the last byte is produced
    rate_bytes_per_s: float | None = None
    chunk_bytes: int = 16384
    metadata: tuple = ()  # the metadata field lines (wherever they travel)
    metadata_in_body: bool = False  # gRPC-Web style: they are the body's last message


# ---------------------------------------------------------------------------------------
# The nodes


def _has_te_trailers(headers) -> bool:
    return any(n == b"te" and b"trailers" in v.lower() for n, v in headers)


class _Origin:
    """Answers each request as its plan says, producing the body over time."""

    def __init__(self, sim: Simulator, config: ChainConfig, plans: dict[int, ResponsePlan]) -> None:
        self.sim = sim
        self.config = config
        self.plans = plans
        self.records: dict[int, dict] = {}

    def request(self, ex: Exchange, headers, time_s: float) -> None:
        plan = self.plans[ex.tag]
        self.records[ex.tag] = rec = {
            "te_at_origin": _has_te_trailers(headers),
            "request_in_s": time_s,
            "produced": 0,
            "acked": 0,
            "held_max_bytes": 0,
        }
        ex.on_acked_payload = lambda n: rec.__setitem__("acked", n)
        self.sim.call_later(self.config.think_s, self._start, ex, plan, rec)

    def _start(self, ex: Exchange, plan: ResponsePlan, rec: dict) -> None:
        schedule = production_schedule(plan.body_bytes, plan.rate_bytes_per_s, plan.chunk_bytes)
        total = plan.body_bytes + plan.tail_bytes
        if not plan.buffer:
            ex.respond_head(plan.head, end=total == 0 and not plan.trailers)
        for i, (at_s, n) in enumerate(schedule):
            self.sim.call_later(at_s, self._produced, ex, plan, rec, n, i == len(schedule) - 1)

    def _produced(self, ex: Exchange, plan: ResponsePlan, rec: dict, nbytes: int, last: bool) -> None:
        if last:
            nbytes += plan.tail_bytes
        rec["produced"] += nbytes
        rec["held_max_bytes"] = max(rec["held_max_bytes"], rec["produced"] - rec["acked"])
        if plan.buffer:
            if not last:
                return
            total = rec["produced"]
            ex.respond_head(plan.head, end=total == 0 and not plan.trailers)
            if total:
                ex.respond_data(total, end=not plan.trailers)
        elif nbytes:
            ex.respond_data(nbytes, end=last and not plan.trailers)
        if last and plan.trailers:
            ex.respond_trailers(plan.trailers)
        if last:
            rec["produced_s"] = self.sim.now


class _Relay:
    """One response through one hop."""

    __slots__ = (
        "down",
        "up",
        "te_down",
        "buffering",
        "head",
        "head_in_s",
        "head_out_s",
        "received",
        "acked_down",
        "held_max_bytes",
        "trailers_in",
        "trailers_out",
        "merged",
        "dropped",
        "end_in_s",
        "end_out_s",
    )

    def __init__(self, down: Exchange, te_down: bool) -> None:
        self.down = down
        self.up: Exchange | None = None
        self.te_down = te_down
        self.buffering = False
        self.head = None
        self.head_in_s = self.head_out_s = self.end_in_s = self.end_out_s = math.nan
        self.received = 0
        self.acked_down = 0
        self.held_max_bytes = 0
        self.trailers_in = 0
        self.trailers_out = 0
        self.merged: list[bytes] = []
        self.dropped: list[bytes] = []


class _Hop:
    """An intermediary with one of ``POLICIES`` (see the module docstring)."""

    def __init__(self, sim: Simulator, index: int, policy: str) -> None:
        self.sim = sim
        self.index = index
        self.policy = policy
        self.upstream_segment: Segment | None = None
        self.relays: dict[int, _Relay] = {}  # by tag

    def request(self, down: Exchange, headers, time_s: float) -> None:
        te_down = _has_te_trailers(headers)
        relay = self.relays[down.tag] = _Relay(down, te_down)
        # RFC 9110 7.6.1: TE and Connection are hop-by-hop; this hop writes its own.
        forward = [(n, v) for n, v in headers if n not in _HOP_BY_HOP]
        if te_down and self.policy != "drop":
            forward.append((b"te", b"trailers"))
        down.on_acked_payload = lambda n: self._acked(relay, n)
        relay.up = self.upstream_segment.request(tuple(forward), downstream=self, tag=down.tag)

    def _acked(self, relay: _Relay, nbytes: int) -> None:
        relay.acked_down = nbytes

    def _held(self, relay: _Relay) -> None:
        relay.held_max_bytes = max(relay.held_max_bytes, relay.received - relay.acked_down)

    def response_head(self, up: Exchange, headers, time_s: float) -> None:
        relay = self.relays[up.tag]
        relay.head_in_s = time_s
        relay.head = headers
        announced = any(n == b"trailer" for n, _ in headers)
        relay.buffering = self.policy == "store" or (self.policy == "merge" and not relay.te_down and announced)
        if not relay.buffering:
            relay.head_out_s = time_s
            relay.down.respond_head(tuple((n, v) for n, v in headers if n not in _HOP_BY_HOP))

    def response_data(self, up: Exchange, nbytes: int, time_s: float) -> None:
        relay = self.relays[up.tag]
        relay.received += nbytes
        self._held(relay)
        if not relay.buffering:
            relay.down.respond_data(nbytes)

    def response_trailers(self, up: Exchange, fields, time_s: float) -> None:
        relay = self.relays[up.tag]
        relay.trailers_in = len(fields)
        if relay.buffering:
            self._flush_buffered(relay, fields)
        elif relay.te_down and self.policy != "drop":
            relay.trailers_out = len(fields)
            relay.down.respond_trailers(fields)
        else:
            relay.dropped = [n for n, _ in fields]  # RFC 9110 6.5.1: discarded

    def response_end(self, up: Exchange, time_s: float) -> None:
        relay = self.relays[up.tag]
        relay.end_in_s = time_s
        if relay.buffering:
            if math.isnan(relay.head_out_s):  # no trailer section came
                self._flush_buffered(relay, ())
        elif relay.trailers_out == 0:
            relay.down.respond_end()
        relay.end_out_s = time_s

    def _flush_buffered(self, relay: _Relay, fields) -> None:
        """The whole message is here: forward it with its trailers (te_down, store) or with
        the mergeable ones merged into the header section (RFC 9110 6.5.1)."""
        relay.head_out_s = self.sim.now
        head = [(n, v) for n, v in relay.head if n not in _HOP_BY_HOP]
        forward_trailers = bool(fields) and relay.te_down
        if fields and not forward_trailers:
            merged = [(n, v) for n, v in fields if _fields.mergeable(n)]
            relay.merged = [n for n, _ in merged]
            relay.dropped = [n for n, _ in fields if not _fields.mergeable(n)]
            head = [(n, v) for n, v in head if n != b"trailer"] + merged
        if not forward_trailers:
            # the length is known now (RFC 9110 8.6); no chunked coding needed on HTTP/1.1
            head = [(n, v) for n, v in head if n != b"content-length"] + [
                (b"content-length", str(relay.received).encode())
            ]
        relay.down.respond_head(tuple(head), end=relay.received == 0 and not forward_trailers)
        if relay.received:
            relay.down.respond_data(relay.received, end=not forward_trailers)
        if forward_trailers:
            relay.trailers_out = len(fields)
            relay.down.respond_trailers(fields)


class _Client:
    def __init__(self, sim: Simulator, plans: list[ResponsePlan]) -> None:
        self.sim = sim
        self.segment: Segment | None = None
        self.plans = {p.index: p for p in plans}
        self.records: dict[int, dict] = {}
        self.open = 0

    def start(self, plan: ResponsePlan) -> None:
        rec = self.records[plan.index] = {
            "start_s": self.sim.now,
            "headers_s": math.nan,
            "first_body_s": math.nan,
            "trailers_s": math.nan,
            "end_s": math.nan,
            "body_bytes_received": 0,
            "arrived": {},
            "exchange": None,
        }
        self.open += 1
        rec["exchange"] = self.segment.request(plan.request_headers, downstream=self, tag=plan.index)

    def _arrive(self, rec: dict, fields, where: str, time_s: float) -> None:
        plan = self.plans[rec["exchange"].tag]
        names = {n for n, _ in plan.metadata}
        for n, v in fields:
            if n in names and n not in rec["arrived"]:
                rec["arrived"][n] = (where, time_s, v)

    def response_head(self, ex: Exchange, headers, time_s: float) -> None:
        rec = self.records[ex.tag]
        rec["headers_s"] = time_s
        self._arrive(rec, headers, "headers", time_s)

    def response_data(self, ex: Exchange, nbytes: int, time_s: float) -> None:
        rec = self.records[ex.tag]
        if math.isnan(rec["first_body_s"]):
            rec["first_body_s"] = time_s
        rec["body_bytes_received"] += nbytes

    def response_trailers(self, ex: Exchange, fields, time_s: float) -> None:
        rec = self.records[ex.tag]
        rec["trailers_s"] = time_s
        self._arrive(rec, fields, "trailers", time_s)

    def response_end(self, ex: Exchange, time_s: float) -> None:
        rec = self.records[ex.tag]
        rec["end_s"] = time_s
        plan = self.plans[ex.tag]
        if plan.metadata_in_body and rec["body_bytes_received"] == plan.body_bytes + plan.tail_bytes:
            self._arrive(rec, plan.metadata, "body", time_s)  # the last message was the metadata
        self.open -= 1


@dataclass
class ChainRun:
    """What one run of ``run_chain`` observed (raw records; the study makes tables)."""

    client: dict[int, dict]
    origin: dict[int, dict]
    hops: list[dict[int, _Relay]]
    segments: list[dict]
    sim_end_s: float
    events: int
    plans: list[ResponsePlan] = field(default_factory=list)


def _horizon_s(plans, config) -> float:
    """When a run that has not ended never will: an hour past what its responses take at the
    slowest (the last start, the think time, each body produced at its rate, and every byte
    through the slowest link, four times over), so a slow run is simulated to its end."""
    last_start = max((p.start_s for p in plans), default=0.0)
    produce_s = max((p.body_bytes / p.rate_bytes_per_s for p in plans if p.rate_bytes_per_s), default=0.0)
    rates = [b for b in (config.bandwidth_bps, config.hop_bandwidth_bps if config.hops else None) if b]
    total = sum(p.body_bytes + p.tail_bytes for p in plans)
    transfer_s = total * 8.0 / min(rates) if rates else 0.0
    return last_start + config.think_s + 4.0 * (produce_s + transfer_s) + 3600.0


def run_chain(plans: list[ResponsePlan], config: ChainConfig) -> ChainRun:
    """Every plan's exchange, started at its ``start_s``, through ``config.hops``."""
    for policy in config.hops:
        if policy not in POLICIES:
            raise ValueError(f"unknown hop policy {policy!r}")
    sim = Simulator(seed=config.seed)
    origin = _Origin(sim, config, {p.index: p for p in plans})
    hops = [_Hop(sim, i + 1, policy) for i, policy in enumerate(config.hops)]
    client = _Client(sim, plans)
    nodes = hops + [origin]
    # The client's segment runs on the study's network; the ones behind a hop on a lossless
    # link of the hop RTT and bandwidth.
    network = config.network or Network(
        rtt_s=config.rtt_s, bandwidth_bps=config.bandwidth_bps, loss=config.loss, cc=config.cc, seed=config.seed
    )
    if hops:
        hop_network = Network(
            rtt_s=config.hop_rtt_s, bandwidth_bps=config.hop_bandwidth_bps, cc=config.cc, seed=config.seed
        )
    segments = [
        Segment(sim, config, f"seg{i}", network=network if i == 0 else hop_network, upstream=upstream)
        for i, upstream in enumerate(nodes)
    ]
    client.segment = segments[0]
    for i, hop in enumerate(hops):
        hop.upstream_segment = segments[i + 1]
    for plan in plans:
        sim.call_at(plan.start_s, client.start, plan)
    sim.run(until_s=_horizon_s(plans, config))
    missing = [i for i, rec in client.records.items() if math.isnan(rec["end_s"])]
    if missing or len(client.records) != len(plans):
        raise RuntimeError(
            f"{len(missing)} of {len(plans)} responses never ended (simulation stopped at {sim.now:.3f} s)"
        )
    return ChainRun(
        client=client.records,
        origin=origin.records,
        hops=[h.relays for h in hops],
        segments=[s.stats() for s in segments],
        sim_end_s=sim.now,
        events=sim.events_run,
        plans=plans,
    )
