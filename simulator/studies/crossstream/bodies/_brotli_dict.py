"""Brotli with a custom (raw) dictionary, through the ``brotli`` wheel's own C library.

Why this module exists: no Python binding of Brotli exposes custom dictionaries
(``brotli`` 1.2 has none; ``brotlicffi``'s ``Decompressor(dictionary=)`` is broken; the
upstream request, google/brotli issue 1052, is open).  The shared library inside the
``brotli`` wheel (``_brotli``) does export the reference C API, including
``BrotliEncoderPrepareDictionary``, ``BrotliEncoderAttachPreparedDictionary`` and
``BrotliDecoderAttachDictionary`` (encode.h / decode.h of brotli 1.1+).  This module
calls exactly those through ``ctypes``, with the encoder and decoder state machines
(``BrotliEncoderCompressStream``, ``BrotliDecoderDecompressStream``) around them.  It is
the only place in the project that touches ctypes for Brotli; the compression itself is
the real library's.

The dictionary is "raw" (``BROTLI_SHARED_DICTIONARY_RAW`` = 0): an unformatted prefix,
RFC 9842 section 2.1.4 ``type=raw`` and section 4 (a prefix dictionary in the sense of
RFC 9841 section 9.2).  The C library keeps pointers into the dictionary bytes, so each
object here holds a reference to the bytes it attached for as long as it lives.

When the symbols are missing (another build of the wheel, another platform),
``available()`` is False, ``unavailable_reason()`` says why, and every entry point raises
``BrotliDictionaryUnavailable`` (the study reports the scheme as unavailable instead of
crashing).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import threading
from collections import OrderedDict

__all__ = [
    "available",
    "unavailable_reason",
    "BrotliDictionaryUnavailable",
    "BrotliDictionaryError",
    "compress",
    "decompress",
    "PreparedDictionary",
    "prepared",
    "clear_prepared",
    "PREPARED_CACHE_ENTRIES",
]

# encode.h / decode.h / shared_dictionary.h constants (stable C ABI since brotli 1.1.0)
_RAW = 0  # BROTLI_SHARED_DICTIONARY_RAW
_PARAM_MODE, _PARAM_QUALITY, _PARAM_LGWIN, _PARAM_SIZE_HINT = 0, 1, 2, 5
_OP_PROCESS, _OP_FLUSH, _OP_FINISH = 0, 1, 2
_DEC_ERROR, _DEC_SUCCESS, _DEC_NEEDS_MORE_INPUT, _DEC_NEEDS_MORE_OUTPUT = 0, 1, 2, 3
MAX_QUALITY = 11

_NEEDED = (
    "BrotliEncoderCreateInstance",
    "BrotliEncoderDestroyInstance",
    "BrotliEncoderSetParameter",
    "BrotliEncoderPrepareDictionary",
    "BrotliEncoderDestroyPreparedDictionary",
    "BrotliEncoderAttachPreparedDictionary",
    "BrotliEncoderCompressStream",
    "BrotliEncoderHasMoreOutput",
    "BrotliEncoderTakeOutput",
    "BrotliEncoderIsFinished",
    "BrotliDecoderCreateInstance",
    "BrotliDecoderDestroyInstance",
    "BrotliDecoderAttachDictionary",
    "BrotliDecoderDecompressStream",
    "BrotliDecoderTakeOutput",
    "BrotliDecoderHasMoreOutput",
)


class BrotliDictionaryUnavailable(RuntimeError):
    """This machine's ``brotli`` build does not export the dictionary API."""


class BrotliDictionaryError(ValueError):
    """The C library refused an input (a corrupt stream, a wrong dictionary)."""


_lib = None
_reason: str | None = None
_lock = threading.Lock()


def _load():
    global _lib, _reason
    with _lock:
        if _lib is not None or _reason is not None:
            return _lib
        try:
            import _brotli
        except ImportError as exc:
            _reason = f"the brotli package is not installed ({exc})"
            return None
        try:
            lib = ctypes.CDLL(_brotli.__file__)
        except OSError as exc:
            _reason = f"cannot load {_brotli.__file__} ({exc})"
            return None
        missing = [name for name in _NEEDED if not hasattr(lib, name)]
        if missing:
            _reason = f"{_brotli.__file__} does not export the Brotli dictionary API (missing {', '.join(missing)})"
            return None
        vp, sz, u8p = ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint8)
        lib.BrotliEncoderCreateInstance.restype = vp
        lib.BrotliEncoderCreateInstance.argtypes = [vp, vp, vp]
        lib.BrotliEncoderDestroyInstance.argtypes = [vp]
        lib.BrotliEncoderSetParameter.restype = ctypes.c_int
        lib.BrotliEncoderSetParameter.argtypes = [vp, ctypes.c_int, ctypes.c_uint32]
        lib.BrotliEncoderPrepareDictionary.restype = vp
        lib.BrotliEncoderPrepareDictionary.argtypes = [ctypes.c_int, sz, ctypes.c_char_p, ctypes.c_int, vp, vp, vp]
        lib.BrotliEncoderDestroyPreparedDictionary.argtypes = [vp]
        lib.BrotliEncoderAttachPreparedDictionary.restype = ctypes.c_int
        lib.BrotliEncoderAttachPreparedDictionary.argtypes = [vp, vp]
        lib.BrotliEncoderCompressStream.restype = ctypes.c_int
        lib.BrotliEncoderCompressStream.argtypes = [
            vp,
            ctypes.c_int,
            ctypes.POINTER(sz),
            ctypes.POINTER(u8p),
            ctypes.POINTER(sz),
            ctypes.POINTER(u8p),
            ctypes.POINTER(sz),
        ]
        lib.BrotliEncoderHasMoreOutput.restype = ctypes.c_int
        lib.BrotliEncoderHasMoreOutput.argtypes = [vp]
        lib.BrotliEncoderIsFinished.restype = ctypes.c_int
        lib.BrotliEncoderIsFinished.argtypes = [vp]
        lib.BrotliEncoderTakeOutput.restype = u8p
        lib.BrotliEncoderTakeOutput.argtypes = [vp, ctypes.POINTER(sz)]
        lib.BrotliDecoderCreateInstance.restype = vp
        lib.BrotliDecoderCreateInstance.argtypes = [vp, vp, vp]
        lib.BrotliDecoderDestroyInstance.argtypes = [vp]
        lib.BrotliDecoderAttachDictionary.restype = ctypes.c_int
        lib.BrotliDecoderAttachDictionary.argtypes = [vp, ctypes.c_int, sz, ctypes.c_char_p]
        lib.BrotliDecoderDecompressStream.restype = ctypes.c_int
        lib.BrotliDecoderDecompressStream.argtypes = [
            vp,
            ctypes.POINTER(sz),
            ctypes.POINTER(u8p),
            ctypes.POINTER(sz),
            ctypes.POINTER(u8p),
            ctypes.POINTER(sz),
        ]
        lib.BrotliDecoderTakeOutput.restype = u8p
        lib.BrotliDecoderTakeOutput.argtypes = [vp, ctypes.POINTER(sz)]
        lib.BrotliDecoderHasMoreOutput.restype = ctypes.c_int
        lib.BrotliDecoderHasMoreOutput.argtypes = [vp]
        _lib = lib
        return lib


def available() -> bool:
    """True when the Brotli library's shared-dictionary API can be loaded."""
    return _load() is not None


def unavailable_reason() -> str | None:
    """Why the Brotli dictionary API cannot be loaded, or None when it can."""
    _load()
    return _reason


def _require():
    lib = _load()
    if lib is None:
        raise BrotliDictionaryUnavailable(f"Brotli with a custom dictionary is unavailable: {_reason}")
    return lib


class PreparedDictionary:
    """A raw dictionary prepared once for the encoder (its hash chains), reusable across
    responses: a server compressing many responses against one static dictionary keeps one."""

    def __init__(self, data: bytes, *, max_quality: int = MAX_QUALITY) -> None:
        lib = _require()
        self.data = bytes(data)  # the C side points into these bytes
        self._lib = lib
        self._ptr = lib.BrotliEncoderPrepareDictionary(_RAW, len(self.data), self.data, max_quality, None, None, None)
        if not self._ptr:
            raise BrotliDictionaryError("BrotliEncoderPrepareDictionary failed")

    def __del__(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            self._lib.BrotliEncoderDestroyPreparedDictionary(ptr)


# Preparing builds the encoder's hash chains over the whole dictionary, the bulk of a
# small compression's cost; the leak's oracle compresses against the same few
# dictionaries tens of thousands of times.  So prepared dictionaries are kept, keyed by
# the bytes' SHA-256 and the quality they were prepared for, the least recently used
# dropped past PREPARED_CACHE_ENTRIES (about 0.8 MB of C memory each for 128 KiB).  A
# dropped one is freed by its __del__ once no compress() still holds it.
PREPARED_CACHE_ENTRIES = 16
_prepared: OrderedDict[tuple[bytes, int], PreparedDictionary] = OrderedDict()
_prepared_lock = threading.Lock()


def prepared(data: bytes, *, max_quality: int = MAX_QUALITY) -> PreparedDictionary:
    """``data`` prepared for the encoder, reused from the cache when it was prepared before."""
    key = (hashlib.sha256(data).digest(), max_quality)
    with _prepared_lock:
        hit = _prepared.get(key)
        if hit is not None:
            _prepared.move_to_end(key)
            return hit
    made = PreparedDictionary(data, max_quality=max_quality)
    with _prepared_lock:
        made = _prepared.setdefault(key, made)  # another thread may have made it meanwhile
        _prepared.move_to_end(key)
        while len(_prepared) > PREPARED_CACHE_ENTRIES:
            _prepared.popitem(last=False)
    return made


def clear_prepared() -> None:
    """Drop every cached prepared dictionary (each is freed once no encoder holds it)."""
    with _prepared_lock:
        _prepared.clear()


atexit.register(clear_prepared)  # free the C memory while the library is still loaded


def _take_encoder_output(lib, state, out: list) -> None:
    size = ctypes.c_size_t(0)
    while lib.BrotliEncoderHasMoreOutput(state):
        ptr = lib.BrotliEncoderTakeOutput(state, ctypes.byref(size))
        if size.value:
            out.append(ctypes.string_at(ptr, size.value))


def compress(
    data: bytes, *, quality: int, lgwin: int = 22, dictionary: bytes | PreparedDictionary | None = None, mode: int = 0
) -> bytes:
    """One Brotli stream of ``data``; with ``dictionary`` the encoder may reference it
    as if it preceded the data (the decoder needs the same bytes)."""
    lib = _require()
    # ``prepared_dict`` keeps the dictionary alive until the encoder is destroyed
    # below, even if the cache drops it meanwhile
    prepared_dict = (
        dictionary if isinstance(dictionary, PreparedDictionary) or dictionary is None else prepared(dictionary)
    )
    state = lib.BrotliEncoderCreateInstance(None, None, None)
    if not state:
        raise MemoryError("BrotliEncoderCreateInstance failed")
    try:
        for param, value in (
            (_PARAM_QUALITY, quality),
            (_PARAM_LGWIN, lgwin),
            (_PARAM_MODE, mode),
            (_PARAM_SIZE_HINT, min(len(data), 1 << 30)),
        ):
            if not lib.BrotliEncoderSetParameter(state, param, value):
                raise BrotliDictionaryError(f"BrotliEncoderSetParameter({param}, {value}) failed")
        if prepared_dict is not None and len(prepared_dict.data):
            if not lib.BrotliEncoderAttachPreparedDictionary(state, prepared_dict._ptr):
                raise BrotliDictionaryError("BrotliEncoderAttachPreparedDictionary failed")
        buf = ctypes.create_string_buffer(bytes(data), len(data)) if data else ctypes.create_string_buffer(1)
        next_in = ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8))
        avail_in = ctypes.c_size_t(len(data))
        avail_out = ctypes.c_size_t(0)
        next_out = ctypes.POINTER(ctypes.c_uint8)()
        out: list[bytes] = []
        while True:
            ok = lib.BrotliEncoderCompressStream(
                state,
                _OP_FINISH,
                ctypes.byref(avail_in),
                ctypes.byref(next_in),
                ctypes.byref(avail_out),
                ctypes.byref(next_out),
                None,
            )
            if not ok:
                raise BrotliDictionaryError("BrotliEncoderCompressStream failed")
            _take_encoder_output(lib, state, out)
            if lib.BrotliEncoderIsFinished(state):
                break
        return b"".join(out)
    finally:
        lib.BrotliEncoderDestroyInstance(state)
        del prepared_dict


def decompress(data: bytes, *, dictionary: bytes | None = None, max_output_bytes: int = 1 << 30) -> bytes:
    """Decode one whole Brotli stream; raises ``BrotliDictionaryError`` on a corrupt or
    truncated stream (which is what a wrong dictionary usually produces)."""
    lib = _require()
    state = lib.BrotliDecoderCreateInstance(None, None, None)
    if not state:
        raise MemoryError("BrotliDecoderCreateInstance failed")
    keep = bytes(dictionary) if dictionary else None  # must outlive the decoder state
    try:
        if keep and not lib.BrotliDecoderAttachDictionary(state, _RAW, len(keep), keep):
            raise BrotliDictionaryError("BrotliDecoderAttachDictionary failed")
        buf = ctypes.create_string_buffer(bytes(data), len(data)) if data else ctypes.create_string_buffer(1)
        next_in = ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8))
        avail_in = ctypes.c_size_t(len(data))
        avail_out = ctypes.c_size_t(0)
        next_out = ctypes.POINTER(ctypes.c_uint8)()
        out: list[bytes] = []
        total = 0
        size = ctypes.c_size_t(0)
        while True:
            result = lib.BrotliDecoderDecompressStream(
                state,
                ctypes.byref(avail_in),
                ctypes.byref(next_in),
                ctypes.byref(avail_out),
                ctypes.byref(next_out),
                None,
            )
            while lib.BrotliDecoderHasMoreOutput(state):
                ptr = lib.BrotliDecoderTakeOutput(state, ctypes.byref(size))
                if size.value:
                    out.append(ctypes.string_at(ptr, size.value))
                    total += size.value
                    if total > max_output_bytes:
                        raise BrotliDictionaryError(f"output exceeds {max_output_bytes} bytes")
            if result == _DEC_SUCCESS:
                if avail_in.value:
                    raise BrotliDictionaryError(f"{avail_in.value} bytes after the end of the Brotli stream")
                return b"".join(out)
            if result == _DEC_ERROR:
                raise BrotliDictionaryError("corrupt Brotli stream (or the wrong dictionary)")
            if result == _DEC_NEEDS_MORE_INPUT:
                raise BrotliDictionaryError("truncated Brotli stream")
            # NEEDS_MORE_OUTPUT: take it (above) and go round again
    finally:
        lib.BrotliDecoderDestroyInstance(state)
        del keep
