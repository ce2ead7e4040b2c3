"""``workbench capture``: a real Chromium loads a page set from real local HTTP/2 or HTTP/3
servers and the page load is written as a HAR (see ``simulator.capture``)."""

from __future__ import annotations

import argparse

from .. import argtypes
from ..errors import InputError
from ..units import parse_duration

__all__ = ["add_commands"]


def _cmd(args: argparse.Namespace) -> int:
    from . import capture, write
    from .server import PROTOCOLS, SYNTH_MAX, SYNTH_MIN

    if args.proto not in PROTOCOLS:
        raise InputError(f"--proto must be one of {', '.join(PROTOCOLS)}, not {args.proto!r}.")
    if args.synth is not None and not SYNTH_MIN <= args.synth <= SYNTH_MAX:
        raise InputError(
            f"--synth must be between {SYNTH_MIN} and {SYNTH_MAX} requests "
            f"(the generator's page sizes), not {args.synth}."
        )
    think_s = parse_duration(args.think)
    timeout_s = parse_duration(args.timeout)
    result = capture(
        proto=args.proto,
        site_dir=args.site,
        synth=args.synth,
        seed=args.seed,
        repeat_view=args.repeat_view,
        netlog=args.netlog,
        early_hints=args.early_hints,
        push=args.push,
        trailers=args.trailers,
        think_s=think_s,
        timeout_s=timeout_s,
    )
    har = result["har"]
    write(har, args.out)
    entries = har["log"]["entries"]
    versions = sorted({e["response"]["httpVersion"] for e in entries if e["response"]["httpVersion"]})
    cached = sum(1 for e in entries if e.get("_fromCache"))
    hints = sum(1 for r in result["server_log"] if r["early_hints"])
    print(
        f"wrote {len(entries)} entries ({', '.join(versions) or 'no responses'}"
        + (f", {cached} from cache" if cached else "")
        + (f", {hints} with 103 Early Hints" if hints else "")
        + f") from {result['origin']} to {args.out}"
    )
    if args.netlog:
        print(f"NetLog: {args.netlog}")
    return 0


def add_commands(sub) -> None:
    """Register ``workbench capture`` (load a page in real Chromium over local h2/h3, write a HAR) on ``sub``."""
    p = sub.add_parser("capture", help="load a page set in a real Chromium over real local h2/h3 servers; write a HAR")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--site", metavar="DIR", help="folder to serve (needs an index.html)")
    src.add_argument("--synth", metavar="N", type=int, help="a synthetic page of N requests (workbench trace synth)")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic page (default 0)")
    p.add_argument("--proto", required=True, help="h2 (HTTP/2 over TLS) or h3 (HTTP/3, forced for the origin)")
    p.add_argument(
        "--out", required=True, metavar="HAR", type=argtypes.output_file, help="HAR file to write (atomically)"
    )
    p.add_argument(
        "--repeat-view", action="store_true", help="load twice in one browser context, record the second view"
    )
    p.add_argument(
        "--netlog", metavar="FILE", type=argtypes.output_file, help="also write Chromium's NetLog (JSON) here"
    )
    p.add_argument("--early-hints", action="store_true", help="the server sends 103 Early Hints before the document")
    p.add_argument(
        "--push", action="store_true", help="the server pushes the render-blocking set (h2; Chromium refuses)"
    )
    p.add_argument(
        "--trailers", action="store_true", help="server-timing trailers on h2 when the request has TE: trailers"
    )
    p.add_argument(
        "--think",
        default="0ms",
        type=argtypes.duration,
        help="the server's think time before the document (wall clock)",
    )
    p.add_argument(
        "--timeout",
        default="60s",
        type=argtypes.positive_duration,
        help="give up on the page load after this long (default 60s)",
    )
    p.set_defaults(func=_cmd)
