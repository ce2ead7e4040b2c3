"""``workbench fidelity TRACE_OR_DIR... [--protocol auto|h2|h3] [--at CONDITIONS] [--policy none|hints]
[--document-think DURATION] [--cc reno|cubic] [--seed N] [--json]``: the fidelity study's flags, its
command, and its registration."""

from __future__ import annotations

import argparse
import sys

from ... import argtypes
from ...net.conditions import PathConditions
from ...units import parse_duration
from ..base import Study, add_network_flags, network_from_args
from .conditions import PROTOCOL_CHOICES
from .study import BROWSER_CHOICES, H3_DISCOVERY, SERVER_POLICIES, FidelityParams, run, run_paths

__all__ = ["STUDY", "add_arguments", "params_from_args"]


def params_from_args(args: argparse.Namespace) -> FidelityParams:
    """The study's parameters from its parsed flags (units applied)."""
    return FidelityParams(
        protocol=args.protocol,
        browser=args.browser,
        at=None if args.at is None else str(PathConditions.parse(args.at)),
        policy=args.policy,
        h3_discovery=args.h3_discovery,
        document_think_s=None if args.document_think is None else parse_duration(args.document_think),
        **network_from_args(args),
    )


def _cmd(args: argparse.Namespace) -> int:
    params = params_from_args(args)
    result = run_paths(args.paths, params, progress=not args.json and sys.stderr.isatty())
    if args.json:
        print(result.to_json())
        return _failed(result)
    import pandas as pd  # the tables below (``--json`` needs none)

    if len(result.pages) and (params.at or params.counterfactual_server):
        table = result.pages[["page", "measured_onload_s", "simulated_onload_s", "resources"]].rename(
            columns={"measured_onload_s": "recorded_onload_s", "simulated_onload_s": "predicted_onload_s"}
        )
        table.insert(0, "trace", [str(t).rsplit("/", 1)[-1][:40] for t in result.pages["trace"]])
        server = (
            ""
            if not params.counterfactual_server
            else (
                f", server policy {params.policy}"
                + ("" if params.document_think_s is None else f", document think {params.document_think_s * 1e3:g} ms")
            )
        )
        print(
            f"predicted at {params.at or 'the recorded network'} (protocol {params.protocol}{server}); "
            "recorded: the HAR's own load"
        )
        with pd.option_context("display.width", 200, "display.max_rows", 500, "display.float_format", "{:.3f}".format):
            print(table.to_string(index=False))
    elif len(result.pages):
        table = result.pages[
            [
                "page",
                "measured_onload_s",
                "simulated_onload_s",
                "error_percent",
                "resources",
                "origin_protocols",
                "rtt_ms",
                "bandwidth_mbit",
            ]
        ].copy()
        table.insert(0, "trace", [str(t).rsplit("/", 1)[-1][:40] for t in result.pages["trace"]])
        with pd.option_context("display.width", 200, "display.max_rows", 500, "display.float_format", "{:.3f}".format):
            print(table.to_string(index=False))
    s = result.summary()
    if s["pages"] and s["mape_percent"] is not None:
        print(
            f"\n{s['pages']} pages: MAPE {s['mape_percent']:.1f}%, median APE {s['median_ape_percent']:.1f}%, "
            f"Spearman rho {s['spearman_rho'] if s['spearman_rho'] is not None else 'n/a'} "
            "(Lantern, Lighthouse's simulator, publishes rho 0.81 and MAPE 23% for FCP)"
        )
    r = result.to_dict()["repeat_views"]["summary"]
    if r["pages"]:
        print(
            f"repeat views predicted from their first view: {r['pages']} pages, MAPE {r['mape_percent']:.1f}%, "
            f"median APE {r['median_ape_percent']:.1f}%"
        )
    failed = {(trace, page) for trace, page, _ in result.failed}
    for row in result.skipped.to_dict(orient="records") if len(result.skipped) else []:
        if (row["trace"], row["page"]) not in failed:
            print(f"skipped: {row['trace']} page {row['page']}: {row['reason']}")
    return _failed(result)


def _failed(result) -> int:
    """One line on stderr per file or page that could not be read or simulated, after the
    whole result is out; status 2 when there was any (0 otherwise)."""
    for trace, page, why in result.failed:
        where = f"{trace}: page {page}" if page is not None else str(trace)
        print(f"workbench: error: {where}: {why}", file=sys.stderr)
    return 2 if result.failed else 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The study's flags: the command line's, and the batch grid's parameters."""
    p.add_argument(
        "--protocol",
        default="auto",
        choices=list(PROTOCOL_CHOICES),
        help="auto: each origin's protocol from the HAR (HTTP/1.1 gets six connections); h2 or h3: all",
    )
    p.add_argument(
        "--at",
        default=None,
        type=argtypes.checked(PathConditions.parse, "conditions"),
        metavar="CONDITIONS",
        help="predict each page on another network, e.g. rtt=300ms,bw=2mbit[,loss=0.01][,queue=64KiB]: "
        "server times and browser delays are carried over from the HAR",
    )
    p.add_argument(
        "--browser",
        default="auto",
        choices=list(BROWSER_CHOICES),
        help="the browser's request scheduling: auto (from the HAR's browser), chromium (Chromium's "
        "schedulers hold low-priority requests until the <body>) or none",
    )
    p.add_argument(
        "--h3-discovery",
        default="alt-svc",
        choices=list(H3_DISCOVERY),
        help="how the browser reaches HTTP/3: alt-svc (as deployed: the host is then known to support "
        "priorities) or forced (a command-line flag, as the lab's Chromium: its low-priority requests "
        "stay held)",
    )
    p.add_argument(
        "--policy",
        default="none",
        choices=list(SERVER_POLICIES),
        help="hints: the server sends the push study's 103 Early Hints on the navigation (preload the "
        "render-blocking sub-resources, preconnect their other origins)",
    )
    p.add_argument(
        "--document-think",
        default=None,
        type=argtypes.duration,
        metavar="DURATION",
        help="the document's server time instead of the HAR's, e.g. 100ms",
    )
    add_network_flags(p, cc="reno", seed=1)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="TRACE_OR_DIR", help="HAR files, or folders of them")
    # Each trace and its load live to the end of their run, which pauses the collector anyway
    # (stacks.common.collector_paused): run from the command line, it stays off (cli.main).
    p.set_defaults(collector=False)


STUDY = Study(
    name="fidelity",
    help="the page-load model against the measured onLoad of real page loads",
    add_arguments=add_arguments,
    params_from_args=params_from_args,
    run=run,
    command=_cmd,
    add_inputs=_add_inputs,
    optional_tables=("skipped", "repeat_views"),
)
