"""HTTP over the network models: what an HTTP message and a connection's set-up cost on the
wire, per version, from the real codecs and stacks.  ``framing``: HTTP/1.1, HTTP/2 and
HTTP/3 messages framed and their sections encoded by the real encoders (hpack, pylsqpack),
and decoded back at the far end; ``header_sizes``: header sections and connection prefaces
sized as those libraries write them, without writing the bytes (for models that only need
sizes); ``handshake``: the one handshake model (TCP, TLS 1.3, QUIC), its sizes measured on
OpenSSL and aioquic; ``network``: HTTP connections over the transport models;
``model_replay``: a trace replayed over them, the twin of ``stacks.replay``; ``crossval``:
the two side by side.  This layer sits above ``stacks`` (it measures sizes on the real
stacks and takes their exchange description), never below it.  The trailers study's
intermediaries (``hops``), the replay model and the page-load model size their messages and
handshakes here, and the coalescing study its connections' set-up."""
