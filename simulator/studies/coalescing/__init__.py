"""Connection coalescing: none vs the RFC 9113 section 9.1.1 rule vs the ORIGIN frame
(RFC 8336) vs HTTP/3 with Alt-Svc (RFC 7838), on the page-load model.

The question (discussed at the HTTP Workshop 2017 with the ORIGIN frame, RFC 8336,
421 Misdirected Request and Alt-Svc, RFC 7838): how many connections (and so
handshakes, round trips and bytes) does a browser open for a page whose resources come
from many origins, and what does each way of sharing connections save or cost, including
the 421 (Misdirected Request, RFC 9110 section 15.5.20) retries when a server refuses a
request the client coalesced onto it.

The page is ``browser.page_graph`` (HAR initiators); the browser is ``simulator.browser``'s with a
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
  RFC 9114 section 3.1.1), reusing connections by the ``ip`` rule (RFC 9114 section 3.3 asks
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

Handshakes: the workbench's one handshake model (``http.handshake``; full handshakes, no
resumption or 0-RTT), whose message sizes are the real stacks' (OpenSSL and aioquic),
with this study's certificate chains:

- h2: TCP (SYN 60 B, SYN-ACK 60 B, ACK 52 B: 1 RTT) then TLS 1.3 (RFC 8446: 1 RTT): the
  ClientHello as OpenSSL writes it for the host's name (259 B for ``www.site.example``,
  512 B plus the record header from a 256-B hello on, RFC 7685), the server's flight
  (373 B + the certificate chain), the client's ChangeCipherSpec and Finished (80 B);
  52 B of TCP/IPv4 headers per 1448-B segment.  2 RTT before the first request.
- h3: QUIC (RFC 9000, RFC 9001): 1 RTT; the client's Initial and its Finished each padded
  to a full 1252-B datagram (RFC 9000 section 14.1, as the QUIC model), the server's
  flight (aioquic's TLS messages in CRYPTO frames, 378 B + the chain) in full datagrams,
  28 B of UDP/IPv4 per datagram.  Until the client's address is validated the server may
  send at most three times what it received (RFC 9000 section 8.1): a flight above
  3756 B waits for the client's next (padded) datagram, one more RTT per 3756 B.
- The certificate chain: 1800 B (an ECDSA leaf without its names and one intermediate)
  plus every ``subjectAltName`` dNSName (its length + 2 B of DER).  A certificate naming
  more hosts lets more origins share a connection and makes every handshake with it
  larger.
- ORIGIN frame: 9 B header + (2 + length) per origin, in the server's first flight (over
  TLS in a record of its own).
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

from ...frames.origin import (
    ORIGIN_FRAME_TYPE,
    origin_frame_bytes,
    origin_frame_payload,
    origin_frame_roundtrip,
    parse_origin_frame,
)
from .cli import add_arguments, params_from_args
from .handshake import CERT_CHAIN_BASE_BYTES, Handshake, chain_bytes, handshake
from .pool import CoalescingPool
from .study import MODES, ROW_PARAMS, CoalescingParams, CoalescingResult, run, topology_for
from .topology import HostServer, Topology, cert_covers, default_topology, host_of, read_topology

__all__ = [
    "MODES",
    "CoalescingParams",
    "CoalescingResult",
    "Topology",
    "HostServer",
    "default_topology",
    "read_topology",
    "cert_covers",
    "host_of",
    "topology_for",
    "Handshake",
    "handshake",
    "chain_bytes",
    "CERT_CHAIN_BASE_BYTES",
    "ORIGIN_FRAME_TYPE",
    "origin_frame_bytes",
    "origin_frame_payload",
    "parse_origin_frame",
    "origin_frame_roundtrip",
    "CoalescingPool",
    "run",
    "ROW_PARAMS",
    "add_arguments",
    "params_from_args",
]
