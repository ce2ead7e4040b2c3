"""Connection coalescing: the RFC 9113 section 9.1.1 rule, the ORIGIN frame (RFC 8336),
421 Misdirected Request retries (RFC 9110 section 15.5.20), HTTP/3 with Alt-Svc (RFC 7838),
handshake costs, the real h2 library and an ORIGIN frame, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.errors import InputError
from simulator.studies import coalescing as co
from simulator.traces.model import Exchange, Trace

ROOT = Path(__file__).resolve().parent.parent
RTT = 0.1
DOC = "www.site.example"


def _exchange(i, url, rtype, size, *, initiator=None):
    origin = "/".join(url.split("/", 3)[:3])
    path = "/" + url.split("/", 3)[3]
    request = (
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", origin.split("://")[1].encode()),
        (b":path", path.encode()),
    )
    return Exchange(
        index=i,
        request_headers=request,
        response_headers=((b":status", b"200"),),
        response_body_bytes=size,
        start_s=i * 0.001,
        origin=origin,
        page="p1",
        priority="Low",
        resource_type=rtype,
        initiator=initiator,
        initiator_type=None if initiator is None else "parser",
        url=url,
        timings={"wait": 0.0},
    )


def page(hosts: list[str], *, per_host: int = 1, size: int = 2000) -> Trace:
    """A document on ``DOC`` and ``per_host`` images on each of ``hosts``, all found in the
    document (so after its connection is up); small, so round trips decide the times."""
    ex = [_exchange(0, f"https://{DOC}/", "document", 3000)]
    for h in hosts:
        for k in range(per_host):
            ex.append(_exchange(len(ex), f"https://{h}/i{k}.png", "image", size, initiator=f"https://{DOC}/"))
    return Trace(exchanges=ex, format="har", source="small.har")


def files(tmp_path, dns: dict, cert: dict) -> dict:
    d, c = tmp_path / "dns.json", tmp_path / "cert.json"
    d.write_text(json.dumps(dns))
    c.write_text(json.dumps(cert))
    return {"dns_file": str(d), "cert_file": str(c)}


def run(trace, tmp_path, dns, cert, **kw):
    params = co.CoalescingParams(
        **{
            "bandwidth_bps": None,
            "rtt_s": RTT,
            "think_s": 0.0,
            "dns_lookup_s": 0.03,
            **files(tmp_path, dns, cert),
            **kw,
        }
    )
    return co.run(trace, params)


def conn_host(result, mode, host):
    """The hosts of the connections that carried ``host``'s resources in ``mode``."""
    r = result.resources
    rows = r[(r["mode"] == mode) & (r["origin"] == f"https://{host}")]
    return set(rows["connection"].str.split(":", n=1).str[1])


# -- the coalescing rules ----------------------------------------------------------------


def test_no_coalescing_one_connection_per_origin(tmp_path):
    hosts = ["a.site.example", "b.site.example", "cdn.other.example"]
    everyone = {h: ["192.0.2.1"] for h in [DOC, *hosts]}
    wildcard = {h: ["*.site.example", "*.other.example"] for h in [DOC, *hosts]}
    r = run(page(hosts, per_host=2), tmp_path, everyone, wildcard, modes=("none", "ip"))
    s = r.summary
    assert s.loc["none", "connections"] == 4 == s.loc["none", "origins"]
    assert s.loc["none", "coalesced_requests"] == 0
    for h in hosts:
        assert conn_host(r, "none", h) == {h}
    # The same page, one address and one certificate for all: the 9.1.1 rule needs one connection.
    assert s.loc["ip", "connections"] == 1


def test_rfc9113_9_1_1_needs_same_address_and_a_certificate_covering_the_name(tmp_path):
    """RFC 9113 section 9.1.1: reuse needs the host's DNS answer to hold the connection's
    address and the certificate to cover the host; either missing -> its own connection."""
    dns = {
        DOC: ["192.0.2.1"],
        "static.site.example": ["192.0.2.9", "192.0.2.1"],
        "other.site.example": ["192.0.2.2"],
        "cdn.other.example": ["192.0.2.1"],
    }
    cert = {h: ["*.site.example", "site.example"] for h in [DOC, "static.site.example", "other.site.example"]}
    cert["cdn.other.example"] = ["cdn.other.example"]
    r = run(
        page(["static.site.example", "other.site.example", "cdn.other.example"]), tmp_path, dns, cert, modes=("ip",)
    )
    assert conn_host(r, "ip", "static.site.example") == {DOC}  # same address, name covered
    assert conn_host(r, "ip", "other.site.example") == {"other.site.example"}  # name covered, other address
    assert conn_host(r, "ip", "cdn.other.example") == {"cdn.other.example"}  # same address, name not covered
    assert r.summary.loc["ip", "connections"] == 3


def test_wildcard_matches_one_label_only():
    """RFC 6125 section 6.4.3: ``*`` is the whole left-most label and matches one label."""
    san = ("*.site.example", "exact.example")
    assert co.cert_covers(san, "a.site.example") and co.cert_covers(san, "EXACT.example")
    assert not co.cert_covers(san, "site.example") and not co.cert_covers(san, "a.b.site.example")
    assert not co.cert_covers(san, "a.exact.example")


def test_with_origin_every_announced_origin_shares_one_connection_without_dns(tmp_path):
    """RFC 8336 sections 2.3-2.4: every origin the ORIGIN frame announces (and the
    certificate covers) goes on the one connection, even with other DNS answers, and the
    client need not look them up; the 9.1.1 rule opens one connection per address."""
    hosts = [f"h{k}.cdn.example" for k in range(6)]
    dns = {DOC: ["192.0.2.1"], **{h: [f"198.51.100.{k + 1}"] for k, h in enumerate(hosts)}}
    names = [DOC, *hosts]
    cert = {h: {"san": names, "origin": [f"https://{n}" for n in names]} for h in names}
    r = run(page(hosts, per_host=2, size=500), tmp_path, dns, cert, modes=("ip", "origin"))
    s = r.summary
    assert s.loc["origin", "connections"] == 1
    assert set(r.resources[r.resources["mode"] == "origin"]["connection"]) == {f"c0:{DOC}"}
    assert s.loc["origin", "dns_lookups"] == 1 and s.loc["origin", "dns_skipped"] == len(hosts)
    assert s.loc["origin", "origin_frame_bytes"] == co.origin_frame_bytes([f"https://{n}" for n in names])
    assert s.loc["ip", "connections"] == 1 + len(hosts)
    # Everything fits the initial window: ORIGIN saves the lookup and the handshake (2 RTT).
    assert s.loc["ip", "onload_s"] - s.loc["origin", "onload_s"] == pytest.approx(2 * RTT + 0.03, abs=0.01)


def test_origin_does_not_relax_certificate_validation(tmp_path):
    """RFC 8336 section 2.4: announced, but not covered by the certificate -> not on it."""
    dns = {DOC: ["192.0.2.1"], "x.cdn.example": ["192.0.2.1"]}
    cert = {
        DOC: {"san": [DOC], "origin": [f"https://{DOC}", "https://x.cdn.example"]},
        "x.cdn.example": ["x.cdn.example"],
    }
    r = run(page(["x.cdn.example"]), tmp_path, dns, cert, modes=("origin",))
    assert conn_host(r, "origin", "x.cdn.example") == {"x.cdn.example"}
    assert r.summary.loc["origin", "connections"] == 2


def test_an_origin_set_excludes_what_it_does_not_name(tmp_path):
    """RFC 8336 section 2.4: clients MUST NOT use a connection for an origin outside its
    Origin Set, even where the 9.1.1 rule would allow it."""
    dns = {DOC: ["192.0.2.1"], "static.site.example": ["192.0.2.1"]}
    cert = {DOC: {"san": ["*.site.example"], "origin": [f"https://{DOC}"]}, "static.site.example": ["*.site.example"]}
    r = run(page(["static.site.example"]), tmp_path, dns, cert, modes=("ip", "origin"))
    assert conn_host(r, "ip", "static.site.example") == {DOC}
    assert conn_host(r, "origin", "static.site.example") == {"static.site.example"}


# -- 421 Misdirected Request -------------------------------------------------------------


def test_421_retry_costs_a_round_trip_a_new_connection_and_its_handshake(tmp_path):
    """RFC 9110 section 15.5.20: the refused request's round trip, then a new connection
    (TCP 1 RTT + TLS 1.3 1 RTT) and the request again: 3 RTT later than coalesced."""
    dns = {DOC: ["192.0.2.1"], "static.site.example": ["192.0.2.1"]}
    cert = {h: ["*.site.example"] for h in dns}
    t = page(["static.site.example"])
    ok = run(t, tmp_path, dns, cert, modes=("ip",), p421=0.0)
    refused = run(t, tmp_path, dns, cert, modes=("ip",), p421=1.0)
    a, b = ok.summary.loc["ip"], refused.summary.loc["ip"]
    assert a["connections"] == 1 and b["connections"] == 2
    assert b["handshakes"] == a["handshakes"] + 1 and b["handshake_rtts"] == a["handshake_rtts"] + 2
    assert b["misdirected_421"] == 1 and b["retries_421"] == 1
    arrived = lambda res: res.resources.set_index("index").loc[1, "arrived_s"]  # noqa: E731
    delta = arrived(refused) - arrived(ok)
    assert delta >= 3 * RTT - 1e-9
    assert delta == pytest.approx(3 * RTT, abs=0.01)
    assert conn_host(refused, "ip", "static.site.example") == {"static.site.example"}


def test_421_after_origin_costs_the_skipped_dns_lookup_too(tmp_path):
    """With ORIGIN the client skipped the lookup; a 421 removes the origin from the Origin
    Set (RFC 8336 section 2.3) and the retry needs DNS, a handshake and the request."""
    dns = {DOC: ["192.0.2.1"], "x.site.example": ["198.51.100.7"]}
    cert = {h: {"san": ["*.site.example"], "origin": [f"https://{h}" for h in dns]} for h in dns}
    t = page(["x.site.example"])
    ok = run(t, tmp_path, dns, cert, modes=("origin",))
    refused = run(t, tmp_path, dns, cert, modes=("origin",), p421_announced=1.0)
    delta = (
        refused.resources.set_index("index").loc[1, "arrived_s"] - ok.resources.set_index("index").loc[1, "arrived_s"]
    )
    assert delta >= 3 * RTT + 0.03 - 1e-9
    assert refused.summary.loc["origin", "connections"] == 2 and refused.summary.loc["origin", "dns_lookups"] == 2
    c = refused.connections.set_index("connection")
    assert c.loc[f"c0:{DOC}", "refused_hosts"] == "x.site.example"
    assert c.loc[f"c0:{DOC}", "origin_set"] == 1  # the 421 took it out of the set


def test_421_draws_are_per_server_pair_and_monotone_in_p(tmp_path):
    """A server that refuses a host refuses all of its requests; a larger p421 refuses a
    superset (one seeded draw per pair)."""
    hosts = [f"h{k}.site.example" for k in range(8)]
    dns = {h: ["192.0.2.1"] for h in [DOC, *hosts]}
    cert = {h: ["*.site.example"] for h in dns}
    t = page(hosts, per_host=2)
    refused = []
    for p in (0.2, 0.5, 0.9):
        r = run(t, tmp_path, dns, cert, modes=("ip",), p421=p, seed=4)
        res = r.resources
        hit = set(res[res["misdirected_421"] > 0]["origin"])
        for origin in hit:  # both requests of a refused host were refused (or waited for its own conn)
            assert (res[res["origin"] == origin]["connection"].str.split(":", n=1).str[1] == origin[8:]).all()
        refused.append(hit)
    assert refused[0] <= refused[1] <= refused[2]


# -- HTTP/3 and handshakes ------------------------------------------------------------


def test_handshake_round_trips_and_bytes():
    small = co.handshake("h2", ("*.site.example",))
    assert small.rtts == 2
    assert small.cert_bytes == co.CERT_CHAIN_BASE_BYTES + len("*.site.example") + 2
    quic = co.handshake("h3", ("*.site.example",))
    assert quic.rtts == 1 and quic.client_bytes >= 1200  # RFC 9000 section 14.1
    # RFC 9000 section 8.1: a server flight above 3x what the client sent waits one more round trip.
    big = co.handshake("h3", tuple(f"*.customer{k}.example" for k in range(120)))
    assert big.server_bytes > 3 * 1200 and big.rtts >= 2
    assert co.handshake("h2", tuple(f"*.customer{k}.example" for k in range(120))).rtts == 2


def test_h3_altsvc_warm_uses_quic_cold_first_view_uses_tcp(tmp_path):
    dns = {DOC: ["192.0.2.1"], "x.other.example": ["192.0.2.2"]}
    cert = {DOC: {"san": [DOC], "h3": True}, "x.other.example": {"san": ["x.other.example"], "h3": False}}
    t = page(["x.other.example"])
    warm = run(t, tmp_path, dns, cert, modes=("none", "h3-altsvc")).summary
    assert warm.loc["h3-altsvc", "h3_connections"] == 1 and warm.loc["h3-altsvc", "h2_connections"] == 1
    assert warm.loc["h3-altsvc", "handshake_rtts"] == 1 + 2
    assert warm.loc["h3-altsvc", "document_s"] == pytest.approx(warm.loc["none", "document_s"] - RTT, abs=0.01)
    cold = run(t, tmp_path, dns, cert, modes=("h3-altsvc",), altsvc_cache="cold").summary
    assert cold.loc["h3-altsvc", "h3_connections"] == 0


def test_real_h2_library_carries_an_origin_frame():
    """h2 has no ORIGIN API; an ExtensionFrame of type 0xc written by a real server
    connection reaches a real client connection as UnknownFrameReceived, intact."""
    origins = ["https://www.site.example", "https://static.site.example", "https://cdn.other.example"]
    wire, read = co.origin_frame_roundtrip(origins)
    assert wire[3] == 0xC and wire[5:9] == b"\0\0\0\0"  # type ORIGIN, stream 0
    assert len(wire) == co.origin_frame_bytes(origins)
    assert read == origins
    assert co.parse_origin_frame(b"\x00\x03abc" + co.origin_frame_payload(["https://a.example"])) == [
        "https://a.example"
    ]  # RFC 8336 section 2.2: bad entry ignored


# -- the real h2 stack ------------------------------------------------------------------


def test_real_h2_stack_origin_frame_puts_every_announced_origin_on_one_connection(tmp_path):
    """The real h2 server writes the ORIGIN frame after its SETTINGS; the real client's
    UnknownFrameReceived builds the Origin Set (RFC 8336 section 2.3), and every
    announced origin goes on the one connection; the 9.1.1 rule opens one per address."""
    hosts = [f"h{k}.cdn.example" for k in range(4)]
    dns = {DOC: ["192.0.2.1"], **{h: [f"198.51.100.{k + 1}"] for k, h in enumerate(hosts)}}
    names = [DOC, *hosts]
    cert = {h: {"san": names, "origin": [f"https://{n}" for n in names]} for h in names}
    r = run(page(hosts, size=500), tmp_path, dns, cert, modes=("ip", "origin"), backend="stacks", tls=False)
    s = r.summary
    assert s.loc["origin", "connections"] == 1 and s.loc["origin", "origin_frames_received"] == 1
    assert set(r.resources[r.resources["mode"] == "origin"]["connection"]) == {f"c0:{DOC}"}
    assert s.loc["ip", "connections"] == 1 + len(hosts) and s.loc["ip", "origin_frames_received"] == 0
    # Cleartext TCP: 1 RTT handshake, and the DNS lookup, saved per origin.
    assert s.loc["ip", "onload_s"] - s.loc["origin", "onload_s"] == pytest.approx(RTT + 0.03, abs=0.02)


def test_real_h2_stack_421_retry_costs_a_round_trip_and_a_new_connection(tmp_path):
    """A real 421 from the real h2 server: its round trip, then a new (cleartext) connection:
    at least 2 RTT later than the coalesced request."""
    dns = {DOC: ["192.0.2.1"], "static.site.example": ["192.0.2.1"]}
    cert = {h: ["*.site.example"] for h in dns}
    t = page(["static.site.example"])
    kw = dict(modes=("ip",), backend="stacks", tls=False)
    ok = run(t, tmp_path, dns, cert, p421=0.0, **kw)
    refused = run(t, tmp_path, dns, cert, p421=1.0, **kw)
    assert ok.summary.loc["ip", "connections"] == 1 and refused.summary.loc["ip", "connections"] == 2
    assert refused.summary.loc["ip", "misdirected_421"] == 1
    delta = (
        refused.resources.set_index("index").loc[1, "arrived_s"] - ok.resources.set_index("index").loc[1, "arrived_s"]
    )
    assert delta >= 2 * RTT - 1e-9


def test_stacks_backend_refuses_h3():
    with pytest.raises(InputError, match="h3-altsvc"):
        co.CoalescingParams(backend="stacks", tls=False)


def test_real_h2_stack_over_tls_coalesces_like_cleartext_one_round_trip_later(tmp_path):
    """The stacks backend runs h2 over TLS 1.3 too: the same connections and ORIGIN frames
    as cleartext, and the page one TLS round trip (RFC 8446 section 2) later at least."""
    hosts = [f"h{k}.cdn.example" for k in range(2)]
    dns = {DOC: ["192.0.2.1"], **{h: [f"198.51.100.{k + 1}"] for k, h in enumerate(hosts)}}
    names = [DOC, *hosts]
    cert = {h: {"san": names, "origin": [f"https://{n}" for n in names]} for h in names}
    runs = {
        tls: run(page(hosts, size=500), tmp_path, dns, cert, modes=("origin",), backend="stacks", tls=tls)
        for tls in (True, False)
    }
    for col in ("connections", "origin_frames_received"):
        assert runs[True].summary.loc["origin", col] == runs[False].summary.loc["origin", col]
    assert runs[True].summary.loc["origin", "onload_s"] >= runs[False].summary.loc["origin", "onload_s"] + RTT - 1e-9


# -- the study as a whole -------------------------------------------------------------


def test_default_topology_on_the_bundled_many_origins_page():
    from simulator.traces import load

    r = co.run(load(str(ROOT / "traces/synthetic-many-origins.har")), co.CoalescingParams(seed=1))
    s = r.summary
    assert s.loc["none", "connections"] == s.loc["none", "origins"] == 102
    assert s.loc["ip", "connections"] < s.loc["none", "connections"]
    assert s.loc["origin", "connections"] <= s.loc["ip", "connections"]
    assert s.loc["h3-altsvc", "h3_connections"] > 0
    assert s.loc["h3-altsvc", "handshake_rtts"] < s.loc["ip", "handshake_rtts"]
    assert (s["seed"] == 1).all() and (r.resources["seed"] == 1).all() and (r.connections["seed"] == 1).all()
    assert r.params["seed"] == 1 and r.params["modes"] == ",".join(co.MODES)


def test_bad_params_raise_input_error():
    with pytest.raises(InputError, match="unknown mode 'pigeon'"):
        co.CoalescingParams(modes=("pigeon",))
    with pytest.raises(InputError, match="p421"):
        co.CoalescingParams(p421=1.5)


@pytest.mark.parametrize(
    "kind,content,expect",
    [
        ("dns", "{not json", "dns.json: not valid JSON"),
        ("dns", '{"www.site.example": ["300.1.1.1"]}', "dns.json: dns: 'www.site.example': '300.1.1.1' is not an IP"),
        ("cert", '{"www.site.example": ["a.*.example"]}', "cert.json: cert: 'www.site.example': 'a.\\*.example'"),
        ("cert", '{"www.site.example": {"sans": []}}', "cert.json: cert: 'www.site.example': expected"),
    ],
)
def test_cli_bad_files_exit_2_one_line_naming_file_and_place(tmp_path, kind, content, expect):
    path = tmp_path / f"{kind}.json"
    path.write_text(content)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulator.cli",
            "coalescing",
            "--trace",
            str(ROOT / "traces/synthetic-page.har"),
            f"--{kind}",
            str(path),
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    import re

    assert re.search(expect, proc.stderr), proc.stderr


def test_cli_unknown_mode_exit_2(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulator.cli",
            "coalescing",
            "--trace",
            str(ROOT / "traces/synthetic-page.har"),
            "--mode",
            "none,carrier-pigeon",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "carrier-pigeon" in proc.stderr


def test_toml_files_and_written_topology_round_trip(tmp_path):
    """A topology written by --write-topology read back gives the same run."""
    from simulator.traces import load

    t = load(str(ROOT / "traces/synthetic-page.har"))
    out = tmp_path / "topo.json"
    first = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulator.cli",
            "coalescing",
            "--trace",
            str(ROOT / "traces/synthetic-page.har"),
            "--seed",
            "3",
            "--write-topology",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    topo = json.loads(out.read_text())
    (tmp_path / "dns.toml").write_text("".join(f'"{h}" = {json.dumps(a)}\n' for h, a in topo["dns"].items()))
    again = co.run(t, co.CoalescingParams(seed=99, dns_file=str(tmp_path / "dns.toml"), cert_file=str(out)))
    before = json.loads(first.stdout)["modes"]
    for mode in co.MODES:
        assert again.summary.loc[mode, "connections"] == before[mode]["connections"]
        assert again.summary.loc[mode, "handshake_bytes"] == before[mode]["handshake_bytes"]


def test_batch_coalescing_over_grid_and_seeds(tmp_path):
    from simulator import batch

    grid = tmp_path / "grid.toml"
    grid.write_text('mode = ["none,ip,origin"]\nrtt = ["50ms", "200ms"]\n')
    out = tmp_path / "results"
    report = batch.run_batch(
        "coalescing", [str(ROOT / "traces/synthetic-page.har")], str(grid), 2, out=str(out), workers=0, progress=False
    )
    assert report.failed == 0
    df = batch.load(str(out))
    assert len(df) == 2 * 2 * 3
    assert set(df["seed"]) == {1, 2} and set(df["rtt_s"]) == {0.05, 0.2} and set(df["mode"]) == {"none", "ip", "origin"}
    assert (df[df["mode"] == "none"]["gain_onload_s"] == 0).all()
