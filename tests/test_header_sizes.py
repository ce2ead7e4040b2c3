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


def test_the_c_block_sizer_loop_is_the_python_reference_block_by_block_rfc7541():
    """``HeaderBlockSizer._encode``'s C twin (``simulator.http._header_sizes``) gives the
    Python loop's size for every block and leaves the same dynamic table (RFC 7541 section
    4: insertion numbers, entries, evictions, a field larger than the table emptying it),
    on plain tuples, str fields, never-indexed 3-tuples and h2's ``NeverIndexedHeaderTuple``,
    and with h2's normalisation done field by field in the loop (``_encode_h2``) as on the
    list ``h2_normalized`` makes."""
    import pytest

    if header_sizes._NATIVE is None:
        pytest.skip("the C extension is not built")
    rng = random.Random(11)
    header_sizes._PLAIN_FIELDS.clear()  # the C twin makes the facts of the fields it meets first
    header_sizes._H2_FACTS.clear()
    header_sizes._NORMALIZED_FIELDS.clear()  # and normalises a field of a name h2 treats alike whatever its value
    names = [b":path", b":status", b"etag", b"cookie", b"x-custom", b"content-type", b"accept", b"x-big", b"Te"]
    values = [b"", b"v", b" v ", b"text/html", b"a" * 19, b"a" * 20, b"a=1; b=2", b"x" * 300, b"y" * 4100]
    for _ in range(20):
        c_sizer, py_sizer = header_sizes.HeaderBlockSizer(), header_sizes.HeaderBlockSizer()
        for _ in range(60):
            fields = [
                (rng.choice(names), rng.choice(values) + str(rng.randrange(50)).encode() * rng.randrange(2))
                for _ in range(rng.randrange(0, 12))
            ]
            if rng.random() < 0.3:
                fields = list(h2_normalized(tuple(fields)))  # NeverIndexedHeaderTuple for short cookies
            if rng.random() < 0.2:
                fields += [(b"authorization", b"secret", True), ("x-text", "value"), [b"x-list", b"1"]]
            if rng.random() < 0.5:  # normalised as the loop meets each field, against h2_normalized's list
                fields = tuple(f for f in fields if type(f) is tuple and type(f[0]) is bytes)
                assert c_sizer._encode_h2(fields) == py_sizer._encode_python(h2_normalized(fields))
            else:
                assert c_sizer._encode(fields) == py_sizer._encode_python(fields)
            # The C table (a ring and its own lookups) holds what the reference's dicts and deque hold.
            assert c_sizer._table_state() == py_sizer._python_state()
    # Each (bytes, bytes) field's facts as the C twin made them are _remember's.
    for field, facts in header_sizes._PLAIN_FIELDS.items():
        if type(field[0]) is bytes and type(field[1]) is bytes:
            assert facts == header_sizes._remember({}, field, field[0], field[1], False), field
    # Each field's normalisation remembered is h2's own (the C twin keeps its own answers for a
    # name h2 treats alike whatever its value in _H2_FACTS only: the blocks and tables above
    # hold those to h2_normalized's).
    assert header_sizes._BLIND_NAMES  # some names were found so
    for field, done in header_sizes._NORMALIZED_FIELDS.items():
        assert list(done) == list(normalize_outbound_headers((field,), None)), field
