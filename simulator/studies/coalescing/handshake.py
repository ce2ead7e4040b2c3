"""A full handshake's round trips and bytes on the wire: TCP + TLS 1.3 for h2 (or TCP
alone, cleartext), QUIC for h3 with its anti-amplification limit.  The numbers are
modelling numbers, stated in the package docstring (``Handshakes``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...net.quic.packet import UDP_IP_HEADER_BYTES

__all__ = ["Handshake", "handshake", "chain_bytes", "CERT_CHAIN_BASE_BYTES", "QUIC_MIN_INITIAL_BYTES"]

TCP_SYN_BYTES, TCP_SYNACK_BYTES, TCP_ACK_BYTES = 60, 60, 52
TCP_HEADER_BYTES, TCP_MSS_BYTES = 52, 1448
TLS_CLIENT_HELLO_BYTES = 517
TLS_CLIENT_FINISHED_BYTES = 64
TLS_SERVER_FIXED_BYTES = 127 + 6 + 239        # ServerHello, CCS, EE + CertificateVerify + Finished
QUIC_SERVER_TLS_FIXED_BYTES = 282             # the same messages in CRYPTO frames (no records)
QUIC_MIN_INITIAL_BYTES = 1200                 # RFC 9000 section 14.1
QUIC_MAX_DATAGRAM_BYTES = 1200
QUIC_PACKET_OVERHEAD_BYTES = 42               # long header + AEAD tag
QUIC_CLIENT_FINISHED_BYTES = 36 + QUIC_PACKET_OVERHEAD_BYTES
AMPLIFICATION_FACTOR = 3                      # RFC 9000 section 8.1
CERT_CHAIN_BASE_BYTES = 1800


def chain_bytes(san: tuple[str, ...]) -> int:
    """The certificate chain's size: a base plus every dNSName (DER: tag, length, name)."""
    return CERT_CHAIN_BASE_BYTES + sum(len(n) + 2 for n in san)


@dataclass(frozen=True)
class Handshake:
    """One connection set-up: round trips, bytes each way, certificate and ORIGIN frame bytes."""

    protocol: str
    rtts: int
    client_bytes: int
    server_bytes: int
    cert_bytes: int
    origin_frame_bytes: int

    @property
    def bytes(self) -> int:
        """Bytes of the handshake, both directions."""
        return self.client_bytes + self.server_bytes

    def setup_s(self, rtt_s: float, bandwidth_bps: float | None) -> float:
        """Seconds to set up: ``rtts`` round trips plus the handshake bytes' serialisation at ``bandwidth_bps``."""
        serialisation = self.bytes * 8 / bandwidth_bps if bandwidth_bps else 0.0
        return self.rtts * rtt_s + serialisation


def _segments(n: int, size: int) -> int:
    return -(-n // size) if n > 0 else 0


def handshake(protocol: str, san: tuple[str, ...], origin_frame: int = 0, *, tls: bool = True) -> Handshake:
    """A full handshake's round trips and bytes on the wire (module docstring numbers).
    ``tls=False``: cleartext h2 (prior knowledge), the TCP handshake alone."""
    cert = chain_bytes(san)
    if protocol == "h2" and not tls:
        client = TCP_SYN_BYTES + TCP_ACK_BYTES
        server = TCP_SYNACK_BYTES + origin_frame + (TCP_HEADER_BYTES if origin_frame else 0)
        return Handshake("h2", 1, client, server, 0, origin_frame)
    if protocol == "h2":
        client_tls = TLS_CLIENT_HELLO_BYTES + TLS_CLIENT_FINISHED_BYTES
        server_tls = TLS_SERVER_FIXED_BYTES + cert + origin_frame
        client = (TCP_SYN_BYTES + TCP_ACK_BYTES + client_tls
                  + TCP_HEADER_BYTES * (_segments(TLS_CLIENT_HELLO_BYTES, TCP_MSS_BYTES) + 1))
        server = TCP_SYNACK_BYTES + server_tls + TCP_HEADER_BYTES * _segments(server_tls, TCP_MSS_BYTES)
        return Handshake("h2", 2, client, server, cert, origin_frame)
    payload = QUIC_SERVER_TLS_FIXED_BYTES + cert + origin_frame
    per = QUIC_MAX_DATAGRAM_BYTES - QUIC_PACKET_OVERHEAD_BYTES
    datagrams = _segments(payload, per)
    server_udp = payload + datagrams * QUIC_PACKET_OVERHEAD_BYTES
    received = QUIC_MIN_INITIAL_BYTES
    rtts, client = 1, QUIC_MIN_INITIAL_BYTES + UDP_IP_HEADER_BYTES
    # RFC 9000 section 8.1: at most 3x what the client sent until its address is validated;
    # more waits for the client's next Initial (padded to 1200 B, section 14.1), one RTT.
    while server_udp > AMPLIFICATION_FACTOR * received:
        rtts += 1
        received += QUIC_MIN_INITIAL_BYTES
        client += QUIC_MIN_INITIAL_BYTES + UDP_IP_HEADER_BYTES
    client += QUIC_CLIENT_FINISHED_BYTES + UDP_IP_HEADER_BYTES
    server = server_udp + datagrams * UDP_IP_HEADER_BYTES
    return Handshake("h3", rtts, client, server, cert, origin_frame)

