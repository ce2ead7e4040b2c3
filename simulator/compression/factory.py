"""``make_encoder`` / ``make_decoder``: an encoder and its matching decoder for a scheme
name (``SCHEMES``; the package docstring describes each).  Kept apart from the package
``__init__`` so that ``offline`` can use it without importing the package it belongs to.

Adding a scheme: a module with ``make_encoder(*, table_bytes, max_blocked, cookie_crumbs)``
and ``make_decoder(*, table_bytes, max_blocked)`` returning a ``base.Encoder`` and a
``base.Decoder``, and one line in ``ADDED_SCHEMES`` naming it (``docs/extending.md``).
"""

from __future__ import annotations

import importlib

from .base import Decoder, Encoder

__all__ = ["SCHEMES", "ADDED_SCHEMES", "schemes", "make_encoder", "make_decoder"]

SCHEMES = ("hpack", "hpack-tcp", "hpack-quic", "qpack", "qcram", "qcram-blocking")
# name -> the module that makes an added scheme's encoder and decoder (imported when asked for)
ADDED_SCHEMES: dict[str, str] = {}


def schemes() -> tuple[str, ...]:
    """Every scheme name: the built-in ones, then the added ones."""
    return SCHEMES + tuple(ADDED_SCHEMES)


def _hpack_mode(scheme: str, transport: str) -> str | None:
    if scheme == "hpack":
        if transport not in ("quic", "tcp"):
            raise ValueError(f"transport must be 'quic' or 'tcp', not {transport!r}")
        return transport
    return {"hpack-tcp": "tcp", "hpack-quic": "quic"}.get(scheme)


def make_encoder(scheme: str, table_bytes: int = 4096, max_blocked: int = 100, *, transport: str = "quic",
                 cookie_crumbs: bool = True, **options) -> Encoder:
    """An encoder for ``scheme`` with a dynamic table of ``table_bytes`` and at most
    ``max_blocked`` possibly-blocking blocks outstanding (QPACK, qcram-blocking).
    ``transport`` only matters to ``hpack``; ``options`` go to the QCRAM encoder
    (``insert_policy``, ``history``, ``huffman``)."""
    if scheme in ADDED_SCHEMES:
        return importlib.import_module(ADDED_SCHEMES[scheme]).make_encoder(
            table_bytes=table_bytes, max_blocked=max_blocked, cookie_crumbs=cookie_crumbs, **options)
    if options and scheme not in ("qcram", "qcram-blocking"):
        raise TypeError(f"{scheme} takes no options {sorted(options)}")
    mode = _hpack_mode(scheme, transport)
    if mode is not None:
        from .hpack_codec import HpackEncoder
        return HpackEncoder(mode=mode, table_bytes=table_bytes, cookie_crumbs=cookie_crumbs)
    if scheme == "qpack":
        from .qpack_codec import QpackEncoder
        return QpackEncoder(table_bytes=table_bytes, max_blocked=max_blocked, cookie_crumbs=cookie_crumbs)
    if scheme in ("qcram", "qcram-blocking"):
        from .qcram import QcramEncoder
        return QcramEncoder(table_bytes=table_bytes, max_blocked=max_blocked, blocking=scheme == "qcram-blocking",
                            cookie_crumbs=cookie_crumbs, **options)
    raise ValueError(f"unknown compression scheme {scheme!r} (one of {', '.join(schemes())})")


def make_decoder(scheme: str, table_bytes: int = 4096, max_blocked: int = 100, *, transport: str = "quic",
                 **_encoder_only) -> Decoder:
    """The decoder matching ``make_encoder(scheme, ...)`` with the same settings (encoder-only
    options such as ``cookie_crumbs`` are accepted and ignored)."""
    if scheme in ADDED_SCHEMES:
        return importlib.import_module(ADDED_SCHEMES[scheme]).make_decoder(table_bytes=table_bytes,
                                                                          max_blocked=max_blocked)
    mode = _hpack_mode(scheme, transport)
    if mode is not None:
        from .hpack_codec import HpackDecoder
        return HpackDecoder(mode=mode, table_bytes=table_bytes)
    if scheme == "qpack":
        from .qpack_codec import QpackDecoder
        return QpackDecoder(table_bytes=table_bytes, max_blocked=max_blocked)
    if scheme in ("qcram", "qcram-blocking"):
        from .qcram_decoder import QcramDecoder
        return QcramDecoder(table_bytes=table_bytes, max_blocked=max_blocked, blocking=scheme == "qcram-blocking")
    raise ValueError(f"unknown compression scheme {scheme!r} (one of {', '.join(schemes())})")
