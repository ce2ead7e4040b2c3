"""The cross-stream study: its parameters, ``run`` (every scheme x codec x scoping over
the bodies' visits, then the leak) and the reference figures."""

from __future__ import annotations

import math
import multiprocessing
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from ... import __version__
from ...errors import InputError
from ...units import parse_size
from ..base import StudyParams, StudyResult, records, steps
from . import bodies as body_gen
from .bodies import Codec, SchemeUnavailable, parse_codecs
from .bodies.leak import Attack, make_setup
from .bodies.schemes import CROSS_STREAM, SCHEMES, SCOPINGS, Request, SchemeRun, applicable, static_dictionaries

__all__ = [
    "CrossstreamParams",
    "CrossstreamResult",
    "run",
    "run_leak",
    "visits",
    "check_dictionary_bytes",
    "SCHEMES",
    "SCOPINGS",
    "TRANSPORTS",
    "LEAK_ATTACKS",
    "PUBLISHED",
]

TRANSPORTS = {"tcp": "h2", "quic": "h3"}  # transport model -> the replay's stack name
# The leak's attacks (--leak): secret lengths and which codecs.  The quick one keeps the
# default run short (4,352 oracle queries on the default codecs against 27,904 for the
# full one; a 2-character secret saves little more, and its noisier result misled).
LEAK_ATTACKS = {"quick": {"lengths": (4,), "codecs": "first"}, "full": {"lengths": (4, 8), "codecs": "all"}}
PUBLISHED = {
    "brotli5_dict_vs_brotli8": 1.30,  # HTTP Workshop 2017, ~2000 top sites
    "delta_saving_percent": {"js": (78, 98), "css": (78, 98), "html": (30, 90)},  # RFC 9842 era reports
}
MIN_DICTIONARY_BYTES = 1024


def check_dictionary_bytes(size) -> int:
    """The dynamic dictionary size in bytes: the draft sends it as DSize (2^DSize bytes), so
    only powers of two exist; below 1 KiB one is too short to hold a response's repeats."""
    n = parse_size(size)
    if n < MIN_DICTIONARY_BYTES or n & (n - 1):
        raise InputError(
            f"the dynamic dictionary size is 2^DSize bytes, a power of two from 1KiB (e.g. 128KiB = 2^17), got {size!r}"
        )
    return n


@dataclass(frozen=True)
class CrossstreamParams(StudyParams):
    """Everything that determines a run.  Units are in the names."""

    schemes: tuple[str, ...] = SCHEMES
    codecs: str = "zlib:6,brotli:5,brotli:8,zstd:3"
    scopings: tuple[str, ...] = SCOPINGS
    releases: int = 3  # generated corpus / trace bodies: visits
    seed: int = 1
    static_dictionary_bytes: int = 32768  # the draft's static dictionaries: 32 or 64 KiB
    dictionary_bytes: int = 1 << 17  # 2^DSize per dynamic dictionary (draft example: 17)
    transport: str = "tcp"
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    leak_lengths: tuple[int, ...] = (4,)
    leak_alignments: int = 8
    leak_codecs: str = "first"  # "first": each scheme's first usable codec; "all"
    measure_cpu: bool = False
    # The leak needs no trace, so it may run in a forked process while the schemes run here
    # (what the CLI asks for); the result is the same either way, so it is no parameter.
    leak_in_background: bool = False

    # Wall-clock measurements stay out of batch rows.
    BATCH_FIXED = {"measure_cpu": False}
    NOT_PARAMETERS = ("leak_in_background",)

    def __post_init__(self) -> None:
        super().__post_init__()
        for s in self.schemes:
            if s not in SCHEMES:
                raise InputError(f"unknown scheme {s!r} (choose from {', '.join(SCHEMES)})")
        for s in self.scopings:
            if s not in SCOPINGS:
                raise InputError(f"unknown scoping {s!r} (choose from {', '.join(SCOPINGS)})")
        if not self.schemes or not self.scopings:
            raise InputError("give at least one scheme and one scoping rule")
        parse_codecs(self.codecs)  # a bad codec list fails here
        if self.transport not in TRANSPORTS:
            raise InputError(f"unknown transport {self.transport!r} (choose tcp or quic)")
        if self.releases < 1:
            raise InputError(f"releases must be at least 1, got {self.releases}")
        if self.static_dictionary_bytes < 0:
            raise InputError("the static dictionary size must not be negative")
        check_dictionary_bytes(self.dictionary_bytes)
        if any(n < 1 or n > 64 for n in self.leak_lengths):
            raise InputError("secret lengths for the leak must be between 1 and 64 characters")
        if self.leak_alignments < 1:
            raise InputError("leak alignments must be at least 1")
        if self.leak_codecs not in ("first", "all"):
            raise InputError(f"leak codecs must be 'first' or 'all', got {self.leak_codecs!r}")

    @property
    def codec_list(self) -> tuple[Codec, ...]:
        """The codecs named in ``codecs``, parsed."""
        return parse_codecs(self.codecs)


@dataclass
class CrossstreamResult(StudyResult):
    """One run of the cross-stream study: summary, responses, leak and CPU tables, reference figures."""

    summary: pd.DataFrame
    responses: pd.DataFrame
    leak: pd.DataFrame
    cpu: pd.DataFrame | None
    reference: dict
    unavailable: list
    params: dict
    source: dict

    def to_dict(self) -> dict:
        """Summary and leak rows, reference, unavailable schemes, parameters, source; the CPU times when measured."""
        out = {
            "summary": records(self.summary),
            "leak": records(self.leak),
            "reference": self.reference,
            "unavailable": self.unavailable,
            "params": self.params,
            "source": self.source,
        }
        if self.cpu is not None:
            out["cpu_wall_time_of_this_machine"] = records(self.cpu)
        return out

    def tables(self) -> dict[str, pd.DataFrame]:
        """Summary, leak and per-response tables (not the CPU times: they belong to one machine)."""
        return {"summary": self.summary, "leak": self.leak, "responses": self.responses}


# ---------------------------------------------------------------------------------------
# The workload


def visits(corpus: body_gen.Corpus) -> list[list[body_gen.Body]]:
    """Release r's visit: every body of release 0; later, the bodies that changed."""
    out, previous = [], {}
    for bodies in corpus.releases():
        if not out:
            out.append(list(bodies))
        else:
            out.append([b for b in bodies if previous.get(b.resource) != b.data])
        previous = {b.resource: b.data for b in bodies}
    return out


def _corpus(source, params: CrossstreamParams) -> body_gen.Corpus:
    if source is None:
        return body_gen.generate(seed=params.seed, releases=params.releases)
    if isinstance(source, body_gen.Corpus):
        return source
    from ...traces.model import Trace

    if isinstance(source, Trace):
        return body_gen.corpus_from_trace(source, seed=params.seed, releases=params.releases)
    raise TypeError(f"run() takes a Corpus, a Trace or None, not {type(source).__name__}")


def training_corpus(params: CrossstreamParams) -> body_gen.Corpus:
    """Other sites' release-0 bodies, for the static per-type dictionaries."""
    bodies = []
    for k in range(3):
        bodies += body_gen.generate(
            seed=1_000_003 + 7919 * k + params.seed, releases=1, site=f"other{k}.example"
        ).bodies
    return body_gen.Corpus(bodies=bodies, source="training")


# ---------------------------------------------------------------------------------------
# Transfer time on the simulated path


class _Transfer:
    """Visit completion times from the transport models, cached by the sizes replayed."""

    def __init__(self, params: CrossstreamParams) -> None:
        from ...net.conditions import handing_over
        from ...stacks.common import StackParams

        with handing_over(params.network):
            self.stack_params = StackParams(
                stack=TRANSPORTS[params.transport],
                rtt_s=params.rtt_s,
                bandwidth_bps=params.bandwidth_bps,
                loss=params.loss,
                seed=params.seed,
            )
        self.cache: dict[tuple, float] = {}

    def visit_s(self, rows: list[dict]) -> float:
        from ...stacks.common import ExchangeSpec
        from ...http.model_replay import last_completion_s

        key = tuple((r["url"], r["content_coding"], r["wire_bytes"] + r["overhead_bytes"]) for r in rows)
        if key in self.cache:
            return self.cache[key]
        specs = []
        for i, r in enumerate(rows):
            u = urlsplit(r["url"])
            req = (
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", u.netloc.encode()),
                (b":path", (u.path + ("?" + u.query if u.query else "")).encode()),
                (b"accept-encoding", b"gzip, deflate, br, zstd"),
            )
            resp = (
                (b":status", b"200"),
                (b"content-type", body_gen.KINDS[r["kind"]][0].encode()),
                (b"content-encoding", r["content_coding"].split("+")[0].encode()),
            )
            specs.append(
                ExchangeSpec(
                    index=i,
                    request_headers=req,
                    response_headers=resp,
                    response_body_bytes=max(1, r["wire_bytes"] + r["overhead_bytes"]),
                    start_s=0.0,
                    origin=f"{u.scheme}://{u.netloc}",
                )
            )
        t = float(last_completion_s(specs, self.stack_params))
        self.cache[key] = t
        return t


# ---------------------------------------------------------------------------------------
# Entry point


def _combos(params: CrossstreamParams) -> list[tuple[str, Codec | None, str]]:
    out = []
    for scheme in params.schemes:
        codecs = [None] if scheme == "identity" else [c for c in params.codec_list if applicable(scheme, c)]
        for codec in codecs:
            scopings = params.scopings if scheme in CROSS_STREAM else params.scopings[:1]
            for scoping in scopings:
                out.append((scheme, codec, scoping if scheme in CROSS_STREAM else "none"))
    return out


def run(trace=None, params: CrossstreamParams | None = None, *, progress: bool = False) -> CrossstreamResult:
    """Run every scheme x codec x scoping over the bodies' visits, then the leak (in a forked
    worker with ``params.leak_in_background``).  ``trace``: a body ``Corpus``, a ``Trace``
    (its bodies) or None (the generated corpus)."""
    params = params or CrossstreamParams()
    # started first: the worker builds its own static dictionaries meanwhile
    with _LeakRunner(params, background=params.leak_in_background) as background_leak:
        corpus = _corpus(trace, params)
        plan = visits(corpus)
        static = static_dictionaries(training_corpus(params), params.static_dictionary_bytes)
        return _run(corpus, plan, static, params, progress, background_leak)


class _LeakRunner:
    """The leak in one forked worker process, when this platform can fork, this process
    may have children (a Dask worker is daemonic and may not) and there are two cores.
    On an error the worker is stopped, not waited for."""

    def __init__(self, params: CrossstreamParams, *, background: bool) -> None:
        self.pool = self.pending = None
        if background and params.leak_lengths and _can_fork():
            self.pool = multiprocessing.get_context("fork").Pool(1)
            self.pending = self.pool.apply_async(run_leak, (params,))

    def result(self) -> pd.DataFrame:
        return self.pending.get()

    def __enter__(self) -> _LeakRunner:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if self.pool is None:
            return
        if kind is None:
            self.pool.close()
        else:
            self.pool.terminate()
        self.pool.join()


def _can_fork() -> bool:
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
        and (os.cpu_count() or 1) > 1
    )


def _run(corpus, plan, static, params: CrossstreamParams, progress: bool, background_leak: _LeakRunner):
    transfer = _Transfer(params)
    combos = _combos(params)
    rows, summaries, cpu_rows, unavailable = [], [], [], []
    for scheme, codec, scoping in steps(combos, "schemes", progress):
        codec_name = codec.name if codec else "identity"
        try:
            sr = SchemeRun(
                scheme,
                codec,
                scoping,
                static=static,
                dictionary_bytes=params.dictionary_bytes,
                measure_cpu=params.measure_cpu,
            )
        except SchemeUnavailable as exc:
            unavailable.append({"scheme": scheme, "codec": codec_name, "scoping": scoping, "reason": str(exc)})
            continue
        visit_times, combo_rows = [], []
        for v, bodies in enumerate(plan):
            sr.new_connection()
            vrows = []
            for b in bodies:
                rec = sr.send(
                    Request(
                        b,
                        initiator=b.origin,
                        fetch_site="none" if b.kind == "html" else "same-origin",
                        fetch_mode="navigate" if b.kind == "html" else ("cors" if b.kind == "json" else "no-cors"),
                    )
                )
                rec.update(scheme=scheme, codec=codec_name, scoping=scoping, visit=v)
                vrows.append(rec)
            visit_times.append(transfer.visit_s(vrows) if vrows else 0.0)
            combo_rows += vrows
        rows += combo_rows
        summaries.append(_summarize(scheme, codec_name, scoping, combo_rows, visit_times, sr))
        if params.measure_cpu:
            raw = sum(r["raw_bytes"] for r in combo_rows)
            c_ns = sum(r["compress_ns"] for r in combo_rows)
            d_ns = sum(r["decompress_ns"] for r in combo_rows)
            cpu_rows.append(
                {
                    "scheme": scheme,
                    "codec": codec_name,
                    "scoping": scoping,
                    "raw_bytes": raw,
                    "compress_ns_per_byte": c_ns / raw if raw else math.nan,
                    "decompress_ns_per_byte": d_ns / raw if raw else math.nan,
                    "compress_mb_per_s": raw / c_ns * 1e3 if c_ns else math.nan,
                    "decompress_mb_per_s": raw / d_ns * 1e3 if d_ns else math.nan,
                }
            )
    summary = pd.DataFrame.from_records(summaries)
    if not summary.empty:
        base = summary[summary["scheme"] == "per-response"].set_index("codec")["total_bytes"]
        summary["gain_vs_per_response"] = [
            base.get(c, math.nan) / t if t else math.nan for c, t in zip(summary["codec"], summary["total_bytes"])
        ]
        ident = summary[summary["scheme"] == "identity"]["mean_visit_s"]
        base_t = float(ident.iloc[0]) if len(ident) else math.nan
        summary["transfer_gain_vs_identity"] = base_t / summary["mean_visit_s"]
    responses = pd.DataFrame.from_records(rows)
    if not responses.empty and not params.measure_cpu:
        responses = responses.drop(columns=["compress_ns", "decompress_ns"])
    if background_leak.pending is not None:
        leak = background_leak.result()
    else:
        leak = run_leak(params, static=static, unavailable=unavailable, progress=progress)
    cpu = pd.DataFrame.from_records(cpu_rows) if params.measure_cpu else None
    reference = _reference(summary, responses)
    source_info = {
        "source": corpus.source,
        "content_hash": corpus.content_hash(),
        "bodies": len(corpus),
        "raw_bytes": corpus.raw_bytes,
        "visits": len(plan),
        "responses_per_visit": [len(v) for v in plan],
    }
    return CrossstreamResult(
        summary=summary,
        responses=responses,
        leak=leak,
        cpu=cpu,
        reference=reference,
        unavailable=unavailable,
        params={**params.to_dict(), "version": __version__},
        source=source_info,
    )


def _summarize(scheme, codec, scoping, rows, visit_times, sr) -> dict:
    raw = sum(r["raw_bytes"] for r in rows)
    wire = sum(r["wire_bytes"] for r in rows)
    overhead = sum(r["overhead_bytes"] for r in rows)
    first = [r for r in rows if r["visit"] == 0]
    repeat = [r for r in rows if r["visit"] > 0]
    raw_rep = sum(r["raw_bytes"] for r in repeat)
    tot_rep = sum(r["wire_bytes"] + r["overhead_bytes"] for r in repeat)
    return {
        "scheme": scheme,
        "codec": codec,
        "scoping": scoping,
        "responses": len(rows),
        "raw_bytes": raw,
        "wire_bytes": wire,
        "overhead_bytes": overhead,
        "total_bytes": wire + overhead,
        "ratio": (wire + overhead) / raw if raw else math.nan,
        "saving_percent": 100.0 - 100.0 * (wire + overhead) / raw if raw else math.nan,
        "first_visit_bytes": sum(r["wire_bytes"] + r["overhead_bytes"] for r in first),
        "repeat_visit_bytes": tot_rep,
        "repeat_ratio": tot_rep / raw_rep if raw_rep else math.nan,
        "server_dictionary_peak_bytes": sr.peak_server_bytes,
        "client_dictionary_peak_bytes": sr.peak_client_bytes,
        "first_visit_s": visit_times[0] if visit_times else math.nan,
        "repeat_visit_s": float(np.mean(visit_times[1:])) if len(visit_times) > 1 else math.nan,
        "mean_visit_s": float(np.mean(visit_times)) if visit_times else math.nan,
    }


def run_leak(
    params: CrossstreamParams, *, static: dict | None = None, unavailable: list | None = None, progress: bool = False
) -> pd.DataFrame:
    """The leak experiment alone: one row per scheme x codec x scoping x secret length
    (a scheme this machine cannot run, such as Brotli without its dictionary API, is left out)."""
    if static is None:
        static = static_dictionaries(training_corpus(params), params.static_dictionary_bytes)
    unavailable = unavailable or []
    rows = []
    jobs = []
    for n in params.leak_lengths:
        for scheme, codec, scoping in _combos(
            params.derive(schemes=tuple(s for s in params.schemes if s != "identity"))
        ):
            if params.leak_codecs == "first" and codec != _first_codec(params, scheme):
                continue
            jobs.append((n, scheme, codec, scoping))
    jobs = steps(jobs, "leak", progress and bool(jobs))
    setups = {}
    for n, scheme, codec, scoping in jobs:
        if any(u["scheme"] == scheme and u["codec"] == codec.name for u in unavailable):
            continue
        setup = setups.get(n)
        if setup is None:
            setup = setups[n] = make_setup(n, seed=params.seed)
        try:
            result = Attack(setup, scheme, codec, scoping, static=static, max_alignments=params.leak_alignments).run()
        except SchemeUnavailable:
            continue
        correct = 0
        for a, b in zip(result.recovered, setup.secret):
            if a != b:
                break
            correct += 1
        rows.append(
            {
                "scheme": scheme,
                "codec": codec.name,
                "scoping": scoping,
                "secret_chars": n,
                "recovered": result.success,
                "correct_prefix_chars": correct,
                "guessed_chars": result.positions_found,
                "requests": result.queries,
            }
        )
    return pd.DataFrame.from_records(
        rows,
        columns=[
            "scheme",
            "codec",
            "scoping",
            "secret_chars",
            "recovered",
            "correct_prefix_chars",
            "guessed_chars",
            "requests",
        ],
    )


def _first_codec(params: CrossstreamParams, scheme: str) -> Codec | None:
    return next((c for c in params.codec_list if applicable(scheme, c)), None)


def _reference(summary: pd.DataFrame, responses: pd.DataFrame) -> dict:
    out: dict = {"published": PUBLISHED}
    if summary.empty:
        return out
    s = summary.set_index(["scheme", "codec", "scoping"])["total_bytes"]
    key_dict, key_b8 = ("dynamic-dict", "brotli:5", "none"), ("per-response", "brotli:8", "none")
    if key_dict in s.index and key_b8 in s.index:
        out["brotli5_dict_vs_brotli8"] = float(s[key_b8] / s[key_dict])
    deltas = {}
    if not responses.empty:
        rep = responses[responses["visit"] > 0]
        for scheme in ("dcb", "dcz"):
            d = rep[(rep["scheme"] == scheme) & (rep["scoping"] == "none")]
            for codec in sorted(d["codec"].unique()):
                # like with like: this delta codec against plain compression with the same
                # library and level (dcb brotli:5 vs br brotli:5), over the same responses
                dc = d[d["codec"] == codec]
                p = rep[(rep["scheme"] == "per-response") & (rep["codec"] == codec)]
                by_kind = {}
                for kind in sorted(dc["kind"].unique()):
                    a = dc[dc["kind"] == kind]["wire_bytes"].sum() + dc[dc["kind"] == kind]["overhead_bytes"].sum()
                    b = p[p["kind"] == kind]["wire_bytes"].sum() + p[p["kind"] == kind]["overhead_bytes"].sum()
                    if b:
                        by_kind[kind] = round(float(100.0 - 100.0 * a / b), 2)
                if by_kind:
                    deltas[f"{scheme} {codec}"] = by_kind
    if deltas:
        out["delta_saving_percent_vs_plain"] = deltas
    return out
