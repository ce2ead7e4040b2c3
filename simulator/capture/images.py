"""Decodable images of a given size, for the pages the workbench serves to a real browser
(``capture``'s synthetic pages, the lab's rebuilt ones).  Written by hand around Pillow.

A browser decodes an image as its bytes arrive and stops reading one it cannot decode, so a
served image must be a real one to move the bytes it stands for: a valid PNG padded to its
size with a chunk decoders skip.
"""

from __future__ import annotations

import random

__all__ = ["image", "IMAGE_SIZE_PX"]

# A private, safe-to-copy ancillary PNG chunk (ISO/IEC 15948 / PNG spec section 5.4: lower
# case first letter = ancillary, second = private, third upper case, fourth lower case =
# safe to copy): decoders skip it, so it pads an image to its recorded size.
_PNG_PAD_CHUNK = b"lbPd"
IMAGE_SIZE_PX = (160, 90)  # what the rebuilt document displays each image at


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    import struct
    import zlib

    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def image(size: int, seed: int) -> bytes:
    """A valid PNG of ``IMAGE_SIZE_PX`` (one seeded colour) padded to ``size`` bytes with a
        private ancillary chunk of random bytes; a size below the bare image's (about 300 bytes)
    gets a 1x1 image (69 bytes, the least this gives).

        Every raster type is served as PNG bytes under its recorded Content-Type: the browser
        decodes images by their signature, not their type.  Random bytes would not do: Chromium
        stops reading an image it cannot decode after its first read (16 KiB over HTTP/2, one
        packet over HTTP/3), so the lab would move far fewer bytes than the page did."""
    import io

    from PIL import Image

    rng = random.Random(seed)
    colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
    png = b""
    for px in (IMAGE_SIZE_PX, (1, 1)):  # a tracking pixel's few bytes: the 1x1 image
        buf = io.BytesIO()
        Image.new("RGB", px, colour).save(buf, format="PNG", optimize=False)
        png = buf.getvalue()
        if len(png) + 12 <= size:
            break
    pad = size - len(png) - 12  # a chunk costs 12 bytes besides its data
    if pad < 0:
        return png
    iend = png.rindex(b"IEND") - 4  # the IEND chunk's length field
    return png[:iend] + _png_chunk(_PNG_PAD_CHUNK, rng.randbytes(pad)) + png[iend:]
