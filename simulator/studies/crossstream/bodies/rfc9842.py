"""RFC 9842 Compression Dictionary Transport: headers, matching, and the dcb/dcz framing.

Hand-written (no PyPI package implements ``dcb``/``dcz``): the 36- and 40-byte stream
headers, the client's dictionary store and match rules, and the server's choice of
encoding.  The libraries do the rest: ``http_sf`` parses and serialises the structured
fields (RFC 9651), ``urlpattern`` (the WHATWG URL Pattern standard) matches URLs,
``hashlib`` gives SHA-256, Brotli and Zstandard compress (``codecs``).

Sans-I/O: ``DictionaryClient`` and ``DictionaryServer`` exchange header lists
(``[(name, value), ...]`` as ``str``) and bodies; nothing here opens a socket.

The rules implemented, by section:

- 2.1 ``Use-As-Dictionary`` (response): an SF Dictionary with ``match`` (String, a URL
  pattern, required), ``match-dest`` (Inner List of Strings, default empty = every
  destination), ``id`` (String up to 1024 characters, default empty), ``type`` (Token,
  default ``raw``; a client MUST NOT use a dictionary of a type it does not know).
  2.1.1: the pattern is built with the dictionary's URL as base; a pattern with regexp
  groups is invalid.
- 2.2 ``Available-Dictionary`` (request): an SF Byte Sequence holding the SHA-256 of
  the one best dictionary.  2.2.2 matching: same origin as the request, ``match-dest``
  (empty matches all), then the URL pattern's ``test``.  2.2.3 precedence: a match on a
  destination beats one without, then the longest ``match``, then the most recent.
- 2.3 ``Dictionary-ID`` (request): the stored ``id`` echoed as an SF String.
- 4 ``dcb``: ``ff 44 43 42`` + SHA-256 of the dictionary (36 bytes) + a Brotli stream
  using the raw dictionary as a prefix, window at most 16 MB.
- 5 ``dcz``: ``5e 2a 4d 18 20 00 00 00`` + SHA-256 (40 bytes: a Zstandard skippable
  frame, so an ordinary decoder skips it) + a Zstandard frame; the decoder accepts a
  window up to max(8 MB, 1.25 x dictionary), at most 128 MB.
- 6.1 ``Accept-Encoding``: ``dcb``/``dcz`` only when a dictionary is available.
  6.2 ``Content-Encoding: dcb|dcz`` and ``Vary: accept-encoding, available-dictionary``.
- 9.3.2 / 9.3.3: dictionary compression only when both dictionary and response are
  readable by the client; the server's ``Sec-Fetch-Site`` / ``Sec-Fetch-Mode`` /
  CORS check (``server_may_use_dictionary``).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import http_sf
import zstandard
from urlpattern import URLPattern

from . import _brotli_dict
from .codecs import BROTLI_LGWIN, DecodeError, SchemeUnavailable

__all__ = [
    "DCB_MAGIC",
    "DCZ_MAGIC",
    "DCB_HEADER_BYTES",
    "DCZ_HEADER_BYTES",
    "sha256",
    "UseAsDictionary",
    "StoredDictionary",
    "DictionaryClient",
    "DictionaryServer",
    "encode_dcb",
    "decode_dcb",
    "encode_dcz",
    "decode_dcz",
    "dcz_max_window_bytes",
    "available_dictionary_value",
    "parse_available_dictionary",
    "server_may_use_dictionary",
    "HeaderError",
]

DCB_MAGIC = b"\xff\x44\x43\x42"  # section 4
DCZ_MAGIC = b"\x5e\x2a\x4d\x18\x20\x00\x00\x00"  # section 5: skippable frame 0x184D2A5E, 32 bytes
DCB_HEADER_BYTES = len(DCB_MAGIC) + 32
DCZ_HEADER_BYTES = len(DCZ_MAGIC) + 32
DCB_MAX_WINDOW_BYTES = 16 << 20  # section 4
MAX_ID_CHARS = 1024  # section 2.1.3


class HeaderError(ValueError):
    """A dictionary header field that the rules say to ignore (malformed or invalid)."""


def sha256(data: bytes) -> bytes:
    """The SHA-256 digest of ``data`` (the dictionary hash of RFC 9842 2.2)."""
    return hashlib.sha256(data).digest()


def _origin(url: str) -> tuple[str, str]:
    u = urlsplit(url)
    return (u.scheme.lower(), (u.netloc or "").lower())


# ---------------------------------------------------------------------------------------
# Header fields


@dataclass(frozen=True)
class UseAsDictionary:
    """The parameters of a Use-As-Dictionary response field (RFC 9842 2.1)."""

    match: str
    match_dest: tuple[str, ...] = ()
    id: str = ""
    type: str = "raw"

    def serialize(self) -> str:
        """The field value as an SF Dictionary (RFC 8941)."""
        return _serialize(self)

    @classmethod
    def parse(cls, value: str) -> "UseAsDictionary":
        """Section 2.1; raises ``HeaderError`` when the field must be ignored."""
        return _parse(value) if cls is UseAsDictionary else cls._parse_uncached(value)

    def _serialize_uncached(self) -> str:
        value: dict = {"match": (self.match, {})}
        if self.match_dest:
            value["match-dest"] = ([(d, {}) for d in self.match_dest], {})
        if self.id:
            value["id"] = (self.id, {})
        if self.type != "raw":
            value["type"] = (http_sf.Token(self.type), {})
        return http_sf.ser(value)

    @classmethod
    def _parse_uncached(cls, value: str) -> "UseAsDictionary":
        try:
            d = http_sf.parse(value.encode("latin-1"), tltype="dictionary")
        except Exception as exc:  # http_sf raises its own error types
            raise HeaderError(f"Use-As-Dictionary is not a structured-field dictionary ({exc})") from None
        match = d.get("match", (None,))[0]
        if not isinstance(match, str) or not match:
            raise HeaderError("Use-As-Dictionary has no match string (section 2.1.1: required)")
        dest = d.get("match-dest", ([], {}))[0]
        if not isinstance(dest, list) or not all(isinstance(x[0], str) for x in dest):
            raise HeaderError("match-dest must be an inner list of strings (section 2.1.2)")
        ident = d.get("id", ("", {}))[0]
        if not isinstance(ident, str) or len(ident) > MAX_ID_CHARS:
            raise HeaderError("id must be a string of at most 1024 characters (section 2.1.3)")
        typ = d.get("type", (http_sf.Token("raw"), {}))[0]
        if not isinstance(typ, http_sf.Token):
            raise HeaderError("type must be a token (section 2.1.4)")
        return cls(match=match, match_dest=tuple(x[0] for x in dest), id=ident, type=str(typ))

    def pattern(self, dictionary_url: str) -> URLPattern:
        """Section 2.1.1: the pattern with the dictionary URL as base; regexp groups are invalid."""
        return _compiled_pattern(self.match, dictionary_url)


# The same few designations are written and read again on every connection of the leak's
# oracle (thousands of times): both directions are pure functions of immutable values.
@functools.lru_cache(maxsize=1024)
def _serialize(rule: UseAsDictionary) -> str:
    return rule._serialize_uncached()


@functools.lru_cache(maxsize=1024)
def _parse(value: str) -> UseAsDictionary:
    return UseAsDictionary._parse_uncached(value)


@functools.lru_cache(maxsize=1024)
def _compiled_pattern(match: str, base: str) -> URLPattern:
    # Compiling costs about 0.3 ms and a client stores the same (match, URL) again on
    # every connection of the leak's oracle; a compiled pattern is immutable.
    try:
        p = URLPattern(match, base)
    except Exception as exc:
        raise HeaderError(f"match {match!r} is not a valid URL pattern ({exc})") from None
    if p.hasRegExpGroups:
        raise HeaderError(f"match {match!r} uses regular expressions (section 2.1.1)")
    return p


def available_dictionary_value(digest: bytes) -> str:
    """Section 2.2: an SF Byte Sequence, ``:base64:``."""
    return http_sf.ser(digest)


def parse_available_dictionary(value: str) -> bytes:
    """The 32-byte SHA-256 in an Available-Dictionary value (RFC 9842 2.2); HeaderError when malformed."""
    try:
        item = http_sf.parse(value.encode("latin-1"), tltype="item")
    except Exception as exc:
        raise HeaderError(f"Available-Dictionary is not a structured-field item ({exc})") from None
    digest = item[0]
    if not isinstance(digest, bytes) or len(digest) != 32:
        raise HeaderError("Available-Dictionary must be a byte sequence of a 32-byte SHA-256 hash (section 2.2)")
    return digest


def server_may_use_dictionary(request: dict, response: dict) -> bool:
    """Section 9.3.3: False for cross-origin requests where dictionary compression should
    not be used.  ``request``/``response``: lower-case header names -> values."""
    site = request.get("sec-fetch-site")
    if site is None or site == "same-origin":
        return True
    mode = request.get("sec-fetch-mode")
    if mode is None or mode in ("navigate", "same-origin"):
        return True
    if mode == "cors":
        acao = response.get("access-control-allow-origin")
        origin = request.get("origin")
        if acao is None or origin is None:
            return False
        return acao == "*" or acao == origin
    return False


# ---------------------------------------------------------------------------------------
# dcb / dcz framing


def encode_dcb(body: bytes, dictionary: bytes, *, quality: int, lgwin: int = BROTLI_LGWIN) -> bytes:
    """A ``dcb`` body: magic, the dictionary's SHA-256, Brotli against the dictionary (RFC 9842 4)."""
    if not _brotli_dict.available():
        raise SchemeUnavailable(_brotli_dict.unavailable_reason() or "no Brotli dictionary API")
    if (1 << lgwin) > DCB_MAX_WINDOW_BYTES:
        raise ValueError("dcb windows are at most 16 MB (RFC 9842 section 4)")
    return (
        DCB_MAGIC
        + sha256(dictionary)
        + _brotli_dict.compress(body, quality=quality, lgwin=lgwin, dictionary=dictionary)
    )


def decode_dcb(data: bytes, dictionaries: dict[bytes, bytes]) -> bytes:
    """``dictionaries``: SHA-256 -> bytes.  Section 4: check the magic and the hash."""
    if len(data) < DCB_HEADER_BYTES or data[:4] != DCB_MAGIC:
        raise DecodeError("not a dcb stream (magic ff 44 43 42 missing, RFC 9842 section 4)")
    digest = data[4:DCB_HEADER_BYTES]
    dictionary = dictionaries.get(digest)
    if dictionary is None:
        raise DecodeError("dcb stream names a dictionary the client does not have")
    try:
        return _brotli_dict.decompress(data[DCB_HEADER_BYTES:], dictionary=dictionary)
    except _brotli_dict.BrotliDictionaryError as exc:
        raise DecodeError(f"dcb: {exc}") from None


def dcz_max_window_bytes(dictionary_bytes: int) -> int:
    """Section 5: at least 8 MB or 1.25 x the dictionary, whichever is greater, at most 128 MB."""
    return min(max(8 << 20, dictionary_bytes * 5 // 4), 128 << 20)


def encode_dcz(body: bytes, dictionary: bytes, *, level: int) -> bytes:
    """A ``dcz`` body: skippable-frame header with the dictionary's SHA-256, then Zstandard (RFC 9842 5)."""
    d = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    frame = zstandard.ZstdCompressor(level=level, dict_data=d).compress(body)
    return DCZ_MAGIC + sha256(dictionary) + frame


def decode_dcz(data: bytes, dictionaries: dict[bytes, bytes]) -> bytes:
    """Section 5.  The header is a skippable frame: zstd itself skips it (read across frames)."""
    if len(data) < DCZ_HEADER_BYTES or data[:8] != DCZ_MAGIC:
        raise DecodeError("not a dcz stream (skippable-frame magic missing, RFC 9842 section 5)")
    digest = data[8:DCZ_HEADER_BYTES]
    dictionary = dictionaries.get(digest)
    if dictionary is None:
        raise DecodeError("dcz stream names a dictionary the client does not have")
    d = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    try:
        dec = zstandard.ZstdDecompressor(dict_data=d, max_window_size=dcz_max_window_bytes(len(dictionary)))
        out = dec.decompressobj(read_across_frames=True).decompress(data)  # header included
        # Reading across frames never reports the end: check the frame's declared size,
        # or decode the frame alone and ask whether it ended.
        expected = zstandard.frame_content_size(data[DCZ_HEADER_BYTES:])
        if expected < 0:
            obj = dec.decompressobj()
            obj.decompress(data[DCZ_HEADER_BYTES:])
            complete = obj.eof
        else:
            complete = len(out) == expected
        if not complete:
            raise DecodeError("truncated dcz stream")
        return out
    except zstandard.ZstdError as exc:
        raise DecodeError(f"dcz: {exc}") from None


# ---------------------------------------------------------------------------------------
# The client's dictionary store and the server's choice


@dataclass
class StoredDictionary:
    """A dictionary the client stored: its URL, Use-As-Dictionary rule, bytes, arrival order and hash."""

    url: str
    rule: UseAsDictionary
    data: bytes
    fetched: int  # order of arrival (section 2.2.3: most recent wins ties)
    digest: bytes = field(init=False)

    def __post_init__(self) -> None:
        self.digest = sha256(self.data)
        self._pattern = self.rule.pattern(self.url)

    def matches(self, url: str, destination: str | None) -> bool:
        """Section 2.2.2."""
        if destination is not None and self.rule.match_dest and destination not in self.rule.match_dest:
            return False
        if _origin(self.url) != _origin(url):
            return False
        return bool(self._pattern.test(url))


class DictionaryClient:
    """A client's side of RFC 9842: store dictionaries, advertise one, decode dcb/dcz.

    ``supports_destinations``: a browser knows request destinations (section 2.1.2);
    ``readable(url)``: section 9.3.2 (a browser uses dictionaries only for responses
    readable by the page: same-origin or CORS); ``None`` = every response readable."""

    def __init__(self, *, encodings: tuple[str, ...] = ("dcb", "dcz"), supports_destinations: bool = True) -> None:
        self.encodings = encodings
        self.supports_destinations = supports_destinations
        self.store: dict[str, StoredDictionary] = {}  # keyed by the dictionary's URL
        self._fetched = 0

    @property
    def stored_bytes(self) -> int:
        """Bytes of all stored dictionaries."""
        return sum(len(d.data) for d in self.store.values())

    def best(self, url: str, destination: str | None) -> StoredDictionary | None:
        """The stored dictionary to advertise for ``url`` (precedence of RFC 9842 2.2.3), or None."""
        dest = destination if self.supports_destinations else None
        candidates = [d for d in self.store.values() if d.matches(url, dest)]
        if not candidates:
            return None
        # section 2.2.3: destination match first, then the longest match, then the most recent
        return max(
            candidates, key=lambda d: (bool(dest is not None and d.rule.match_dest), len(d.rule.match), d.fetched)
        )

    def request_headers(
        self,
        url: str,
        destination: str | None,
        *,
        readable: bool = True,
        base_encodings: tuple[str, ...] = ("gzip", "br", "zstd"),
    ) -> list[tuple[str, str]]:
        """Accept-Encoding, plus dcb/dcz, Available-Dictionary and Dictionary-ID when a dictionary matches
        (RFC 9842 2.2, 2.3)."""
        d = self.best(url, destination) if readable else None
        if d is None:
            # section 6.1: no dcb/dcz without a dictionary to offer
            return [("accept-encoding", ", ".join(base_encodings))]
        headers = [
            ("accept-encoding", ", ".join(base_encodings + self.encodings)),
            ("available-dictionary", available_dictionary_value(d.digest)),
        ]
        if d.rule.id:
            headers.append(("dictionary-id", http_sf.ser(d.rule.id)))
        return headers

    def on_response(self, url: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
        """Decode ``body`` per its Content-Encoding, store it if it is a dictionary, return it."""
        h = {k.lower(): v for k, v in headers}
        coding = h.get("content-encoding", "identity").strip().lower()
        by_hash = {d.digest: d.data for d in self.store.values()}
        if coding == "dcb":
            content = decode_dcb(body, by_hash)
        elif coding == "dcz":
            content = decode_dcz(body, by_hash)
        elif coding == "identity":
            content = body
        else:
            raise DecodeError(f"the client does not decode {coding!r} here (it decodes dcb, dcz, identity)")
        value = h.get("use-as-dictionary")
        if value is not None:
            try:
                rule = UseAsDictionary.parse(value)
                if rule.type == "raw":  # section 2.1.4: unknown types are not used
                    self._fetched += 1
                    self.store[url] = StoredDictionary(url, rule, content, self._fetched)
            except HeaderError:
                pass  # an invalid dictionary is ignored
        return content


class DictionaryServer:
    """A server's side: remember the dictionaries it designated, pick dcb/dcz when the
    request offers one it has (and section 9.3.3 allows), else plain br/zstd."""

    def __init__(self) -> None:
        self.dictionaries: dict[bytes, bytes] = {}  # SHA-256 -> bytes (what it may be asked for)

    def designate(self, body: bytes) -> None:
        """Remember ``body`` as a dictionary, under its SHA-256."""
        self.dictionaries[sha256(body)] = body

    def dictionary_for(self, request_headers: list[tuple[str, str]]) -> bytes | None:
        """The dictionary the request's Available-Dictionary names, if this server has it; else None."""
        h = {k.lower(): v for k, v in request_headers}
        value = h.get("available-dictionary")
        if value is None:
            return None
        try:
            digest = parse_available_dictionary(value)
        except HeaderError:
            return None
        return self.dictionaries.get(digest)

    def choose(
        self, request_headers: list[tuple[str, str]], preferred: str, response_headers: dict | None = None
    ) -> tuple[str, bytes | None]:
        """(content-coding, dictionary or None): ``preferred`` is ``dcb`` or ``dcz``."""
        h = {k.lower(): v for k, v in request_headers}
        accepted = {t.split(";")[0].strip().lower() for t in h.get("accept-encoding", "").split(",")}
        plain = "br" if preferred == "dcb" else "zstd"
        if preferred not in accepted:
            return plain, None
        if not server_may_use_dictionary(h, response_headers or {}):
            return plain, None
        dictionary = self.dictionary_for(request_headers)
        return (preferred, dictionary) if dictionary is not None else (plain, None)
