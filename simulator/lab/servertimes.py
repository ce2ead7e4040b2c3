"""``workbench lab server-times``: the server times read from the lab's HARs, against the known ones.

Every prediction from a HAR carries its server times: ``infer_conditions`` reads each
response's as its ``wait`` less its origin's RTT (``studies.fidelity.conditions``).  A real
HAR cannot say how right that is; the lab can: its servers sleep a set time before each
response (the rebuilt site's, ``site.served_server_times``), so each load of a results folder
(``lab run`` or ``lab validate``) is read again here and every response's inferred server time
is held against the set one (the site as ``rebuild`` makes it now, from the page's HAR: a folder
whose loads an older inference rebuilt is held against today's).  Per condition (link and
protocol) and page: how many responses, and the median, mean and 90th percentile of inferred
less set (ms).

What the difference holds: the server's own work beyond its sleep (hypercorn and TLS in
Python, on the two cores the browser and the relay share), the response's first bytes queued
behind other bytes on its connection and on the link, and the browser's clock.  Whatever part
of it the model then adds again on another network (its own queueing) is counted twice there.
Written by hand.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

__all__ = ["ServerTimesResult", "server_time_errors_ms", "check"]


def server_time_errors_ms(har: dict, source: str, served: dict[str, float]) -> dict[str, float]:
    """URL -> inferred less set server time (ms), of every response of ``har``'s page (one lab load)
    whose URL the rebuilt site serves (``served``: URL -> seconds), the resources before its
    onLoad as the model reads them (``study.load_event_graph``; every one without an onLoad),
    a URL once."""
    from ..studies.fidelity.conditions import infer_conditions
    from ..studies.fidelity.study import load_event_graph
    from ..traces.har import parse_har
    from ..traces.pagegraph import page_graph

    trace = parse_har(har, path=source)
    page = trace.pages[0]
    graph = page_graph(trace, page.id)
    if page.on_load_s is not None:
        graph = load_event_graph(graph, page.on_load_s, page.start_s)
    think = infer_conditions(graph, page.start_s).think_s
    out: dict[str, float] = {}
    for r in graph.resources:
        if r.index in think and r.url in served and r.url not in out:
            out[r.url] = 1000.0 * (think[r.index] - served[r.url])
    return out


def _figures(errors: list[float]) -> dict:
    ordered = sorted(errors)
    return {
        "responses": len(ordered),
        "median_ms": round(statistics.median(ordered), 1) if ordered else None,
        "mean_ms": round(statistics.fmean(ordered), 1) if ordered else None,
        "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 1) if ordered else None,
    }


@dataclass
class ServerTimesResult:
    """Per condition: its link flags and protocol, its figures over every page, and each page's."""

    conditions: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # pages whose trace is gone: no set times to hold

    def to_json(self) -> str:
        """One JSON object: ``conditions`` and ``skipped``."""
        return json.dumps({"conditions": self.conditions, "skipped": self.skipped}, indent=2, sort_keys=True)


def check(out: str) -> ServerTimesResult:
    """Every load of the results folder ``out`` read again (see the module docstring)."""
    from ..batch.store import load
    from .site import served_server_times
    from .validate import _condition, _key

    summary, hars = load(out, "summary"), load(out, "har")
    if summary.empty:
        raise InputError("holds no load.", path=str(out))
    keys = {row["job_id"]: _key(row) for row in summary.to_dict(orient="records")}
    served: dict[str, dict | None] = {}
    skipped: dict[str, str] = {}
    by_condition: dict[tuple, dict[str, list[float]]] = {}
    for row in hars.sort_values(["trace", "job_id"]).to_dict(orient="records"):
        trace = row["trace"]
        if trace not in served:
            try:
                served[trace] = served_server_times(trace)
            except (InputError, OSError) as exc:
                served[trace] = None
                skipped[trace] = getattr(exc, "detail", None) or str(exc)
        if served[trace] is None or row["job_id"] not in keys:
            continue
        errors = server_time_errors_ms(json.loads(row["har_json"]), trace, served[trace])
        by_condition.setdefault(keys[row["job_id"]], {}).setdefault(trace, []).extend(errors.values())
    conditions = []
    for key in sorted(by_condition, key=lambda k: (k[4], k[0], -(k[1] or 0.0), k[2], k[3] or 0)):
        pages = by_condition[key]
        conditions.append(
            {
                "condition": _condition(key),
                **_figures([e for errors in pages.values() for e in errors]),
                "pages": [{"trace": t, **_figures(pages[t])} for t in sorted(pages)],
            }
        )
    return ServerTimesResult(conditions, [{"trace": t, "reason": r} for t, r in sorted(skipped.items())])


def _main(args) -> int:
    result = check(str(args.results))
    if args.json:
        print(result.to_json())
        return 0
    print("server time read from each HAR less the time the lab's server waited (ms):")
    print(f"{'condition':<34} {'protocol':>8} {'responses':>9} {'median':>8} {'mean':>8} {'p90':>8}")
    for c in result.conditions:
        cond = c["condition"]
        print(
            f"{cond['conditions']:<34} {cond['protocol']:>8} {c['responses']:>9} "
            f"{c['median_ms']:>8} {c['mean_ms']:>8} {c['p90_ms']:>8}"
        )
    for s in result.skipped:
        print(f"skipped {Path(s['trace']).name}: {s['reason']}")
    return 0


def add_command(lab_sub, results_folder) -> None:
    """``lab server-times RESULTS_DIR [--json]`` on the ``lab`` subcommands."""
    st = lab_sub.add_parser(
        "server-times", help="server times read from the lab's HARs against the times its servers waited"
    )
    st.add_argument("results", metavar="RESULTS_DIR", type=results_folder, help="a lab run or validate results folder")
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.set_defaults(func=_main)
