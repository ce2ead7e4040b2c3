"""``workbench trace ...``: inspect, convert and synthesize traces.

* ``workbench trace info PATH [--json]``: format, exchanges, header lists (requests
  and responses), origins, pages, raw header bytes, whether the trace is timed.
* ``workbench trace convert IN OUT [--to qif|har] [--direction both|requests|responses]``:
  any loadable trace to QIF (default) or HAR.
* ``workbench trace synth OUT [--pages N] [--seed N] [--format har|qif] [--requests N]
  [--origins N] [--third-party-share P] [--third-party-zipf S]``: a synthetic browsing
  session (see ``simulator.traces.synth``).
"""

from __future__ import annotations

import json

from .. import argtypes
from ..errors import InputError
from . import load
from .model import Trace
from .synth import MAX_ASKED_REQUESTS as SYNTH_MAX_REQUESTS, MIN_REQUESTS as SYNTH_MIN_REQUESTS

DIRECTIONS = ("both", "requests", "responses")


def summary(trace: Trace) -> dict:
    """The facts ``trace info`` reports, as a JSON-ready dict."""
    requests = sum(1 for e in trace if e.request_headers is not None)
    responses = sum(1 for e in trace if e.response_headers is not None)
    starts = [e.start_s for e in trace if e.start_s is not None]
    origins = trace.origins()
    return {
        "path": trace.source,
        "format": trace.format,
        "exchanges": len(trace),
        "header_lists": requests + responses,
        "request_lists": requests,
        "response_lists": responses,
        "origin_count": len(origins),
        "origins": origins,
        "pages": len(trace.pages),
        "raw_header_bytes": trace.raw_header_bytes("both"),
        "raw_request_header_bytes": trace.raw_header_bytes("requests"),
        "raw_response_header_bytes": trace.raw_header_bytes("responses"),
        "timed": trace.timed,
        "duration_s": round(max(starts) - min(starts), 6) if starts else None,
        "content_hash": trace.content_hash(),
        "warnings": warnings(trace),
        "page_details": page_details(trace),
    }


def warnings(trace: Trace) -> list[str]:
    """What the trace lacks that the workbench had to infer, once per file (HAR)."""
    if trace.format != "har":
        return []
    ex = [e for e in trace if e.url is not None]
    out = []
    if ex and not any(e.initiator or e.initiator_type for e in ex):
        out.append(
            "no initiators (_initiator): each resource is taken as found by its page's document, "
            "fonts by the first stylesheet"
        )
    if ex and not any(e.priority for e in ex):
        out.append(
            "no priorities (_priority): render-blocking stylesheets and scripts are those the document "
            "asked for before its first image"
        )
    if ex and not any(e.resource_type_from == "_resourceType" for e in ex):
        out.append("no resource types (_resourceType): taken from MIME types, URLs and initiators")
    if trace.meta.get("unknown_body_sizes"):
        out.append(f"{trace.meta['unknown_body_sizes']} responses have no known body size (taken as 0 bytes)")
    if trace.meta.get("not_on_network"):
        out.append(
            f"{trace.meta['not_on_network']} data:/blob: (or similar) entries left out: they never crossed the network"
        )
    if trace.meta.get("served_from_cache"):
        out.append(f"{trace.meta['served_from_cache']} entries served from the browser's cache left out")
    if not trace.pages:
        out.append("no pages (log.pages): the entries are taken as one page")
    elif any(e.page is None for e in ex):
        out.append(f"{sum(e.page is None for e in ex)} entries have no pageref and belong to no page")
    missing = [p.id for p in trace.pages if p.on_load_s is None]
    if missing:
        out.append(f"no onLoad for page(s) {', '.join(missing)}: nothing measured to compare a simulation with")
    return out


def page_details(trace: Trace) -> list[dict]:
    """Per page of a HAR: what the page graph inferred, and from which field."""
    from ..errors import InputError as _Bad
    from .pagegraph import page_graph, page_ids

    if trace.format != "har":
        return []
    pages = {p.id: p for p in trace.pages}
    out = []
    for page in page_ids(trace):
        try:
            g = page_graph(trace, page)
        except _Bad as exc:
            out.append({"page": page, "error": exc.detail})
            continue
        types: dict[str, dict[str, int]] = {}
        for r in g.resources:
            by = types.setdefault(r.resource_type, {})
            source = r.resource_type_from or "-"
            if r.index <= g.document and r.resource_type_from != "_resourceType":
                source = "navigation"
            by[source] = by.get(source, 0) + 1
        versions: dict[str, int] = {}
        for r in g.resources:
            versions[r.http_version or "unknown"] = versions.get(r.http_version or "unknown", 0) + 1
        p = pages.get(page)
        out.append(
            {
                "page": page,
                "title": p.title if p else None,
                "on_load_s": p.on_load_s if p else None,
                "repeat_view": p.repeat_view if p else None,
                "navigation": [g[i].url for i in range(g.document + 1)],
                "resources": len(g),
                "origins": len(g.origins),
                "edges_from": g.edges_from,
                "wire_bytes": sum(r.body_bytes for r in g.resources),
                "decoded_bytes": sum(r.decoded_bytes for r in g.resources),
                "http_versions": versions,
                "types": {t: types[t] for t in sorted(types, key=lambda t: -sum(types[t].values()))},
                "render_blocking": [
                    {"url": g[i].url, "type": g[i].resource_type, "reason": g[i].render_blocking_reason}
                    for i in g.render_blocking
                ],
                "not_render_blocking": _tally(
                    r.render_blocking_reason
                    for r in g.resources
                    if not r.render_blocking and r.resource_type in ("stylesheet", "script")
                ),
            }
        )
    return out


def _tally(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def _print_pages(info: dict) -> None:
    for w in info["warnings"]:
        print(f"warning: {w}")
    for p in info["page_details"]:
        print()
        if "error" in p:
            print(f"page {p['page']}: {p['error']}")
            continue
        onload = f", onLoad {p['on_load_s']:.3f} s" if p["on_load_s"] else ""
        view = ", repeat view" if p["repeat_view"] else ""
        print(
            f"page {p['page']}{onload}{view}: {p['resources']} resources, {p['origins']} origins, "
            f"edges from {p['edges_from']}"
        )
        if len(p["navigation"]) > 1:
            print("  navigation      " + " -> ".join(p["navigation"]))
        else:
            print(f"  navigation      {p['navigation'][0]}")
        print(f"  body bytes      {p['wire_bytes']:,} on the wire, {p['decoded_bytes']:,} decoded")
        print("  protocols       " + ", ".join(f"{v} {n}" for v, n in p["http_versions"].items()))
        for t, by in p["types"].items():
            sources = ", ".join(f"{src} {n}" for src, n in by.items())
            print(f"  {t:<15} {sum(by.values()):>4} (from {sources})")
        print(f"  render-blocking {len(p['render_blocking'])}:")
        for r in p["render_blocking"][:12]:
            print(f"    {r['type']:<10} {r['url'][:90]}  [{r['reason']}]")
        if len(p["render_blocking"]) > 12:
            print(f"    ... and {len(p['render_blocking']) - 12} more")
        if p["not_render_blocking"]:
            print("  not blocking    " + "; ".join(f"{n} {why}" for why, n in p["not_render_blocking"].items()))


def _load(args) -> Trace:
    return load(
        args.path if hasattr(args, "path") else args.input,
        max_table_capacity=args.capacity,
        blocked_streams=args.blocked,
    )


def cmd_info(args) -> int:
    """``workbench trace info``: a trace's format, exchanges, header lists, origins, pages and header bytes."""
    info = summary(_load(args))
    if args.json:
        print(json.dumps(info))
        return 0
    origins = ", ".join(info["origins"][:8]) + (", ..." if len(info["origins"]) > 8 else "")
    timed = f"yes, over {info['duration_s']:.3f} s" if info["timed"] else "no"
    rows = [
        ("file", info["path"]),
        ("format", info["format"]),
        ("exchanges", f"{info['exchanges']:,}"),
        (
            "header lists",
            f"{info['header_lists']:,} ({info['request_lists']:,} requests, {info['response_lists']:,} responses)",
        ),
        ("origins", f"{info['origin_count']}" + (f": {origins}" if origins else "")),
        ("pages", f"{info['pages']}"),
        (
            "raw header bytes",
            f"{info['raw_header_bytes']:,} (requests {info['raw_request_header_bytes']:,}, "
            f"responses {info['raw_response_header_bytes']:,})",
        ),
        ("timed", timed),
    ]
    for key, value in rows:
        print(f"{key:<17} {value}")
    _print_pages(info)
    return 0


def _output_format(path: str, given: str | None) -> str:
    if given:
        return given
    return "har" if str(path).lower().endswith(".har") else "qif"


def cmd_convert(args) -> int:
    """``workbench trace convert``: write a trace as HAR, or its header lists as QIF."""
    from .har import write_har
    from .qif import write_qif

    trace = _load(args)
    fmt = _output_format(args.output, args.to)
    if fmt == "har":
        if args.direction != "both":
            raise InputError("--direction applies to QIF output only; a HAR keeps both directions.")
        write_har(trace, args.output)
        print(f"wrote {len(trace):,} exchanges to {args.output}")
    else:
        write_qif(trace, args.output, direction=args.direction)
        print(f"wrote {len(trace.header_lists(args.direction)):,} header lists to {args.output}")
    return 0


def cmd_synth(args) -> int:
    """``workbench trace synth``: write a seeded synthetic browsing session as HAR or QIF."""
    from .har import write_har
    from .qif import write_qif
    from .synth import generate

    params = {}
    if args.requests is not None:
        params["requests"] = args.requests
    if args.origins is not None:
        params["origins"] = args.origins
    if args.third_party_share is not None:
        params["third_party_share"] = float(args.third_party_share)
    if args.third_party_zipf is not None:
        params["third_party_zipf_s"] = args.third_party_zipf
    trace = generate(pages=args.pages, seed=args.seed, **params)
    fmt = args.format or ("qif" if str(args.output).lower().endswith(".qif") else "har")
    if fmt == "har":
        write_har(trace, args.output)
    else:
        write_qif(trace, args.output, direction=args.direction)
    print(
        f"wrote {len(trace):,} exchanges on {len(trace.pages)} page(s), {len(trace.origins())} origins "
        f"(seed {args.seed}) to {args.output}"
    )
    return 0


def _interop_options(p) -> None:
    p.add_argument(
        "--capacity",
        type=argtypes.count(0, 1 << 30),
        default=None,
        help="QPACK table capacity for interop files (default: from the file name)",
    )
    p.add_argument(
        "--blocked",
        type=argtypes.count(0, 65_535),
        default=None,
        help="QPACK blocked-streams limit for interop files (default: from the file name)",
    )


def add_commands(subparsers) -> None:
    """Register ``workbench trace`` (info, convert, synth) on ``subparsers``."""
    trace = subparsers.add_parser("trace", help="inspect, convert and synthesize traces")
    sub = trace.add_subparsers(dest="trace_command", metavar="SUBCOMMAND", parser_class=type(trace))
    trace.set_defaults(func=lambda args: (trace.print_help(), 2)[1])

    p = sub.add_parser("info", help="summarize a trace (HAR, QIF or QPACK interop)")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _interop_options(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("convert", help="convert a trace to QIF or HAR")
    p.add_argument("input", metavar="IN")
    p.add_argument("output", metavar="OUT", type=argtypes.output_file)
    p.add_argument(
        "--to", choices=("qif", "har"), default=None, help="output format (default: har for a .har name, else qif)"
    )
    p.add_argument(
        "--direction", choices=DIRECTIONS, default="both", help="header lists to write to QIF (default both)"
    )
    _interop_options(p)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("synth", help="write a seeded synthetic browsing session")
    p.add_argument("output", metavar="OUT", type=argtypes.output_file)
    p.add_argument("--pages", type=argtypes.count(1, 10_000), default=1, help="page loads (default 1, at most 10,000)")
    p.add_argument("--seed", type=argtypes.count(0), default=0, help="random seed (default 0)")
    p.add_argument(
        "--format", choices=("har", "qif"), default=None, help="output format (default: qif for a .qif name, else har)"
    )
    p.add_argument(
        "--requests",
        type=argtypes.count(SYNTH_MIN_REQUESTS, SYNTH_MAX_REQUESTS),
        default=None,
        help=f"requests per page, {SYNTH_MIN_REQUESTS} to {SYNTH_MAX_REQUESTS:,} (default: drawn around the "
        "HTTP Archive median)",
    )
    p.add_argument(
        "--origins",
        type=argtypes.count(0, 10_000),
        default=None,
        help="third-party origins to draw from (default: drawn from Web Almanac figures); "
        "requests pick them by Zipf weight, so a page may not use them all",
    )
    p.add_argument(
        "--third-party-share",
        type=argtypes.probability,
        default=None,
        metavar="P",
        help="share of sub-resource requests that go to third parties (default 0.4)",
    )
    p.add_argument(
        "--third-party-zipf",
        type=argtypes.real(0, 10),
        default=None,
        metavar="S",
        help="Zipf exponent spreading requests over third parties (default 1.0; lower = more of them used)",
    )
    p.add_argument("--direction", choices=DIRECTIONS, default="both", help="header lists for QIF output")
    p.set_defaults(func=cmd_synth)
