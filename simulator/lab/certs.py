"""The lab site's TLS: one test CA and one leaf for every host of a page, by ``cryptography``.

The keys are fresh and the validity is from the wall clock (a real TLS server needs a current
certificate): this is the lab's, never the simulation's.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import ipaddress

__all__ = ["make_ca_and_leaf", "chain_der_bytes"]

# Serial numbers of 159 random bits with the top one set: always a 20-byte DER INTEGER (RFC 5280
# section 4.1.2.2), so a chain's size depends on its names alone, but for its two signatures.
_SERIAL_TOP = 1 << 158
# An ECDSA P-256 signature's DER (RFC 5480 section 2.2.3) is 70-72 bytes, as r and s need a
# leading zero byte or not: the largest, for a size known before signing.
_ECDSA_P256_SIGNATURE_MAX_BYTES = 72


def make_ca_and_leaf(hosts: list[str], days: int = 30) -> dict:
    """A test CA and one leaf signed by it for every name in ``hosts`` (ECDSA P-256):
    PEMs of both certificates and the leaf's key, and the base64 SHA-256 of the leaf's
    SubjectPublicKeyInfo (Chromium's ``--ignore-certificate-errors-spki-list``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca, leaf = _chain(hosts, ca_key, key, now, days, _serial)
    spki = leaf.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    pem = serialization.Encoding.PEM
    return {
        "ca_pem": ca.public_bytes(pem).decode(),
        "cert_pem": leaf.public_bytes(pem).decode(),
        "key_pem": key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode(),
        "spki_sha256_b64": base64.b64encode(hashlib.sha256(spki).digest()).decode(),
    }


def _serial() -> int:
    from cryptography import x509

    return x509.random_serial_number() | _SERIAL_TOP


@functools.lru_cache(maxsize=64)
def chain_der_bytes(hosts: tuple[str, ...]) -> int:
    """The DER bytes of the chain ``make_ca_and_leaf(hosts)`` makes (leaf and CA, as the lab's
    servers send it), from its names alone: each certificate is made with fixed keys and dates
    (their sizes are fixed) and counted with the largest signature, so within 4 bytes of any
    chain the lab makes for these names, and the same in every process."""
    from cryptography.hazmat.primitives.asymmetric import ec

    fixed = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    keys = ec.derive_private_key(1, ec.SECP256R1()), ec.derive_private_key(2, ec.SECP256R1())
    chain = _chain(list(hosts), *keys, fixed, 30, lambda: _SERIAL_TOP)
    return sum(_signed_size(len(c.tbs_certificate_bytes)) for c in chain)


def _der_header(length: int) -> int:
    """Tag and length octets of a DER value of ``length`` bytes (X.690 section 8.1.3)."""
    return 2 if length < 0x80 else 3 if length < 0x100 else 4


def _signed_size(tbs_bytes: int) -> int:
    """A certificate's DER bytes around a to-be-signed part of ``tbs_bytes``: the algorithm
    (ecdsa-with-SHA256, 12 bytes) and the signature as a BIT STRING (RFC 5280 section 4.1)."""
    sig = 1 + _ECDSA_P256_SIGNATURE_MAX_BYTES  # the unused-bits octet, then the signature
    body = tbs_bytes + 12 + _der_header(sig) + sig
    return _der_header(body) + body


def _chain(hosts: list[str], ca_key, key, now, days: int, serial):
    """The CA and the leaf for ``hosts``, signed, with these keys, start and serial numbers."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "workbench lab test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(serial())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    names = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0] if hosts else "lab")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(serial())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        # RFC 5280 4.2.1.1/4.2.1.2: the key identifiers a strict path builder asks for.
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return ca, leaf
