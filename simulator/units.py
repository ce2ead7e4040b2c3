"""Parsing of quantities with units, as typed on the command line and in grid files.

``parse_duration("100ms") -> 0.1`` (seconds); ``parse_rate("10mbit") -> 10e6`` (bit/s);
``parse_size("4KiB") -> 4096`` (bytes).  Bad values raise ``InputError``.
"""

from __future__ import annotations

import re

from .errors import InputError

__all__ = ["parse_duration", "parse_rate", "parse_size"]

_NUM = r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z/]*)\s*$"

_DURATION = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0}
_RATE = {"": 1.0, "bps": 1.0, "bit": 1.0, "kbit": 1e3, "kbps": 1e3, "mbit": 1e6, "mbps": 1e6,
         "gbit": 1e9, "gbps": 1e9}
_SIZE = {"": 1, "b": 1, "kb": 1000, "kib": 1024, "k": 1024, "mb": 1000**2, "mib": 1024**2,
         "m": 1024**2, "gb": 1000**3, "gib": 1024**3}


def _parse(text: str | float | int, table: dict, what: str) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    m = re.match(_NUM, str(text))
    unit = m.group(2).lower() if m else None
    if not m or unit not in table:
        raise InputError(f"cannot read {text!r} as a {what} (units: {', '.join(k for k in table if k)})")
    return float(m.group(1)) * table[unit]


def parse_duration(text: str | float) -> float:
    """Seconds from '100ms', '0.1s', '0.1' (plain numbers are seconds)."""
    return _parse(text, _DURATION, "duration")


def parse_rate(text: str | float) -> float:
    """Bits per second from '10mbit', '1.6mbps', '1e6' (plain numbers are bit/s)."""
    return _parse(text, _RATE, "bit rate")


def parse_size(text: str | int) -> int:
    """Bytes from '4096', '4KiB', '16k' (k = KiB)."""
    return int(_parse(text, _SIZE, "size"))
