"""A HAR's JSON read one entry at a time.  Written by hand.

``json.loads`` of a whole HAR holds every entry as Python objects at once: about five times
the file (a 50 MB HAR of 20,000 entries: 233 MB of dicts and strings), most of it header
objects, bodies and cookies the workbench never reads.  ``walk`` reads the document's two
outer levels itself, ``{"log": {..., "entries": [...], ...}}``, and hands each entry,
decoded by the standard library's decoder (``JSONDecoder.raw_decode``, the same C scanner
``json.loads`` runs), to a callback as soon as it is read, so the entry is dropped once the
callback has taken what it needs.

The outer levels follow RFC 8259's grammar as ``json`` reads it (whitespace is space, tab,
CR and LF; keys are strings; nothing after the top-level value but whitespace).  Anything
else, a document of another shape (no ``log`` object, ``entries`` not a list, a key given
twice, where ``json`` keeps the last value) or a syntax error anywhere, raises
``NotStreamable`` (a syntax error: the decoder's ``JSONDecodeError``, ``RecursionError`` or
``ValueError``), and the caller reads the file the whole-document way, which gives the
answer and the message it always gave.

An entry is decoded by ``orjson`` (about twice as fast as the standard library's scanner)
when its end can be told from the text alone: an entry on a line of its own (``write_har``'s
layout: ``{...},`` then a newline) or an entry whose ``{`` opens a line whose indentation
is next met again by a ``}`` (a pretty-printed HAR, Chrome's or Firefox's).  A JSON string
holds no raw newline (RFC 8259 section 7: control characters are escaped), so that newline
is outside every string, and the slice is taken only if ``orjson`` reads it whole as one
value: the value ``raw_decode`` reads from the same place, which ends where it does.  What
``orjson`` reads otherwise than ``json`` is left to ``json``: it refuses ``NaN``,
``Infinity``, numbers that overflow a double, escapes of lone surrogates and nesting past
1,024 levels (all of which ``json`` reads), and a slice holding a run of 19 digits or more
(an integer past 64 bits, which ``orjson`` would read as a float) or more ``[`` and ``{``
than ``json``'s scanner surely nests here (it counts its levels against the interpreter's
recursion limit, the stack included, and refuses past it: a depth ``orjson`` reads) is not
given to it.  That check of the slice (``_shape_python``) has a C twin in
``simulator.traces._harheaders`` (one pass, no copy), held to it by tests/test_har_stream.py.
"""

from __future__ import annotations

import json
import re
import sys
from json.decoder import scanstring
from typing import Callable

from .harheaders import _NATIVE as _harheaders_native

try:
    from orjson import JSONDecodeError as _OrjsonRefused
    from orjson import loads as _orjson_loads
except ImportError:  # a dependency (pyproject.toml); without it every entry is json's
    _orjson_loads = None

__all__ = ["walk", "NotStreamable"]

_WHITESPACE = re.compile(r"[ \t\n\r]*")  # RFC 8259 section 2: ws
_DECODER = json.JSONDecoder()
# Each digit byte as "0", "[" and "{" as "{", every other byte as a space: in a slice so
# mapped, a run of 19 zeros is a run of 19 digits (an integer past 64 bits, maybe: json's to
# read), and the count of "{" bounds the nesting (json's, which its scanner counts against
# the interpreter's recursion limit, stack included: json's to read past the room left).
_SHAPE = bytes(0x30 if 0x30 <= b <= 0x39 else 0x7B if b in b"[{" else 0x20 for b in range(256))
_LONG_DIGITS = b"0" * 19
_FRAMES_SLACK = 50  # frames between walk's and the scanner's, and to spare


_SLACK = 64  # characters between an entry's end and its line's end (a comma, spaces, CR)


def _shape_python(piece: bytes) -> int:
    """-1 when ``piece`` holds a run of 19 digits or more, else its count of "[" and "{"
    (``_SHAPE``); the reference of the C twin, ``simulator.traces._harheaders.shape``."""
    shape = piece.translate(_SHAPE)
    return -1 if _LONG_DIGITS in shape else shape.count(b"{")


# The C twin (harheaders loads the extension; WORKBENCH_PURE_PYTHON=1 selects the reference).
_shape_native = getattr(_harheaders_native, "shape", None)


def _decode_entry(text: str, pos: int, room: int) -> tuple[object, int, int]:
    """``_DECODER.raw_decode(text, pos)`` (the same value and end), by ``orjson`` where the
    entry's end can be told from its layout (the module docstring), and how far the text was
    looked at to find that end (``pos`` when it was not): ``walk`` stops asking once that
    reach passes an entry's end, so that no layout makes the reading quadratic.  ``room``:
    the nesting json's scanner surely reads here (below, json reads the entry)."""
    if _orjson_loads is None or not text.startswith("{", pos):
        return (*_DECODER.raw_decode(text, pos), pos)
    nl = text.find("\n", pos)
    if nl < 0:
        return (*_DECODER.raw_decode(text, pos), len(text))
    end = reach = nl
    while end > pos and text[end - 1] in " \t\r":
        end -= 1
    if text[end - 1] == ",":  # write_har's "},\n" between entries
        end -= 1
        while end > pos and text[end - 1] in " \t\r":
            end -= 1
    if end == pos + 1:  # "{" ends its line: pretty-printed, the "}" at the "{"'s indentation
        start = text.rfind("\n", max(0, pos - 256), pos) + 1
        indent = text[start:pos]
        close = -1
        if (start or pos <= 256) and not indent.strip(" \t"):
            close = text.find("\n" + indent + "}", pos)
        end = reach = close + len(indent) + 2 if close >= 0 else len(text)
    if text[end - 1] == "}" and end > pos + 1:
        piece = text[pos:end].encode("utf-8", "surrogatepass")  # orjson refuses a surrogate
        if 0 <= (_shape_python(piece) if _shape_native is None else _shape_native(piece)) < room:
            try:
                return _orjson_loads(piece), end, reach
            except _OrjsonRefused:
                pass
    return (*_DECODER.raw_decode(text, pos), reach)


def _depth() -> int:
    """The interpreter's stack depth here (frames)."""
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


class NotStreamable(Exception):
    """The document is not ``{"log": {"entries": [...]}}`` as ``walk`` reads it."""


def walk(text: str, on_entry: Callable[[object], None]) -> dict:
    """Call ``on_entry`` with each element of ``log.entries`` in order and return the log's
    other members (``entries`` left out); ``NotStreamable`` for any other document (see the
    module docstring).  ``JSONDecodeError``, ``RecursionError`` and ``ValueError`` from the
    decoder pass through: the caller reads the whole document to report them."""
    ws = _WHITESPACE.match
    decode = _DECODER.raw_decode
    found: dict[str, object] = {}

    def members(pos: int, value_at: Callable[[str, int], int]) -> int:
        """An object's members from its ``{`` at ``pos``; ``value_at(key, pos)`` reads each
        value and returns the position after it.  Returns the position after the ``}``."""
        pos = ws(text, pos + 1).end()
        if text.startswith("}", pos):
            return pos + 1
        while True:
            if not text.startswith('"', pos):
                raise NotStreamable
            key, pos = scanstring(text, pos + 1, True)
            pos = ws(text, pos).end()
            if not text.startswith(":", pos):
                raise NotStreamable
            pos = value_at(key, ws(text, pos + 1).end())
            pos = ws(text, pos).end()
            if text.startswith("}", pos):
                return pos + 1
            if not text.startswith(",", pos):
                raise NotStreamable
            pos = ws(text, pos + 1).end()

    def entries(pos: int) -> int:
        pos = ws(text, pos + 1).end()
        if text.startswith("]", pos):
            return pos + 1
        fast = True  # orjson (_decode_entry) while the layout shows each entry's end
        room = sys.getrecursionlimit() - _depth() - _FRAMES_SLACK
        while True:
            if fast:
                entry, pos, reach = _decode_entry(text, pos, room)
                fast = reach <= pos + _SLACK
            else:
                entry, pos = decode(text, pos)
            on_entry(entry)
            del entry  # the callback kept what it needs
            pos = ws(text, pos).end()
            if text.startswith("]", pos):
                return pos + 1
            if not text.startswith(",", pos):
                raise NotStreamable
            pos = ws(text, pos + 1).end()

    seen_log = seen_entries = False

    def log_member(key: str, pos: int) -> int:
        nonlocal seen_entries
        if key in found or key == "entries" and seen_entries:
            raise NotStreamable  # a key given twice: json keeps the last
        if key == "entries":
            if not text.startswith("[", pos):
                raise NotStreamable
            seen_entries = True
            return entries(pos)
        found[key], pos = decode(text, pos)
        return pos

    def top_member(key: str, pos: int) -> int:
        nonlocal seen_log
        if key == "log":
            if seen_log or not text.startswith("{", pos):
                raise NotStreamable
            seen_log = True
            return members(pos, log_member)
        _, pos = decode(text, pos)  # another member: read, not kept
        return pos

    pos = ws(text, 0).end()
    if not text.startswith("{", pos):
        raise NotStreamable
    pos = ws(text, members(pos, top_member)).end()
    if pos != len(text) or not seen_entries:
        raise NotStreamable  # extra data, or no entries list
    return found
