"""aioquic's QUIC connection as the h3 stack (``h3``) runs it, counting what aioquic does not
report: the STREAM frames it resends (``SimQuicConnection``, with ``SentRanges``), counted from
its own loss recovery so that no qlog is needed, and the bytes of TLS handshake messages its
server sends in CRYPTO frames (``server_crypto_bytes``, measured once in memory for the
handshake model).  Written by hand: aioquic has no API for either, so both reach into its
internals, which ``aioquic_patches.check()`` (run on import, before they are looked up)
verifies.  ``h3`` re-exports every name here."""

from __future__ import annotations

import bisect
import functools
import ssl

from aioquic.h3.connection import H3_ALPN
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.stream import QuicStreamSender

from . import aioquic_patches
from .common import CLIENT_ADDR, SERVER_ADDR
from .tls import make_certificate  # shared with the h2 stack's TLS

__all__ = ["SentRanges", "SimQuicConnection", "server_crypto_bytes"]

aioquic_patches.check()  # the aioquic these counters were written for, with the internals they use


class SentRanges:
    """Byte ranges of one stream's STREAM frames, to tell whether a frame's bytes all lie
    inside one of them.  Starts are kept sorted with the running maximum of their ends, so
    the question costs a bisection, not a walk over every range."""

    __slots__ = ("starts", "ends", "max_end")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.max_end: list[int] = []  # max_end[i] = max(ends[:i + 1])

    def covers(self, start: int, end: int) -> bool:
        """True if one range holds all of ``[start, end)``."""
        i = bisect.bisect_right(self.starts, start)  # ranges starting at or before `start`
        return i > 0 and self.max_end[i - 1] >= end

    def add(self, start: int, end: int) -> bool:
        """Record the range ``[start, end)``; true if one earlier range held all its bytes."""
        starts, ends, max_end = self.starts, self.ends, self.max_end
        i = bisect.bisect_right(starts, start)
        resent = i > 0 and max_end[i - 1] >= end
        starts.insert(i, start)
        ends.insert(i, end)
        if i == len(max_end):
            max_end.append(end if i == 0 or end > max_end[i - 1] else max_end[i - 1])
        else:  # lands inside: redo the maxima after it
            running = max_end[i - 1] if i else end
            max_end.insert(i, 0)
            for k in range(i, len(ends)):
                if ends[k] > running:
                    running = ends[k]
                max_end[k] = running
        return resent


class _CryptoCounting(QuicConnection):
    """aioquic's connection, adding up the CRYPTO data it hands its crypto streams."""

    crypto_bytes = 0

    def _push_crypto_data(self) -> None:
        self.crypto_bytes += sum(len(buf.data) for buf in self._crypto_buffers.values())
        super()._push_crypto_data()


@functools.cache
def server_crypto_bytes() -> int:
    """The bytes of TLS handshake messages aioquic's server sends in CRYPTO frames (RFC 9001
    section 4.1: ServerHello in Initial packets; EncryptedExtensions with the QUIC transport
    parameters, Certificate, CertificateVerify, Finished in Handshake packets), with the
    stacks' certificate: measured by running aioquic's handshake in memory, once."""
    client_config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    client_config.verify_mode = ssl.CERT_NONE
    client_config.server_name = "server.example"
    server_config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    server_config.certificate, server_config.private_key = make_certificate(0)
    client = QuicConnection(configuration=client_config)
    server = _CryptoCounting(
        configuration=server_config, original_destination_connection_id=client.original_destination_connection_id
    )
    client.connect(SERVER_ADDR, now=0.0)
    for _ in range(3):  # Initial; server flight; client Finished
        for data, _addr in client.datagrams_to_send(now=0.0):
            server.receive_datagram(data, CLIENT_ADDR, now=0.0)
        for data, _addr in server.datagrams_to_send(now=0.0):
            client.receive_datagram(data, SERVER_ADDR, now=0.0)
    if not server._handshake_complete:  # pragma: no cover - a full handshake is 1 RTT
        raise RuntimeError("aioquic's handshake did not complete in memory")
    return server.crypto_bytes


class SimQuicConnection(QuicConnection):
    """aioquic's ``QuicConnection``, counting the STREAM frames it sends whose bytes were all
    sent before in one frame (``stream_frames_resent``; RFC 9000 section 13.3: lost data
    goes out again in new frames).

    Counted from aioquic's own loss recovery, not from a qlog, and only where a resend can
    happen.  A stream sender hands out its bytes lowest pending offset first; a byte is
    pending again only after the one frame that carried it was declared lost
    (``QuicPacketRecovery._on_packets_lost``, the one path for detected losses and for
    PTO retransmissions alike: aioquic never has two copies of a byte in flight).  So a
    frame lies inside an earlier frame exactly when it lies inside an earlier *lost* one:
    the connection records the STREAM frames of each lost packet (its delivery handlers:
    the stream sender's ``on_data_delivery`` with ``(offset, offset + length, fin)``) and,
    from a stream's first loss on, checks the frames that stream's sender hands out
    (``get_frame``).  Streams that never lose a packet, i.e. nearly every packet sent,
    cost nothing.  The count equals the one read from a qlog's ``packet_sent`` frames
    (``stream_frames_resent_in_qlog``; a test checks it).  CRYPTO frames (a sender with
    no stream id) and frames without data (a lone FIN) do not count.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.stream_frames_resent = 0
        self._lost_frames: dict[int, SentRanges] = {}  # per stream id: its frames declared lost
        declare_lost = self._loss._on_packets_lost

        def on_packets_lost(*, packets, space, **kwargs) -> None:
            for packet in packets:  # (a list or tuple: every caller's)
                for handler, args in packet.delivery_handlers:
                    if getattr(handler, "__func__", None) is _DATA_DELIVERY and args[1] > args[0]:
                        self._frame_lost(handler.__self__, args[0], args[1])
            declare_lost(packets=packets, space=space, **kwargs)

        self._loss._on_packets_lost = on_packets_lost  # this connection's recovery only

    def _frame_lost(self, sender: QuicStreamSender, start: int, end: int) -> None:
        stream_id = sender._stream_id
        if stream_id is None:  # the CRYPTO stream
            return
        ranges = self._lost_frames.get(stream_id)
        if ranges is None:
            ranges = self._lost_frames[stream_id] = SentRanges()
        ranges.add(start, end)
        if "get_frame" not in vars(sender):  # watch the sender until its lost bytes are out
            get_frame = sender.get_frame

            def checked_get_frame(max_size: int, max_offset: int | None = None):
                frame = get_frame(max_size, max_offset)
                if frame is not None and frame.data and ranges.covers(frame.offset, frame.offset + len(frame.data)):
                    self.stream_frames_resent += 1
                if sender.next_offset >= sender.highest_offset:
                    del sender.get_frame  # only new data left: no resend until a loss
                return frame

            sender.get_frame = checked_get_frame


_DATA_DELIVERY = QuicStreamSender.on_data_delivery
