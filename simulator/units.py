"""Parsing of quantities with units, as typed on the command line and in grid files.

``parse_duration("100ms") -> 0.1`` (seconds); ``parse_rate("10mbit") -> 10e6`` (bit/s);
``parse_size("4KiB") -> 4096`` (bytes); ``parse_bandwidth("none") -> None`` (unlimited);
``parse_byte_rate("500kB/s") -> 500e3`` (bytes/s).  Bad values raise ``InputError``.

Plain numbers (``0.1``, ``"0.1"``) are seconds, bit/s and bytes in Python calls.  The
command line (and grid files, which go through the same flags) passes
``require_unit=True``: there ``--rtt 100`` is an error naming the units, not 100 s.
Signs are read, so a caller can say "must be positive" instead of "cannot read".
"""

from __future__ import annotations

import math
import re

from .errors import InputError

__all__ = [
    "parse_number",
    "parse_integer",
    "parse_duration",
    "parse_rate",
    "parse_size",
    "parse_bandwidth",
    "parse_byte_rate",
    "parse_named_durations",
    "UNLIMITED",
]

_NUM = r"\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Zµ/]*)\s*$"

_DURATION = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0}
_RATE = {"": 1.0, "bps": 1.0, "bit": 1.0, "kbit": 1e3, "kbps": 1e3, "mbit": 1e6, "mbps": 1e6, "gbit": 1e9, "gbps": 1e9}
_SIZE = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "kib": 1024,
    "k": 1024,
    "mb": 1000**2,
    "mib": 1024**2,
    "m": 1024**2,
    "gb": 1000**3,
    "gib": 1024**3,
}

# Words for "no limit" in bandwidth and generation-rate flags.
UNLIMITED = ("none", "inf", "unlimited")


def _units(table: dict) -> str:
    return ", ".join(k for k in table if k and k != "µs")


# What a quantity may be, beyond its sign (the callers check that): finite, and within the
# range the models compute in without overflowing or dividing by (nearly) zero: a 5e-324 s
# RTT makes every gain "in RTTs" infinite, 1e309mbit is float infinity.  Zero stays zero.
LIMITS = {"duration": (1e-9, 1e6, "s"), "bit rate": (1.0, 1e15, "bit/s"), "size": (1, 1 << 50, "bytes")}


def _in_range(value: float, text, what: str) -> float:
    low, high, unit = LIMITS[what]
    if not math.isfinite(value):
        raise InputError(f"{text!r} is not a finite {what}")
    if value != 0 and not low <= abs(value) <= high:
        raise InputError(f"{text!r} is outside the {what} range {low:g} to {high:g} {unit} (or 0)")
    return value


def _parse(text: str | float | int, table: dict, what: str, require_unit: bool = False, example: str = "") -> float:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return _in_range(float(text), text, what)
    m = re.match(_NUM, str(text))
    unit = m.group(2) if m else None
    if unit is not None and unit not in table:
        unit = unit.lower()
    if not m or unit not in table:
        raise InputError(f"cannot read {text!r} as a {what} (units: {_units(table)})")
    value = float(m.group(1))
    # Zero is zero in any unit; any other bare number is ambiguous on the command line.
    if require_unit and unit == "" and value != 0:
        raise InputError(f"{text!r} has no unit: give a {what} like {example} (units: {_units(table)})")
    scaled = value * table[unit]
    if value != 0 and scaled == 0:  # 4.9e-324ms underflows to 0: not zero, and below the range
        low, high, base = LIMITS[what]
        raise InputError(f"{text!r} is outside the {what} range {low:g} to {high:g} {base} (or 0)")
    return _in_range(scaled, text, what)


def parse_duration(text: str | float, *, require_unit: bool = False) -> float:
    """Seconds from '100ms', '0.1s', '0.1' (plain numbers are seconds unless ``require_unit``)."""
    return _parse(text, _DURATION, "duration", require_unit, "100ms")


def parse_rate(text: str | float, *, require_unit: bool = False) -> float:
    """Bits per second from '10mbit', '1.6mbps', '1e6' (plain numbers are bit/s unless ``require_unit``)."""
    return _parse(text, _RATE, "bit rate", require_unit, "10mbit")


def parse_size(text: str | int) -> int:
    """Bytes from '4096', '4KiB', '16k' (k = KiB)."""
    return int(_parse(text, _SIZE, "size"))


def parse_bandwidth(text: str | float | None, *, require_unit: bool = False) -> float | None:
    """A bottleneck bandwidth in bit/s, or None (unlimited) for ``none``, ``inf``, ``unlimited``.

    Zero and negative values are errors: unlimited is spelt ``none``, never 0."""
    if text is None or str(text).strip().lower() in UNLIMITED:
        return None
    bps = parse_rate(text, require_unit=require_unit)
    if not bps > 0:
        raise InputError(f"bandwidth must be positive, got {text!r} (none = unlimited)")
    return bps


def parse_byte_rate(text: str | float | None, *, require_unit: bool = False) -> float | None:
    """A rate in bytes/s: ``500kB/s``, ``2MiB/s``, ``4mbit`` (bit/s, /8), a plain number
    (bytes/s, unless ``require_unit``), or None for ``inf`` / ``none`` / ``instant``."""
    if text is None:
        return None
    t = str(text).strip()
    if t.lower() in UNLIMITED + ("instant",):
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    m = re.fullmatch(_NUM, t)
    if m and m.group(2) == "":
        if require_unit and float(m.group(1)) != 0:
            raise InputError(
                f"{text!r} has no unit: give a rate like 500kB/s or 4mbit "
                "(units: B/s, kB/s, KiB/s, MB/s, MiB/s, GB/s, GiB/s, or kbit, mbit, gbit)"
            )
        return _in_range(float(m.group(1)), text, "size")
    try:
        if t.endswith("/s") and t[:-2].strip():
            return float(parse_size(t[:-2]))
        return parse_rate(t) / 8.0
    except InputError:
        raise InputError(f"cannot read {text!r} as a rate (e.g. 500kB/s, 2MiB/s, 4mbit, inf)") from None


# Plain numbers as people type them: ASCII digits.  Python's ``float()`` and ``int()`` also
# take Unicode digits ("٠.٥", "１"; some, not others) and underscores ("1_0"), and ``float()``
# takes "nan" and "inf": a flag or file field spelt so is refused, never read as a number.
_DECIMAL_TEXT = re.compile(r"\s*[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*\Z")
_INTEGER_TEXT = re.compile(r"\s*[-+]?[0-9]{1,30}\s*\Z")


def parse_number(text: str | float | int, what: str = "number") -> float:
    """A plain finite decimal number in ASCII digits (``0.5``, ``1e-3``, ``-2``); an
    ``InputError`` naming ``what`` otherwise (Unicode digits, ``1_0``, ``nan``, ``1e309``)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    elif _DECIMAL_TEXT.match(str(text)):
        value = float(str(text))
    else:
        raise InputError(f"cannot read {text!r} as a {what} (a plain number in ASCII digits, e.g. 0.5)")
    if not math.isfinite(value):
        raise InputError(f"{text!r} is not a finite {what}")
    return value


def parse_integer(text: str | int, what: str = "integer") -> int:
    """An integer in ASCII digits (at most 30 of them); an ``InputError`` naming ``what``
    otherwise (``int()`` alone also takes "١٢" and "1_000")."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if not _INTEGER_TEXT.match(str(text)):
        raise InputError(f"cannot read {text!r} as {what} (an integer in ASCII digits, e.g. 5)")
    return int(str(text))


def parse_named_durations(text: str, what: str, *, require_unit: bool = False) -> tuple[tuple[str, float], ...]:
    """``document=5ms,script=10ms`` -> ``(("document", 0.005), ("script", 0.01))``: a duration,
    zero or positive, per name (``what`` names them in errors, e.g. "parse delay")."""
    out = []
    for item in str(text).split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"{what} must be NAME=DURATION[,NAME=DURATION...], got {item.strip()!r}")
        seconds = parse_duration(value.strip(), require_unit=require_unit)
        if seconds < 0:
            raise InputError(f"{what} of {name.strip()} must be >= 0, got {value.strip()!r}")
        out.append((name.strip(), seconds))
    return tuple(out)
