"""Cross-stream compression: the body generator, the codecs on the real libraries, RFC 9842
framing and negotiation, the schemes, the size-oracle leak, the study, CLI and batch."""

import difflib
import hashlib
import json
import os
import random
import subprocess
import sys
import zlib
from dataclasses import replace
from pathlib import Path

import brotli
import pytest
import zstandard

from simulator.cli import main
from simulator.studies.crossstream.bodies import Codec, DecodeError, SchemeUnavailable, _brotli_dict, parse_codecs
from simulator.studies.crossstream.bodies import rfc9842 as r
from simulator.studies.crossstream.bodies.leak import Attack, make_setup
from simulator.studies.crossstream.bodies.schemes import (
    Request,
    SchemeRun,
    VerificationError,
    static_dictionaries,
    use_as_dictionary_for,
)
from simulator.errors import InputError
from simulator.studies import crossstream
from simulator.studies.crossstream import bodies

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "traces" / "synthetic-page.har"
SMALL = dict(html_pages=2, css_files=1, js_files=2, json_files=1, releases=3)


@pytest.fixture(scope="module")
def corpus():
    return bodies.generate(seed=3, **SMALL)


@pytest.fixture(scope="module")
def static():
    return static_dictionaries(bodies.generate(seed=99, **{**SMALL, "releases": 1}), 32768)


def _run_all(scheme, codec, scoping, corpus, static):
    run = SchemeRun(scheme, codec, scoping, static=static)
    rows = []
    for v, visit in enumerate(crossstream.visits(corpus)):
        run.new_connection()
        for b in visit:
            rows.append({**run.send(Request(b, b.origin)), "visit": v})
    return run, rows


# ---------------------------------------------------------------------------------------
# Bodies


def test_generator_is_deterministic_per_seed(corpus):
    again = bodies.generate(seed=3, **SMALL)
    assert again.content_hash() == corpus.content_hash()
    assert bodies.generate(seed=4, **SMALL).content_hash() != corpus.content_hash()


def test_releases_evolve_by_small_edits(corpus):
    rel = corpus.releases()
    assert len(rel) == 3
    for kind in ("js", "css"):
        a = next(b for b in rel[0] if b.kind == kind)
        b = next(x for x in rel[1] if x.resource == a.resource)
        assert a.data != b.data and a.url != b.url  # a new hashed URL per release
        assert difflib.SequenceMatcher(None, a.data, b.data, autojunk=False).quick_ratio() > 0.9


def test_secret_spans_hold_the_tokens(corpus):
    for b in corpus.bodies:
        if b.kind in ("html", "json"):
            assert len(b.secrets) == 1
            s, e = b.secrets[0]
            token = b.data[s:e]
            assert len(token) >= 24 and set(token) <= set(b"0123456789abcdef")
            assert b.data[:s].endswith(b"csrf_token=") or b.data[:s].endswith(b'"session":"')


def test_folder_round_trip_and_release_layout(corpus, tmp_path):
    bodies.write_folder(corpus, tmp_path / "site")
    loaded = bodies.load_folder(tmp_path / "site")
    assert len(loaded.releases()) == 3
    assert sorted(b.data for b in loaded.bodies) == sorted(b.data for b in corpus.bodies)


@pytest.mark.parametrize("make", ["missing", "file", "empty"])
def test_bad_body_folder_is_an_input_error(tmp_path, make):
    path = tmp_path / "x"
    if make == "file":
        path.write_text("hello")
    elif make == "empty":
        path.mkdir()
        (path / "notes.txt").write_text("no bodies")
    with pytest.raises(InputError) as err:
        bodies.load_folder(path)
    assert str(path) in str(err.value)


def test_trace_bodies_follow_the_trace_urls_and_types():
    from simulator.traces import load

    trace = load(PAGE)
    c = bodies.corpus_from_trace(trace, seed=1, releases=2)
    urls = {e.url for e in trace.exchanges}
    assert c.bodies and all(b.url in urls for b in c.bodies)
    assert {b.kind for b in c.bodies} <= set(bodies.KINDS)


@pytest.mark.parametrize(
    "path",
    [
        "/api?page=2",
        "/api?callback=ajax%3A2865",
        "/api?flag=false",
        "/api?q=",
        "/api?next=https%3A%2F%2Fx.example%2F",
        "/api?n=" + "9" * 5000,
        "/api",
    ],
)
def test_json_bodies_for_any_query_string(path):
    # real HARs put anything after the last '=': never a crash, the same bytes each time
    site = bodies.Site(random.Random(1), bodies.BodyParams(html_pages=0, css_files=0, js_files=0))
    data, spans = site.json_api(path, 2000, session="ab" * 12)
    assert json.loads(data)["session"] == "ab" * 12 and len(spans) == 1
    again, _ = bodies.Site(random.Random(1), site.p).json_api(path, 2000, session="ab" * 12)
    assert again == data
    if path == "/api?page=2":
        assert json.loads(data)["page"] == 2


# ---------------------------------------------------------------------------------------
# Codecs


@pytest.mark.parametrize("codec", [Codec("zlib", 6), Codec("brotli", 5), Codec("zstd", 3)], ids=str)
def test_codecs_round_trip_with_and_without_dictionary(codec, corpus):
    a, b = corpus.bodies[2].data, corpus.bodies[2 + len(corpus.releases()[0])].data
    for dictionary in (None, a):
        assert codec.decompress(codec.compress(b, dictionary), dictionary) == b
    assert len(codec.compress(b, a)) < len(codec.compress(b))


def test_brotli_prepared_dictionary_reused_gives_the_same_bytes_as_a_fresh_one(corpus):
    a, b = corpus.bodies[0].data, corpus.bodies[len(corpus.releases()[0])].data
    _brotli_dict.clear_prepared()
    for q in (1, 5, 11):
        fresh = _brotli_dict.compress(b, quality=q, dictionary=_brotli_dict.PreparedDictionary(a))
        first = _brotli_dict.compress(b, quality=q, dictionary=a)  # prepares and caches
        again = _brotli_dict.compress(b, quality=q, dictionary=bytes(a))  # equal bytes, another object
        assert first == again == fresh
        assert q < 5 or len(fresh) < len(brotli.compress(b, quality=q))  # (levels 0-1 ignore it)
        assert _brotli_dict.decompress(again, dictionary=a) == b
    assert _brotli_dict.prepared(bytes(a)) is _brotli_dict.prepared(a)  # one preparation per dictionary
    assert _brotli_dict.prepared(a) is not _brotli_dict.prepared(a, max_quality=5)


def test_brotli_prepared_dictionaries_dropped_from_the_cache_stay_valid_while_held(corpus, monkeypatch):
    monkeypatch.setattr(_brotli_dict, "PREPARED_CACHE_ENTRIES", 2)
    _brotli_dict.clear_prepared()
    body = corpus.bodies[1].data
    held = _brotli_dict.prepared(corpus.bodies[0].data)
    expected = _brotli_dict.compress(body, quality=5, dictionary=held)
    for other in corpus.bodies[2:6]:  # pushes ``held`` out of the cache
        _brotli_dict.compress(body, quality=5, dictionary=other.data)
    assert len(_brotli_dict._prepared) == 2 and held not in _brotli_dict._prepared.values()
    assert _brotli_dict.compress(body, quality=5, dictionary=held) == expected
    _brotli_dict.clear_prepared()
    assert not _brotli_dict._prepared and held._ptr  # still ours until dropped
    assert _brotli_dict.decompress(expected, dictionary=corpus.bodies[0].data) == body


def test_brotli_ctypes_path_drives_the_same_encoder_as_the_binding(corpus):
    data = corpus.bodies[0].data
    for q in (1, 5, 9):
        assert _brotli_dict.compress(data, quality=q, lgwin=22) == brotli.compress(data, quality=q, lgwin=22)


def test_brotli_wrong_dictionary_never_returns_the_body(corpus):
    a, b = corpus.bodies[2].data, corpus.bodies[2 + len(corpus.releases()[0])].data
    enc = Codec("brotli", 5).compress(b, a)
    try:
        out = Codec("brotli", 5).decompress(enc, a[::-1])
    except DecodeError:
        return
    assert out != b


def test_zlib_uses_only_the_last_32_kib_of_a_dictionary(corpus):
    """RFC 1951 section 2: back-references reach 32,768 bytes at most, so a dictionary's
    useful part pushed further back than that buys nothing."""
    body = corpus.bodies[len(corpus.releases()[0])].data  # page 1 of release 1
    useful = corpus.bodies[0].data  # page 1 of release 0

    def deflate(zdict=None):
        c = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=zdict) if zdict else zlib.compressobj(6, zlib.DEFLATED, -15)
        return len(c.compress(body) + c.flush())

    assert deflate(useful) < deflate() * 0.8
    assert deflate(useful + bytes(40_000)) == deflate()


def test_shared_context_streams_decode_response_by_response(corpus):
    for lib, level in (("zlib", 6), ("brotli", 5), ("zstd", 3)):
        pair = Codec(lib, level).stream()
        for b in corpus.releases()[0]:
            assert pair.decode(pair.encode(b.data)) == b.data


def test_brotli_streaming_decoder_returns_all_of_a_large_flushed_response():
    """After a flush the Brotli decoder hands out about 32 KiB per call: all of it must come out."""
    data = b"".join(hashlib.sha256(str(i).encode()).hexdigest().encode() for i in range(4000))
    pair = Codec("brotli", 5).stream()
    assert pair.decode(pair.encode(data)) == data


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("brotli", "needs a level"),
        ("brotli:12", "out of range"),
        ("gzip:5", "unknown compression library"),
        ("zstd:x", "integer"),
    ],
)
def test_bad_codec_lists_are_input_errors(text, fragment):
    with pytest.raises(InputError, match=fragment):
        parse_codecs(text)


def test_level_ranges_expand():
    assert [c.name for c in parse_codecs("zstd:1-3,zlib:9")] == ["zstd:1", "zstd:2", "zstd:3", "zlib:9"]


def test_missing_brotli_dictionary_api_makes_the_scheme_unavailable_not_a_crash(monkeypatch, corpus):
    monkeypatch.setattr(_brotli_dict, "_lib", None)
    monkeypatch.setattr(_brotli_dict, "_reason", "test: symbols missing")
    with pytest.raises(SchemeUnavailable, match="symbols missing"):
        SchemeRun("dcb", Codec("brotli", 5))
    params = crossstream.CrossstreamParams(schemes=("per-response", "dcb"), codecs="brotli:5", leak_lengths=())
    result = crossstream.run(corpus, params)
    assert {u["scheme"] for u in result.unavailable} == {"dcb"} and len(result.unavailable) == 3  # one per scoping
    assert list(result.summary["scheme"]) == ["per-response"]


# ---------------------------------------------------------------------------------------
# RFC 9842


def test_rfc9842_s4_dcb_header_is_magic_and_sha256(corpus):
    d, body = corpus.bodies[0].data, corpus.bodies[1].data
    enc = r.encode_dcb(body, d, quality=5)
    assert enc[:4] == b"\xff\x44\x43\x42" and enc[4:36] == hashlib.sha256(d).digest()
    assert r.decode_dcb(enc, {hashlib.sha256(d).digest(): d}) == body


def test_rfc9842_s5_dcz_header_is_a_skippable_frame_plain_zstd_skips(corpus):
    d, body = corpus.bodies[0].data, corpus.bodies[1].data
    enc = r.encode_dcz(body, d, level=3)
    assert enc[:8] == bytes.fromhex("5e2a4d1820000000") and enc[8:40] == hashlib.sha256(d).digest()
    zd = zstandard.ZstdCompressionDict(d, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    plain = zstandard.ZstdDecompressor(dict_data=zd).decompressobj(read_across_frames=True)
    assert plain.decompress(enc) == body  # an ordinary decoder skips the header
    assert r.decode_dcz(enc, {hashlib.sha256(d).digest(): d}) == body
    with pytest.raises(DecodeError, match="truncated"):
        r.decode_dcz(enc[:-4], {hashlib.sha256(d).digest(): d})


def test_rfc9842_s4_s5_unknown_dictionary_hash_cannot_be_decoded(corpus):
    d, body = corpus.bodies[0].data, corpus.bodies[1].data
    for enc, dec in ((r.encode_dcb(body, d, quality=5), r.decode_dcb), (r.encode_dcz(body, d, level=3), r.decode_dcz)):
        with pytest.raises(DecodeError, match="does not have"):
            dec(enc, {hashlib.sha256(b"other").digest(): b"other"})


def test_rfc9842_s5_dcz_window_limit():
    assert r.dcz_max_window_bytes(1000) == 8 << 20
    assert r.dcz_max_window_bytes(40 << 20) == 50 << 20
    assert r.dcz_max_window_bytes(200 << 20) == 128 << 20


def test_rfc9842_s2_2_available_dictionary_is_an_sf_byte_sequence():
    digest = hashlib.sha256(b"dictionary").digest()
    value = r.available_dictionary_value(digest)
    assert value.startswith(":") and value.endswith(":")
    assert r.parse_available_dictionary(value) == digest
    for bad in (":YWJj:", "abc", '"text"'):
        with pytest.raises(r.HeaderError):
            r.parse_available_dictionary(bad)


def test_rfc9842_s2_1_use_as_dictionary_defaults_and_validity():
    u = r.UseAsDictionary.parse('match="/app/*/main.js"')
    assert u.match_dest == () and u.id == "" and u.type == "raw"
    assert r.UseAsDictionary.parse(u.serialize()) == u
    with pytest.raises(r.HeaderError, match="required"):
        r.UseAsDictionary.parse('id="x"')
    with pytest.raises(r.HeaderError, match="regular expressions"):  # 2.1.1
        r.UseAsDictionary.parse('match="/app/(\\\\d+)/main.js"').pattern("https://a.example/app/1/main.js")


def test_rfc9842_s2_2_2_match_requires_same_origin_destination_and_pattern():
    d = r.StoredDictionary(
        "https://a.example/app/v1/main.js", r.UseAsDictionary("/app/*/main.js", ("script",)), b"x" * 100, 1
    )
    assert d.matches("https://a.example/app/v2/main.js", "script")
    assert not d.matches("https://b.example/app/v2/main.js", "script")  # another origin
    assert not d.matches("https://a.example/app/v2/main.js", "style")  # match-dest
    assert not d.matches("https://a.example/lib/v2/main.js", "script")  # pattern


def test_rfc9842_s2_1_1_a_trace_s_in_place_updates_match_their_own_url():
    """A trace's URLs stay the same across releases, some with no extension
    (``/gtag/js?id=...``): the designation matches the same path (any query), so the
    repeat visit's scripts and stylesheets are deltas against their previous versions."""
    from simulator.traces import load

    corpus = bodies.corpus_from_trace(load(PAGE), seed=1, releases=2)
    assets = [b for b in corpus.bodies if b.kind in ("js", "css")]
    assert any("." not in b.resource.split("?")[0].rsplit("/", 1)[-1] for b in assets)
    for b in assets:
        rule = use_as_dictionary_for(b)
        assert r.StoredDictionary(b.url, rule, b.data, 1).matches(b.url, b.destination), b.url
    versioned = next(b for b in bodies.generate(seed=1).bodies if b.kind == "js")
    assert use_as_dictionary_for(versioned).match.endswith(".*.js")  # name.HASH.js keeps its pattern


def test_rfc9842_s2_2_3_precedence_destination_then_longest_then_newest():
    c = r.DictionaryClient()
    c.on_response("https://a.example/a.js", [("use-as-dictionary", 'match="/*"')], b"1" * 64)
    c.on_response("https://a.example/b.js", [("use-as-dictionary", 'match="/app/*"')], b"2" * 64)
    assert c.best("https://a.example/app/x.js", "script").data == b"2" * 64  # longest match
    c.on_response("https://a.example/c.js", [("use-as-dictionary", 'match="/*", match-dest=("script")')], b"3" * 64)
    assert c.best("https://a.example/app/x.js", "script").data == b"3" * 64  # destination first
    c.on_response("https://a.example/d.js", [("use-as-dictionary", 'match="/*", match-dest=("script")')], b"4" * 64)
    assert c.best("https://a.example/app/x.js", "script").data == b"4" * 64  # most recent


def test_rfc9842_s2_1_4_unknown_type_is_not_used_and_s2_3_id_is_echoed():
    c = r.DictionaryClient()
    c.on_response("https://a.example/a.js", [("use-as-dictionary", 'match="/*", type=zip')], b"z" * 64)
    assert c.best("https://a.example/b.js", "script") is None
    c.on_response("https://a.example/a.js", [("use-as-dictionary", 'match="/*", id="v1"')], b"z" * 64)
    headers = dict(c.request_headers("https://a.example/b.js", "script"))
    assert headers["dictionary-id"] == '"v1"'


def test_rfc9842_s6_1_no_dictionary_encodings_without_a_dictionary():
    headers = dict(r.DictionaryClient().request_headers("https://a.example/b.js", "script"))
    assert "dcb" not in headers["accept-encoding"] and "available-dictionary" not in headers


@pytest.mark.parametrize(
    "request_h,response_h,allowed",
    [
        ({}, {}, True),
        ({"sec-fetch-site": "same-origin"}, {}, True),
        ({"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}, {}, True),
        ({"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors"}, {}, False),
        ({"sec-fetch-site": "cross-site", "sec-fetch-mode": "cors", "origin": "https://x.example"}, {}, False),
        (
            {"sec-fetch-site": "cross-site", "sec-fetch-mode": "cors", "origin": "https://x.example"},
            {"access-control-allow-origin": "*"},
            True,
        ),
        (
            {"sec-fetch-site": "cross-site", "sec-fetch-mode": "cors", "origin": "https://x.example"},
            {"access-control-allow-origin": "https://y.example"},
            False,
        ),
    ],
)
def test_rfc9842_s9_3_3_server_check(request_h, response_h, allowed):
    assert r.server_may_use_dictionary(request_h, response_h) is allowed


def test_rfc9842_negotiation_end_to_end_uses_the_previous_version(corpus):
    rel = corpus.releases()
    v1 = next(b for b in rel[0] if b.kind == "js")
    v2 = next(b for b in rel[1] if b.resource == v1.resource)
    run = SchemeRun("dcb", Codec("brotli", 5))
    first = run.send(Request(v1, v1.origin))
    second = run.send(Request(v2, v2.origin))
    assert first["content_coding"] == "br" and second["content_coding"] == "dcb"
    assert second["dictionary_bytes_used"] == len(v1.data)
    assert second["wire_bytes"] < first["wire_bytes"] / 5


# ---------------------------------------------------------------------------------------
# Schemes


def test_every_scheme_decodes_every_response_and_sharing_helps(corpus, static):
    totals = {}
    for scheme in ("per-response", "shared", "static-dict", "dynamic-dict", "dcb"):
        run, rows = _run_all(scheme, Codec("brotli", 5), "none", corpus, static)
        totals[scheme] = sum(r["wire_bytes"] for r in rows)
    assert totals["shared"] < totals["per-response"]
    assert totals["static-dict"] < totals["per-response"]
    assert totals["dynamic-dict"] < totals["static-dict"]
    assert totals["dcb"] < totals["shared"]


def test_a_wrong_decode_is_an_error_never_a_result(corpus, monkeypatch):
    monkeypatch.setattr(Codec, "decompress", lambda self, data, dictionary=None: b"garbage")
    with pytest.raises(VerificationError):
        SchemeRun("per-response", Codec("zlib", 6)).send(Request(corpus.bodies[0], corpus.bodies[0].origin))


def test_never_indexed_secrets_never_enter_a_dynamic_dictionary(corpus, static):
    run, _ = _run_all("dynamic-dict", Codec("zstd", 3), "never-indexed", corpus, static)
    tokens = [b.data[s:e] for b in corpus.bodies for s, e in b.secrets]
    for d in run.dynamic.values():
        assert not any(t in d for t in tokens)
    run, _ = _run_all("dynamic-dict", Codec("zstd", 3), "none", corpus, static)
    assert any(t in d for t in tokens for d in run.dynamic.values())


def test_shared_context_memory_is_the_window(corpus, static):
    run, rows = _run_all("shared", Codec("zlib", 6), "none", corpus, static)
    assert run.peak_server_bytes == 32768  # the deflate window
    run, rows = _run_all("per-response", Codec("zlib", 6), "none", corpus, static)
    assert run.peak_server_bytes == 0


# ---------------------------------------------------------------------------------------
# The leak


@pytest.fixture(scope="module")
def setup():
    return make_setup(6, seed=1)


@pytest.mark.parametrize("codec", [Codec("brotli", 5), Codec("zlib", 6)], ids=str)
def test_attack_recovers_the_secret_with_a_shared_context(setup, codec):
    result = Attack(setup, "shared", codec, "none").run()
    assert result.success and result.recovered == setup.secret
    assert result.queries >= 2 * 16 * len(setup.secret)  # two tries per candidate, per character


@pytest.mark.parametrize("scoping", ["context", "never-indexed"])
@pytest.mark.parametrize("scheme", ["shared", "dynamic-dict"])
def test_attack_fails_with_scoping_or_never_indexed_secrets(setup, scheme, scoping):
    result = Attack(setup, scheme, Codec("brotli", 5), scoping).run()
    assert not result.success and result.positions_found == 0


def test_attack_fails_without_cross_stream_state(setup):
    for scheme in ("per-response", "static-dict"):
        assert not Attack(setup, scheme, Codec("brotli", 5), "none").run().success


def test_rfc9842_s9_delta_leaks_unless_the_readability_checks_apply(setup):
    assert Attack(setup, "dcb", Codec("brotli", 5), "none").run().success
    assert not Attack(setup, "dcb", Codec("brotli", 5), "context").run().success  # 9.3.2, 9.3.3
    assert not Attack(setup, "dcb", Codec("brotli", 5), "never-indexed").run().success


def test_attack_is_deterministic_for_a_seed(setup):
    a = Attack(setup, "shared", Codec("zstd", 3), "none").run()
    b = Attack(make_setup(6, seed=1), "shared", Codec("zstd", 3), "none").run()
    assert (a.recovered, a.queries) == (b.recovered, b.queries)


@pytest.mark.parametrize("scheme", ["dcb", "dynamic-dict"])
def test_attack_result_does_not_depend_on_the_prepared_dictionary_cache(monkeypatch, scheme):
    setup, codec = make_setup(2, seed=1), Codec("brotli", 5)
    monkeypatch.setattr(_brotli_dict, "PREPARED_CACHE_ENTRIES", 0)  # every query prepares afresh
    _brotli_dict.clear_prepared()
    fresh = Attack(setup, scheme, codec, "none", max_alignments=3).run()
    monkeypatch.setattr(_brotli_dict, "PREPARED_CACHE_ENTRIES", 16)
    cached = Attack(setup, scheme, codec, "none", max_alignments=3).run()
    assert (fresh.recovered, fresh.queries) == (cached.recovered, cached.queries) and fresh.queries > 32


# ---------------------------------------------------------------------------------------
# The study, CLI, batch


def _small_params(**kw):
    base = dict(codecs="brotli:5,brotli:8,zstd:3", leak_lengths=(), releases=3)
    base.update(kw)
    return crossstream.CrossstreamParams(**base)


def test_study_summary_reference_and_transfer(corpus):
    result = crossstream.run(corpus, _small_params())
    s = result.summary.set_index(["scheme", "codec", "scoping"])
    assert s.loc[("per-response", "brotli:5", "none"), "gain_vs_per_response"] == pytest.approx(1.0)
    assert s.loc[("identity", "identity", "none"), "ratio"] == 1.0
    # compressed responses arrive sooner than identity ones on a 10 Mbit/s path
    assert (
        s.loc[("shared", "brotli:5", "none"), "mean_visit_s"] < s.loc[("identity", "identity", "none"), "mean_visit_s"]
    )
    assert "brotli5_dict_vs_brotli8" in result.reference
    assert "dcb brotli:5" in result.reference["delta_saving_percent_vs_plain"]
    # every response row carries its scheme, codec, scoping and visit
    assert set(result.responses.columns) >= {"scheme", "codec", "scoping", "visit", "wire_bytes"}
    assert result.cpu is None and "compress_ns" not in result.responses.columns


def test_study_leak_table(corpus):
    result = crossstream.run(corpus, _small_params(schemes=("shared",), codecs="brotli:5", leak_lengths=(3,)))
    leak = result.leak.set_index("scoping")
    assert bool(leak.loc["none", "recovered"]) and not bool(leak.loc["context", "recovered"])


def test_quick_leak_rows_are_the_full_leak_rows_of_each_scheme_s_first_codec():
    kw = dict(
        schemes=("per-response", "shared", "dcb", "dcz"),
        codecs="zlib:6,brotli:5,zstd:3",
        scopings=("none", "context"),
        leak_lengths=(2,),
        leak_alignments=2,
    )
    quick = crossstream.run_leak(crossstream.CrossstreamParams(**kw))
    full = crossstream.run_leak(crossstream.CrossstreamParams(**kw, leak_codecs="all"))
    assert {(s, c) for s, c in zip(quick["scheme"], quick["codec"])} == {
        ("per-response", "zlib:6"),
        ("shared", "zlib:6"),
        ("dcb", "brotli:5"),
        ("dcz", "zstd:3"),
    }
    assert len(full) > len(quick) == 7
    keys = ["scheme", "codec", "scoping", "secret_chars"]
    both = quick.merge(full, on=keys, suffixes=("", "_full"))
    assert len(both) == len(quick)
    for column in set(quick.columns) - set(keys):
        assert (both[column] == both[column + "_full"]).all(), column


def test_leak_in_a_background_process_gives_the_same_table(corpus):
    """The CLI runs the leak in a forked worker while the schemes run: same rows, same order."""
    params = _small_params(
        schemes=("per-response", "shared"),
        codecs="zlib:6",
        scopings=("none", "context"),
        leak_lengths=(2,),
        leak_alignments=2,
    )
    inline = crossstream.run(corpus, params)
    background = crossstream.run(corpus, replace(params, leak_in_background=True))
    assert len(inline.leak) == 3 and inline.leak.equals(background.leak)
    assert inline.summary.equals(background.summary)


def test_leak_worker_is_stopped_when_the_run_fails(corpus, monkeypatch):
    """An error in the schemes (here a corpus that cannot be read) ends the run at once:
    the forked leak worker is terminated, not waited for."""

    def broken(source, params):
        raise InputError("bodies.har: no bodies")

    monkeypatch.setattr(crossstream.study, "_corpus", broken)
    with pytest.raises(InputError, match="no bodies"):
        crossstream.run(corpus, _small_params(leak_lengths=(8,), leak_codecs="all", leak_in_background=True))


@pytest.mark.parametrize(
    "argv,lengths,codecs",
    [
        ([], (4,), "first"),
        (["--leak", "full"], (4, 8), "all"),
        (["--leak", "full", "--leak-lengths", "3"], (3,), "all"),
        (["--leak-lengths", "0"], (), "first"),
    ],
)
def test_cli_leak_attack_flags(argv, lengths, codecs):
    import argparse

    parser = argparse.ArgumentParser()
    crossstream.add_arguments(parser)
    params = crossstream.params_from_args(parser.parse_args(argv))
    assert (params.leak_lengths, params.leak_codecs) == (lengths, codecs)


def test_cpu_is_measured_only_when_asked(corpus):
    result = crossstream.run(corpus, _small_params(schemes=("per-response",), codecs="zstd:3", measure_cpu=True))
    assert result.cpu["compress_ns_per_byte"].iloc[0] > 0
    assert "cpu_wall_time_of_this_machine" in result.to_dict()


@pytest.mark.parametrize(
    "kw,fragment",
    [
        (dict(schemes=("nope",)), "unknown scheme"),
        (dict(scopings=("nope",)), "unknown scoping"),
        (dict(codecs="lz4:1"), "unknown compression library"),
        (dict(rtt_s=0), "RTT"),
        (dict(leak_lengths=(0,)), "secret lengths"),
        (dict(loss="x"), "loss"),
    ],
)
def test_bad_parameters_are_input_errors(kw, fragment):
    with pytest.raises(InputError, match=fragment):
        crossstream.CrossstreamParams(**kw)


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["--codecs", "brotli:99"], "out of range"),
        (["--scheme", "gzip"], "unknown scheme"),
        (["--bodies", "/nonexistent/folder"], "no such folder"),
        (["--leak-lengths", "a,b"], "integers"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, fragment):
    assert main(["crossstream", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err


def test_cli_json_on_a_body_folder_and_on_a_trace(tmp_path, capsys):
    assert main(["crossstream-bodies", str(tmp_path / "b"), "--seed", "2", "--releases", "2"]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "crossstream",
                "--bodies",
                str(tmp_path / "b"),
                "--codecs",
                "zstd:3",
                "--scheme",
                "per-response,dcz",
                "--leak-lengths",
                "0",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert {row["scheme"] for row in out["summary"]} == {"per-response", "dcz"}
    assert out["source"]["visits"] == 2
    assert (
        main(
            [
                "crossstream",
                "--trace",
                str(PAGE),
                "--codecs",
                "zlib:6",
                "--scheme",
                "per-response,shared",
                "--scoping",
                "none",
                "--releases",
                "1",
                "--leak-lengths",
                "0",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["source"]["source"] == str(PAGE)


def _cli_json(hash_seed: str, folder: Path) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulator.cli",
            "crossstream",
            "--bodies",
            str(folder),
            "--codecs",
            "brotli:5,zlib:6",
            "--scheme",
            "shared,dynamic-dict,dcb",
            "--leak-lengths",
            "2",
            "--json",
        ],
        env=env,
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


def test_same_seed_byte_identical_json_across_processes_and_hash_seeds(tmp_path):
    bodies.write_folder(bodies.generate(seed=5, **{**SMALL, "releases": 2}), tmp_path / "b")
    assert _cli_json("0", tmp_path / "b") == _cli_json("12345", tmp_path / "b")


def test_batch_runs_crossstream_over_a_trace(tmp_path):
    from simulator.batch import load
    from simulator.batch.runner import run_batch

    grid = tmp_path / "grid.toml"
    grid.write_text(
        'codecs = ["zstd:3"]\nscheme = ["per-response,shared"]\nscoping = ["none"]\n'
        'releases = [1]\nleak-lengths = ["0"]\n'
    )
    report = run_batch("crossstream", str(PAGE), str(grid), 1, out=tmp_path / "out", workers=0, progress=False)
    assert report.failed == 0
    df = load(tmp_path / "out")
    assert set(df["scheme"]) == {"per-response", "shared"} and (df["seed"] == 1).all()


# Real HARs from several producers (Chrome, Firefox, WebPageTest, Browsertime); CI puts
# shared/ beside the clone.
HAR_REAL = ROOT.parent / "shared" / "traces" / "har-real"
HAR_REAL_FILES = sorted(HAR_REAL.glob("*.har")) if HAR_REAL.is_dir() else []
# One file of each producer in `make test` (query strings that crashed the body generator
# among them); every file under `make test-slow`.
HAR_REAL_SAMPLE = {
    "contentTypes_linkedin.har",
    "http_http2-firefox.har",
    "redirect_mousel.lu.har",
    "sitespeed_browsertime-recalculate-style.har",
    "www.sitespeed.io-redirecting-to-https.har",
}


@pytest.mark.skipif(not HAR_REAL_FILES, reason=f"no real HARs in {HAR_REAL}")
@pytest.mark.parametrize(
    "path",
    [p if p.name in HAR_REAL_SAMPLE else pytest.param(p, marks=pytest.mark.slow) for p in HAR_REAL_FILES],
    ids=lambda p: p.name,
)
def test_cli_on_every_real_har_answers_or_says_why_in_one_line(path, capsys):
    # every scheme and scoping; low levels, two visits and no leak keep it short (the
    # leak does not read the trace)
    rc = main(
        [
            "crossstream",
            "--trace",
            str(path),
            "--codecs",
            "brotli:1,zstd:1",
            "--releases",
            "2",
            "--leak-lengths",
            "0",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert rc in (0, 2), err[-2000:]
    if rc == 2:
        assert len(err.strip().splitlines()) == 1 and str(path) in err
    else:
        result = json.loads(out)
        assert result["source"]["bodies"] > 0 and result["summary"]


def test_cli_trace_without_text_responses_exits_2_with_one_line(tmp_path, capsys):
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": "t", "version": "1"},
            "entries": [
                {
                    "startedDateTime": "2024-01-01T00:00:00.000Z",
                    "time": 10,
                    "request": {
                        "method": "GET",
                        "url": "https://x.example/a.png",
                        "httpVersion": "h2",
                        "headers": [],
                        "queryString": [],
                        "cookies": [],
                        "headersSize": -1,
                        "bodySize": 0,
                    },
                    "response": {
                        "status": 200,
                        "statusText": "",
                        "httpVersion": "h2",
                        "cookies": [],
                        "redirectURL": "",
                        "headers": [{"name": "content-type", "value": "image/png"}],
                        "headersSize": -1,
                        "bodySize": 100,
                        "content": {"size": 100, "mimeType": "image/png"},
                    },
                    "cache": {},
                    "timings": {"send": 0, "wait": 5, "receive": 5},
                }
            ],
        }
    }
    path = tmp_path / "images.har"
    path.write_text(json.dumps(har))
    assert main(["crossstream", "--trace", str(path), "--leak-lengths", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "images.har" in err and "no HTML" in err


def test_delta_saving_compares_each_delta_codec_with_its_own_plain_codec(corpus):
    kw = dict(schemes=("per-response", "dcb", "dcz"), scopings=("none",))
    both = crossstream.run(corpus, _small_params(codecs="brotli:5,brotli:8,zstd:3", **kw))
    deltas = both.reference["delta_saving_percent_vs_plain"]
    assert set(deltas) == {"dcb brotli:5", "dcb brotli:8", "dcz zstd:3"}
    rep = both.responses[both.responses["visit"] > 0]
    for key, by_kind in deltas.items():
        scheme, codec = key.split()
        for kind, saving in by_kind.items():
            rows = rep[(rep["codec"] == codec) & (rep["kind"] == kind)]
            delta = rows[rows["scheme"] == scheme][["wire_bytes", "overhead_bytes"]].to_numpy().sum()
            plain = rows[rows["scheme"] == "per-response"][["wire_bytes", "overhead_bytes"]].to_numpy().sum()
            assert saving == pytest.approx(100 - 100 * delta / plain, abs=0.01)
            assert saving < 100
    # another Brotli level in the run changes nothing for brotli:5
    alone = crossstream.run(corpus, _small_params(codecs="brotli:5,zstd:3", **kw))
    assert alone.reference["delta_saving_percent_vs_plain"]["dcb brotli:5"] == deltas["dcb brotli:5"]
