"""Cost that follows the work, not what a trace claims (issue 33): the per-field memos of the
header path give the libraries' own answers, a declared body is written in bounded chunks,
and the QUIC model's ACK processing looks at the packets an ACK names, not at all it sent.
No test here times anything: memory is measured with ``tracemalloc``, work by counting."""

from __future__ import annotations

import hpack
from h2.utilities import normalize_outbound_headers


def _odd_lists():
    """Header lists with what h2's normalisation changes: upper-case names, surrounding
    whitespace, connection-specific fields, short and long cookies, credentials."""
    base = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"a.example"), (b":path", b"/x")]
    extras = [(b"Accept", b" text/html "), (b"connection", b"keep-alive"), (b"cookie", b"a=1"),
              (b"cookie", b"session=0123456789abcdefghij"), (b"authorization", b"Basic eA=="),
              (b"proxy-authorization", b"x"), (b"TE", b"trailers"), (b"x-empty", b""), (b"upgrade", b"h2c"),
              (b"user-agent", b"UA/1.0"), (b"keep-alive", b"timeout=5"), (b"transfer-encoding", b"chunked")]
    for i in range(len(extras)):
        yield tuple(base + extras[i:] + extras[:i])
        yield tuple(base + extras[:i])


def test_h2_normalized_is_h2s_normalisation_rfc9113_8_2():
    """RFC 9113 section 8.2 (lower-case names, no connection-specific fields) and h2's
    never-indexed credentials and short cookies (RFC 7541 section 7.1.3): the per-field memo
    gives h2's own list, field classes included, for every list, twice (memo cold and warm)."""
    from simulator.http.header_sizes import h2_normalized

    for _ in range(2):
        for headers in _odd_lists():
            h2_normalized.cache_clear()
            ours = h2_normalized(headers)
            theirs = tuple(normalize_outbound_headers(headers, None))
            assert ours == theirs
            assert [type(f) for f in ours] == [type(f) for f in theirs]


def test_block_sizes_with_the_field_memo_are_hpacks_rfc7541():
    """RFC 7541 sections 6.1-6.2: with the per-field memo warm from other connections, each
    block's size is still what hpack's encoder writes on this connection (the dynamic table,
    never-indexed fields, str fields, entries that empty the table)."""
    from simulator.http.header_sizes import HeaderBlockSizer, h2_normalized

    lists = list(_odd_lists())
    lists.append(((b":status", b"200"), (b"x-big", b"v" * 5000), (b"etag", b'"1"')))
    lists.append((("x-text", "value"), (b"authorization", b"secret", True), (b"etag", b'"1"')))
    for rounds in range(3):
        encoder, sizer = hpack.Encoder(), HeaderBlockSizer()
        for headers in lists[rounds:] + lists[:rounds]:
            if rounds == 1 and all(type(h) is tuple and len(h) == 2 for h in headers):
                headers = h2_normalized(headers)
            assert sizer.encoded_size(headers) == len(encoder.encode(list(headers)))


def test_the_replay_header_clean_up_is_per_field_rfc9113_8_2_2():
    """RFC 9113 section 8.2.2: connection-specific fields dropped, names lower-cased, CR, LF
    and NUL gone from values; the same answer with the memo cold and warm, and for fields
    given as lists (not hashable)."""
    from simulator.stacks import replay

    headers = [(b" Accept ", b" a\r\nb\x00 "), (b"Connection", b"close"), (b"", b"x"), (b"host", b"h"),
               (b"x-a", b"1")]
    want = [(b"accept", b"ab"), (b"x-a", b"1")]
    replay._CLEANED.clear()
    assert replay._clean(headers) == want
    assert replay._clean(headers) == want
    assert replay._clean([list(h) for h in headers]) == want
