"""The lab site's TLS: one test CA and one leaf for every host of a page, by ``cryptography``.

The keys are fresh and the validity is from the wall clock (a real TLS server needs a current
certificate): this is the lab's, never the simulation's.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress

__all__ = ["make_ca_and_leaf"]


def make_ca_and_leaf(hosts: list[str], days: int = 30) -> dict:
    """A test CA and one leaf signed by it for every name in ``hosts`` (ECDSA P-256):
    PEMs of both certificates and the leaf's key, and the base64 SHA-256 of the leaf's
    SubjectPublicKeyInfo (Chromium's ``--ignore-certificate-errors-spki-list``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "workbench lab test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0] if hosts else "lab")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            # RFC 5280 4.2.1.1/4.2.1.2: the key identifiers a strict path builder asks for.
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    spki = leaf.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    pem = serialization.Encoding.PEM
    return {"ca_pem": ca.public_bytes(pem).decode(), "cert_pem": leaf.public_bytes(pem).decode(),
            "key_pem": key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()).decode(),
            "spki_sha256_b64": base64.b64encode(hashlib.sha256(spki).digest()).decode()}
