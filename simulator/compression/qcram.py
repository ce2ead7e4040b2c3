"""QCRAM (draft-krasic-quic-qcram), implemented here by hand: no library implements it.

QCRAM was one of the three 2017 designs for header compression over QUIC (the one
that became QPACK, RFC 9204, after many changes).  This module follows the wire
format of draft-krasic-quic-qcram-03/-04 (January 2018), the last individual drafts,
which moved table inserts onto the control stream; it offers both behaviours the
drafts describe:

* ``qcram`` (non-blocking, the 2017 variant): a request-stream block references a
  dynamic entry only once the transport has acknowledged the control-stream bytes
  carrying its insert (a "commit", draft -00..-04 "How QCRAM minimizes HoL
  blocking", case 1); otherwise it sends a literal and may insert the field for later
  use.  Such blocks never block.  There are no decoder acknowledgements: the encoder
  learns through ``on_encoder_stream_acked`` (transport ack of control-stream bytes)
  and ``on_header_block_acked`` (transport ack of a block's request-stream bytes).
* ``qcram-blocking`` (draft -03/-04 "BLOCKING" flag, ``Depends`` prefix and
  HEADER_ACK): a block may also reference entries the decoder may not have yet
  (including the ones inserted for this very block), at most ``max_blocked`` such
  vulnerable blocks outstanding (the QPACK rule, RFC 9204 2.1.2); the decoder holds
  them until the control stream delivers the entries and acknowledges decoded blocks.

Wire format (what follows the draft and what departs from it):

Control stream (the draft's "Connection Control Stream"): a sequence of HEADERS frames
in the HTTP/QUIC framing of that time (draft-ietf-quic-http-08: Length as a QUIC
varint, Type 0x01, Flags 0x00), each payload being the draft's header block prefix
``Fill (8+) | Evictions (8+)`` (draft 3.2, "Header Block Prefix") followed by
  * Literal Header Field with Incremental Indexing (RFC 7541 6.2.1), the only
    representation the draft allows on the control stream (draft 4.1), and
  * Indexed-Duplicate ``001 | Index (5+)`` (draft 4.4), which re-inserts an entry.
One frame carries all inserts made while encoding one header list.  The decoder
inserts in order and evicts oldest-first when an insert would overflow the table
(RFC 7541 4.4).  The encoder evicts the same way and never evicts an entry a block
still may need (draft 4.3 "Blocked Evictions"), so both tables stay identical; the
frame's Fill and Evictions are checked against the decoder's table, not acted on
(departure: the draft lets any prefix trigger evictions; with the control stream
ordered, acting only there is equivalent and simpler).

Request stream block (what ``EncodedBlock.header_block`` holds): one Flags octet
(0x01 = BLOCKING), then ``Fill (8+) | Evictions (8+)`` and, when BLOCKING,
``Depends (8+)`` (draft 3.2: the largest referenced entry is ``Fill + Evictions -
Depends``, counting entries from 1), then RFC 7541 representations: Indexed (6.1) and
Literal without Indexing (6.2.2, name by index or literal).  Indices above the 61
static entries count back from the prefix's base ``Fill + Evictions`` (62 = the newest
entry inserted before this block was encoded): the draft's "hybrid absolute-relative
indexing" (3.3).  Literal with Incremental Indexing is an error here (draft 4.1).
Departure: the draft carries BLOCKING in the HEADERS frame's Flags; the study frames
blocks itself, so the octet travels at the start of the block (frames of that time
had this octet anyway, so the byte count matches).

Decoder feedback (``qcram-blocking`` only): HEADER_ACK (draft 2.2, type 0x08), sent
when the decoder has decoded a block that references the dynamic table.  Departure:
the draft sends the empty frame on the request stream itself; the sans-I/O shape here
has one decoder-to-encoder stream, so the frame carries the stream id as a varint:
``Length | 0x08 | Flags 0x00 | Stream ID (i)``.

Eviction safety: every block pins the entries it references until the decoder must
have used them: on HEADER_ACK, or on the transport's ack of the whole block
(``on_header_block_acked``) when the block was not vulnerable (such a block is decoded
the moment it arrives).  Without acks nothing is unpinned and the encoder stops
inserting rather than evict a pinned entry (it then sends literals): conservative,
never wrong.

Encoder policy (the draft leaves it to implementations): an insert costs the field's
bytes a second time on the control stream, so by default (``insert_policy="repeat"``)
a field is inserted only when it was already seen among the last ``history`` (512)
fields; ``"always"`` inserts every field that fits, as an HPACK encoder does (on
fb-resp-hq with instant acks: 19.8% vs 38.8% of raw bytes).  A field equal to a live
entry still awaiting its commit is not inserted again.

Not implemented: the draft's de-duplicated table accounting (draft 4.4.1; entries are
charged 32 + name + value as in RFC 7541 4.1 so both ends agree without extra rules),
refreshing draining entries with Indexed-Duplicate (the decoder accepts it, the
encoder never sends it), co-ordinated packetization, re-sending headers of reset
streams, and Dynamic Table Size Update (the table capacity is fixed by settings).

The decoder is in ``qcram_decoder.py``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from hpack.table import HeaderTable

from .base import DecompressionFailed, Encoder
from .wire import (Truncated, WireError, decode_varint, encode_integer,
                   encode_string, encode_varint)

__all__ = ["QcramEncoder", "STATIC_TABLE", "FRAME_HEADERS", "FRAME_HEADER_ACK", "BLOCKING"]

STATIC_TABLE: tuple[tuple[bytes, bytes], ...] = tuple(HeaderTable.STATIC_TABLE)   # RFC 7541 Appendix A
STATIC_COUNT = len(STATIC_TABLE)                                                 # 61
_STATIC_EXACT: dict[tuple[bytes, bytes], int] = {}
_STATIC_NAME: dict[bytes, int] = {}
for _i, (_n, _v) in enumerate(STATIC_TABLE, start=1):
    _STATIC_EXACT.setdefault((_n, _v), _i)
    _STATIC_NAME.setdefault(_n, _i)

FRAME_HEADERS = 0x01          # draft-ietf-quic-http HEADERS
FRAME_HEADER_ACK = 0x08       # draft-krasic-quic-qcram-03 HEADER_ACK
BLOCKING = 0x01               # HEADERS flag (draft-krasic-quic-qcram-03 2.1)
ENTRY_OVERHEAD = 32           # RFC 7541 4.1


def entry_size(name: bytes, value: bytes) -> int:
    """Bytes a field takes in the dynamic table: name + value + 32 (RFC 7541 4.1)."""
    return ENTRY_OVERHEAD + len(name) + len(value)


def _frame(frame_type: int, payload: bytes) -> bytes:
    return encode_varint(len(payload)) + bytes([frame_type, 0]) + payload


def _parse_frames(buf: bytearray) -> tuple[list[tuple[int, int, bytes]], int]:
    """Complete frames at the start of ``buf``: ([(type, flags, payload)], bytes used)."""
    frames = []
    pos = 0
    data = bytes(buf)
    while True:
        try:
            length, p = decode_varint(data, pos)
        except Truncated:
            break
        if p + 2 + length > len(data):
            break
        frames.append((data[p], data[p + 1], data[p + 2:p + 2 + length]))
        pos = p + 2 + length
    return frames, pos


# ----------------------------------------------------------------------------- encoder

@dataclass(slots=True)
class _Entry:
    name: bytes
    value: bytes
    size: int
    pins: int = 0                 # outstanding blocks that reference this entry


@dataclass(slots=True)
class _BlockRecord:
    seq: int
    stream_id: int
    refs: list[int]               # absolute indices referenced (each pinned once)
    required: int                 # inserts needed to decode = largest ref + 1
    vulnerable: bool
    released: bool = False


@dataclass(slots=True)
class _Table:
    """The dynamic table by absolute index (0 = the first entry ever inserted)."""

    capacity: int
    entries: dict[int, _Entry] = field(default_factory=dict)
    oldest: int = 0               # absolute index of the oldest live entry
    inserted: int = 0             # total inserts (the next absolute index)
    size: int = 0

    @property
    def evictions(self) -> int:
        return self.oldest

    @property
    def fill(self) -> int:
        return self.inserted - self.oldest

    def can_insert(self, size: int) -> bool:
        """Whether ``size`` fits after evicting only unpinned oldest entries (draft 4.3)."""
        if size > self.capacity:
            return False
        free = self.capacity - self.size
        index = self.oldest
        while free < size:
            entry = self.entries[index]
            if entry.pins:
                return False
            free += entry.size
            index += 1
        return True

    def insert(self, name: bytes, value: bytes) -> int:
        size = entry_size(name, value)
        if size > self.capacity:
            raise DecompressionFailed(f"entry of {size} bytes does not fit a table of {self.capacity}")
        while self.size + size > self.capacity:   # RFC 7541 4.4, oldest first
            self.size -= self.entries.pop(self.oldest).size
            self.oldest += 1
        index = self.inserted
        self.entries[index] = _Entry(name, value, size)
        self.inserted += 1
        self.size += size
        return index


class QcramEncoder(Encoder):
    """QCRAM encoder; ``blocking`` selects the draft -03 variant with vulnerable references."""

    def __init__(self, *, table_bytes: int = 4096, max_blocked: int = 100, blocking: bool = False,
                 cookie_crumbs: bool = True, huffman: bool = True, insert_policy: str = "repeat",
                 history: int = 512) -> None:
        super().__init__(cookie_crumbs=cookie_crumbs)
        if insert_policy not in ("always", "repeat"):
            raise ValueError("insert_policy must be 'always' or 'repeat'")
        self.insert_policy = insert_policy
        self._history: deque[tuple[bytes, bytes]] = deque(maxlen=history)
        self._history_count: dict[tuple[bytes, bytes], int] = {}
        self.scheme = "qcram-blocking" if blocking else "qcram"
        self.blocking = blocking
        self.max_blocked = max_blocked if blocking else 0
        self.huffman = huffman
        self.table = _Table(table_bytes)
        self.known_received_count = 0            # inserts the decoder surely has
        self.acked_offset = 0                    # contiguous control-stream bytes acked
        self._frames: deque[tuple[int, int]] = deque()   # (frame end offset, inserts after it)
        self._blocks: dict[int, _BlockRecord] = {}       # seq -> outstanding (pinning) blocks
        self._unacked_by_stream: dict[int, deque[int]] = {}  # HEADER_ACK order: stream -> seqs
        self._vulnerable: set[int] = set()       # seqs of outstanding blocks with required > KRC
        self._decoder_buf = bytearray()
        # Newest live entry for each (name, value) and each name: absolute indices.
        self._by_field: dict[tuple[bytes, bytes], list[int]] = {}
        self._by_name: dict[bytes, list[int]] = {}

    # -- lookups

    def _live(self, indices: list[int]) -> list[int]:
        while indices and indices[0] < self.table.oldest:
            indices.pop(0)
        return indices

    def _find(self, index_map: dict, key, allow_vulnerable: bool) -> int | None:
        indices = self._live(index_map.get(key, []))
        for index in reversed(indices):
            if index < self.known_received_count or allow_vulnerable:
                return index
        return None

    def _vulnerable_budget(self) -> bool:
        self._prune_vulnerable()
        return len(self._vulnerable) < self.max_blocked

    # -- encoding

    def _encode(self, seq, stream_id, fields):
        table = self.table
        may_vulnerable = self.blocking and self._vulnerable_budget()
        inserts = bytearray()            # control-stream representations for this block
        frame_base = table.inserted      # base of the control frame (before its inserts)
        frame_prefix = encode_integer(table.fill, 8) + encode_integer(table.evictions, 8)
        reps: list[tuple] = []           # ("static", i) / ("dyn", abs) / ("lit", name_ref, name, value)
        refs: set[int] = set()

        def pin(index: int) -> None:
            if index not in refs:
                refs.add(index)
                table.entries[index].pins += 1

        for name, value in fields:
            static = _STATIC_EXACT.get((name, value))
            if static:
                reps.append(("static", static))
                continue
            index = self._find(self._by_field, (name, value), may_vulnerable)
            if index is not None:
                pin(index)
                reps.append(("dyn", index))
                continue
            name_ref = _STATIC_NAME.get(name)
            name_index = None if name_ref else self._find(self._by_name, name, may_vulnerable)
            if name_index is not None:
                pin(name_index)
            # Insert for later blocks unless an equal entry is already waiting to be committed.
            size = entry_size(name, value)
            if (self._worth_inserting(name, value) and not self._live(self._by_field.get((name, value), []))
                    and table.can_insert(size)):
                inserts += self._insert_instruction(name, value, frame_base)
                new_index = self._insert(name, value)
                if may_vulnerable:           # draft -03: reference it now, block if need be
                    pin(new_index)
                    reps.append(("dyn", new_index))
                    continue
            reps.append(("lit", ("static", name_ref) if name_ref else
                         ("dyn", name_index) if name_index is not None else None, name, value))

        for name, value in fields:
            self._remember(name, value)
        base = table.inserted
        body = bytearray()
        for rep in reps:
            body += self._representation(rep, base)
        required = max(refs) + 1 if refs else 0
        vulnerable = required > self.known_received_count
        flags = BLOCKING if vulnerable else 0
        block = bytearray([flags]) + encode_integer(table.fill, 8) + encode_integer(table.evictions, 8)
        if vulnerable:
            block += encode_integer(base - required, 8)       # Depends
        block += body

        control = _frame(FRAME_HEADERS, frame_prefix + inserts) if inserts else b""
        if control:
            self._frames.append((self.encoder_stream_offset + len(control), table.inserted))
        if refs:
            self._blocks[seq] = _BlockRecord(seq, stream_id, sorted(refs), required, vulnerable)
            self._unacked_by_stream.setdefault(stream_id, deque()).append(seq)
            if vulnerable:
                self._vulnerable.add(seq)
        return bytes(block), control, required, vulnerable

    def _worth_inserting(self, name: bytes, value: bytes) -> bool:
        """Inserting costs the field's bytes a second time (on the control stream), so with
        the ``repeat`` policy only fields already seen among the last ``history`` fields
        are inserted; ``always`` inserts every field, as an HPACK encoder does."""
        return self.insert_policy == "always" or (name, value) in self._history_count

    def _remember(self, name: bytes, value: bytes) -> None:
        if len(self._history) == self._history.maxlen:
            old = self._history[0]
            self._history_count[old] -= 1
            if not self._history_count[old]:
                del self._history_count[old]
        self._history.append((name, value))
        self._history_count[(name, value)] = self._history_count.get((name, value), 0) + 1

    def _insert(self, name: bytes, value: bytes) -> int:
        before = self.table.oldest
        index = self.table.insert(name, value)
        if self.table.oldest != before:
            for key in list(self._by_field):
                self._live(self._by_field[key]) or self._by_field.pop(key)
            for key in list(self._by_name):
                self._live(self._by_name[key]) or self._by_name.pop(key)
        self._by_field.setdefault((name, value), []).append(index)
        self._by_name.setdefault(name, []).append(index)
        return index

    def _insert_instruction(self, name: bytes, value: bytes, frame_base: int) -> bytes:
        """Literal with Incremental Indexing (RFC 7541 6.2.1) for the control frame."""
        static = _STATIC_NAME.get(name)
        if static:
            head = encode_integer(static, 6, 0x40)
        else:
            # A name already in the table *before* this frame can be referenced (relative to the frame base).
            live = [i for i in self._live(self._by_name.get(name, [])) if i < frame_base]
            if live:
                head = encode_integer(STATIC_COUNT + frame_base - live[-1], 6, 0x40)
            else:
                head = bytes([0x40]) + encode_string(name, huffman=self.huffman)
        return head + encode_string(value, huffman=self.huffman)

    def _representation(self, rep: tuple, base: int) -> bytes:
        kind = rep[0]
        if kind == "static":                                   # Indexed (RFC 7541 6.1)
            return encode_integer(rep[1], 7, 0x80)
        if kind == "dyn":
            return encode_integer(STATIC_COUNT + base - rep[1], 7, 0x80)
        _, name_ref, name, value = rep                         # Literal without Indexing (6.2.2)
        if name_ref is None:
            head = bytes([0x00]) + encode_string(name, huffman=self.huffman)
        elif name_ref[0] == "static":
            head = encode_integer(name_ref[1], 4, 0x00)
        else:
            head = encode_integer(STATIC_COUNT + base - name_ref[1], 4, 0x00)
        return head + encode_string(value, huffman=self.huffman)

    # -- feedback

    def _prune_vulnerable(self) -> None:
        for seq in [s for s in self._vulnerable if self._blocks[s].required <= self.known_received_count]:
            self._vulnerable.discard(seq)

    def _release(self, record: _BlockRecord) -> None:
        if not record.released:
            record.released = True
            for index in record.refs:
                entry = self.table.entries.get(index)
                if entry is not None:
                    entry.pins -= 1

    def on_encoder_stream_acked(self, acked_offset: int) -> None:
        """The first ``acked_offset`` control-stream bytes are acknowledged by the transport:
        every insert in a frame ending at or before it is committed."""
        self.acked_offset = max(self.acked_offset, acked_offset)
        while self._frames and self._frames[0][0] <= self.acked_offset:
            _, inserts = self._frames.popleft()
            self.known_received_count = max(self.known_received_count, inserts)
        self._prune_vulnerable()

    def on_header_block_acked(self, seq: int) -> None:
        """The transport acknowledged all of block ``seq``.  A non-vulnerable block is decoded on
        arrival, so its references are released; a vulnerable one waits for HEADER_ACK."""
        record = self._blocks.get(seq)
        if record is None or record.vulnerable:
            return
        self._release(record)
        if not self.blocking:        # no HEADER_ACK will come for it
            self._forget(record)

    def _forget(self, record: _BlockRecord) -> None:
        self._blocks.pop(record.seq, None)
        self._vulnerable.discard(record.seq)
        queue = self._unacked_by_stream.get(record.stream_id)
        if queue is not None:
            try:
                queue.remove(record.seq)
            except ValueError:
                pass
            if not queue:
                del self._unacked_by_stream[record.stream_id]

    def feed_decoder_stream(self, data: bytes) -> None:
        """HEADER_ACK frames: the oldest unacknowledged block of that stream was decoded."""
        self._decoder_buf += data
        frames, used = _parse_frames(self._decoder_buf)
        del self._decoder_buf[:used]
        for frame_type, _, payload in frames:
            if frame_type != FRAME_HEADER_ACK:
                raise DecompressionFailed(f"unexpected frame type {frame_type:#x} on the decoder stream")
            try:
                stream_id, _ = decode_varint(payload, 0)
            except WireError:
                raise DecompressionFailed("truncated HEADER_ACK") from None
            queue = self._unacked_by_stream.get(stream_id)
            if not queue:
                raise DecompressionFailed(f"HEADER_ACK for stream {stream_id} with no block outstanding")
            record = self._blocks[queue[0]]
            self._release(record)
            self.known_received_count = max(self.known_received_count, record.required)
            self._forget(record)
        self._prune_vulnerable()
