"""``http.header_sizes.h2_normalized`` against the ``h2`` library it stands for."""

import random

from h2.utilities import normalize_outbound_headers

from simulator.http import header_sizes
from simulator.http.header_sizes import h2_normalized


def test_h2_normalized_is_h2s_normalisation_field_by_field_rfc9113_8_2():
    """Every field comes out as ``h2`` normalises it before encoding, type included: names
    lower-cased (RFC 9113 8.2.1), connection-specific fields dropped (8.2.2), surrounding
    whitespace stripped, authorization and cookies under 20 bytes never indexed (RFC 7541
    7.1.3), whether a field's name was met before with another value or not (the per-name
    shortcut, ``_value_blind``, and the library's own pass give the same answer)."""
    rng = random.Random(5)
    names = [
        b":path",
        b":status",
        b"etag",
        b"content-length",
        b"cookie",
        b"authorization",
        b"proxy-authorization",
        b"connection",
        b"keep-alive",
        b"te",
        b"Content-Type",
        b" x-padded ",
        b"x-custom",
    ]
    values = [b"", b"v", b" v ", b"\tv\t", b"a" * 19, b"a" * 20, b"a=1; b=2", b"trailers", b" " * 3]
    header_sizes._NORMALIZED_FIELDS.clear()
    h2_normalized.cache_clear()
    for _ in range(400):
        fields = tuple(
            (rng.choice(names), rng.choice(values) + str(rng.randrange(3)).encode() * rng.randrange(2))
            for _ in range(rng.randrange(1, 8))
        )
        expected = list(normalize_outbound_headers(fields, None))
        got = list(h2_normalized(fields))
        assert got == expected
        assert [type(f) for f in got] == [type(f) for f in expected]
