"""Pure-Python twin of the C extension ``_scanner``: the same API, results and errors.

Used when the extension is not built or when ``WORKBENCH_PURE_PYTHON=1``; the tests run
every check against both and compare them.  See ``_scanner.c`` for the design: the
scanners are streaming state machines that keep at most a partial frame header (or one
partial varint) between calls and report frames as offsets into the stream.
"""

from __future__ import annotations

from ._errors import FrameError, HuffmanError, IntegerError

IMPLEMENTATION = "python"

__all__ = [
    "H2Scanner",
    "H3Scanner",
    "VarintDecoder",
    "scan_h2",
    "scan_h3",
    "decode_varint",
    "encode_varint",
    "decode_int",
    "encode_int",
    "huffman_decode",
    "huffman_encode",
    "huffman_encoded_length",
    "IMPLEMENTATION",
    "register_h2_frame_classes",
    "h2_data_frame_repr",
]

VARINT_MAX = (1 << 62) - 1

# ---------------------------------------------------------------------------------
# HTTP/2

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_HEADERS, PADDED, PRIORITY_FLAG, ACK = 0x4, 0x8, 0x20, 0x1
PROTOCOL_ERROR, FRAME_SIZE_ERROR = 0x1, 0x6
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


class _Fail(Exception):
    pass


def _check_mfs(value: int) -> int:
    value = int(value)
    if not 0 <= value <= 0xFFFFFF:
        raise ValueError("max_frame_size must be in 0..16777215")
    return value


class _H2State:
    __slots__ = (
        "pos",
        "fstart",
        "frames",
        "max_frame_size",
        "flen",
        "remaining",
        "fsid",
        "cont_sid",
        "ftype",
        "fflags",
        "validate",
        "preface_mode",
        "preface_have",
        "in_payload",
        "hdr",
        "pad_check",
        "failed",
        "err",
    )

    def __init__(self, max_frame_size: int, preface, validate: bool) -> None:
        self.pos = self.fstart = self.frames = 0
        self.max_frame_size = _check_mfs(max_frame_size)
        self.flen = self.remaining = self.fsid = self.cont_sid = 0
        self.ftype = self.fflags = 0
        self.validate = bool(validate)
        self.preface_mode = 2 if preface is None else (1 if preface else 0)
        self.preface_have = 0
        self.in_payload = False
        self.hdr = b""
        self.pad_check = False
        self.failed = False
        self.err = None  # (code, offset, reason)

    def fail(self, code: int, off: int, reason: str):
        self.failed = True
        self.err = (code, off, reason)
        raise _Fail

    def pending(self) -> int:
        if self.preface_mode == 1 and self.preface_have:
            return self.preface_have
        if self.in_payload:
            return 9 + self.flen - self.remaining
        return len(self.hdr)

    def check_header(self) -> None:
        ln, sid, t, fl, at = self.flen, self.fsid, self.ftype, self.fflags, self.fstart
        fail = self.fail
        if ln > self.max_frame_size:
            fail(FRAME_SIZE_ERROR, at, "frame length exceeds SETTINGS_MAX_FRAME_SIZE")
        if self.cont_sid and (t != CONTINUATION or sid != self.cont_sid):
            fail(PROTOCOL_ERROR, at, "header block interrupted: CONTINUATION on the same stream expected")
        if t == DATA:
            if sid == 0:
                fail(PROTOCOL_ERROR, at, "DATA frame on stream 0")
            if fl & PADDED and ln < 1:
                fail(FRAME_SIZE_ERROR, at, "padded frame too short for its Pad Length")
        elif t == HEADERS:
            if sid == 0:
                fail(PROTOCOL_ERROR, at, "HEADERS frame on stream 0")
            if ln < (1 if fl & PADDED else 0) + (5 if fl & PRIORITY_FLAG else 0):
                fail(FRAME_SIZE_ERROR, at, "HEADERS frame too short for its Pad Length and priority fields")
        elif t == PRIORITY:
            if sid == 0:
                fail(PROTOCOL_ERROR, at, "PRIORITY frame on stream 0")
            if ln != 5:
                fail(FRAME_SIZE_ERROR, at, "PRIORITY frame length is not 5")
        elif t == RST_STREAM:
            if sid == 0:
                fail(PROTOCOL_ERROR, at, "RST_STREAM frame on stream 0")
            if ln != 4:
                fail(FRAME_SIZE_ERROR, at, "RST_STREAM frame length is not 4")
        elif t == SETTINGS:
            if sid != 0:
                fail(PROTOCOL_ERROR, at, "SETTINGS frame not on stream 0")
            if fl & ACK and ln != 0:
                fail(FRAME_SIZE_ERROR, at, "SETTINGS ACK frame with a payload")
            if ln % 6:
                fail(FRAME_SIZE_ERROR, at, "SETTINGS frame length is not a multiple of 6")
        elif t == PUSH_PROMISE:
            if sid == 0:
                fail(PROTOCOL_ERROR, at, "PUSH_PROMISE frame on stream 0")
            if ln < (1 if fl & PADDED else 0) + 4:
                fail(FRAME_SIZE_ERROR, at, "PUSH_PROMISE frame too short for its Promised Stream ID")
        elif t == PING:
            if sid != 0:
                fail(PROTOCOL_ERROR, at, "PING frame not on stream 0")
            if ln != 8:
                fail(FRAME_SIZE_ERROR, at, "PING frame length is not 8")
        elif t == GOAWAY:
            if sid != 0:
                fail(PROTOCOL_ERROR, at, "GOAWAY frame not on stream 0")
            if ln < 8:
                fail(FRAME_SIZE_ERROR, at, "GOAWAY frame shorter than 8")
        elif t == WINDOW_UPDATE:
            if ln != 4:
                fail(FRAME_SIZE_ERROR, at, "WINDOW_UPDATE frame length is not 4")
        elif t == CONTINUATION:
            if sid == 0:
                fail(PROTOCOL_ERROR, at, "CONTINUATION frame on stream 0")
            if not self.cont_sid:
                fail(PROTOCOL_ERROR, at, "CONTINUATION frame without an open header block")
        if t == HEADERS or t == PUSH_PROMISE or t == CONTINUATION:
            self.cont_sid = 0 if fl & END_HEADERS else sid
        self.pad_check = bool(fl & PADDED) and t in (DATA, HEADERS, PUSH_PROMISE)

    def check_padding(self, pad: int) -> None:
        need = 1 + pad
        if self.ftype == HEADERS and self.fflags & PRIORITY_FLAG:
            need += 5
        if self.ftype == PUSH_PROMISE:
            need += 4
        if need > self.flen:
            self.fail(PROTOCOL_ERROR, self.fstart, "padding exceeds the frame payload")

    def run(self, data, out: list | None) -> int:
        """Scan ``data``; append records to ``out`` (or only count).  Raises _Fail."""
        if self.failed:
            raise _Fail
        mv = memoryview(data).cast("B")
        n = len(mv)
        base = self.pos
        i = 0
        count = 0
        try:
            while self.preface_mode and i < n:
                b = mv[i]
                if self.preface_mode == 2:
                    if b != PREFACE[0]:
                        self.preface_mode = 0
                        break
                    self.preface_mode = 1
                if b != PREFACE[self.preface_have]:
                    self.pos = base + i
                    self.fail(PROTOCOL_ERROR, base + i, "invalid client connection preface")
                i += 1
                self.preface_have += 1
                if self.preface_have == 24:
                    self.preface_mode = 0
            while i < n:
                if not self.in_payload:
                    if not self.hdr and n - i >= 9:
                        h = mv[i : i + 9]
                        self.fstart = base + i
                        i += 9
                    else:
                        if not self.hdr:
                            self.fstart = base + i
                        take = min(9 - len(self.hdr), n - i)
                        self.hdr += bytes(mv[i : i + take])
                        i += take
                        if len(self.hdr) < 9:
                            break
                        h = self.hdr
                    self.hdr = b""
                    self.flen = (h[0] << 16) | (h[1] << 8) | h[2]
                    self.ftype = h[3]
                    self.fflags = h[4]
                    self.fsid = ((h[5] & 0x7F) << 24) | (h[6] << 16) | (h[7] << 8) | h[8]
                    if self.validate:
                        try:
                            self.check_header()
                        except _Fail:
                            self.pos = self.fstart
                            raise
                    if self.flen == 0:
                        if out is not None:
                            out.append((self.ftype, self.fflags, self.fsid, self.fstart + 9, 0))
                        count += 1
                        self.frames += 1
                        continue
                    self.remaining = self.flen
                    self.in_payload = True
                if i >= n:
                    break
                if self.pad_check:
                    self.pad_check = False
                    try:
                        self.check_padding(mv[i])
                    except _Fail:
                        self.pos = self.fstart
                        raise
                if n - i < self.remaining:
                    self.remaining -= n - i
                    i = n
                    break
                i += self.remaining
                self.remaining = 0
                self.in_payload = False
                if out is not None:
                    out.append((self.ftype, self.fflags, self.fsid, self.fstart + 9, self.flen))
                count += 1
                self.frames += 1
        except _Fail:
            raise _Fail(count)
        self.pos = base + n
        return count


def _results_into(records: list, out, start: int, nbuf: int) -> int:
    if not isinstance(out, tuple) or len(out) != nbuf:
        raise TypeError(f"out must be a tuple of {nbuf} buffers")
    cap = min(len(a) for a in out)
    if start < 0 or start > cap or cap - start < len(records):
        raise ValueError("output arrays are too small")
    for k, rec in enumerate(records, start):
        for arr, v in zip(out, rec):
            arr[k] = v
    return len(records)


class _Results:
    """The last ``feed``'s frames, shared by both scanners: a list, copied out on request."""

    _results: list
    _carry: bytes = b""  # feed_frames: the incomplete frame's bytes fed so far
    RECORD_FIELDS = 5

    def results(self) -> list:
        return list(self._results)

    def feed_frames(self, data) -> list:
        """``feed(data)``, then the frames it completed with their payloads as bytes: H2
        ``(type, flags, stream_id, payload)``, H3 ``(type, payload)``.  The scanner keeps
        the bytes of its incomplete frame for the next call, so it must be fed only so."""
        carry = self._carry
        if not self._st.failed and self.pending != len(carry):
            raise ValueError("feed_frames needs every byte of the incomplete frame: this scanner was fed by feed()")
        start = self.offset - len(carry)  # the absolute offset of carry[0]
        with memoryview(data) as whole, whole.cast("B") as mv:
            self.feed(mv)
            fed = carry + mv if carry else bytes(mv)
        frames = []
        for record in self._results:
            at, length = record[-2] - start, record[-1]
            frames.append((*record[:-2], fed[at : at + length]))
        keep = self.pending
        self._carry = fed[len(fed) - keep :] if keep else b""
        return frames

    def results_into(self, out, start: int = 0) -> int:
        """Copy the last feed's records into caller-owned arrays at index ``start``."""
        return _results_into(self._results, out, start, self.RECORD_FIELDS)

    def __len__(self) -> int:
        return len(self._results)

    def __getitem__(self, k: int):
        if not isinstance(k, int):
            raise TypeError("frame index must be an integer")
        if k < 0:
            k += len(self._results)
        if not 0 <= k < len(self._results):
            raise IndexError("frame index out of range")
        return self._results[k]


class H2Scanner(_Results):
    """H2Scanner(max_frame_size=16384, *, preface=False, validate=True): incremental HTTP/2 frame scanner.

    ``feed(data)`` returns how many frames the chunk completed; ``results()`` (or
    indexing) gives them as ``(type, flags, stream_id, payload_offset, payload_length)``
    with absolute stream offsets.  ``preface``: True expects the client connection
    preface, None detects it (first byte ``P``), False none.  A malformed stream raises
    ``FrameError`` (RFC 9113 error code, offset of the offending frame); the frames the
    failing chunk completed before it stay in ``results()``.
    """

    def __init__(self, max_frame_size: int = 16384, *, preface=False, validate: bool = True) -> None:
        self._st = _H2State(max_frame_size, preface, validate)
        self._results: list = []
        self.allocations = 0  # the pure-Python twin does not count its list growth
        self._cursor = 0  # next_frame: index of the next record of the last feed to hand out
        self._consumed = 0  # next_frame: absolute offset after the last frame handed out

    def next_frame(self, data, base: int, max_frame_size: int, slice_bytes: int):
        """The next frame of a receive buffer, for ``h2buffer.ScannerFrameBuffer``.

        ``data`` holds the stream's bytes from absolute offset ``base`` on.  When no
        frame of the last feed is left, the not yet scanned bytes are fed
        ``slice_bytes`` at a time until one completes a frame.  Returns None (no
        complete frame), a hyperframe-compatible frame object built here (a DATA
        frame hyperframe would accept: see ``register_h2_frame_classes``; it counts as
        consumed), or the record tuple, which stays next until ``consume()``.
        """
        if slice_bytes < 1:
            raise ValueError("slice_bytes must be positive")
        if base < 0:
            raise ValueError("base must not be negative")
        with memoryview(data) as whole, whole.cast("B") as mv:
            n = len(mv)
            results = self._results
            if self._cursor >= len(results):
                st = self._st
                if base > st.pos:
                    raise ValueError("base is beyond the scanned offset")
                while True:
                    if st.pos >= base + n:
                        return None
                    start = st.pos - base
                    stop = min(start + slice_bytes, n)
                    self._cursor = 0
                    if self.feed(mv[start:stop]):
                        results = self._results
                        break
            record = results[self._cursor]
            ftype, flags, sid, off, length = record
            if off < base or off + length > base + n:
                raise ValueError("data does not hold the frame")
            if (
                ftype == HEADERS
                and _H2_HEADERS is not None
                and sid
                and length <= max_frame_size
                and flags & END_HEADERS
            ):
                # One that ends its header block and that hyperframe accepts (RFC 9113
                # section 6.2): Pad Length and priority fields fit, padding shorter than the rest.
                at = off - base
                padded = 1 if flags & PADDED else 0
                if (
                    length >= padded
                    and length - padded >= (5 if flags & PRIORITY_FLAG else 0)
                    and not (padded and mv[at] and mv[at] >= length - padded)
                ):
                    frame = _build_headers_frame(mv, at, length, flags, sid)
                    self._cursor += 1
                    self._consumed = off + length
                    return frame
            if ftype == DATA and _H2_DATA is not None and sid and length <= max_frame_size:
                at = off - base
                if not flags & PADDED or (length and mv[at] < length):
                    frame = _build_data_frame(mv, at, length, flags, sid)
                    self._cursor += 1
                    self._consumed = off + length
                    return frame
            return record

    def consume(self) -> None:
        """Count the record ``next_frame`` returned as handed out."""
        if self._cursor >= len(self._results):
            raise ValueError("no frame to consume")
        _, _, _, off, length = self._results[self._cursor]
        self._cursor += 1
        self._consumed = off + length

    consumed = property(lambda self: self._consumed, doc="absolute offset after the last frame next_frame handed out")

    def feed(self, data) -> int:
        """Scan a chunk; how many frames it completed (see ``results()``); FrameError on an RFC 9113 violation."""
        self._results = out = []
        try:
            return self._st.run(data, out)
        except _Fail as exc:
            count = exc.args[0] if exc.args else 0
            code, off, reason = self._st.err
            raise FrameError("h2", code, off, reason, count) from None

    def finish(self) -> None:
        """Raise the FrameError the stream failed with, or PROTOCOL_ERROR if it ends inside a frame or the preface."""
        st = self._st
        if st.failed:
            raise FrameError("h2", *st.err, 0)
        if st.pending():
            if st.preface_mode == 1:
                raise FrameError("h2", PROTOCOL_ERROR, 0, "stream ends inside the client connection preface", 0)
            raise FrameError("h2", PROTOCOL_ERROR, st.fstart, "stream ends inside a frame", 0)

    offset = property(lambda self: self._st.pos, doc="bytes consumed so far (absolute stream offset)")
    frames = property(lambda self: self._st.frames, doc="frames completed so far")
    pending = property(lambda self: self._st.pending(), doc="bytes of an incomplete frame (or preface) held")
    validate = property(lambda self: self._st.validate)
    open_header_block = property(lambda self: self._st.cont_sid)

    @property
    def max_frame_size(self) -> int:
        """SETTINGS_MAX_FRAME_SIZE in force, in bytes (RFC 9113 6.5.2)."""
        return self._st.max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        """Set SETTINGS_MAX_FRAME_SIZE for the frames still to come (0..2**24-1)."""
        self._st.max_frame_size = _check_mfs(value)

    @property
    def error(self):
        """The FrameError the stream failed with, or None."""
        st = self._st
        return FrameError("h2", *st.err, 0) if st.failed else None

    @property
    def current(self):
        """The incomplete frame whose header is known: (type, flags, stream_id, payload_offset, length), or None."""
        st = self._st
        if not st.in_payload:
            return None
        return (st.ftype, st.fflags, st.fsid, st.fstart + 9, st.flen)


# ---------------------------------------------------------------------------------
# hyperframe-compatible DATA frames (see h2frames.py, which registers the classes)

_H2_DATA = None  # (frame class, Flags class, flag names in hyperframe's order, fallback repr)
_H2_HEADERS = None  # (frame class, Flags class, flag names in hyperframe's order, fallback repr)
_HEADERS_FLAG_NAMES = ("END_STREAM", "END_HEADERS", "PADDED", "PRIORITY")


def register_h2_frame_classes(
    data_frame, flags, flag_names, fallback_repr, headers_frame=None, headers_flag_names=None
) -> None:
    """Register the DATA frame class ``next_frame`` builds (a subclass of hyperframe's
    ``DataFrame``), hyperframe's ``Flags``, DATA's flag names in hyperframe's order
    (END_STREAM 0x1, PADDED 0x8) and hyperframe's ``Frame.__repr__`` (used for any
    object the fast repr does not cover); gives the class its ``__repr__``.  Likewise,
    when given, the HEADERS frame class (a subclass of hyperframe's ``HeadersFrame``)
    with HEADERS' flag names (END_STREAM 0x1, END_HEADERS 0x4, PADDED 0x8, PRIORITY 0x20)."""
    global _H2_DATA, _H2_HEADERS
    if tuple(flag_names) != ("END_STREAM", "PADDED"):
        raise ValueError("flag_names must be ('END_STREAM', 'PADDED')")
    if headers_frame is not None:
        if not isinstance(headers_frame, type):
            raise TypeError("headers_frame must be a class")
        if tuple(headers_flag_names) != _HEADERS_FLAG_NAMES:
            raise ValueError("headers_flag_names must be ('END_STREAM', 'END_HEADERS', 'PADDED', 'PRIORITY')")
        headers_frame.__repr__ = h2_headers_frame_repr
        _H2_HEADERS = (headers_frame, flags, _HEADERS_FLAG_NAMES, fallback_repr)
    _H2_DATA = (data_frame, flags, tuple(flag_names), fallback_repr)
    data_frame.__repr__ = h2_data_frame_repr


def _build_data_frame(mv, at: int, length: int, flags: int, sid: int):
    """hyperframe's ``DataFrame`` after ``parse_frame_header`` + ``parse_body`` of a
    valid frame (RFC 9113 section 6.1): same attributes, set in the same order."""
    cls, flags_cls, names, _ = _H2_DATA
    if flags & PADDED:
        pad = mv[at]
        data = bytes(mv[at + 1 : at + length - pad])
    else:
        pad = 0
        data = bytes(mv[at : at + length])
    fl = flags_cls.__new__(flags_cls)
    fl._valid_flags = set(names)
    present = set()
    if flags & 0x1:
        present.add(names[0])
    if flags & PADDED:
        present.add(names[1])
    fl._flags = present
    frame = cls.__new__(cls)
    frame.stream_id = sid
    frame.flags = fl
    frame.body_len = length
    frame.pad_length = pad
    frame.data = data
    return frame


def _build_headers_frame(mv, at: int, length: int, flags: int, sid: int):
    """hyperframe's ``HeadersFrame`` after ``parse_frame_header`` + ``parse_body`` of a
    valid frame that ends its header block (RFC 9113 section 6.2): same attributes, set
    in ``HeadersFrame.__init__``'s order; ``body_len`` is the payload less the Pad Length
    byte, as hyperframe sets it."""
    cls, flags_cls, names, _ = _H2_HEADERS
    padded = 1 if flags & PADDED else 0
    pad = mv[at] if padded else 0
    body_len = length - padded
    start = at + padded
    if flags & PRIORITY_FLAG:
        dep = int.from_bytes(mv[start : start + 4], "big")
        exclusive, depends_on, weight = bool(dep >> 31), dep & 0x7FFFFFFF, mv[start + 4]
        prio = 5
    else:
        exclusive, depends_on, weight, prio = False, 0, 0, 0
    data = bytes(mv[start + prio : start + max(prio, body_len - pad)])
    fl = flags_cls.__new__(flags_cls)
    fl._valid_flags = set(names)
    present = set()
    for name, bit in zip(names, (0x1, END_HEADERS, PADDED, PRIORITY_FLAG)):
        if flags & bit:
            present.add(name)
    fl._flags = present
    frame = cls.__new__(cls)
    frame.stream_id = sid
    frame.flags = fl
    frame.body_len = body_len
    frame.depends_on = depends_on
    frame.stream_weight = weight
    frame.exclusive = exclusive
    frame.pad_length = pad
    frame.data = data
    return frame


_MISSING = object()


def h2_headers_frame_repr(self) -> str:
    """hyperframe's ``repr`` of a HEADERS frame (``Frame.__repr__`` with
    ``HeadersFrame._body_repr``) from the first 10 bytes of the header block instead of
    all of it hex-encoded.  Anything unusual goes to hyperframe's own ``__repr__``."""
    cls, flags_cls, names, fallback = _H2_HEADERS
    sid = getattr(self, "stream_id", _MISSING)
    flags = getattr(self, "flags", _MISSING)
    present = getattr(flags, "_flags", _MISSING) if type(flags) is flags_cls else _MISSING
    exclusive = getattr(self, "exclusive", _MISSING)
    depends_on = getattr(self, "depends_on", _MISSING)
    weight = getattr(self, "stream_weight", _MISSING)
    data = getattr(self, "data", _MISSING)
    if (
        type(self) is not cls
        or type(sid) is not int
        or type(present) is not set
        or type(exclusive) is not bool
        or type(depends_on) is not int
        or type(weight) is not int
        or type(data) is not bytes
    ):
        return fallback(self)
    flags_repr = repr(sorted(present))
    body = "<hex:" + data[:10].hex() + ("..." if len(data) > 10 else "") + ">" if data else "None"
    return (
        f"{type(self).__name__}(stream_id={sid}, flags={flags_repr}): exclusive={exclusive}, "
        f"depends_on={depends_on}, stream_weight={weight}, data={body}"
    )


def h2_data_frame_repr(self) -> str:
    """hyperframe's ``repr`` of a DATA frame, without serializing and hex-encoding the
    whole payload to keep 20 hex digits of it: ``Frame.__repr__`` ->
    ``_raw_data_repr(serialize_body())``, i.e. the first 10 bytes of Pad Length +
    data + padding.  Anything unusual goes to hyperframe's own ``__repr__``."""
    cls, flags_cls, names, fallback = _H2_DATA
    sid = getattr(self, "stream_id", _MISSING)
    flags = getattr(self, "flags", _MISSING)
    data = getattr(self, "data", _MISSING)
    pad = getattr(self, "pad_length", _MISSING)
    present = getattr(flags, "_flags", _MISSING) if type(flags) is flags_cls else _MISSING
    if (
        type(self) is not cls
        or type(sid) is not int
        or type(present) is not set
        or type(data) is not bytes
        or type(pad) is not int
        or not 0 <= pad <= 255
    ):
        return fallback(self)
    flags_repr = repr(sorted(present))
    padded = names[1] in present
    total = padded + len(data) + pad
    if not total:
        body = "None"
    else:
        head = ((bytes((pad,)) if padded else b"") + data[:10] + bytes(min(pad, 10)))[:10]
        body = "<hex:" + head.hex() + ("..." if total > 10 else "") + ">"
    return f"{type(self).__name__}(stream_id={sid}, flags={flags_repr}): {body}"


def scan_h2(data, out, max_frame_size: int, preface, validate: bool):
    """Bulk scan: ``(count, end, error, pending)``; fills ``out`` (5 arrays) unless None."""
    return _scan("h2", _H2State(max_frame_size, preface, validate), data, out)


def _scan(protocol: str, st, data, out):
    """Run scanner state ``st`` over ``data``: ``(count, end, error, pending)``, records into ``out``."""
    records: list | None = None if out is None else []
    err = None
    try:
        count = st.run(data, records)
    except _Fail as exc:
        count = exc.args[0] if exc.args else 0
        err = FrameError(protocol, *st.err, count)
    if records is not None:
        cap = min(len(a) for a in out)
        if len(records) > cap:
            raise ValueError("output arrays are too small")
        for k, rec in enumerate(records):
            for arr, v in zip(out, rec):
                arr[k] = v
    if err is not None:
        return count, err.offset, err, 0
    return count, st.pos - st.pending(), None, st.pending()


# ---------------------------------------------------------------------------------
# QUIC varints


def decode_varint(data, pos: int = 0):
    """Decode the QUIC variable-length integer at ``pos`` (RFC 9000 16): (value, next_pos), or None if cut short."""
    mv = memoryview(data).cast("B")
    if pos < 0 or pos > len(mv):
        raise ValueError("pos out of range")
    if pos >= len(mv):
        return None
    n = 1 << (mv[pos] >> 6)
    if len(mv) - pos < n:
        return None
    x = mv[pos] & 0x3F
    for k in range(1, n):
        x = (x << 8) | mv[pos + k]
    return x, pos + n


def encode_varint(value: int) -> bytes:
    """The shortest QUIC variable-length encoding of ``value`` (RFC 9000 16); IntegerError above 2**62-1."""
    value = int(value)
    if not 0 <= value <= VARINT_MAX:
        raise IntegerError("varint out of range 0..2**62-1")
    if value < 0x40:
        return bytes([value])
    if value < 0x4000:
        return (value | 0x4000).to_bytes(2, "big")
    if value < 0x40000000:
        return (value | 0x80000000).to_bytes(4, "big")
    return (value | 0xC000000000000000).to_bytes(8, "big")


class VarintDecoder:
    """VarintDecoder(): incremental decoder of a sequence of QUIC varints."""

    def __init__(self) -> None:
        self._val = 0
        self._have = 0
        self._need = 0

    def feed(self, data) -> list[int]:
        """The QUIC varints that ``data`` completes; a partial one is kept for the next call."""
        out = []
        for b in memoryview(data).cast("B"):
            if self._have == 0:
                self._need = 1 << (b >> 6)
                self._val = b & 0x3F
            else:
                self._val = (self._val << 8) | b
            self._have += 1
            if self._have == self._need:
                out.append(self._val)
                self._have = 0
        return out

    @property
    def pending(self) -> int:
        """Bytes of a partial varint held."""
        return self._have


# ---------------------------------------------------------------------------------
# HTTP/3

H3_DATA, H3_HEADERS, H3_CANCEL_PUSH, H3_SETTINGS, H3_PUSH_PROMISE, H3_GOAWAY, H3_MAX_PUSH_ID = 0, 1, 3, 4, 5, 7, 0xD
H3_FRAME_UNEXPECTED, H3_FRAME_ERROR, H3_EXCESSIVE_LOAD, H3_SETTINGS_ERROR, H3_MISSING_SETTINGS = (
    0x105,
    0x106,
    0x107,
    0x109,
    0x10A,
)
_KINDS = {None: 0, "control": 1, "request": 2, "push": 3}
PV_NONE, PV_ONE, PV_SETTINGS, PV_PUSH_ID = 0, 1, 2, 3
MSG_INIT, MSG_HEADERS, MSG_DATA, MSG_TRAILERS = 0, 1, 2, 3


def _parse_kind(kind) -> int:
    try:
        return _KINDS[kind]
    except (KeyError, TypeError):
        raise ValueError("kind must be None, 'control', 'request' or 'push'") from None


def _parse_h3_max(value) -> int:
    if value is None:
        return 0
    value = int(value)
    if value < 0 or value >= 1 << 64:
        raise OverflowError("max_frame_size out of range")
    if value == 0:
        raise ValueError("max_frame_size must be positive or None")
    return value


class _H3State:
    __slots__ = (
        "pos",
        "fstart",
        "pstart",
        "frames",
        "max_frame_size",
        "ftype",
        "flen",
        "remaining",
        "v_val",
        "v_have",
        "v_need",
        "pv_val",
        "pv_count",
        "pv_mode",
        "pv_have",
        "pv_need",
        "validate",
        "kind",
        "phase",
        "seen_frame",
        "msg_state",
        "failed",
        "err",
    )

    def __init__(self, max_frame_size, kind, validate) -> None:
        self.max_frame_size = _parse_h3_max(max_frame_size)
        self.kind = _parse_kind(kind)
        self.validate = bool(validate)
        self.pos = self.fstart = self.pstart = self.frames = 0
        self.ftype = self.flen = self.remaining = 0
        self.v_val = self.v_have = self.v_need = 0
        self.pv_val = self.pv_count = self.pv_mode = self.pv_have = self.pv_need = 0
        self.phase = 0
        self.seen_frame = False
        self.msg_state = MSG_INIT
        self.failed = False
        self.err = None

    def fail(self, code: int, reason: str):
        self.failed = True
        self.err = (code, self.fstart, reason)
        raise _Fail

    def pending(self) -> int:
        if self.phase == 0 and self.v_have == 0:
            return 0
        return self.pos - self.fstart

    def check_header(self) -> None:
        t, fail, kind = self.ftype, self.fail, self.kind
        if t in (0x2, 0x6, 0x8, 0x9):
            fail(H3_FRAME_UNEXPECTED, "reserved HTTP/2 frame type")
        if self.max_frame_size and self.flen > self.max_frame_size:
            fail(H3_EXCESSIVE_LOAD, "frame length exceeds the configured limit")
        if kind == 1:
            if not self.seen_frame and t != H3_SETTINGS:
                fail(H3_MISSING_SETTINGS, "control stream does not start with SETTINGS")
            if self.seen_frame and t == H3_SETTINGS:
                fail(H3_FRAME_UNEXPECTED, "second SETTINGS frame on the control stream")
            if t in (H3_DATA, H3_HEADERS, H3_PUSH_PROMISE):
                fail(H3_FRAME_UNEXPECTED, "frame not allowed on the control stream")
        elif kind in (2, 3):
            if t in (H3_SETTINGS, H3_CANCEL_PUSH, H3_GOAWAY, H3_MAX_PUSH_ID):
                fail(H3_FRAME_UNEXPECTED, "control frame on a request or push stream")
            if kind == 3 and t == H3_PUSH_PROMISE:
                fail(H3_FRAME_UNEXPECTED, "PUSH_PROMISE on a push stream")
            if t == H3_DATA:
                if self.msg_state in (MSG_INIT, MSG_TRAILERS):
                    fail(H3_FRAME_UNEXPECTED, "DATA frame outside a message body")
                self.msg_state = MSG_DATA
            elif t == H3_HEADERS:
                if self.msg_state == MSG_TRAILERS:
                    fail(H3_FRAME_UNEXPECTED, "HEADERS frame after trailers")
                self.msg_state = MSG_TRAILERS if self.msg_state == MSG_DATA else MSG_HEADERS
        if t in (H3_CANCEL_PUSH, H3_GOAWAY, H3_MAX_PUSH_ID):
            self.pv_mode = PV_ONE
        elif t == H3_SETTINGS:
            self.pv_mode = PV_SETTINGS
        elif t == H3_PUSH_PROMISE:
            self.pv_mode = PV_PUSH_ID
        else:
            self.pv_mode = PV_NONE
        self.pv_have = 0
        self.pv_count = 0

    def walk(self, mv) -> None:
        for b in mv:
            if self.pv_mode == PV_PUSH_ID and self.pv_count >= 1:
                return
            if self.pv_mode == PV_ONE and self.pv_count >= 1:
                self.fail(H3_FRAME_ERROR, "extra bytes after the frame's fields")
            if self.pv_have == 0:
                self.pv_need = 1 << (b >> 6)
                self.pv_val = b & 0x3F
            else:
                self.pv_val = (self.pv_val << 8) | b
            self.pv_have += 1
            if self.pv_have == self.pv_need:
                self.pv_have = 0
                self.pv_count += 1
                if self.pv_mode == PV_SETTINGS and self.pv_count & 1 and 0x2 <= self.pv_val <= 0x5:
                    self.fail(H3_SETTINGS_ERROR, "reserved HTTP/2 setting identifier in SETTINGS")

    def check_end(self) -> None:
        if self.pv_mode == PV_ONE:
            if self.pv_count != 1 or self.pv_have:
                self.fail(H3_FRAME_ERROR, "frame payload does not hold exactly one varint")
        elif self.pv_mode == PV_SETTINGS:
            if self.pv_have or self.pv_count & 1:
                self.fail(H3_FRAME_ERROR, "SETTINGS payload ends inside a setting")
        elif self.pv_mode == PV_PUSH_ID:
            if self.pv_count < 1:
                self.fail(H3_FRAME_ERROR, "PUSH_PROMISE payload ends inside the push ID")

    def run(self, data, out: list | None) -> int:
        if self.failed:
            raise _Fail(0)
        mv = memoryview(data).cast("B")
        n = len(mv)
        base = self.pos
        i = 0
        count = 0
        try:
            while i < n:
                if self.phase < 2:
                    if self.v_have == 0:
                        if self.phase == 0:
                            self.fstart = base + i
                        b = mv[i]
                        self.v_need = 1 << (b >> 6)
                        self.v_val = b & 0x3F
                        self.v_have = 1
                        i += 1
                    while self.v_have < self.v_need and i < n:
                        self.v_val = (self.v_val << 8) | mv[i]
                        i += 1
                        self.v_have += 1
                    if self.v_have < self.v_need:
                        break
                    self.v_have = 0
                    if self.phase == 0:
                        self.ftype = self.v_val
                        self.phase = 1
                        continue
                    self.flen = self.v_val
                    self.pstart = base + i
                    if self.validate:
                        self.check_header()
                    self.remaining = self.flen
                    self.phase = 2
                take = min(n - i, self.remaining)
                if self.validate and self.pv_mode != PV_NONE:
                    self.walk(mv[i : i + take])
                i += take
                self.remaining -= take
                if self.remaining:
                    break
                if self.validate:
                    self.check_end()
                self.phase = 0
                if out is not None:
                    out.append((self.ftype, self.pstart, self.flen))
                count += 1
                self.frames += 1
                self.seen_frame = True
        except _Fail:
            self.pos = self.fstart
            raise _Fail(count) from None
        self.pos = base + n
        return count


class H3Scanner(_Results):
    """H3Scanner(max_frame_size=None, *, kind=None, validate=True): incremental HTTP/3 frame scanner.

    One instance per stream.  Records are ``(type, payload_offset, payload_length)``.
    ``kind`` ('control', 'request', 'push' or None) enables the per-stream frame-order
    rules of RFC 9114; the frame-level rules (reserved HTTP/2 types, exact payload
    layout of CANCEL_PUSH/SETTINGS/GOAWAY/MAX_PUSH_ID/PUSH_PROMISE) always apply
    when ``validate``.
    """

    RECORD_FIELDS = 3

    def __init__(self, max_frame_size=None, *, kind=None, validate: bool = True) -> None:
        self._st = _H3State(max_frame_size, kind, validate)
        self._results: list = []
        self.allocations = 0

    def feed(self, data) -> int:
        """Scan a chunk; how many frames it completed (see ``results()``); FrameError on an RFC 9114 violation."""
        self._results = out = []
        try:
            return self._st.run(data, out)
        except _Fail as exc:
            count = exc.args[0] if exc.args else 0
            raise FrameError("h3", *self._st.err, count) from None

    def finish(self) -> None:
        """Raise the FrameError the stream failed with, or H3_FRAME_ERROR when it ends inside a frame."""
        st = self._st
        if st.failed:
            raise FrameError("h3", *st.err, 0)
        if st.pending():
            raise FrameError("h3", H3_FRAME_ERROR, st.fstart, "stream ends inside a frame", 0)

    offset = property(lambda self: self._st.pos)
    frames = property(lambda self: self._st.frames)
    pending = property(lambda self: self._st.pending())

    @property
    def error(self):
        """The FrameError the stream failed with, or None."""
        st = self._st
        return FrameError("h3", *st.err, 0) if st.failed else None

    @property
    def current(self):
        """The incomplete frame whose header is known: (type, payload_offset, length), or None."""
        st = self._st
        return (st.ftype, st.pstart, st.flen) if st.phase == 2 else None


def scan_h3(data, out, max_frame_size, kind, validate: bool):
    """Scan a whole HTTP/3 stream into the arrays ``out`` (or only count, when None): (count, end, error, pending)."""
    return _scan("h3", _H3State(max_frame_size, kind, validate), data, out)


# ---------------------------------------------------------------------------------
# HPACK/QPACK prefixed integers (RFC 7541 section 5.1)


def decode_int(data, pos: int, prefix_bits: int):
    """Decode the HPACK/QPACK prefixed integer at ``pos`` (RFC 7541 5.1): (value, next_pos), or None if cut short."""
    mv = memoryview(data).cast("B")
    if not 1 <= prefix_bits <= 8:
        raise ValueError("prefix_bits must be in 1..8")
    if pos < 0 or pos > len(mv):
        raise ValueError("pos out of range")
    if pos >= len(mv):
        return None
    mask = (1 << prefix_bits) - 1
    x = mv[pos] & mask
    pos += 1
    if x == mask:
        k = 0
        while True:
            if pos >= len(mv):
                return None
            b = mv[pos]
            pos += 1
            x += (b & 0x7F) << (7 * k)
            if not b & 0x80:
                break
            if k == 8:
                raise IntegerError("prefixed integer longer than 9 continuation bytes")
            k += 1
        if x > VARINT_MAX:
            raise IntegerError("prefixed integer exceeds 2**62-1")
    return x, pos


def encode_int(value: int, prefix_bits: int, first_byte: int = 0) -> bytes:
    """Encode ``value`` as an RFC 7541 5.1 prefixed integer with ``prefix_bits``, high bits from ``first_byte``."""
    value = int(value)
    if not 0 <= value <= VARINT_MAX:
        raise IntegerError("prefixed integer out of range 0..2**62-1")
    if not 1 <= prefix_bits <= 8:
        raise ValueError("prefix_bits must be in 1..8")
    mask = (1 << prefix_bits) - 1
    if not 0 <= first_byte <= 255 or first_byte & mask:
        raise ValueError("first byte bits overlap the prefix")
    if value < mask:
        return bytes([first_byte | value])
    out = bytearray([first_byte | mask])
    value -= mask
    while value >= 128:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


# ---------------------------------------------------------------------------------
# Huffman (RFC 7541 section 5.2 and Appendix B)

_FSM = None


def _fsm():
    global _FSM
    if _FSM is None:
        from ._gen_huffman import EMIT, FAIL, build_fsm, code_table

        table, accept = build_fsm()
        codes, lengths = code_table()
        # (next_state << 4, emit_symbol_or_-1, fail) per entry, for a short inner loop.
        flat = [(nxt << 4, sym if flags & EMIT else -1, bool(flags & FAIL)) for nxt, flags, sym in table]
        _FSM = (flat, accept, codes, lengths)
    return _FSM


def huffman_decode(data) -> bytes:
    """Decode an HPACK Huffman string (RFC 7541 5.2); HuffmanError on an invalid code or bad padding."""
    flat, accept, _, _ = _fsm()
    out = bytearray()
    state = 0
    for b in memoryview(data).cast("B"):
        nxt, sym, fail = flat[state | (b >> 4)]
        if fail:
            raise HuffmanError("invalid")
        if sym >= 0:
            out.append(sym)
        nxt, sym, fail = flat[nxt | (b & 0x0F)]
        if fail:
            raise HuffmanError("invalid")
        if sym >= 0:
            out.append(sym)
        state = nxt
    if not accept[state >> 4]:
        raise HuffmanError("incomplete")
    return bytes(out)


def huffman_encoded_length(data) -> int:
    """Bytes of the HPACK Huffman encoding of ``data`` (RFC 7541 5.2), padding included."""
    lengths = _fsm()[3]
    return (sum(lengths[b] for b in memoryview(data).cast("B")) + 7) // 8


def huffman_encode(data) -> bytes:
    """The HPACK Huffman encoding of ``data``, padded with the EOS prefix of 1 bits (RFC 7541 5.2)."""
    _, _, codes, lengths = _fsm()
    out = bytearray()
    acc = 0
    nbits = 0
    for b in memoryview(data).cast("B"):
        # Whole bytes leave the accumulator as they fill (as the C twin does): it stays
        # under 38 bits, so the encoding is linear in the string, not quadratic.
        acc = (acc << lengths[b]) | codes[b]
        nbits += lengths[b]
        while nbits >= 8:
            nbits -= 8
            out.append((acc >> nbits) & 0xFF)
        acc &= (1 << nbits) - 1
    if nbits:
        out.append(((acc << (8 - nbits)) | (0xFF >> nbits)) & 0xFF)
    return bytes(out)
