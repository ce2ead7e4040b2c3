"""Differential fuzzing of the C scanner against its pure-Python twin.

Inputs: a deterministic corpus (valid HTTP/2 and HTTP/3 streams built from a seed, their
mutations: bit flips, byte overwrites, insertions, deletions, truncations, splices,
rewritten length/type/flag/stream fields; plus random bytes), then fresh random inputs
until the time budget runs out.  Every input goes through every entry point of both
implementations (bulk and incremental with random split points, with every preface
mode, with and without validation, several SETTINGS_MAX_FRAME_SIZE values, every HTTP/3
stream kind, varints, prefixed integers, Huffman) and the results must be identical:
same frames, same error (code, offset, reason), same pending bytes.  A crash, a hang
or an out-of-bounds read (under ``make asan``) fails the run.

    python -m simulator.frames.fuzz --seconds 20 [--seed N]
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import time

from . import FrameError, HuffmanError, IntegerError, PREFACE, implementations

__all__ = ["run", "valid_h2_stream", "valid_h3_stream", "mutate"]


def _h2_frame(t: int, flags: int, sid: int, payload: bytes) -> bytes:
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, t, flags, sid) + payload


def valid_h2_stream(
    rnd: random.Random, nframes: int = 20, *, preface: bool | None = None, max_payload: int = 2000
) -> bytes:
    """A stream that passes every check of the scanner (default max frame size)."""
    if preface is None:
        preface = rnd.random() < 0.5
    out = [PREFACE] if preface else []
    for _ in range(nframes):
        kind = rnd.choice("DHSWPRGUCX")
        sid = rnd.randrange(1, 1 << 31)
        if kind == "D":
            body = rnd.randbytes(rnd.randrange(0, max_payload))
            flags = rnd.choice([0, 1])
            if rnd.random() < 0.3:
                pad = rnd.randrange(0, 256)
                body = bytes([pad]) + body + bytes(pad)
                flags |= 0x8
            out.append(_h2_frame(0, flags, sid, body[:16384] if not flags & 0x8 else body))
        elif kind in "HC":
            # A header block: HEADERS (maybe PUSH_PROMISE) then CONTINUATIONs, the last with END_HEADERS.
            nparts = rnd.randrange(1, 4)
            for k in range(nparts):
                last = k == nparts - 1
                frag = rnd.randbytes(rnd.randrange(0, 300))
                if k == 0 and kind == "C":
                    frame = _h2_frame(5, 0x4 if last else 0, sid, rnd.randbytes(4) + frag)
                elif k == 0:
                    flags = (0x4 if last else 0) | rnd.choice([0, 1])
                    prio = b""
                    if rnd.random() < 0.3:
                        flags |= 0x20
                        prio = rnd.randbytes(5)
                    frame = _h2_frame(1, flags, sid, prio + frag)
                else:
                    frame = _h2_frame(9, 0x4 if last else 0, sid, frag)
                out.append(frame)
        elif kind == "S":
            if rnd.random() < 0.3:
                out.append(_h2_frame(4, 1, 0, b""))
            else:
                out.append(_h2_frame(4, 0, 0, rnd.randbytes(6 * rnd.randrange(0, 6))))
        elif kind == "W":
            out.append(_h2_frame(8, 0, rnd.choice([0, sid]), struct.pack(">I", rnd.randrange(1, 1 << 31))))
        elif kind == "P":
            out.append(_h2_frame(6, rnd.choice([0, 1]), 0, rnd.randbytes(8)))
        elif kind == "R":
            out.append(_h2_frame(3, 0, sid, rnd.randbytes(4)))
        elif kind == "G":
            out.append(_h2_frame(7, 0, 0, rnd.randbytes(8 + rnd.randrange(0, 20))))
        elif kind == "U":
            out.append(_h2_frame(2, 0, sid, rnd.randbytes(5)))
        else:
            out.append(
                _h2_frame(
                    rnd.randrange(0xA, 256),
                    rnd.randrange(256),
                    rnd.randrange(1 << 31),
                    rnd.randbytes(rnd.randrange(0, 50)),
                )
            )
    return b"".join(out)


def _v(x: int) -> bytes:
    if x < 0x40:
        return bytes([x])
    if x < 0x4000:
        return (x | 0x4000).to_bytes(2, "big")
    if x < 0x40000000:
        return (x | 0x80000000).to_bytes(4, "big")
    return (x | 0xC000000000000000).to_bytes(8, "big")


def valid_h3_stream(rnd: random.Random, nframes: int = 10, kind: str | None = None) -> bytes:
    """A well-formed HTTP/3 stream of ``nframes`` random frames for stream ``kind`` (RFC 9114 frame order)."""
    out = []
    if kind == "control":
        body = b"".join(_v(rnd.choice([1, 6, 7, 0x21, 0x33])) + _v(rnd.randrange(1 << 20)) for _ in range(3))
        out.append(_v(4) + _v(len(body)) + body)
        for _ in range(nframes):
            t = rnd.choice([3, 7, 0xD])
            body = _v(rnd.randrange(1 << rnd.choice([5, 13, 29, 61])))
            out.append(_v(t) + _v(len(body)) + body)
        return b"".join(out)
    out.append(_v(1) + _v(5) + rnd.randbytes(5))  # HEADERS first (request/push order)
    for _ in range(nframes):
        t = rnd.choice([0, 0, 5, 0x21 + 0x1F * rnd.randrange(4), 0x10])
        if kind == "push" and t == 5:
            t = 0
        if t == 5:
            body = _v(rnd.randrange(1 << 20)) + rnd.randbytes(rnd.randrange(10))
        else:
            body = rnd.randbytes(rnd.randrange(0, 3000))
        out.append(_v(t) + _v(len(body)) + body)
    if rnd.random() < 0.5:
        out.append(_v(1) + _v(3) + b"abc")  # trailers
    return b"".join(out)


def mutate(rnd: random.Random, data: bytes, pool: list[bytes] | None = None) -> bytes:
    """``data`` with 1 to 3 random mutations: bit flips, overwrites, inserts, cuts, splices, rewritten fields."""
    b = bytearray(data)
    for _ in range(rnd.randrange(1, 4)):
        op = rnd.randrange(8)
        if not b:
            b = bytearray(rnd.randbytes(rnd.randrange(1, 20)))
            continue
        i = rnd.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rnd.randrange(8)
        elif op == 1:
            b[i] = rnd.choice([0, 0xFF, 0x7F, 0x80, 0x40, 0xC0, rnd.randrange(256)])
        elif op == 2:
            b[i:i] = rnd.randbytes(rnd.randrange(1, 16))
        elif op == 3:
            del b[i : i + rnd.randrange(1, 16)]
        elif op == 4:
            del b[rnd.randrange(len(b) + 1) :]
        elif op == 5 and pool:
            other = rnd.choice(pool)
            j = rnd.randrange(len(other) + 1)
            b[i:] = other[j:]
        elif op == 6:
            # Rewrite an HTTP/2-header-shaped field at i: length, type, flags or stream.
            field = rnd.randrange(4)
            if field == 0 and i + 3 <= len(b):
                b[i : i + 3] = rnd.randrange(1 << 24).to_bytes(3, "big")
            elif field == 1:
                b[i] = rnd.randrange(16)
            elif field == 2:
                b[i] = rnd.choice([0x1, 0x4, 0x8, 0x20, 0x2D, 0xFF])
            elif i + 4 <= len(b):
                b[i : i + 4] = rnd.choice([0, 1, 3, 0x80000000, 0x7FFFFFFF]).to_bytes(4, "big")
        else:
            j = rnd.randrange(len(b))
            b[i], b[j] = b[j], b[i]
    return bytes(b)


def _splits(rnd: random.Random, n: int) -> list[int]:
    if n == 0:
        return [0]
    mode = rnd.randrange(3)
    if mode == 0:
        cuts = sorted(set(rnd.sample(range(1, n), min(n - 1, rnd.randrange(0, 8)))) | {n})
    elif mode == 1:
        step = rnd.randrange(1, 12)
        cuts = list(range(step, n, step)) + [n]
    else:
        cuts = [n]
    return [0] + cuts


def _outcome(fn):
    try:
        return ("ok", fn())
    except FrameError as exc:
        return ("frame-error", exc.key(), exc.count)
    except (HuffmanError, IntegerError) as exc:
        return (type(exc).__name__, str(exc))
    except ValueError as exc:
        return ("ValueError", str(exc))


def _bulk_h2(m, data, mfs, preface, validate):
    from . import parse_h2

    res = parse_h2(data, max_frame_size=mfs, preface=preface, validate=validate, impl=m)
    return (list(res), res.end, res.error.key() if res.error else None, res.pending)


def _bulk_h3(m, data, mfs, kind, validate):
    from . import parse_h3

    res = parse_h3(data, max_frame_size=mfs, kind=kind, validate=validate, impl=m)
    return (list(res), res.end, res.error.key() if res.error else None, res.pending)


def _arrays(width: int, n: int):
    from array import array

    if width == 5:
        return (
            array("B", bytes(n)),
            array("B", bytes(n)),
            array("I", [0]) * n,
            array("Q", [0]) * n,
            array("I", [0]) * n,
        )
    return tuple(array("Q", [0]) * n for _ in range(width))


def _incremental(m, cls, kwargs, data, cuts):
    sc = getattr(m, cls)(**kwargs)
    frames = []
    err = None
    width = 5 if cls == "H2Scanner" else 3
    for a, b in zip(cuts, cuts[1:]):
        try:
            n = sc.feed(data[a:b])
            got = sc.results()
            out = _arrays(width, n + 1)
            if sc.results_into(out, 1) != n or list(zip(*out))[1:] != got:
                raise AssertionError("results_into disagrees with results")
            frames += got
        except FrameError as exc:
            frames += sc.results()[: exc.count]
            err = exc.key()
            break
    fin = _outcome(sc.finish)
    return (frames, err, sc.pending if err is None else None, sc.offset, fin, sc.current if err is None else None)


def _fed_frames(m, cls, kwargs, data, cuts):
    """``feed_frames`` over the same chunks: the frames with their payloads, the error, what is held."""
    sc = getattr(m, cls)(**kwargs)
    frames, err = [], None
    for a, b in zip(cuts, cuts[1:]):
        try:
            frames += sc.feed_frames(data[a:b])
        except FrameError as exc:
            err = exc.key()
            break
    return frames, err, sc.pending if err is None else None


def _check_payloads(fed, inc, data: bytes) -> None:
    """Without an error, ``feed_frames`` gave the frames ``feed`` found, with their payloads' bytes."""
    if fed[0] == "ok" and inc[0] == "ok" and fed[1][1] is None and inc[1][1] is None:
        expected = [(*rec[:-2], data[rec[-2] : rec[-2] + rec[-1]]) for rec in inc[1][0]]
        if fed[1][0] != expected:
            raise AssertionError(f"feed_frames and feed disagree on {data.hex()}")


def _frame_summary(frame, wire: bytes):
    """What a frame object next_frame built holds, checked against hyperframe's parse of
    the same bytes (``wire``: header + payload)."""
    from hyperframe.frame import Frame

    ref, length = Frame.parse_frame_header(memoryview(wire[:9]))
    ref.parse_body(memoryview(wire[9 : 9 + length]))
    mine = (
        type(frame).__name__,
        vars(frame),
        list(vars(frame)),
        vars(frame.flags),
        list(vars(frame.flags)),
        repr(frame),
        getattr(frame, "flow_controlled_length", None),
        frame.serialize(),
    )
    theirs = (
        type(ref).__name__,
        vars(ref),
        list(vars(ref)),
        vars(ref.flags),
        list(vars(ref.flags)),
        repr(ref),
        getattr(ref, "flow_controlled_length", None),
        ref.serialize(),
    )
    if mine[:2] != theirs[:2] or mine[2:] != theirs[2:] or vars(frame)["flags"]._flags != ref.flags._flags:
        raise AssertionError(f"frame built by next_frame differs from hyperframe's: {mine!r} != {theirs!r}")
    return ("frame", repr(frame), frame.data)


def _receive(m, data: bytes, cuts: list[int], mfs: int, slice_bytes: int, validate: bool):
    """h2's receive buffer on top of ``next_frame`` (as h2buffer uses it): chunks appended,
    consumed bytes dropped, every frame taken; hyperframe-built records consumed."""
    from .h2frames import frame_classes

    frame_classes(m)
    sc = m.H2Scanner((1 << 24) - 1, preface=False, validate=validate)
    buf, base, out = bytearray(), 0, []
    try:
        for a, b in zip(cuts, cuts[1:]):
            drop = sc.consumed - base
            del buf[:drop]
            base += drop
            buf += data[a:b]
            while True:
                item = sc.next_frame(buf, base, mfs, slice_bytes)
                if item is None:
                    break
                if type(item) is tuple:
                    out.append(("record", item))
                    sc.consume()
                else:
                    # The payload's length: hyperframe's HEADERS body_len leaves out the Pad Length byte.
                    end = sc.consumed
                    length = item.body_len + (type(item).__name__ == "HeadersFrame" and "PADDED" in item.flags)
                    out.append(_frame_summary(item, data[end - length - 9 : end]))
    except FrameError as exc:
        out.append(("frame-error", exc.key(), exc.count))
    return out, sc.consumed, sc.offset, sc.current


def check_input(impls: dict, data: bytes, rnd: random.Random) -> int:
    """Run ``data`` through every entry point of every implementation; assert agreement."""
    names = list(impls)
    checks = 0

    def same(label, fn):
        nonlocal checks
        results = {name: _outcome(lambda m=impls[name]: fn(m)) for name in names}
        first = results[names[0]]
        for name in names[1:]:
            if results[name] != first:
                raise AssertionError(
                    f"{label}: implementations disagree on {data.hex()}:\n"
                    + "\n".join(f"  {n}: {r!r}" for n, r in results.items())
                )
        checks += 1
        return first

    mfs = rnd.choice([16384, 16384, 0, 100, (1 << 24) - 1])
    preface = rnd.choice([None, True, False])
    validate = rnd.random() < 0.8
    bulk = same("parse_h2", lambda m: _bulk_h2(m, data, mfs, preface, validate))
    cuts = _splits(rnd, len(data))
    inc = same(
        "H2Scanner",
        lambda m: _incremental(
            m, "H2Scanner", dict(max_frame_size=mfs, preface=preface, validate=validate), data, cuts
        ),
    )
    if bulk[0] == "ok" and inc[0] == "ok" and bulk[1][0] != inc[1][0]:
        raise AssertionError(f"bulk and incremental frames differ on {data.hex()}")
    fed = same(
        "H2Scanner.feed_frames",
        lambda m: _fed_frames(m, "H2Scanner", dict(max_frame_size=mfs, preface=preface, validate=validate), data, cuts),
    )
    _check_payloads(fed, inc, data)

    slice_bytes = rnd.choice([1, 9, 100, 8192])
    same("next_frame", lambda m: _receive(m, data, cuts, mfs, slice_bytes, validate))

    kind = rnd.choice([None, "control", "request", "push"])
    h3max = rnd.choice([None, None, 1, 100, 1 << 40])
    same("parse_h3", lambda m: _bulk_h3(m, data, h3max, kind, validate))
    h3_kwargs = dict(max_frame_size=h3max, kind=kind, validate=validate)
    inc = same("H3Scanner", lambda m: _incremental(m, "H3Scanner", h3_kwargs, data, cuts))
    fed = same("H3Scanner.feed_frames", lambda m: _fed_frames(m, "H3Scanner", h3_kwargs, data, cuts))
    _check_payloads(fed, inc, data)
    if h3max is None and validate:  # the receivers' call: H3Scanner(kind=...) alone
        same("H3Scanner(kind)", lambda m: _fed_frames(m, "H3Scanner", dict(kind=kind), data, cuts))

    same("huffman_decode", lambda m: m.huffman_decode(data))
    pos = rnd.randrange(len(data) + 1)
    same("decode_varint", lambda m: m.decode_varint(data, pos))
    same("decode_int", lambda m: [_outcome(lambda: m.decode_int(data, pos, p)) for p in (1, 4, 5, 6, 7, 8)])

    def vdec(m):
        d = m.VarintDecoder()
        out = []
        for a, b in zip(cuts, cuts[1:]):
            out += d.feed(data[a:b])
        return out, d.pending

    same("VarintDecoder", vdec)
    return checks


def corpus(seed: int = 0, size: int = 300) -> list[bytes]:
    """The deterministic seed corpus: valid streams, their mutations, random bytes."""
    rnd = random.Random(seed)
    valid = [
        valid_h2_stream(rnd, rnd.randrange(1, 12), max_payload=rnd.choice([10, 300, 3000])) for _ in range(size // 6)
    ]
    valid += [
        valid_h3_stream(rnd, rnd.randrange(1, 8), rnd.choice([None, "control", "request", "push"]))
        for _ in range(size // 6)
    ]
    items = list(valid)
    items += [mutate(rnd, rnd.choice(valid), valid) for _ in range(size // 2)]
    items += [rnd.randbytes(rnd.randrange(0, 64)) for _ in range(size // 6)]
    items += [b"", PREFACE, PREFACE[:10], b"\xff" * 40, b"\x00" * 40, b"\x3f" * 9, b"\xc0" + b"\xff" * 12]
    return items


def run(
    seconds: float = 3.0, seed: int = 0, impls: dict | None = None, corpus_size: int = 300, verbose: bool = False
) -> dict:
    """Check that every implementation agrees on the corpus, then on fresh inputs for ``seconds``; the counts."""
    impls = impls or implementations()
    rnd = random.Random(seed)
    deadline = time.monotonic() + seconds
    inputs = checks = 0
    seeds = corpus(seed, corpus_size)
    for data in seeds:
        checks += check_input(impls, data, rnd)
        inputs += 1
    valid = seeds[: corpus_size // 3]
    while time.monotonic() < deadline:
        r = rnd.random()
        if r < 0.6:
            data = mutate(rnd, rnd.choice(valid), valid)
        elif r < 0.8:
            data = valid_h2_stream(rnd, rnd.randrange(1, 6), max_payload=200)
            data = mutate(rnd, data) if rnd.random() < 0.7 else data
        else:
            data = rnd.randbytes(rnd.randrange(0, 80))
        checks += check_input(impls, data, rnd)
        inputs += 1
    stats = {"inputs": inputs, "checks": checks, "implementations": sorted(impls), "seed": seed}
    if verbose:
        print(f"fuzz: {inputs} inputs, {checks} checks, implementations {', '.join(sorted(impls))}: all agree")
    return stats


def main(argv: list[str] | None = None) -> int:
    """Command line: fuzz the C scanner against the Python twin; 1 when the C extension is not built."""
    p = argparse.ArgumentParser(prog="python -m simulator.frames.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus-size", type=int, default=300)
    args = p.parse_args(argv)
    impls = implementations()
    if "c" not in impls:
        print("fuzz: the C extension is not available", file=sys.stderr)
        return 1
    run(args.seconds, args.seed, impls, args.corpus_size, verbose=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
