"""HTTP/2 frame parsing and HPACK Huffman decoding: C against the pure-Python stacks.

Frames: one mixed HTTP/2 byte stream of about 25 MB (HEADERS, DATA of varied sizes,
SETTINGS, WINDOW_UPDATE, PING; built with hyperframe, deterministic) is parsed, fed in
64 KiB chunks as a socket would deliver it, by

- h2's ``FrameBuffer`` (what ``H2Connection.receive_data`` uses),
- hyperframe directly (``parse_frame_header`` + ``parse_body`` over one memoryview),
- the pure-Python twin ``simulator.frames.scanner.H2Scanner`` (``feed`` + ``results``),
- the C ``H2Scanner``: ``feed`` + ``results_into`` (each chunk's records copied into
  reused arrays: the native path, the ``c_vs_h2`` figure) and ``feed`` + ``results``
  (one Python tuple per frame: ``c_tuples_vs_h2``), and the C bulk ``parse_h2`` (whole
  buffer into arrays),

and every candidate must find the same number of frames.  Huffman: the same corpus of
Huffman-coded header values (HPACK's encoder) is decoded by hpack's pure-Python decoder
and by the C decoder (and the twin), results checked equal.

Each timing is the best of a few repetitions.  Ratios are what matters (see README).
"""

from __future__ import annotations

import random
import time

CHUNK = 64 * 1024


def build_stream(target_bytes: int, seed: int = 1) -> tuple[bytes, int]:
    from hyperframe.frame import DataFrame, HeadersFrame, PingFrame, SettingsFrame, WindowUpdateFrame

    rnd = random.Random(seed)
    # DATA payload sizes: mostly small and medium (as on a busy connection), some full frames.
    sizes = [0, 8, 16, 40, 64, 100, 100, 200, 300, 300, 500, 700, 1000, 1400, 1400, 4096, 16384]
    payload = rnd.randbytes(16384)
    parts, total, count, sid = [], 0, 0, 1
    parts.append(SettingsFrame(0, settings={1: 4096, 4: 65535, 5: 16384}).serialize())
    while total < target_bytes:
        r = rnd.random()
        if r < 0.25:
            f = HeadersFrame(sid, data=payload[:rnd.randrange(20, 300)], flags=["END_HEADERS"])
            sid += 2
        elif r < 0.80:
            f = DataFrame(rnd.randrange(1, sid + 1, 2), data=payload[:rnd.choice(sizes)],
                          flags=["END_STREAM"] if rnd.random() < 0.1 else [])
        elif r < 0.93:
            f = WindowUpdateFrame(rnd.choice([0, 1]), window_increment=rnd.randrange(1, 1 << 20))
        elif r < 0.98:
            f = PingFrame(0, opaque_data=payload[:8], flags=["ACK"] if rnd.random() < 0.5 else [])
        else:
            f = SettingsFrame(0, settings={4: rnd.randrange(1 << 16, 1 << 20)}) if rnd.random() < 0.5 \
                else SettingsFrame(0, flags=["ACK"])
        b = f.serialize()
        parts.append(b)
        total += len(b)
        count += 1
    return b"".join(parts), count + 1


def _best(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def _h2_framebuffer(data: bytes) -> int:
    from h2.frame_buffer import FrameBuffer

    fb = FrameBuffer(server=False)
    fb.max_frame_size = 16384
    n = 0
    for i in range(0, len(data), CHUNK):
        fb.add_data(data[i:i + CHUNK])
        for _ in fb:
            n += 1
    return n


def _hyperframe(data: bytes) -> int:
    from hyperframe.frame import Frame

    mv = memoryview(data)
    pos, n, end = 0, 0, len(data)
    while pos + 9 <= end:
        frame, length = Frame.parse_frame_header(mv[pos:pos + 9])
        frame.parse_body(mv[pos + 9:pos + 9 + length])
        pos += 9 + length
        n += 1
    return n


def _scanner(impl, data: bytes) -> int:
    """feed + results(): one Python tuple per frame."""
    sc = impl.H2Scanner(16384)
    mv = memoryview(data)
    n = 0
    for i in range(0, len(data), CHUNK):
        if sc.feed(mv[i:i + CHUNK]):
            n += len(sc.results())
    sc.finish()
    return n


def _scanner_arrays(impl, data: bytes) -> int:
    """feed + results_into(): each chunk's records copied into reused arrays (no object per frame)."""
    from array import array

    cap = CHUNK // 9 + 1
    out = (array("B", bytes(cap)), array("B", bytes(cap)), array("I", [0]) * cap, array("Q", [0]) * cap,
           array("I", [0]) * cap)
    sc = impl.H2Scanner(16384)
    mv = memoryview(data)
    n = 0
    for i in range(0, len(data), CHUNK):
        if sc.feed(mv[i:i + CHUNK]):
            n += sc.results_into(out)
    sc.finish()
    return n


def build_huffman_corpus(target_bytes: int, seed: int = 2) -> list[bytes]:
    from hpack.huffman import HuffmanEncoder
    from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH

    enc = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)
    rnd = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=;:, "
    samples = [
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
        "gzip, deflate, br", "en-US,en;q=0.9", "max-age=0", "https://www.example.com/index.html",
    ]
    out, total = [], 0
    while total < target_bytes:
        if rnd.random() < 0.4:
            s = rnd.choice(samples)
        elif rnd.random() < 0.5:
            s = "/" + "/".join("".join(rnd.choices(alphabet[:36], k=rnd.randrange(3, 12))) for _ in range(4))
        else:
            s = "; ".join(f"{''.join(rnd.choices(alphabet[:52], k=6))}={''.join(rnd.choices(alphabet[:62], k=24))}"
                          for _ in range(rnd.randrange(1, 6)))
        coded = enc.encode(s.encode())
        out.append(coded)
        total += len(coded)
    return out


def run(quick: bool = False) -> dict:
    import simulator.frames as F
    from hpack.huffman_table import decode_huffman as hpack_decode

    impls = F.implementations()
    c = impls.get("c")
    py = impls["python"]
    size = 2_500_000 if quick else 25_000_000
    repeat_slow, repeat_fast = (1, 3) if quick else (2, 5)
    data, nframes = build_stream(size)

    rows = {}
    t, n = _best(lambda: _h2_framebuffer(data), repeat_slow)
    rows["h2 FrameBuffer"] = (t, n)
    t, n = _best(lambda: _hyperframe(data), repeat_slow)
    rows["hyperframe"] = (t, n)
    t, n = _best(lambda: _scanner(py, data), repeat_slow)
    rows["Python twin H2Scanner"] = (t, n)
    allocations = None
    if c is not None:
        t, n = _best(lambda: _scanner_arrays(c, data), repeat_fast)
        rows["C H2Scanner"] = (t, n)
        t, n = _best(lambda: _scanner(c, data), repeat_fast)
        rows["C H2Scanner, tuples"] = (t, n)
        t, res = _best(lambda: F.parse_h2(data, impl=c), repeat_fast)
        rows["C parse_h2 (bulk)"] = (t, len(res))
        sc = c.H2Scanner(16384)
        for i in range(0, len(data), CHUNK):
            sc.feed(data[i:i + CHUNK])
        allocations = sc.allocations
    for name, (t, n) in rows.items():
        if n != nframes:
            raise AssertionError(f"{name} found {n} frames, expected {nframes}")

    fps = {name: n / t for name, (t, n) in rows.items()}
    base = fps["h2 FrameBuffer"]

    # Huffman
    corpus = build_huffman_corpus(200_000 if quick else 2_000_000)
    hbytes = sum(len(s) for s in corpus)
    hrows = {}
    t, ref = _best(lambda: [hpack_decode(s) for s in corpus], repeat_slow)
    hrows["hpack decode_huffman"] = t
    t, got = _best(lambda: [py.huffman_decode(s) for s in corpus], repeat_slow)
    if got != ref:
        raise AssertionError("Python twin Huffman output differs from hpack")
    hrows["Python twin huffman_decode"] = t
    if c is not None:
        t, got = _best(lambda: [c.huffman_decode(s) for s in corpus], repeat_fast)
        if got != ref:
            raise AssertionError("C Huffman output differs from hpack")
        hrows["C huffman_decode"] = t

    print(f"frames: {len(data) / 1e6:.1f} MB, {nframes} frames (HEADERS, DATA 0..16384 B, SETTINGS, "
          f"WINDOW_UPDATE, PING), fed in {CHUNK // 1024} KiB chunks; active: {F.IMPLEMENTATION}")
    print(f"{'parser':<28}{'seconds':>10}{'frames/s':>14}{'vs h2':>10}")
    for name, (t, n) in rows.items():
        print(f"{name:<28}{t:>10.4f}{fps[name]:>14,.0f}{fps[name] / base:>9.1f}x")
    print(f"\nHuffman: {len(corpus)} strings, {hbytes / 1e6:.2f} MB coded")
    print(f"{'decoder':<30}{'seconds':>10}{'MB/s':>10}{'vs hpack':>10}")
    for name, t in hrows.items():
        print(f"{name:<30}{t:>10.4f}{hbytes / t / 1e6:>10.1f}{hrows['hpack decode_huffman'] / t:>9.1f}x")
    if allocations is not None:
        print(f"\nC H2Scanner heap (re)allocations over {nframes} frames: {allocations}")

    result = {
        "stream_bytes": len(data),
        "frames": nframes,
        "implementation": F.IMPLEMENTATION,
        "fps": {k: round(v) for k, v in fps.items()},
        "python_vs_h2": fps["Python twin H2Scanner"] / base,
        "hyperframe_vs_h2": fps["hyperframe"] / base,
        "huffman_bytes": hbytes,
        "huffman_python_vs_hpack": hrows["hpack decode_huffman"] / hrows["Python twin huffman_decode"],
    }
    if c is not None:
        result.update({
            "c_vs_h2": fps["C H2Scanner"] / base,
            "c_tuples_vs_h2": fps["C H2Scanner, tuples"] / base,
            "c_bulk_vs_h2": fps["C parse_h2 (bulk)"] / base,
            "c_vs_hyperframe": fps["C H2Scanner"] / fps["hyperframe"],
            "c_vs_python": fps["C H2Scanner"] / fps["Python twin H2Scanner"],
            "huffman_c_vs_hpack": hrows["hpack decode_huffman"] / hrows["C huffman_decode"],
            "c_scanner_allocations": allocations,
        })
    else:
        result.update({"c_vs_h2": None, "huffman_c_vs_hpack": None})
    return result
