"""What setting up a connection costs: TCP, TLS 1.3 over TCP, and QUIC (RFC 9001).  The one
handshake model of the workbench; written by hand around sizes measured on the real stacks.

Sizes are measured, not assumed:

- **TLS 1.3 over TCP**: the three flights (ClientHello; ServerHello ... Finished; the client's
  Finished) as the real OpenSSL writes them (``stacks.tls.handshake_flight_bytes``: X25519,
  TLS_AES_256_GCM_SHA384, an Ed25519 certificate, middlebox compatibility mode, no session
  tickets).  The ClientHello carries the server name (RFC 6066 section 3), so it grows with
  it, and from 256 B on OpenSSL pads it to 512 B (RFC 7685): 257 B for
  ``server.example``, 517 B for a long name.
- **QUIC**: the server's CRYPTO bytes as aioquic writes them (``stacks.h3.server_crypto_bytes``:
  the same TLS messages without records or ChangeCipherSpec, plus the QUIC transport
  parameters in EncryptedExtensions, RFC 9001 section 8.2).  Its datagrams are the QUIC
  model's (``net.quic.handshake``): the client's Initial and its Finished padded to a full
  datagram (RFC 9000 section 14.1), the server's flight in full datagrams.
- **The certificate chain** is a parameter, ``cert_chain_bytes``: the DER bytes of the
  certificates the server sends.  It replaces the stacks' one 260-B certificate in the
  server's flight, over TCP and over QUIC alike.  Left out, the flights are the stacks'
  own, so a model and a real stack carry the same handshake bytes.

Two uses of the one model:

- ``flights(server_name, cert_chain_bytes)``: the message sizes, for the models that carry a
  handshake packet by packet over the transport models (the replay model, the page-load
  model).  ``TlsOverTcp`` plays the TLS flights over a TCP model connection; the QUIC
  model takes ``Flights.quic_server_crypto`` as its server flight.
- ``handshake(protocol, ...)``: a closed form (round trips, bytes each way) for a model that
  times set-ups without packets (the coalescing study's connection pool).

- **Chromium's client flights over TCP** (``client="chromium"``), measured in the lab's captures
  (Chromium 156): a ClientHello of 1,956 B plus the server name, for its hybrid X25519MLKEM768
  key share (RFC 8446 section 4.2.8; Chrome sends one since version 124) and an ECH GREASE
  extension whose payload takes one of four sizes 32 B apart (1,908-2,004 B: their middle);
  its ChangeCipherSpec and Finished 64 B.  QUIC's Initials are the QUIC model's.

Left out: resumption and 0-RTT, HelloRetryRequest, client certificates.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..net.quic.handshake import server_flight_sizes
from ..net.quic.packet import UDP_IP_HEADER_BYTES
from ..net.transport import TransportConfig
from ..stacks.tls import MAX_RECORD_PLAINTEXT_BYTES as TLS_MAX_RECORD_PLAINTEXT_BYTES
from ..stacks.tls import RECORD_OVERHEAD_BYTES as TLS_RECORD_OVERHEAD_BYTES
from ..stacks.tls import certificate_der_bytes, handshake_flight_bytes

__all__ = [
    "Flights",
    "flights",
    "Handshake",
    "handshake",
    "TlsOverTcp",
    "tls_record_bytes",
    "TLS_RECORD_OVERHEAD_BYTES",
    "TLS_MAX_RECORD_PLAINTEXT_BYTES",
    "AMPLIFICATION_FACTOR",
    "TLS_CLIENTS",
]

TCP_SYN_BYTES, TCP_SYNACK_BYTES, TCP_ACK_BYTES = 60, 60, 52  # IPv4 + TCP with options
TCP_HEADER_BYTES, TCP_MSS_BYTES = 52, 1448  # IPv4 + TCP with timestamps, per data segment
AMPLIFICATION_FACTOR = 3  # RFC 9000 section 8.1


def tls_record_bytes(nbytes: int) -> int:
    """``nbytes`` of plaintext written at once as TLS 1.3 records of up to 16 KiB (RFC 8446 section 5.2)."""
    return nbytes + TLS_RECORD_OVERHEAD_BYTES * -(-nbytes // TLS_MAX_RECORD_PLAINTEXT_BYTES)


@dataclass(frozen=True)
class Flights:
    """A full handshake's message sizes: the TLS 1.3 flights as records over TCP, and the
    QUIC server's CRYPTO bytes."""

    client_hello: int  # the ClientHello record (over TCP)
    server_flight: int  # ServerHello, ChangeCipherSpec, EncryptedExtensions ... Finished
    client_finished: int  # the client's ChangeCipherSpec and Finished
    cert_chain_bytes: int  # the certificates' DER bytes, part of both server sizes

    @property
    def tls_client_bytes(self) -> int:
        """The client's TLS bytes over TCP."""
        return self.client_hello + self.client_finished

    @property
    def quic_server_crypto(self) -> int:
        """The server's handshake messages in CRYPTO frames (RFC 9001 section 4.1), as aioquic
        sends them, with this chain (measured once, when first asked for: aioquic is imported
        only then)."""
        return _quic_server_crypto(self.cert_chain_bytes)


@functools.lru_cache(maxsize=1 << 10)
def _quic_server_crypto(cert_chain_bytes: int) -> int:
    """``Flights.quic_server_crypto`` for a chain of ``cert_chain_bytes`` (a function of it alone: memoized)."""
    from ..stacks.h3 import server_crypto_bytes

    return server_crypto_bytes() + cert_chain_bytes - certificate_der_bytes()


# Chromium's ClientHello record beyond its server name, and its second flight (module docstring).
CHROMIUM_CLIENT_HELLO_BYTES = 1956
CHROMIUM_CLIENT_FINISHED_BYTES = 64
TLS_CLIENTS = ("stack", "chromium")


@functools.lru_cache(maxsize=1 << 12)
def flights(server_name: str | None, cert_chain_bytes: int | None = None, client: str = "stack") -> Flights:
    """The handshake's sizes to a server named ``server_name`` (None: no SNI) presenting a
    chain of ``cert_chain_bytes`` (default: the stacks' certificate), from ``client``: the
    stacks' OpenSSL or Chromium (``TLS_CLIENTS``).  The TLS flights are measured on OpenSSL once
    per name; the sizes (frozen) are memoized, as every connection of a load to the same name
    asks again."""
    if client not in TLS_CLIENTS:
        raise ValueError(f"client must be one of {TLS_CLIENTS}, got {client!r}")
    hello, server, finished = handshake_flight_bytes(server_name)
    if client == "chromium":
        hello, finished = CHROMIUM_CLIENT_HELLO_BYTES + len(server_name or ""), CHROMIUM_CLIENT_FINISHED_BYTES
    stack_cert = certificate_der_bytes()
    chain = stack_cert if cert_chain_bytes is None else cert_chain_bytes
    extra = chain - stack_cert
    # The Certificate message is one record while it fits 16 KiB; a bigger one needs more.
    cert_message = stack_cert + 13  # handshake header, context, list length, entry lengths (RFC 8446 4.4.2)
    more_records = -(-(cert_message + extra) // TLS_MAX_RECORD_PLAINTEXT_BYTES) - -(
        -cert_message // TLS_MAX_RECORD_PLAINTEXT_BYTES
    )
    return Flights(hello, server + extra + TLS_RECORD_OVERHEAD_BYTES * more_records, finished, chain)


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


def handshake(
    protocol: str,
    server_name: str | None,
    cert_chain_bytes: int | None = None,
    origin_frame: int = 0,
    *,
    tls: bool = True,
) -> Handshake:
    """A full handshake's round trips and bytes on the wire, packets' headers included.

    ``h2``: TCP's three-way handshake (1 RTT), then with ``tls`` the TLS 1.3 flights (1 RTT
    more, RFC 8446 section 2) in segments of ``TCP_MSS_BYTES``; ``tls=False`` is cleartext
    h2 (prior knowledge), the TCP handshake alone.  ``h3``: QUIC's 1-RTT handshake, plus
    one round trip each time the server's flight would exceed three times what the client
    has sent before its address is validated (RFC 9000 section 8.1): the client's next
    padded datagram lets more out.  ``origin_frame`` bytes (an ORIGIN frame, RFC 8336) go
    with the server's first flight."""
    f = flights(server_name, cert_chain_bytes)
    if protocol == "h2" and not tls:
        client = TCP_SYN_BYTES + TCP_ACK_BYTES
        server = TCP_SYNACK_BYTES + origin_frame + (TCP_HEADER_BYTES if origin_frame else 0)
        return Handshake("h2", 1, client, server, 0, origin_frame)
    if protocol == "h2":
        server_tls = f.server_flight + (tls_record_bytes(origin_frame) if origin_frame else 0)
        client = (
            TCP_SYN_BYTES
            + TCP_ACK_BYTES
            + f.tls_client_bytes
            + TCP_HEADER_BYTES * (_segments(f.client_hello, TCP_MSS_BYTES) + 1)
        )
        server = TCP_SYNACK_BYTES + server_tls + TCP_HEADER_BYTES * _segments(server_tls, TCP_MSS_BYTES)
        return Handshake("h2", 2, client, server, f.cert_chain_bytes, origin_frame)
    config = TransportConfig()
    datagram = config.max_datagram_bytes
    sizes = server_flight_sizes(config, f.quic_server_crypto + origin_frame)
    server_udp = sum(sizes)
    received = datagram
    rtts, client = 1, datagram + UDP_IP_HEADER_BYTES
    while server_udp > AMPLIFICATION_FACTOR * received:
        rtts += 1
        received += datagram
        client += datagram + UDP_IP_HEADER_BYTES
    client += datagram + UDP_IP_HEADER_BYTES  # the client's Finished, padded as the QUIC model's
    server = server_udp + len(sizes) * UDP_IP_HEADER_BYTES
    return Handshake("h3", rtts, client, server, f.cert_chain_bytes, origin_frame)


class TlsOverTcp:
    """A TLS 1.3 full handshake as byte counts over a TCP model connection (RFC 8446 section
    2): the ClientHello on a stream label of its own, the server's flight once all of the
    ClientHello has arrived, the client's Finished once all of the server's flight has.
    ``on_client_ready`` then (TLS 1.3 clients send application data right after their
    Finished); ``on_server_ready`` when the client's Finished is in (no 0.5-RTT data)."""

    def __init__(self, conn, f: Flights, on_client_ready, on_server_ready=None) -> None:
        self.client, self.server = conn.client, conn.server
        self.flights = f
        self.on_client_ready, self.on_server_ready = on_client_ready, on_server_ready
        self.stream_id = conn.client.open_stream()
        self.done = False
        self._at_server = self._at_client = 0
        conn.client.write(self.stream_id, b"h" * f.client_hello)

    def server_data(self, n: int) -> None:
        """``n`` handshake bytes have reached the server."""
        self._at_server += n
        f = self.flights
        if self._at_server == f.client_hello:
            self.server.write(self.stream_id, b"s" * f.server_flight)
        elif self._at_server == f.client_hello + f.client_finished and self.on_server_ready is not None:
            self.on_server_ready()

    def client_data(self, n: int) -> None:
        """``n`` handshake bytes have reached the client."""
        self._at_client += n
        if self._at_client == self.flights.server_flight:
            self.client.write(self.stream_id, b"f" * self.flights.client_finished)
            self.done = True
            self.on_client_ready()
