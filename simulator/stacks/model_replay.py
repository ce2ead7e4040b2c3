"""The same replay over the transport *models* (TCP model, QUIC model): the baseline the
real stacks are cross-validated against.  Written by hand.

A deliberately thin HTTP-like layer: per exchange the client writes one request of
``request_bytes(spec)`` on a new stream and the server, ``think_s`` after the request has
ended, writes one response of ``response_bytes(spec)`` and ends the stream.  Sizes
approximate the real framing:

- request: the header block as HPACK (``hpack.Encoder``, one per connection and
  direction, so the dynamic table works as in the real stack) encodes the request
  header list, plus the frame header (HTTP/2: 9 bytes, RFC 9113 section 4.1; HTTP/3:
  about 3, RFC 9114 section 7.1) and the request body.  Over QUIC the size is HPACK's
  too: QPACK with a dynamic table compresses about as well, and the difference is a few
  bytes per request.  (Raw, uncompressed header sizes made every request several times
  too big, more segments to lose, and the model's page loads at 1% loss 50% slower.)
- response: the response header block likewise, plus the body plus one DATA frame header
  per 16 KiB (HTTP/2) or one per response (HTTP/3, as aioquic writes it).

Connection set-up: the TCP model runs its own three-way handshake, as the h2 stack does,
and then, with ``params.tls`` (the default; ``http.handshake.TlsOverTcp``), a TLS 1.3 full handshake
carried as TCP bytes, as the h2 stack's OpenSSL does: the client's first flight, the
server's flight, the client's Finished, of the sizes OpenSSL gives them with the h2
stack's contexts and the origin's SNI name (``http.handshake.flights``), subject to
the path's loss like any segment, before the first request -- one round trip more than
cleartext (RFC 8446 section 2), so the first response cannot arrive before 3 RTT.  Every
request and response then costs 22 bytes per TLS record of up to 16 KiB
(``http.handshake.tls_record_bytes``; the h2 stack writes each of its flushes as such records); what the
model leaves out is that a record is usable only once all of it has arrived.  With
``tls=False`` only the TCP handshake.  The QUIC model runs its handshake model
(``handshake=True``: the client's padded Initial, the server's flight of aioquic's CRYPTO bytes
(``http.handshake.flights``: one datagram), the client's Finished,
each subject to loss and recovered by a probe timeout, as aioquic's are), and requests
written before it completes wait in the client's send queue, as they do in aioquic.
The QUIC model also acknowledges 1 ms after an ack-eliciting packet (aioquic's ACK delay),
with ACKs riding in data packets, paces as aioquic does, and resends lost data in its
stream's turn rather than ahead of everything (aioquic hands it back to the stream).

Stream scheduling: aioquic serves streams round-robin (a stream that sent moves to the
end of its queue, ``QuicConnection._write_application``), the QUIC model sends in write
order.  Over the QUIC model the server therefore writes responses round-robin itself,
one datagram's worth per stream per turn, keeping no more written-but-unacknowledged
bytes than the model's congestion window or two bandwidth-delay products, whichever is
smaller (``on_stream_acked`` is the back-pressure), so
the model's send queue never holds more than the window and new responses join the
rotation at once.  Without this the model's median completion of a page is twice the
real stack's (small responses wait behind large ones).  h2 and the TCP model both send
in write order already.

Same ``Result`` shape as ``replay``: ``stack`` is ``"tcp-model"`` or ``"quic-model"``.
"""

from __future__ import annotations

import math
import statistics
from collections import deque

import hpack
import pandas as pd

from .. import __version__
from ..engine import Simulator
from ..errors import InputError
from ..http.framing import H2_FRAME_HEADER_BYTES, H2_MAX_FRAME_BYTES, H3_FRAME_HEADER_BYTES
from ..http.handshake import TlsOverTcp, flights, tls_record_bytes
from ..net.link import Path
from ..net.quic import QuicConnection
from ..net.tcp import TcpConnection
from ..net.transport import TransportConfig
from ..traces.model import Trace, raw_size
from .common import (ExchangeSpec, Recorder, Result, StackParams, StackStalled, idle_safe_until, run_until,
                     schedule_requests)
from .replay import specs_from_trace
from .tls import sni_name

__all__ = ["run", "run_specs", "request_bytes", "response_bytes", "MODEL_FOR"]

MODEL_FOR = {"h2": "tcp", "h3": "quic"}
AIOQUIC_ACK_DELAY_S = 0.001                   # aioquic's QuicConnection._ack_delay (K_GRANULARITY)
_H2_FRAME_HEADER = H2_FRAME_HEADER_BYTES
_H3_FRAME_HEADER = H3_FRAME_HEADER_BYTES


def request_bytes(spec: ExchangeSpec, transport: str, header_block_bytes: int | None = None) -> int:
    """Bytes of the request on the wire; ``header_block_bytes`` defaults to the raw header size."""
    frame = _H2_FRAME_HEADER if transport == "tcp" else _H3_FRAME_HEADER
    body = spec.request_body_bytes + (frame if spec.request_body_bytes else 0)
    block = raw_size(spec.request_headers) if header_block_bytes is None else header_block_bytes
    return block + frame + body


def response_bytes(spec: ExchangeSpec, transport: str, header_block_bytes: int | None = None) -> int:
    """Bytes of the response on the wire: header block, frame headers (HTTP/2 DATA split at 16384), body."""
    body = spec.response_body_bytes
    if transport == "tcp":
        framing = _H2_FRAME_HEADER * max(1, math.ceil(body / H2_MAX_FRAME_BYTES)) if body else 0
    else:
        framing = _H3_FRAME_HEADER if body else 0
    frame = _H2_FRAME_HEADER if transport == "tcp" else _H3_FRAME_HEADER
    block = raw_size(spec.response_headers) if header_block_bytes is None else header_block_bytes
    return block + frame + body + framing


class _ModelSession:
    def __init__(self, sim: Simulator, path: Path, params: StackParams, recorder: Recorder, transport: str,
                 name: str, origin: str = "https://server.example") -> None:
        self.sim, self.path, self.params, self.recorder, self.transport = sim, path, params, recorder, transport
        self.tls: TlsOverTcp | None = None
        self._waiting: list[tuple[ExchangeSpec, dict]] = []      # requests before the TLS handshake ends
        if transport == "tcp":
            config = TransportConfig(cc=params.cc)
            self.conn = TcpConnection(sim, path, config, name=name, handshake=params.tcp_handshake)
        else:
            # aioquic's defaults where the two differ: initial RTT 100 ms (RFC 9002 says 333 ms).
            config = TransportConfig(cc=params.cc, max_datagram_bytes=params.max_datagram_bytes, initial_rtt_s=0.1)
            # As aioquic: an ACK 1 ms (its timer granularity) after an ack-eliciting packet, pacing,
            # the handshake's datagrams (requests wait in the send queue until it completes), and
            # lost data resent in its stream's turn (aioquic puts it back in the stream's buffer).
            self.conn = QuicConnection(sim, path, config, name=name, handshake=True, ack_delay_s=AIOQUIC_ACK_DELAY_S,
                                       retransmit_in_turn=True,
                                       server_flight_bytes=flights(sni_name(origin)).quic_server_crypto)
        self.rows: dict[int, tuple[ExchangeSpec, dict]] = {}
        self._request_encoder = hpack.Encoder()
        self._response_encoder = hpack.Encoder()
        self.conn.client.on_data = self._client_data
        self.conn.server.on_data = self._server_data
        # Round-robin response writer (QUIC): [stream_id, bytes still to write]
        self._active: deque[list[int]] = deque()
        self._written: dict[int, int] = {}
        self._acked: dict[int, int] = {}
        self._unacked_bytes = 0
        self._chunk_bytes = params.max_datagram_bytes - 40
        # Unsent data waits in aioquic's round-robin stream queue, not in one FIFO: cap what the
        # writer hands the model at two bandwidth-delay products (measured on the small page at
        # 0% loss: with one BDP the model's median is 22% below aioquic's, with no cap 2.3x it).
        bdp = params.bandwidth_bps * params.rtt_s / 8 if params.bandwidth_bps else float("inf")
        self._pacing_cap_bytes = 2 * bdp
        if transport == "quic":
            self.conn.server.on_stream_acked = self._on_stream_acked
        elif params.tls:
            self.tls = TlsOverTcp(self.conn, flights(sni_name(origin)), self._tls_ready)

    def _tls_ready(self) -> None:
        waiting, self._waiting = self._waiting, []
        for spec, row in waiting:
            self.request(spec, row)

    def _wire_bytes(self, nbytes: int) -> int:
        return tls_record_bytes(nbytes) if self.tls is not None else nbytes

    def request(self, spec: ExchangeSpec, row: dict) -> None:
        if self.tls is not None and not self.tls.done:
            self._waiting.append((spec, row))
            return
        sid = self.conn.client.open_stream()
        row["stream_id"] = sid
        row["request_sent_s"] = self.sim.now
        self.rows[sid] = (spec, row)
        block = len(self._request_encoder.encode(list(spec.request_headers)))
        self.conn.client.write(sid, b"q" * self._wire_bytes(request_bytes(spec, self.transport, block)), end=True)

    def _server_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        if self.tls is not None and stream_id == self.tls.stream_id:
            self.tls.server_data(len(data))
            return
        if end:
            self.recorder.progress()
            self.sim.call_later(self.params.think_s, self._respond, stream_id)

    def _respond(self, stream_id: int) -> None:
        spec, _ = self.rows[stream_id]
        size = response_bytes(spec, self.transport, len(self._response_encoder.encode(list(spec.response_headers))))
        if self.transport == "tcp":
            self.conn.server.write(stream_id, b"r" * self._wire_bytes(size), end=True)
            return
        self._active.append([stream_id, size])
        self._fill()

    def _fill(self) -> None:
        server = self.conn.server
        window = max(min(server.cc.cwnd_bytes, self._pacing_cap_bytes), 2 * self._chunk_bytes)
        active = self._active
        while active and self._unacked_bytes < window:
            entry = active.popleft()
            stream_id, remaining = entry
            n = min(remaining, self._chunk_bytes)
            entry[1] = remaining - n
            self._written[stream_id] = self._written.get(stream_id, 0) + n
            self._unacked_bytes += n
            server.write(stream_id, b"r" * n, end=entry[1] == 0)
            if entry[1]:
                active.append(entry)              # served: to the end of the rotation

    def _on_stream_acked(self, stream_id: int, acked_offset: int) -> None:
        acked = min(acked_offset, self._written.get(stream_id, 0))
        self._unacked_bytes -= acked - self._acked.get(stream_id, 0)
        self._acked[stream_id] = acked
        self._fill()

    def _client_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        if self.tls is not None and stream_id == self.tls.stream_id:
            self.tls.client_data(len(data))
            return
        spec, row = self.rows[stream_id]
        self.recorder.progress()
        if math.isnan(row["headers_s"]):
            row["headers_s"] = time_s
            row["status"] = 200
        row["body_bytes"] += len(data)
        if end:
            row["body_bytes"] = spec.response_body_bytes     # the wire bytes included headers
            self.recorder.end(row)

    def stats(self) -> dict:
        s = self.conn.stats()
        return {"retransmissions": s.get("packets_lost", 0)}


def _simulate(specs: list[ExchangeSpec], params: StackParams, check_every_event: bool):
    """Run the replay to its end: (simulator, recorder, sessions by origin)."""
    if not specs:
        raise InputError("nothing to replay: no exchanges")
    transport = MODEL_FOR[params.stack]
    sim = Simulator(seed=params.seed)
    recorder = Recorder(sim)
    sessions: dict[str, _ModelSession] = {}
    for i, origin in enumerate(dict.fromkeys(s.origin for s in specs)):
        path = Path(sim, rtt_s=params.rtt_s, bandwidth_bps=params.bandwidth_bps, queue_bytes=params.queue_bytes,
                    loss=params.loss, name=f"path{i}")
        sessions[origin] = _ModelSession(sim, path, params, recorder, transport, name=f"{transport}{i}",
                                         origin=origin)

    last_start = schedule_requests(sim, specs, sessions, recorder)
    started = [False]

    def all_started() -> None:
        started[0] = True
        sim.stop()

    sim.call_at(last_start, all_started)
    recorder.on_all_done = sim.stop

    def check() -> None:
        if sim.now >= last_start and sim.now - recorder.last_progress_s > params.idle_timeout_s:
            raise StackStalled(f"idle timeout reached: no exchange progressed for {params.idle_timeout_s:g} s")

    run_until(sim, lambda: started[0] and recorder.done, check=check, deadline_s=last_start + 100 * params.idle_timeout_s,
              safe_until=None if check_every_event else idle_safe_until(recorder, last_start, params.idle_timeout_s))
    return sim, recorder, sessions


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
    sim, recorder, sessions = _simulate(specs, params, check_every_event)
    df = recorder.frame()
    completed = df[df["completed"]]
    times = completed["completion_s"].tolist()
    packets_sent = packets_lost = retransmissions = 0
    for session in sessions.values():
        for link in (session.path.forward, session.path.reverse):
            packets_sent += link.stats.packets_sent
            packets_lost += link.stats.packets_lost + link.stats.packets_dropped
        retransmissions += session.stats()["retransmissions"]
    summary = {
        "stack": f"{transport}-model", "exchanges": int(len(df)), "completed": int(len(completed)),
        "last_completion_s": float(completed["complete_s"].max()) if len(completed) else None,
        "median_completion_s": float(statistics.median(times)) if times else None,
        "mean_completion_s": float(sum(times) / len(times)) if times else None,
        "packets_sent": packets_sent, "packets_lost": packets_lost, "retransmissions": retransmissions,
        "connections": len(sessions), "sim_end_s": sim.now, "events": sim.events_run,
    }
    # Every row carries the parameters: the new columns joined in one step (pandas inserts
    # a column at a time, which cost more than the replay itself on small pages).
    extra = {**params.to_dict(), "stack": summary["stack"]}
    for k in [k for k in extra if k in df.columns]:
        df[k] = extra[k]
    df = pd.concat([df, pd.DataFrame({k: [v] * len(df) for k, v in extra.items() if k not in df.columns},
                                     index=df.index)], axis=1)
    return Result(exchanges=df, summary=summary, params={**params.to_dict(), "version": __version__})


def run(trace: Trace, params: StackParams | None = None, *, max_gap_s: float = 10.0,
        check_every_event: bool = False) -> Result:
    """Replay ``trace`` on the transport models (no real HTTP stack): a Result shaped like ``replay.run``'s."""
    params = params or StackParams()
    return run_specs(specs_from_trace(trace, params, max_gap_s=max_gap_s), params,
                     check_every_event=check_every_event)
