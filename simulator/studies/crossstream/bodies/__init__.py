"""The cross-stream study's bodies and how they are compressed: the corpus, the site
generator, codecs on the real libraries, RFC 9842 framing, the compression schemes and
the size-oracle attack.

- ``corpus``: bodies of every release (``Corpus``, ``Body``), a folder of real files.
- ``site``: a seeded generator of a small web site and its releases (``generate``), and
  generated bodies for a trace's text responses (``corpus_from_trace``).
- ``codecs``: zlib, Brotli and Zstandard behind one interface (one response, with or
  without a raw dictionary; a shared context across responses).
- ``_brotli_dict``: Brotli's custom-dictionary C API through ctypes (no Python binding
  exposes it; isolated there, and it reports itself unavailable rather than crash).
- ``rfc9842``: Compression Dictionary Transport (``Use-As-Dictionary``,
  ``Available-Dictionary``, ``Dictionary-ID``, ``dcb``/``dcz``), hand-written framing.
- ``schemes``: per-response, shared context per connection (draft-vkrasnov-h2-compression-
  dictionaries' SET_COMPRESSION_CONTEXT), static and dynamic per-type dictionaries,
  RFC 9842 deltas; each with the scoping rules ``none``, ``context``, ``never-indexed``.
- ``leak``: a BREACH-style attack that reads only compressed sizes.
"""

from .codecs import LEVELS, LIBRARIES, Codec, DecodeError, SchemeUnavailable, StreamPair, parse_codecs
from .corpus import KINDS, Body, BodyParams, Corpus, kind_for_content_type, load_folder, write_folder
from .site import Site, corpus_from_trace, generate

__all__ = [
    "Codec",
    "StreamPair",
    "LIBRARIES",
    "LEVELS",
    "parse_codecs",
    "DecodeError",
    "SchemeUnavailable",
    "KINDS",
    "Body",
    "BodyParams",
    "Corpus",
    "kind_for_content_type",
    "load_folder",
    "write_folder",
    "Site",
    "corpus_from_trace",
    "generate",
]
