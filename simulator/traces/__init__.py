"""Trace loaders: HAR, QIF and QPACK offline-interop files, plus synthetic traces.

``load(path, **options)`` (or ``load(name, data=BYTES)``) detects the format from the content, not the file name:

* JSON whose top level has ``"log"`` -> HAR (``har.load_har``);
* binary records in the interop layout (u64 stream id, u32 length, bytes) ->
  QPACK offline interop (``interop.load_interop``; options ``max_table_capacity``,
  ``blocked_streams``); other binary data is not a trace (an error says so);
* text with ``name<TAB>value`` lines -> QIF (``qif.load_qif``).

``load_many(paths)`` loads several files, skipping (and reporting) the bad ones.
Bad input raises ``InputError`` (alias ``TraceError``) naming the file and the place.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ..errors import InputError
from ._io import read_input
from .model import Exchange, HeaderList, Page, Trace, header_value, raw_size

__all__ = [
    "load",
    "load_many",
    "detect_format",
    "TraceError",
    "InputError",
    "Trace",
    "Exchange",
    "Page",
    "HeaderList",
    "raw_size",
    "header_value",
]

TraceError = InputError


def detect_format(data: bytes, path: str | None = None) -> str:
    """``"har"``, ``"qpack-interop"`` or ``"qif"`` from a file's bytes."""
    from .interop import interop_settings, looks_like_records

    if not data or data.isspace():  # not data.strip(), without copying the file
        raise InputError("the file is empty.", path=path)
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    binary = _binary(data[:4096])
    if head.startswith((b"{", b"[")) and not binary:
        return "har"
    if looks_like_records(data) or (binary and path is not None and interop_settings(path) is not None):
        return "qpack-interop"  # by its bytes, or by its name (<qif>.out.T.B.A): the reader names the offset
    if binary:
        raise InputError(
            "not a trace the workbench can read: binary data that is not QPACK offline-interop "
            "records (u64 stream id, u32 length, bytes); traces are HAR (JSON), QIF (text) or "
            "QPACK offline-interop records.",
            path=path,
        )
    lines = data.split(b"\n")
    lineno, first = next(
        ((i, line) for i, line in enumerate(lines, 1) if line.strip() and not line.startswith(b"#")), (1, b"")
    )
    if b"\t" in first or str(path or "").lower().endswith(".qif"):
        return "qif"
    raise InputError(
        'unrecognised trace format: not HAR (JSON with "log"), not QPACK interop records, '
        "and not QIF (the line has no name<TAB>value).",
        path=path,
        where=f"line {lineno}",
    )


def _binary(head: bytes) -> bool:
    """NUL bytes, or not UTF-8 text: no HAR or QIF looks like this."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3  # not just a character cut at the end of the sample
    return False


def load(path, *, data: bytes | None = None, format: str | None = None, **options) -> Trace:
    """Load a trace file; the format comes from the content unless ``format`` is given.

    ``data``: the file's bytes, already read (the file is then not opened: ``path`` only
    names the trace, e.g. on a Dask worker that cannot see the client's files); the
    trace is the same as one loaded from ``path`` itself.
    Options: ``max_table_capacity`` and ``blocked_streams`` for interop files.
    """
    from .har import load_har
    from .interop import load_interop
    from .qif import load_qif

    path = str(path)
    if data is None:
        data = read_input(path)
    else:
        data = bytes(data)
    fmt = format or detect_format(data, path)
    if fmt == "har":
        trace = load_har(path, data=data)
    elif fmt == "qif":
        trace = load_qif(path, data=data)
    elif fmt == "qpack-interop":
        trace = load_interop(
            path,
            data=data,
            max_table_capacity=options.get("max_table_capacity"),
            blocked_streams=options.get("blocked_streams"),
        )
    else:
        raise InputError(f"unknown trace format {fmt!r} (har, qif or qpack-interop).", path=path)
    return trace


def load_many(
    paths: Iterable, on_error: str | Callable = "skip", **options
) -> tuple[list[Trace], list[tuple[str, InputError]]]:
    """Load each path; a bad file is skipped and reported, and loading goes on.

    Returns ``(traces, errors)`` with ``errors`` a list of ``(path, InputError)``.
    ``on_error``: ``"skip"`` (default), ``"raise"`` (stop at the first bad file), or a
    callable ``f(path, error)`` called for each bad file (e.g. to print a warning).
    """
    traces, errors = [], []
    for path in paths:
        try:
            traces.append(load(path, **options))
        except InputError as exc:
            if on_error == "raise":
                raise
            if callable(on_error):
                on_error(str(path), exc)
            errors.append((str(path), exc))
    return traces, errors
