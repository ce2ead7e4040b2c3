"""The one handshake model (``simulator.http.handshake``): its sizes are the real stacks'
(OpenSSL for TLS 1.3 over TCP, aioquic for QUIC), the certificate chain is a parameter, and
the closed form follows RFC 9000's padding and anti-amplification rules."""

from __future__ import annotations

import json

import pytest

from simulator.http import handshake as hs
from simulator.net.quic.handshake import server_flight_sizes
from simulator.net.transport import TransportConfig
from simulator.stacks import replay
from simulator.stacks.common import ExchangeSpec, StackParams
from har_pages import page_har

BACKUP_S = 0.250  # Chromium's kMaxConnectRetryIntervalMs

REQ = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"a.example"), (b":path", b"/"))
OK = ((b":status", b"200"),)


def test_quic_server_crypto_is_what_aioquic_sends_in_a_real_replay_rfc9001_section4_1(tmp_path):
    """The CRYPTO bytes the real aioquic server sends over the simulated path (read from its
    qlog: Initial and Handshake packets, each offset once) are the model's server flight."""
    spec = ExchangeSpec(0, REQ, OK, 5000, start_s=0.0)
    replay.run_specs([spec], StackParams(stack="h3", rtt_s=0.05), qlog_dir=str(tmp_path))
    events = json.loads((tmp_path / "h30-server.qlog").read_text())["traces"][0]["events"]
    end: dict[str, int] = {}
    for e in events:
        if e["name"] != "transport:packet_sent":
            continue
        space = e["data"]["header"]["packet_type"]
        for frame in e["data"].get("frames", []):
            if frame["frame_type"] == "crypto":
                end[space] = max(end.get(space, 0), frame["offset"] + frame["length"])
    assert set(end) == {"initial", "handshake"}
    assert sum(end.values()) == hs.flights("a.example").quic_server_crypto


def test_the_chain_is_a_parameter_of_both_server_flights_rfc8446_section4_4_2():
    """A chain N bytes longer makes the server's flight N bytes longer over TCP and over
    QUIC; past 16 KiB the Certificate message needs one more record (section 5.1: 22 B)."""
    base = hs.flights("a.example")
    more = hs.flights("a.example", base.cert_chain_bytes + 1000)
    assert more.server_flight - base.server_flight == 1000
    assert more.quic_server_crypto - base.quic_server_crypto == 1000
    assert (more.client_hello, more.client_finished) == (base.client_hello, base.client_finished)
    big = hs.flights("a.example", 20_000)
    assert big.server_flight - base.server_flight == 20_000 - base.cert_chain_bytes + hs.TLS_RECORD_OVERHEAD_BYTES


def test_client_hello_grows_with_the_server_name_and_is_padded_rfc6066_rfc7685():
    """SNI puts the name in the ClientHello (RFC 6066 section 3); OpenSSL pads a hello of
    256-511 bytes to 512 (RFC 7685), so a long name gives 512 + the 5-byte record header;
    no SNI for an IP address."""
    short = hs.flights("a.example").client_hello
    assert hs.flights("ab.example").client_hello == short + 1
    assert short < 256
    assert hs.flights("a-rather-long-host-name.for-padding.example").client_hello == 512 + 5
    assert hs.flights(None).client_hello < short


def test_h2_handshake_is_two_round_trips_with_tls_and_one_without_rfc8446_section2():
    tls = hs.handshake("h2", "a.example", 3000)
    clear = hs.handshake("h2", "a.example", 3000, tls=False)
    assert (tls.rtts, clear.rtts) == (2, 1)
    assert clear.cert_bytes == 0 and tls.cert_bytes == 3000
    f = hs.flights("a.example", 3000)
    # every byte of the TLS flights is on the wire, with a TCP/IP header per segment
    assert tls.server_bytes - hs.TCP_SYNACK_BYTES == f.server_flight + hs.TCP_HEADER_BYTES * 3
    # an ORIGIN frame (RFC 8336) rides in one more record of the server's flight
    with_origin = hs.handshake("h2", "a.example", 3000, 40)
    assert with_origin.server_bytes - tls.server_bytes == 40 + hs.TLS_RECORD_OVERHEAD_BYTES


@pytest.mark.parametrize("chain", [260, 1800, 4000, 9000, 20_000])
def test_quic_flight_obeys_padding_and_anti_amplification_rfc9000_sections_8_1_and_14_1(chain):
    """The client's datagrams are full (section 14.1); until the client has sent enough, the
    server sends at most three times what it received (8.1), so a big chain costs round
    trips: the least number with 3 x the client's datagrams >= the server's flight."""
    h = hs.handshake("h3", "a.example", chain)
    config = TransportConfig()
    flight = sum(server_flight_sizes(config, hs.flights("a.example", chain).quic_server_crypto))
    assert h.server_bytes > flight
    initials = h.rtts  # one padded datagram per round trip
    assert 3 * initials * config.max_datagram_bytes >= flight
    assert initials == 1 or 3 * (initials - 1) * config.max_datagram_bytes < flight
    datagram = config.max_datagram_bytes + 28
    assert h.client_bytes == (initials + 1) * datagram  # + the client's padded Finished


def test_setup_time_is_round_trips_plus_serialisation():
    h = hs.handshake("h2", "a.example", 1800)
    assert h.setup_s(0.1, None) == pytest.approx(0.2)
    assert h.setup_s(0.1, 1e6) == pytest.approx(0.2 + h.bytes * 8 / 1e6)


def test_tls_records_of_at_most_16_kib_rfc8446_section5_1():
    assert hs.tls_record_bytes(1) == 1 + 22
    assert hs.tls_record_bytes(16384) == 16384 + 22
    assert hs.tls_record_bytes(16385) == 16385 + 44


def _h1_page(children: int, scheme: str = "http") -> dict:
    """A HAR of a document and ``children`` images it names, all on one HTTP/1.1 origin."""
    url = f"{scheme}://www.site.example/"
    return page_har(url, [f"{url}i{k}.png" for k in range(children)], "http/1.1")


def _h1_load(har: dict, rtt_s: float):
    from simulator.browser import ClientCache, LoadParams, ServerPlan, load_page
    from simulator.traces.har import parse_har
    from simulator.traces.pagegraph import page_graph

    graph = page_graph(parse_har(har, path="page.har"))
    origin = graph[0].origin
    params = LoadParams(rtt_s=rtt_s, bandwidth_bps=None, origins=((origin, rtt_s, "h1", 0.0),), parse_delay_s=())
    return load_page(graph, params, ServerPlan(), ClientCache()).resources


@pytest.mark.parametrize(("scheme", "round_trips"), [("http", 2), ("https", 3)])
def test_an_http11_connection_pays_tls_only_for_https_rfc9112_rfc8446_section2(scheme, round_trips):
    """A one-document page over HTTP/1.1 on an unlimited link, no server time: an http://
    origin's response comes two round trips after the request (TCP's handshake, then the
    exchange), an https:// one's three (TLS 1.3 adds one, RFC 8446 section 2)."""
    rtt_s = 0.3
    arrived = _h1_load(_h1_page(0, scheme), rtt_s)["arrived_s"].iloc[0]
    assert arrived == pytest.approx(round_trips * rtt_s, abs=0.005)


@pytest.mark.parametrize("rtt_s", [0.2, 0.3])
def test_a_first_connect_slower_than_250ms_gets_a_backup_connection(rtt_s):
    """Chromium's backup connect job (ClientSocketPool::kMaxConnectRetryIntervalMs, 250 ms):
    when a host's first TCP handshake has not completed in 250 ms a second connect starts,
    and the loser of the race waits idle in the pool.  Two images found in the document at
    RTT 300 ms: one takes the document's connection, the other the backup's, both one round
    trip later; at 200 ms the handshake wins in time, no backup, and the second image opens a
    connection of its own (two round trips)."""
    res = _h1_load(_h1_page(2), rtt_s)
    doc = res["arrived_s"].iloc[0]
    images = sorted(res["arrived_s"].iloc[1:] - doc)
    assert images[0] == pytest.approx(rtt_s, abs=0.005)
    assert images[1] == pytest.approx(rtt_s if rtt_s > BACKUP_S else 2 * rtt_s, abs=0.005)


@pytest.mark.parametrize(("rtt_s", "children"), [(0.2, 2), (0.3, 3)])
def test_a_waiting_request_takes_the_first_connection_free_rfc9112_section9(rtt_s, children):
    """Chromium's socket pool binds a request to a connection only when one is free (late
    binding).  An https:// origin over HTTP/1.1 (one exchange at a time per connection, RFC
    9112 section 9.3.2 without pipelining): when the document arrives, the images it names take
    its connection (and at 300 ms the backup connection's, idle since the first connect); the
    last one waits while a new connection opens, but its TCP and TLS handshakes take two round
    trips, and the document's connection is free again after one.  So the last image arrives
    two round trips after the document, on that connection, not three on the new one; the new
    connection stays in the pool, idle."""
    res = _h1_load(_h1_page(children, "https"), rtt_s)
    doc = res["arrived_s"].iloc[0]
    images = sorted(res["arrived_s"].iloc[1:] - doc)
    assert images[0] == pytest.approx(rtt_s, abs=0.005)
    assert images[-1] == pytest.approx(2 * rtt_s, abs=0.005)
