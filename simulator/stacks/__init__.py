"""Real protocol stacks in virtual time.

- ``h2``: ``h2.H2Connection`` client/server pairs over the TCP model (cleartext, prior knowledge);
- ``h3``: ``aioquic`` ``QuicConnection`` + ``H3Connection`` pairs over the simulated link;
- ``replay``: ``run(trace, StackParams) -> Result`` (one row per exchange + summary), also
  ``run_specs`` for hand-made exchanges (103, push, trailers, resets);
- ``pcap``: captures tshark reads;
- the same replay over the TCP / QUIC transport models (``http.model_replay``) and the
  models against the real stacks (``http.crossval``) are in the HTTP layer, above this one:
  the stacks import nothing of ``http`` (the HTTP models size their handshakes on them);
- the replay as a study (``workbench replay``, batch ``replay``) is ``simulator.studies.replay``.
"""
