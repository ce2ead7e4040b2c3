"""Connection coalescing: none vs the RFC 9113 section 9.1.1 rule vs the ORIGIN frame
(RFC 8336) vs HTTP/3 with Alt-Svc (RFC 7838), on the page-load model.

The question (discussed at the HTTP Workshop 2017 with the ORIGIN frame, RFC 8336,
421 Misdirected Request and Alt-Svc, RFC 7838): how many connections (and so
handshakes, round trips and bytes) does a browser open for a page whose resources come
from many origins, and what does each way of sharing connections save or cost, including
the 421 (Misdirected Request, RFC 9110 section 15.5.20) retries when a server refuses a
request the client coalesced onto it.

The page is ``pageload.page_graph`` (HAR initiators); the browser is ``pageload``'s with a
connection pool written here (``CoalescingPool``) between it and the network backend.
Each request goes through the pool, which does what the mode says:

- ``none``: one connection per origin (after a DNS lookup of its host).
- ``ip`` (RFC 9113 section 9.1.1, RFC 9110 section 4.3.4): a request may go on an open
  connection to another host when the server's certificate covers the request's host
  (a ``dNSName`` of the ``subjectAltName``, RFC 6125 section 6.4: ``*`` only as the whole
  left-most label, matching one label) *and* the host's own DNS answer contains the
  address the connection is connected to (Chrome's rule; the client has to finish the
  lookup first).
- ``origin`` (RFC 8336): servers that support it send an ORIGIN frame (type 0xc, stream
  0) right after their SETTINGS, naming the origins the connection serves; the client's
  *Origin Set* is the initial origin (the SNI host) plus those (section 2.3).  A request
  for an origin in an open connection's Origin Set goes on it *without a DNS lookup*
  (section 2.4: "clients MAY avoid consulting DNS"), but the certificate must still cover
  the host (section 2.4: "the client is still required to obtain a certificate that
  passes suitable checks"): ORIGIN relaxes DNS, never certificate validation.  A
  connection with an Origin Set is never used for an origin outside it (section 2.4
  MUST NOT); a 421 removes the origin from the set (section 2.3).  Origins no Origin Set
  names fall back to the ``ip`` rule (servers without ORIGIN leave the set uninitialised).
- ``h3-altsvc``: HTTP/3 where the origin advertises it with ``Alt-Svc: h3`` (RFC 7838,
  RFC 9114 section 3.2), reusing connections by the ``ip`` rule (RFC 9114 section 3.3 asks
  only the certificate; browsers also check the address, as here).  ``altsvc_cache``
  decides which view this is: ``warm`` (default; a repeat view with the Alt-Svc entries
  of an earlier visit cached, ``ma`` 24 h by default, RFC 7838 section 3.1: every origin
  that advertised h3 opens QUIC straight away) or ``cold`` (a first view: every
  connection starts over TCP + TLS; an Alt-Svc learnt from a response only serves
  connections opened later to that origin, in one page load only the 421 retries).
  A DNS HTTPS record (RFC 9460) that would announce h3 on a first view is not modelled.

Waiting for a connection being set up: a request whose own origin already has a
connection in its handshake waits for it; with ``wait_pending`` (default) a request also
waits for a connection in its handshake to an address in its host's DNS answer and then
checks that connection's certificate (it is only known when the handshake ends);
otherwise it opens its own.  Requests for origins found at the same moment (the
document's sub-resources) can therefore still open parallel connections, as browsers do.

421: a server may refuse a request coalesced onto it (it serves the name under a
different configuration, or not at all).  Whether the server of connection C refuses
host H is drawn once per (C's host, H) from the load's seeded stream ``421:C:H`` with
probability ``p421`` (requests coalesced by the ``ip`` rule) or ``p421_announced`` (for
origins the server itself announced in ORIGIN; default 0).  A refused request costs its
round trip (request out, ``421`` back), then the client retries on a connection of the
origin's own (RFC 9110 section 15.5.20 allows the retry on a different connection;
browsers retry without coalescing): a DNS lookup if the origin never had one (ORIGIN
skipped it), and a new connection with its handshake.

Handshakes (modelling numbers, stated here; full handshakes, no resumption or 0-RTT):

- h2: TCP (SYN 60 B, SYN-ACK 60 B, ACK 52 B: 1 RTT) then TLS 1.3 (RFC 8446: 1 RTT):
  ClientHello 517 B (Chrome pads it to 512 B plus the record header), the server's flight
  ServerHello 127 B + ChangeCipherSpec 6 B + EncryptedExtensions, CertificateVerify
  (ECDSA P-256) and Finished with their record overhead 239 B + the certificate chain,
  client ChangeCipherSpec + Finished 64 B; 52 B of TCP/IPv4 headers per 1448-B segment.
  2 RTT before the first request.
- h3: QUIC (RFC 9000, RFC 9001): 1 RTT; the client's Initial datagram padded to 1200 B
  (RFC 9000 section 14.1), the server's flight (the same TLS messages without records,
  282 B + chain) in datagrams of at most 1200 B with 42 B of QUIC header and AEAD tag,
  28 B of UDP/IPv4 per datagram.  Until the client's address is validated the server may
  send at most three times what it received (RFC 9000 section 8.1): a flight above 3600 B
  waits for the client's next (padded) datagram, one more RTT per 3600 B.
- The certificate chain: 1800 B (an ECDSA leaf without its names and one intermediate)
  plus every ``subjectAltName`` dNSName (its length + 2 B of DER).  A certificate naming
  more hosts lets more origins share a connection and makes every handshake with it
  larger.
- ORIGIN frame: 9 B header + (2 + length) per origin, in the server's first flight.
- Set-up time = RTTs x RTT + the handshake's bytes at the bottleneck bandwidth; DNS
  (``dns_lookup_s``, once per host and page load) comes before it.

The certificates and DNS answers are parameters: ``--dns FILE`` (host -> addresses) and
``--cert FILE`` (host -> the SAN list of the certificate its server presents, optionally
with the origins its ORIGIN frame announces and whether it advertises h3), JSON or TOML;
hosts a file does not name get the seeded default (``default_topology``): third parties
on three CDNs or self-hosted, one wildcard certificate per site, some CDN customers on a
shared multi-site certificate, CDN addresses shared between customers (one CDN answers
per site, one per host name), ORIGIN frames from the CDNs only, h3 on the CDNs and on
some self-hosted sites.  ``workbench coalescing --write-topology FILE`` writes the
topology a run used, to edit.

Backends: ``model`` (the transport models: TCP for h2, QUIC for h3; the pool times DNS and
the handshakes above) and ``stacks`` (the real ``h2`` stack over the TCP model, modes
``none``, ``ip`` and ``origin``).  What the installed libraries do with an ORIGIN frame
(checked by the tests, ``origin_frame_roundtrip``): ``h2`` 4.4.1 has no API to send one and
``hyperframe`` 6.1.0 no ORIGIN frame class, but a server can write a hyperframe
``ExtensionFrame(type=0xc, stream_id=0)`` itself (setting its ``body_len``, which the
constructor leaves at 0), and the ``h2`` client passes it up as ``UnknownFrameReceived``
with the payload intact.  On the stacks backend the real server writes the ORIGIN frame
right after its SETTINGS (``stacks.h2`` ``send_extension_frame``), and the Origin Set is
what the real client parsed from it; a connection is usable for other origins once the
client has the server's SETTINGS (or its ORIGIN frame, when one is due); the real server
answers refused requests with a real 421.  The real h2 stack runs TLS 1.3 (the real
OpenSSL, ``stacks.tls``) by default, as the model's handshakes do; with ``tls=False``
(``--no-tls``) it is cleartext (``h2c``, prior knowledge: one TCP round trip, no
certificate) and processes ORIGIN on a cleartext connection, which RFC 8336 section 2.2
tells a client to ignore: it then stands in for h2 over TLS.  Either way the certificate
rules are the pool's, applied to the configured SAN lists (the real handshake's
certificate is the stack's fixed one, not verified).

Written by hand: no library models browser connection pools, certificate-name matching
for coalescing, or ORIGIN frames (h2 has none).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import math
import random
import struct
import sys
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd

from .. import __version__, argtypes
from ..engine import derive_seed
from ..errors import InputError
from ..traces.model import Trace
from ..units import parse_bandwidth, parse_duration
from .pageload import ClientCache, LoadParams, ServerPlan, load_page, page_graph
from ..traces.pagegraph import PageGraph
from .pageload.cache import parse_cache
from .summary_json import rows_by_index

__all__ = ["MODES", "CoalescingParams", "CoalescingResult", "Topology", "HostServer", "default_topology",
           "read_topology", "cert_covers", "Handshake", "handshake", "origin_frame_bytes", "origin_frame_payload",
           "parse_origin_frame", "origin_frame_roundtrip", "CoalescingPool", "run", "run_seeds"]

MODES = ("none", "ip", "origin", "h3-altsvc")
METRICS = ("document_s", "render_blocking_s", "onload_s")

# -- handshake numbers (see the module docstring) ----------------------------------------
TCP_SYN_BYTES, TCP_SYNACK_BYTES, TCP_ACK_BYTES = 60, 60, 52
TCP_HEADER_BYTES, TCP_MSS_BYTES = 52, 1448
TLS_CLIENT_HELLO_BYTES = 517
TLS_CLIENT_FINISHED_BYTES = 64
TLS_SERVER_FIXED_BYTES = 127 + 6 + 239        # ServerHello, CCS, EE + CertificateVerify + Finished
QUIC_SERVER_TLS_FIXED_BYTES = 282             # the same messages in CRYPTO frames (no records)
QUIC_MIN_INITIAL_BYTES = 1200                 # RFC 9000 section 14.1
QUIC_MAX_DATAGRAM_BYTES = 1200
QUIC_PACKET_OVERHEAD_BYTES = 42               # long header + AEAD tag
UDP_IP_HEADER_BYTES = 28
QUIC_CLIENT_FINISHED_BYTES = 36 + QUIC_PACKET_OVERHEAD_BYTES
AMPLIFICATION_FACTOR = 3                      # RFC 9000 section 8.1
CERT_CHAIN_BASE_BYTES = 1800
ORIGIN_FRAME_TYPE = 0xC                       # RFC 8336 section 3


# ---------------------------------------------------------------------------------------
# Certificates, DNS, servers


def cert_covers(san: tuple[str, ...], host: str) -> bool:
    """Is ``host`` one of the certificate's dNSNames (RFC 6125 section 6.4.3: a ``*`` only
    as the complete left-most label, matching exactly one label)?"""
    host = host.lower().rstrip(".")
    for name in san:
        name = name.lower().rstrip(".")
        if name == host:
            return True
        if name.startswith("*.") and "." in host:
            label, rest = host.split(".", 1)
            if label and rest == name[2:]:
                return True
    return False


def chain_bytes(san: tuple[str, ...]) -> int:
    """The certificate chain's size: a base plus every dNSName (DER: tag, length, name)."""
    return CERT_CHAIN_BASE_BYTES + sum(len(n) + 2 for n in san)


@dataclass(frozen=True)
class HostServer:
    """What a client meets when it connects to ``host``: the addresses DNS gives, the
    certificate presented for that SNI, the origins an ORIGIN frame announces (None: the
    server sends none) and whether it advertises HTTP/3 (``Alt-Svc: h3``)."""

    host: str
    addresses: tuple[str, ...]
    san: tuple[str, ...]
    announces: tuple[str, ...] | None = None      # hosts (ORIGIN carries https://host)
    h3: bool = True
    provider: str = ""


@dataclass
class Topology:
    servers: dict[str, HostServer]
    sources: dict[str, str] = field(default_factory=dict)      # "dns" / "cert": file or "default"

    def __getitem__(self, host: str) -> HostServer:
        return self.servers[host]

    def to_dict(self) -> dict:
        return {"dns": {h: list(s.addresses) for h, s in self.servers.items()},
                "cert": {h: {"san": list(s.san), "origin": None if s.announces is None else list(s.announces),
                             "h3": s.h3, "provider": s.provider} for h, s in self.servers.items()}}

    def digest(self) -> str:
        import hashlib

        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def host_of(origin: str) -> str:
    authority = origin.split("://", 1)[-1].split("/", 1)[0]
    if authority.startswith("["):
        return authority.split("]", 1)[0] + "]"
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def _site(host: str) -> str:
    return ".".join(host.split(".")[-2:])


# (name, share of third-party sites, DNS answers per "site" or per "host", sends ORIGIN)
CDNS = (("cdn-1", 0.35, "site", True), ("cdn-2", 0.25, "host", True), ("cdn-3", 0.15, "site", True))
CDN_POOL_ADDRESSES = 12          # addresses a CDN hands out (its customers share them)
SHARED_CERT_P = 0.3              # a CDN customer on the CDN's shared multi-site certificate
SELF_HOSTED_H3_P = 0.3


def default_topology(hosts: list[str], document_host: str, seed: int) -> Topology:
    """A realistic, seeded default for the page's hosts (see the module docstring).

    The first party: its ``api.`` host self-hosted, the others on ``cdn-1``.  Each
    third-party site: on a CDN with the shares of ``CDNS``, else self-hosted.  Every site
    has a wildcard certificate ``*.site`` + ``site``; a CDN customer is on the CDN's
    shared certificate (all such customers' names) with probability ``SHARED_CERT_P``.
    A CDN answers DNS with two of its ``CDN_POOL_ADDRESSES`` addresses, the same for every
    host of a site (``site``) or drawn per host name (``host``); customers on the shared
    certificate get the CDN's first two addresses.  A self-hosted site has one address of
    its own.  CDNs announce in ORIGIN every page host they serve under the same
    certificate; self-hosted servers send no ORIGIN."""
    rng = random.Random(derive_seed(seed, "coalescing-topology"))
    first_party = _site(document_host)
    sites = list(dict.fromkeys(_site(h) for h in hosts))
    provider: dict[str, str] = {}
    shared: dict[str, bool] = {}
    for site in sites:                         # one draw pair per site, in page order
        u, v = rng.random(), rng.random()
        if site == first_party:
            provider[site], shared[site] = "cdn-1", False
            continue
        acc, chosen = 0.0, "self"
        for name, share, _, _ in CDNS:
            acc += share
            if u < acc:
                chosen = name
                break
        provider[site] = chosen
        shared[site] = chosen != "self" and v < SHARED_CERT_P
    cdn = {name: (mode, origin) for name, _, mode, origin in CDNS}
    pool = {name: [f"198.51.{100 + i}.{k + 1}" for k in range(CDN_POOL_ADDRESSES)] for i, (name, *_) in
            enumerate(CDNS)}
    shared_san = {name: tuple(n for s in sites if provider[s] == name and shared[s] for n in (f"*.{s}", s))
                  for name in cdn}
    site_addr: dict[str, tuple[str, ...]] = {}
    self_index = 0
    servers: dict[str, HostServer] = {}
    where: dict[str, str] = {}                 # host -> provider
    for host in hosts:
        site = _site(host)
        prov = provider[site]
        if site == first_party and host.startswith("api."):
            prov = "self"
        where[host] = prov
    for host in hosts:
        site, prov = _site(host), where[host]
        if prov == "self":
            if (site, "self") not in site_addr:
                self_index += 1
                site_addr[(site, "self")] = (f"192.0.2.{self_index}",) if self_index < 255 else (
                    f"203.0.113.{self_index - 254}",)
            addresses = site_addr[(site, "self")]
            san = (f"*.{site}", site)
            h3 = random.Random(derive_seed(seed, f"h3:{site}")).random() < SELF_HOSTED_H3_P
        else:
            mode, _ = cdn[prov]
            if shared[site]:
                addresses = tuple(pool[prov][:2])
                san = shared_san[prov]
            else:
                key = site if mode == "site" else host
                r = random.Random(derive_seed(seed, f"dns:{prov}:{key}"))
                addresses = tuple(r.sample(pool[prov], 2))
                san = (f"*.{site}", site)
            h3 = True
        servers[host] = HostServer(host=host, addresses=addresses, san=san, h3=h3, provider=prov)
    # ORIGIN: a CDN names every page host on the same CDN that its certificate covers.
    for host, s in list(servers.items()):
        if s.provider == "self" or not cdn[s.provider][1]:
            continue
        announced = tuple(h for h in hosts if where[h] == s.provider and cert_covers(s.san, h))
        servers[host] = replace(s, announces=announced)
    return Topology(servers=servers, sources={"dns": "default", "cert": "default"})


# -- files -------------------------------------------------------------------------------


def _load_table(path: str, kind: str) -> dict:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"no such {kind} file.", path=path) from None
    except UnicodeDecodeError:
        raise InputError(f"the {kind} file is not UTF-8 text.", path=path) from None
    except OSError as exc:
        raise InputError(f"the {kind} file cannot be read ({exc.strerror}).", path=path) from None
    if p.suffix.lower() == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not valid TOML ({exc}).", path=path) from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}).",
                             path=path) from None
    if not isinstance(data, dict):
        raise InputError(f"the {kind} file must hold a table (host -> value), not {type(data).__name__}.",
                         path=path)
    if kind in data and isinstance(data[kind], dict):       # {"dns": {...}} or the table itself
        data = data[kind]
    return data


def _host_key(host, path: str, kind: str) -> str:
    h = str(host).strip().lower().rstrip(".")
    if not h or " " in h or "/" in h:
        raise InputError(f"{kind}: {host!r} is not a host name.", path=path)
    return h


def _dns_file(path: str) -> dict[str, tuple[str, ...]]:
    out = {}
    for host, value in _load_table(path, "dns").items():
        h = _host_key(host, path, "dns")
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not values:
            raise InputError(f"dns: {host!r}: expected an address or a non-empty list of addresses, "
                             f"got {value!r}.", path=path)
        addrs = []
        for a in values:
            try:
                addrs.append(str(ipaddress.ip_address(str(a))))
            except ValueError:
                raise InputError(f"dns: {host!r}: {a!r} is not an IP address.", path=path) from None
        out[h] = tuple(addrs)
    return out


def _check_names(names, path: str, where: str, what: str) -> tuple[str, ...]:
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise InputError(f"cert: {where}: {what} must be a list of host names, got {names!r}.", path=path)
    out = []
    for n in names:
        n = n.strip().lower().rstrip(".")
        if "*" in n and not (n.startswith("*.") and "*" not in n[2:] and "." in n[2:]):
            # RFC 6125 section 6.4.3 (as browsers apply it): only a whole left-most label.
            raise InputError(f"cert: {where}: {n!r} is not a valid name (a wildcard is only '*.' in front of "
                             f"two or more labels).", path=path)
        out.append(n)
    return tuple(out)


def _cert_file(path: str) -> dict[str, dict]:
    out = {}
    for host, value in _load_table(path, "cert").items():
        h = _host_key(host, path, "cert")
        where = repr(host)
        if isinstance(value, list):
            out[h] = {"san": _check_names(value, path, where, "the SAN list")}
            continue
        if not isinstance(value, dict) or "san" not in value:
            raise InputError(f"cert: {where}: expected a SAN list or a table with 'san', got {value!r}.", path=path)
        unknown = set(value) - {"san", "origin", "h3", "provider"}
        if unknown:
            raise InputError(f"cert: {where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                             f"(keys: san, origin, h3, provider).", path=path)
        entry = {"san": _check_names(value["san"], path, where, "'san'")}
        if "origin" in value:
            entry["announces"] = None if value["origin"] is None else tuple(
                host_of(o) for o in _check_names(value["origin"], path, where, "'origin'"))
        if "h3" in value:
            if not isinstance(value["h3"], bool):
                raise InputError(f"cert: {where}: 'h3' must be true or false, got {value['h3']!r}.", path=path)
            entry["h3"] = value["h3"]
        if "provider" in value:
            entry["provider"] = str(value["provider"])
        out[h] = entry
    return out


def read_topology(hosts: list[str], document_host: str, seed: int, dns_path: str | None = None,
                  cert_path: str | None = None) -> Topology:
    """The default topology, with what ``dns_path`` / ``cert_path`` say replacing it host by
    host.  A host given a certificate by the file but no ``origin`` key announces, in
    ORIGIN, the page hosts its certificate covers."""
    topo = default_topology(hosts, document_host, seed)
    dns = _dns_file(dns_path) if dns_path else {}
    certs = _cert_file(cert_path) if cert_path else {}
    servers = dict(topo.servers)
    for host in hosts:
        s = servers[host]
        if host in dns:
            s = replace(s, addresses=dns[host])
        if host in certs:
            c = certs[host]
            announces = c.get("announces", tuple(h for h in hosts if cert_covers(c["san"], h)))
            s = replace(s, san=c["san"], announces=announces, h3=c.get("h3", s.h3), provider=c.get("provider", "file"))
        servers[host] = s
    sources = {"dns": dns_path or "default", "cert": cert_path or "default"}
    return Topology(servers=servers, sources=sources)


# ---------------------------------------------------------------------------------------
# Handshakes and the ORIGIN frame


@dataclass(frozen=True)
class Handshake:
    protocol: str
    rtts: int
    client_bytes: int
    server_bytes: int
    cert_bytes: int
    origin_frame_bytes: int

    @property
    def bytes(self) -> int:
        return self.client_bytes + self.server_bytes

    def setup_s(self, rtt_s: float, bandwidth_bps: float | None) -> float:
        serialisation = self.bytes * 8 / bandwidth_bps if bandwidth_bps else 0.0
        return self.rtts * rtt_s + serialisation


def _segments(n: int, size: int) -> int:
    return -(-n // size) if n > 0 else 0


def handshake(protocol: str, san: tuple[str, ...], origin_frame: int = 0, *, tls: bool = True) -> Handshake:
    """A full handshake's round trips and bytes on the wire (module docstring numbers).
    ``tls=False``: cleartext h2 (prior knowledge), the TCP handshake alone."""
    cert = chain_bytes(san)
    if protocol == "h2" and not tls:
        client = TCP_SYN_BYTES + TCP_ACK_BYTES
        server = TCP_SYNACK_BYTES + origin_frame + (TCP_HEADER_BYTES if origin_frame else 0)
        return Handshake("h2", 1, client, server, 0, origin_frame)
    if protocol == "h2":
        client_tls = TLS_CLIENT_HELLO_BYTES + TLS_CLIENT_FINISHED_BYTES
        server_tls = TLS_SERVER_FIXED_BYTES + cert + origin_frame
        client = (TCP_SYN_BYTES + TCP_ACK_BYTES + client_tls
                  + TCP_HEADER_BYTES * (_segments(TLS_CLIENT_HELLO_BYTES, TCP_MSS_BYTES) + 1))
        server = TCP_SYNACK_BYTES + server_tls + TCP_HEADER_BYTES * _segments(server_tls, TCP_MSS_BYTES)
        return Handshake("h2", 2, client, server, cert, origin_frame)
    payload = QUIC_SERVER_TLS_FIXED_BYTES + cert + origin_frame
    per = QUIC_MAX_DATAGRAM_BYTES - QUIC_PACKET_OVERHEAD_BYTES
    datagrams = _segments(payload, per)
    server_udp = payload + datagrams * QUIC_PACKET_OVERHEAD_BYTES
    received = QUIC_MIN_INITIAL_BYTES
    rtts, client = 1, QUIC_MIN_INITIAL_BYTES + UDP_IP_HEADER_BYTES
    # RFC 9000 section 8.1: at most 3x what the client sent until its address is validated;
    # more waits for the client's next Initial (padded to 1200 B, section 14.1), one RTT.
    while server_udp > AMPLIFICATION_FACTOR * received:
        rtts += 1
        received += QUIC_MIN_INITIAL_BYTES
        client += QUIC_MIN_INITIAL_BYTES + UDP_IP_HEADER_BYTES
    client += QUIC_CLIENT_FINISHED_BYTES + UDP_IP_HEADER_BYTES
    server = server_udp + datagrams * UDP_IP_HEADER_BYTES
    return Handshake("h3", rtts, client, server, cert, origin_frame)


def origin_frame_payload(origins: list[str]) -> bytes:
    """RFC 8336 section 2.1: Origin-Len (16 bits) + ASCII-Origin, repeated."""
    out = bytearray()
    for o in origins:
        b = o.encode("ascii")
        out += struct.pack("!H", len(b)) + b
    return bytes(out)


def origin_frame_bytes(origins: list[str]) -> int:
    return 9 + len(origin_frame_payload(origins))


def parse_origin_frame(payload: bytes) -> list[str]:
    """The origins of an ORIGIN frame's payload (RFC 8336 section 2.1); an entry that is not
    an ASCII origin is skipped (section 2.2), a truncated entry ends the list."""
    out, i = [], 0
    while i + 2 <= len(payload):
        (n,) = struct.unpack_from("!H", payload, i)
        i += 2
        if i + n > len(payload):
            break
        raw = payload[i:i + n]
        i += n
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            continue
        if "://" in text and "/" not in text.split("://", 1)[1]:
            out.append(text.lower())
    return out


def origin_frame_roundtrip(origins: list[str]) -> tuple[bytes, list[str]]:
    """An ORIGIN frame written by a real ``h2`` server connection (as a hyperframe
    ``ExtensionFrame``: h2 has no ORIGIN API) and read by a real ``h2`` client connection,
    which passes it up as ``UnknownFrameReceived``: (the frame's bytes, the origins the
    client read).  See the module docstring."""
    import h2.config
    import h2.connection
    import h2.events
    from hyperframe.frame import ExtensionFrame

    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    server.initiate_connection()
    server.receive_data(client.data_to_send())
    payload = origin_frame_payload(origins)
    frame = ExtensionFrame(type=ORIGIN_FRAME_TYPE, stream_id=0, body=payload)
    frame.body_len = len(payload)          # hyperframe sets it only when parsing
    wire = frame.serialize()
    read: list[str] = []
    for event in client.receive_data(server.data_to_send() + wire):
        if isinstance(event, h2.events.UnknownFrameReceived) and event.frame.type == ORIGIN_FRAME_TYPE \
                and event.frame.stream_id == 0:
            read += parse_origin_frame(event.frame.body)
    return wire, read


# ---------------------------------------------------------------------------------------
# The browser's connection pool


class _PoolConn:
    __slots__ = ("number", "key", "host", "origin", "address", "server", "protocol", "hs", "opened_s", "ready_s",
                 "established", "origin_set", "refused", "waiters", "requests", "coalesced_hosts", "reason")

    def __init__(self, number, host, origin, address, server, protocol, hs, opened_s, ready_s, reason):
        self.number, self.host, self.origin, self.address = number, host, origin, address
        self.key = f"c{number}:{host}"
        self.server, self.protocol, self.hs = server, protocol, hs
        self.opened_s, self.ready_s, self.reason = opened_s, ready_s, reason
        self.established = False
        self.origin_set: set[str] | None = None          # RFC 8336 section 2.3: uninitialised
        self.refused: set[str] = set()
        self.waiters: list = []
        self.requests = 0
        self.coalesced_hosts: set[str] = set()


class CoalescingPool:
    """Between ``pageload.PageLoad`` (it calls ``fetch(origin, spec)``) and a network
    backend (it calls back ``on_response_complete`` ...): picks each request's connection
    by ``mode``, times DNS and handshakes, turns refused requests into 421s and retries."""

    def __init__(self, sim, params: LoadParams, listener, inner_cls, *, mode: str, topo: Topology,
                 cp: "CoalescingParams") -> None:
        self.sim, self.params, self.listener = sim, params, listener
        self.mode, self.topo, self.cp = mode, topo, cp
        self.inner = inner_cls(sim, params, self)
        self.stack = cp.backend == "stacks"
        self.dns: dict[str, tuple[str, ...]] = {}
        self.dns_waiters: dict[str, list] = {}
        self.conns: list[_PoolConn] = []
        self.pending421: dict[int, tuple] = {}
        self.request_conn: dict[int, _PoolConn] = {}
        self.misdirected: dict[int, int] = {}
        self.altsvc: set[str] = set()
        if mode == "h3-altsvc" and cp.altsvc_cache == "warm":
            self.altsvc = {h for h, s in topo.servers.items() if s.h3}
        self.counters = {"dns_lookups": 0, "dns_skipped": 0, "coalesced_requests": 0, "misdirected_421": 0,
                         "retries_421": 0, "origin_set_hits": 0,
                         "origin_frames_received": 0}
        self._skipped_hosts: set[str] = set()
        self._refuses: dict[tuple, bool] = {}

    # -- PageLoad's backend interface -------------------------------------------------
    def fetch(self, origin: str, spec) -> None:
        self._route(origin, spec, own_only=False)

    def connect(self, origin: str) -> None:
        """A preconnect (103 hints; unused by this study): DNS and the origin's own connection."""

    def cancel_push(self, push_key) -> None:
        self.inner.cancel_push(push_key)

    def push_bytes(self, push_key) -> int:
        return self.inner.push_bytes(push_key)

    def check(self) -> None:
        self.inner.check()

    # -- routing ------------------------------------------------------------------------
    def _route(self, origin: str, spec, own_only: bool) -> None:
        host = host_of(origin)
        if self.mode == "origin" and not own_only:
            for c in self.conns:
                # RFC 8336 section 2.4: in the Origin Set, certificate still checked, no DNS needed.
                if (c.established and c.origin_set is not None and origin in c.origin_set
                        and host not in c.refused and cert_covers(c.server.san, host)):
                    if host not in self.dns and c.host != host:
                        self._skipped_hosts.add(host)
                    self.counters["origin_set_hits"] += c.host != host
                    self._send(c, origin, spec, announced=c.host != host)
                    return
        if host not in self.dns:
            self._lookup(host, self._route_resolved, origin, spec, own_only)
            return
        self._route_resolved(origin, spec, own_only)

    def _lookup(self, host: str, callback, *args) -> None:
        waiters = self.dns_waiters.get(host)
        if waiters is not None:
            waiters.append((callback, args))
            return
        self.dns_waiters[host] = [(callback, args)]
        self.counters["dns_lookups"] += 1
        self.sim.call_later(self.cp.dns_lookup_s, self._resolved, host)

    def _resolved(self, host: str) -> None:
        self.dns[host] = self.topo[host].addresses
        for callback, args in self.dns_waiters.pop(host):
            callback(*args)

    def _may_coalesce(self, c: _PoolConn, origin: str, host: str) -> bool:
        """RFC 9113 section 9.1.1 (+ RFC 8336 section 2.4 once an Origin Set exists)."""
        if host in c.refused or c.address not in self.dns[host]:
            return False
        if not c.established:
            return True                     # its certificate is checked once the handshake ends
        if c.origin_set is not None and origin not in c.origin_set:
            return False                    # RFC 8336 section 2.4: MUST NOT
        return cert_covers(c.server.san, host)

    def _route_resolved(self, origin: str, spec, own_only: bool) -> None:
        host = host_of(origin)
        coalesce = self.mode != "none" and not own_only
        for established in (True, False):
            own = next((c for c in self.conns if c.established == established and c.host == host
                        and host not in c.refused), None)
            other = None
            if own is None and coalesce and (established or self.cp.wait_pending):
                other = next((c for c in self.conns if c.established == established and c.host != host
                              and self._may_coalesce(c, origin, host)), None)
            c = own or other
            if c is None:
                continue
            if established or (self.stack and c is own):
                # The real h2 stack takes a request for the connection's own origin at once
                # and sends it when TCP (and TLS) is up.
                self._send(c, origin, spec, announced=False)
            else:
                c.waiters.append((self._route_resolved, (origin, spec, own_only)))
            return
        c = self._open(origin, host, "retry-421" if own_only else "new")
        if self.stack:
            self._send(c, origin, spec, announced=False)
        else:
            c.waiters.append((self._route_resolved, (origin, spec, own_only)))

    def _open(self, origin: str, host: str, reason: str) -> _PoolConn:
        server = self.topo[host]
        protocol = "h2"
        if self.mode == "h3-altsvc" and server.h3 and host in self.altsvc:
            protocol = "h3"
        announces = server.announces if self.mode == "origin" else None
        frame = origin_frame_bytes([f"https://{h}" for h in announces]) if announces is not None else 0
        hs = handshake(protocol, server.san, frame, tls=self.cp.tls)
        setup = hs.setup_s(self.params.rtt_s, self.params.bandwidth_bps)
        c = _PoolConn(len(self.conns), host, origin, self.dns[host][0], server, protocol, hs, self.sim.now,
                      self.sim.now + setup, reason)
        self.conns.append(c)
        if self.stack:
            # The real h2 stack times its own set-up: the connection is usable for other
            # origins when the client has the server's SETTINGS, or its ORIGIN frame.
            c.ready_s = math.nan
            session = self.inner.connect(c.key)
            session.on_client_event = lambda event, c=c: self._client_event(c, event)
            if announces is not None:
                session.server.send_extension_frame(
                    ORIGIN_FRAME_TYPE, origin_frame_payload([f"https://{h}" for h in announces]))
            return c
        self.inner.connect(c.key, protocol=protocol, setup=setup)
        self.sim.call_at(c.ready_s, self._established, c)
        return c

    def _client_event(self, c: _PoolConn, event) -> None:
        """The real h2 client's RemoteSettingsChanged / UnknownFrameReceived (stacks backend)."""
        import h2.events

        expects_origin = self.mode == "origin" and c.server.announces is not None
        if isinstance(event, h2.events.UnknownFrameReceived):
            frame = event.frame
            # RFC 8336 section 2.2: stream 0 only; flags 0x1-0x8 unknown -> ignore the frame.
            if frame.type != ORIGIN_FRAME_TYPE or frame.stream_id != 0 or frame.flag_byte & 0xF:
                return
            origins = parse_origin_frame(frame.body)
            self.counters["origin_frames_received"] += 1
            if c.established:
                if c.origin_set is not None:
                    c.origin_set |= set(origins)
                return
            self._established(c, {c.origin} | set(origins))
        elif not c.established and not expects_origin:
            self._established(c)

    def _established(self, c: _PoolConn, origin_set: set[str] | None = None) -> None:
        c.established = True
        c.ready_s = self.sim.now
        if origin_set is not None:
            c.origin_set = origin_set
        elif self.mode == "origin" and c.server.announces is not None:
            # RFC 8336 section 2.3: the initial origin (SNI host) plus the frame's origins.
            c.origin_set = {c.origin} | {f"https://{h}" for h in c.server.announces}
            self.counters["origin_frames_received"] += 1
        waiters, c.waiters = c.waiters, []
        for callback, args in waiters:
            callback(*args)

    def _send(self, c: _PoolConn, origin: str, spec, *, announced: bool) -> None:
        host = host_of(origin)
        if c.host != host:
            p = self.cp.p421_announced if announced else self.cp.p421
            # One draw per (server, host), from its own seeded stream: every mode meets the same
            # servers, and a server that refuses a host refuses all of its requests.
            pair = (c.host, host, announced)
            refuses = self._refuses.get(pair)
            if refuses is None:
                refuses = self._refuses[pair] = self.sim.rng(f"421:{c.host}:{host}").random() < p
            if refuses:
                self.counters["misdirected_421"] += 1
                self.misdirected[spec.index] = self.misdirected.get(spec.index, 0) + 1
                self.pending421[spec.index] = (c, origin, spec)
                refused = replace(spec, response_headers=((b":status", b"421"), (b"content-length", b"0")),
                                  response_body_bytes=0, think_s=0.0, early_hints=(), pushes=())
                self.inner.fetch(c.key, refused)
                return
            self.counters["coalesced_requests"] += 1
            c.coalesced_hosts.add(host)
        c.requests += 1
        self.request_conn[spec.index] = c
        self.inner.fetch(c.key, spec)

    # -- the backend's callbacks ---------------------------------------------------------
    def on_response_complete(self, index: int) -> None:
        pending = self.pending421.pop(index, None)
        if pending is not None:
            c, origin, spec = pending
            host = host_of(origin)
            c.refused.add(host)
            if c.origin_set is not None:
                c.origin_set.discard(origin)        # RFC 8336 section 2.3
            self.counters["retries_421"] += 1
            self._route(origin, spec, own_only=True)
            return
        c = self.request_conn.get(index)
        if c is not None and self.mode == "h3-altsvc":
            host = host_of(self.listener.graph[index].origin)
            if self.topo[host].h3:
                self.altsvc.add(host)               # RFC 7838: Alt-Svc on the response
        self.listener.on_response_complete(index)

    def on_informational(self, index, links) -> None:
        self.listener.on_informational(index, links)

    def on_push_promise(self, push_key, url) -> None:
        self.listener.on_push_promise(push_key, url)

    def on_push_complete(self, push_key) -> None:
        self.listener.on_push_complete(push_key)

    # -- results ---------------------------------------------------------------------------
    def stats(self) -> dict:
        inner = self.inner.stats()
        hs = [c.hs for c in self.conns]
        self.counters["dns_skipped"] = len(self._skipped_hosts - set(self.dns))
        return {
            "connections": len(self.conns), "handshakes": len(self.conns),
            "h2_connections": sum(c.protocol == "h2" for c in self.conns),
            "h3_connections": sum(c.protocol == "h3" for c in self.conns),
            "handshake_rtts": sum(h.rtts for h in hs),
            "handshake_bytes": sum(h.bytes for h in hs),
            "handshake_client_bytes": sum(h.client_bytes for h in hs),
            "handshake_server_bytes": sum(h.server_bytes for h in hs),
            "cert_bytes": sum(h.cert_bytes for h in hs),
            "origin_frame_bytes": sum(h.origin_frame_bytes for h in hs),
            "coalesced_origins": len({(c.number, h) for c in self.conns for h in c.coalesced_hosts}),
            **self.counters,
            "packets_sent": inner["packets_sent"], "packets_lost": inner["packets_lost"],
        }

    def connection_rows(self) -> list[dict]:
        return [{"connection": c.key, "host": c.host, "address": c.address, "protocol": c.protocol,
                 "reason": c.reason, "opened_s": c.opened_s, "ready_s": c.ready_s, "handshake_rtts": c.hs.rtts,
                 "handshake_bytes": c.hs.bytes, "cert_bytes": c.hs.cert_bytes, "san_names": len(c.server.san),
                 "origin_frame_bytes": c.hs.origin_frame_bytes,
                 "origin_set": -1 if c.origin_set is None else len(c.origin_set), "requests": c.requests,
                 "coalesced_hosts": ",".join(sorted(c.coalesced_hosts)), "refused_hosts": ",".join(sorted(c.refused))}
                for c in self.conns]


# ---------------------------------------------------------------------------------------
# The study


@dataclass(frozen=True)
class CoalescingParams:
    """Everything that determines a run (units in the names)."""

    modes: tuple[str, ...] = MODES
    backend: str = "model"                # model (transport models) or stacks (real h2)
    tls: bool = True                      # h2 handshakes with TLS 1.3 (False: cleartext, both backends)
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    seed: int = 1
    dns_lookup_s: float = 0.030           # one lookup per host and page load
    p421: float = 0.0                     # a server refuses a request coalesced by the ip rule
    p421_announced: float = 0.0           # ... for an origin it announced in ORIGIN
    altsvc_cache: str = "warm"            # h3-altsvc: warm (repeat view) or cold (first view)
    wait_pending: bool = True             # wait for a handshake to an address in the DNS answer
    think_s: float | None = None          # document think time; None = the trace's wait for it
    asset_think_s: float = 0.0
    cache: str = "cold"
    dns_file: str | None = None
    cert_file: str | None = None
    cc: str = "reno"
    scheduler: str = "urgency"
    page: str | None = None

    def __post_init__(self) -> None:
        if not self.modes:
            raise InputError("no mode given (choose from " + ", ".join(MODES) + ")")
        for m in self.modes:
            if m not in MODES:
                raise InputError(f"unknown mode {m!r} (choose from {', '.join(MODES)})")
        for name in ("p421", "p421_announced"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise InputError(f"{name} must be a probability in [0, 1], got {v!r}")
        if self.backend not in ("model", "stacks"):
            raise InputError(f"unknown backend {self.backend!r} (choose model or stacks)")
        if self.backend == "stacks":
            if "h3-altsvc" in self.modes:
                raise InputError("mode h3-altsvc mixes h2 and h3 connections; the stacks backend runs h2 only "
                                 "(choose from none, ip, origin)")
        if self.altsvc_cache not in ("warm", "cold"):
            raise InputError(f"unknown Alt-Svc cache {self.altsvc_cache!r} (choose warm or cold)")
        if self.dns_lookup_s < 0:
            raise InputError(f"DNS lookup time must be >= 0, got {self.dns_lookup_s}")
        if (self.think_s is not None and self.think_s < 0) or self.asset_think_s < 0:
            raise InputError("think times must be >= 0")
        from .pageload.cache import parse_cache

        parse_cache(self.cache)
        self.load_params()

    def load_params(self) -> LoadParams:
        # The pool times DNS and handshakes itself, so the backend's own set-up is off
        # (dns_s 0; each connection gets its set-up time from the pool).
        return LoadParams(protocol="h2", rtt_s=self.rtt_s, bandwidth_bps=self.bandwidth_bps, loss=self.loss,
                          seed=self.seed, tls=self.tls, dns_s=0.0, coalesce="origin", cc=self.cc,
                          scheduler=self.scheduler)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["modes"] = ",".join(self.modes)
        return d


ROW_PARAMS = ("seed", "backend", "tls", "rtt_s", "bandwidth_bps", "loss", "dns_lookup_s", "p421", "p421_announced",
              "altsvc_cache", "wait_pending")


@dataclass
class CoalescingResult:
    summary: pd.DataFrame            # one row per mode
    connections: pd.DataFrame        # one row per (mode, connection)
    resources: pd.DataFrame          # one row per (mode, resource)
    params: dict
    trace: dict
    topology: Topology

    def to_dict(self) -> dict:
        return {"modes": rows_by_index(self.summary), "params": self.params, "trace": self.trace,
                "topology": {"sources": self.topology.sources, "digest": self.topology.digest()}}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def topology_for(graph: PageGraph, params: CoalescingParams) -> Topology:
    hosts = list(dict.fromkeys(host_of(r.origin) for r in graph.resources))
    return read_topology(hosts, host_of(graph[graph.document].origin), params.seed, params.dns_file,
                         params.cert_file)


def run(trace: Trace | PageGraph, params: CoalescingParams | None = None, *, topology: Topology | None = None,
        progress: bool = False) -> CoalescingResult:
    """Load the page once per mode with the same seed and compare."""
    params = params or CoalescingParams()
    graph = trace if isinstance(trace, PageGraph) else page_graph(trace, params.page)
    topo = topology or topology_for(graph, params)
    load_params = params.load_params()
    cache = ClientCache.for_page(graph, params.cache, random.Random(derive_seed(params.seed, "cache")))
    doc = graph[graph.document]
    think = {r.index: params.asset_think_s for r in graph.resources}
    think[graph.document] = params.think_s if params.think_s is not None else (doc.wait_s or 0.0)
    plan = ServerPlan(think_s=think)
    modes = params.modes
    iterator = modes
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(modes, desc="modes", leave=False)
    row_params = {k: getattr(params, k) for k in ROW_PARAMS}
    rows, conns, resources = {}, [], []
    for mode in iterator:
        pools = []

        def network(sim, lp, listener, inner_cls, mode=mode):
            pool = CoalescingPool(sim, lp, listener, inner_cls, mode=mode, topo=topo, cp=params)
            pools.append(pool)
            return pool

        loaded = load_page(graph, load_params, plan, cache, backend=params.backend, network=network)
        pool = pools[0]
        m = {**loaded.metrics, **pool.stats()}
        for k in ("bytes_pushed", "bytes_wasted", "hinted_fetches", "hints_skipped_cached", "preconnects",
                  "pushes_promised", "pushes_used", "pushes_cancelled"):
            m.pop(k, None)
        m["origins"] = len(graph.origins)
        m["think_s"] = plan.think(graph.document)
        rows[mode] = {**m, **row_params}
        cdf = pd.DataFrame.from_records(pool.connection_rows())
        cdf.insert(0, "mode", mode)
        conns.append(cdf)
        rdf = loaded.resources.copy()
        rdf["connection"] = [pool.request_conn[i].key if i in pool.request_conn else "" for i in rdf["index"]]
        rdf["coalesced"] = [i in pool.request_conn and pool.request_conn[i].host != host_of(o)
                            for i, o in zip(rdf["index"], rdf["origin"])]
        rdf["misdirected_421"] = [pool.misdirected.get(i, 0) for i in rdf["index"]]
        rdf.insert(0, "mode", mode)
        resources.append(rdf)
    base = rows.get("none")
    for m in rows.values():
        for metric in METRICS:
            m[f"gain_{metric}"] = base[metric] - m[metric] if base else math.nan
        m["gain_onload_rtts"] = m["gain_onload_s"] / params.rtt_s if base else math.nan
    summary = pd.DataFrame.from_dict(rows, orient="index")
    summary.index.name = "mode"
    conns_df = pd.concat(conns, ignore_index=True)
    resources_df = pd.concat(resources, ignore_index=True)
    for df in (conns_df, resources_df):
        df["seed"] = params.seed
    tinfo = {"source": graph.source, "page": graph.page, **graph.summary(), "cached": len(cache)}
    if isinstance(trace, Trace):
        tinfo["content_hash"] = trace.content_hash()
    return CoalescingResult(summary=summary, connections=conns_df, resources=resources_df,
                            params={**params.to_dict(), "version": __version__}, trace=tinfo, topology=topo)


def run_seeds(trace: Trace | PageGraph, params: CoalescingParams, seeds, *, progress: bool = False) -> pd.DataFrame:
    """Summaries over several seeds: one row per (seed, mode).  The default topology is
    drawn from each seed too (files given replace it host by host for every seed)."""
    graph = trace if isinstance(trace, PageGraph) else page_graph(trace, params.page)
    seeds = list(seeds)
    iterator = seeds
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(seeds, desc="seeds")
    frames = [run(graph, replace(params, seed=s)).summary.reset_index() for s in iterator]
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------------------------------
# CLI


def _probability(text: str, flag: str) -> float:
    try:
        p = float(text)
    except ValueError:
        raise InputError(f"{flag} must be a probability in [0, 1], got {text!r}") from None
    if not 0.0 <= p <= 1.0:
        raise InputError(f"{flag} must be a probability in [0, 1], got {text!r}")
    return p


def params_from_args(args: argparse.Namespace) -> CoalescingParams:
    think = None if str(args.think).lower() == "trace" else parse_duration(args.think)
    return CoalescingParams(
        modes=tuple(m.strip() for m in str(args.mode).split(",") if m.strip()), backend=args.backend,
        tls=not args.no_tls, rtt_s=parse_duration(args.rtt),
        bandwidth_bps=parse_bandwidth(args.bw), loss=str(args.loss), seed=int(args.seed), dns_lookup_s=parse_duration(args.dns_lookup),
        p421=_probability(args.p421, "--p421"), p421_announced=_probability(args.p421_announced, "--p421-announced"),
        altsvc_cache=args.altsvc_cache, wait_pending=not args.no_wait_pending, think_s=think,
        asset_think_s=parse_duration(args.asset_think), cache=args.cache, dns_file=args.dns, cert_file=args.cert,
        cc=args.cc, scheduler=args.scheduler, page=args.page)


def _cmd(args: argparse.Namespace) -> int:
    from ..traces import load

    params = params_from_args(args)
    if args.seeds < 1:
        raise InputError(f"--seeds must be at least 1, got {args.seeds}")
    trace = load(args.trace)
    graph = page_graph(trace, params.page)
    topo = topology_for(graph, params)             # bad --dns / --cert files fail here, before any output
    progress = not args.json and sys.stderr.isatty()
    result = run(trace, params, topology=topo, progress=progress)
    if args.seeds > 1:
        per_seed = run_seeds(graph, params, range(params.seed, params.seed + args.seeds), progress=progress)
        numeric = per_seed.drop(columns=["seed"]).groupby("mode", sort=False).median(numeric_only=True)
        result.summary = numeric.loc[list(params.modes)].assign(seed=params.seed)
        result.params["seeds"] = args.seeds
        result.params["aggregate"] = "median over seeds"
    if args.write_topology:
        out = Path(args.write_topology)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(topo.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(out)
    if args.json:
        print(result.to_json())
        return 0
    t = result.trace
    print(f"page {t['page'] or '-'} of {t['source']}: {t['resources']} resources, {t['origins']} origins; "
          f"RTT {params.rtt_s * 1000:g} ms, DNS {params.dns_lookup_s * 1000:g} ms, loss {params.loss}, "
          f"p421 {params.p421:g}, Alt-Svc cache {params.altsvc_cache}, seed {params.seed}"
          + (f" (median of {args.seeds} seeds)" if args.seeds > 1 else "")
          + f"; DNS from {topo.sources['dns']}, certificates from {topo.sources['cert']}")
    cols = ["connections", "h3_connections", "handshake_rtts", "handshake_bytes", "dns_lookups", "coalesced_requests",
            "misdirected_421", "render_blocking_s", "onload_s", "gain_onload_s", "gain_onload_rtts"]
    with pd.option_context("display.width", 220, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string())
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, help="HAR of a page load (Chrome's _initiator gives the graph)")
    p.add_argument("--mode", default=",".join(MODES), type=argtypes.names(MODES, "mode"),
                   help="comma-separated: " + ",".join(MODES))
    p.add_argument("--dns", help="JSON/TOML file: host -> address or list of addresses (others: seeded default)")
    p.add_argument("--cert", help="JSON/TOML file: host -> SAN list, or {san = [...], origin = [...], h3 = bool}")
    p.add_argument("--p421", default="0", type=argtypes.probability,
                   help="probability a server refuses a request coalesced onto it (421)")
    p.add_argument("--p421-announced", default="0", type=argtypes.probability,
                   help="the same for an origin the server announced in ORIGIN")
    p.add_argument("--altsvc-cache", default="warm", choices=["warm", "cold"],
                   help="h3-altsvc: warm = Alt-Svc cached from an earlier visit, cold = first view")
    p.add_argument("--no-wait-pending", action="store_true",
                   help="never wait for another host's connection still in its handshake")
    p.add_argument("--backend", default="model", choices=["model", "stacks"],
                   help="model (transport models) or stacks (the real h2 stack, over TLS 1.3 unless --no-tls)")
    p.add_argument("--no-tls", action="store_true", help="cleartext h2 (TCP handshake only, no certificate bytes)")
    p.add_argument("--dns-lookup", default="30ms", type=argtypes.duration,
                   help="time of one DNS lookup (once per host and page load)")
    p.add_argument("--rtt", default="100ms", type=argtypes.positive_duration, help="round-trip time, e.g. 100ms")
    p.add_argument("--bw", default="10mbit", type=argtypes.bandwidth,
                   help="bottleneck bandwidth, e.g. 10mbit (none = unlimited)")
    p.add_argument("--loss", default="0", type=argtypes.loss, help="0.01 (Bernoulli) or ge:P,R[,h,k] (Gilbert-Elliott)")
    p.add_argument("--think", default="trace", type=argtypes.duration_or("trace"),
                   help="document think time, or 'trace' (its HAR wait)")
    p.add_argument("--asset-think", default="0ms", type=argtypes.duration, help="think time of every sub-resource")
    p.add_argument("--cache", default="cold", type=argtypes.checked(parse_cache, "cache"),
                   help="cold, warm, or a per-resource hit probability")
    p.add_argument("--cc", default="reno", choices=["reno", "cubic"], help="congestion control of the transport models")
    p.add_argument("--scheduler", default="urgency", choices=["urgency", "round-robin", "fifo"],
                   help="model server's response order")
    p.add_argument("--page", help="page id in the HAR (default: the first page)")
    p.add_argument("--seed", default=1, type=int)
    p.add_argument("--seeds", default=1, type=argtypes.count(1), help="run seeds SEED..SEED+N-1 and report medians")
    p.add_argument("--write-topology", metavar="JSON", type=argtypes.output_file,
                   help="write the DNS answers and certificates used to this JSON file")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_commands(sub) -> None:
    p = sub.add_parser("coalescing", help="connection coalescing: none / RFC 9113 9.1.1 / ORIGIN / h3 Alt-Svc")
    add_arguments(p)
    p.set_defaults(func=_cmd)

