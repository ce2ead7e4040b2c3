"""Cross-stream compression: per-response vs shared contexts vs per-type dictionaries vs
RFC 9842 deltas, and the size-oracle leak that comes with sharing.

The question (put to the HTTP Workshop 2017 by the proposal below, and again by RFC 9842):
how much do responses shrink when a compressor may
reference earlier responses (the 2017 proposal, draft-vkrasnov-h2-compression-
dictionaries; RFC 9842 Compression Dictionary Transport), at what CPU and memory cost,
what does it buy in transfer time, and how many requests does an attacker who sees
only sizes need to read a secret under each scoping rule?

Input: bodies (``bodies``): a generated site with releases (default),
a folder of real files (``--bodies``), or a trace file (``--trace``; its text responses
get generated bodies of their URLs, types and sizes; this is what ``workbench batch
crossstream --traces`` feeds).  Release r is a *visit*: one new connection per origin
fetching release r's bodies in order; from the second visit on, only the bodies that
changed since the previous release (unchanged assets are cached).  The client's RFC 9842
dictionary store lasts across visits; connection-scoped state (shared contexts, the
2017 dictionaries) does not.

For every scheme x codec x scoping (``bodies.schemes``) every
response is encoded with the real library, decoded, and checked against its body.
Outputs:

- ``summary``: bytes, ratio, saving, gain over per-response compression of the same
  codec, first- and repeat-visit bytes, peak dictionary memory at both ends, and the
  visit's transfer time on the simulated path (the transport models of
  ``simulator.http.model_replay``: every response of a visit requested at t = 0,
  its size the scheme's encoded size plus overhead);
- ``responses``: one row per response;
- ``leak``: the BREACH-style attack (``bodies.leak``) per scheme,
  codec, scoping and secret length: recovered or not, and requests spent.  By default
  a quick attack (``LEAK_ATTACKS["quick"]``: a 4-character secret, against the first
  codec of the list each scheme can use: every scheme and scoping, about a sixth of
  the queries); ``--leak full`` is the longer one (4 and 8 characters, every codec).  A row
  depends only on its scheme, codec, scoping, secret length, alignments and seed, so
  the quick table's rows are the full one's at the same length;
- ``cpu`` (only with ``measure_cpu``): compression and decompression time per byte,
  measured, *wall time of this machine*, kept out of the deterministic output;
- ``reference``: the 2017 figure (Brotli-5 with dictionary vs Brotli-8 per response,
  1.30x published) and RFC 9842-style delta savings per type, next to ours (each delta
  codec against plain compression with its own library and level: dcb brotli:5 vs br
  brotli:5, dcz zstd:3 vs zstd zstd:3, on the repeat visits' responses).

Published reference points: the 2017 proposal (V. Krasnov,
draft-vkrasnov-h2-compression-dictionaries-00 to -03, 2016-2017, presented at the HTTP
Workshop 2017) measured on about 2,000 top sites that its best strategy (a static
dictionary per type for the first asset, then a per-type dynamic dictionary each asset
is appended to) made Brotli-5 1.30x better than Brotli-8 per response and 1.46x better
than Deflate-8, while 2-3x faster.  Deployments of RFC 9842 (Compression Dictionary
Transport, 2025) report, against plain Brotli, -78% for a large script sent as a delta
against its previous version, -98% for a bundle, and -30% to -90% for HTML pages with a
shared dictionary.  The risk is the one of CRIME (2012), BREACH (2013) and HEIST (2016):
a secret and attacker-controlled text in one compression context, and sizes visible to
the attacker; HPACK's answer (RFC 7541 section 7: whole-field matches, never-indexed
literals, one context per connection) is the model for the scoping rules.
"""

from . import bodies
from .cli import add_arguments, params_from_args
from .study import (
    LEAK_ATTACKS,
    PUBLISHED,
    SCHEMES,
    SCOPINGS,
    TRANSPORTS,
    CrossstreamParams,
    CrossstreamResult,
    check_dictionary_bytes,
    run,
    run_leak,
    training_corpus,
    visits,
)

__all__ = [
    "CrossstreamParams",
    "CrossstreamResult",
    "run",
    "run_leak",
    "visits",
    "training_corpus",
    "bodies",
    "SCHEMES",
    "SCOPINGS",
    "TRANSPORTS",
    "LEAK_ATTACKS",
    "PUBLISHED",
    "check_dictionary_bytes",
    "add_arguments",
    "params_from_args",
]
