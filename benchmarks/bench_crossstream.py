"""Compression and decompression MB/s per library, side by side in one run, and
cross-stream study runs per wall second.

Corpus: the generated site (seed 1, 3 releases, about 645 KB of HTML, CSS, JS, JSON).
Candidates: zlib 6, Brotli 5, Brotli 11, zstd 3, zstd 19 per response; the same with a
32 KiB raw dictionary (Brotli's through the ctypes module); a shared streaming context
per library.  Ratios are against zlib 6 per response measured in the same run.  Then
one small study run (per-response + shared + dcb/dcz, no leak) repeated: runs per second.
"""

from __future__ import annotations

import time


def _mb_per_s(fn, payloads, repeats: int) -> float:
    total = sum(len(p) for p in payloads) * repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        for p in payloads:
            fn(p)
    return total / (time.perf_counter() - t0) / 1e6


def run(quick: bool = False) -> dict:
    from simulator.studies.crossstream.bodies import Codec
    from simulator.studies import crossstream
    from simulator.studies.crossstream import bodies

    corpus = bodies.generate(seed=1, releases=2 if quick else 3)
    data = [b.data for b in corpus.bodies]
    dictionary = b"".join(data[:4])[-32768:]
    repeats = 1 if quick else 3
    codecs = [Codec("zlib", 6), Codec("brotli", 5), Codec("brotli", 11), Codec("zstd", 3), Codec("zstd", 19)]
    if quick:
        codecs = [c for c in codecs if c.level not in (11, 19)]
    rows = []
    for codec in codecs:
        encoded = [codec.compress(p) for p in data]
        enc_dict = [codec.compress(p, dictionary) for p in data]
        row = {
            "codec": codec.name,
            "compress_mb_s": _mb_per_s(codec.compress, data, repeats),
            "decompress_mb_s": sum(len(p) for p in data)
            * repeats
            / _time(lambda: [codec.decompress(e) for e in encoded], repeats)
            / 1e6,
            "dict_compress_mb_s": _mb_per_s(lambda p: codec.compress(p, dictionary), data, repeats),
            "dict_decompress_mb_s": sum(len(p) for p in data)
            * repeats
            / _time(lambda: [codec.decompress(e, dictionary) for e in enc_dict], repeats)
            / 1e6,
            "ratio": sum(map(len, encoded)) / sum(map(len, data)),
        }

        def shared():
            pair = codec.stream()
            for p in data:
                pair.decode(pair.encode(p))

        row["shared_roundtrip_mb_s"] = sum(len(p) for p in data) * repeats / _time(shared, repeats) / 1e6
        rows.append(row)
    base = rows[0]["compress_mb_s"]
    print(f"corpus {corpus.source}: {len(data)} bodies, {corpus.raw_bytes:,} bytes; MB/s, wall time of this machine")
    print(
        f"{'codec':<11}{'comp':>8}{'decomp':>9}{'comp+dict':>11}{'dec+dict':>10}{'shared rt':>11}{'ratio':>8}"
        f"{'comp vs zlib:6':>16}"
    )
    for r in rows:
        r["compress_vs_zlib6"] = r["compress_mb_s"] / base
        print(
            f"{r['codec']:<11}{r['compress_mb_s']:>8.1f}{r['decompress_mb_s']:>9.1f}{r['dict_compress_mb_s']:>11.1f}"
            f"{r['dict_decompress_mb_s']:>10.1f}{r['shared_roundtrip_mb_s']:>11.1f}{r['ratio']:>8.3f}{r['compress_vs_zlib6']:>15.2f}x"
        )
    params = crossstream.CrossstreamParams(
        schemes=("per-response", "shared", "dcb", "dcz"), codecs="brotli:5,zstd:3", scopings=("none",), leak_lengths=()
    )
    n = 1 if quick else 3
    t = _time(lambda: crossstream.run(corpus, params), n)
    print(f"study runs per wall second (per-response+shared+dcb/dcz, brotli:5+zstd:3, {len(data)} bodies): {n / t:.2f}")
    return {"codecs": rows, "study_runs_per_s": n / t, "corpus_bytes": corpus.raw_bytes}


def _time(fn, repeats: int) -> float:
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return time.perf_counter() - t0
