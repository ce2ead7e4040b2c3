"""The synthetic trace generator and the bundled synthetic traces."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

import pytest

from simulator.errors import InputError
from simulator.traces import load
from simulator.traces.har import write_har
from simulator.traces.synth import generate

TRACES = Path(__file__).resolve().parents[1] / "traces"
BUNDLED = [("synthetic-page.har", 1, 4), ("synthetic-session.har", 5, 2)]  # as in traces/README.md
MANY_ORIGINS = {"requests": 300, "origins": 120, "third_party_share": 0.7, "third_party_zipf_s": 0.3}


def test_same_seed_same_trace_and_global_random_untouched():
    state = random.getstate()
    a, b = generate(pages=2, seed=11), generate(pages=2, seed=11)
    assert random.getstate() == state
    assert a.exchanges == b.exchanges and a.content_hash() == b.content_hash()
    assert generate(pages=2, seed=12).content_hash() != a.content_hash()


def test_synth_to_har_to_trace_identical(tmp_path):
    trace = generate(pages=3, seed=5)
    write_har(trace, tmp_path / "s.har")
    again = load(tmp_path / "s.har")
    assert again.exchanges == trace.exchanges
    assert again.pages == trace.pages
    assert again.meta["transfer_sizes"] == trace.meta["transfer_sizes"]
    assert again.content_hash() == trace.content_hash()


@pytest.mark.parametrize("name, pages, seed", BUNDLED)
def test_bundled_traces_match_their_recorded_command(tmp_path, name, pages, seed):
    write_har(generate(pages=pages, seed=seed), tmp_path / name)
    committed = (TRACES / name).read_bytes()
    assert (tmp_path / name).read_bytes() == committed
    assert len(committed) < 1_000_000


def test_many_origins_trace_matches_its_recorded_command(tmp_path):
    """traces/synthetic-many-origins.har: a 300-exchange page over about 100 origins (the
    shape of the replay-speed benchmark), regenerated from its recorded parameters."""
    write_har(generate(pages=1, seed=1, **MANY_ORIGINS), tmp_path / "m.har")
    committed = (TRACES / "synthetic-many-origins.har").read_bytes()
    assert (tmp_path / "m.har").read_bytes() == committed
    trace = load(TRACES / "synthetic-many-origins.har")
    assert len(trace) == 300 and 90 <= len(trace.origins()) <= 110


def test_third_party_spread_flattens_with_the_zipf_exponent():
    # The same draws (share and exponent change no random call), more distinct third parties
    # with a flatter spread; the default exponent 1.0 is the 1/k weighting the bundled traces use.
    steep = generate(pages=1, seed=5, requests=300, origins=120, third_party_share=0.7)
    flat = generate(pages=1, seed=5, requests=300, origins=120, third_party_share=0.7, third_party_zipf_s=0.0)
    assert len(flat.origins()) > len(steep.origins()) + 15
    assert generate(pages=1, seed=5, third_party_zipf_s=1.0).content_hash() == generate(pages=1, seed=5).content_hash()
    few = generate(pages=1, seed=5, requests=300, third_party_share=0.0)
    assert len(few.origins()) == 3  # www., static. and api. only
    with pytest.raises(InputError, match="third-party share"):
        generate(pages=1, seed=5, third_party_share=1.5)


def test_bundled_sizes():
    page, session = load(TRACES / "synthetic-page.har"), load(TRACES / "synthetic-session.har")
    assert 60 <= len(page) <= 100 and len(page.pages) == 1
    assert len(session) >= 300 and len(session.pages) == 5


def test_header_lists_look_like_http2():
    trace = generate(pages=2, seed=3)
    for e in trace:
        names = [n for n, _ in e.request_headers]
        assert names[:4] == [b":method", b":scheme", b":authority", b":path"]  # RFC 9113 8.3.1
        assert all(n == n.lower() for n in names)
        assert not {b"connection", b"host", b"keep-alive", b"transfer-encoding", b"upgrade"} & set(names)
        assert e.response_headers[0][0] == b":status"
        assert e.origin == "https://" + e.request_headers[2][1].decode()
        assert e.start_s is not None and e.page is not None
    starts = [e.start_s for e in trace]
    assert starts == sorted(starts)
    # Compression has something to find: the user agent repeats on every request.
    agents = {dict(e.request_headers)[b"user-agent"] for e in trace}
    assert len(agents) == 1
    # ... and paths vary.
    assert len({dict(e.request_headers)[b":path"] for e in trace}) > len(trace) * 0.8


def test_parameters_follow_their_sources():
    counts = [len(generate(pages=1, seed=s)) for s in range(40)]
    assert 55 <= statistics.median(counts) <= 90  # median approximately 70 requests
    trace = generate(pages=1, seed=1, requests=200)
    assert len(trace) == 200
    kinds = [e.resource_type for e in trace]
    assert 0.25 <= kinds.count("script") / len(kinds) <= 0.45
    assert 0.15 <= kinds.count("image") / len(kinds) <= 0.35
    crumbs = [
        len(c)
        for e in generate(pages=3, seed=2)
        for n, v in e.request_headers
        if n == b"cookie"
        for c in v.split(b"; ")
    ]
    assert 20 <= statistics.median(crumbs) <= 60  # median cookie approximately 36 bytes
    assert len(generate(pages=1, seed=1, origins=2).origins()) <= 2 + 3


def test_bad_parameters():
    with pytest.raises(InputError, match="unknown"):
        generate(pages=1, seed=0, requets=5)
    with pytest.raises(InputError, match="pages"):
        generate(pages=0)


def test_a_request_count_asked_for_is_honoured_up_to_its_limit():
    """``requests`` (``trace synth --requests``) above the drawn range (5..400) is honoured, up to
    MAX_ASKED_REQUESTS (the scale benchmark's largest page); beyond it, refused in one line."""
    from simulator.traces.synth import MAX_ASKED_REQUESTS, MAX_REQUESTS

    assert len(generate(pages=1, seed=3, requests=MAX_REQUESTS + 600)) == MAX_REQUESTS + 600
    assert len(generate(pages=2, seed=3, requests=MAX_REQUESTS + 1)) == 2 * (MAX_REQUESTS + 1)
    with pytest.raises(InputError, match="20,000") as err:
        generate(pages=1, requests=MAX_ASKED_REQUESTS + 1)
    assert "\n" not in str(err.value)
