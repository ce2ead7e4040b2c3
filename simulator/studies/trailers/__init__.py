"""Trailers: metadata known only at the end of a body (RFC 9110 section 6.5).

The question: when metadata (an integrity digest, RFC 9530 ``Content-Digest``; a
signature, RFC 9421; a gRPC ``grpc-status``; a ``Server-Timing``) is known only once the
body is done, what do a first byte and a last byte cost if the server buffers the body
and sends the metadata as a header, against streaming it and sending a trailer, over
body size, production rate and RTT, and what is lost when an intermediary drops or
merges the trailer?  (Browsers cannot read trailers: the Fetch standard added
``Response.trailer`` in 2016 and removed it in 2019 when no engine shipped it, which is
why gRPC-Web moves them into the body.)

A digest, a signature, a call status or a timing is known only once the server has
produced the last byte of a body it generates at ``rate_bytes_per_s``.  Three ways to
deliver it:

- ``buffer``: the server buffers the whole body, then sends the metadata as header
  fields (with a Content-Length) and the body;
- ``trailer``: the server streams the body as it is produced and sends the metadata in a
  trailer section (RFC 9110 section 6.5): HTTP/1.1 chunked coding (RFC 9112 section
  7.1.2), HTTP/2 a final HEADERS frame with END_STREAM (RFC 9113 section 8.1), HTTP/3 a
  trailing HEADERS frame (RFC 9114 section 4.1); the header section announces them
  (``Trailer``, RFC 9110 section 6.6.2);
- ``in-body``: the gRPC-Web way: the body is a sequence of length-prefixed messages
  (one per produced chunk) and the metadata its last message, flag 0x80
  (grpc/grpc doc/PROTOCOL-WEB.md); the production rate applies to the framed bytes.

For each response, over the transport models (``hops.chain``: HTTP/1.1 and HTTP/2 over
the TCP model, HTTP/3 over the QUIC model) and, for HTTP/2 and HTTP/3, over the real
stacks (``stacks.replay``: ``h2`` and ``aioquic``, ``stack="real"`` or ``"both"``):

- ``ttfb_s``: request sent -> the response's header section received;
- ``first_body_s``, ``ttlb_s``: -> first body byte, -> the response complete;
- ``metadata_s``: -> every metadata field that reached the client is known (NaN when
  none did): header section (buffer, or merged by a hop), trailer section, or the end
  of the body (in-body);
- bytes on the wire of the client's connection, from the real codecs (``http.framing``):
  header and trailer sections (QPACK encoder-stream bytes apart), data framing, end of
  message; ``overhead_bytes`` is everything but the body's own bytes;
- memory: the most body bytes the origin held (produced, not yet acknowledged by its
  peer) and each hop held (received, not yet acknowledged downstream);
- through a chain of intermediaries (``hops``, from the client toward the origin, each
  ``pass``, ``drop``, ``merge`` or ``store``; see ``hops.chain``): what each holds, how
  long it held the header section back, and which metadata fields silently disappeared
  (``integrity_lost``: the digest or signature; ``status_lost``: grpc-status).

Whether a request carries ``TE: trailers`` (RFC 9110 section 10.1.4) is drawn per
response with probability ``te_trailers`` from the seeded stream ``te`` (1: every client
says so, as gRPC clients do; 0: none does, as browsers).  All strategies, versions and
stacks of a run see the same draws.  Real-stack runs start each request after a warm-up
(both stacks' handshakes done), as the models' connections are warm; they do not run
through hops.  The real h2 stack runs cleartext here (``tls=False``): the hop models have
no TLS records, which would hold a first byte until its whole record (up to 16 KiB) is in.

``run(trace, params)``: with a trace, one response per exchange that has a request
(its request and response header lists; its response body size unless ``body_bytes``
is set); without one, ``responses`` synthetic responses of ``body_bytes``.  Response
``i`` starts at ``i * spacing_s``.
"""

from ...units import parse_byte_rate
from .cli import add_arguments, params_from_args
from .model import warmup_s
from .study import REAL_VERSIONS, STACKS, STRATEGIES, TrailersParams, TrailersResult, run

__all__ = [
    "TrailersParams",
    "TrailersResult",
    "run",
    "STRATEGIES",
    "STACKS",
    "REAL_VERSIONS",
    "warmup_s",
    "parse_byte_rate",
    "add_arguments",
    "params_from_args",
]
