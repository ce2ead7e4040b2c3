"""``workbench lab validate``: the page-load model's "what if" held against real loads.

For every page: record it in the lab at a reference condition (``--reference``, ``--runs``
times; the run with the median onLoad is the reference HAR), predict every grid point from
that one HAR with the page-load model (``workbench fidelity --at``: the network is the grid
point's, server times and browser delays are the reference HAR's), measure every grid point
in the lab ``--runs`` times, and compare.  The prediction never sees a load of the
condition it predicts: the error is out of sample.  Under random loss the prediction is the
model's median over ``LOSSY_SEEDS`` seeds, as the measurement is the median of the runs.

Beside each error stands the lab's own floor: the same metric between repeated real loads of
the same page and condition (each run against the median of the others), which no model of
one load can beat.  Per condition and overall: MAPE and median APE of the predicted onLoad
against the runs' median, Spearman's rho over pages, and the floor's MAPE.

The loads run on the batch runner (``lab-load``) into a results folder, so an interrupted
validation resumes where it stopped and ``workbench batch status`` reads it.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field

import pandas as pd

from ..errors import InputError
from ..net.conditions import PathConditions

__all__ = ["validate", "analyse", "ValidationResult", "floor_ape", "spearman", "waterfall"]

LINK_KEYS = ("rtt_s", "bandwidth_bps", "loss", "queue_bytes", "protocol")
# The model's counts held against the kernel's segments resent (the lab's h2 loads): packets the
# link dropped, and the retransmission timeouts (and PTOs) fired, with those found spurious.
RESEND_KEYS = ("packets_lost", "rtos", "spurious_rtos", "ptos", "spurious_ptos")


def _key(row) -> tuple:
    q = row["queue_bytes"]
    bw = row["bandwidth_bps"]
    return (
        float(row["rtt_s"]),
        None if bw is None or bw != bw else float(bw),
        str(row["loss"]),
        None if q is None or q != q else int(q),
        str(row["protocol"]),
    )


def _condition(key: tuple) -> dict:
    rtt_s, bw, loss, queue, protocol = key
    return {
        "conditions": str(PathConditions(rtt_s=rtt_s, bandwidth_bps=bw, loss=loss, queue_bytes=queue)),
        "rtt_s": rtt_s,
        "bandwidth_bps": bw,
        "loss": loss,
        "queue_bytes": queue,
        "protocol": protocol,
    }


def floor_ape(runs: list[float]) -> list[float]:
    """Run-to-run error: each run's absolute percentage error against the median of the
    others (what a perfect model of "a load" would still be off by)."""
    out = []
    for i, r in enumerate(runs):
        others = runs[:i] + runs[i + 1 :]
        if others:
            m = statistics.median(others)
            out.append(100.0 * abs(r - m) / m)
    return out


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rho (Pearson's r of the ranks, ties at their mean rank); None under 3 pairs."""
    if len(a) < 3:
        return None
    value = pd.Series(a).rank().corr(pd.Series(b).rank())
    return None if value != value else round(float(value), 4)


def _kernel_resent(runs: pd.DataFrame) -> list[int] | None:
    """The lab server's kernel TCP segments resent in each run (RetransSegs; None where the
    folder predates the count or the loads were HTTP/3, whose resends are aioquic's own)."""
    if "server_tcp_retransmits" not in runs.columns:
        return None
    values = [int(v) for v in runs.sort_values("seed")["server_tcp_retransmits"] if v == v and v is not None]
    return values or None


def _resent_stats(pages: list[dict]) -> dict:
    """Per condition: the kernel's segments resent per load (median over every run of every
    page, and the most in one load) beside the model's timeouts per load, fired and found
    spurious: with nothing lost both should be about zero (Linux's timer, F-RTO)."""
    kernel = [v for p in pages for v in p.get("measured_server_tcp_retransmits", [])]
    model = [p["predicted_resent"] for p in pages if p.get("predicted_resent")]
    if not kernel and not model:
        return {}
    out: dict = {}
    if kernel:
        out["lab_server_tcp_retransmits_median"] = statistics.median(kernel)
        out["lab_server_tcp_retransmits_max"] = max(kernel)
    if model:
        timeouts = [m.get("rtos", 0) + m.get("ptos", 0) for m in model]
        out["model_timeouts_median"] = statistics.median(timeouts)
        out["model_timeouts_max"] = max(timeouts)
        out["model_spurious_timeouts"] = sum(m.get("spurious_rtos", 0) + m.get("spurious_ptos", 0) for m in model)
        out["model_packets_lost_median"] = statistics.median(m.get("packets_lost", 0) for m in model)
    return {"resent": out}


def _stats(pages: list[dict]) -> dict:
    ape = [abs(p["error_percent"]) for p in pages if p["error_percent"] is not None]
    floor = [f for p in pages for f in p["floor_ape_percent"]]
    measured = [statistics.median(p["measured_onload_s"]) for p in pages if p["predicted_onload_s"] is not None]
    predicted = [p["predicted_onload_s"] for p in pages if p["predicted_onload_s"] is not None]
    # MAPE with every page predicted from its k-th reference run (by onLoad), for each k: its
    # lowest and highest, the spread that the choice of one reference run puts in the MAPE.
    by_run: dict[int, list[float]] = {}
    for p in pages:
        med = statistics.median(p["measured_onload_s"]) if p["measured_onload_s"] else None
        for k, v in enumerate(p.get("predicted_from_each_reference_s") or ()):
            if v is not None and med:
                by_run.setdefault(k, []).append(abs(v - med) / med * 100.0)
    spread = [statistics.fmean(v) for v in by_run.values() if len(v) == len(ape)]
    return {
        "pages": len(pages),
        "mape_percent": round(statistics.fmean(ape), 3) if ape else None,
        "median_ape_percent": round(statistics.median(ape), 3) if ape else None,
        "spearman_rho": spearman(measured, predicted),
        "floor_mape_percent": round(statistics.fmean(floor), 3) if floor else None,
        "reference_spread_mape_percent": [round(min(spread), 3), round(max(spread), 3)] if len(spread) > 1 else None,
    }


@dataclass
class ValidationResult:
    """Per condition and overall: the model's out-of-sample error and the lab's floor."""

    conditions: list[dict]
    reference: dict
    summary: dict
    params: dict
    failures: list = field(default_factory=list)  # one line per page or load that failed

    def to_dict(self) -> dict:
        """``conditions``, ``reference`` (the in-sample check), ``summary``, ``params``, ``failures``."""
        return {
            "conditions": self.conditions,
            "reference": self.reference,
            "summary": self.summary,
            "params": self.params,
            "failures": self.failures,
        }

    def to_json(self) -> str:
        """One JSON document."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=False)


# Under random loss one model run is one draw, as one lab load is (at 1% loss the bundled
# synthetic page's model onLoad is 3.6-15.8 s over nine seeds, its lab loads 3.1-9.6 s): a lossy
# condition is predicted as the model's median over this many seeds, the statistic its lab runs
# are reduced to (their median).  Without loss the model is one run.  The seeds are the page's
# own (``_model_seed``), as the lab's loss draws are (``study.loss_seed``): shared by every page,
# one lucky or unlucky seed would move every page's prediction the same way.
LOSSY_SEEDS = 9


def _model_seed(run: int, page_url: str) -> int:
    """The model's seed of its ``run``-th draw of the page at ``page_url`` under loss."""
    from ..engine import derive_seed

    return derive_seed(run, f"model-loss/{page_url}") & 0x7FFFFFFF


def _predict(
    har_json: str, trace_name: str, key: tuple, seed: int, cc: str | None = None
) -> tuple[float | None, str | None, dict]:
    """The model's onLoad of the reference HAR's page moved to condition ``key``, with the
    lab servers' congestion control ``cc`` (None: a folder recorded before the lab named it,
    under the kernel's default: the model's own default), and what its transports resent
    (``RESEND_KEYS``): under loss the run with the median onLoad of the page's draws ``seed``
    to ``seed + LOSSY_SEEDS - 1`` (``_model_seed``)."""
    from ..studies.fidelity import FidelityParams, run as fidelity
    from .load import H3_DISCOVERY
    from .serve import model_servers
    from ..traces.har import parse_har

    rtt_s, bw, loss, queue, protocol = key
    at = str(PathConditions(rtt_s=rtt_s, bandwidth_bps=bw, loss=loss, queue_bytes=queue))
    rows = []
    try:
        trace = parse_har(json.loads(har_json), path=trace_name)
        lossy = str(loss) != "0"
        page = trace.pages[0] if trace.pages else None
        page_url = (page.url or page.title or trace_name) if page else trace_name
        for s in range(seed, seed + (LOSSY_SEEDS if lossy else 1)):
            result = fidelity(
                trace,
                FidelityParams(
                    at=at,
                    protocol=protocol,
                    seed=_model_seed(s, page_url) if lossy else s,
                    **model_servers(protocol, trace),  # as the lab's servers send (serve.py)
                    h3_discovery=H3_DISCOVERY,
                    **({"cc": cc} if cc else {}),
                ),
            )
            if not len(result.pages):
                reason = result.skipped["reason"].iloc[0] if len(result.skipped) else "no page"
                return None, reason, {}
            rows.append(result.pages.iloc[0])
    except InputError as exc:
        return None, exc.detail, {}
    # The run with the median onLoad (the middle one of an odd number of seeds).
    row = sorted(rows, key=lambda r: float(r["simulated_onload_s"]))[(len(rows) - 1) // 2]
    return float(row["simulated_onload_s"]), None, {k: int(row[k]) for k in RESEND_KEYS if k in row}


def analyse(out: str, reference: dict, *, seed: int = 1, runs: int | None = None) -> ValidationResult:
    """The validation's figures from a results folder that holds the reference and grid loads
    (``runs``: only the loads of runs 1 to ``runs``, e.g. while a further run is being
    measured into the folder), predicted with the current model.  Starts no lab."""
    from ..batch.store import load

    summary = load(out, "summary")
    hars = load(out, "har")
    last_run = runs  # ``runs`` names each page's loads below
    if last_run is not None and len(summary):
        summary = summary[summary["seed"] <= last_run]  # a load's seed is its run's number
    if not len(summary):
        raise InputError("holds no finished lab load.", path=str(out))
    summary = summary.assign(key=[_key(r) for r in summary.to_dict(orient="records")])
    if "cc" not in summary.columns:
        summary = summary.assign(cc=None)  # recorded before the lab named its congestion control
    hars = hars[["job_id", "trace", "seed", "har_json"]].merge(
        summary[["job_id", "key", "onload_s", "cc"]], on="job_id"
    )
    ref_key = _key(reference)
    conditions, ref_pages = [], []
    by_key = {k: df for k, df in summary.groupby("key", sort=False)}
    for key in sorted(by_key, key=lambda k: (k != ref_key, k[4], k[0], -(k[1] or math.inf), k[2])):
        pages = []
        for trace, runs in by_key[key].groupby("trace", sort=True):
            measured = [float(v) for v in runs.sort_values("seed")["onload_s"] if v == v and v is not None]
            ref = hars[(hars["trace"] == trace) & (hars["key"] == ref_key)].dropna(subset=["onload_s"])
            if ref.empty or not measured:
                continue
            ref_runs = ref.sort_values(["onload_s", "seed"])
            middle = (len(ref_runs) - 1) // 2
            ref = ref_runs.iloc[middle]  # the median run
            cc = ref["cc"] if isinstance(ref["cc"], str) else None
            predicted, why, resent = _predict(ref["har_json"], trace, key, seed, cc)
            median = statistics.median(measured)
            # The same prediction from each reference run (fastest first): the reference's own
            # run-to-run spread, which every prediction carries (its browser delays).
            each = [
                predicted if i == middle else _predict(r["har_json"], trace, key, seed, cc)[0]
                for i, (_, r) in enumerate(ref_runs.iterrows())
            ]
            page = {
                "trace": trace,
                "measured_onload_s": [round(v, 4) for v in measured],
                "predicted_onload_s": None if predicted is None else round(predicted, 4),
                "error_percent": None if predicted is None else round(100.0 * (predicted - median) / median, 3),
                "floor_ape_percent": [round(v, 3) for v in floor_ape(measured)],
                "predicted_from_each_reference_s": [None if v is None else round(v, 4) for v in each],
            }
            kernel = _kernel_resent(runs) if key[4] == "h2" else None
            if kernel is not None:
                page["measured_server_tcp_retransmits"] = kernel
            if resent:
                page["predicted_resent"] = resent
            if why:
                page["not_predicted"] = why
            pages.append(page)
        stats = _stats(pages)
        del stats["pages"]  # here "pages" is the list itself
        entry = {"condition": _condition(key), "pages": pages, **stats, **_resent_stats(pages)}
        if key == ref_key:
            ref_pages = pages
            reference_entry = {**entry, "note": "in sample: predicted from one of its own runs"}
        else:
            conditions.append(entry)
    if ref_key not in by_key:
        raise InputError("holds no load at the reference condition.", path=str(out))
    every = [p for c in conditions for p in c["pages"]]
    return ValidationResult(
        conditions=conditions,
        reference=reference_entry if ref_pages else {},
        summary=_stats(every) | {"conditions": len(conditions)},
        params={
            "reference": _condition(ref_key),
            "results": str(out),
            **({"runs": last_run} if last_run is not None else {}),
        },
    )


def validate(
    traces,
    grid,
    *,
    reference: PathConditions,
    reference_protocol: str = "h2",
    runs: int = 3,
    out: str,
    workers: int = 1,
    dask: str | None = None,
    progress: bool = True,
) -> ValidationResult:
    """Record the reference loads and the grid's in the lab, then ``analyse`` (see the module docstring)."""
    check_runs(runs)
    grids = [grid] if isinstance(grid, (str, dict)) or grid is None else list(grid)
    failures = record(
        traces,
        [reference_grid(reference, reference_protocol), *grids],
        runs,
        out=out,
        workers=workers,
        dask=dask,
        progress=progress,
    )
    ref = {
        "rtt_s": reference.rtt_s,
        "bandwidth_bps": reference.bandwidth_bps,
        "loss": reference.loss,
        "queue_bytes": reference.queue_bytes,
        "protocol": reference_protocol,
    }
    result = analyse(out, ref)
    result.failures = sorted(set(failures.values()))
    return result


def check_runs(runs: int) -> None:
    """A check of the lab needs two runs or more of every point: its floor compares them."""
    if runs < 2:
        raise InputError(f"--runs must be at least 2 (the floor compares runs with each other), got {runs}.")


def reference_grid(reference: PathConditions, protocol: str) -> dict:
    """The batch grid of the reference condition every page is recorded at."""
    grid = {
        "rtt": [f"{reference.rtt_s * 1e3!r}ms"],
        "bw": ["none" if reference.bandwidth_bps is None else f"{reference.bandwidth_bps!r}bit"],
        "loss": [reference.loss],
        "protocol": [protocol],
    }
    if reference.queue_bytes is not None:
        grid["queue"] = [str(reference.queue_bytes)]
    return grid


def record(traces, grids, runs: int, *, out: str, workers: int = 1, dask=None, progress: bool = True) -> dict:
    """Load every page at every point of each grid in turn, ``runs`` times, into the results
    folder ``out`` (the batch runner's ``lab-load``: resumable); the failures, by job or trace."""
    from ..batch.runner import run_batch

    failures: dict[str, str] = {}
    for grid in grids:
        report = run_batch(
            "lab-load",
            traces,
            grid,
            runs,
            out=out,
            workers=workers,
            dask=dask,
            tables=("summary", "har"),
            progress=progress,
            on_bad_trace=lambda path, error: failures.setdefault(path, error),
        )
        for job_id, error in report.failures:
            failures.setdefault(job_id, error)
    return failures


def waterfall(out: str, trace: str, condition: dict, reference: dict, *, seed: int = 1):
    """The worst-case view of one page at one condition: (the measured lab load's graph, the
    model's per-resource times predicted from the reference HAR, indexed as that graph by
    URL, the model's start offset, the measured page's start) for
    ``simulator.report.fidelity.waterfall_compare``.  The measured load is the run with the
    median onLoad at that condition."""
    from ..batch.store import load
    from ..studies.fidelity.conditions import infer_conditions
    from ..studies.fidelity.study import (
        FidelityParams,
        browser_connections,
        load_event_graph,
        moved_to,
        resource_scheduler,
        simulate_page,
    )
    from .load import H3_DISCOVERY
    from .serve import model_servers
    from ..traces.har import parse_har
    from ..traces.pagegraph import page_graph

    summary = load(out, "summary")
    hars = load(out, "har").merge(summary[["job_id", "onload_s"]], on="job_id")
    rows = summary.assign(key=[_key(r) for r in summary.to_dict(orient="records")])
    hars = hars.merge(rows[["job_id", "key"]], on="job_id")

    def pick(key):
        runs = hars[(hars["trace"] == trace) & (hars["key"] == key)].sort_values(["onload_s", "seed"])
        if runs.empty:
            raise InputError(f"holds no load of {trace} at {_condition(key)['conditions']} {key[4]}.", path=str(out))
        return runs.iloc[(len(runs) - 1) // 2]

    ref_row, measured_row = pick(_key(reference)), pick(_key(condition))

    def graph_of(row, elsewhere: bool):
        tr = parse_har(json.loads(row["har_json"]), path=trace)
        page = tr.pages[0]
        return tr, page, load_event_graph(page_graph(tr, page.id), page.on_load_s, page.start_s, elsewhere=elsewhere)

    ref_trace, ref_page, ref_graph = graph_of(ref_row, True)  # predicted at another condition
    _, measured_page, measured_graph = graph_of(measured_row, False)
    at = PathConditions(
        rtt_s=condition["rtt_s"],
        bandwidth_bps=condition["bandwidth_bps"],
        loss=condition["loss"],
        queue_bytes=condition["queue_bytes"],
    )
    cond = moved_to(infer_conditions(ref_graph, ref_page.start_s), at, condition["protocol"])
    cc = ref_row.get("cc")  # the lab servers' congestion control, as ``_predict`` models them
    params = FidelityParams(
        at=str(at),
        protocol=condition["protocol"],
        seed=seed,
        **model_servers(condition["protocol"], ref_trace),
        h3_discovery=H3_DISCOVERY,
        **({"cc": cc} if isinstance(cc, str) else {}),
    )
    scheduler = resource_scheduler(ref_trace)
    simulated = simulate_page(
        ref_graph, cond, params, scheduler=scheduler, **browser_connections(ref_trace, scheduler)
    ).resources
    by_url = {r.url: r.index for r in measured_graph.resources}
    simulated = simulated[simulated["url"].isin(by_url)].assign(index=lambda d: d["url"].map(by_url))
    return measured_graph, simulated, cond.start_offset_s, measured_page.start_s
