"""``workbench interop decode|encode``: the QPACK offline-interop files.

The file layout (records of u64 stream id, u32 length, bytes; stream 0 = encoder
stream) and the ``<name>.out.<table>.<blocked>.<ack>`` naming are described in
``simulator.traces.interop``, whose record reader and writer are used here.

``decode ENCODED --qif REFERENCE`` decodes every field section with this package's
QPACK decoder (``QpackDecoder``: ls-qpack plus the RFC 9204 blocked-streams check)
and compares each decoded list with the reference list of the same position,
ignoring field order within a list (encoders may reorder).  Exit 0 when all match,
1 on a mismatch, 2 on malformed input (one line naming the record and byte offset).

``encode QIF -o OUT --table N --blocked N --ack 0|1`` writes the same format: for the
i-th header list, the encoder-stream bytes it produced (stream 0, when any) and then
its field section on stream i (1, 2, ...), as the published files do.  With ``--ack
1`` each section is decoded at once and the decoder's acknowledgements are fed back
to the encoder (the files' "immediate ack" mode); with ``--ack 0`` the encoder hears
nothing.  Written atomically.
"""

from __future__ import annotations

import argparse

from .. import argtypes
from ..errors import InputError
from .base import DecompressionFailed, describe_mismatch, join_cookie_crumbs, same_headers

__all__ = ["add_commands", "decode_interop", "encode_interop"]

_RECORD_HEADER = 12  # u64 stream id + u32 length


def _reference_lists(path: str) -> list[tuple]:
    from ..traces import load

    trace = load(path, format="qif")
    return [h for _, _, h in trace.header_lists("both")]


def decode_interop(path: str, table: int | None = None, blocked: int | None = None) -> list[tuple[int, tuple]]:
    """Decode an interop file: ``[(stream_id, headers)]`` in the order the sections appear."""
    from ..traces.interop import read_records, resolve_settings
    from ..traces.limits import check_field_section
    from .qpack_codec import QpackDecoder

    table, blocked = resolve_settings(path, table, blocked, flags="give --table and --blocked")
    records = read_records(path)
    decoder = QpackDecoder(table_bytes=table, max_blocked=blocked, insert_count_increments=False)
    sections: list[list] = []  # [stream_id, headers or None]
    pending: set[int] = set()  # streams whose section waits on the encoder stream
    offset = 0
    for index, (stream_id, payload) in enumerate(records):
        where = f"record {index} (stream {stream_id}, byte offset {offset})"
        offset += _RECORD_HEADER + len(payload)
        try:
            if stream_id == 0:
                done = decoder.feed_encoder_stream(payload)
            else:
                if stream_id in pending:
                    raise InputError(
                        f"a second field section for stream {stream_id} while its first is blocked.",
                        path=path,
                        where=where,
                    )
                sections.append([stream_id, None])
                pending.add(stream_id)
                one = decoder.feed_header_block(stream_id, payload, len(sections) - 1)
                done = [one] if one is not None else []
        except DecompressionFailed as exc:
            raise InputError(f"cannot decode: {exc}.", path=path, where=where) from None
        for block in done:
            sections[block.seq][1] = block.headers
            pending.discard(sections[block.seq][0])
            check_field_section(block.headers, path=path, where=where, what="decoded header")
    stuck = [s for s, h in sections if h is None]
    if stuck:
        raise InputError(
            f"stream(s) {', '.join(map(str, stuck[:5]))} still blocked at end of file: the encoder "
            "stream never delivered the entries they reference.",
            path=path,
        )
    return [(s, h) for s, h in sections]


def encode_interop(lists, table: int, blocked: int, ack: int) -> list[tuple[int, bytes]]:
    """Encode header lists to interop records (stream i+1 for list i, encoder stream 0 first)."""
    from .qpack_codec import QpackDecoder, QpackEncoder

    encoder = QpackEncoder(table_bytes=table, max_blocked=blocked, cookie_crumbs=False)
    decoder = QpackDecoder(table_bytes=table, max_blocked=blocked)
    records = []
    for i, headers in enumerate(lists):
        unit = encoder.encode(i + 1, headers)
        if unit.encoder_stream:
            records.append((0, unit.encoder_stream))
        records.append((unit.stream_id, unit.header_block))
        if ack:
            decoder.feed_encoder_stream(unit.encoder_stream)
            decoder.feed_header_block(unit.stream_id, unit.header_block, unit.seq)
            encoder.feed_decoder_stream(decoder.take_decoder_stream())
    return records


def _cmd_decode(args: argparse.Namespace) -> int:
    decoded = decode_interop(args.encoded, args.table, args.blocked)
    reference = _reference_lists(args.qif)

    matched = 0
    first = None
    for i, ref in enumerate(reference):
        if i >= len(decoded):
            first = first or f"list {i}: missing (the file has only {len(decoded)} field sections)"
            continue
        stream_id, got = decoded[i]
        if same_headers(ref, got, ordered=False):
            matched += 1
        elif first is None:
            a, b = join_cookie_crumbs(tuple(ref)), join_cookie_crumbs(tuple(got))
            first = f"list {i} (stream {stream_id}): {describe_mismatch(a, b)}"
    if len(decoded) > len(reference) and first is None:
        first = f"the file has {len(decoded)} field sections, the reference {len(reference)} lists"
    total = max(len(reference), len(decoded))
    print(f"{args.encoded}: {matched}/{total} header lists match {args.qif}")
    if first is not None:
        print(f"first mismatch: {first}")
        return 1
    return 0


def _cmd_encode(args: argparse.Namespace) -> int:
    from ..traces.interop import write_records

    if args.table < 0 or args.blocked < 0:
        raise InputError("--table and --blocked must not be negative.")
    lists = _reference_lists(args.qif)
    records = encode_interop(lists, args.table, args.blocked, args.ack)
    write_records(args.output, records)
    size = sum(_RECORD_HEADER + len(p) for _, p in records)
    print(f"{args.output}: {len(lists)} header lists, {len(records)} records, {size} bytes")
    return 0


def add_commands(subparsers) -> None:
    """Register ``workbench interop`` (decode and check, or encode, QPACK offline-interop files) on ``subparsers``."""
    p = subparsers.add_parser("interop", help="QPACK offline-interop files: decode and check, or encode")
    sub = p.add_subparsers(dest="interop_command", metavar="ACTION", parser_class=type(p))
    d = sub.add_parser("decode", help="decode an interop file and compare it with its QIF")
    d.add_argument("encoded", help="interop file <name>.out.<table>.<blocked>.<ack>")
    d.add_argument("--qif", required=True, help="the reference QIF file")
    d.add_argument(
        "--table",
        type=argtypes.count(0, 1 << 30),
        default=None,
        help="dynamic table capacity (default: from the file name)",
    )
    d.add_argument(
        "--blocked",
        type=argtypes.count(0, 65_535),
        default=None,
        help="blocked-streams limit (default: from the file name)",
    )
    d.set_defaults(func=_cmd_decode)
    e = sub.add_parser("encode", help="encode a QIF file to the interop format")
    e.add_argument("qif", help="the QIF file to encode")
    e.add_argument("-o", "--output", required=True, type=argtypes.output_file, help="output interop file")
    e.add_argument("--table", type=argtypes.count(0, 1 << 30), required=True, help="dynamic table capacity in bytes")
    e.add_argument("--blocked", type=argtypes.count(0, 65_535), required=True, help="blocked-streams limit")
    e.add_argument("--ack", type=argtypes.count(0, 1), required=True, help="1 = acknowledge each section at once")
    e.set_defaults(func=_cmd_encode)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
