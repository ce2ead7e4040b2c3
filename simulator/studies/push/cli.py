"""``workbench push``: the push study's flags, its command, and its registration."""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from ... import argtypes
from ...errors import InputError
from ...units import parse_duration, parse_named_durations
from ..base import Study, add_network_flags, comma_list, median_over_seeds, network_from_args
from ...browser.flags import add_page_flags, think_from_args
from ...browser.client import BACKENDS, COALESCE, PROTOCOLS
from ...browser.server import POLICIES, push_count
from .study import DEFAULT_PARSE_DELAY, PushParams, run

__all__ = ["STUDY", "add_arguments", "params_from_args"]


def _urgency(text: str) -> int:
    digits = str(text).strip()
    if not (digits.isascii() and digits.isdigit()) or not 0 <= int(digits) <= 7:  # not "٣" or "³"
        raise InputError(f"push urgency must be 0..7 (RFC 9218), got {text!r}")
    return int(text)


def params_from_args(args: argparse.Namespace) -> PushParams:
    """The study's parameters from its parsed flags (units applied)."""
    return PushParams(
        policies=comma_list(args.policy),
        protocol=args.protocol,
        backend=args.backend,
        cache=args.cache,
        push_set=args.push_set,
        coalesce=args.coalesce,
        dns_s=parse_duration(args.dns),
        edge_seen=bool(args.edge_seen),
        scheduler=args.scheduler,
        push_urgency=int(args.push_urgency),
        parse_delay=args.parse_delay,
        page=args.page,
        **think_from_args(args),
        **network_from_args(args),
    )


def _cmd(args: argparse.Namespace) -> int:
    from ...traces import load

    params = params_from_args(args)
    trace = load(args.trace)
    result = median_over_seeds(run, trace, params, args.seeds, progress=not args.json and sys.stderr.isatty())
    if args.json:
        print(result.to_json())
        return 0
    t = result.trace
    print(
        f"page {t['page'] or '-'} of {t['source']}: {t['resources']} resources, {t['origins']} origins, "
        f"{t['render_blocking']} render-blocking, edges from {t['edges_from']}; {params.protocol} on the "
        f"{params.backend}, RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, cache {params.cache}, "
        f"think {result.summary['think_s'].iloc[0] * 1000:.0f} ms, seed {params.seed}"
        + (f" (median of {args.seeds} seeds)" if args.seeds > 1 else "")
    )
    cols = [
        "render_blocking_s",
        "onload_s",
        "gain_render_blocking_s",
        "gain_render_blocking_rtts",
        "gain_onload_s",
        "requests",
        "connections",
        "pushes_promised",
        "pushes_used",
        "pushes_cancelled",
        "bytes_pushed",
        "bytes_wasted",
        "hinted_fetches",
    ]
    with pd.option_context("display.width", 220, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string())
    for policy in ("push", "push+hints"):
        if policy in result.summary.index and not result.summary.loc[policy, "pushes_planned"]:
            print(
                f"note: {policy} pushes nothing: no resource of the push set ({params.push_set}) is on the "
                "document's connection (RFC 9113 section 8.4: a server pushes only what it is authoritative for)"
            )
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The study's flags: the command line's, and the batch grid's parameters."""
    add_page_flags(p)
    p.add_argument(
        "--policy",
        default="none,push,hints,push+hints",
        type=argtypes.names(POLICIES, "policy"),
        help="comma-separated: " + ",".join(POLICIES),
    )
    p.add_argument("--protocol", default="h2", choices=list(PROTOCOLS), help="h2 (over TCP) or h3 (over QUIC)")
    p.add_argument(
        "--backend",
        default="model",
        choices=list(BACKENDS),
        help="model (transport models) or stacks (real h2 / aioquic)",
    )
    add_network_flags(p, rtt="100ms", bw="10mbit", loss="0", tls=True, seed=1)
    p.add_argument(
        "--push-set",
        default="render-blocking",
        type=argtypes.checked(push_count, "push set"),
        help="render-blocking, all, largest:N, or 'list:URL URL ...'",
    )
    p.add_argument(
        "--parse-delay",
        default=DEFAULT_PARSE_DELAY,
        type=argtypes.checked(lambda t: parse_named_durations(t, "parse delay", require_unit=True), "parse delay"),
        help="parse/CPU delay before a parent's references are found, per resource type "
        "(TYPE=DURATION,...; types not named: 0)",
    )
    p.add_argument(
        "--coalesce",
        default="site",
        choices=list(COALESCE),
        help="site: first-party hosts share the document's connection; origin: one per origin",
    )
    p.add_argument("--dns", default="0ms", type=argtypes.duration, help="DNS time before each cold connection")
    p.add_argument("--edge-seen", action="store_true", help="hints-cdn: the CDN edge has seen the page before")
    p.add_argument(
        "--push-urgency",
        default=3,
        type=argtypes.checked(_urgency, "urgency"),
        help="RFC 9218 urgency of pushed responses, 0..7 (model)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


STUDY = Study(
    name="push",
    help="HTTP/2 server push vs 103 Early Hints on a page-load model",
    add_arguments=add_arguments,
    params_from_args=params_from_args,
    run=run,
    command=_cmd,
    optional_tables=("resources", "pushes"),
)
