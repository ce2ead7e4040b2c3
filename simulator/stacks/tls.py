"""TLS 1.3 for the h2 stack: the real OpenSSL (Python's ``ssl``) over memory BIOs, in
virtual time.  Written by hand around ``ssl.SSLContext.wrap_bio`` (sans-I/O: bytes in,
bytes out, no socket and no clock).

``TlsEnd`` is one end of a TLS connection: the ciphertext it produces (handshake flights,
application records) goes to a writer callback -- the TCP model's byte stream -- and the
ciphertext that TCP delivers is fed to it, plaintext coming out as whole records arrive
(a record is opened only once all of it is there: RFC 8446 section 5.2).  Plaintext written
before the handshake has completed is held and sent, in order, right after it.

What the simulation sees of TLS is its sizes and its round trips, and both are fixed:
- TLS 1.3 only (RFC 8446), ALPN ``h2`` offered by the client and required of the server
  (RFC 7301; RFC 9113 section 3.2): a connection that negotiates anything else raises.
- The server's certificate is the in-memory Ed25519 one of ``make_certificate`` (fixed
  names, serial and validity; Ed25519 signatures are always 64 bytes), written to a
  temporary directory only for ``load_cert_chain`` (OpenSSL reads files) and removed at
  once.  The client does not verify it (verification would read the wall clock).
- No session tickets (``num_tickets = 0``: no resumption is modelled, and a ticket would
  be one more post-handshake record); no record padding (OpenSSL's default); X25519 key
  share and one AEAD suite (OpenSSL's first, TLS_AES_256_GCM_SHA384).  Every TLS 1.3 AEAD
  suite has a 16-byte tag, so an application record costs 22 bytes more than its
  plaintext: 5 of record header, 1 of inner content type, 16 of tag (RFC 8446 section 5.2).
  OpenSSL writes a ``write()`` as records of at most 16,384 plaintext bytes (section 5.1).
- OpenSSL's randomness (client and server randoms, key shares, the legacy session id)
  changes ciphertext *contents* only, never a size or a time: the same seed gives the
  same simulation results, while captures differ in their bytes.
- The ClientHello carries the origin's host as SNI (RFC 6066 section 3), so its size
  depends on the name (OpenSSL also pads a ClientHello of 256-511 bytes to 512, RFC 7685).
- Middlebox compatibility mode is on (OpenSSL's default, as browsers do): each side sends
  one 6-byte ChangeCipherSpec record during the handshake (RFC 8446 appendix D.4).

With the key log (``keylog_path``: SSLKEYLOGFILE format, written by the client context),
Wireshark/tshark decrypt a capture of the TCP model's segments.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import os
import re
import ssl
import tempfile
from typing import Callable

from ..errors import InputError

__all__ = [
    "make_certificate",
    "certificate_der_bytes",
    "TlsContexts",
    "TlsEnd",
    "contexts",
    "handshake_flight_bytes",
    "sni_name",
    "RECORD_OVERHEAD_BYTES",
    "MAX_RECORD_PLAINTEXT_BYTES",
    "ALPN_H2",
]

ALPN_H2 = "h2"
RECORD_HEADER_BYTES = 5  # RFC 8446 section 5.1: type, legacy version, length
RECORD_OVERHEAD_BYTES = 5 + 1 + 16  # header, inner content type, AEAD tag (section 5.2)
MAX_RECORD_PLAINTEXT_BYTES = 1 << 14  # section 5.1
_READ_BYTES = 1 << 17

_CERTS: dict[int, tuple] = {}
_CONTEXTS: dict[int, "TlsContexts"] = {}
_FLIGHTS: dict[str | int, tuple[int, int, int]] = {}  # by name, or by a plain name's length
# DNS labels as IDNA leaves them, the first starting with a letter (never read as an IP
# address, which gets no SNI: Python's ssl asks OpenSSL's a2i_IPADDRESS).
_PLAIN_NAME = re.compile(r"[a-z][a-z0-9-]{0,62}(\.[a-z0-9-]{1,63})*")


def make_certificate(seed: int):
    """A self-signed Ed25519 certificate and key, the same for the same seed (cached)."""
    cached = _CERTS.get(seed)
    if cached is not None:
        return cached
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.x509.oid import NameOID

    key = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"workbench-cert-{seed}".encode()).digest())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "server.example")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1000 + seed % 1000)
        .not_valid_before(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))
        .not_valid_after(datetime.datetime(2120, 1, 1, tzinfo=datetime.timezone.utc))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("server.example")]), critical=False)
        .sign(key, None)
    )
    _CERTS[seed] = (cert, key)
    return cert, key


@functools.cache
def certificate_der_bytes() -> int:
    """Bytes of the stacks' certificate in DER (the same for every seed: the serial is always 2 bytes)."""
    return len(base64.b64decode(b"".join(_SEED0_CERTIFICATE_PEM.splitlines()[1:-1])))


# make_certificate(0)'s certificate as PEM.  Every model run's TLS is measured with it
# (contexts(0), certificate_der_bytes), and it is fixed (Ed25519 signatures are deterministic),
# so it is written here once: cryptography's x509 module (about a tenth of a second to import
# and build with) is not needed for it.  tests/test_stacks_tls.py holds it to the one built.
_SEED0_CERTIFICATE_PEM = b"""-----BEGIN CERTIFICATE-----
MIIBADCBs6ADAgECAgID6DAFBgMrZXAwGTEXMBUGA1UEAwwOc2VydmVyLmV4YW1w
bGUwIBcNMjAwMTAxMDAwMDAwWhgPMjEyMDAxMDEwMDAwMDBaMBkxFzAVBgNVBAMM
DnNlcnZlci5leGFtcGxlMCowBQYDK2VwAyEANSdfz2cKiCFo2+B5TkNg3NJdpKSv
47BIj5fOt9zn66WjHTAbMBkGA1UdEQQSMBCCDnNlcnZlci5leGFtcGxlMAUGAytl
cANBABeT6oEKUSBEOxe7UM6tji4BsaPtF4ESVQovGJd511lsyv+bWTfvlR/F9RzN
iWd63lMy/+AaPN5zdUVesyzUewY=
-----END CERTIFICATE-----
"""
_ED25519_PKCS8_PREFIX = bytes.fromhex("302e020100300506032b657004220420")  # RFC 8410 section 7, then the 32-byte key


def _pem_pair(seed: int) -> tuple[bytes, bytes]:
    """``make_certificate(seed)``'s certificate and key as PEM (seed 0's certificate as written above)."""
    if seed != 0:
        from cryptography.hazmat.primitives import serialization

        cert, key = make_certificate(seed)
        return cert.public_bytes(serialization.Encoding.PEM), key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    key_der = (
        _ED25519_PKCS8_PREFIX + hashlib.sha256(f"workbench-cert-{seed}".encode()).digest()
    )  # make_certificate's key
    return _SEED0_CERTIFICATE_PEM, b"-----BEGIN PRIVATE KEY-----\n" + base64.encodebytes(
        key_der
    ) + b"-----END PRIVATE KEY-----\n"


class TlsContexts:
    """The client and server ``SSLContext`` of a run (TLS 1.3 only, ALPN h2)."""

    def __init__(self, seed: int, keylog_path: str | None = None) -> None:
        cert_pem, key_pem = _pem_pair(seed)
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory(prefix="workbench-tls-") as tmp:
            cert_path, key_path = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
            with open(cert_path, "wb") as fh:
                fh.write(cert_pem)
            with open(key_path, "wb") as fh:
                fh.write(key_pem)
            server.load_cert_chain(cert_path, key_path)
        server.num_tickets = 0  # no NewSessionTicket records (no resumption modelled)
        client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client.check_hostname = False
        client.verify_mode = ssl.CERT_NONE  # verification would read the wall clock
        for ctx in (server, client):
            ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
            ctx.set_alpn_protocols([ALPN_H2])
        if keylog_path is not None:
            try:
                client.keylog_filename = keylog_path
            except OSError as exc:
                raise InputError(f"cannot write the key log: {exc.strerror or exc}", path=keylog_path) from None
        self.client, self.server = client, server


def contexts(seed: int) -> TlsContexts:
    """The contexts without a key log, cached per seed (a key log is per run: ``TlsContexts``)."""
    ctx = _CONTEXTS.get(seed)
    if ctx is None:
        ctx = _CONTEXTS[seed] = TlsContexts(seed)
    return ctx


def sni_name(origin: str) -> str | None:
    """The TLS server name of an origin (``https://host:port`` -> ``host``); None for an IP
    literal (RFC 6066 section 3: no SNI for addresses)."""
    host = origin.split("://", 1)[-1].split("/", 1)[0]
    if host.startswith("["):
        return None
    host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if not host or host.replace(".", "").isdigit() or ":" in host:
        return None
    return host


def _records(data: bytes) -> int:
    """Count the TLS records in ``data`` (whole records, as OpenSSL writes them)."""
    n = pos = 0
    end = len(data)
    while pos < end:
        pos += RECORD_HEADER_BYTES + int.from_bytes(data[pos + 3 : pos + 5], "big")
        n += 1
    if pos != end:  # pragma: no cover - OpenSSL only writes whole records into a memory BIO
        raise RuntimeError("TLS output ended inside a record")
    return n


class TlsEnd:
    """One end of a TLS 1.3 connection over memory BIOs.

    ``write_ciphertext(data)`` receives every byte this end sends (to be written into the
    TCP byte stream); ``send(plaintext)`` writes application data (held until the handshake
    completes); ``receive(ciphertext) -> plaintext`` takes what TCP delivered and returns the
    application bytes of the records now complete.  The client starts its handshake at once.
    """

    def __init__(
        self,
        ctx: TlsContexts,
        *,
        is_client: bool,
        write_ciphertext: Callable[[bytes], None],
        server_hostname: str | None = None,
    ) -> None:
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        context = ctx.client if is_client else ctx.server
        self.obj = context.wrap_bio(
            self._in, self._out, server_side=not is_client, server_hostname=server_hostname if is_client else None
        )
        self.is_client = is_client
        self._write = write_ciphertext
        self._held: list[bytes] = []
        self.handshake_done = False
        self.alpn: str | None = None
        self.cipher: str | None = None
        # Bytes this end wrote: handshake flights (ChangeCipherSpec included), and application
        # data as plaintext and as the records carrying it.
        self.handshake_bytes = 0
        self.handshake_records = 0
        self.plaintext_bytes = 0
        self.record_bytes = 0
        self.records = 0
        if is_client:
            self._handshake()

    def _handshake(self) -> None:
        try:
            self.obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        else:
            self.handshake_done = True
        out = self._out.read()
        if out:
            self.handshake_bytes += len(out)
            self.handshake_records += _records(out)
            self._write(out)
        if self.handshake_done:
            self.alpn = self.obj.selected_alpn_protocol()
            if self.alpn != ALPN_H2:
                # RFC 9113 section 3.2: HTTP/2 over TLS is negotiated with ALPN "h2".
                raise RuntimeError(f"TLS negotiated ALPN {self.alpn!r}, not {ALPN_H2!r}")
            self.cipher = self.obj.cipher()[0]
            held, self._held = self._held, []
            for data in held:
                self.send(data)

    def send(self, plaintext: bytes) -> None:
        """Encrypt ``plaintext`` into TLS records and write them (held until the handshake completes)."""
        if not plaintext:
            return
        if not self.handshake_done:
            self._held.append(plaintext)
            return
        self.obj.write(plaintext)
        out = self._out.read()
        self.plaintext_bytes += len(plaintext)
        self.record_bytes += len(out)
        self.records += _records(out)
        self._write(out)

    def receive(self, ciphertext: bytes) -> bytes:
        """Take ciphertext from the peer: advance the handshake, return the application bytes it decrypts to."""
        self._in.write(ciphertext)
        if not self.handshake_done:
            self._handshake()
            if not self.handshake_done:
                return b""
        chunks = []
        read = self.obj.read
        while True:
            try:
                data = read(_READ_BYTES)
            except ssl.SSLWantReadError:
                break
            if not data:  # close_notify: never sent here
                break
            chunks.append(data)
        out = self._out.read()  # post-handshake messages (none with tickets off)
        if out:
            self.handshake_bytes += len(out)
            self.handshake_records += _records(out)
            self._write(out)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def stats(self) -> dict:
        """Bytes and records: handshake, application plaintext, and the records carrying it."""
        return {
            "handshake_bytes": self.handshake_bytes,
            "handshake_records": self.handshake_records,
            "plaintext_bytes": self.plaintext_bytes,
            "record_bytes": self.record_bytes,
            "records": self.records,
        }


def session_ticket_bytes(tickets: int = 2) -> int:
    """The bytes of the NewSessionTicket records (RFC 8446 section 4.6.1) an OpenSSL server
    writes once the client's Finished is in: ``tickets`` of them (OpenSSL's default is two,
    ``SSL_CTX_set_num_tickets``), measured by running one handshake in memory (cached)."""
    size = _TICKETS.get(tickets)
    if size is not None:
        return size
    ctx = TlsContexts(0)
    ctx.server.num_tickets = tickets
    flights: list[list[bytes]] = [[], []]
    client = TlsEnd(ctx, is_client=True, write_ciphertext=flights[0].append, server_hostname=None)
    server = TlsEnd(ctx, is_client=False, write_ciphertext=flights[1].append)
    hello = b"".join(flights[0])
    flights[0].clear()
    server.receive(hello)
    client.receive(b"".join(flights[1]))
    flights[1].clear()
    server.receive(b"".join(flights[0]))
    size = _TICKETS[tickets] = len(b"".join(flights[1]))
    return size


_TICKETS: dict[int, int] = {}


def handshake_flight_bytes(server_hostname: str | None) -> tuple[int, int, int]:
    """The sizes OpenSSL gives the three TLS 1.3 flights of a full handshake with these
    contexts and SNI name: (client's first flight, server's flight, client's second flight),
    measured by running one in memory (cached per name).  The transport-model replay sends
    flights of these sizes, so model and real stack carry the same handshake bytes.

    A plain DNS name (lower-case letters, digits, hyphens, dots; a letter first) is sent as it is, in the
    ClientHello's server_name extension alone (RFC 6066 section 3), and nothing else of the
    handshake depends on it: its sizes are those of any such name of its length, measured once
    per length (a page's hundred origins cost a handful of handshakes)."""
    key = server_hostname or ""
    if _PLAIN_NAME.fullmatch(key):
        key = len(key)
    sizes = _FLIGHTS.get(key)
    if sizes is None:
        sizes = _FLIGHTS[key] = _measured_flights(server_hostname)
    return sizes


def _measured_flights(server_hostname: str | None) -> tuple[int, int, int]:
    """``handshake_flight_bytes`` measured: one handshake in memory."""
    ctx = contexts(0)
    flights: list[list[bytes]] = [[], []]
    client = TlsEnd(ctx, is_client=True, write_ciphertext=flights[0].append, server_hostname=server_hostname)
    server = TlsEnd(ctx, is_client=False, write_ciphertext=flights[1].append)
    hello = b"".join(flights[0])
    flights[0].clear()
    server.receive(hello)
    client.receive(b"".join(flights[1]))
    finished = b"".join(flights[0])
    server.receive(finished)
    if not (client.handshake_done and server.handshake_done):  # pragma: no cover - a full handshake is 1 RTT
        raise RuntimeError("TLS 1.3 handshake did not complete in three flights")
    return len(hello), len(b"".join(flights[1])), len(finished)
