"""h2 over TLS 1.3 (the real OpenSSL over memory BIOs) on the TCP model, in virtual time:
the handshake's round trips, ALPN h2, the record overhead on the wire, the same HTTP/2
behaviour as cleartext apart from timing, the transport-model replay paying the same
set-up, and the CLI flags."""

import math

import pytest

from simulator.cli import main
from simulator.engine import Simulator
from simulator.net.link import Path
from simulator.http import model_replay
from simulator.stacks import replay, tls
from simulator.stacks.common import ExchangeSpec, PushSpec, Recorder, StackParams, schedule_requests
from simulator.http.handshake import tls_record_bytes
from simulator.stacks.h2 import H2Session

REQ = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"a.example"), (b":path", b"/x"))
OK = ((b":status", b"200"), (b"content-type", b"text/plain"))
RTT_S = 0.1


def _small(n=1, body=1000):
    return [ExchangeSpec(i, REQ, OK, body, origin="https://a.example") for i in range(n)]


def _features():
    return [
        ExchangeSpec(
            0,
            REQ,
            OK,
            20000,
            early_hints=(b"</s.css>; rel=preload",),
            pushes=(PushSpec(b"/p.js", 3000),),
            trailers=((b"server-timing", b"app;dur=1"),),
        ),
        ExchangeSpec(1, REQ, OK, 200000, start_s=0.01, reset_by="server", reset_after_bytes=5000),
        ExchangeSpec(2, REQ, OK, 200000, start_s=0.01, reset_by="client", reset_after_bytes=5000),
        ExchangeSpec(3, REQ, OK, 0, start_s=0.01, request_body_bytes=100000),
        ExchangeSpec(4, REQ, OK, 1_000_000, start_s=0.02),
    ]


def _params(**kw):
    # No bandwidth limit: times are whole round trips, no serialisation.
    return StackParams(**{"stack": "h2", "rtt_s": RTT_S, "bandwidth_bps": None, **kw})


def test_tls13_full_handshake_costs_one_round_trip_more_rfc8446_section2_rfc9293_section3_5():
    """TCP (RFC 9293 section 3.5): SYN at 0, SYN-ACK back at 1 RTT, when the client may
    send data.  TLS 1.3 full handshake (RFC 8446 section 2): the ClientHello leaves at
    1 RTT, the server's flight (ServerHello .. Finished) is back at 2 RTT, and the client
    sends its Finished and, right behind it, the HTTP/2 preface and request: the request
    reaches the server at 2.5 RTT and the first response byte the client at 3 RTT (6
    one-way delays).  Cleartext with prior knowledge: the request leaves at 1 RTT, the
    response arrives at 2 RTT.  No serialisation (unlimited bandwidth), think time 0, so
    the times are exact, and TLS costs exactly one round trip more."""
    with_tls = replay.run_specs(_small(), _params()).exchanges.iloc[0]
    clear = replay.run_specs(_small(), _params(tls=False)).exchanges.iloc[0]
    assert with_tls["headers_s"] >= 3 * RTT_S - 1e-9
    assert with_tls["headers_s"] == pytest.approx(3 * RTT_S, abs=1e-6)
    assert clear["headers_s"] == pytest.approx(2 * RTT_S, abs=1e-6)
    assert with_tls["complete_s"] - clear["complete_s"] == pytest.approx(RTT_S, abs=1e-6)


def test_a_response_waits_for_its_whole_record_rfc8446_section5_2():
    """A record is authenticated as a whole (AEAD, RFC 8446 section 5.2): a 20 kB response
    written at once goes as a 16 KiB record and a short one; the first record is larger
    than TCP's initial window (10 segments, RFC 6928), so even the HEADERS frame at its
    start reaches h2 only one round trip later, with the second window.  Cleartext h2
    reads the HEADERS frame from the first segment."""
    specs = _small(body=20000)
    with_tls = replay.run_specs(specs, _params()).exchanges.iloc[0]
    clear = replay.run_specs(specs, _params(tls=False)).exchanges.iloc[0]
    assert clear["headers_s"] == pytest.approx(2 * RTT_S, abs=1e-6)
    assert with_tls["headers_s"] == pytest.approx(4 * RTT_S, abs=1e-6)


def _session_after_one_exchange(contexts=None):
    sim = Simulator(seed=1)
    recorder = Recorder(sim)
    path = Path(sim, rtt_s=RTT_S, bandwidth_bps=None, name="p")
    session = H2Session(sim, path, _params(), recorder, "https://a.example", tls=contexts)
    schedule_requests(sim, _small(), {"https://a.example": session}, recorder)
    sim.run(until_s=5.0)
    assert recorder.done
    return session


def test_alpn_h2_and_tls13_negotiated_rfc9113_section3_2():
    """HTTP/2 over TLS is identified by ALPN "h2" (RFC 9113 section 3.2, RFC 7301), on
    TLS 1.3 with an AEAD suite (RFC 8446 appendix B.4)."""
    session = _session_after_one_exchange()
    for end in (session.client, session.server):
        assert end.tls.handshake_done
        assert end.tls.alpn == "h2" and end.tls.obj.selected_alpn_protocol() == "h2"
        assert end.tls.obj.version() == "TLSv1.3"
        assert end.tls.cipher in ("TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256")
    assert session.client.tls.obj.server_hostname == "a.example"  # SNI: the origin's host


def test_a_server_that_does_not_select_h2_is_refused():
    """RFC 9113 section 3.2: without ALPN h2 this is not HTTP/2; the client must not go on."""
    contexts = tls.TlsContexts(1)
    contexts.server.set_alpn_protocols(["http/1.1"])
    with pytest.raises(RuntimeError, match="ALPN None"):
        _session_after_one_exchange(contexts)


def test_record_overhead_is_counted_on_the_wire_rfc8446_section5_2():
    """Each TLS 1.3 record adds 22 bytes: the 5-byte header, the inner content type and
    a 16-byte AEAD tag; a record holds at most 16 KiB (section 5.1).  The TCP model carries
    exactly the cleartext run's HTTP/2 bytes plus the handshake plus that overhead."""
    specs = _features()
    with_tls = replay.run_specs(specs, _params()).summary
    clear = replay.run_specs(specs, _params(tls=False)).summary
    for d in ("c2s", "s2c"):
        records, plain = with_tls[f"{d}_tls_records"], with_tls[f"{d}_tls_plaintext_bytes"]
        assert with_tls[f"{d}_tls_record_bytes"] - plain == 22 * records
        assert records >= math.ceil(plain / 16384)
        assert with_tls[f"{d}_tls_handshake_bytes"] > 0
        # The HTTP/2 bytes are the cleartext run's, byte for byte.
        assert plain == clear[f"{d}_tcp_bytes_sent"]
        assert with_tls[f"{d}_tcp_bytes_sent"] == plain + 22 * records + with_tls[f"{d}_tls_handshake_bytes"]
    assert with_tls["tls_overhead_bytes"] == 22 * with_tls["tls_records"]
    assert with_tls["tcp_bytes_sent"] > clear["tcp_bytes_sent"] + with_tls["tls_overhead_bytes"]


def test_h2_behaviour_unchanged_by_tls_apart_from_timing():
    """The same exchanges, statuses, bodies, 103s, pushes, trailers, resets and frame
    counts of every type as cleartext; every event happens no earlier."""
    with_tls = replay.run_specs(_features(), _params(bandwidth_bps=10e6))
    clear = replay.run_specs(_features(), _params(bandwidth_bps=10e6, tls=False))
    same = [
        "exchange",
        "kind",
        "path",
        "stream_id",
        "status",
        "body_bytes",
        "trailers",
        "reset",
        "link_headers",
        "completed",
        "response_frame_bytes",
        "trailer_frame_bytes",
    ]
    assert with_tls.exchanges[same].equals(clear.exchanges[same])
    frames = {k: v for k, v in clear.summary.items() if k.endswith("_frames")}
    assert frames and frames == {k: with_tls.summary[k] for k in frames}
    for col in ("headers_s", "ended_s", "informational_s"):
        a, b = with_tls.exchanges[col], clear.exchanges[col]
        assert ((a >= b - 1e-9) | b.isna()).all(), col
    assert (with_tls.exchanges["tls"]).all() and not clear.exchanges["tls"].any()  # recorded per row
    assert with_tls.params["tls"] is True and clear.params["tls"] is False


def test_handshake_flight_sizes_are_the_real_stacks():
    """The transport-model replay sends TLS flights of ``handshake_flight_bytes``: the bytes
    the real stack's OpenSSL writes (client: ClientHello, then ChangeCipherSpec + Finished;
    server: ServerHello .. Finished).  The ClientHello carries the SNI name (RFC 6066 section 3)
    and OpenSSL pads one of 256-511 bytes to 512 (RFC 7685): its size depends on the name."""
    session = _session_after_one_exchange()
    hello, server_flight, finished = tls.handshake_flight_bytes("a.example")
    assert session.client.tls.handshake_bytes == hello + finished
    assert session.server.tls.handshake_bytes == server_flight
    longer = tls.handshake_flight_bytes("www.a-much-longer-name.example")
    assert longer[0] > hello
    assert longer[1:] == (server_flight, finished)
    assert tls.sni_name("https://a.example:8443") == "a.example"
    assert tls.sni_name("https://10.0.0.2") is None and tls.sni_name("https://[::1]:443") is None


@pytest.mark.parametrize("use_tls", [True, False])
def test_model_replay_pays_the_same_setup_as_the_real_stack(use_tls):
    """Over the TCP model the model replay pays the TCP handshake and, with TLS, the TLS 1.3
    flights: at 0% loss the first response comes when the real stack's does (3 RTT with
    TLS, 2 RTT without, plus serialisation), and TLS costs the model one round trip too."""
    specs = _small(n=3, body=2000)
    params = _params(bandwidth_bps=10e6, tls=use_tls)
    real = replay.run_specs(specs, params).exchanges
    model = model_replay.run_specs(specs, params).exchanges
    rtts = 3 if use_tls else 2
    assert model["headers_s"].min() >= rtts * RTT_S
    assert real["headers_s"].min() >= rtts * RTT_S
    assert model["complete_s"].max() == pytest.approx(real["complete_s"].max(), abs=0.002)
    assert model["tls"].eq(use_tls).all()


def test_model_replay_counts_records():
    assert tls_record_bytes(1) == 23
    assert tls_record_bytes(16384) == 16384 + 22
    assert tls_record_bytes(16385) == 16385 + 44


def test_cli_tls_flags(capsys, tmp_path):
    import json
    import os

    page = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "traces", "synthetic-page.har")
    assert main(["replay", "--trace", page, "--stack", "h2", "--no-tls", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["tls"] is False and out["completed"] == 79
    assert main(["replay", "--trace", page, "--stack", "h2"]) == 0
    assert "over TLS 1.3" in capsys.readouterr().out
    for argv in (
        ["replay", "--trace", page, "--stack", "h2", "--no-tls", "--keylog", str(tmp_path / "k")],
        ["replay", "--trace", page, "--stack", "h3", "--no-tls"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("workbench: error:") and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "k").exists()


def test_keylog_holds_the_tls13_secrets_of_every_connection(tmp_path):
    """SSLKEYLOGFILE format: per TLS 1.3 connection the client's and server's handshake and
    application traffic secrets, keyed by the ClientHello random."""
    keylog = tmp_path / "keys.log"
    specs = [ExchangeSpec(i, REQ, OK, 500, origin=f"https://o{i}.example") for i in range(3)]
    replay.run_specs(specs, _params(), keylog_path=str(keylog))
    lines = [line.split() for line in keylog.read_text().splitlines() if line and not line.startswith("#")]
    labels = {
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        "CLIENT_TRAFFIC_SECRET_0",
        "SERVER_TRAFFIC_SECRET_0",
    }
    randoms = {r for label, r, _ in lines if label in labels}
    assert len(randoms) == 3
    for r in randoms:
        assert labels <= {label for label, rr, _ in lines if rr == r}


def test_batch_grid_sweeps_tls_for_h2_and_refuses_cleartext_http3():
    from simulator.batch.registry import expand_grid, get_study
    from simulator.errors import InputError

    study = get_study("replay")
    points = expand_grid({"stack": ["h2"], "no-tls": [False, True]}, study)
    assert [p.params.tls for p in points] == [True, False]
    with pytest.raises(InputError, match="HTTP/3 always runs TLS 1.3"):
        expand_grid({"stack": ["h3"], "no-tls": [True]}, study)


def test_push_study_stacks_backend_runs_h2_over_tls_like_its_model():
    """The page-load study's real-stack backend runs h2 over TLS 1.3 too (it used to refuse):
    the document, the first request of a cold connection, arrives one round trip later than
    in cleartext (RFC 8446 section 2), on the real stack as on the model, which charges
    TCP + TLS as a set-up time."""
    import os

    from simulator.studies import push
    from simulator.traces import load

    page = load(
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "traces", "synthetic-page.har")
    )
    arrived = {}
    for backend in ("model", "stacks"):
        for use_tls in (True, False):
            params = push.PushParams(
                policies=("none",),
                protocol="h2",
                backend=backend,
                scheduler="fifo",
                think_s=0.05,
                rtt_s=0.1,
                tls=use_tls,
            )
            result = push.run(page, params)
            assert result.params["tls"] is use_tls
            arrived[backend, use_tls] = result.resources.set_index("index").loc[0, "arrived_s"]
    for backend in ("model", "stacks"):
        assert arrived[backend, True] - arrived[backend, False] == pytest.approx(0.1, abs=0.005)
    assert arrived["stacks", True] == pytest.approx(arrived["model", True], abs=0.005)


def _pcap_records(path):
    import struct

    data = path.read_bytes()
    pos, out = 24, []
    while pos < len(data):
        sec, nsec, incl, _ = struct.unpack("<IIII", data[pos : pos + 16])
        out.append((sec, nsec, data[pos + 16 : pos + 16 + incl]))
        pos += 16 + incl
    return out


def test_openssl_randomness_changes_ciphertext_never_sizes_or_times(tmp_path):
    """OpenSSL draws the ClientHello/ServerHello randoms and X25519 key shares from the OS
    (RFC 8446 section 4.1.2, 4.2.8): two runs of the same seed carry different ciphertext,
    in packets of identical sizes at identical times, and give identical results."""
    specs = [ExchangeSpec(i, REQ, OK, 30000 + 100 * i, start_s=0.003 * i) for i in range(4)]
    params = _params(bandwidth_bps=10e6, loss="0.03", seed=5)
    runs = []
    for k in range(2):
        path = tmp_path / f"run{k}.pcap"
        result = replay.run_specs(specs, params, pcap_path=str(path))
        runs.append((result, _pcap_records(path)))
    (a, pa), (b, pb) = runs
    assert a.summary == b.summary and a.exchanges.equals(b.exchanges)
    assert [(s, ns, len(p)) for s, ns, p in pa] == [(s, ns, len(p)) for s, ns, p in pb]
    assert any(x[2] != y[2] for x, y in zip(pa, pb))  # the encrypted bytes differ


def test_handshake_flight_sizes_of_plain_names_go_by_their_length_rfc6066_3():
    """A plain DNS name travels as it is in the ClientHello's server_name extension (RFC 6066
    section 3) and nothing else of the handshake depends on it: the sizes looked up by its
    length are the ones a handshake with that very name measures, whatever its letters; an IP
    address (no SNI) and other names are measured apart."""
    names = ["a.example", "b.example", "x-1.examp", "www.news-site.example", "cdn.images-1.example", "10.0.0.2"]
    for name in names:
        assert tls.handshake_flight_bytes(name) == tls._measured_flights(name), name
    assert tls.handshake_flight_bytes("10.0.0.2") != tls.handshake_flight_bytes("a.exampl")


def test_the_written_seed_0_certificate_and_key_are_make_certificates():
    """The seed-0 certificate the model's TLS measurements load without building it (and the
    key made from its seed as RFC 8410 writes an Ed25519 key) are ``make_certificate(0)``'s."""
    from cryptography.hazmat.primitives import serialization

    cert, key = tls.make_certificate(0)
    cert_pem, key_pem = tls._pem_pair(0)
    assert cert_pem == cert.public_bytes(serialization.Encoding.PEM)
    assert key_pem == key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    assert tls.certificate_der_bytes() == len(cert.public_bytes(serialization.Encoding.DER))
