"""Header blocks and their compression instructions over the transport models, events out.

Written by hand, for the HOL study (``studies.hol``), which carries the real header blocks
of every scheme it compares (QCRAM included, which no library implements) because
head-of-line blocking depends on which bytes arrive when.  A ``HeaderBlockConnection`` frames
what a scheme's encoder wrote and reports what arrives, as h2 and aioquic report events:

- ``H3Blocks``, HTTP/3 over the QUIC model (or the 2017 reference network): a HEADERS frame
  (RFC 9114 section 7.2.2) on each request stream, the QPACK encoder and decoder streams
  as unidirectional streams of types 0x02 and 0x03 (RFC 9204 section 4.2);
- ``H2Blocks``, HTTP/2 over the TCP model: HEADERS and CONTINUATION frames (RFC 9113
  sections 6.2, 6.10) on the one byte stream, the instructions of QPACK and QCRAM (which
  have no HTTP/2 mapping) in extension frames on stream 0 (types 0xf0 and 0xf1; RFC 9113
  section 5.5), so that they can be compared over TCP.

Its events are ``http.events``' header-block events (the one set every connection of
``simulator/http`` reports), each naming the direction (``kind``) it belongs to:
``HeaderBlockArrived`` (every byte of a block's frames is at the receiver, in order or not:
TCP's head-of-line blocking is the time from there to ``HeaderBlockReceived``),
``HeaderBlockReceived`` (whole, in order), the instructions delivered and what was acknowledged.
"""

from __future__ import annotations

from collections import deque

from ..frames import H2Scanner, H3Scanner, h2_frame, h3_frame
from ..net.tcp import TcpConnection
from .connection import ModelConnection, _bound
from .events import (
    DecoderStreamReceived,
    EncoderStreamAcked,
    EncoderStreamReceived,
    HeaderBlockAcked,
    HeaderBlockArrived,
    HeaderBlockReceived,
)
from .framing import H2_MAX_FRAME_BYTES

__all__ = ["HeaderBlockConnection", "H2Blocks", "H3Blocks"]


# ---------------------------------------------------------------------------------------
# The connections: HTTP/3 framing over the QUIC model, HTTP/2 framing over the TCP model.
# Receivers find frame boundaries with the frame scanner (C when built).


class HeaderBlockConnection(ModelConnection):
    """Frames a connection's header blocks and compression instructions, and reports what
    arrives as events (``on_event``).  ``kind`` names a direction: "request" (client to
    server) or "response"; the encoder of a kind sits at its sender, the decoder at its
    receiver.  ``version``: "h3" over QUIC or the 2017 network, "h2" over TCP."""

    def __init__(self, transport, version: str) -> None:
        super().__init__(transport, version)
        self.bind(self.on_data, self.on_stream_acked)

    @classmethod
    def over(cls, transport) -> "HeaderBlockConnection":
        """Header blocks over ``transport``: ``H2Blocks`` on the TCP model, ``H3Blocks`` on the others."""
        return H2Blocks(transport) if isinstance(transport, TcpConnection) else H3Blocks(transport)


class H3Blocks(HeaderBlockConnection):
    """HTTP/3: a HEADERS frame (RFC 9114 section 7.2.2) on each request stream; QPACK
    encoder and decoder streams as unidirectional streams of types 0x02 and 0x03
    (RFC 9204 section 4.2); QCRAM's control stream takes the encoder type."""

    STREAM_TYPE = {"encoder": 0x02, "decoder": 0x03}

    def __init__(self, transport) -> None:
        super().__init__(transport, "h3")
        self.uni_out: dict[tuple[str, str], int] = {}  # (kind, role) -> stream id
        self.uni_in: dict[tuple[int, int], int | None] = {}  # (endpoint, stream) -> stream type
        self.scanners: dict[tuple[int, int], H3Scanner] = {}  # (endpoint, stream) -> its scanner
        self.block_frames: dict[tuple[int, int], int] = {}  # (sender, stream) -> frame bytes, until acked

    def send_instructions(self, kind: str, role: str, data: bytes) -> None:
        """Write ``role``'s (encoder or decoder) instructions of the ``kind`` direction on its stream."""
        endpoint = self.sender(kind) if role == "encoder" else self.receiver(kind)
        stream_id = self.uni_out.get((kind, role))
        if stream_id is None:
            stream_id = self.uni_out[(kind, role)] = endpoint.open_stream(unidirectional=True)
            data = bytes([self.STREAM_TYPE[role]]) + data
        endpoint.write(stream_id, data)

    def send_block(self, kind: str, stream_id: int, block: bytes) -> int:
        """Write header block ``block`` of ``kind`` on ``stream_id``; the bytes written with framing."""
        frame = h3_frame(0x1, block)  # HEADERS (RFC 9114 section 7.2.2)
        sender = self.sender(kind)
        self.block_frames[(id(sender), stream_id)] = len(frame)
        sender.write(stream_id, frame, end=True)
        return len(frame)

    def on_data(self, endpoint, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        """Bytes arrived at ``endpoint`` on ``stream_id``: the events they complete."""
        key = (id(endpoint), stream_id)
        if stream_id & 0x2:  # unidirectional
            stream_type = self.uni_in.get(key)
            if stream_type is None:
                stream_type, data = data[0], data[1:]  # one-byte varint types
                self.uni_in[key] = stream_type
            if not data:
                return
            if stream_type == self.STREAM_TYPE["encoder"]:
                self.on_event(EncoderStreamReceived(self.incoming(endpoint), data, time_s))
            else:
                self.on_event(DecoderStreamReceived(self.outgoing(endpoint), data))
            return
        scanner = self.scanners.get(key)
        if scanner is None:
            scanner = self.scanners[key] = H3Scanner(kind="request")
        # The scanner keeps a frame's bytes until it is whole and hands back its payload.
        for ftype, payload in scanner.feed_frames(data):
            if ftype == 0x01:  # HEADERS
                self.on_event(HeaderBlockReceived(self.incoming(endpoint), stream_id, payload, time_s))
        if end:
            del self.scanners[key]

    def on_stream_acked(self, endpoint, stream_id: int, acked_offset: int) -> None:
        """``endpoint``'s peer acknowledged ``stream_id`` up to ``acked_offset``."""
        kind = self.outgoing(endpoint)
        if self.uni_out.get((kind, "encoder")) == stream_id:
            self.on_event(EncoderStreamAcked(kind, acked_offset - 1))  # less the stream-type byte
            return
        frame_bytes = self.block_frames.get((id(endpoint), stream_id))
        if frame_bytes is not None and acked_offset >= frame_bytes:
            del self.block_frames[(id(endpoint), stream_id)]
            self.on_event(HeaderBlockAcked(kind, stream_id))


class H2Blocks(HeaderBlockConnection):
    """HTTP/2 over the one TCP byte stream per direction: HEADERS (+ CONTINUATION) frames
    (RFC 9113 sections 6.2, 6.10) on odd stream ids.  QPACK and QCRAM have no HTTP/2
    mapping; to run them over TCP for comparison, their encoder and decoder instructions
    travel in extension frames on stream 0 (types 0xf0 and 0xf1; RFC 9113 section 5.5
    lets peers that agree use extension frames)."""

    LABEL = 0  # the transport model's label for the connection's byte stream
    MAX_FRAME = H2_MAX_FRAME_BYTES  # SETTINGS_MAX_FRAME_SIZE default (RFC 9113 section 6.5.2)
    EXT_TYPE = {"encoder": 0xF0, "decoder": 0xF1}

    def __init__(self, transport) -> None:
        super().__init__(transport, "h2")
        for endpoint in (transport.client, transport.server):
            endpoint.on_received = _bound(self.on_received, endpoint)
        self.sent = {id(transport.client): 0, id(transport.server): 0}  # bytes written per sender
        # Per sender: frames awaiting acknowledgement, in stream order:
        #   [end offset, ("block", kind, stream id) | ("encoder", kind, encoder-stream offset)]
        self.unacked: dict[int, deque] = {id(transport.client): deque(), id(transport.server): deque()}
        self.encoder_sent: dict[str, int] = {"request": 0, "response": 0}
        # Per receiver: blocks whose bytes are not all received yet: stream id -> [start, end, covered ranges]
        self.in_flight: dict[int, dict[int, list]] = {id(transport.client): {}, id(transport.server): {}}
        self.scanners: dict[int, list] = {}  # receiver -> [H2Scanner, the open header block's fragments]

    @staticmethod
    def h2_stream_id(stream_id: int) -> int:
        """The study numbers streams as QUIC does (0, 4, 8, ...); HTTP/2 clients use 1, 3, 5."""
        return 2 * (stream_id >> 2) + 1

    def _write(self, endpoint, frames: bytes, ack_tag: tuple) -> tuple[int, int]:
        start = self.sent[id(endpoint)]
        end = start + len(frames)
        self.sent[id(endpoint)] = end
        self.unacked[id(endpoint)].append((end, ack_tag))
        endpoint.write(self.LABEL, frames)
        return start, end

    def send_instructions(self, kind: str, role: str, data: bytes) -> None:
        """Write ``role``'s (encoder or decoder) instructions of the ``kind`` direction on its stream."""
        endpoint = self.sender(kind) if role == "encoder" else self.receiver(kind)
        frames = b"".join(
            h2_frame(self.EXT_TYPE[role], 0, 0, data[i : i + self.MAX_FRAME])
            for i in range(0, len(data), self.MAX_FRAME)
        )
        if role == "encoder":
            self.encoder_sent[kind] += len(data)
            self._write(endpoint, frames, ("encoder", kind, self.encoder_sent[kind]))
        else:
            self._write(endpoint, frames, ("decoder", kind, 0))

    def send_block(self, kind: str, stream_id: int, block: bytes) -> int:
        """Write header block ``block`` of ``kind`` on ``stream_id``; the bytes written with framing."""
        h2_stream = self.h2_stream_id(stream_id)
        chunks = [block[i : i + self.MAX_FRAME] for i in range(0, len(block), self.MAX_FRAME)] or [b""]
        frames = []
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            if i == 0:  # END_STREAM 0x1 on HEADERS; END_HEADERS 0x4 on the last frame
                frames.append(h2_frame(0x1, 0x1 | (0x4 if last else 0), h2_stream, chunk))
            else:
                frames.append(h2_frame(0x9, 0x4 if last else 0, h2_stream, chunk))
        wire = b"".join(frames)
        sender = self.sender(kind)
        start, end = self._write(sender, wire, ("block", kind, stream_id))
        self.in_flight[id(self.receiver(kind))][stream_id] = [start, end, []]
        return len(wire)

    def on_received(self, endpoint, label: int, offset: int, length: int, time_s: float) -> None:
        """Connection bytes reached the receiver, maybe out of order (TCP's HOL blocking)."""
        pending = self.in_flight[id(endpoint)]
        end = offset + length
        for stream_id, block in list(pending.items()):
            start, stop, cover = block
            if offset < stop and end > start:
                cover.append((max(offset, start), min(end, stop)))
                cover.sort()
                reach = start
                for a, b in cover:
                    if a > reach:
                        break
                    reach = max(reach, b)
                if reach >= stop:
                    del pending[stream_id]
                    self.on_event(HeaderBlockArrived(self.incoming(endpoint), stream_id, time_s))

    def on_data(self, endpoint, label: int, data: bytes, end: bool, time_s: float) -> None:
        """Bytes arrived at ``endpoint`` on TCP stream ``label``: the events they complete."""
        state = self.scanners.get(id(endpoint))
        if state is None:
            state = self.scanners[id(endpoint)] = [H2Scanner(self.MAX_FRAME, preface=False), b""]
        # The scanner keeps a frame's bytes until it is whole and hands back its payload.
        for ftype, flags, h2_stream, payload in state[0].feed_frames(data):
            if ftype in (0x1, 0x9):  # HEADERS, CONTINUATION
                state[1] += payload
                if flags & 0x4:  # END_HEADERS: the block is whole
                    block, state[1] = state[1], b""
                    stream_id = (h2_stream - 1) // 2 << 2
                    self.on_event(HeaderBlockReceived(self.incoming(endpoint), stream_id, block, time_s))
            elif ftype == self.EXT_TYPE["encoder"]:
                self.on_event(EncoderStreamReceived(self.incoming(endpoint), payload, time_s))
            elif ftype == self.EXT_TYPE["decoder"]:
                self.on_event(DecoderStreamReceived(self.outgoing(endpoint), payload))

    def on_stream_acked(self, endpoint, label: int, acked_offset: int) -> None:
        """``endpoint``'s peer acknowledged TCP stream ``label`` up to ``acked_offset``."""
        queue = self.unacked[id(endpoint)]
        while queue and queue[0][0] <= acked_offset:
            _, (what, kind, value) = queue.popleft()
            if what == "block":
                self.on_event(HeaderBlockAcked(kind, value))
            elif what == "encoder":
                self.on_event(EncoderStreamAcked(kind, value))
