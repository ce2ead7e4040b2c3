"""``workbench frames FILE [--h3] [--json]``: list the frames of a captured byte stream.

FILE is one direction of a raw HTTP/2 connection (the client connection preface is
optional) or, with ``--h3``, the bytes of one HTTP/3 stream (for a unidirectional
stream, without its stream-type byte).  One line per frame: offset, type name, flags,
stream id, payload length.  ``--json`` prints one object ``{"frames": [...], "count": N}``.

A malformed or truncated stream prints the frames before the problem, then one error
line naming the byte offset and the RFC error code, and exits with status 2.
"""

from __future__ import annotations

import json
import sys

from .. import argtypes
from ..errors import InputError
from . import (
    IMPLEMENTATION,
    FrameError,
    H3Scanner,
    h2_flag_names,
    h2_type_name,
    h3_type_name,
    parse_h2,
    parse_h3,
    varint_len,
)

__all__ = ["add_commands", "frames_command"]


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None


def _h2_entries(data: bytes, max_frame_size: int):
    res = parse_h2(data, max_frame_size=max_frame_size, preface=None)
    entries = [
        {
            "offset": off - 9,
            "type": h2_type_name(t),
            "type_code": t,
            "flags": h2_flag_names(t, fl),
            "flags_byte": fl,
            "stream_id": sid,
            "length": ln,
        }
        for t, fl, sid, off, ln in res
    ]
    err = res.error
    if err is None and res.pending:
        err = FrameError("h2", 0x1, res.end, f"stream ends inside a frame ({res.pending} bytes of it present)")
    preface = data.startswith(b"PRI * HTTP/2.0")
    return entries, err, {"preface": preface}


def _h3_entries(data: bytes, kind: str | None):
    res = parse_h3(data, kind=kind)
    entries = []
    for t, off, ln in res:
        # Header offsets are reconstructed assuming minimal varint encodings.
        entries.append(
            {"offset": off - varint_len(t) - varint_len(ln), "type": h3_type_name(t), "type_code": t, "length": ln}
        )
    err = res.error
    if err is None and res.pending:
        # RFC 9114 section 7.1: a stream that ends inside a frame is an H3_FRAME_ERROR.
        sc = H3Scanner(kind=kind)
        sc.feed(data)
        try:
            sc.finish()
        except FrameError as exc:
            err = exc
    return entries, err, {}


def frames_command(args) -> int:
    """``workbench frames``: list the frames of a raw HTTP/2 stream or one HTTP/3 stream; InputError at a bad one."""
    if not 0 <= args.max_frame_size <= 0xFFFFFF:
        raise InputError(f"--max-frame-size must be in 0..16777215, not {args.max_frame_size}")
    data = _read(args.file)
    if args.h3:
        entries, err, extra = _h3_entries(data, args.kind)
    else:
        entries, err, extra = _h2_entries(data, args.max_frame_size)
    out = sys.stdout
    if args.json:
        obj = {
            "protocol": "h3" if args.h3 else "h2",
            "frames": entries,
            "count": len(entries),
            "implementation": IMPLEMENTATION,
            **extra,
        }
        if err is not None:
            obj["error"] = {"offset": err.offset, "code": err.code, "code_name": err.code_name, "reason": err.reason}
        out.write(json.dumps(obj) + "\n")
    else:
        lines = []
        for e in entries:
            if args.h3:
                lines.append(f"{e['offset']:>10}  {e['type']:<16} length={e['length']}")
            else:
                flags = "|".join(e["flags"]) or "-"
                lines.append(
                    f"{e['offset']:>10}  {e['type']:<14} flags={flags:<28} "
                    f"stream={e['stream_id']:<10} length={e['length']}"
                )
        if lines:
            out.write("\n".join(lines) + "\n")
    out.flush()
    if err is not None:
        raise InputError(
            f"{err.reason} ({err.code_name}, error code 0x{err.code:x}); {len(entries)} frames before it",
            path=args.file,
            where=f"byte offset {err.offset}",
        )
    return 0


def add_commands(sub) -> None:
    """Register ``workbench frames`` (list the HTTP/2 or HTTP/3 frames of a raw byte stream) on ``sub``."""
    p = sub.add_parser("frames", help="list the HTTP/2 or HTTP/3 frames of a raw byte stream")
    p.add_argument("file", help="raw HTTP/2 connection bytes (client preface optional), or one HTTP/3 stream")
    p.add_argument("--h3", action="store_true", help="the file is one HTTP/3 stream")
    p.add_argument("--json", action="store_true", help="print one JSON object: {frames: [...], count: N}")
    p.add_argument(
        "--max-frame-size",
        type=argtypes.count(0, 0xFFFFFF),
        default=16384,
        metavar="N",
        help="HTTP/2 SETTINGS_MAX_FRAME_SIZE in force (default 16384)",
    )
    p.add_argument(
        "--kind",
        choices=["control", "request", "push"],
        default=None,
        help="HTTP/3 stream kind, to check the frame order rules of RFC 9114",
    )
    p.set_defaults(func=frames_command)
