"""The cross-stream compression schemes: how a server compresses a response given what
went before on the connection (or into the client's cache), and what the client must
keep to decode it.  Every encoded response is decoded and compared with its body.

Schemes (``SCHEMES``):

================  ======================================================================
``identity``      no compression (the transfer-time baseline).
``per-response``  each response alone (``Content-Encoding: deflate|br|zstd``).
``shared``        one compression context per connection: a streaming compressor flushed
                  at the end of each response, so later responses reference earlier
                  ones (the 2017 proposal's cross-stream compression,
                  draft-vkrasnov-h2-compression-dictionaries).
``static-dict``   a static dictionary per MIME type, the same on every connection (the
                  draft's "Static Dictionaries" section: 32 or 64 KiB per type); built from
                  other sites' bodies (see ``static_dictionaries``).
``dynamic-dict``  the 2017 best strategy: start from the static dictionary of the type,
                  then append each response of that type to its dictionary (SET_DICTIONARY
                  with APPEND, keeping the last ``dictionary_bytes``, the draft's
                  ``2^DSize``), and compress the next response of the type with it
                  (USE_DICTIONARY).  Dictionaries live per connection.
``dcb``, ``dcz``  RFC 9842 delta: responses designated with ``Use-As-Dictionary`` are stored
                  by the client; a later request offers the best match
                  (``Available-Dictionary``) and the server answers ``dcb`` (Brotli) or
                  ``dcz`` (Zstandard) against it.  The client's store outlives connections.
================  ======================================================================

Scoping rules (``SCOPINGS``), for the schemes that share state across responses:

- ``none``: everything on the connection (or in the client's store) may be referenced.
- ``context``: the client puts each request in a compression context named after the
  origin that initiated it (draft section "SET_COMPRESSION_CONTEXT": "Frames with an
  assigned context SHALL NOT be compressed using dictionaries from a different
  context"); for RFC 9842, the client uses a dictionary only for a response the page
  can read (section 9.3.2) and the server checks ``Sec-Fetch-Site``/``Sec-Fetch-Mode``
  (section 9.3.3), so a cross-site no-cors request gets no dictionary.
- ``never-indexed``: the server never lets a secret enter shared state (HPACK's
  never-indexed literal, RFC 7541 section 6.2.3, carried over to bodies): in a shared
  context the secret spans travel as literal segments outside the compressor; a dynamic
  dictionary appends the body without them (two SET_DICTIONARY entries with Offset);
  an RFC 9842 server never designates a response holding a secret as a dictionary.

Overhead (``overhead_bytes``, counted before HPACK/QPACK): the extension frames of the
2017 draft (USE_DICTIONARY and SET_DICTIONARY frames: a 9-byte frame header plus their
payload; SET_COMPRESSION_CONTEXT under ``context`` scoping) and the RFC 9842 fields
(``Use-As-Dictionary``, ``Available-Dictionary``, ``Dictionary-ID``, the extra
``Accept-Encoding`` tokens), as name + value lengths.  The ``dcb``/``dcz`` stream header
is part of the body.  The never-indexed segment framing (hand-written: one type byte and
a QUIC varint length per segment, only when a response is split) is counted in the body.

Memory (``server_dictionary_bytes`` / ``client_dictionary_bytes``): bytes each end keeps
between responses so that later ones can reference them: a shared context's window
(``Codec.history_bytes``), the dictionaries of the per-type schemes, the client's RFC
9842 store (the server must be able to produce the same dictionaries).  The encoders'
own match-finder tables come on top and are library-specific.
"""

from __future__ import annotations


import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from ....frames import varint_len
from ....http.framing import h2_frame_bytes
from .corpus import Body, Corpus
from . import rfc9842
from .codecs import Codec, SchemeUnavailable

__all__ = [
    "SCHEMES",
    "SCOPINGS",
    "CROSS_STREAM",
    "Request",
    "SchemeRun",
    "VerificationError",
    "static_dictionaries",
    "applicable",
    "use_as_dictionary_for",
]

SCHEMES = ("identity", "per-response", "shared", "static-dict", "dynamic-dict", "dcb", "dcz")
SCOPINGS = ("none", "context", "never-indexed")
CROSS_STREAM = frozenset({"shared", "dynamic-dict", "dcb", "dcz"})  # scoping changes them


class VerificationError(AssertionError):
    """A decoded body differs from what was sent: a bug, never bad input."""


@dataclass(frozen=True)
class Request:
    """One request whose response the scheme carries."""

    body: Body
    initiator: str  # origin of the document that caused it (context id key)
    fetch_site: str = "same-origin"  # Sec-Fetch-Site
    fetch_mode: str = "no-cors"  # Sec-Fetch-Mode


def applicable(scheme: str, codec: Codec | None) -> bool:
    """Which (scheme, codec) pairs exist: dcb is Brotli's, dcz Zstandard's; identity has none."""
    if scheme == "identity":
        return codec is None
    if codec is None:
        return False
    if scheme == "dcb":
        return codec.library == "brotli"
    if scheme == "dcz":
        return codec.library == "zstd"
    return True


def static_dictionaries(training: Corpus, size_bytes: int) -> dict[str, bytes]:
    """A static dictionary per kind: the training bodies of that kind (release 0 of other
    sites), concatenated, keeping the last ``size_bytes`` (the end of a raw dictionary is
    the cheapest to reference).  Hand-made rather than trained: the same raw bytes work
    for all three libraries."""
    out: dict[str, bytes] = {}
    for b in training.bodies:
        if b.release == 0:
            out[b.kind] = out.get(b.kind, b"") + _without(b.data, b.secrets)
    return {k: v[-size_bytes:] for k, v in out.items()}


def _without(data: bytes, spans) -> bytes:
    if not spans:
        return data
    parts, pos = [], 0
    for start, end in sorted(spans):
        parts.append(data[pos:start])
        pos = end
    parts.append(data[pos:])
    return b"".join(parts)


def use_as_dictionary_for(body: Body) -> rfc9842.UseAsDictionary:
    """How the server designates a response (RFC 9842 section 2.1): hashed assets for later
    versions of the same file; HTML pages for other pages; JSON for the same API."""
    path = body.resource.split("?")[0]
    if body.kind in ("js", "css"):
        name = path.rsplit("/", 1)[-1]
        if "." in name and urlsplit(body.url).path != path:
            # Versioned URLs (``name.HASH.ext``): later versions match ``name.*.ext``.
            stem, ext = path.rsplit(".", 1)
            return rfc9842.UseAsDictionary(match=f"{stem}.*.{ext}", match_dest=(body.destination,))
        # Updated in place at the same URL (as a trace's URLs are across releases, and
        # paths with no extension): the path itself; a pattern's search part matches any.
        return rfc9842.UseAsDictionary(match=path, match_dest=(body.destination,))
    if body.kind == "html":
        return rfc9842.UseAsDictionary(match="/*", match_dest=("document",))
    return rfc9842.UseAsDictionary(match=path.rsplit("/", 1)[0] + "/*")


class SchemeRun:
    """One (scheme, codec, scoping) over a sequence of connections.

    ``new_connection()`` drops connection-scoped state (shared contexts, dynamic
    dictionaries); the RFC 9842 store of the client persists.  ``send(request)`` encodes
    one response, decodes it at the client, checks it and returns its record."""

    def __init__(
        self,
        scheme: str,
        codec: Codec | None,
        scoping: str = "none",
        *,
        static: dict[str, bytes] | None = None,
        dictionary_bytes: int = 1 << 17,
        measure_cpu: bool = False,
    ) -> None:
        if scheme not in SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}")
        if scoping not in SCOPINGS:
            raise ValueError(f"unknown scoping {scoping!r}")
        if not applicable(scheme, codec):
            raise ValueError(f"scheme {scheme} does not run with codec {codec}")
        if scheme in ("static-dict", "dynamic-dict", "dcb", "dcz") and not codec.dictionary_available():
            raise SchemeUnavailable(f"{scheme} with {codec.name}: {codec.dictionary_unavailable_reason()}")
        self.scheme, self.codec, self.scoping = scheme, codec, scoping
        self.static = static or {}
        self.dictionary_bytes = dictionary_bytes
        self.measure_cpu = measure_cpu
        self.client = rfc9842.DictionaryClient() if scheme in ("dcb", "dcz") else None
        self.server = rfc9842.DictionaryServer() if scheme in ("dcb", "dcz") else None
        self.peak_server_bytes = 0
        self.peak_client_bytes = 0
        self.new_connection()

    # state -------------------------------------------------------------------------
    def new_connection(self) -> None:
        """Start a new connection: drop shared contexts and dynamic dictionaries (the RFC 9842 store stays)."""
        self.contexts: dict[str, object] = {}  # context id -> StreamPair
        self.dynamic: dict[tuple[str, str], bytes] = {}  # (context id, kind) -> dictionary

    def fork(self) -> "SchemeRun | None":
        """A copy that goes on from this one's state (connection, dictionaries, the client's
        RFC 9842 store) without disturbing it, or None when a shared streaming context
        cannot be copied.  The leak oracle forks after page A instead of re-sending A for
        every query: the same sizes, one compression of A."""
        twin = object.__new__(SchemeRun)
        twin.__dict__.update(self.__dict__)
        twin.contexts = {}
        for ctx, pair in self.contexts.items():
            pair_copy = pair.copy()
            if pair_copy is None:
                return None
            twin.contexts[ctx] = pair_copy
        twin.dynamic = dict(self.dynamic)
        if self.client is not None:
            twin.client = object.__new__(type(self.client))
            twin.client.__dict__.update(self.client.__dict__)
            twin.client.store = dict(self.client.store)  # StoredDictionary is never mutated
            twin.server = object.__new__(type(self.server))
            twin.server.dictionaries = dict(self.server.dictionaries)
        return twin

    def _context_id(self, request: Request) -> str:
        return request.initiator if self.scoping == "context" else "0"

    def dictionary_memory(self) -> tuple[int, int]:
        """(server, client) bytes kept between responses."""
        s = self.scheme
        if s == "shared":
            n = sum(pair.history_bytes() for pair in self.contexts.values())
            return n, n
        if s == "static-dict":
            n = sum(self.codec.usable_dictionary_bytes(len(d)) for d in self.static.values())
            return n, n
        if s == "dynamic-dict":
            kinds = {k for _, k in self.dynamic}
            n = sum(self.codec.usable_dictionary_bytes(len(d)) for d in self.dynamic.values())
            n += sum(len(self.static.get(k, b"")) for k in self.static if k not in kinds)
            return n, n
        if s in ("dcb", "dcz"):
            n = self.client.stored_bytes
            return n, n
        return 0, 0

    # one response ------------------------------------------------------------------
    def send(self, request: Request) -> dict:
        """Send one response under this scheme, check it decodes to the body; its row of byte and memory counts."""
        body = request.body
        data = body.data
        send = getattr(self, "_send_" + self.scheme.replace("-", "_"))
        compress_ns = decompress_ns = 0
        out = send(request)
        wire, decoded, coding, dict_used, overhead = out[:5]
        if self.measure_cpu:
            compress_ns, decompress_ns = out[5], out[6]
        if decoded != data:
            raise VerificationError(
                f"{self.scheme} {self.codec.name if self.codec else ''}: decoded {body.url} differs from the body sent"
            )
        server_mem, client_mem = self.dictionary_memory()
        self.peak_server_bytes = max(self.peak_server_bytes, server_mem)
        self.peak_client_bytes = max(self.peak_client_bytes, client_mem)
        return {
            "url": body.url,
            "resource": body.resource,
            "kind": body.kind,
            "release": body.release,
            "raw_bytes": len(data),
            "wire_bytes": wire,
            "overhead_bytes": overhead,
            "content_coding": coding,
            "dictionary_bytes_used": dict_used,
            "server_dictionary_bytes": server_mem,
            "client_dictionary_bytes": client_mem,
            "compress_ns": compress_ns,
            "decompress_ns": decompress_ns,
        }

    def _timed(self, fn, *args):
        if not self.measure_cpu:
            return fn(*args), 0
        t0 = time.perf_counter_ns()
        r = fn(*args)
        return r, time.perf_counter_ns() - t0

    def _send_identity(self, request: Request):
        return len(request.body.data), request.body.data, "identity", 0, 0, 0, 0

    def _send_per_response(self, request: Request):
        data = request.body.data
        enc, c_ns = self._timed(self.codec.compress, data)
        dec, d_ns = self._timed(self.codec.decompress, enc)
        return len(enc), dec, self.codec.content_coding, 0, 0, c_ns, d_ns

    def _send_static_dict(self, request: Request):
        data = request.body.data
        dictionary = self.static.get(request.body.kind, b"")
        enc, c_ns = self._timed(self.codec.compress, data, dictionary)
        dec, d_ns = self._timed(self.codec.decompress, enc, dictionary)
        overhead = h2_frame_bytes(1) if dictionary else 0  # USE_DICTIONARY (Dict ID: 8 bits)
        return (
            len(enc),
            dec,
            self.codec.content_coding + "+static",
            self.codec.usable_dictionary_bytes(len(dictionary)),
            overhead,
            c_ns,
            d_ns,
        )

    def _send_shared(self, request: Request):
        from .codecs import StreamPair

        ctx = self._context_id(request)
        overhead = 0
        if self.scoping == "context":
            overhead += h2_frame_bytes(1)  # SET_COMPRESSION_CONTEXT (Context: 8 bits)
        pair = self.contexts.get(ctx)
        if pair is None:
            pair = self.contexts[ctx] = StreamPair(self.codec)
        body = request.body
        history_before = pair.history_bytes()
        segments = _segments(body) if self.scoping == "never-indexed" else [(False, body.data)]
        wire = 0
        c_ns = d_ns = 0
        decoded = []
        for literal, part in segments:
            if literal:
                chunk, piece = part, part  # never enters either end's context
            else:
                chunk, t = self._timed(pair.encode, part)
                c_ns += t
                piece, t = self._timed(pair.decode, chunk)
                d_ns += t
            wire += len(chunk) + (1 + varint_len(len(chunk)) if len(segments) > 1 else 0)
            decoded.append(piece)
        return wire, b"".join(decoded), self.codec.content_coding + "+shared", history_before, overhead, c_ns, d_ns

    def _send_dynamic_dict(self, request: Request):
        body = request.body
        key = (self._context_id(request), body.kind)
        dictionary = self.dynamic.get(key, self.static.get(body.kind, b""))
        enc, c_ns = self._timed(self.codec.compress, body.data, dictionary)
        dec, d_ns = self._timed(self.codec.decompress, enc, dictionary)
        keep = _without(body.data, body.secrets) if self.scoping == "never-indexed" else body.data
        entries = 1 + len(body.secrets) if self.scoping == "never-indexed" and body.secrets else 1
        self.dynamic[key] = (dictionary + keep)[-self.dictionary_bytes :]
        # USE_DICTIONARY (9 + 1) and SET_DICTIONARY with APPEND: per entry an id, a size
        # and E/Truncate (about 5 bytes), plus an Offset when a secret is skipped.
        overhead = h2_frame_bytes(1) + h2_frame_bytes(5 * entries + 3 * (entries - 1))
        if self.scoping == "context":
            overhead += h2_frame_bytes(1)
        return (
            len(enc),
            dec,
            self.codec.content_coding + "+dict",
            self.codec.usable_dictionary_bytes(len(dictionary)),
            overhead,
            c_ns,
            d_ns,
        )

    def _send_delta(self, request: Request, preferred: str):
        body = request.body
        cross_site = request.fetch_site not in ("same-origin", "none")
        readable = not (self.scoping == "context" and cross_site and request.fetch_mode == "no-cors")
        req_headers = self.client.request_headers(body.url, body.destination, readable=readable)
        req_headers += [("sec-fetch-site", request.fetch_site), ("sec-fetch-mode", request.fetch_mode)]
        if self.scoping == "context":
            coding, dictionary = self.server.choose(req_headers, preferred)  # section 9.3.3 applies
        else:
            # a server that skips section 9.3.3 (and a client that skipped 9.3.2)
            dictionary = self.server.dictionary_for(req_headers)
            accepted = preferred in dict(req_headers).get("accept-encoding", "")
            coding = preferred if (dictionary is not None and accepted) else ("br" if preferred == "dcb" else "zstd")
            dictionary = dictionary if coding == preferred else None
        if dictionary is not None:
            if preferred == "dcb":
                enc, c_ns = self._timed(lambda: rfc9842.encode_dcb(body.data, dictionary, quality=self.codec.level))
            else:
                enc, c_ns = self._timed(lambda: rfc9842.encode_dcz(body.data, dictionary, level=self.codec.level))
        else:
            enc, c_ns = self._timed(self.codec.compress, body.data)
        resp_headers = [("content-encoding", coding)]
        designate = not (self.scoping == "never-indexed" and body.secrets)
        if designate:
            resp_headers.append(("use-as-dictionary", use_as_dictionary_for(body).serialize()))
        if coding == preferred:
            resp_headers.append(("vary", "accept-encoding, available-dictionary"))  # section 6.2
        if coding in ("br", "zstd"):
            # the plain coding is decoded by the codec, then handed on as identity
            dec, d_ns = self._timed(self.codec.decompress, enc)
            decoded = self.client.on_response(
                body.url,
                [("content-encoding", "identity")] + [h for h in resp_headers if h[0] != "content-encoding"],
                dec,
            )
        else:
            decoded, d_ns = self._timed(self.client.on_response, body.url, resp_headers, enc)
        if designate:
            self.server.designate(body.data)
        overhead = sum(len(k) + len(v) for k, v in req_headers if k in ("available-dictionary", "dictionary-id"))
        overhead += len(", dcb, dcz") if any(k == "available-dictionary" for k, _ in req_headers) else 0
        overhead += sum(len(k) + len(v) for k, v in resp_headers if k in ("use-as-dictionary", "vary"))
        return len(enc), decoded, coding, len(dictionary) if dictionary is not None else 0, overhead, c_ns, d_ns

    def _send_dcb(self, request: Request):
        return self._send_delta(request, "dcb")

    def _send_dcz(self, request: Request):
        return self._send_delta(request, "dcz")


def _segments(body: Body) -> list[tuple[bool, bytes]]:
    """(literal?, bytes) pieces of a body: the secret spans are literal."""
    if not body.secrets:
        return [(False, body.data)]
    out, pos = [], 0
    for start, end in sorted(body.secrets):
        if start > pos:
            out.append((False, body.data[pos:start]))
        out.append((True, body.data[start:end]))
        pos = end
    if pos < len(body.data):
        out.append((False, body.data[pos:]))
    return out
