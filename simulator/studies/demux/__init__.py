"""HTTP/2 receive-side demultiplexing.

The question: how should a single-threaded HTTP/2 client hand each DATA frame to its
stream's consumer when it downloads many large responses in parallel over one
connection?  The reference case is libcurl's: 50 downloads of 100 MB each from a server
on the same host.  Earlier designs stopped reading at a frame of a stream that was not
being serviced ("stop the train"), parked such frames in a small side area, or copied
them into per-stream receive buffers that could grow to the whole flow-control window
(about 500 MB: a 10 MB window x 50 streams); dispatching every frame directly to its
stream's consumer, as curl's reworked HTTP/2 receive path does (2024: DATA frames go
straight to the transfer, no buffering), held about 12 MB and more than doubled the throughput.  Which
design buffers how much depends on the server: one sends long runs of one stream,
another interleaves finely.  Work per frame counts too: removing small allocations from
curl's transfer loop cut a 512 MB download from 33,961 allocations to 129 and raised
localhost throughput about 30% (2.2 to 2.9 GB/s; D. Stenberg, "Fewer mallocs in curl",
April 2017).

A single-threaded client downloads N responses of S bytes over one HTTP/2 connection
with a per-stream flow-control window W (its SETTINGS_INITIAL_WINDOW_SIZE; the
connection window is N x W).  The server is a real ``h2`` server connection whose
frame interleaving is a parameter (``server``: ``runs`` of a whole window per
stream, ``round-robin`` one DATA frame per stream in turn, ``h2`` the event-driven loop
of h2's documentation).  Four receivers (``receivers``), all reading frames with
the project's frame scanner (C, or its pure-Python twin): ``stop-the-train``,
``side-track``, ``per-stream`` buffers and ``direct`` dispatch.  The application takes
every stream's bytes (``work``: count them, or CRC-32 them), and the receiver returns
the windows with WINDOW_UPDATEs as it consumes (h2's own algorithm, RFC 9113 section
6.9), so the server only sends what the windows allow.

Two parts, one ``run()``:

- ``real`` (measured on this machine: the CPU time of the receive loop): each receiver reads a real socket
  fed by the h2 server (``real``); throughput in MB/s of this machine and as a
  ratio to ``direct`` in the same run (best of ``repeat`` runs, interleaved), peak
  payload bytes buffered, bytes copied per MB, the C scanner's heap allocations
  (``scanner_allocations``), the Python heap peak under ``tracemalloc``
  (``trace_memory``), wakeups and dispatches per DATA frame;
- ``model`` (deterministic, seeded): the same receivers over the TCP model with a CPU
  cost per operation (``model``), for each RTT: completion time, the time the
  server sat with no window (flow-control stalls: a WINDOW_UPDATE needs half an RTT to
  reach it), the receiver's busy share, and the same counters.

What it shows: with ``reading="eager"`` (a loop that reads until the socket is empty
while a same-host server keeps it full) per-stream buffers grow to N x W, all the
windows allow, while direct dispatch holds one read buffer; stop-the-train costs a
wakeup and a dispatch per change of stream, nothing on long runs and one per frame on
round-robin, so the ranking moves with the interleaving.

``--full`` is the reference case: 50 x 100 MB with a 10 MB window.
"""

from .cli import add_arguments, params_from_args
from .model import CpuCosts
from .receivers import READING, STRATEGIES, WORK
from .server import INTERLEAVINGS
from .study import FULL, PARTS, ROW_PARAMS, SCANNERS, DemuxParams, DemuxResult, run

__all__ = [
    "DemuxParams",
    "DemuxResult",
    "run",
    "CpuCosts",
    "STRATEGIES",
    "INTERLEAVINGS",
    "READING",
    "WORK",
    "PARTS",
    "SCANNERS",
    "FULL",
    "ROW_PARAMS",
    "add_arguments",
    "params_from_args",
]
