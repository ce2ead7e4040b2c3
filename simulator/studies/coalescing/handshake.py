"""A connection's set-up cost for the pool: the shared handshake model (``http.handshake``)
with the certificate chain this study gives each server.  The chain is a modelling number,
stated in the package docstring (``Handshakes``): a base plus every name the certificate
carries, so a certificate naming more hosts lets more origins share a connection and makes
every handshake with it larger."""

from __future__ import annotations

from ...http.handshake import Handshake
from ...http.handshake import handshake as _handshake

__all__ = ["Handshake", "handshake", "chain_bytes", "CERT_CHAIN_BASE_BYTES"]

CERT_CHAIN_BASE_BYTES = 1800  # an ECDSA leaf without its names and one intermediate, DER


def chain_bytes(san: tuple[str, ...]) -> int:
    """The certificate chain's size: a base plus every dNSName (DER: tag, length, name)."""
    return CERT_CHAIN_BASE_BYTES + sum(len(n) + 2 for n in san)


def handshake(
    protocol: str, san: tuple[str, ...], origin_frame: int = 0, *, host: str | None = None, tls: bool = True
) -> Handshake:
    """A full handshake to a server whose certificate names ``san``, reached by the name
    ``host`` (the ClientHello's SNI; default: the first name, a wildcard's ``*`` read as
    ``www``).  ``tls=False``: cleartext h2 (prior knowledge), the TCP handshake alone."""
    if host is None and san:
        host = san[0].replace("*", "www", 1)
    return _handshake(protocol, host, chain_bytes(san), origin_frame, tls=tls)
