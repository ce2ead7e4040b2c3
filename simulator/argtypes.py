"""Flag value checks for the command line and for batch grid files.

Each function here is an argparse ``type=``: it checks one value when the arguments are
parsed, before any work starts, and returns the text unchanged (the study's
``params_from_args`` reads it as before), so a bad value stops with argparse's
"argument --rtt: ..." naming the flag.  ``ArgParser`` takes ``-100ms`` as a value (argparse
alone only knows plain negative numbers and would answer "expected one argument"), so
the check can say "must be positive".

The CLI's parser (``simulator.cli``) and the batch grid parser (``simulator.batch.registry``)
both derive from ``ArgParser``: a grid value is checked exactly as the same flag would be.

The network flags (``studies.base.add_network_flags``: ``rtt``, ``bottleneck``,
``loss_model``) are the exception: they read the spelling (units, ``none``, the loss
model) and return the value, and the network's rules (an RTT above 0, ...) are checked
once, by ``net.conditions.check_network``, when the study's parameters are built from it.
"""

from __future__ import annotations

import argparse
import os
import re

from .errors import InputError
from .units import parse_bandwidth, parse_byte_rate, parse_duration, parse_number, parse_rate, parse_size

__all__ = [
    "ArgParser",
    "duration",
    "positive_duration",
    "duration_or",
    "durations",
    "bandwidth",
    "rate",
    "byte_rate",
    "size",
    "positive_size",
    "probability",
    "real",
    "loss",
    "rtt",
    "bottleneck",
    "loss_model",
    "count",
    "seed",
    "checked",
    "names",
    "output_file",
    "output_folder",
    "existing_folder",
]

# A value that starts like a negative quantity: -100ms, -5mbit, -1s, -5kB/s, -0.5.
_NEGATIVE_VALUE = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*[a-zA-Zµ/%]*$")


class ArgParser(argparse.ArgumentParser):
    """argparse with negative quantities taken as values (so their check can name the flag)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_VALUE


def _check(parse, text: str):
    try:
        return parse(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _sign(text: str, value: float, *, zero: bool) -> None:
    if value < 0 or (value == 0 and not zero):
        raise argparse.ArgumentTypeError(f"must be {'zero or ' if zero else ''}positive, got {text!r}")


def duration(text: str) -> str:
    """A duration with its unit (0 needs none), zero or positive."""
    _sign(text, _check(lambda t: parse_duration(t, require_unit=True), text), zero=True)
    return text


def positive_duration(text: str) -> str:
    """A duration with its unit, above zero (an RTT, a timeout)."""
    _sign(text, _check(lambda t: parse_duration(t, require_unit=True), text), zero=False)
    return text


def duration_or(*words: str):
    """A duration (zero or positive), or one of ``words`` (e.g. ``trace``)."""

    def check(text: str) -> str:
        if str(text).strip().lower() in words:
            return text
        return duration(text)

    check.__name__ = "duration"
    return check


def durations(text: str) -> str:
    """Comma-separated durations, each above zero (demux --rtt)."""
    items = [t for t in str(text).split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("give at least one duration, e.g. 10ms")
    for t in items:
        positive_duration(t.strip())
    return text


def bandwidth(text: str) -> str:
    """A bit rate above zero with its unit, or none / inf / unlimited."""
    _check(lambda t: parse_bandwidth(t, require_unit=True), text)
    return text


def rate(text: str) -> str:
    """A bit rate above zero with its unit."""
    _sign(text, _check(lambda t: parse_rate(t, require_unit=True), text), zero=False)
    return text


def byte_rate(text: str) -> str:
    """A rate above zero (500kB/s, 4mbit), or inf / none (no limit)."""
    value = _check(lambda t: parse_byte_rate(t, require_unit=True), text)
    if value is not None:
        _sign(text, value, zero=False)
    return text


def size(text: str) -> str:
    """A size in bytes (4096, 4KiB), zero or positive."""
    _sign(text, _check(parse_size, text), zero=True)
    return text


def table_size(text: str) -> str:
    """A header table capacity in bytes: zero or positive, at most 2^32 - 1 (RFC 9113 section
    6.5.2: SETTINGS_HEADER_TABLE_SIZE is a 32-bit value; HPACK's own decoder refuses a longer
    table size update, RFC 7541 section 6.3)."""
    value = _check(parse_size, text)
    _sign(text, value, zero=True)
    if value > 2**32 - 1:
        raise argparse.ArgumentTypeError(f"must be at most 4294967295 bytes (a 32-bit setting), got {text!r}")
    return text


def positive_size(text: str) -> str:
    """A size in bytes above zero."""
    _sign(text, _check(parse_size, text), zero=False)
    return text


def probability(text: str) -> str:
    """A probability in [0, 1]."""
    try:
        p = parse_number(text, "probability")  # ASCII digits: float() also takes "٠.٥"
    except InputError:
        p = float("nan")
    if not 0.0 <= p <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a probability in [0, 1], got {text!r}")
    return text


def real(minimum: float, maximum: float):
    """A plain decimal number in [``minimum``, ``maximum``] (returned as a float, as
    ``type=float`` did, which also took ``nan``, ``inf`` and Unicode digits)."""

    def check(text: str) -> float:
        value = _check(parse_number, text)
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be in [{minimum:g}, {maximum:g}], got {text!r}")
        return value

    check.__name__ = "number"
    return check


def loss(text: str) -> str:
    """A loss model: a probability (0.01, 1%) or Gilbert-Elliott ``ge:P,R[,h,k]`` (the text)."""
    from .net.link import LossSpec

    _check(LossSpec.parse, text)
    return text


# ---------------------------------------------------------------------------------------
# The network flags: read into values here, checked once by ``net.conditions.check_network``.


def rtt(text: str) -> float:
    """A round-trip time with its unit, in seconds (its rule: ``check_network``)."""
    return _check(lambda t: parse_duration(t, require_unit=True), text)


def bottleneck(text: str) -> float | None:
    """A bit rate with its unit in bit/s, or None for none / inf / unlimited (its rule:
    ``check_network``; 0 is not unlimited)."""
    from .units import UNLIMITED

    if str(text).strip().lower() in UNLIMITED:
        return None
    return _check(lambda t: parse_rate(t, require_unit=True), text)


def loss_model(text: str):
    """A loss model read once into a ``net.link.LossSpec``: a probability (0.01, 1%) or
    Gilbert-Elliott ``ge:P,R[,h,k]``."""
    from .net.link import LossSpec

    return _check(LossSpec.parse, text)


_ASCII_INTEGER = re.compile(r"\s*[-+]?[0-9]+\s*\Z")  # not int()'s Unicode digits or 1_000


def count(minimum: int = 0, maximum: int | None = None):
    """An integer at least ``minimum`` (returned as an int, as ``type=int`` did) and, when
    given, at most ``maximum``: a count that sizes work or memory up front (seeds, responses,
    releases) has its documented limit checked here, before anything is allocated."""

    def check(text: str) -> int:
        if not _ASCII_INTEGER.match(str(text)) or len(str(text).strip()) > 30:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}")
        value = int(text)
        if value < minimum:
            what = {0: "zero or positive", 1: "positive"}.get(minimum, f"at least {minimum}")
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {text!r}")
        return value

    check.__name__ = "integer"
    return check


_seed = count(-(2**63), 2**63 - 1)


def seed(text: str) -> int:
    """A random seed: an ASCII integer (``int()`` alone also takes ``"١"`` and ``"1_0"``)."""
    return _seed(text)


def checked(parse, name: str = "value"):
    """Any study's own check: ``parse(text)`` raising ``InputError`` for a bad value."""

    def check(text: str) -> str:
        _check(parse, text)
        return text

    check.__name__ = name
    return check


def names(choices, what: str, *, empty: bool = False):
    """Comma-separated names, each one of ``choices`` (``--scheme hpack,qpack``); ``what``
    names one in the message ("unknown scheme 'gzip'")."""
    choices = tuple(choices)

    def check(text: str) -> str:
        items = [t.strip() for t in str(text).split(",") if t.strip()]
        bad = [t for t in items if t not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {what} {bad[0]!r} (choose from {', '.join(choices)})")
        if not items and not empty:
            raise argparse.ArgumentTypeError(f"give at least one {what} ({', '.join(choices)})")
        return text

    check.__name__ = "names"
    return check


# ---------------------------------------------------------------------------------------
# Paths written by a command: checked before any work, so a typo in a folder name costs
# nothing and leaves nothing half-written (``simulator.outfiles``: a device, a FIFO or a
# symlink is written through, never replaced; a block device or socket refused; the
# receiving folder probed with a temporary file, which also holds for root and /proc).
# Folders are created one level deep only.


def output_file(text: str) -> str:
    """A file to write: a regular file or new name in a folder that takes new files, a
    character device or FIFO (written through), or a symlink to one of those."""
    from .outfiles import check_output_file

    _check(check_output_file, text)
    return text


def output_folder(text: str) -> str:
    """A folder to write into: an existing one, or a new one in a folder that exists."""
    from .outfiles import check_output_folder

    _check(check_output_folder, text)
    return text


def existing_folder(text: str) -> str:
    """A folder that must exist already and be writable (e.g. ``--qlog DIR``)."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    return output_folder(text)
