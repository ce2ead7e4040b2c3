"""The network model of the 2017 HOL-blocking simulator (HTTP Workshop, London, June 2017).

Written by hand from its published description (the simulator itself was published in
Facebook's proxygen C++ library, and its model and results were shown at the workshop), so
that a study can run on the exact model behind the published numbers as well as on the real
transport models:

- one-way delay RTT/2; independent loss with probability ``loss_p`` per packet;
- each loss adds a retransmission delay of RTT x U(1.1, 2.0), drawn again while the
  retransmission is lost too;
- with probability 0.05 an extra delay of U(0, 100 ms), which reorders packets;
- packets of at most 1400 bytes; writes at the same instant share packets;
- acknowledgements are packets too, with the same delay and loss;
- no bandwidth, no congestion control, no queue.

Delivery is per stream, in each stream's own order (as QUIC): HOL blocking between
streams comes only from the header compression.  The application interface is the one
of ``transport.py``, so the HOL study runs over it unchanged (``transport="ref2017"``).
"""

from __future__ import annotations

from typing import Callable

from ..engine import Simulator
from .transport import DataCallback, stream_id_for

__all__ = ["Ref2017Connection"]


class _Endpoint:
    def __init__(self, conn: "Ref2017Connection", is_client: bool) -> None:
        self.conn = conn
        self.is_client = is_client
        self.peer: _Endpoint | None = None
        self.on_data: DataCallback | None = None
        self.on_stream_acked: Callable[[int, int], None] | None = None
        self.on_received: Callable[[int, int, int, float], None] | None = None
        self._next = [0, 0]  # bidi, uni stream indices
        self._send_offset: dict[int, int] = {}
        self._pending: list[tuple[int, int, bytes, bool]] = []
        self._flush_scheduled = False
        # Receiving: per stream, delivered offset and held (offset -> (data, fin)).
        self._delivered: dict[int, int] = {}
        self._held: dict[int, dict[int, tuple[bytes, bool]]] = {}
        # Sending: per stream, acknowledged ranges and the contiguous acked prefix.
        self._acked: dict[int, list[tuple[int, int]]] = {}
        self._acked_prefix: dict[int, int] = {}

    def open_stream(self, unidirectional: bool = False) -> int:
        kind = 1 if unidirectional else 0
        index = self._next[kind]
        self._next[kind] += 1
        return stream_id_for(index, client=self.is_client, unidirectional=unidirectional)

    def write(self, stream_id: int, data: bytes, end: bool = False) -> None:
        offset = self._send_offset.get(stream_id, 0)
        self._send_offset[stream_id] = offset + len(data)
        self._pending.append((stream_id, offset, bytes(data), end))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.conn.sim.call_soon(self._flush)

    def _flush(self) -> None:
        """Cut the instant's writes into packets of at most mtu_bytes of stream data."""
        self._flush_scheduled = False
        mtu = self.conn.mtu_bytes
        packet: list[tuple[int, int, bytes, bool]] = []
        room = mtu
        for stream_id, offset, data, end in self._pending:
            while True:
                take = data[:room]
                packet.append((stream_id, offset, take, end and len(take) == len(data)))
                room -= len(take)
                offset += len(take)
                data = data[len(take) :]
                if room == 0:
                    self.conn.send(self, packet)
                    packet, room = [], mtu
                if not data:
                    break
        if packet:
            self.conn.send(self, packet)
        self._pending = []

    def receive(self, frames) -> None:
        now = self.conn.sim.now
        for stream_id, offset, data, fin in frames:
            if self.on_received is not None and data:
                self.on_received(stream_id, offset, len(data), now)
            delivered = self._delivered.get(stream_id, 0)
            if offset + len(data) <= delivered and not (fin and not data and offset == delivered):
                continue  # a duplicate
            self._held.setdefault(stream_id, {})[offset] = (data, fin)
            self._deliver(stream_id)

    def _deliver(self, stream_id: int) -> None:
        held = self._held[stream_id]
        delivered = self._delivered.get(stream_id, 0)
        parts, end = [], False
        while delivered in held:
            data, fin = held.pop(delivered)
            parts.append(data)
            delivered += len(data)
            end = end or fin
            if not data:
                break
        self._delivered[stream_id] = delivered
        if parts and self.on_data is not None:
            self.on_data(stream_id, b"".join(parts), end, self.conn.sim.now)

    def acked(self, frames) -> None:
        for stream_id, offset, data, _fin in frames:
            ranges = self._acked.setdefault(stream_id, [])
            ranges.append((offset, offset + len(data)))
            ranges.sort()
            prefix = self._acked_prefix.get(stream_id, 0)
            for start, stop in ranges:
                if start > prefix:
                    break
                prefix = max(prefix, stop)
            if prefix > self._acked_prefix.get(stream_id, 0):
                self._acked_prefix[stream_id] = prefix
                self._acked[stream_id] = [(s, e) for s, e in ranges if e > prefix]
                if self.on_stream_acked is not None:
                    self.on_stream_acked(stream_id, prefix)


class Ref2017Connection:
    """Two endpoints joined by the 2017 model.  ``stats()`` counts packets (data and
    acks, both ways, retransmissions included) and losses."""

    ACK_BYTES = 40

    def __init__(
        self,
        sim: Simulator,
        *,
        rtt_s: float,
        loss_p: float = 0.0,
        mtu_bytes: int = 1400,
        reorder_prob: float = 0.05,
        reorder_max_s: float = 0.100,
        name: str = "ref2017",
    ) -> None:
        self.sim = sim
        self.rtt_s = rtt_s
        self.loss_p = loss_p
        self.mtu_bytes = mtu_bytes
        self.reorder_prob = reorder_prob
        self.reorder_max_s = reorder_max_s
        self._rng = sim.rng(f"{name}/net")
        self.client = _Endpoint(self, True)
        self.server = _Endpoint(self, False)
        self.client.peer, self.server.peer = self.server, self.client
        self.packets = 0
        self.losses = 0

    def _delay_s(self) -> float:
        """One packet's one-way delay, its retransmissions and its reordering delay."""
        r = self._rng.random
        delay = self.rtt_s / 2
        self.packets += 1
        while r() < self.loss_p:
            self.losses += 1
            self.packets += 1  # the retransmission is a packet too
            delay += self.rtt_s * (1.1 + 0.9 * r())
        if r() < self.reorder_prob:
            delay += r() * self.reorder_max_s
        return delay

    def send(self, sender: _Endpoint, frames) -> None:
        """Deliver ``frames`` to the peer after one packet's delay, retransmissions and reordering included."""
        self.sim.call_later(self._delay_s(), self._arrive, sender, frames)

    def _arrive(self, sender: _Endpoint, frames) -> None:
        sender.peer.receive(frames)
        # The acknowledgement: a packet back, with the same delay and loss.
        self.sim.call_later(self._delay_s(), sender.acked, frames)

    def stats(self) -> dict:
        """Packets sent (retransmissions and acks included) and packets lost."""
        return {
            "packets_sent": self.packets,
            "packets_lost": self.losses,
            "wire_packets": self.packets,
            "wire_losses": self.losses,
        }
