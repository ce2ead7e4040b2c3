"""Generated response bodies of the bytes a HAR recorded (for ``lab.site``).  Written by hand.

Text bodies are the prefix a rebuilt page needs (its tags, rules, statements) padded with
comment lines to the recorded decoded size.  A ``gzip`` or ``br`` body must really decode, so
its compressed size is searched to the recorded bytes on the wire: a seeded mix of
random-token comment lines (which barely compress) and one repeated line (which compresses to
almost nothing) to the recorded decoded length, or all-random text when that length cannot
carry so many compressed bytes.  ``SIZE_TOLERANCE`` says how close the search must come.
Images are valid PNGs padded to their recorded size (``image``), coded when the
recorded response was (``coded_image``).  Deterministic for a seed.
"""

from __future__ import annotations

import gzip
import random
import string

from ..capture.images import IMAGE_SIZE_PX, image

__all__ = ["SIZE_TOLERANCE", "sized_text", "filler", "tolerance", "image", "coded_image", "IMAGE_SIZE_PX"]

# A coded body's compressed size is within max(64 bytes, 2%) of the recorded one.
SIZE_TOLERANCE = (64, 0.02)
_TOKEN_ALPHABET = string.ascii_letters + string.digits + "_."  # safe inside any comment kind


def _compress(data: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.compress(data, compresslevel=6, mtime=0)
    import brotli

    return brotli.compress(data, quality=5)


def _comment(kind: str) -> str:
    return {"document": "<!-- {} -->\n", "stylesheet": "/* {} */\n"}.get(kind, "// {}\n")


def _token_lines(rng: random.Random, size: int, fmt: str) -> str:
    """About ``size`` characters of comment lines of seeded random tokens (barely compressible)."""
    out, n, width = [], 0, 64
    while n < size:
        tok = "".join(rng.choice(_TOKEN_ALPHABET) for _ in range(width))
        line = fmt.format(tok)
        out.append(line)
        n += len(line)
    return "".join(out)


def sized_text(
    prefix: str, kind: str, seed: int, wire_bytes: int, decoded_bytes: int | None, encoding: str | None
) -> bytes:
    """``prefix`` and comment filler: ``decoded_bytes`` long uncoded, and when coded, a
    compressed size searched to ``wire_bytes`` (see ``SIZE_TOLERANCE``)."""
    fmt = _comment(kind)
    head = prefix.encode()
    if not encoding:
        return head + filler(random.Random(seed), (decoded_bytes or wire_bytes) - len(head), fmt)
    total = decoded_bytes if decoded_bytes and decoded_bytes > wire_bytes else None
    random_text = _token_lines(random.Random(seed), max(total or 0, wire_bytes * 2) + 256, fmt).encode()
    constant = fmt.format("x" * 64).encode()

    def body(n_random: int, length: int | None) -> bytes:
        data = head + random_text[:n_random]
        if length is not None and len(data) < length:
            reps = (length - len(data)) // len(constant)
            data += constant * reps
            data += b" " * (length - len(data))
        return data

    def search(length: int | None, hi: int) -> tuple[int, bytes]:
        lo, best = 0, None
        while lo <= hi:
            mid = (lo + hi) // 2
            out = _compress(body(mid, length), encoding)
            if best is None or abs(len(out) - wire_bytes) < abs(len(best) - wire_bytes):
                best = out
            if len(out) < wire_bytes:
                lo = mid + 1
            elif len(out) > wire_bytes:
                hi = mid - 1
            else:
                break
        return best

    if total is not None:
        out = search(total, max(total - len(head), 0))
        if abs(len(out) - wire_bytes) <= tolerance(wire_bytes):
            return out
    # The recorded decoded length cannot carry that many compressed bytes (or is unknown):
    # all-random text of whatever length compresses to the recorded wire size.
    return search(None, len(random_text))


def tolerance(wire_bytes: int) -> float:
    """How far a coded body's compressed size may be from ``wire_bytes``."""
    return max(SIZE_TOLERANCE[0], SIZE_TOLERANCE[1] * wire_bytes)


def filler(rng: random.Random, size: int, fmt: str) -> bytes:
    """``size`` bytes of whole comment lines of the kind ``fmt`` writes (seeded tokens)."""
    from ..capture.server import comment_filler

    if fmt.startswith("<!--"):
        return comment_filler(rng, size, "<!-- ", " -->\n")
    if fmt.startswith("/*"):
        return comment_filler(rng, size, "/* ", " */\n")
    return comment_filler(rng, size, "// ", "\n")


def coded_image(wire_bytes: int, seed: int, encoding: str) -> bytes:
    """``image`` coded with ``encoding`` (``gzip``/``br``: some servers code images too), about
    ``wire_bytes`` coded.  The padding is random bytes, which no coding shrinks, so the coded
    size moves byte for byte with the image's: what the coding added or took off is measured
    and the image sized again (a few rounds).  Text in its place would not decode as an image,
    and Chromium stops reading such a body after its first read (see ``image``): the page's
    bytes would not cross the lab's link."""
    size = wire_bytes
    coded = _compress(image(size, seed), encoding)
    for _ in range(4):
        miss = wire_bytes - len(coded)
        if abs(miss) <= tolerance(wire_bytes) // 4 or size + miss < 1:
            break
        size += miss
        coded = _compress(image(size, seed), encoding)
    return coded
