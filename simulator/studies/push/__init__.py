"""HTTP/2 server push vs 103 Early Hints, on the page-load model.

The question: both try to use the idle window while the server
"thinks" about the document.  Push (RFC 9113 section 8.4, RFC 9114 section 4.6) sends the
bytes itself: it saves a round trip for same-connection resources, but pushes what the
client may already have (cancelled only after a one-way delay) and only for origins the
connection is authoritative for.  A 103 (RFC 8297) only names what to fetch: the client
still pays a round trip, skips what it has cached, and can preconnect to other origins.

Published reference points: "Push or Request" (Rosen et al., WWW 2017) measured a median
page load 16% faster with push at 2% loss and 14% faster at 100 ms RTT, with little gain
on fast links; "Is the Web Ready for HTTP/2 Server Push?" (Zimmermann et al., CoNEXT
2018) found push helped only some sites; Vroom (Ruamviboonsuk et al., SIGCOMM 2017)
halved the median load time of news and sports pages with server-aided discovery
(hints plus push).  Chrome turned push off by default in Chrome 106 (2022): 99.95% of
its HTTP/2 connections had never received a pushed stream, and fewer than 40% of the
pushes received were used.  The Early Hints trial of Chrome with a CDN and an
e-commerce platform (late 2021) saw LCP more than 500 ms faster at the median; such a
CDN caches the origin's ``Link`` headers and hints on later requests, never the first.
Chrome honours only the first 103, on navigations, over HTTP/2 and HTTP/3, for preload
and preconnect.

For each policy, the same page (``browser.page_graph``) is loaded with the same seed on
the same network; the page-load metrics and the gain against ``none`` are compared:

- ``none``: no push, no 103;
- ``push``: push the push set (``push_set``: the render-blocking sub-resources the
  document's connection is authoritative for, ``all`` such resources, the ``largest:N``,
  or an explicit ``list:URL URL ...``) on the document's stream;
- ``hints``: a 103 with ``rel=preload`` for every render-blocking sub-resource and
  ``rel=preconnect`` for each other connection they need;
- ``push+hints``: push what can be pushed, hint the rest;
- ``hints-cdn``: as ``hints``, but sent by a CDN that learnt the Link headers from an
  earlier response of the origin: the first request for the page through an edge is
  never hinted (``edge_seen=False``, the default, is that first request).

Server think time: the document's (default: the trace's ``wait`` for it, which also
holds one RTT of the capture's network, stated) and the sub-resources' (default 0).
Backends: ``model`` (transport models, fast) and ``stacks`` (real h2 / aioquic).

Limits (stated in notebook 02 too): discovery waits for a parent's whole body; no
client-side prioritisation across connections, so on a bandwidth-bound page a policy
that requests the render-blocking set early also gets the link first (an upper bound
on that gain).  The real h2 stack runs TLS 1.3 like the model (``tls=False``: cleartext
on both backends).
"""

from .cli import add_arguments, params_from_args
from ...browser.server import POLICIES, pushable, server_plan
from .study import METRICS, PushParams, PushResult, run

__all__ = [
    "PushParams",
    "PushResult",
    "POLICIES",
    "METRICS",
    "run",
    "server_plan",
    "pushable",
    "add_arguments",
    "params_from_args",
]
