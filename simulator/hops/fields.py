"""Metadata known only at the end of a body, as real field values, and what an
intermediary may do with each field.  Written by hand (the values come from
``hashlib`` and ``cryptography``'s Ed25519).

Kinds (``METADATA``):

- ``digest``: ``content-digest: sha-256=:<base64>:`` over the body the server sends
  (RFC 9530 section 2: a Structured Fields dictionary of byte sequences);
- ``signature``: an RFC 9421 signature (Ed25519, section 3.3.6) over ``@status`` and
  ``content-digest``: ``signature-input`` and ``signature`` fields.  When the digest is
  a trailer field the component carries the ``tr`` parameter (RFC 9421 section 2.1:
  "the field value is taken from the trailers"); the signature base (section 2.5) is
  built and signed for real with a key derived from the run's seed;
- ``status``: ``grpc-status: 0`` (gRPC's call status, sent in trailers; PROTOCOL-HTTP2.md);
- ``timing``: ``server-timing: gen;dur=<ms>`` (W3C Server Timing: the time the server
  spent producing the body, which its example sends as a trailer).

Merging (RFC 9110 section 6.5.1, RFC 9112 section 7.1.2): "A recipient MUST NOT merge a
trailer field into a header section unless the recipient understands the corresponding
header field definition and that definition explicitly permits and defines how trailer
field values can be safely merged."  Of these fields only Content-Digest's definition
does so (RFC 9530 section 2: "Content-Digest MAY be merged into the header section").
RFC 9421 (Signature, Signature-Input), gRPC (grpc-status) and Server Timing define no
merging: a merging intermediary must drop them (``MERGEABLE``).
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

__all__ = ["METADATA", "MERGEABLE", "INTEGRITY", "STATUS", "metadata_fields", "body_digest", "mergeable", "signing_key"]

METADATA = ("digest", "signature", "status", "timing")
MERGEABLE = frozenset({b"content-digest"})  # RFC 9530 section 2
INTEGRITY = frozenset({b"content-digest", b"signature", b"signature-input"})
STATUS = frozenset({b"grpc-status"})
_CREATED_EPOCH = 1_700_000_000  # RFC 9421 "created": a fixed clock, never the wall clock


@lru_cache(maxsize=256)
def body_digest(nbytes: int) -> bytes:
    """SHA-256 of the body the stacks send (``stacks.common.body_bytes``: ``x`` * n)."""
    h = hashlib.sha256()
    block = b"x" * 65536
    left = nbytes
    while left > 0:
        n = min(left, len(block))
        h.update(block[:n])
        left -= n
    return h.digest()


@lru_cache(maxsize=16)
def signing_key(seed: int):
    """The server's Ed25519 key, derived from the run's seed (same seed, same key)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"workbench-signer-{seed}".encode()).digest())


def metadata_fields(
    kinds, *, body_bytes: int, production_s: float, status: int = 200, in_trailers: bool, index: int = 0, seed: int = 1
) -> tuple[tuple[bytes, bytes], ...]:
    """The metadata field lines of one response, in ``kinds`` order (signature after digest)."""
    out = []
    digest = b"sha-256=:" + base64.b64encode(body_digest(body_bytes)) + b":"
    for kind in kinds:
        if kind == "digest":
            out.append((b"content-digest", digest))
        elif kind == "status":
            out.append((b"grpc-status", b"0"))
        elif kind == "timing":
            out.append((b"server-timing", b"gen;dur=%.1f" % (production_s * 1000.0)))
        elif kind == "signature":
            out += _signature(digest, status=status, in_trailers=in_trailers, created=_CREATED_EPOCH + index, seed=seed)
        else:
            raise ValueError(f"unknown metadata kind {kind!r}")
    return tuple(out)


def _signature(digest: bytes, *, status: int, in_trailers: bool, created: int, seed: int):
    """RFC 9421 section 2.5 signature base and section 4 fields, label ``sig1``."""
    digest_id = b'"content-digest";tr' if in_trailers else b'"content-digest"'
    params = b'("@status" ' + digest_id + b');created=%d;keyid="server";alg="ed25519"' % created
    base = b'"@status": %d\n' % status + digest_id + b": " + digest + b"\n" + b'"@signature-params": ' + params
    signature = signing_key(seed).sign(base)  # 64 bytes (RFC 8032)
    return ((b"signature-input", b"sig1=" + params), (b"signature", b"sig1=:" + base64.b64encode(signature) + b":"))


def mergeable(name: bytes) -> bool:
    """May a trailer field of this name be merged into the header section?"""
    return name.lower() in MERGEABLE
