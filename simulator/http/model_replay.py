"""The same replay over the transport *models* (TCP model, QUIC model): the baseline the
real stacks are cross-validated against.  Written by hand, over the HTTP layer's model of
HTTP on the transports (``http.network.ModelNetwork``, the page-load model's network), so
that a replay and a page load put HTTP on the models the same way.

Every origin's connection opens at time 0 (each its own path), as ``replay`` opens the real
stacks'.  Per exchange, at its start time, the client sends its request on its origin's
connection and the server, ``think_s`` after the request has arrived (the spec's own, else
the parameters'), sends the response, its 103 and pushes first if the spec has them.  What
the network model does, as the stacks do:

- HTTP/2 over the TCP model: TCP's three-way handshake (unless ``tcp_handshake=False``),
  with ``tls`` the TLS 1.3 flights of OpenSSL's sizes (``http.handshake``), 22 bytes per
  TLS record; the h2 connection preface and SETTINGS of the ``h2`` library's sizes and the
  SETTINGS ACKs; header blocks sized as ``hpack`` encodes them after ``h2``'s own
  normalisation, one dynamic table per connection and direction; a DATA frame header per
  16 KiB; every response handed to TCP whole when it is ready, as the h2 stack does
  (``scheduler="fifo"``).  With ``tls=False`` the model writes the h2 stack's bytes at its
  instants.
- HTTP/3 over the QUIC model: the QUIC model's handshake (its server flight of aioquic's
  CRYPTO bytes), aioquic's 1 ms ACK delay and initial RTT of 100 ms, its exit from slow
  start on a rising RTT, pacing, lost data resent in its stream's turn; responses served
  round-robin, a packet's worth per stream per turn, pulled when a packet may leave, as
  aioquic builds packets from its streams' send buffers (``QuicConnection._write_application``).

Same ``Result`` shape as ``replay``: ``stack`` is ``"tcp-model"`` or ``"quic-model"``.
Pushed responses cross the path but get no rows of their own.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

import pandas as pd

from .. import __version__
from ..engine import Simulator
from ..net.transport import timer_counts
from ..traces.model import Trace
from ..stacks.common import ExchangeSpec, Recorder, Result, StackParams, StackStalled, run_until, schedule_requests
from ..stacks.replay import specs_from_trace
from .network import ModelNetwork

__all__ = ["run", "run_specs", "last_completion_s", "MODEL_FOR"]

MODEL_FOR = {"h2": "tcp", "h3": "quic"}


@dataclass(frozen=True)
class _NetworkParams:
    """What ``ModelNetwork`` reads of a load's parameters, from the replay's."""

    params: StackParams

    def __getattr__(self, name: str):
        return getattr(self.params, name)

    @property
    def scheduler(self) -> str:
        # The h2 stack hands each response to TCP whole; aioquic serves its streams round-robin.
        return "fifo" if self.params.stack == "h2" else "round-robin"

    def origin(self, origin: str) -> tuple[float, str, float]:
        """(RTT, protocol, set-up delay) of every origin: the replay's one RTT and stack, no DNS."""
        return self.params.rtt_s, self.params.stack, 0.0


class _Rows:
    """The network model's listener: fills the recorder's rows of the request exchanges."""

    done = False

    def __init__(self, sim: Simulator, recorder: Recorder) -> None:
        self.sim, self.recorder = sim, recorder
        self.rows: dict[int, tuple[ExchangeSpec, dict]] = {}

    def on_response_start(self, index: int) -> None:
        """The response's first bytes have reached the client."""
        _, row = self.rows[index]
        row["headers_s"] = self.sim.now
        row["status"] = 200
        self.recorder.progress()

    def on_response_complete(self, index: int) -> None:
        """All of the response has reached the client."""
        spec, row = self.rows[index]
        row["body_bytes"] = spec.response_body_bytes
        self.recorder.end(row)

    def on_informational(self, index: int, links) -> None:
        """A 103 has arrived (its bytes are the network model's; the row notes the time)."""
        _, row = self.rows[index]
        row["informational_s"] = self.sim.now
        row["link_headers"] = len(links)

    def on_push_promise(self, push_key, url: str) -> None:
        """A PUSH_PROMISE has arrived (pushes get no rows)."""

    def on_push_complete(self, push_key) -> None:
        """A pushed response has arrived."""


class _Session:
    """One origin's connection, as ``schedule_requests`` hands it its exchanges."""

    def __init__(self, net: ModelNetwork, rows: _Rows, origin: str, think_s: float) -> None:
        self.net, self.rows, self.origin, self.think_s = net, rows, origin, think_s
        net.connect(origin)

    def request(self, spec: ExchangeSpec, row: dict) -> None:
        """Send ``spec``'s request now; ``row`` is its row in the recorder."""
        row["request_sent_s"] = self.net.sim.now
        if spec.think_s is None:
            spec = replace(spec, think_s=self.think_s)
        self.rows.rows[spec.index] = (spec, row)
        self.net.fetch(self.origin, spec)


def _simulate(specs: list[ExchangeSpec], params: StackParams, check_every_event: bool):
    """Run the replay to its end: (simulator, recorder, network model)."""
    sim = Simulator(params.seed)
    recorder = Recorder(sim)
    rows = _Rows(sim, recorder)
    net = ModelNetwork(
        sim,
        _NetworkParams(params),
        rows,
        own_paths=True,
        max_datagram_bytes=params.max_datagram_bytes,
        tcp_handshake=params.tcp_handshake,
    )

    # Every origin's connection opens at the start, as ``replay`` opens the real stacks'.
    origins = dict.fromkeys(spec.origin for spec in specs)
    sessions = {origin: _Session(net, rows, origin, params.think_s) for origin in origins}
    last_start = schedule_requests(sim, specs, sessions, recorder)
    started = [False]

    def all_started() -> None:
        started[0] = True
        sim.stop()

    sim.call_at(last_start, all_started)
    recorder.on_all_done = sim.stop

    # The models never give up (no idle timeout, unlike aioquic): a replay that cannot end
    # meets the run loop's deadline.  A slow one is simulated to its end: the deadline is 100
    # idle timeouts past the last request, or DEADLINE_FACTOR times what the bytes take at
    # the bottleneck plus a round trip per exchange, whichever is later (5 bit/s is slow).
    deadline_s, basis = _deadline_s(specs, params, last_start)
    try:
        run_until(
            sim,
            lambda: started[0] and recorder.done,
            check=lambda: None,
            deadline_s=deadline_s,
            safe_until=None if check_every_event else (lambda: deadline_s),
        )
    except StackStalled:
        raise StackStalled(
            f"the replay stalled: exchanges were still open when virtual time passed "
            f"{deadline_s:.0f} s ({basis}): a replay that cannot end, not a slow one (see the "
            "path's loss and bandwidth: --loss, --bw, --rtt)"
        ) from None
    return sim, recorder, net


DEADLINE_FACTOR = 4


def _deadline_s(specs: list[ExchangeSpec], params: StackParams, last_start_s: float) -> tuple[float, str]:
    """The virtual time by which a replay that progresses has ended, and how it was set."""
    wire_bytes = sum(
        s.request_body_bytes + max(s.response_body_bytes, params.default_body_bytes) + 1024 for s in specs
    )  # 1 KB of headers and framing each
    transfer_s = 0.0 if params.bandwidth_bps is None else wire_bytes * 8 / params.bandwidth_bps
    slow_s = DEADLINE_FACTOR * (transfer_s + (len(specs) + 1) * params.rtt_s)
    idle_s = 100 * params.idle_timeout_s
    if slow_s <= idle_s:
        return last_start_s + idle_s, f"100 idle timeouts of {params.idle_timeout_s:g} s past the last request"
    bw = f"{params.bandwidth_bps:g} bit/s" if params.bandwidth_bps is not None else "no bandwidth limit"
    return last_start_s + slow_s, (
        f"{DEADLINE_FACTOR}x what {wire_bytes:,} bytes take at {bw} plus "
        f"{len(specs) + 1} round trips of {params.rtt_s * 1000:g} ms"
    )


def last_completion_s(specs: list[ExchangeSpec], params: StackParams) -> float | None:
    """When the last exchange of ``specs`` completed (the summary's ``last_completion_s``),
    without building the per-exchange table: for studies that replay many small visits."""
    _, recorder, _ = _simulate(specs, params, False)
    done = [row["complete_s"] for row in recorder.rows if not math.isnan(row["complete_s"])]
    return float(max(done)) if done else None


def run_specs(specs: list[ExchangeSpec], params: StackParams, *, check_every_event: bool = False) -> Result:
    """Replay ``specs`` over the model of ``params.stack``'s transport (h2 -> TCP, h3 -> QUIC).
    ``check_every_event``: the reference run loop (as in ``replay.run_specs``)."""
    transport = MODEL_FOR[params.stack]
    sim, recorder, net = _simulate(specs, params, check_every_event)
    df = recorder.frame()
    completed = df[df["completed"]]
    times = completed["completion_s"].tolist()
    packets_sent = packets_lost = retransmissions = 0
    for conn in net.conns.values():
        for link in (conn.path.forward, conn.path.reverse):
            packets_sent += link.stats.packets_sent
            packets_lost += link.stats.packets_lost + link.stats.packets_dropped
        retransmissions += conn.t.stats().get("packets_lost", 0)
    summary = {
        "stack": f"{transport}-model",
        "exchanges": int(len(df)),
        "completed": int(len(completed)),
        "last_completion_s": float(completed["complete_s"].max()) if len(completed) else None,
        "median_completion_s": float(statistics.median(times)) if times else None,
        "mean_completion_s": float(sum(times) / len(times)) if times else None,
        "packets_sent": packets_sent,
        "packets_lost": packets_lost,
        "retransmissions": retransmissions,
        **timer_counts(conn.t.stats() for conn in net.conns.values()),
        "connections": len(net.conns),
        "sim_end_s": sim.now,
        "events": sim.events_run,
    }
    # Every row carries the parameters: the new columns joined in one step (pandas inserts
    # a column at a time, which cost more than the replay itself on small pages).
    extra = {**params.to_dict(), "stack": summary["stack"]}
    for k in [k for k in extra if k in df.columns]:
        df[k] = extra[k]
    df = pd.concat(
        [df, pd.DataFrame({k: [v] * len(df) for k, v in extra.items() if k not in df.columns}, index=df.index)], axis=1
    )
    return Result(exchanges=df, summary=summary, params={**params.to_dict(), "version": __version__})


def run(
    trace: Trace, params: StackParams | None = None, *, max_gap_s: float = 10.0, check_every_event: bool = False
) -> Result:
    """Replay ``trace`` on the transport models (no real HTTP stack): a Result shaped like ``replay.run``'s."""
    params = params or StackParams()
    return run_specs(specs_from_trace(trace, params, max_gap_s=max_gap_s), params, check_every_event=check_every_event)
