"""Sizes of HTTP header sections and connection prefaces on the wire, from the real
libraries' behaviour without writing the bytes: HTTP/1.1 header sections (RFC 9112),
HPACK header blocks as ``hpack``'s encoder writes them (RFC 7541, ``HeaderBlockSizer``),
and the HTTP/2 connection preface as ``h2`` writes it (RFC 9113 section 3.4).  The
page-load model sizes every message with these.  Written by hand over hpack's tables;
``tests/test_push.py`` checks the block sizes against hpack block by block.

``HeaderBlockSizer._encode``'s per-field loop has a C twin, ``simulator.http._header_sizes``
(also hand-written), used when it is built; this module's loop is the reference, and
``tests/test_header_sizes.py`` checks that the two agree block by block.  With the twin the
dynamic table is the C ``Table``'s own (``_table``), not this class's dicts and deque.  The twin also
sizes an h2 block from the list before h2's normalisation (``h2_block_size``), normalising
each field as it meets it.
``WORKBENCH_PURE_PYTHON=1`` selects the reference; ``WORKBENCH_HEADERS_EXT`` loads the
extension from another build (``make asan``)."""

from __future__ import annotations

import functools
import itertools
import os
from collections import deque

import h2.config
import h2.connection
import h2.settings
import hpack
from h2.utilities import normalize_outbound_headers
from hpack.huffman_constants import REQUEST_CODES_LENGTH
from hpack.table import HeaderTable

from .._extension import load_extension
from ..frames import integer_len

__all__ = ["HeaderBlockSizer", "h1_header_bytes", "h2_normalized", "h2_preface_bytes", "H2_SETTINGS_ACK_BYTES"]

H2_SETTINGS_ACK_BYTES = 9  # a SETTINGS frame with ACK and no payload (RFC 9113 section 6.5.3)


@functools.lru_cache(maxsize=None)
def h2_preface_bytes(is_client: bool, window_bytes: int = 16 << 20) -> int:
    """Bytes the h2 stack's end writes when its connection starts, as the ``h2`` library
    writes them with the stack's settings (``stacks.h2``): the client's magic (RFC 9113
    section 3.4), SETTINGS and the connection WINDOW_UPDATE.  Each end acknowledges the
    peer's SETTINGS (9 bytes, section 6.5.3) when the first of its bytes arrive."""
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=is_client, header_encoding=None))
    conn.local_settings = h2.settings.Settings(
        client=is_client,
        initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window_bytes,
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000,
        },
    )
    conn.initiate_connection()
    conn.increment_flow_control_window(window_bytes - 65535)
    return len(conn.data_to_send())


# Pure functions of their arguments, memoized: a load encodes the same fields on many
# connections (and a sweep on every load).  The encoders stay the real ``hpack`` ones;
# only Huffman coding (a function of the string alone) and h2's normalisation (of the
# header list alone, no validation flags) are looked up instead of recomputed.
@functools.lru_cache(maxsize=1 << 16)
def h2_normalized(headers: tuple) -> tuple:
    """A header list as ``h2`` normalises it before encoding: cookie crumbs split (RFC 9113
    section 8.2.3), authorization and short cookies marked never-indexed; memoized."""
    # h2's steps (names lower-cased, surrounding whitespace stripped, connection-specific
    # fields dropped, some fields never indexed) each look at one field alone, so the list's
    # result is its fields' results in order: looked up per distinct field (a page's lists
    # share most of theirs), each one the library's own answer for that field.
    cache = _NORMALIZED_FIELDS
    if set(map(type, headers)) <= _PLAIN:
        # Plain tuples all: looked up at C speed (most lists of a page hold a field or two
        # not met before, normalised below).
        done = list(map(cache.get, headers))
        if None in done:
            for i, fields in enumerate(done):
                if fields is None:
                    done[i] = _normalized_field(headers[i])
        return tuple(itertools.chain.from_iterable(done))
    out: list = []
    for field in headers:
        if type(field) is tuple:
            done = cache.get(field)
            out += _normalized_field(field) if done is None else done
        else:  # a HeaderTuple equals the plain tuple: not a key
            out += normalize_outbound_headers((field,), None)
    return tuple(out)


def _normalized_one(field) -> tuple:
    """The fields h2 normalises one field to (``h2_normalized``'s answer for it alone)."""
    if type(field) is tuple:
        done = _NORMALIZED_FIELDS.get(field)
        return _normalized_field(field) if done is None else done
    return tuple(normalize_outbound_headers((field,), None))


def _normalized_field(field: tuple) -> tuple:
    """h2's normalisation of one plain-tuple field not met before, remembered."""
    if len(field) == 2 and _blind(field[0]):
        done = ((field[0], field[1].strip()),)  # the library's answer for this name, any value
    else:
        done = tuple(normalize_outbound_headers((field,), None))
    cache = _NORMALIZED_FIELDS
    if len(cache) >= _FIELDS_MAX:
        cache.clear()
    cache[field] = done
    return done


_NORMALIZED_FIELDS: dict = {}
_FIELDS_MAX = 1 << 17
_BLIND_NAMES: dict = {}  # _value_blind's answers so far, by name: the C twin normalises those fields itself


def _blind(name) -> bool:
    """``_value_blind(name)``, its answer kept in ``_BLIND_NAMES`` for the C twin."""
    blind = _BLIND_NAMES.get(name)
    if blind is None:
        blind = _value_blind(name)
        if type(name) is bytes and len(_BLIND_NAMES) < _FIELDS_MAX:
            _BLIND_NAMES[name] = blind
    return blind


_PLAIN = {tuple}
_PROBE = b" probe\t"  # a value with surrounding whitespace, as h2 strips it: b"probe"


@functools.lru_cache(maxsize=1 << 12)
def _value_blind(name) -> bool:
    """Whether h2 normalises every field named ``name`` (bytes) alike whatever its value: the name
    kept, the field neither dropped nor never-indexed, the value only stripped of surrounding
    whitespace; asked of the library once per name, with a probe value.  Its one rule that
    looks at the value, a cookie under 20 bytes never indexed, keeps cookies out; the other
    fields a page repeats with new values (``:path``, ``etag``, ``content-length``, ``date``)
    then cost no pass through h2's generators each."""
    if type(name) is not bytes or name == b"cookie":
        return False
    out = tuple(normalize_outbound_headers(((name, _PROBE),), None))
    return out == ((name, b"probe"),) and type(out[0]) is tuple


@functools.lru_cache(maxsize=1 << 16)
def _huffman_bytes(data: bytes) -> int:
    """Bytes of ``data`` Huffman-coded (RFC 7541 section 5.2, Appendix B): its codes' bits,
    padded to a whole byte."""
    return (sum(data.translate(_CODE_BITS)) + 7) >> 3  # each byte mapped to its code's length, summed


_CODE_BITS = bytes(REQUEST_CODES_LENGTH[:256])  # bits of each byte's code (5 to 30; 256 is EOS)


def _as_bytes(value) -> bytes:
    t = type(value)
    if t is bytes:
        return value
    return (value if t is str else str(value)).encode("utf-8")


_STATIC = HeaderTable.STATIC_TABLE_MAPPING  # name -> (first index, {value: index})
_DYNAMIC_FIRST_INDEX = HeaderTable.STATIC_TABLE_LENGTH + 1

# Blocks sized before (HeaderBlockSizer.block_size): a block's size is a function of its
# header list and of the encoder's dynamic table, and the table a function of the lists
# encoded before on that connection, its history.  So (history, list) -> (size, the
# history after it) is exact; a load repeats the histories of an earlier load of the page
# (a sweep, a benchmark), connection by connection.  Histories are numbered as first met.
_SIZED: dict = {}
_SIZED_MAX = 1 << 16
_HISTORIES = itertools.count(1)


class HeaderBlockSizer:
    """The size of the header blocks an ``hpack.Encoder`` writes, block after block on one
    connection, without writing them: the same choices as hpack's encoder (RFC 7541: a
    full match in the static table, else in the dynamic table, newest first, is indexed;
    else a name match, static first, gives an indexed name; literals are always Huffman
    coded and added to the table unless never-indexed; a 4096-byte table evicting the
    oldest first), and the same dynamic table.  Lookups go through dictionaries instead
    of hpack's scan of the table (a load encodes thousands of fields);
    ``tests/test_push.py`` checks the sizes against hpack's own blocks."""

    __slots__ = (
        "_entries",
        "_size",
        "_inserted",
        "_first",
        "_exact",
        "_names",
        "_history",
        "_fresh",
        "_unapplied",
        "_table",
    )
    MAX_TABLE_BYTES = HeaderTable.DEFAULT_SIZE

    def __init__(self) -> None:
        self._entries: deque = deque()  # the live entries' facts (_remember's), oldest first
        self._size = 0
        self._inserted = 0  # insertions so far; live entries: _first .. _inserted - 1
        self._first = 0
        self._exact: dict = {}  # (name, value) of a live entry -> its newest insertion number
        self._names: dict = {}  # name of a live entry -> its newest insertion number
        self._history: int | None = 0  # number of the lists sized so far (0: none; None: not kept)
        # The history was numbered by this encoder's own miss: nothing was sized after it yet,
        # so every lookup from here on misses and is not made (the blocks are still entered).
        self._fresh = False
        self._unapplied: list = []  # blocks looked up, not yet entered in the table
        # The C twin's table (RFC 7541 section 2.3.2) in place of the five above, when built.
        self._table = None if _NATIVE is None else _NATIVE.Table(self.MAX_TABLE_BYTES)

    def block_size(self, key: tuple, headers) -> int:
        """``encoded_size(headers)``, looked up when this encoder's history was met before;
        ``key`` (hashable) stands for ``headers`` (one key, one list, always)."""
        return self._looked_up(key, headers, False)

    def h2_block_size(self, headers: tuple) -> int:
        """``block_size(headers, h2_normalized(headers))``: the block of ``headers`` as the h2
        stack normalises and encodes it, the normalisation done field by field as the block is
        sized (``_encode_h2``), without making the normalised list."""
        return self._looked_up(headers, headers, True)

    def _looked_up(self, key, headers, normalize: bool) -> int:
        if self._history is None:
            return self._encode_h2(headers) if normalize else self._encode(headers)
        key = (self._history, key)
        known = None if self._fresh else _SIZED.get(key)
        if known is None:
            self._apply()  # the table as hpack's would be
            if len(_SIZED) >= _SIZED_MAX:
                _SIZED.clear()
            size = self._encode_h2(headers) if normalize else self._encode(headers)
            known = _SIZED[key] = (size, next(_HISTORIES))
            self._fresh = True
        else:
            self._unapplied.append((headers, normalize))
        self._history = known[1]
        return known[0]

    def _apply(self) -> None:
        """The blocks looked up so far entered in the table."""
        for earlier, normalize in self._unapplied:
            if normalize:
                self._encode_h2(earlier)
            else:
                self._encode(earlier)
        self._unapplied.clear()

    def encoded_size(self, headers) -> int:
        """Bytes of ``headers`` encoded as one block, as ``len(hpack.Encoder().encode(headers))``
        on this connection's encoder (tuples or ``HeaderTuple``s; no table size updates)."""
        self._apply()
        self._history = None  # a block not in the history: no more lookups
        return self._encode(headers)

    def _encode(self, headers) -> int:
        if self._table is not None:
            return self._table.encode(headers, _PLAIN_FIELDS, _field_facts)
        return self._encode_python(headers)

    def _encode_h2(self, headers) -> int:
        """``_encode(h2_normalized(headers))``, each field normalised as the loop meets it (C twin)."""
        if self._table is not None:
            return self._table.encode(
                headers, _PLAIN_FIELDS, _field_facts, _H2_FACTS, _NORMALIZED_FIELDS, _normalized_one, _BLIND_NAMES
            )
        return self._encode_python(h2_normalized(headers))

    def _table_state(self) -> tuple:
        """The dynamic table: (first, inserted, size, entries' facts oldest first, exact, names),
        the C twin's when it has one, else the reference's (the tests hold one to the other)."""
        if self._table is not None:
            entries, exact, names = self._table.state()
            return (self._table.first, self._table.inserted, self._table.used, entries, exact, names)
        return self._python_state()

    def _python_state(self) -> tuple:
        """``_table_state`` of the reference's own table (``_encode_python``'s)."""
        return (self._first, self._inserted, self._size, list(self._entries), self._exact, self._names)

    def _encode_python(self, headers) -> int:
        """``_encode`` written in Python: the reference of the C twin's loop."""
        # The table's state in locals for the block, stored back at its end.
        total = 0
        plain_fields = _PLAIN_FIELDS
        exact, names, entries = self._exact, self._names, self._entries
        first, inserted, used = self._first, self._inserted, self._size
        limit = self.MAX_TABLE_BYTES
        for header in headers:
            # What of the field's encoding the dynamic table does not change, per distinct field.
            info = plain_fields.get(header) if type(header) is tuple and len(header) == 2 else None
            if info is None:
                info = _field_facts(header)
            static_full, pair, static_name, literal_value, literal_name, sensitive, size = info
            if static_full:
                total += static_full  # indexed field (static table)
                continue
            k = exact.get(pair)
            if k is not None and k >= first:
                index = _DYNAMIC_FIRST_INDEX + inserted - 1 - k
                total += 1 if index < 127 else integer_len(index, 7)  # RFC 7541 5.1: fits the 7-bit prefix
                continue
            if static_name:  # indexed name (static table)
                total += static_name + literal_value
            else:
                k = names.get(pair[0])
                if k is not None and k >= first:  # indexed name (dynamic table)
                    total += integer_len(_DYNAMIC_FIRST_INDEX + inserted - 1 - k, 4 if sensitive else 6) + literal_value
                else:  # literal name
                    total += literal_name + literal_value
            if sensitive:
                continue
            # Entered in the dynamic table (RFC 7541 section 4.4), the oldest entries evicted past its size.
            if size > limit:  # larger than the table: it empties it (no number in the lookups is live)
                entries.clear()
                exact.clear()
                names.clear()
                used = 0
                first = inserted
                continue
            exact[pair] = inserted
            names[pair[0]] = inserted
            inserted += 1
            entries.append(info)
            used += size
            while used > limit:
                evicted = entries.popleft()
                used -= evicted[6]
                # Its number leaves the lookups (a newer one of its pair or name stays): they
                # hold the live entries only, a table's worth, not every field ever entered.
                if exact.get(evicted[1]) == first:
                    del exact[evicted[1]]
                if names.get(evicted[1][0]) == first:
                    del names[evicted[1][0]]
                first += 1
        self._first, self._inserted, self._size = first, inserted, used
        return total


# Per distinct field (plain (name, value) tuples by the tuple; others by name, value and
# never-indexed), what the dynamic table does not change: the bytes of a static full match
# (0: none), the (name, value) pair, the bytes of a static name index (0: none), of the
# Huffman-coded value with its length, of a literal name with its length and the
# representation's first byte, never-indexed, and the entry's size (RFC 7541 section 4.1).
_PLAIN_FIELDS: dict = {}
_OTHER_FIELDS: dict = {}
_H2_FACTS: dict = {}  # the C twin's: a plain field -> the facts of the fields h2 normalises it to


def _field_facts(header) -> tuple:
    """The facts of a field not in ``_PLAIN_FIELDS`` (a plain tuple met for the first time,
    or a ``HeaderTuple`` or a 3-tuple with its never-indexed flag), remembered."""
    if type(header) is tuple and len(header) == 2:
        return _remember(_PLAIN_FIELDS, header, _as_bytes(header[0]), _as_bytes(header[1]), False)
    if isinstance(header, hpack.HeaderTuple):
        sensitive = not header.indexable
    else:
        sensitive = bool(len(header) > 2 and header[2])
    name, value = _as_bytes(header[0]), _as_bytes(header[1])
    key = (name, value, sensitive)
    info = _OTHER_FIELDS.get(key)
    if info is None:
        info = _remember(_OTHER_FIELDS, key, name, value, sensitive)
    return info


def _load_native():
    """The C twin of ``_encode``'s loop, or None (not built, or the reference asked for)."""
    if os.environ.get("WORKBENCH_PURE_PYTHON", "") not in ("", "0"):
        return None
    return load_extension("simulator.http._header_sizes", "WORKBENCH_HEADERS_EXT")


_NATIVE = _load_native()
if _NATIVE is not None:  # the C twin makes a (bytes, bytes) field's facts as _remember does
    _NATIVE.configure(_STATIC, _CODE_BITS, _FIELDS_MAX)


def _remember(cache: dict, key, name: bytes, value: bytes, sensitive: bool) -> tuple:
    static = _STATIC.get(name)
    static_full = static_name = 0
    if static:
        index = static[1].get(value)
        if index is not None:
            static_full = integer_len(index, 7)  # RFC 7541 section 6.1
        static_name = integer_len(static[0], 4 if sensitive else 6)  # sections 6.2.1 and 6.2.3
    value_bytes = _huffman_bytes.__wrapped__(value)  # once per distinct field: no memo of its own
    name_bytes = _huffman_bytes(name)
    info = (
        static_full,
        (name, value),
        static_name,
        integer_len(value_bytes, 7) + value_bytes,
        1 + integer_len(name_bytes, 7) + name_bytes,
        sensitive,
        32 + len(name) + len(value),
    )
    if len(cache) >= _FIELDS_MAX:
        cache.clear()
    cache[key] = info
    return info


def h1_header_bytes(headers) -> int:
    """An HTTP/1.1 header section's bytes (RFC 9112 sections 3 and 4): the request line
    (method, target, version) or status line, ``Host`` from ``:authority``, a ``name:
    value`` line per field, the empty line."""
    pseudo = {n: v for n, v in headers if n[:1] == b":"}
    if b":status" in pseudo:
        size = len(b"HTTP/1.1  OK\r\n") + len(pseudo[b":status"])
    else:
        size = len(pseudo.get(b":method", b"GET")) + len(pseudo.get(b":path", b"/")) + len(b"  HTTP/1.1\r\n")
        if b":authority" in pseudo:
            size += len(b"host: \r\n") + len(pseudo[b":authority"])
    return size + sum(len(n) + len(v) + 4 for n, v in headers if n[:1] != b":") + 2
