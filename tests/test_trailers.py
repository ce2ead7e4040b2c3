"""The trailers study (RFC 9110 section 6.5; the question is in ``simulator/studies/trailers/``)
and the hop model it runs on.

The assertions are the physics and the protocol rules a faithful model must show:
buffering a body produced slower than the link adds about body/rate to the time to
first byte and streaming with trailers does not (RFC 9110 section 6.5); without
``TE: trailers`` a conforming intermediary drops the trailer section or merges what
may be merged (RFC 9110 section 6.5.1, RFC 9112 section 7.1.2); the bytes of the
HTTP/1.1 chunked trailer section are RFC 9112 section 7.1's (checked against h11),
and the trailer HEADERS frames are exactly what the real h2 (RFC 9113 section 8.1)
and aioquic (RFC 9114 section 4.1) emit; the transport models agree with the real stacks.
"""

import base64
import json
import math
from dataclasses import replace

import h2.config
import h2.connection
import h11
import pytest

from simulator.cli import main
from simulator.errors import InputError
from simulator.frames import H2Scanner
from simulator.hops import fields as hfields
from simulator.hops.chain import ChainConfig, ResponsePlan, run_chain
from simulator.http.framing import Framer, grpc_web_trailer_frame
from simulator.studies import trailers
from simulator.studies.trailers import TrailersParams

MD = ((b"content-digest", b"sha-256=:" + base64.b64encode(hfields.body_digest(1000)) + b":"), (b"grpc-status", b"0"))
REQ = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"server.example"), (b":path", b"/r/0"))


def _run(**kw):
    return trailers.run(None, TrailersParams(**kw))


def _row(result, version, strategy, stack="model", response=0):
    df = result.responses
    sel = df[
        (df["http_version"] == version)
        & (df["strategy"] == strategy)
        & (df["stack"] == stack)
        & (df["response"] == response)
    ]
    assert len(sel) == 1
    return sel.iloc[0]


# ---------------------------------------------------------------------------------------
# Physics: buffering vs streaming


@pytest.mark.parametrize("version", ["h1", "h2", "h3"])
def test_rfc9110_6_5_buffering_adds_body_over_rate_to_ttfb_trailers_do_not(version):
    """A body produced at R = 100 kB/s (link 10 Mbit/s = 1.25 MB/s): buffering it to put
    the metadata in the header section delays the first byte by about body/R; a
    trailer section (and in-body metadata) leaves the first byte at one RTT and makes
    the metadata known about body/R after the request."""
    body, rate, rtt = 200_000, 100_000.0, 0.05
    r = _run(versions=(version,), body_bytes=body, rate_bytes_per_s=rate, rtt_s=rtt)
    buffer, trailer, inbody = (_row(r, version, s) for s in ("buffer", "trailer", "in-body"))
    produce = body / rate  # 2 s
    assert buffer["ttfb_s"] == pytest.approx(produce + rtt, rel=0.02)
    assert trailer["ttfb_s"] == pytest.approx(rtt, abs=0.005)
    assert inbody["ttfb_s"] == pytest.approx(rtt, abs=0.005)
    # The metadata: in the header section for buffer, at the end for the others.
    assert buffer["metadata_s"] == buffer["ttfb_s"] and buffer["metadata_where"] == "headers"
    assert trailer["metadata_s"] == pytest.approx(produce + rtt, rel=0.02)
    assert trailer["metadata_where"] == "trailers" and inbody["metadata_where"] == "body"
    # Streaming ends sooner: the body crossed the link while it was being produced.
    assert trailer["ttlb_s"] < buffer["ttlb_s"] - 0.1
    # The buffering server held the whole body; the streaming one about what one
    # round trip and one chunk hold at R.
    assert buffer["origin_held_max_bytes"] == body
    assert trailer["origin_held_max_bytes"] < 0.2 * body


def test_buffering_costs_less_as_the_rate_grows_and_nothing_when_the_body_is_ready():
    """The added first-byte delay scales as body/R; with the body ready at once the two
    strategies have the same first byte."""
    body = 300_000
    added = {}
    for rate in (100_000.0, 200_000.0):
        r = _run(versions=("h2",), strategies=("buffer", "trailer"), body_bytes=body, rate_bytes_per_s=rate)
        added[rate] = _row(r, "h2", "buffer")["ttfb_s"] - _row(r, "h2", "trailer")["ttfb_s"]
        assert added[rate] == pytest.approx(body / rate, rel=0.03)
    assert added[100_000.0] == pytest.approx(2 * added[200_000.0], rel=0.03)
    r = _run(versions=("h2",), strategies=("buffer", "trailer"), body_bytes=body, rate_bytes_per_s=None)
    assert _row(r, "h2", "buffer")["ttfb_s"] == pytest.approx(_row(r, "h2", "trailer")["ttfb_s"], abs=0.003)


# ---------------------------------------------------------------------------------------
# Intermediaries


@pytest.mark.parametrize("policy", ["pass", "merge", "store"])
def test_rfc9110_6_5_1_without_te_trailers_a_conforming_hop_drops_or_merges(policy):
    """No TE: trailers from the client: no hop may hand it a trailer section.  ``pass``
    discards it; ``merge`` and ``store`` buffer the message and merge only the fields whose
    definition permits it (Content-Digest, RFC 9530 section 2), dropping grpc-status."""
    r = _run(hops=(policy,), te_trailers=0.0, strategies=("trailer",), body_bytes=100_000)
    for version in ("h1", "h2", "h3"):
        row = _row(r, version, "trailer")
        assert not row["te"] and not row["te_at_origin"]  # TE is hop-by-hop (RFC 9110 7.6.1)
        assert math.isnan(row["trailers_s"]) and row["trailer_bytes"] == 0
        assert row["status_lost"] and row["lost_fields"].split(",")[-1] == "grpc-status"
        if policy == "pass":
            assert row["fields_delivered"] == 0 and row["integrity_lost"]
        else:
            assert row["metadata_where"] == "headers" and not row["integrity_lost"]
            assert row["fields_delivered"] == 1
    hops = r.hops
    assert (hops["trailer_fields_out"] == 0).all()
    assert (hops["dropped"].str.contains("grpc-status")).all()
    assert (hops["merged"] == ("" if policy == "pass" else "content-digest")).all()


def test_with_te_trailers_a_passing_hop_forwards_them_and_a_dropping_one_does_not():
    r = _run(hops=("pass", "merge"), te_trailers=1.0, strategies=("trailer",), body_bytes=50_000)
    for version in ("h1", "h2", "h3"):
        row = _row(r, version, "trailer")
        assert row["te_at_origin"] and row["metadata_where"] == "trailers" and row["fields_lost"] == 0
    r = _run(hops=("drop",), te_trailers=1.0, strategies=("trailer", "buffer", "in-body"), body_bytes=50_000)
    for version in ("h1", "h2", "h3"):
        dropped = _row(r, version, "trailer")
        assert not dropped["te_at_origin"]  # a dropping hop never says TE: trailers
        assert dropped["fields_delivered"] == 0 and dropped["integrity_lost"] and dropped["status_lost"]
        # Metadata in the header section or in the body survives the same hop.
        assert _row(r, version, "buffer")["fields_lost"] == 0
        assert _row(r, version, "in-body")["fields_lost"] == 0
    assert r.summary.set_index(["http_version", "strategy"]).loc[("h2", "trailer"), "metadata_lost_responses"] == 1


def test_a_merging_hop_must_buffer_its_memory_and_added_latency():
    """Merging needs the whole message: the hop holds the whole body and its header
    section waits for the last byte, so the first byte at the client comes about
    body/R later than through a streaming hop."""
    body, rate = 200_000, 100_000.0
    merged = _run(
        hops=("merge",),
        te_trailers=0.0,
        strategies=("trailer",),
        versions=("h2",),
        body_bytes=body,
        rate_bytes_per_s=rate,
    )
    passed = _run(
        hops=("pass",),
        te_trailers=0.0,
        strategies=("trailer",),
        versions=("h2",),
        body_bytes=body,
        rate_bytes_per_s=rate,
    )
    m, p = _row(merged, "h2", "trailer"), _row(passed, "h2", "trailer")
    assert m["hops_held_max_bytes"] == body
    assert p["hops_held_max_bytes"] < 0.2 * body
    assert m["hops_hold_s"] == pytest.approx(body / rate, rel=0.03) and p["hops_hold_s"] == 0
    assert m["ttfb_s"] - p["ttfb_s"] == pytest.approx(body / rate, rel=0.03)
    assert bool(merged.hops.iloc[0]["buffered"]) and not bool(passed.hops.iloc[0]["buffered"])


def test_a_chain_of_hops_adds_up_memory_and_latency():
    one = _run(hops=("store",), strategies=("trailer",), versions=("h2",), body_bytes=100_000)
    three = _run(hops=("store", "pass", "store"), strategies=("trailer",), versions=("h2",), body_bytes=100_000)
    a, b = _row(one, "h2", "trailer"), _row(three, "h2", "trailer")
    assert b["hops_held_sum_bytes"] >= 2 * 100_000 and a["hops_held_sum_bytes"] >= 100_000
    assert b["ttfb_s"] > a["ttfb_s"]
    assert b["metadata_where"] == "trailers"  # TE: trailers all the way


def test_te_draws_are_seeded_and_shared_by_strategies_and_versions():
    r = _run(
        responses=40,
        te_trailers=0.5,
        hops=("pass",),
        strategies=("trailer", "in-body"),
        versions=("h1", "h3"),
        body_bytes=2000,
        spacing_s=0.2,
    )
    df = r.responses
    per_response = df.groupby("response")["te"].nunique()
    assert (per_response == 1).all()  # the same draw everywhere
    te = df[(df["http_version"] == "h1") & (df["strategy"] == "trailer")].set_index("response")["te"]
    assert 5 < te.sum() < 35
    lost = df[(df["strategy"] == "trailer")].set_index(["http_version", "response"])["fields_lost"] > 0
    assert (lost.xs("h3") == ~te).all()  # lost exactly where TE was absent
    other = _run(
        responses=40,
        te_trailers=0.5,
        hops=("pass",),
        strategies=("trailer",),
        versions=("h1",),
        body_bytes=2000,
        spacing_s=0.2,
        seed=2,
    )
    assert list(other.responses["te"]) != list(te)


# ---------------------------------------------------------------------------------------
# Bytes on the wire, from the real codecs


def test_rfc9112_7_1_chunked_body_and_trailer_section_bytes_match_h11():
    """HTTP/1.1 is written by hand; h11 writes the same message byte for byte (field-name
    case aside: h11 writes its own Transfer-Encoding)."""
    framer = Framer("h1")
    head = ((b":status", b"200"), (b"content-type", b"text/plain"), (b"trailer", b"content-digest, grpc-status"))
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"GET /r/0 HTTP/1.1\r\nhost: server.example\r\n\r\n")
    conn.next_event()
    wire = conn.send(
        h11.Response(
            status_code=200, reason=b"OK", headers=[(n, v) for n, v in head[1:]] + [(b"transfer-encoding", b"chunked")]
        )
    )
    assert framer.head(1, head, chunked=True).block.lower() == wire.lower()
    for n in (1, 15, 16, 4096, 16384, 100_000):
        before, after = framer.data_overhead(n, chunked=True)
        assert before + n + after == len(conn.send(h11.Data(data=b"x" * n)))
    trailer = framer.trailers(1, MD)
    assert trailer.block == conn.send(h11.EndOfMessage(headers=list(MD)))
    assert trailer.block.startswith(b"0\r\n") and trailer.block.endswith(b"\r\n\r\n")
    assert framer.end_bytes(chunked=True) == len(b"0\r\n\r\n")
    # The request: TE is hop-by-hop, so HTTP/1.1 names it in Connection (RFC 9110 10.1.4).
    client = h11.Connection(h11.CLIENT)
    wire = client.send(
        h11.Request(
            method="GET", target="/r/0", headers=[("host", "server.example"), ("te", "trailers"), ("connection", "te")]
        )
    )
    assert framer.head(0, REQ + ((b"te", b"trailers"),)).block == wire


def test_rfc9113_8_1_trailer_bytes_on_h2_equal_the_HEADERS_frame_real_h2_emits():
    """The final HEADERS frame with END_STREAM that h2 writes for the trailer section has
    exactly the model's size (same HPACK context: the response headers came first)."""
    md = hfields.metadata_fields(
        ("digest", "signature", "status", "timing"), body_bytes=1000, production_s=0.5, in_trailers=True
    )
    head = (
        (b":status", b"200"),
        (b"content-type", b"application/octet-stream"),
        (b"trailer", b"content-digest, signature-input, signature, grpc-status, server-timing"),
    )
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
    client.initiate_connection()
    server.initiate_connection()
    server.receive_data(client.data_to_send())
    client.send_headers(1, list(REQ), end_stream=True)
    server.receive_data(client.data_to_send())
    server.data_to_send()
    server.send_headers(1, list(head))
    server.send_data(1, b"x" * 1000)
    server.send_headers(1, list(md), end_stream=True)
    scanner = H2Scanner(16384, preface=False, validate=False)
    assert scanner.feed(server.data_to_send())
    headers = [(flags, length) for ftype, flags, _, _, length in scanner.results() if ftype == 0x1]
    assert len(headers) == 2 and headers[1][0] & 0x1  # END_STREAM on the trailers
    framer = Framer("h2")
    assert framer.head(1, head).wire_bytes == 9 + headers[0][1]
    assert framer.trailers(1, md).wire_bytes == 9 + headers[1][1]


@pytest.mark.parametrize("version", ["h2", "h3"])
def test_header_and_trailer_bytes_of_model_and_real_stacks_are_the_same(version):
    """RFC 9113 8.1 / RFC 9114 4.1: the model's HPACK / QPACK sections have exactly the size
    of the HEADERS frames the real h2 and aioquic wrote (and the same encoder-stream bytes)."""
    r = _run(
        versions=(version,),
        stack="both",
        strategies=("buffer", "trailer"),
        body_bytes=30_000,
        metadata=("digest", "signature", "status", "timing"),
        responses=2,
        spacing_s=0.5,
        rate_bytes_per_s=200_000.0,
    )
    cols = ["head_bytes", "head_encoder_bytes", "trailer_bytes", "trailer_encoder_bytes"]
    for strategy in ("buffer", "trailer"):
        for i in (0, 1):
            model, real = _row(r, version, strategy, "model", i), _row(r, version, strategy, "real", i)
            assert [model[c] for c in cols] == [real[c] for c in cols]
    assert _row(r, version, "trailer", "real")["trailer_bytes"] > 100


def test_in_body_metadata_is_a_grpc_web_trailer_message():
    frame = grpc_web_trailer_frame(((b"Grpc-Status", b"0"), (b"content-digest", b"sha-256=:x:")))
    assert frame[0] == 0x80
    assert int.from_bytes(frame[1:5], "big") == len(frame) - 5
    assert frame[5:] == b"grpc-status: 0\r\ncontent-digest: sha-256=:x:\r\n"  # lower-case, no empty line
    r = _run(versions=("h3",), strategies=("in-body",), body_bytes=16384 * 3 + 10, chunk_bytes=16384)
    row = _row(r, "h3", "in-body")
    md = hfields.metadata_fields(("digest", "status"), body_bytes=16384 * 3 + 10, production_s=0, in_trailers=False)
    # Four messages of 5-byte prefixes, the metadata message, and one DATA frame per write.
    assert row["http_bytes"] - row["head_bytes"] - row["data_framing_bytes"] == (
        16384 * 3 + 10 + 4 * 5 + len(grpc_web_trailer_frame(md))
    )


def test_metadata_fields_are_real_digests_and_signatures_and_only_the_digest_may_be_merged():
    md = dict(hfields.metadata_fields(("digest", "signature"), body_bytes=10, production_s=0, in_trailers=True, seed=4))
    import hashlib

    assert md[b"content-digest"] == b"sha-256=:" + base64.b64encode(hashlib.sha256(b"x" * 10).digest()) + b":"
    params = md[b"signature-input"][len(b"sig1=") :]
    assert b'"content-digest";tr' in params  # RFC 9421 2.1: taken from the trailers
    base = b'"@status": 200\n"content-digest";tr: ' + md[b"content-digest"] + b'\n"@signature-params": ' + params
    signature = base64.b64decode(md[b"signature"][len(b"sig1=:") : -1])
    hfields.signing_key(4).public_key().verify(signature, base)  # raises if wrong
    assert hfields.mergeable(b"content-digest")
    for name in (b"signature", b"signature-input", b"grpc-status", b"server-timing"):
        assert not hfields.mergeable(name)


# ---------------------------------------------------------------------------------------
# Models vs real stacks


@pytest.mark.parametrize("version", ["h2", "h3"])
def test_transport_models_agree_with_the_real_stacks(version):
    """No loss: first byte, metadata and last byte within 5% (or 5 ms) of the real stack,
    for each strategy; the real stack's body really is produced over time."""
    r = _run(versions=(version,), stack="both", body_bytes=150_000, rate_bytes_per_s=300_000.0)
    for strategy in trailers.STRATEGIES:
        model, real = _row(r, version, strategy, "model"), _row(r, version, strategy, "real")
        for col in ("ttfb_s", "metadata_s", "ttlb_s"):
            assert real[col] == pytest.approx(model[col], rel=0.05, abs=0.005), (strategy, col)
        assert real["metadata_where"] == model["metadata_where"]
    assert _row(r, version, "buffer", "real")["ttfb_s"] > 0.5  # waited for 150 kB at 300 kB/s


def test_model_chain_decodes_every_section_with_the_real_decoders():
    """A section the receiving decoder cannot read is an error, never a size."""
    from simulator.http import framing

    original = framing.Unframer._check

    def strict(stream_id, got, expected):
        original(stream_id, got, expected[:-1] + ((expected[-1][0], b"tampered"),))

    plan = ResponsePlan(0, 0.0, REQ, ((b":status", b"200"),), 1000, trailers=MD, metadata=MD)
    run_chain([plan], ChainConfig(version="h2"))
    framing.Unframer._check = staticmethod(strict)
    try:
        with pytest.raises(RuntimeError, match="decoded to"):
            run_chain([plan], ChainConfig(version="h2"))
    finally:
        framing.Unframer._check = staticmethod(original)


def test_h3_sections_survive_loss_on_the_qpack_streams():
    r = _run(
        versions=("h3",),
        responses=12,
        spacing_s=0.05,
        loss="0.05",
        body_bytes=20_000,
        seed=3,
        strategies=("trailer",),
        metadata=("digest", "signature", "status", "timing"),
    )
    df = r.responses
    assert (df["fields_lost"] == 0).all() and df["ttlb_s"].notna().all()
    assert r.summary["packets_lost"].sum() > 0


# ---------------------------------------------------------------------------------------
# Determinism, rows, CLI, batch


def test_same_seed_same_result_every_row_carries_its_parameters():
    p = TrailersParams(versions=("h1", "h3"), loss="0.02", responses=3, seed=7, te_trailers=0.5, hops=("pass",))
    a, b = trailers.run(None, p), trailers.run(None, p)
    assert a.to_json() == b.to_json()
    assert a.responses.equals(b.responses)
    c = trailers.run(None, replace(p, seed=8))
    assert c.to_json() != a.to_json()
    for col in ("seed", "rtt_s", "loss", "rate_bytes_per_s", "hops", "te_trailers", "metadata"):
        assert col in a.responses.columns and col in a.hops.columns
    assert (a.responses["seed"] == 7).all() and a.params["seed"] == 7


def test_cli_json_and_one_line_errors(capsys):
    assert main(["trailers", "--versions", "h2", "--body", "64KiB", "--rate", "1MB/s", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["strategy"] for r in out["summary"]} == set(trailers.STRATEGIES)
    assert out["params"]["rate_bytes_per_s"] == 1e6 and out["params"]["body_bytes"] == 65536
    assert main(["trailers", "--versions", "h1", "--hops", "merge", "--te", "0"]) == 0
    assert "merge" in capsys.readouterr().out
    for argv in (
        ["--rate", "fast"],
        ["--rate", "0"],
        ["--hops", "pass,teleport"],
        ["--te", "2"],
        ["--te", "x"],
        ["--versions", "h9"],
        ["--strategy", "smoke"],
        ["--metadata", "signature"],
        ["--stack", "real", "--hops", "pass"],
        ["--stack", "real", "--versions", "h1"],
        ["--body", "-5"],
        ["--loss", "lots"],
        ["--rtt", "0ms"],
        ["--trace", "/nonexistent.har"],
    ):
        assert main(["trailers", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("workbench: error:") and err.count("\n") == 1 and "Traceback" not in err


def test_a_run_past_the_work_limit_is_refused_up_front_in_one_line(capsys):
    """Issue 33: the work (responses x runs, bodies counted per 64 KiB) is counted before anything
    is simulated; past ``MAX_WORK_UNITS`` the run is an InputError naming the trace, exit 2."""
    from simulator.studies.trailers import study
    from simulator.traces import load

    # 100,000 default 256 KiB responses x 9 model runs: 4.5 million units
    assert main(["trailers", "--responses", "100000", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "100,000 response(s) x 9 run(s)" in err and "--versions" in err
    trace = load("traces/synthetic-page.har")
    params = TrailersParams(versions=("h2",), strategies=("trailer",), stack="both")
    jobs = [("model", "h2", "trailer"), ("real", "h2", "trailer")]
    exchanges = study.make_exchanges(trace, params)
    units = study.work_units(exchanges, jobs)
    weight = study.RUN_WEIGHT
    assert units == pytest.approx(
        (weight[("model", "h2")] + weight[("real", "h2")])
        * study.work_units(exchanges, [("model", "h1", "trailer")])
        / weight[("model", "h1")]
    )
    with pytest.raises(InputError, match="synthetic-page.har: .* above the limit of"):
        trailers.run(trace, replace(params, max_work_units=int(units) - 1))
    assert len(trailers.run(trace, replace(params, max_work_units=int(units) + 1)).summary)
    # --max-work raises it; the limit is not a parameter of the result
    assert "max_work_units" not in params.to_dict()
    assert main(["trailers", "--responses", "100000", "--max-work", "0", "--json"]) == 2
    assert "--max-work" in capsys.readouterr().err


def test_byte_rate_units():
    assert trailers.parse_byte_rate("500kB/s") == 500_000
    assert trailers.parse_byte_rate("2MiB/s") == 2 * 1024 * 1024
    assert trailers.parse_byte_rate("8mbit") == 1e6
    assert trailers.parse_byte_rate("1234") == 1234
    assert trailers.parse_byte_rate("inf") is None
    with pytest.raises(InputError):
        trailers.parse_byte_rate("quick")


def test_a_trace_gives_the_responses(tmp_path):
    from simulator.traces import load

    trace = load("traces/synthetic-page.har")
    r = trailers.run(
        trace, TrailersParams(versions=("h2",), strategies=("trailer",), rate_bytes_per_s=None, spacing_s=0.01)
    )
    n = sum(1 for e in trace.exchanges if e.request_headers is not None)
    assert len(r.responses) == n and r.trace["content_hash"] == trace.content_hash()
    sizes = sorted(r.responses["body_bytes"].tolist())
    assert sizes == sorted(e.response_body_bytes for e in trace.exchanges if e.request_headers is not None)
    # One HPACK context for the connection: later trailer sections reuse indexed names.
    tb = r.responses.sort_values("response")["trailer_bytes"].tolist()
    assert min(tb[1:]) < tb[0]


def test_batch_runs_the_study(tmp_path):
    from simulator.batch import load
    from simulator.batch.runner import run_batch

    grid = tmp_path / "grid.toml"
    grid.write_text('rate = ["100kB/s", "inf"]\nhops = ["", "drop"]\nversions = ["h2"]\nbody = ["20KB"]\n')
    report = run_batch(
        "trailers",
        "traces/synthetic-page.har",
        str(grid),
        1,
        out=str(tmp_path / "out"),
        workers=0,
        tables=["summary", "hops"],
        progress=False,
    )
    assert report.failed == 0
    df = load(str(tmp_path / "out"))
    assert len(df) == 4 * 3 and set(df["strategy"]) == set(trailers.STRATEGIES)
    lost = df[(df["strategy"] == "trailer")].groupby("grid")["metadata_lost_responses"].sum()
    assert all((v > 0) == ('"drop"' in g) for g, v in lost.items())


@pytest.mark.slow
@pytest.mark.parametrize("version", ["h2", "h3"])
def test_under_loss_models_and_real_stacks_agree_over_many_seeds(version):
    """1% loss, 30 seeds of 4 responses: mean time to metadata within 10%."""
    rows = []
    for seed in range(1, 31):
        r = _run(
            versions=(version,),
            stack="both",
            loss="0.01",
            seed=seed,
            body_bytes=131_072,
            rate_bytes_per_s=500_000.0,
            responses=4,
            spacing_s=1.0,
            strategies=("trailer",),
        )
        rows.append(r.responses)
    import pandas as pd

    means = pd.concat(rows).groupby("stack")["metadata_s"].mean()
    assert means["real"] == pytest.approx(means["model"], rel=0.10)


def test_rfc9110_6_6_2_a_merging_hop_buffers_only_responses_that_announce_trailers():
    """Without TE: trailers, ``merge`` buffers a response whose Trailer field announces a
    trailer section; in-body metadata and a header-section digest stream straight through;
    an unannounced trailer section can only be discarded."""
    body, rate = 100_000, 100_000.0
    r = _run(hops=("merge",), te_trailers=0.0, versions=("h2",), body_bytes=body, rate_bytes_per_s=rate)
    hops = r.hops.set_index("strategy")
    assert bool(hops.loc["trailer", "buffered"]) and hops.loc["trailer", "hold_s"] > 0.9
    for strategy in ("in-body", "buffer"):
        assert not bool(hops.loc[strategy, "buffered"]) and hops.loc[strategy, "hold_s"] == 0
    assert _row(r, "h2", "in-body")["ttfb_s"] < 0.1
    plan = ResponsePlan(0, 0.0, REQ, ((b":status", b"200"),), 1000, trailers=MD, metadata=MD)
    out = run_chain([plan], ChainConfig(version="h2", hops=("merge",)))
    relay = out.hops[0][0]
    assert not relay.buffering and relay.dropped == [b"content-digest", b"grpc-status"]


def test_same_seed_byte_identical_json_across_processes_and_hash_seeds():
    import os
    import subprocess
    import sys

    args = [
        "trailers",
        "--stack",
        "both",
        "--versions",
        "h2,h3",
        "--loss",
        "0.03",
        "--responses",
        "3",
        "--te",
        "0.5",
        "--metadata",
        "digest,signature,status,timing",
        "--body",
        "40KB",
        "--seed",
        "5",
        "--json",
    ]
    outs = []
    for hash_seed in ("0", "4242"):
        proc = subprocess.run(
            [sys.executable, "-m", "simulator.cli", *args],
            capture_output=True,
            timeout=600,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        assert proc.returncode == 0, proc.stderr.decode()
        outs.append(proc.stdout)
    assert outs[0] and outs[0] == outs[1]
    hops = [
        "trailers",
        "--hops",
        "pass,merge,store",
        "--loss",
        "0.03",
        "--responses",
        "3",
        "--te",
        "0.5",
        "--body",
        "40KB",
        "--seed",
        "5",
        "--json",
    ]
    outs = [
        subprocess.run(
            [sys.executable, "-m", "simulator.cli", *hops],
            capture_output=True,
            timeout=600,
            env={**os.environ, "PYTHONHASHSEED": h},
        ).stdout
        for h in ("1", "99")
    ]
    assert outs[0] and outs[0] == outs[1]
