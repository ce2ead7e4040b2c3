"""``workbench replay``: replay a trace over a real protocol stack in virtual time.

    workbench replay --trace PATH --stack h2|h3 [--model] [--rtt 50ms] [--bw 10mbit] [--loss 0.01]
                     [--seed 1] [--think 0ms] [--no-tls] [--qlog DIR] [--pcap FILE] [--keylog FILE] [--json]

Prints one line per exchange (start, completion time, status, body bytes) and the
totals; ``--json`` prints one object with ``exchanges``, ``completed``,
``last_completion_s``, ``packets_sent`` and ``packets_lost`` (plus ``summary`` and
``params``).  ``--qlog DIR`` writes aioquic's qlog (simulated timestamps) per QUIC
connection; ``--pcap FILE`` writes every simulated packet as a pcap; ``--keylog FILE``
writes the TLS secrets (SSLKEYLOGFILE format) of the QUIC connections or of h2's TLS
connections, for Wireshark.  h2 runs over TLS 1.3 (ALPN h2, the real OpenSSL) like HTTP/3,
so their times compare like with like; ``--no-tls`` runs it cleartext with prior
knowledge (one round trip less per connection; HTTP/3 has no cleartext mode).
``--model`` replays the same exchanges over the stack's transport *model* instead (h2: the
TCP model, h3: the QUIC model; ``http.model_replay``), the baseline the real stacks are
cross-validated against.
"""

from __future__ import annotations

import argparse
import math

from ... import argtypes
from ...errors import InputError
from ...units import parse_duration, parse_size
from ..base import Study, add_network_flags, network_from_args
from .study import ReplayParams, run

__all__ = ["STUDY", "add_arguments", "params_from_args"]


def params_from_args(args: argparse.Namespace) -> ReplayParams:
    """The study's parameters from its parsed flags (units applied)."""
    return ReplayParams(
        stack=args.stack,
        think_s=parse_duration(args.think),
        idle_timeout_s=parse_duration(args.idle_timeout),
        qpack_table_bytes=parse_size(args.qpack_table),
        qpack_blocked_streams=int(args.qpack_blocked),
        model=bool(args.model),
        qlog_dir=args.qlog,
        pcap_path=args.pcap,
        keylog_path=args.keylog,
        **network_from_args(args),
    )


def _cmd(args: argparse.Namespace) -> int:
    from ...traces import load

    params = params_from_args(args)
    if args.model:
        given = [flag for flag, v in (("--qlog", args.qlog), ("--pcap", args.pcap), ("--keylog", args.keylog)) if v]
        if given:
            raise InputError(f"{given[0]} records a real stack's packets: it cannot be used with --model")
    if args.qlog is not None and params.stack != "h3":
        raise InputError("--qlog needs --stack h3 (qlog is written by aioquic)")
    if args.keylog is not None and not params.tls:
        raise InputError("--keylog needs TLS: drop --no-tls (cleartext HTTP/2 has no secrets)")
    trace = load(args.trace)
    result = run(trace, params)
    if args.json:
        print(result.to_json())
        return 0
    s = result.summary
    tls = "" if params.stack == "h3" else (" over TLS 1.3" if params.tls else " cleartext")
    print(
        f"trace {trace.source}: {s['exchanges']} exchanges over {s['stack']}{tls}, {s['connections']} connections, "
        f"RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, seed {params.seed}"
    )
    print(f"{'#':>4} {'kind':<7}{'start s':>9}{'done s':>9}{'time ms':>9}{'status':>7}{'bytes':>9}  path")
    for row in result.exchanges.itertuples():
        done = "-" if math.isnan(row.complete_s) else f"{row.complete_s:.3f}"
        took = "-" if math.isnan(row.completion_s) else f"{row.completion_s * 1000:.1f}"
        note = f" (reset by {row.reset})" if row.reset else ""
        print(
            f"{row.exchange:>4} {row.kind:<7}{row.start_s:>9.3f}{done:>9}{took:>9}{row.status:>7}"
            f"{row.body_bytes:>9}  {row.path[:60]}{note}"
        )
    last = s["last_completion_s"]
    print(
        f"completed {s['completed']} of {s['exchanges']}; last completion "
        f"{'-' if last is None else f'{last:.3f} s'}; median {_ms(s['median_completion_s'])}; "
        f"packets sent {s['packets_sent']}, lost {s['packets_lost']}"
    )
    return 0


def _ms(v) -> str:
    return "-" if v is None else f"{v * 1000:.1f} ms"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``workbench replay`` flags (the batch runner reads its grid parameters from them)."""
    p.add_argument("--trace", required=True, help="HAR, QIF or QPACK interop file")
    p.add_argument("--stack", required=True, choices=["h2", "h3"])
    p.add_argument(
        "--model",
        action="store_true",
        help="replay over the stack's transport model instead (h2: TCP model, h3: QUIC model)",
    )
    add_network_flags(p, rtt="50ms", bw="10mbit", loss="0", cc="reno", tls=True, seed=1)
    p.add_argument("--think", default="0ms", type=argtypes.duration, help="server think time before each response")
    p.add_argument(
        "--idle-timeout",
        default="30s",
        type=argtypes.positive_duration,
        help="give up when nothing progresses this long",
    )
    p.add_argument(
        "--qpack-table", default="4096", type=argtypes.size, help="HTTP/3 QPACK dynamic table capacity (bytes)"
    )
    p.add_argument(
        "--qpack-blocked", default=16, type=argtypes.count(0, 65_535), help="HTTP/3 QPACK blocked-streams limit"
    )
    p.add_argument(
        "--qlog", metavar="DIR", type=argtypes.existing_folder, help="write qlog files (simulated time) into DIR (h3)"
    )
    p.add_argument(
        "--pcap", metavar="FILE", type=argtypes.output_file, help="write every simulated packet to a pcap file"
    )
    p.add_argument(
        "--keylog",
        metavar="FILE",
        type=argtypes.output_file,
        help="write the TLS secrets (key-log format) for Wireshark",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


STUDY = Study(
    name="replay",
    help="replay a trace over real h2 or aioquic HTTP/3 (or their transport models) in virtual time",
    add_arguments=add_arguments,
    params_from_args=params_from_args,
    run=run,
    command=_cmd,
    optional_tables=("exchanges",),
    cli_only=frozenset({"qlog", "pcap", "keylog"}),
)
