"""HTTP messages through intermediaries (hops), shared by the studies that need them.

- ``framing``: bytes on the wire of header sections, bodies and trailer sections per
  HTTP version, from the real codecs (HTTP/1.1 written by hand, HPACK via ``hpack``,
  QPACK via ``pylsqpack``), and the gRPC-Web in-body trailer frame;
- ``fields``: metadata known only at the end of a body (digest, signature, status,
  timing) as real field values, and which of them an intermediary may merge into the
  header section (RFC 9110 section 6.5.1);
- ``chain``: responses from an origin through a chain of hops (``pass``, ``drop``,
  ``merge``, ``store``) to a client over the transport models, with the origin
  producing each body over time.
- ``segment``: the HTTP connection(s) between two nodes of a chain over a transport
  model (TCP model for HTTP/1.1 and HTTP/2, QUIC model for HTTP/3), and the exchanges on
  them.
"""
