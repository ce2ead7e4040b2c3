"""``workbench batch STUDY --traces ... --grid GRID.toml --out DIR`` and
``workbench batch status DIR``."""

from __future__ import annotations

import argparse
import sys

from .. import argtypes
from ..errors import InputError
from .registry import STUDIES

DASK_TIMEOUT_S = 120.0  # the runner's default (simulator.batch.runner.DASK_TIMEOUT_S)


def _seconds(text: str) -> float:
    """A positive time: seconds ('30'), or with a unit ('90s', '2min')."""
    from ..units import parse_duration

    try:
        value = parse_duration(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


_seconds.__name__ = "seconds"


def _cmd(args: argparse.Namespace) -> int:
    if args.study == "status":
        return _status(args)
    if args.results_dir is not None:
        raise InputError(f"unexpected argument {args.results_dir!r} (the results folder is given with --out).")
    from .registry import get_study

    needs_trace = get_study(args.study).needs_trace
    missing = [
        flag for flag, value in (("--traces", args.traces if needs_trace else True), ("--out", args.out)) if not value
    ]
    if missing:
        raise InputError(f"workbench batch {args.study} needs {' and '.join(missing)}.")
    from .runner import run_batch

    def bad_trace(path: str, error: str) -> None:
        print(f"workbench: warning: skipping trace: {error}", file=sys.stderr)

    tables = [t.strip() for t in args.tables.split(",") if t.strip()]
    # the progress bar is for a person watching: only on a terminal
    progress = not args.quiet and sys.stderr.isatty()
    report = run_batch(
        args.study,
        args.traces,
        args.grid,
        args.seeds,
        out=args.out,
        workers=args.workers,
        dask=args.dask,
        dask_timeout=args.dask_timeout,
        tables=tables,
        progress=progress,
        on_bad_trace=bad_trace,
    )
    print(report)
    for jid, error in report.failures[:10]:
        print(f"  failed {jid}: {error}", file=sys.stderr)
    if len(report.failures) > 10:
        print(f"  ... and {len(report.failures) - 10} more (see {args.out}/failed/)", file=sys.stderr)
    if report.bad_traces or (report.failed and report.refused == report.failed):
        return 2  # traces that could not be read or jobs whose input was refused: bad input
    return 1 if report.failed else 0


def _status(args: argparse.Namespace) -> int:
    from .store import failures, status

    if args.results_dir is None:
        raise InputError("workbench batch status needs a results folder: workbench batch status RESULTS_DIR.")
    s = status(args.results_dir)
    print(
        f"{args.results_dir}: study {s['study']}, {s['jobs']} jobs: {s['done']} done, {s['failed']} failed, "
        f"{s['missing']} missing"
    )
    _print_traces(s["traces"])
    if s["failed"]:
        f = failures(args.results_dir)
        f = f[f["job_id"].isin(s["failed_ids"])]
        for _, row in f.head(10).iterrows():
            print(f"  failed {row['job_id']}: {row['trace']} {row['flags']} seed {row['seed']}: {row['error']}")
    return 0 if s["failed"] == 0 and s["missing"] == 0 else 1


_TRACE_LINES = 20  # per-trace lines shown; beyond, the unfinished traces first, the rest counted


def _print_traces(traces: list[dict]) -> None:
    """Per-trace progress: every trace when there are few, else the unfinished ones first
    (up to ``_TRACE_LINES``) and a count of the rest."""
    if not traces or (len(traces) == 1 and not traces[0]["trace"]):
        return  # a study without traces: the totals say it all
    shown = traces
    if len(traces) > _TRACE_LINES:
        shown = [t for t in traces if t["done"] < t["jobs"]][:_TRACE_LINES]
    width = min(60, max([len("trace")] + [len(t["trace"]) for t in shown]))
    if shown:
        print(f"  {'trace':<{width}} {'jobs':>6} {'done':>6} {'failed':>6} {'missing':>7}  progress")
    for t in shown:
        name = t["trace"] if len(t["trace"]) <= width else "..." + t["trace"][-(width - 3) :]
        frac = t["done"] / t["jobs"] if t["jobs"] else 1.0
        bar = "#" * round(frac * 10) + "." * (10 - round(frac * 10))
        print(f"  {name:<{width}} {t['jobs']:>6} {t['done']:>6} {t['failed']:>6} {t['missing']:>7}  {bar} {frac:4.0%}")
    rest = len(traces) - len(shown)
    if not shown:
        print(f"  all {len(traces)} traces done")
    elif rest:
        unfinished = sum(1 for t in traces if t["done"] < t["jobs"]) - len(shown)
        print(
            f"  ... and {rest} more trace(s)"
            + (f", {unfinished} of them unfinished" if unfinished else ", all done")
            + " (simulator.batch.status(DIR)['traces'] lists every one)"
        )


def add_commands(sub) -> None:
    """Register ``workbench batch`` (run a study over traces x grid x seeds, or ``status``) on ``sub``."""
    p = sub.add_parser(
        "batch",
        help="run a study over traces x parameter grid x seeds; 'batch status DIR' reports progress",
        description="Run STUDY over every trace x grid point x seed into a Parquet results folder "
        "(rerun the same command to complete missing jobs), or report on one with "
        "'workbench batch status RESULTS_DIR'.  Studies: " + ", ".join(sorted(STUDIES)) + ".",
    )
    p.add_argument("study", metavar="STUDY", help="study name (" + ", ".join(sorted(STUDIES)) + ") or 'status'")
    p.add_argument("results_dir", nargs="?", metavar="RESULTS_DIR", help="with 'status': the results folder")
    p.add_argument(
        "--traces",
        action="append",
        metavar="GLOB_OR_DIR",
        help="trace files: a folder, a glob (quote it) or a file; repeatable",
    )
    p.add_argument(
        "--grid",
        metavar="GRID.toml",
        help="parameter grid: the study's flag names -> lists of values (default: one point, defaults)",
    )
    p.add_argument(
        "--seeds",
        type=argtypes.count(1, 10_000),
        default=1,
        metavar="N",
        help="run seeds 1..N (default 1, at most 10,000)",
    )
    p.add_argument(
        "--workers",
        type=argtypes.count(0, 1024),
        default=None,
        metavar="N",
        help="worker processes (default: CPU count; 0 = in this process); Dask local: workers",
    )
    p.add_argument(
        "--dask",
        metavar="local|ADDRESS",
        help="run on Dask: a LocalCluster, or a scheduler address (tcp://HOST:PORT); the workers "
        "need only the installed package (the traces are sent to them)",
    )
    p.add_argument(
        "--dask-timeout",
        type=_seconds,
        default=DASK_TIMEOUT_S,
        metavar="SECONDS",
        help="with --dask: give up (exit 2) after this long with no job finished and none running "
        f"on a worker, e.g. a scheduler with no workers (default {DASK_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--tables",
        default="summary",
        help="tables to store: summary plus the study's optional ones (hol: blocks, replay: exchanges); "
        "default summary",
    )
    p.add_argument(
        "--out",
        metavar="RESULTS_DIR",
        type=argtypes.output_folder,
        help="results folder (created; reruns skip finished jobs)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is one only on a terminal)")
    p.set_defaults(func=_cmd)
