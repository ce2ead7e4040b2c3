"""HTTP over the network models: what an HTTP message costs on the wire, per version, from
the real codecs.  ``framing``: HTTP/1.1, HTTP/2 and HTTP/3 messages framed and their
sections encoded by the real encoders (hpack, pylsqpack), and decoded back at the far end;
``header_sizes``: header sections and connection prefaces sized as those libraries write
them, without writing the bytes (for models that only need sizes).  The trailers study's
intermediaries (``hops``) and the page-load model size their messages here."""
