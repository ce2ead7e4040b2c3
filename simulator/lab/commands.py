"""``workbench lab``: the lab's commands.

    workbench lab shell [--rtt 100ms] [--bw 10mbit] [--loss 0.01] [--queue 64KiB] [--seed 1]
                        [--up-trace FILE] [--down-trace FILE] [--link relay|netem]
                        [--server 'CMD'] [--stats FILE] -- CMD [ARG ...]
    workbench lab run TRACE_OR_DIR... --grid FILE [--runs 3] --out DIR [--workers 1] [--dask ADDR]
    workbench lab validate TRACE_OR_DIR... --grid FILE [--reference rtt=20ms,bw=50mbit]
                           [--reference-protocol h2] [--runs 3] --out DIR [--json]
    workbench lab validate-hints TRACE_OR_DIR... [--rtt 20ms,100ms,300ms] [--bw 50mbit]
                           [--think 100ms,500ms] [--reference rtt=20ms,bw=50mbit] [--runs 3]
                           --out DIR [--report DIR] [--json]
    workbench lab validate-priorities TRACE_OR_DIR... [--scheduler rfc9218,fifo,rr,lifo]
                           [--rtt 100ms] [--bw 5mbit] [--protocol h2] [--reference rtt=20ms,bw=50mbit]
                           [--runs 3] --out DIR [--report DIR] [--json]
    workbench lab h3-check RESULTS_DIR_OR_VALIDATION_JSON [--reference rtt=20ms,bw=50mbit]
                           [--report DIR] [--json]
    workbench lab rescore RESULTS_DIR [--reference rtt=20ms,bw=50mbit] [--reference-protocol h2]
                          [--runs N] [--report DIR] [--json]
    workbench lab clean

``shell`` is Mahimahi's shells in one: it makes the two namespaces and the link, starts
the server command (``sh -c``) in the server namespace and waits until it listens, runs
CMD in the client namespace, then removes everything and exits with CMD's status.  Both
get the server's address in ``LAB_SERVER_ADDR`` (and the client's in ``LAB_CLIENT_ADDR``).
``run`` loads every page (each HAR's page rebuilt as a real site) at every grid point
(``rtt``, ``bw``, ``loss``, ``queue``, ``protocol``: the batch grid format) ``--runs`` times
into a results folder (the batch runner's ``lab-load``: resumable, ``workbench batch status``
reads it).  ``validate`` records each page at a reference condition, predicts every grid
point from that one HAR with the page-load model, measures them, and prints the model's
out-of-sample error per condition beside the lab's run-to-run floor (``validate.py``).
``validate-hints`` measures the push study's 103 Early Hints against none at every RTT,
bandwidth and document think time, and holds the model's predicted gain against the
measured one and its run-to-run floor (``hints.py``).  ``validate-priorities`` loads each page
with the lab's servers sending in each scheduler's order (``schedule.py``) and holds the model's
cost of each scheduler against ``rfc9218`` to the measured one (``priorities.py``).
``h3-check`` reads a validation (its results folder, re-predicted with the current model,
or a ``validation.json``) and holds the model's HTTP/3 minus HTTP/2 difference against the
measured one per page and condition: the sign and the size (``protocols.py``).
``rescore`` predicts a validation's stored loads again with the current model and prints the
same figures as ``validate`` (``--runs N``: only runs 1 to N), starting no lab and needing no
root: how a model change moves the validation.
``clean`` removes what a killed lab run left behind (every run also does so on start).
"""

from __future__ import annotations

import argparse
import json
import sys

from .. import argtypes
from ..errors import InputError
from ..units import parse_bandwidth, parse_duration, parse_size
from . import servertimes

__all__ = ["add_commands", "add_link_flags", "conditions_from_args"]


def add_link_flags(p: argparse.ArgumentParser) -> None:
    """The link's flags, spelt and checked as the models' network flags are."""
    p.add_argument("--rtt", default="100ms", type=argtypes.duration, help="round-trip time (half each way), e.g. 100ms")
    p.add_argument(
        "--bw",
        default="none",
        type=argtypes.bandwidth,
        help="bottleneck rate of each direction, e.g. 10mbit (none = unlimited)",
    )
    p.add_argument(
        "--loss",
        default="0",
        type=argtypes.loss,
        help="loss per packet in each direction: 0.01 (Bernoulli) or ge:P,R[,h,k] (Gilbert-Elliott)",
    )
    p.add_argument(
        "--queue",
        default=None,
        type=argtypes.positive_size,
        help="drop-tail queue of each direction in bytes, e.g. 64KiB (default: unlimited, as the models)",
    )
    p.add_argument("--seed", default=1, type=argtypes.seed, help="seed of the loss draws")
    p.add_argument(
        "--up-trace",
        default=None,
        metavar="FILE",
        help="client-to-server packet-delivery trace (Mahimahi format), instead of --bw",
    )
    p.add_argument(
        "--down-trace",
        default=None,
        metavar="FILE",
        help="server-to-client packet-delivery trace (Mahimahi format), instead of --bw",
    )
    p.add_argument(
        "--link",
        default="relay",
        choices=("relay", "netem"),
        help="relay: the lab's C relay between TUN devices; netem: veth + netem, where the kernel has it",
    )


def conditions_from_args(args: argparse.Namespace):
    """The ``LinkConditions`` of the flags ``add_link_flags`` added (checked once, there)."""
    from .link import LinkConditions

    return LinkConditions(
        rtt_s=parse_duration(args.rtt),
        bandwidth_bps=parse_bandwidth(args.bw),
        loss=args.loss,
        queue_bytes=None if args.queue is None else parse_size(args.queue),
        seed=args.seed,
        uplink_trace=args.up_trace,
        downlink_trace=args.down_trace,
    )


def _shell(args: argparse.Namespace) -> int:
    from .link import Lab

    command = list(args.cmd)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise InputError("give the client command after --, e.g. workbench lab shell --rtt 50ms -- curl ...")
    conditions = conditions_from_args(args)
    try:
        with Lab(conditions, link=args.link) as lab:
            if args.server:
                server = lab.start("server", ["sh", "-c", args.server])
                if not lab.wait_listening(server, parse_duration(args.server_wait)) and server.poll() is not None:
                    raise InputError(
                        f"the --server command exited with status {server.returncode} before the client started."
                    )
            status = lab.run_client(command)
    except KeyboardInterrupt:
        return 130
    if args.stats:
        from ..outfiles import write_output

        write_output(
            args.stats,
            (
                json.dumps({"conditions": conditions.describe(), "relay": lab.stats}, indent=1, sort_keys=True) + "\n"
            ).encode(),
        )
    return 128 - status if status < 0 else status


def _run(args: argparse.Namespace) -> int:
    from ..batch.runner import run_batch

    for grid in args.grid:
        report = run_batch(
            "lab-load",
            args.paths,
            grid,
            args.runs,
            out=args.out,
            workers=args.workers,
            dask=args.dask,
            tables=("summary", "har"),
            progress=sys.stderr.isatty(),
            on_bad_trace=lambda path, error: print(f"workbench: warning: skipping trace: {error}", file=sys.stderr),
        )
        print(report)
    for jid, error in report.failures[:10]:
        print(f"  failed {jid}: {error}", file=sys.stderr)
    return 0 if not report.failed else 1


def _validate(args: argparse.Namespace) -> int:
    from ..net.conditions import PathConditions
    from .validate import validate

    result = validate(
        args.paths,
        args.grid,
        reference=PathConditions.parse(args.reference),
        reference_protocol=args.reference_protocol,
        runs=args.runs,
        out=args.out,
        workers=args.workers,
        dask=args.dask,
        progress=sys.stderr.isatty() and not args.json,
    )
    for line in result.failures[:10]:  # pages the lab could not rebuild or load: which and why
        print(f"workbench: warning: {line}", file=sys.stderr)
    return _print_validation(result, args)


def _rescore(args: argparse.Namespace) -> int:
    from ..net.conditions import PathConditions
    from .validate import analyse

    ref = PathConditions.parse(args.reference)
    result = analyse(
        str(args.results),
        {
            "rtt_s": ref.rtt_s,
            "bandwidth_bps": ref.bandwidth_bps,
            "loss": ref.loss,
            "queue_bytes": ref.queue_bytes,
            "protocol": args.reference_protocol,
        },
        runs=args.runs,
    )
    return _print_validation(result, args)


def _print_validation(result, args: argparse.Namespace) -> int:
    if args.report:
        from .report import write_report

        write_report(result.to_dict(), args.report)
    if args.json:
        print(result.to_json())
        return 0
    print(f"{'condition':<34} {'protocol':>8} {'pages':>5} {'MAPE':>8} {'median APE':>10} {'rho':>6} {'floor':>8}")
    rows = [(c["condition"], c) for c in result.conditions]
    if result.reference:
        rows.insert(0, (result.reference["condition"], result.reference))
    pct = lambda v: "n/a" if v is None else f"{v:.1f}%"  # noqa: E731
    for cond, c in rows:
        label = cond["conditions"] + (" (reference)" if c is result.reference else "")
        print(
            f"{label:<34} {cond['protocol']:>8} {len(c['pages']):>5} {pct(c['mape_percent']):>8} "
            f"{pct(c['median_ape_percent']):>10} {c['spearman_rho'] if c['spearman_rho'] is not None else 'n/a':>6} "
            f"{pct(c['floor_mape_percent']):>8}"
        )
    s = result.summary
    print(
        f"\nout of sample, {s['conditions']} conditions, {s['pages']} page loads predicted: MAPE "
        f"{pct(s['mape_percent'])}, median APE {pct(s['median_ape_percent'])}, rho {s['spearman_rho']}; "
        f"the lab's run-to-run floor {pct(s['floor_mape_percent'])}"
    )
    return 0


def _reported(result: dict, args: argparse.Namespace, write_report) -> bool:
    """``--report DIR`` written, the first failures warned of, and with ``--json`` the result
    printed (True: nothing more to print)."""
    if args.report:
        write_report(result, args.report)
    for line in result["failures"][:10]:
        print(f"workbench: warning: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=1))
    return bool(args.json)


def _validate_hints(args: argparse.Namespace) -> int:
    from ..net.conditions import PathConditions
    from .hints import validate_hints, write_hints_report

    result = validate_hints(
        args.paths,
        rtts=args.rtt,
        bws=args.bw,
        thinks=args.think,
        reference=PathConditions.parse(args.reference),
        protocol=args.protocol,
        runs=args.runs,
        out=args.out,
        workers=args.workers,
        dask=args.dask,
        progress=sys.stderr.isatty() and not args.json,
    )
    if _reported(result, args, write_hints_report):
        return 0
    ms = lambda v: f"{1000 * v:.0f} ms"  # noqa: E731
    print(f"{'page':<30} {'RTT':>7} {'think':>7} {'measured gain':>14} {'predicted':>10} {'floor':>8}  verdict")
    for c in result["rows"]:
        verdict = "within 20%" if c["within_tolerance"] else "within the floor" if c["within_floor"] else "off"
        print(
            f"{c['trace'].rsplit('/', 1)[-1][:30]:<30} {ms(c['rtt_s']):>7} {ms(c['document_think_s']):>7} "
            f"{ms(c['gain_s']):>14} {ms(c['predicted_gain_s']):>10} {ms(c['floor_s']):>8}  {verdict}"
        )
    s = result["summary"]
    print(
        f"\n{s['ok']} of {s['rows']} within 20% or within the floor; the gain's sign agrees in "
        f"{s['sign_agreement']} of {s['rows']}"
    )
    return 0


def _validate_priorities(args: argparse.Namespace) -> int:
    from ..net.conditions import PathConditions
    from .priorities import validate_priorities, write_priorities_report

    result = validate_priorities(
        args.paths,
        schedulers=args.scheduler,
        rtts=args.rtt,
        bws=args.bw,
        reference=PathConditions.parse(args.reference),
        protocol=args.protocol,
        runs=args.runs,
        out=args.out,
        workers=args.workers,
        dask=args.dask,
        progress=sys.stderr.isatty() and not args.json,
    )
    if _reported(result, args, write_priorities_report):
        return 0
    ms = lambda v: "-" if v is None else f"{1000 * v:.0f}"  # noqa: E731
    print(
        f"{'page':<26} {'condition':<22} {'scheduler':<10} {'onLoad lab/model':>17} {'LCP lab/model':>15}"
        "  cost lab±floor/model"
    )
    for e in result["rows"]:
        cost = (
            ""
            if "measured_onload_cost_s" not in e
            else (f"{ms(e['measured_onload_cost_s'])}±{ms(e['onload_floor_s'])}/{ms(e['predicted_onload_cost_s'])} ms")
        )
        print(
            f"{e['trace'].rsplit('/', 1)[-1][:26]:<26} {e['condition'][:22]:<22} {e['scheduler']:<10} "
            f"{ms(e['measured_onload_s']) + '/' + ms(e['predicted_onload_s']):>17} "
            f"{ms(e['measured_lcp_s']) + '/' + ms(e['predicted_lcp_s']):>15}  {cost}"
        )
    s = result["summary"]
    print(
        f"\nagainst rfc9218: the onLoad cost's sign agrees in {s['onload_sign_agreement']} of "
        f"{s['onload_compared']}, FCP's in {s['fcp_sign_agreement']} of {s['fcp_compared']}; median Kendall's "
        f"tau-b of the schedulers' order: onLoad {s['median_onload_tau_b']}, FCP {s['median_fcp_tau_b']}"
    )
    return 0


def _h3_check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..net.conditions import PathConditions
    from .protocols import h3_against_h2, h3_table, write_h3_report

    source = Path(args.source)
    if source.is_file():
        try:
            validation = json.loads(source.read_text())
            validation["conditions"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"is not a validation's JSON ({type(exc).__name__}).", path=str(source)) from None
    else:
        from .validate import analyse

        ref = PathConditions.parse(args.reference)
        validation = analyse(
            str(source),
            {
                "rtt_s": ref.rtt_s,
                "bandwidth_bps": ref.bandwidth_bps,
                "loss": ref.loss,
                "queue_bytes": ref.queue_bytes,
                "protocol": "h2",
            },
        ).to_dict()
    result = h3_against_h2(validation)
    if args.report:
        write_h3_report(result, args.report)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(h3_table(result), end="")
    return 0


def _results_folder(text: str) -> str:
    """A folder that exists (read only: ``rescore`` writes nothing into it)."""
    import os

    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    return text


def _list_of(check):
    def parse(text: str) -> list[str]:
        values = [v.strip() for v in str(text).split(",") if v.strip()]
        if not values:
            raise argparse.ArgumentTypeError("give at least one value")
        return [check(v) for v in values]

    return parse


def _add_batch_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="TRACE_OR_DIR", help="HAR files, or folders of them")
    p.add_argument(
        "--grid",
        required=True,
        action="append",
        help="grid file (TOML): rtt, bw, loss, queue, protocol lists; repeat it for several grids",
    )
    p.add_argument("--runs", default=3, type=argtypes.count(1, 100), help="loads of every page at every grid point")
    p.add_argument("--out", required=True, type=argtypes.output_folder, help="results folder (resumable)")
    p.add_argument(
        "--workers",
        default=1,
        type=argtypes.count(0),
        help="loads at once on this machine (1: a browser's timing is not disturbed by another's)",
    )
    p.add_argument("--dask", default=None, metavar="ADDRESS", help="spread loads over a Dask cluster's workers")


def _clean(args: argparse.Namespace) -> int:
    from . import netns

    netns.check_can_run()
    gone = netns.sweep_stale()
    print(f"removed {len(gone)} namespace(s) left by lab runs that are gone" + (f": {', '.join(gone)}" if gone else ""))
    return 0


def _scheduler_name(text: str) -> str:
    from ..http.priority import scheduler_names

    if text not in scheduler_names():
        raise argparse.ArgumentTypeError(f"unknown scheduler {text!r} (choose from {', '.join(scheduler_names())})")
    return text


def _conditions(text: str):
    from ..net.conditions import PathConditions

    return PathConditions.parse(text)


def add_commands(sub) -> None:
    """Register ``workbench lab shell`` and ``workbench lab clean``."""
    p = sub.add_parser(
        "lab",
        help="real browser and servers over an emulated link (needs root)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lab_sub = p.add_subparsers(dest="lab_command", metavar="LAB_COMMAND", parser_class=type(p))
    sh = lab_sub.add_parser("shell", help="run a server and a client command over the emulated link")
    add_link_flags(sh)
    sh.add_argument(
        "--server", default=None, metavar="CMD", help="server command, run with sh -c in the server namespace"
    )
    sh.add_argument(
        "--server-wait",
        default="5s",
        type=argtypes.positive_duration,
        help="how long to wait for the server to listen before the client starts",
    )
    sh.add_argument(
        "--stats",
        default=None,
        type=argtypes.output_file,
        metavar="FILE",
        help="write the link's conditions and the relay's counters (JSON) here after the run",
    )
    sh.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the client command")
    sh.set_defaults(func=_shell)
    rn = lab_sub.add_parser("run", help="real loads of HAR pages over a grid of link conditions (batch store)")
    _add_batch_flags(rn)
    rn.set_defaults(func=_run)
    va = lab_sub.add_parser("validate", help="the model's predictions at other conditions against real loads")
    _add_batch_flags(va)
    va.add_argument(
        "--reference",
        default="rtt=20ms,bw=50mbit",
        type=argtypes.checked(_conditions, "conditions"),
        help="the condition each page is recorded at and predicted from",
    )
    va.add_argument("--reference-protocol", default="h2", choices=("h2", "h3"))
    va.add_argument(
        "--report",
        default=None,
        type=argtypes.output_folder,
        metavar="DIR",
        help="also write validation.md (the table), validation.json and validation.png (the figure) into DIR",
    )
    va.add_argument("--json", action="store_true", help="print one JSON object")
    va.set_defaults(func=_validate)
    rs = lab_sub.add_parser("rescore", help="a validation's loads predicted again with the current model (no lab)")
    rs.add_argument("results", metavar="RESULTS_DIR", type=_results_folder, help="a lab validate results folder")
    rs.add_argument(
        "--reference",
        default="rtt=20ms,bw=50mbit",
        type=argtypes.checked(_conditions, "conditions"),
        help="the validation's reference condition",
    )
    rs.add_argument("--reference-protocol", default="h2", choices=("h2", "h3"))
    rs.add_argument(
        "--runs",
        default=None,
        type=argtypes.count(2, 100),
        help="only the loads of runs 1 to N (default: every run in the folder)",
    )
    rs.add_argument(
        "--report",
        default=None,
        type=argtypes.output_folder,
        metavar="DIR",
        help="also write validation.md, validation.json and validation.png into DIR",
    )
    rs.add_argument("--json", action="store_true", help="print one JSON object")
    rs.set_defaults(func=_rescore)
    vh = lab_sub.add_parser("validate-hints", help="103 Early Hints against none: the model's gain against the lab's")
    vh.add_argument("paths", nargs="+", metavar="TRACE_OR_DIR", help="HAR files, or folders of them")
    vh.add_argument(
        "--rtt",
        default=["20ms", "100ms", "300ms"],
        type=_list_of(argtypes.positive_duration),
        help="RTTs to measure, comma-separated (default 20ms,100ms,300ms)",
    )
    vh.add_argument(
        "--bw",
        default=["50mbit"],
        type=_list_of(argtypes.bandwidth),
        help="bandwidths, comma-separated (default 50mbit)",
    )
    vh.add_argument(
        "--think",
        default=["100ms", "500ms"],
        type=_list_of(argtypes.duration),
        help="the document's server time, comma-separated (default 100ms,500ms)",
    )
    vh.add_argument("--protocol", default="h2", choices=("h2", "h3"))
    vh.add_argument(
        "--reference",
        default="rtt=20ms,bw=50mbit",
        type=argtypes.checked(_conditions, "conditions"),
        help="the condition each page is recorded at (without hints) and predicted from",
    )
    vh.add_argument("--runs", default=3, type=argtypes.count(1, 100), help="loads of every page at every point")
    vh.add_argument("--out", required=True, type=argtypes.output_folder, help="results folder (resumable)")
    vh.add_argument("--workers", default=1, type=argtypes.count(0), help="loads at once on this machine")
    vh.add_argument("--dask", default=None, metavar="ADDRESS", help="spread loads over a Dask cluster's workers")
    vh.add_argument(
        "--report",
        default=None,
        type=argtypes.output_folder,
        metavar="DIR",
        help="also write hints.md (the table), hints.json and hints.png (the figure) into DIR",
    )
    vh.add_argument("--json", action="store_true", help="print one JSON object")
    vh.set_defaults(func=_validate_hints)
    vp = lab_sub.add_parser(
        "validate-priorities", help="schedulers behind real Chromium: each one's cost, model against lab"
    )
    vp.add_argument("paths", nargs="+", metavar="TRACE_OR_DIR", help="HAR files, or folders of them")
    vp.add_argument(
        "--scheduler",
        default=["rfc9218", "fifo", "rr", "lifo"],
        type=_list_of(_scheduler_name),
        help="the lab servers' schedulers, comma-separated, rfc9218 among them (default rfc9218,fifo,rr,lifo)",
    )
    vp.add_argument("--rtt", default=["100ms"], type=_list_of(argtypes.positive_duration), help="RTTs (default 100ms)")
    vp.add_argument("--bw", default=["5mbit"], type=_list_of(argtypes.bandwidth), help="bandwidths (default 5mbit)")
    vp.add_argument("--protocol", default="h2", choices=("h2", "h3"))
    vp.add_argument(
        "--reference",
        default="rtt=20ms,bw=50mbit",
        type=argtypes.checked(_conditions, "conditions"),
        help="the condition each page is recorded at (the servers' own order) and predicted from",
    )
    vp.add_argument("--runs", default=3, type=argtypes.count(1, 100), help="loads of every page at every point")
    vp.add_argument("--out", required=True, type=argtypes.output_folder, help="results folder (resumable)")
    vp.add_argument("--workers", default=1, type=argtypes.count(0), help="loads at once on this machine")
    vp.add_argument("--dask", default=None, metavar="ADDRESS", help="spread loads over a Dask cluster's workers")
    vp.add_argument(
        "--report",
        default=None,
        type=argtypes.output_folder,
        metavar="DIR",
        help="also write priorities.md (the table), priorities.json and priorities.png into DIR",
    )
    vp.add_argument("--json", action="store_true", help="print one JSON object")
    vp.set_defaults(func=_validate_priorities)
    h3 = lab_sub.add_parser("h3-check", help="HTTP/3 minus HTTP/2 onLoad: the model's sign and size against the lab's")
    h3.add_argument(
        "source",
        metavar="RESULTS_DIR_OR_VALIDATION_JSON",
        help="a lab validate results folder (re-predicted) or its validation.json",
    )
    h3.add_argument(
        "--reference",
        default="rtt=20ms,bw=50mbit",
        type=argtypes.checked(_conditions, "conditions"),
        help="the validation's reference condition (HTTP/2), for a results folder",
    )
    h3.add_argument(
        "--report",
        default=None,
        type=argtypes.output_folder,
        metavar="DIR",
        help="also write validation-h3.md and validation-h3.json into DIR",
    )
    h3.add_argument("--json", action="store_true", help="print one JSON object")
    h3.set_defaults(func=_h3_check)
    servertimes.add_command(lab_sub, _results_folder)
    cl = lab_sub.add_parser("clean", help="remove namespaces left by lab runs whose process is gone")
    cl.set_defaults(func=_clean)
