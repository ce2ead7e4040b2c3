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
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring
from typing import Callable

__all__ = ["walk", "NotStreamable"]

_WHITESPACE = re.compile(r"[ \t\n\r]*")  # RFC 8259 section 2: ws
_DECODER = json.JSONDecoder()


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
        while True:
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
