"""One real page load in the lab, registered as a study so that the batch runner runs it:
``workbench lab-load --trace PAGE.har --rtt 100ms --bw 10mbit --protocol h2`` for one load,
``workbench batch lab-load`` (or ``workbench lab run``) for pages x conditions x runs into the
results store, resumable, with a progress bar, on Dask workers too (each machine makes its
own namespaces).

A load: the HAR's page rebuilt as a real site (``site.rebuild``: every origin on its own
RFC 5737 address, each response at its recorded status, size, coding and server time), its
servers started in the lab's server namespace (``serve``: hypercorn, HTTP/2 over TLS or
HTTP/3), Chromium loading it in the client namespace (``load``), over the emulated link
(``link.Lab``) with this load's conditions.  Each load gets fresh namespaces, servers and
browser profile, so no kernel TCP metrics cache, connection or HTTP cache carries over from
one load to the next.

Unlike every other study, a lab load is a measurement on the wall clock: its rows are not
deterministic (the run number, ``seed``, with the page's URL seeds the link's loss draws:
``loss_seed``).  ``summary`` has one row (onLoad, first and largest contentful paint, requests,
protocols seen, the link's counters, the server kernel's TCP counters:
``KERNEL_TCP_COUNTERS``); the optional ``har`` table holds the HAR itself as JSON text, which
``lab validate`` predicts from.

``--policy hints`` has the server send the push study's 103 Early Hints on the document's
request (``hints.hint_plan``: preload for the render-blocking sub-resources, preconnect for
their other origins), and ``--think 100ms`` (``--document-think``) sets the document's server
time instead of the recorded one (grid keys ``policy`` and ``think``).  The row then also says
whether the server sent the 103 and how many hinted preloads the browser asked for before the
document's final response began (the server's own log).  Loads at the defaults (``none``, the
recorded think) keep the job identity they had before these options existed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace

import pandas as pd

from .. import argtypes
from ..errors import InputError
from ..studies.base import Study, StudyParams, StudyResult, add_network_flags, network_from_args, records
from ..units import parse_duration, parse_size

__all__ = [
    "LabLoadParams",
    "LabLoadResult",
    "run",
    "load_in_lab",
    "page_metrics",
    "kernel_tcp_counters",
    "kernel_tcp_retransmits",
    "STUDY",
    "PROTOCOLS",
]

PROTOCOLS = ("h2", "h3")
POLICIES = ("none", "hints")


@dataclass(frozen=True)
class LabLoadParams(StudyParams):
    """The link (as the models' network flags), the protocol every https origin is served
    and loaded with, the servers' congestion control (``cc``, named on their sockets: the
    system's default may be one the models lack), the run number (which with the page seeds the
    loss draws, ``loss_seed``) and a time limit."""

    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    queue_bytes: int | None = None
    protocol: str = "h2"
    seed: int = 1
    cc: str = "cubic"
    timeout_s: float = 60.0
    policy: str = "none"  # none, or hints: the push study's 103 on the navigation
    document_think_s: float | None = None  # the document's server time (None: the recorded one)
    scheduler: str | None = None  # the servers' order of sending (lab.schedule); None: their own

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.protocol not in PROTOCOLS:
            raise InputError(f"unknown protocol {self.protocol!r} (choose h2 or h3)")
        if self.policy not in POLICIES:
            raise InputError(f"unknown policy {self.policy!r} (choose none or hints)")
        if self.document_think_s is not None and not 0 <= self.document_think_s <= 60:
            raise InputError(f"the document's think time must be in [0, 60] s, got {self.document_think_s}")
        if self.scheduler is not None:
            from ..http.priority import make_scheduler

            make_scheduler(self.scheduler)  # an unknown one: InputError naming the choices
        if not 0 < self.timeout_s <= 3600:
            raise InputError(f"the load's time limit must be in (0, 3600] s, got {self.timeout_s}")
        self.conditions()  # the link's own limits (rate, queue), before any work

    def conditions(self):
        """The emulated link of this load (``link.LinkConditions``)."""
        from .link import LinkConditions

        return LinkConditions(
            rtt_s=self.rtt_s,
            bandwidth_bps=self.bandwidth_bps,
            loss=self.loss,
            queue_bytes=self.queue_bytes,
            seed=self.seed,
        )

    def batch_dict(self) -> dict:
        """As ``StudyParams.batch_dict``, without ``policy``, ``document_think_s`` and
        ``scheduler`` at their defaults: a results folder recorded before they existed resumes
        as it was."""
        d = super().batch_dict()
        if d.get("scheduler") is None:
            d.pop("scheduler", None)
        if d.get("policy") == "none":
            del d["policy"]
        if d.get("document_think_s") is None:
            d.pop("document_think_s", None)
        return d


def page_metrics(har: dict) -> dict:
    """onLoad, first and largest contentful paint (seconds after the page's start), requests
    and the protocols the responses came over, of a lab HAR's page."""
    page = har["log"]["pages"][0]
    timings = page.get("pageTimings", {})

    def seconds(key):
        v = timings.get(key)
        return None if v is None or v < 0 else v / 1000.0

    entries = har["log"]["entries"]
    versions = sorted({e["response"].get("httpVersion") or "" for e in entries} - {""})
    return {
        "onload_s": seconds("onLoad"),
        "fcp_s": seconds("_firstContentfulPaint"),
        "lcp_s": seconds("_largestContentfulPaint"),
        "requests": len(entries),
        "protocols_seen": ",".join(versions),
    }


def _last_line(data: bytes | str | None) -> str:
    text = data.decode(errors="replace") if isinstance(data, bytes) else (data or "")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "no message").removeprefix("error: ")


def loss_seed(run: int, page_url: str) -> int:
    """The relay's loss seed of run ``run`` of the page at ``page_url``: the run and the page
    together, so that run k of two pages draws two independent loss sequences.  Seeded by the
    run alone, run k of every page lost the same packets: at 1% loss a 1.5 MB response took
    4.7, 7.9 and 12.2 s under seeds 1, 2 and 3 against a median of 4.3-5.5 s under others, and
    a validation's three runs were then the same three (slow) draws on every page, which moved
    every page's measured median the same way."""
    from ..engine import derive_seed

    return derive_seed(run, f"lab-loss/{page_url}") >> 1  # 63 bits: the relay's seed is unsigned


# The server kernel's TCP counters a lab load records, by column: RFC 4022's tcpRetransSegs and
# Linux's TcpExt counters of the mechanisms that resend on a lossless link with a deep queue
# (the tail loss probe of RFC 8985 section 7, the RTO, a SYN-ACK resent on its 1 s timer) and
# of the duplicates those sent (RFC 2883 D-SACKs received).
KERNEL_TCP_COUNTERS = {
    "server_tcp_retransmits": ("Tcp", "RetransSegs"),
    "server_tcp_loss_probes": ("TcpExt", "TCPLossProbes"),
    "server_tcp_timeouts": ("TcpExt", "TCPTimeouts"),
    "server_tcp_syn_retransmits": ("TcpExt", "TCPSynRetrans"),
    "server_tcp_dsacks_received": ("TcpExt", "TCPDSACKRecv"),
}


def kernel_tcp_counters(pid: int) -> dict[str, int]:
    """``KERNEL_TCP_COUNTERS`` in the network namespace process ``pid`` runs in (its
    ``/proc/PID/net/snmp`` and ``netstat``: a header line and a value line per group)."""
    groups: dict[str, dict[str, int]] = {}
    for name in ("snmp", "netstat"):
        with open(f"/proc/{pid}/net/{name}") as f:
            lines = [line.split() for line in f]
        for head, values in zip(lines[::2], lines[1::2]):
            groups[head[0].rstrip(":")] = dict(zip(head[1:], map(int, values[1:])))
    return {column: groups[group][key] for column, (group, key) in KERNEL_TCP_COUNTERS.items()}


def kernel_tcp_retransmits(pid: int) -> int:
    """The kernel's count of TCP segments resent (RetransSegs, RFC 4022's tcpRetransSegs) in
    the namespace process ``pid`` runs in."""
    return kernel_tcp_counters(pid)["server_tcp_retransmits"]


def load_in_lab(
    trace, params: LabLoadParams, *, site=None, netlog: str | None = None, qlog: str | None = None
) -> tuple[dict, dict]:
    """One load of ``trace``'s page (or of ``site``, already rebuilt) in the lab: (the HAR
    Chromium recorded, the relay's counters); with ``netlog``, Chromium's NetLog of the load is
    written to that file (whole, or not at all); with ``qlog`` (an existing folder), the QUIC
    servers' qlog of each connection (``lab.qlog``: ``ODCID.sqlog``)."""
    from .link import Lab, read_line
    from .netns import exec_argv
    from .hints import hint_plan
    from .site import rebuild

    site = site if site is not None else rebuild(trace)
    python = [sys.executable, "-m"]
    with tempfile.TemporaryDirectory(prefix="wblab-") as tmp:
        site_dir = os.path.join(tmp, "site")
        site.write(site_dir)
        har_path = os.path.join(tmp, "load.har")
        log_path = os.path.join(tmp, "server.jsonl")
        serve_argv = [
            *python,
            "simulator.lab.serve",
            site_dir,
            "--proto",
            params.protocol,
            "--log",
            log_path,
            "--cc",
            params.cc,
        ]
        plan = None
        if params.policy == "hints":
            plan = hint_plan(trace)
            with open(os.path.join(tmp, "hints.json"), "w", encoding="utf-8") as f:
                json.dump(plan, f)
            serve_argv += ["--hints", os.path.join(tmp, "hints.json")]
        if params.document_think_s is not None:
            serve_argv += ["--document-think", f"{params.document_think_s!r}s"]
        if params.scheduler is not None:
            serve_argv += ["--scheduler", params.scheduler]
        qlog_tmp = os.path.join(tmp, "qlog")
        if qlog:
            os.mkdir(qlog_tmp, 0o777)
            os.chmod(qlog_tmp, 0o777)  # the server may run as another user
            serve_argv += ["--qlog", qlog_tmp]
        link = replace(params.conditions(), seed=loss_seed(params.seed, site.page_url))
        with Lab(link, server_addresses=sorted(set(site.hosts.values()))) as lab:
            server = lab.start("server", serve_argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if read_line(server.stdout, 30.0) != "ready":
                server.poll()
                raise InputError(
                    f"the rebuilt site's servers did not start ({_last_line(server.stderr.read1(4000))}).",
                    path=trace.source if trace is not None else None,
                )
            counters_before = kernel_tcp_counters(server.pid)
            done = subprocess.run(
                exec_argv(
                    lab.client_ns,
                    [
                        *python,
                        "simulator.lab.load",
                        site_dir,
                        "--proto",
                        params.protocol,
                        "--out",
                        har_path,
                        "--timeout",
                        f"{params.timeout_s}s",
                        *(["--netlog", os.path.join(tmp, "netlog.json")] if netlog else []),
                    ],
                ),
                env=lab.environment(),
                capture_output=True,
                timeout=params.timeout_s + 60,
            )
            if done.returncode != 0:
                raise InputError(
                    f"the lab load failed ({_last_line(done.stderr)}).",
                    path=trace.source if trace is not None else None,
                )
            with open(har_path, encoding="utf-8") as f:
                har = json.load(f)
            counters = kernel_tcp_counters(server.pid)
            counters = {k: v - counters_before[k] for k, v in counters.items()}
        from ..traces._io import atomic_write

        if netlog:
            with open(os.path.join(tmp, "netlog.json"), "rb") as f:
                atomic_write(netlog, f.read())
        for name in sorted(os.listdir(qlog_tmp)) if qlog else ():
            with open(os.path.join(qlog_tmp, name), "rb") as f:
                atomic_write(os.path.join(qlog, name), f.read())
        server_log = []
        if os.path.exists(log_path):
            with open(log_path, encoding="utf-8") as f:
                server_log = [json.loads(line) for line in f if line.strip()]
        return har, {**(lab.stats or {}), **counters, "server_log": server_log, "hint_plan": plan}


@dataclass
class LabLoadResult(StudyResult):
    """One lab load: its page metrics and link counters (``summary``) and its HAR (``har``)."""

    summary: pd.DataFrame
    har: dict
    params: dict

    def tables(self) -> dict[str, pd.DataFrame]:
        """``summary`` (one row) and ``har`` (the HAR as JSON text, one row)."""
        return {"summary": self.summary, "har": pd.DataFrame([{"har_json": json.dumps(self.har, sort_keys=True)}])}

    def to_dict(self) -> dict:
        """The load's row and its parameters (the HAR is written with ``--har``)."""
        return {"summary": records(self.summary), "params": self.params}


_SITES: dict[str, object] = {}  # trace content hash -> its rebuilt site (this process)


def _site(trace):
    """The rebuilt site of ``trace``, rebuilt once per process: a batch runs the same page at
    every grid point and run, and sizing a large page's coded bodies takes seconds."""
    from .site import rebuild

    key = trace.content_hash()
    if key not in _SITES:
        if len(_SITES) >= 8:
            _SITES.pop(next(iter(_SITES)))
        _SITES[key] = rebuild(trace)
    return _SITES[key]


def run(trace, params: LabLoadParams | None = None, *, progress: bool = False) -> LabLoadResult:
    """Load ``trace``'s page once in the lab under ``params`` (see the module docstring)."""
    params = params or LabLoadParams()
    return _result(params, *load_in_lab(trace, params, site=_site(trace)))


def _result(params: LabLoadParams, har: dict, stats: dict) -> LabLoadResult:
    """The result of one lab load from what ``load_in_lab`` gave."""
    row = {**page_metrics(har)}
    for direction in ("uplink", "downlink"):
        d = stats.get(direction, {})
        row[f"{direction}_packets"] = d.get("packets_in")
        row[f"{direction}_bytes"] = d.get("bytes_in")  # IP bytes offered to the link, whole run
        row[f"{direction}_lost"] = d.get("packets_lost")
        row[f"{direction}_queue_drops"] = d.get("packets_dropped")
    for column in KERNEL_TCP_COUNTERS:
        row[column] = stats.get(column)
    if params.policy == "hints":
        from .hints import hint_timeline

        row.update(hint_timeline(stats.get("server_log") or [], stats.get("hint_plan")))
        doc = next((e for e in har["log"]["entries"] if e.get("_earlyHints")), None)
        row["har_early_hints"] = doc is not None
    return LabLoadResult(summary=pd.DataFrame([row]), har=har, params=params.to_dict())


# ---------------------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The load's flags: the link (the models' spellings), the protocol, the time limit."""
    add_network_flags(p, rtt="100ms", bw="10mbit", loss="0", cc="cubic", seed=1)
    p.add_argument(
        "--queue",
        default=None,
        type=argtypes.positive_size,
        help="drop-tail queue of each direction in bytes (default: unlimited, as the models)",
    )
    p.add_argument("--protocol", default="h2", choices=PROTOCOLS, help="HTTP/2 over TLS, or HTTP/3 (QUIC forced)")
    p.add_argument("--timeout", default="60s", type=argtypes.positive_duration, help="give up on the page after this")
    p.add_argument(
        "--policy",
        default="none",
        choices=POLICIES,
        help="hints: the server sends the push study's 103 Early Hints on the document's request",
    )
    p.add_argument(
        "--think",
        "--document-think",
        dest="document_think",
        default=None,
        type=argtypes.duration,
        help="the document's server time instead of the recorded one, e.g. 100ms",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="NAME",
        help="the servers send in the order this scheduler of the priorities study picks (default: their own)",
    )
    p.add_argument(
        "--har", default=None, type=argtypes.output_file, metavar="FILE", help="also write the HAR Chromium recorded"
    )
    p.add_argument(
        "--netlog",
        default=None,
        type=argtypes.output_file,
        metavar="FILE",
        help="also write Chromium's NetLog of the load (its schedulers, sockets and streams)",
    )
    p.add_argument(
        "--qlog",
        default=None,
        type=argtypes.existing_folder,
        metavar="DIR",
        help="also write the QUIC servers' qlog of each connection into DIR (ODCID.sqlog, h3 only)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def params_from_args(args: argparse.Namespace) -> LabLoadParams:
    """The load's parameters from its parsed flags (units applied, the link checked)."""
    return LabLoadParams(
        queue_bytes=None if args.queue is None else parse_size(args.queue),
        protocol=args.protocol,
        timeout_s=parse_duration(args.timeout),
        policy=args.policy,
        document_think_s=None if args.document_think is None else parse_duration(args.document_think),
        scheduler=args.scheduler,
        **network_from_args(args),
    )


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, help="the HAR whose page is rebuilt and loaded")


def _cmd(args: argparse.Namespace) -> int:
    from ..traces import load

    params = params_from_args(args)
    trace = load(args.trace)
    if args.netlog or args.qlog:  # outputs of the CLI alone: the same load, its logs kept
        result = _result(params, *load_in_lab(trace, params, site=_site(trace), netlog=args.netlog, qlog=args.qlog))
    else:
        result = run(trace, params)
    if args.har:
        from ..traces._io import atomic_write

        atomic_write(args.har, (json.dumps(result.har, indent=1) + "\n").encode())
    if args.json:
        print(result.to_json())
        return 0
    row = result.summary.iloc[0]
    paint = lambda v: "n/a" if v is None or v != v else f"{v:.3f} s"  # noqa: E731
    print(
        f"onLoad {paint(row['onload_s'])}, first contentful paint {paint(row['fcp_s'])}, "
        f"largest contentful paint {paint(row['lcp_s'])}; {row['requests']} requests over "
        f"{row['protocols_seen'] or 'nothing'}; link: {row['downlink_lost']} lost, "
        f"{row['downlink_queue_drops']} dropped at the queue (server to client), {row['downlink_bytes']} bytes "
        f"down and {row['uplink_bytes']} up; the server's kernel resent {row['server_tcp_retransmits']} TCP "
        f"segments ({row['server_tcp_loss_probes']} tail loss probes, {row['server_tcp_timeouts']} timeouts, "
        f"{row['server_tcp_syn_retransmits']} SYN-ACKs resent; {row['server_tcp_dsacks_received']} D-SACKs back)"
    )
    return 0


STUDY = Study(
    name="lab-load",
    help="one real page load: the HAR's page rebuilt and loaded by Chromium in the lab",
    add_arguments=add_arguments,
    params_from_args=params_from_args,
    run=run,
    command=_cmd,
    add_inputs=_add_inputs,
    optional_tables=("har",),
    cli_only=frozenset({"har", "netlog", "qlog", "timeout"}),
)
