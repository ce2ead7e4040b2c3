"""The header-compression HOL-blocking study (its question and the published reference
numbers are in the docstring of ``simulator/studies/hol/``).

The assertions are the phenomena a faithful model must show: no loss, no blocking;
QPACK with SETTINGS_QPACK_BLOCKED_STREAMS = 0 never blocks (RFC 9204 section 2.1.2);
QCRAM's non-blocking variant never blocks; HPACK over QUIC blocks more than QPACK and
QCRAM under loss; over TCP every scheme suffers the byte stream's HOL blocking; and
the compression ratio depends on how soon acknowledgements return.
"""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from simulator import compression
from simulator.cli import main
from simulator.errors import InputError
from simulator.studies import hol
from simulator.studies.base import run_seeds
from simulator.traces import load

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "traces" / "synthetic-page.har"
QIF_DIR = ROOT / "traces" / "qif"  # bundled QPACK interop traces (MIT, see traces/README.md)
FB_REQ = QIF_DIR / "fb-req-hq.qif"
FB_RESP = QIF_DIR / "fb-resp-hq.qif"

ALL = ("hpack", "qpack", "qcram", "qcram-blocking")


@pytest.fixture(scope="module")
def page():
    return load(PAGE)


@pytest.fixture(scope="module")
def fb_req():
    return load(FB_REQ)


@pytest.mark.parametrize("transport", ["quic", "tcp"])
def test_no_loss_means_no_hol_blocking_in_any_scheme(page, transport):
    result = hol.run(page, hol.HolParams(schemes=ALL, transport=transport, loss="0", direction="both"))
    assert (result.summary["blocked"] == 0).all()
    assert (result.summary["hol_total_ms"] == 0).all()
    assert (result.summary["losses"] == 0).all()
    # Every header list of the trace was replayed and decoded, in both directions.
    assert (result.summary["blocks"] == 2 * len(page)).all()


def test_block_times_are_causal(page):
    """sent + one-way delay <= arrived <= delivered <= decoded, for every block."""
    params = hol.HolParams(schemes=ALL, loss="0.03", seed=3)
    b = hol.run(page, params).blocks
    one_way = params.rtt_s / 2
    assert (b["arrived_s"] >= b["sent_s"] + one_way - 1e-9).all()
    assert (b["delivered_s"] >= b["arrived_s"] - 1e-9).all()
    assert (b["decoded_s"] >= b["delivered_s"] - 1e-9).all()
    assert (b["hol_delay_ms"] >= 0).all()
    assert (b["blocked"] == (b["hol_delay_ms"] > 1e-6)).all()


def test_qpack_with_zero_blocked_streams_never_blocks(page):
    """RFC 9204 section 2.1.2: with SETTINGS_QPACK_BLOCKED_STREAMS = 0 the encoder must not
    emit a section whose Required Insert Count exceeds what the decoder acknowledged."""
    for seed in (1, 2, 3):
        r = hol.run(page, hol.HolParams(schemes=("qpack",), max_blocked=0, loss="0.05", seed=seed))
        assert r.summary.loc["qpack", "blocked"] == 0
        assert r.summary.loc["qpack", "may_block"] == 0


def test_qcram_never_blocks_unless_its_blocking_variant_is_on(page):
    """draft-krasic-quic-qcram: references only to inserts the transport acknowledged."""
    blocked_variant = 0
    for seed in (1, 2, 3, 4):
        r = hol.run(page, hol.HolParams(schemes=("qcram", "qcram-blocking"), loss="0.04", seed=seed))
        assert r.summary.loc["qcram", "blocked"] == 0
        assert r.summary.loc["qcram", "may_block"] == 0
        blocked_variant += r.summary.loc["qcram-blocking", "blocked"]
    assert blocked_variant > 0  # the variant that may block does, at 4% loss


def test_hpack_over_quic_blocks_more_than_qpack_and_qcram(fb_req):
    """At 1-2% loss, in-order HPACK decoding stalls many more blocks (summed over seeds)."""
    runs = pd.concat(
        [run_seeds(hol.run, fb_req, hol.HolParams(loss=loss), seeds=(1, 2, 3)) for loss in ("0.01", "0.02")]
    )
    blocked = runs.groupby("scheme")["blocked"].sum()
    assert blocked["hpack"] > 2 * blocked["qpack"]
    assert blocked["hpack"] > blocked["qcram"]
    assert blocked["qcram"] == 0


def test_over_tcp_a_lost_segment_blocks_every_scheme_alike(page):
    """RFC 9293: TCP delivers in order, so the byte stream's HOL blocking hits QCRAM too."""
    r = hol.run(page, hol.HolParams(schemes=("hpack", "qcram"), transport="tcp", loss="0.04", seed=2))
    assert r.summary.loc["hpack", "blocked"] > 0
    assert r.summary.loc["qcram", "blocked"] > 0


def test_bursty_loss_runs(page):
    r = hol.run(page, hol.HolParams(loss="ge:0.01,0.3", seed=1))
    assert r.summary["losses"].sum() > 0
    assert r.summary.loc["qcram", "blocked"] == 0


def test_same_seed_same_rows_and_different_seed_differs(page):
    params = hol.HolParams(loss="0.03", seed=5)
    a = hol.run(page, params).blocks
    b = hol.run(page, params).blocks
    pd.testing.assert_frame_equal(a, b)
    c = hol.run(page, replace(params, seed=6)).blocks
    assert not a[["arrived_s", "decoded_s"]].equals(c[["arrived_s", "decoded_s"]])


def test_every_row_carries_its_parameters_and_seed(page):
    r = hol.run(page, hol.HolParams(loss="0.01", seed=9, rtt_s=0.05))
    assert set(["seed", "loss", "rtt_s", "transport", "table_bytes", "max_blocked", "spacing_s"]) <= set(
        r.blocks.columns
    )
    assert (r.blocks["seed"] == 9).all() and (r.blocks["rtt_s"] == 0.05).all()
    assert r.params["seed"] == 9 and r.trace["content_hash"] == page.content_hash()


def test_a_wrong_decode_is_an_error_never_a_result(page, monkeypatch):
    """Every decoded header list is compared with its input."""
    from simulator.compression import base

    original = base.verify

    def corrupt(expected, decoded, **kw):
        return original(expected, decoded[:-1], **kw)

    monkeypatch.setattr(compression, "verify", corrupt)
    with pytest.raises(compression.VerificationError):
        hol.run(page, hol.HolParams(schemes=("qpack",)))


def test_a_decoder_that_drops_a_field_fails_the_run(page, fb_req, monkeypatch):
    """A decoded list that is not its input never passes, with or without cookie crumbs."""
    from simulator.compression import hpack_codec

    original = hpack_codec.HpackDecoder._decode

    def dropping(self, *args):
        block = original(self, *args)
        return replace(block, headers=block.headers[:-1])

    monkeypatch.setattr(hpack_codec.HpackDecoder, "_decode", dropping)
    for trace in (page, fb_req):
        with pytest.raises(compression.VerificationError):
            hol.run(trace, hol.HolParams(schemes=("hpack",)))


def test_timed_schedule_caps_idle_gaps_and_coalesces_within_a_millisecond(page):
    items = hol.schedule(page, hol.HolParams(direction="requests"))
    starts = sorted(i.start_s for i in items)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert max(gaps) <= 1.0 + 1e-9
    assert all(abs(s * 1000 - round(s * 1000)) < 1e-6 for s in starts)


def test_compression_ratios_on_fb_resp_match_the_published_figures():
    """fb-resp-hq, raw 340,737 bytes, encoded by the real coders (hpack, pylsqpack: the same
    bytes every run): HPACK 83,354 bytes (24.5%), QPACK with a 4 KiB table and acks at once
    50,256 + 2,831 on the encoder stream (RFC 9204 section 4.2; 15.6%), and 51.7% when the
    QPACK encoder never sees an acknowledgement.  The QPACK offline interop published about
    26.5% and 15.2% for other encoders (ls-qpack, nghttp3): held within 0.03 of those, the
    gap being theirs, not a draw."""
    lists = [h for _, _, h in load(FB_RESP).header_lists("responses")]
    assert sum(len(n) + len(v) for h in lists for n, v in h) == 340_737
    hpack = compression.simulate_offline("hpack", lists, table_bytes=4096, ack_mode=1)
    qpack = compression.simulate_offline("qpack", lists, table_bytes=4096, max_blocked=100, ack_mode=1)
    qpack_noack = compression.simulate_offline("qpack", lists, table_bytes=4096, max_blocked=100, ack_mode=0)
    assert (hpack.header_block_bytes, hpack.encoder_stream_bytes) == (83_354, 0)
    assert (qpack.header_block_bytes, qpack.encoder_stream_bytes, qpack.decoder_stream_bytes) == (50_256, 2_831, 1_145)
    assert (qpack_noack.header_block_bytes, qpack_noack.encoder_stream_bytes) == (174_768, 1_471)
    assert qpack.ratio == (50_256 + 2_831) / 340_737 and qpack_noack.ratio > 0.50
    # Other encoders' published figures: a different encoder, not randomness, sets the margin.
    assert hpack.ratio == pytest.approx(0.265, abs=0.03)
    assert qpack.ratio == pytest.approx(0.152, abs=0.03)


def test_simulated_ratio_depends_on_ack_timing_against_request_spacing():
    """Spaced far apart (acks back before the next response), QPACK approaches its
    instant-ack ratio; sent back to back, it cannot reference its recent inserts."""
    trace = load(FB_RESP)
    base = hol.HolParams(schemes=("qpack",), direction="responses", rtt_s=0.1)
    spaced = hol.run(trace, replace(base, spacing_s=0.5)).summary.loc["qpack"]
    burst = hol.run(trace, replace(base, spacing_s=0.0)).summary.loc["qpack"]
    # Spaced 0.5 s apart over a 100 ms RTT every ack is back first: the bytes of acks at once
    # (the offline run above), exactly; back to back, those of an encoder that hears no ack.
    assert (spaced["header_bytes"], spaced["encoder_stream_bytes"]) == (50_256, 2_831)
    assert (burst["header_bytes"], burst["encoder_stream_bytes"]) == (174_768, 1_471)
    assert burst["ratio"] > spaced["ratio"] + 0.1


def test_bad_parameters_are_input_errors():
    with pytest.raises(InputError):
        hol.HolParams(schemes=("zstd",))
    with pytest.raises(InputError):
        hol.HolParams(direction="sideways")
    with pytest.raises(InputError):
        hol.HolParams(schemes=())


@pytest.mark.parametrize("trace_name, transport, loss", [("fb_req", "quic", "0.03"), ("page", "tcp", "0.02")])
def test_summary_is_the_blocks_table_summarised(request, trace_name, transport, loss):
    """Each scheme's summary row (computed from the run's rows, without NumPy) holds the
    figures NumPy gives of that scheme's rows of the blocks table, float for float."""
    import numpy as np

    trace = request.getfixturevalue(trace_name)
    r = hol.run(trace, hol.HolParams(schemes=ALL, transport=transport, loss=loss, seed=4))
    assert r.summary["blocked"].sum() > 0  # the percentiles and means below interpolate
    for scheme, row in r.summary.iterrows():
        b = r.blocks[r.blocks["scheme"] == scheme]
        delay = b["hol_delay_ms"].to_numpy()
        blocked = b["blocked"].to_numpy()
        assert row["blocks"] == len(b) and row["blocked"] == blocked.sum()
        assert row["hol_total_ms"] == delay.sum() and row["hol_max_ms"] == delay.max()
        for q in (50, 95, 99):
            assert row[f"hol_p{q}_ms"] == np.percentile(delay, q)
        assert row["hol_mean_blocked_ms"] == (delay[blocked].mean() if blocked.any() else 0.0)
        assert row["raw_bytes"] == b["raw_bytes"].sum() and row["may_block"] == b["may_block"].sum()


def test_cli_json_imports_neither_pandas_nor_numpy():
    """``workbench hol --json`` prints the summary rows themselves: no table is made."""
    code = (
        "import sys; from simulator.cli import main; "
        f"status = main(['hol', '--trace', {str(FB_REQ)!r}, '--loss', '0.01', '--json']); "
        "print(status, [m for m in ('pandas', 'numpy') if m in sys.modules], file=sys.stderr)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.stderr.strip().splitlines()[-1] == "0 []", run.stderr
    assert json.loads(run.stdout)["schemes"]["hpack"]["blocks"] == 383


def test_cli_json_has_the_documented_keys(capsys):
    assert main(["hol", "--trace", str(PAGE), "--loss", "0.02", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["schemes"]) == {"hpack", "qpack", "qcram"}
    for summary in out["schemes"].values():
        for key in (
            "blocks",
            "blocked",
            "hol_total_ms",
            "hol_p95_ms",
            "raw_bytes",
            "header_bytes",
            "encoder_stream_bytes",
            "ratio",
        ):
            assert key in summary
        assert summary["ratio"] == pytest.approx(
            (summary["header_bytes"] + summary["encoder_stream_bytes"]) / summary["raw_bytes"]
        )


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--loss", "lots"], "loss"),
        (["--rtt", "fast"], "duration"),
        (["--scheme", "gzip"], "scheme"),
        (["--transport", "ref2017", "--jitter", "-0.05"], "probability"),
    ],
)
def test_cli_bad_flags_exit_2_with_one_line(capsys, argv, fragment):
    assert main(["hol", "--trace", str(PAGE), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err


def test_cli_bad_trace_exits_2(tmp_path, capsys):
    bad = tmp_path / "broken.har"
    bad.write_text('{"log": {"entries": [')
    assert main(["hol", "--trace", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("max_blocked", [1, 2])
def test_blocked_streams_never_exceed_the_limit(page, max_blocked):
    """RFC 9204 section 2.1.2: at no instant does the decoder hold more blocked streams
    than SETTINGS_QPACK_BLOCKED_STREAMS (the encoder must not risk more)."""
    seen_blocking = False
    for seed in (1, 2, 3, 4):
        b = hol.run(
            page, hol.HolParams(schemes=("qpack",), max_blocked=max_blocked, loss="0.05", seed=seed, spacing_s=0.001)
        ).blocks
        waits = b[b["decoded_s"] > b["delivered_s"] + 1e-12]
        events = sorted(
            [(t, 1) for t in waits["delivered_s"]] + [(t, -1) for t in waits["decoded_s"]], key=lambda e: (e[0], e[1])
        )
        level = peak = 0
        for _, step in events:
            level += step
            peak = max(peak, level)
        assert peak <= max_blocked
        seen_blocking |= peak > 0
    assert seen_blocking


RESPONSES_QIF = ":status\t200\ncontent-type\ttext/html\n\n:status\t200\ncontent-type\ttext/css\n\n:status\t404\n\n"
REQUESTS_QIF = ":method\tGET\n:path\t/\n:authority\ta.example\n\n:method\tGET\n:path\t/x\n:authority\ta.example\n\n"


def test_direction_auto_replays_what_the_trace_holds(tmp_path):
    """--direction auto (the default): a response-only QIF replays its responses, a request
    QIF its requests, a HAR both; the result records what was resolved and what was asked."""
    from simulator.traces import load

    responses = tmp_path / "resp.qif"
    responses.write_text(RESPONSES_QIF)
    requests = tmp_path / "req.qif"
    requests.write_text(REQUESTS_QIF)
    for path, expected, lists in ((responses, "responses", 3), (requests, "requests", 2)):
        r = hol.run(load(str(path)), hol.HolParams(schemes=("qpack",)))
        assert r.params["direction"] == expected and r.params["direction_given"] == "auto"
        assert r.summary.loc["qpack", "blocks"] == lists
        assert set(r.blocks["direction"]) == {expected}
    page = load(str(ROOT / "traces" / "synthetic-page.har"))
    r = hol.run(page, hol.HolParams(schemes=("hpack",)))
    assert r.params["direction"] == "both" and set(r.blocks["kind"]) == {"request", "response"}


def test_batch_over_request_and_response_traces_with_default_direction(tmp_path):
    from simulator import batch

    d = tmp_path / "traces"
    d.mkdir()
    (d / "resp.qif").write_text(RESPONSES_QIF)
    (d / "req.qif").write_text(REQUESTS_QIF)
    report = batch.run_batch("hol", [str(d)], None, 1, out=str(tmp_path / "out"), workers=0, progress=False)
    assert report.failed == 0 and report.ok == 2
    df = batch.load(str(tmp_path / "out"))
    assert set(df["direction"]) == {"auto"}  # the job's parameters, as given
