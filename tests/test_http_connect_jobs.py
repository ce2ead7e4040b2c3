"""A browser's connect jobs to a new HTTP/2 origin (``simulator.http.connect_jobs``), the TLS
client's flights (``simulator.http.handshake``, ``client="chromium"``) and the lab's certificate
chain size (``simulator.lab.certs.chain_der_bytes``)."""

from __future__ import annotations

import pytest

from simulator.http import handshake as hs
from simulator.http.connect_jobs import ConnectJobs
from har_pages import page_har

DOC = "https://www.site.example/"
CDN = "https://cdn.site.example"


def _page(images: int) -> dict:
    """A HAR of a document on one origin naming ``images`` images of another, all over HTTP/2."""
    return page_har(DOC, [f"{CDN}/i{k}.png" for k in range(images)], "h2")


def _load(images: int, rtt_s: float, connect_jobs: str | None, bandwidth_bps: float | None = None, protocol="h2"):
    """The page loaded over h2 with ``connect_jobs``: its resources and the network it ran on."""
    from simulator.browser import ClientCache, LoadParams, ServerPlan, load_page
    from simulator.traces.har import parse_har
    from simulator.traces.pagegraph import page_graph

    graph = page_graph(parse_har(_page(images), path="page.har"))
    nets = []

    def network(sim, params, listener, backend_cls):
        nets.append(backend_cls(sim, params, listener, connect_jobs=connect_jobs, tls_client="chromium"))
        return nets[-1]

    origins = ((DOC.rstrip("/"), rtt_s, protocol, 0.0), (CDN, rtt_s, protocol, 0.0))
    params = LoadParams(
        protocol="h3" if protocol == "h3" else "h2",
        coalesce="origin",
        rtt_s=rtt_s,
        bandwidth_bps=bandwidth_bps,
        origins=origins,
        parse_delay_s=(),
    )
    return load_page(graph, params, ServerPlan(), ClientCache(), network=network).resources, nets[0]


def _jobs(net, origin: str) -> int:
    group = net.jobs.groups.get(origin) if net.jobs is not None else None
    return len(group.jobs) if group is not None else 1


@pytest.mark.parametrize(("images", "jobs"), [(1, 1), (3, 3), (9, 6)])
def test_chromium_opens_a_connection_per_waiting_request_to_a_new_http2_origin_rfc9113_section9_1(images, jobs):
    """Until ALPN has said the origin speaks HTTP/2, Chromium gives each waiting request a
    connect job of its own, up to the socket pool's six; the first connection up carries every
    request (RFC 9113 section 9.1: one connection per origin is enough), the others stay idle.
    At 100 ms on an unlimited link no connect is slower than 250 ms: no backup job."""
    res, net = _load(images, 0.1, "chromium")
    assert _jobs(net, CDN) == jobs
    assert _jobs(net, DOC.rstrip("/")) == 1  # the navigation alone waits for the document's origin
    assert res["connection"].iloc[1:].nunique() == 1
    assert len(net.jobs.idle()) == jobs - 1


@pytest.mark.parametrize(("rtt_s", "jobs"), [(0.2, 1), (0.3, 2)])
def test_a_first_http2_connect_slower_than_250ms_gets_a_backup_job(rtt_s, jobs):
    """Chromium's backup connect job (ClientSocketPool::kMaxConnectRetryIntervalMs): an origin
    whose first TCP handshake has not completed after 250 ms gets a second connect.  On an
    unlimited lossless link the first one still wins, so the race costs the page nothing: every
    response arrives when it does without connect jobs."""
    res, net = _load(2, rtt_s, "backup")
    plain, _ = _load(2, rtt_s, None)
    assert _jobs(net, CDN) == jobs
    assert list(res["arrived_s"]) == pytest.approx(list(plain["arrived_s"]), abs=1e-9)


def test_idle_connect_jobs_put_their_handshakes_on_the_shared_path_rfc8446_section2():
    """Every extra connect job sends its ClientHello and gets the server's flight over the
    shared path (at 2 Mbit/s, 40 ms each way per job): with six jobs the uplink carries five more
    ClientHellos and the downlink five more server flights than with one, and the page's
    responses still all come on one connection."""
    raced, net = _load(9, 0.1, "chromium", bandwidth_bps=2e6)
    alone, one = _load(9, 0.1, "backup", bandwidth_bps=2e6)
    f = hs.flights("cdn.site.example", client="chromium")
    up = net.path.forward.stats.bytes_sent - one.path.forward.stats.bytes_sent
    down = net.path.reverse.stats.bytes_sent - one.path.reverse.stats.bytes_sent
    assert up >= 5 * (f.client_hello + f.client_finished)
    assert down >= 5 * f.server_flight
    assert raced["connection"].iloc[1:].nunique() == 1


@pytest.mark.parametrize("protocol", ["h1", "h3"])
def test_connect_jobs_race_only_http2_over_tls_and_tcp(protocol):
    """HTTP/1.1 keeps its own pool (``http.h1_pool``) and QUIC one connection per origin
    (Chromium's QUIC session factory joins a server's requests): no connect jobs, even with
    three requests waiting at 300 ms."""
    _, net = _load(3, 0.3, "chromium", protocol=protocol)
    assert net.jobs.groups == {} and net.jobs.idle() == []
    with pytest.raises(ValueError):
        ConnectJobs(net, "firefox")


def test_chromium_client_flights_carry_its_post_quantum_key_share_rfc8446_section4_2_8():
    """Chromium's ClientHello (a 1,216-byte X25519MLKEM768 share beside X25519, and ECH GREASE)
    is 1,956 bytes plus the server name, two TCP segments; the stacks' OpenSSL one is a few hundred."""
    stack = hs.flights("cdn.site.example")
    chromium = hs.flights("cdn.site.example", client="chromium")
    assert chromium.client_hello == 1956 + len("cdn.site.example")
    assert chromium.client_hello > 1460 > stack.client_hello
    assert chromium.server_flight == stack.server_flight  # the server's flight is the server's
    with pytest.raises(ValueError):
        hs.flights("cdn.site.example", client="lynx")


def test_the_lab_chain_size_is_known_from_its_names_rfc5280_section4_1():
    """``chain_der_bytes`` (fixed keys and dates, the largest signatures) is within 4 bytes above
    any chain the lab makes for the same names, and grows with every name the leaf carries."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    from simulator.lab.certs import chain_der_bytes, make_ca_and_leaf

    hosts = ("www.site.example", "cdn.site.example", "img.site.example")
    made = make_ca_and_leaf(list(hosts))
    real = sum(
        len(x509.load_pem_x509_certificate(made[k].encode()).public_bytes(Encoding.DER)) for k in ("ca_pem", "cert_pem")
    )
    assert 0 <= chain_der_bytes(hosts) - real <= 4
    assert chain_der_bytes(hosts + ("more.site.example",)) > chain_der_bytes(hosts)
