"""The three compression libraries behind one small interface.

``Codec(library, level)``: ``compress(data, dictionary=None)`` / ``decompress(data,
dictionary=None)`` one response at a time (a raw dictionary is a prefix the encoder may
reference), and ``stream()`` for a context shared across responses: a ``StreamPair``
whose encoder flushes at the end of each response (the bytes between two flushes are
that response on the wire) and whose decoder turns each response's bytes back into its
body, as the 2017 proposal's one-context-per-connection scheme needs.

=========  ===============================================================================
zlib       ``zlib`` (deflate, zlib format RFC 1950): ``compressobj(level, zdict=...)``; only
           the last 32 KiB of a dictionary can matter (the deflate window, RFC 1951
           section 2); shared context: ``Z_SYNC_FLUSH`` per response.
brotli     ``brotli`` (RFC 7932): ``brotli.compress`` / ``Compressor.process + flush`` for
           plain and shared-context use; a custom dictionary goes through
           ``_brotli_dict`` (the wheel's C API via ctypes; see there why).  Levels 0-11,
           window ``lgwin`` 22 (4 MiB) unless set.
zstd       ``zstandard`` (RFC 8878): ``ZstdCompressionDict(..., DICT_TYPE_RAWCONTENT)`` for a
           raw dictionary; shared context ``compressobj().flush(COMPRESSOBJ_FLUSH_BLOCK)``
           with ``decompressobj()``.  Levels 1-22.
=========  ===============================================================================

``history_bytes(n)`` is how much earlier data a context can still reference after ``n``
bytes went through it (the window): the memory each end keeps per context.
"""

from __future__ import annotations

import functools

import zlib
from dataclasses import dataclass

import brotli
import zstandard

from ....errors import InputError
from ....units import parse_integer
from . import _brotli_dict

__all__ = ["Codec", "StreamPair", "LIBRARIES", "LEVELS", "parse_codecs", "DecodeError", "SchemeUnavailable"]

LIBRARIES = ("zlib", "brotli", "zstd")
LEVELS = {"zlib": range(1, 10), "brotli": range(0, 12), "zstd": range(1, 23)}
ZLIB_WINDOW_BYTES = 32 * 1024  # RFC 1951: distances up to 32,768
BROTLI_LGWIN = 22  # brotli's default window: 4 MiB - 16


class DecodeError(ValueError):
    """A decoder rejected bytes (corrupt, truncated, or the wrong dictionary)."""


class SchemeUnavailable(RuntimeError):
    """This machine's libraries cannot run the scheme (e.g. no Brotli dictionary API)."""


@dataclass(frozen=True)
class Codec:
    """A compression library and level: ``zlib``, ``brotli`` or ``zstd``."""

    library: str
    level: int

    def __post_init__(self) -> None:
        if self.library not in LIBRARIES:
            raise InputError(f"unknown compression library {self.library!r} (choose {', '.join(LIBRARIES)})")
        if self.level not in LEVELS[self.library]:
            r = LEVELS[self.library]
            raise InputError(f"{self.library} level {self.level} is out of range ({r.start}..{r.stop - 1})")

    @property
    def name(self) -> str:
        """``library:level``."""
        return f"{self.library}:{self.level}"

    @property
    def content_coding(self) -> str:
        """The HTTP content coding without a dictionary (RFC 9110 section 8.4.1, RFC 7932, RFC 8878)."""
        return {"zlib": "deflate", "brotli": "br", "zstd": "zstd"}[self.library]

    def dictionary_available(self) -> bool:
        """True when this codec can compress with a raw dictionary (Brotli needs its dictionary API)."""
        return self.library != "brotli" or _brotli_dict.available()

    def dictionary_unavailable_reason(self) -> str | None:
        """Why dictionary compression is unavailable, or None."""
        return None if self.dictionary_available() else _brotli_dict.unavailable_reason()

    def usable_dictionary_bytes(self, dictionary_bytes: int) -> int:
        """How much of a dictionary the format can reference (zlib: the last 32 KiB)."""
        return min(dictionary_bytes, ZLIB_WINDOW_BYTES) if self.library == "zlib" else dictionary_bytes

    def history_bytes(self, n: int) -> int:
        """Bytes of earlier data a shared context keeps referenceable after ``n`` bytes."""
        if self.library == "zlib":
            return min(n, ZLIB_WINDOW_BYTES)
        if self.library == "brotli":
            return min(n, (1 << BROTLI_LGWIN) - 16)
        window = zstandard.ZstdCompressionParameters.from_level(self.level).window_log
        return min(n, 1 << window)

    # one response ------------------------------------------------------------------
    def compress(self, data: bytes, dictionary: bytes | None = None) -> bytes:
        """``data`` compressed alone, or against a raw ``dictionary`` (zlib: preset dictionary)."""
        if not dictionary:
            if self.library == "zlib":
                return zlib.compress(data, self.level)
            if self.library == "brotli":
                return brotli.compress(data, quality=self.level, lgwin=BROTLI_LGWIN)
            return zstandard.ZstdCompressor(level=self.level).compress(data)
        if self.library == "zlib":
            c = _zlib_primed(self.level, dictionary).copy()
            return c.compress(data) + c.flush()
        if self.library == "brotli":
            self._require_dictionary()
            return _brotli_dict.compress(data, quality=self.level, lgwin=BROTLI_LGWIN, dictionary=dictionary)
        d = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        return zstandard.ZstdCompressor(level=self.level, dict_data=d).compress(data)

    def decompress(self, data: bytes, dictionary: bytes | None = None) -> bytes:
        """The decompressed ``data`` (with the same ``dictionary``); DecodeError when it is corrupt or truncated."""
        try:
            if self.library == "zlib":
                d = zlib.decompressobj(zdict=dictionary) if dictionary else zlib.decompressobj()
                out = d.decompress(data) + d.flush()
                if not d.eof or d.unused_data:
                    raise DecodeError("truncated or trailing deflate data")
                return out
            if self.library == "brotli":
                if dictionary:
                    self._require_dictionary()
                    return _brotli_dict.decompress(data, dictionary=dictionary)
                return brotli.decompress(data)
            if dictionary:
                d = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
                return zstandard.ZstdDecompressor(dict_data=d).decompress(data)
            return zstandard.ZstdDecompressor().decompress(data)
        except (zlib.error, brotli.error, zstandard.ZstdError, _brotli_dict.BrotliDictionaryError) as exc:
            raise DecodeError(f"{self.name}: {exc}") from None

    def _require_dictionary(self) -> None:
        if not _brotli_dict.available():
            raise SchemeUnavailable(_brotli_dict.unavailable_reason() or "no Brotli dictionary API")

    # a shared context ----------------------------------------------------------------
    def stream(self) -> "StreamPair":
        """A new shared compression context (encoder and decoder) for a sequence of responses."""
        return StreamPair(self)


@functools.lru_cache(maxsize=16)
def _zlib_primed(level: int, dictionary: bytes):
    """A deflate stream with ``dictionary`` loaded (deflateSetDictionary), copied for each
    response: loading costs more than compressing a small body, and the leak's oracle
    compresses against the same few dictionaries thousands of times.  A copy carries the
    whole state, so the output is the same bytes as a fresh stream's."""
    return zlib.compressobj(level, zdict=dictionary)


class StreamPair:
    """One shared compression context: the server's encoder and the client's decoder.

    ``encode(body)`` returns the bytes of one response (ending with a flush, so the
    client can decode all of it on arrival); ``decode(wire)`` returns the body.
    ``literal`` segments (never-indexed secrets) bypass the context on both sides."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.bytes_in = 0
        lib = codec.library
        if lib == "zlib":
            self._enc = zlib.compressobj(codec.level)
            self._dec = zlib.decompressobj()
        elif lib == "brotli":
            self._enc = brotli.Compressor(quality=codec.level, lgwin=BROTLI_LGWIN)
            self._dec = brotli.Decompressor()
        else:
            self._enc = zstandard.ZstdCompressor(level=codec.level).compressobj()
            self._dec = zstandard.ZstdDecompressor().decompressobj()

    def copy(self) -> "StreamPair | None":
        """An independent copy of both ends' state, or None where the library cannot copy
        a streaming context (only zlib can: ``Compress.copy``/``Decompress.copy``)."""
        if self.codec.library != "zlib":
            return None
        twin = object.__new__(StreamPair)
        twin.codec, twin.bytes_in = self.codec, self.bytes_in
        twin._enc, twin._dec = self._enc.copy(), self._dec.copy()
        return twin

    def encode(self, data: bytes) -> bytes:
        """The wire bytes of one response through the shared encoder, flushed so it decodes on its own."""
        self.bytes_in += len(data)
        lib = self.codec.library
        if lib == "zlib":
            return self._enc.compress(data) + self._enc.flush(zlib.Z_SYNC_FLUSH)
        if lib == "brotli":
            return self._enc.process(data) + self._enc.flush()
        return self._enc.compress(data) + self._enc.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)

    def decode(self, wire: bytes) -> bytes:
        """One response's bytes through the shared decoder; DecodeError when they do not decode."""
        lib = self.codec.library
        try:
            if lib == "brotli":
                # After a flush the streaming decoder hands out at most about 32 KiB per
                # call: ask again until it has nothing more.
                out = [self._dec.process(wire)]
                while True:
                    more = self._dec.process(b"")
                    if not more:
                        break
                    out.append(more)
                return b"".join(out)
            return self._dec.decompress(wire)
        except (zlib.error, brotli.error, zstandard.ZstdError) as exc:
            raise DecodeError(f"{self.codec.name} shared context: {exc}") from None

    def history_bytes(self) -> int:
        """Bytes of earlier responses the shared context can still reference."""
        return self.codec.history_bytes(self.bytes_in)


def parse_codecs(text: str) -> tuple[Codec, ...]:
    """``"brotli:5,zstd:3,zlib:6"`` -> codecs; ``"brotli:5-8"`` expands a level range."""
    out: list[Codec] = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        lib, sep, levels = part.partition(":")
        lib = lib.strip().lower()
        if not sep or not levels.strip():
            raise InputError(f"codec {part!r} needs a level: LIBRARY:LEVEL, e.g. brotli:5 or zstd:1-19")
        try:  # ASCII digits: int() also takes "٥"
            if "-" in levels.strip()[1:]:
                a, b = (parse_integer(x) for x in levels.split("-", 1))
            else:
                a = b = parse_integer(levels)
        except InputError:
            raise InputError(f"codec {part!r}: the level must be an integer or a range like 1-9") from None
        Codec(lib, a), Codec(lib, b)  # both ends in the library's range before the levels between are made
        for level in range(a, b + 1):
            c = Codec(lib, level)
            if c not in out:
                out.append(c)
    if not out:
        raise InputError("no codecs given (e.g. --codecs brotli:5,zstd:3,zlib:6)")
    return tuple(out)
