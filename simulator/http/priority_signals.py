"""What a client says about a response's priority, and what a scheduler offers: RFC 9218's
urgency and incremental flag, RFC 7540's tree placement (``PrioritySignal``), the
``Priority`` field's parser (RFC 9218 section 5) and the ``Scheduler`` interface every
scheduler of ``http.priority`` implements.  Written by hand: the parser reads the two
members RFC 9218 defines and checks the Dictionary's shape (RFC 8941 section 3.2) only as
far as needed to report a malformed field in a trace as bad input.

A scheduler holds the responses that have data ready and, each time the transport may
take more, names the stream whose next chunk goes (``pick``); the writer
(``http.priority_writer``) writes that chunk, about a packet's worth, and tells the
scheduler (``wrote``; a scheduler whose ``charges_bytes`` is false is not told).  A
stream leaves when its last byte is written or its cancel arrives (``remove``);
``update`` changes its signal (a PRIORITY_UPDATE frame, RFC 9218 section 7, or an HTTP/2
PRIORITY frame, RFC 7540 section 6.3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..errors import InputError

__all__ = [
    "PrioritySignal",
    "Scheduler",
    "parse_priority_field",
    "with_urgency",
    "PLACEHOLDER_TREES",
    "DEFAULT_URGENCY",
    "DEFAULT_WEIGHT",
    "ROOT",
    "CHAIN",
]

DEFAULT_URGENCY = 3  # RFC 9218 section 4.1
DEFAULT_WEIGHT = 16  # RFC 7540 section 5.3.5
# RFC 7540 section 5.3.1: the tree's root (stream 0 on HTTP/2), keyed apart from every stream
# id: over QUIC stream 0 is the first request (RFC 9000 section 2.1).
ROOT = -1
CHAIN = "chain"  # parent: Chromium's placement (TreeScheduler._chain_parent)


@dataclass(frozen=True)
class PrioritySignal:
    """What a client says about one response: RFC 9218 urgency and incremental, and the
    RFC 7540 tree placement (``parent``: a stream, ``ROOT``, the name of a placeholder of
    ``tree``'s set, or ``CHAIN``)."""

    urgency: int = DEFAULT_URGENCY
    incremental: bool = False
    parent: object = ROOT
    weight: int = DEFAULT_WEIGHT
    exclusive: bool = False
    tree: str | None = None  # the placeholder set (PLACEHOLDER_TREES) ``parent`` names

    def __post_init__(self) -> None:
        if not (isinstance(self.urgency, int) and 0 <= self.urgency <= 7):
            raise InputError(f"urgency must be 0..7 (RFC 9218 section 4.1), got {self.urgency!r}")
        if not (isinstance(self.weight, int) and 1 <= self.weight <= 256):
            raise InputError(f"weight must be 1..256 (RFC 7540 section 5.3.2), got {self.weight!r}")


# Placeholders a browser opens at the start of an HTTP/2 connection (PRIORITY frames for
# streams never opened) and hangs its requests under: name -> (parent, weight), parents first.
# Firefox (Http2Session: leader 3, other 5, background 7, speculative 9 under 7, follower
# 0xB under 3, urgentStart 0xD); its weight bytes 200/100/0/0/0/240 are weights 201/101/1/1/1/241
# (RFC 7540 section 6.3: the field is the weight minus one).
PLACEHOLDER_TREES: dict[str, tuple[tuple[str, object, int], ...]] = {
    "firefox": (
        ("leader", ROOT, 201),
        ("other", ROOT, 101),
        ("background", ROOT, 1),
        ("speculative", "background", 1),
        ("follower", "leader", 1),
        ("urgent-start", ROOT, 241),
    ),
}

# -- the Priority field (RFC 9218 section 5, a Structured Fields Dictionary, RFC 8941 3.2)
_KEY = re.compile(r"^[a-z*][a-z0-9_\-.*]*$")
_BARE_ITEM = re.compile(
    r'^(?:\?[01]|-?\d{1,15}(?:\.\d{1,3})?|"(?:[^"\\]|\\.)*"'
    r"|[A-Za-z*][A-Za-z0-9:/!#$%&'*+\-.^_`|~]*|:[A-Za-z0-9+/=]*:)$"
)


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside quoted strings and inner lists."""
    parts, depth, quoted, start, i = [], 0, False, 0, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def parse_priority_field(value) -> tuple[int, bool]:
    """(urgency, incremental) of a ``Priority`` field value (RFC 9218 section 5): ``u`` an
    Integer 0-7, ``i`` a Boolean (bare ``i`` is true); other members are ignored (section
    4).  Raises ``ValueError`` naming the fault when the value is not a well-formed
    Dictionary or ``u``/``i`` are of the wrong type or range (a trace that carries one is
    bad input; a live server would ignore the member instead)."""
    text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
    urgency, incremental = DEFAULT_URGENCY, False
    if not text.strip():
        return urgency, incremental
    for member in _split_top(text, ","):
        member = member.strip(" \t")
        item, *params = _split_top(member, ";")
        key, eq, val = item.partition("=")
        key = key.strip()
        if not _KEY.match(key):
            raise ValueError(f"member {member!r} has no valid key")
        val = val.strip() if eq else "?1"
        if not (val.startswith("(") and val.endswith(")")) and not _BARE_ITEM.match(val):
            raise ValueError(f"member {member!r} has a malformed value")
        for p in params:
            if not _KEY.match(p.partition("=")[0].strip()):
                raise ValueError(f"member {member!r} has a malformed parameter")
        if key == "u":
            if not re.fullmatch(r"-?\d+", val) or not 0 <= int(val) <= 7:
                raise ValueError(f"urgency {val!r} is not an integer 0..7")
            urgency = int(val)
        elif key == "i":
            if val not in ("?0", "?1"):
                raise ValueError(f"incremental {val!r} is not a boolean (?0 or ?1)")
            incremental = val == "?1"
    return urgency, incremental


def with_urgency(signal: PrioritySignal, urgency: int, incremental: bool | None = None) -> PrioritySignal:
    """``signal`` with another urgency (and incremental flag): a PRIORITY_UPDATE's content."""
    return replace(signal, urgency=urgency, incremental=signal.incremental if incremental is None else incremental)


class Scheduler:
    """The interface every scheduler offers (``stream_id``: the transport's stream label;
    ``order``: the response's rank in the order responses became ready, 1, 2, ...)."""

    name = ""
    charges_bytes = True  # False: ``wrote`` does nothing (the writer skips it)

    def add(self, stream_id: int, signal: PrioritySignal, order: int) -> None:
        """A response with data ready joins."""
        raise NotImplementedError

    def pick(self) -> int:
        """The stream whose next chunk goes now (only called while some stream waits; the
        writer writes a chunk of it before it asks again)."""
        raise NotImplementedError

    def wrote(self, stream_id: int, nbytes: int) -> None:
        """``nbytes`` of ``stream_id`` were written (its turn is used)."""

    def pick_run(self, chunk_bytes: int) -> tuple[int, int]:
        """``pick`` and how many chunks in a row it would name that stream, each of
        ``chunk_bytes`` told to ``wrote``, if nothing else changed (at least 1).  A writer in C
        writes the run without asking again and then calls ``settle`` (or ends it early, before
        any other call, when the scheduler is changed).  Here: one."""
        return self.pick(), 1

    def settle(self, stream_id: int, chunks: int, chunk_bytes: int, last_bytes: int) -> None:
        """A run of ``pick_run`` was written: ``chunks`` chunks of ``chunk_bytes``, then one of
        ``last_bytes`` unless 0; the scheduler is told what a pick and a ``wrote`` per chunk tell
        it (the run's first pick was ``pick_run``'s)."""
        if not self.charges_bytes:
            return
        for i in range(chunks):
            if i:
                self.pick()
            self.wrote(stream_id, chunk_bytes)
        if last_bytes:
            if chunks:
                self.pick()
            self.wrote(stream_id, last_bytes)

    def remove(self, stream_id: int) -> None:
        """``stream_id`` has nothing more to write (written in full, or stopped)."""
        raise NotImplementedError

    def update(self, stream_id: int, signal: PrioritySignal) -> None:
        """New signals for a waiting stream (RFC 9218 section 7; RFC 7540 section 5.3.3)."""
        raise NotImplementedError
