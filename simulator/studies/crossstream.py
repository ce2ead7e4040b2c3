"""Cross-stream compression: per-response vs shared contexts vs per-type dictionaries vs
RFC 9842 deltas, and the size-oracle leak that comes with sharing.

The question (put to the HTTP Workshop 2017 by the proposal below, and again by RFC 9842):
how much do responses shrink when a compressor may
reference earlier responses (the 2017 proposal, draft-vkrasnov-h2-compression-
dictionaries; RFC 9842 Compression Dictionary Transport), at what CPU and memory cost,
what does it buy in transfer time, and how many requests does an attacker who sees
only sizes need to read a secret under each scoping rule?

Input: bodies (``simulator.traces.bodies``): a generated site with releases (default),
a folder of real files (``--bodies``), or a trace file (``--trace``; its text responses
get generated bodies of their URLs, types and sizes; this is what ``workbench batch
crossstream --traces`` feeds).  Release r is a *visit*: one new connection per origin
fetching release r's bodies in order; from the second visit on, only the bodies that
changed since the previous release (unchanged assets are cached).  The client's RFC 9842
dictionary store lasts across visits; connection-scoped state (shared contexts, the
2017 dictionaries) does not.

For every scheme x codec x scoping (``simulator.compression.bodies.schemes``) every
response is encoded with the real library, decoded, and checked against its body.
Outputs:

- ``summary``: bytes, ratio, saving, gain over per-response compression of the same
  codec, first- and repeat-visit bytes, peak dictionary memory at both ends, and the
  visit's transfer time on the simulated path (the transport models of
  ``simulator.stacks.model_replay``: every response of a visit requested at t = 0,
  its size the scheme's encoded size plus overhead);
- ``responses``: one row per response;
- ``leak``: the BREACH-style attack (``simulator.compression.bodies.leak``) per scheme,
  codec, scoping and secret length: recovered or not, and requests spent.  By default
  a quick attack (``LEAK_ATTACKS["quick"]``: a 4-character secret, against the first
  codec of the list each scheme can use: every scheme and scoping, about a sixth of
  the queries); ``--leak full`` is the longer one (4 and 8 characters, every codec).  A row
  depends only on its scheme, codec, scoping, secret length, alignments and seed, so
  the quick table's rows are the full one's at the same length;
- ``cpu`` (only with ``measure_cpu``): compression and decompression time per byte,
  measured, *wall time of this machine*, kept out of the deterministic output;
- ``reference``: the 2017 figure (Brotli-5 with dictionary vs Brotli-8 per response,
  1.30x published) and RFC 9842-style delta savings per type, next to ours (each delta
  codec against plain compression with its own library and level: dcb brotli:5 vs br
  brotli:5, dcz zstd:3 vs zstd zstd:3, on the repeat visits' responses).

Published reference points: the 2017 proposal (V. Krasnov,
draft-vkrasnov-h2-compression-dictionaries-00 to -03, 2016-2017, presented at the HTTP
Workshop 2017) measured on about 2,000 top sites that its best strategy (a static
dictionary per type for the first asset, then a per-type dynamic dictionary each asset
is appended to) made Brotli-5 1.30x better than Brotli-8 per response and 1.46x better
than Deflate-8, while 2-3x faster.  Deployments of RFC 9842 (Compression Dictionary
Transport, 2025) report, against plain Brotli, -78% for a large script sent as a delta
against its previous version, -98% for a bundle, and -30% to -90% for HTML pages with a
shared dictionary.  The risk is the one of CRIME (2012), BREACH (2013) and HEIST (2016):
a secret and attacker-controlled text in one compression context, and sizes visible to
the attacker; HPACK's answer (RFC 7541 section 7: whole-field matches, never-indexed
literals, one context per connection) is the model for the scoping rules.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from .. import __version__, argtypes
from ..compression.bodies import Codec, SchemeUnavailable, parse_codecs
from ..compression.bodies.leak import Attack, make_setup
from ..compression.bodies.schemes import (CROSS_STREAM, SCHEMES, SCOPINGS, Request, SchemeRun, applicable,
                                          static_dictionaries)
from ..errors import InputError
from ..traces import bodies as body_gen
from ..units import parse_bandwidth, parse_duration, parse_size

__all__ = ["CrossstreamParams", "CrossstreamResult", "run", "run_leak", "visits", "SCHEMES", "SCOPINGS"]

TRANSPORTS = {"tcp": "h2", "quic": "h3"}       # transport model -> the replay's stack name
# The leak's attacks (--leak): secret lengths and which codecs.  The quick one keeps the
# default run short (4,352 oracle queries on the default codecs against 27,904 for the
# full one; a 2-character secret saves little more, and its noisier result misled).
LEAK_ATTACKS = {"quick": {"lengths": (4,), "codecs": "first"},
                "full": {"lengths": (4, 8), "codecs": "all"}}
PUBLISHED = {
    "brotli5_dict_vs_brotli8": 1.30,           # HTTP Workshop 2017, ~2000 top sites
    "delta_saving_percent": {"js": (78, 98), "css": (78, 98), "html": (30, 90)},   # RFC 9842 era reports
}


@dataclass(frozen=True)
class CrossstreamParams:
    """Everything that determines a run.  Units are in the names."""

    schemes: tuple[str, ...] = SCHEMES
    codecs: str = "zlib:6,brotli:5,brotli:8,zstd:3"
    scopings: tuple[str, ...] = SCOPINGS
    releases: int = 3                          # generated corpus / trace bodies: visits
    seed: int = 1
    static_dictionary_bytes: int = 32768       # the draft's static dictionaries: 32 or 64 KiB
    dictionary_bytes: int = 1 << 17            # 2^DSize per dynamic dictionary (draft example: 17)
    transport: str = "tcp"
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    leak_lengths: tuple[int, ...] = (4,)
    leak_alignments: int = 8
    leak_codecs: str = "first"                 # "first": each scheme's first usable codec; "all"
    measure_cpu: bool = False

    def __post_init__(self) -> None:
        for s in self.schemes:
            if s not in SCHEMES:
                raise InputError(f"unknown scheme {s!r} (choose from {', '.join(SCHEMES)})")
        for s in self.scopings:
            if s not in SCOPINGS:
                raise InputError(f"unknown scoping {s!r} (choose from {', '.join(SCOPINGS)})")
        if not self.schemes or not self.scopings:
            raise InputError("give at least one scheme and one scoping rule")
        parse_codecs(self.codecs)                # a bad codec list fails here
        if self.transport not in TRANSPORTS:
            raise InputError(f"unknown transport {self.transport!r} (choose tcp or quic)")
        if self.rtt_s <= 0:
            raise InputError(f"RTT must be above 0, got {self.rtt_s}")
        if self.bandwidth_bps is not None and self.bandwidth_bps <= 0:
            raise InputError(f"bandwidth must be above 0, got {self.bandwidth_bps}")
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
        import random

        from ..net.link import parse_loss
        parse_loss(self.loss, random.Random(0))

    @property
    def codec_list(self) -> tuple[Codec, ...]:
        return parse_codecs(self.codecs)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["schemes"] = ",".join(self.schemes)
        d["scopings"] = ",".join(self.scopings)
        d["leak_lengths"] = ",".join(str(n) for n in self.leak_lengths)
        return d


@dataclass
class CrossstreamResult:
    summary: pd.DataFrame
    responses: pd.DataFrame
    leak: pd.DataFrame
    cpu: pd.DataFrame | None
    reference: dict
    unavailable: list
    params: dict
    source: dict

    def to_dict(self) -> dict:
        out = {
            "summary": [_row(r) for r in self.summary.to_dict(orient="records")],
            "leak": [_row(r) for r in self.leak.to_dict(orient="records")],
            "reference": self.reference,
            "unavailable": self.unavailable,
            "params": self.params,
            "source": self.source,
        }
        if self.cpu is not None:
            out["cpu_wall_time_of_this_machine"] = [_row(r) for r in self.cpu.to_dict(orient="records")]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def _row(row: dict) -> dict:
    return {k: _jsonable(v) for k, v in row.items()}


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(v) else float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


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
    from ..traces.model import Trace

    if isinstance(source, Trace):
        return body_gen.corpus_from_trace(source, seed=params.seed, releases=params.releases)
    raise TypeError(f"run() takes a Corpus, a Trace or None, not {type(source).__name__}")


def _training(params: CrossstreamParams) -> body_gen.Corpus:
    """Other sites' release-0 bodies, for the static per-type dictionaries."""
    bodies = []
    for k in range(3):
        bodies += body_gen.generate(seed=1_000_003 + 7919 * k + params.seed, releases=1, site=f"other{k}.example").bodies
    return body_gen.Corpus(bodies=bodies, source="training")


# ---------------------------------------------------------------------------------------
# Transfer time on the simulated path


class _Transfer:
    """Visit completion times from the transport models, cached by the sizes replayed."""

    def __init__(self, params: CrossstreamParams) -> None:
        from ..stacks.common import StackParams

        self.stack_params = StackParams(stack=TRANSPORTS[params.transport], rtt_s=params.rtt_s,
                                        bandwidth_bps=params.bandwidth_bps, loss=params.loss, seed=params.seed)
        self.cache: dict[tuple, float] = {}

    def visit_s(self, rows: list[dict]) -> float:
        from ..stacks.common import ExchangeSpec
        from ..stacks.model_replay import last_completion_s

        key = tuple((r["url"], r["content_coding"], r["wire_bytes"] + r["overhead_bytes"]) for r in rows)
        if key in self.cache:
            return self.cache[key]
        specs = []
        for i, r in enumerate(rows):
            u = urlsplit(r["url"])
            req = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", u.netloc.encode()),
                   (b":path", (u.path + ("?" + u.query if u.query else "")).encode()),
                   (b"accept-encoding", b"gzip, deflate, br, zstd"))
            resp = ((b":status", b"200"), (b"content-type", body_gen.KINDS[r["kind"]][0].encode()),
                    (b"content-encoding", r["content_coding"].split("+")[0].encode()))
            specs.append(ExchangeSpec(index=i, request_headers=req, response_headers=resp,
                                      response_body_bytes=max(1, r["wire_bytes"] + r["overhead_bytes"]),
                                      start_s=0.0, origin=f"{u.scheme}://{u.netloc}"))
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


def run(source=None, params: CrossstreamParams | None = None, *, progress: bool = False) -> CrossstreamResult:
    """Run every scheme x codec x scoping over the bodies' visits, then the leak."""
    params = params or CrossstreamParams()
    corpus = _corpus(source, params)
    plan = visits(corpus)
    static = static_dictionaries(_training(params), params.static_dictionary_bytes)
    transfer = _Transfer(params)
    combos = _combos(params)
    iterator = combos
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(combos, desc="schemes", leave=False)
    rows, summaries, cpu_rows, unavailable = [], [], [], []
    for scheme, codec, scoping in iterator:
        codec_name = codec.name if codec else "identity"
        try:
            sr = SchemeRun(scheme, codec, scoping, static=static, dictionary_bytes=params.dictionary_bytes,
                           measure_cpu=params.measure_cpu)
        except SchemeUnavailable as exc:
            unavailable.append({"scheme": scheme, "codec": codec_name, "scoping": scoping, "reason": str(exc)})
            continue
        visit_times, combo_rows = [], []
        for v, bodies in enumerate(plan):
            sr.new_connection()
            vrows = []
            for b in bodies:
                rec = sr.send(Request(b, initiator=b.origin,
                                      fetch_site="none" if b.kind == "html" else "same-origin",
                                      fetch_mode="navigate" if b.kind == "html" else
                                      ("cors" if b.kind == "json" else "no-cors")))
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
            cpu_rows.append({"scheme": scheme, "codec": codec_name, "scoping": scoping, "raw_bytes": raw,
                             "compress_ns_per_byte": c_ns / raw if raw else math.nan,
                             "decompress_ns_per_byte": d_ns / raw if raw else math.nan,
                             "compress_mb_per_s": raw / c_ns * 1e3 if c_ns else math.nan,
                             "decompress_mb_per_s": raw / d_ns * 1e3 if d_ns else math.nan})
    summary = pd.DataFrame.from_records(summaries)
    if not summary.empty:
        base = summary[summary["scheme"] == "per-response"].set_index("codec")["total_bytes"]
        summary["gain_vs_per_response"] = [base.get(c, math.nan) / t if t else math.nan
                                           for c, t in zip(summary["codec"], summary["total_bytes"])]
        ident = summary[summary["scheme"] == "identity"]["mean_visit_s"]
        base_t = float(ident.iloc[0]) if len(ident) else math.nan
        summary["transfer_gain_vs_identity"] = base_t / summary["mean_visit_s"]
    responses = pd.DataFrame.from_records(rows)
    if not responses.empty and not params.measure_cpu:
        responses = responses.drop(columns=["compress_ns", "decompress_ns"])
    leak = run_leak(params, static=static, unavailable=unavailable, progress=progress)
    cpu = pd.DataFrame.from_records(cpu_rows) if params.measure_cpu else None
    reference = _reference(summary, responses)
    source_info = {"source": corpus.source, "content_hash": corpus.content_hash(), "bodies": len(corpus),
                   "raw_bytes": corpus.raw_bytes, "visits": len(plan),
                   "responses_per_visit": [len(v) for v in plan]}
    return CrossstreamResult(summary=summary, responses=responses, leak=leak, cpu=cpu, reference=reference,
                             unavailable=unavailable, params={**params.to_dict(), "version": __version__},
                             source=source_info)


def _summarize(scheme, codec, scoping, rows, visit_times, sr) -> dict:
    raw = sum(r["raw_bytes"] for r in rows)
    wire = sum(r["wire_bytes"] for r in rows)
    overhead = sum(r["overhead_bytes"] for r in rows)
    first = [r for r in rows if r["visit"] == 0]
    repeat = [r for r in rows if r["visit"] > 0]
    raw_rep = sum(r["raw_bytes"] for r in repeat)
    tot_rep = sum(r["wire_bytes"] + r["overhead_bytes"] for r in repeat)
    return {
        "scheme": scheme, "codec": codec, "scoping": scoping, "responses": len(rows),
        "raw_bytes": raw, "wire_bytes": wire, "overhead_bytes": overhead, "total_bytes": wire + overhead,
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


def run_leak(params: CrossstreamParams, *, static: dict | None = None, unavailable: list | None = None,
             progress: bool = False) -> pd.DataFrame:
    """The leak experiment alone: one row per scheme x codec x scoping x secret length."""
    if static is None:
        static = static_dictionaries(_training(params), params.static_dictionary_bytes)
    unavailable = unavailable or []
    rows = []
    jobs = []
    for n in params.leak_lengths:
        for scheme, codec, scoping in _combos(replace(params, schemes=tuple(s for s in params.schemes
                                                                             if s != "identity"))):
            if params.leak_codecs == "first" and codec != _first_codec(params, scheme):
                continue
            jobs.append((n, scheme, codec, scoping))
    if progress and jobs:
        from tqdm.auto import tqdm
        jobs = tqdm(jobs, desc="leak", leave=False)
    setups = {}
    for n, scheme, codec, scoping in jobs:
        if any(u["scheme"] == scheme and u["codec"] == codec.name for u in unavailable):
            continue
        setup = setups.get(n)
        if setup is None:
            setup = setups[n] = make_setup(n, seed=params.seed)
        result = Attack(setup, scheme, codec, scoping, static=static, max_alignments=params.leak_alignments).run()
        correct = 0
        for a, b in zip(result.recovered, setup.secret):
            if a != b:
                break
            correct += 1
        rows.append({"scheme": scheme, "codec": codec.name, "scoping": scoping, "secret_chars": n,
                     "recovered": result.success, "correct_prefix_chars": correct,
                     "guessed_chars": result.positions_found, "requests": result.queries})
    return pd.DataFrame.from_records(rows, columns=["scheme", "codec", "scoping", "secret_chars", "recovered",
                                                    "correct_prefix_chars", "guessed_chars", "requests"])


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


# ---------------------------------------------------------------------------------------
# CLI


MIN_DICTIONARY_BYTES = 1024


def check_dictionary_bytes(size) -> int:
    """The dynamic dictionary size in bytes: the draft sends it as DSize (2^DSize bytes), so
    only powers of two exist; below 1 KiB one is too short to hold a response's repeats."""
    n = parse_size(size)
    if n < MIN_DICTIONARY_BYTES or n & (n - 1):
        raise InputError(f"the dynamic dictionary size is 2^DSize bytes, a power of two from 1KiB "
                         f"(e.g. 128KiB = 2^17), got {size!r}")
    return n


def _ints(text: str) -> tuple[int, ...]:
    text = str(text).strip()
    if text in ("", "0", "none"):
        return ()
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise InputError(f"--leak-lengths takes comma-separated integers, got {text!r}") from None


def _leak_lengths(text: str) -> tuple[int, ...]:
    lengths = _ints(text)
    if any(n < 1 or n > 64 for n in lengths):
        raise InputError(f"secret lengths must be between 1 and 64 characters, got {text!r}")
    return lengths


def params_from_args(args: argparse.Namespace) -> CrossstreamParams:
    attack = getattr(args, "leak", None) or "quick"
    if attack not in LEAK_ATTACKS:
        raise InputError(f"--leak takes {' or '.join(LEAK_ATTACKS)}, got {attack!r}")
    lengths = LEAK_ATTACKS[attack]["lengths"] if args.leak_lengths is None else _ints(args.leak_lengths)
    return CrossstreamParams(
        schemes=tuple(s.strip() for s in args.scheme.split(",") if s.strip()),
        codecs=args.codecs,
        scopings=tuple(s.strip() for s in args.scoping.split(",") if s.strip()),
        releases=int(args.releases), seed=int(args.seed),
        static_dictionary_bytes=parse_size(args.static_dict), dictionary_bytes=parse_size(args.dict_size),
        transport=args.transport, rtt_s=parse_duration(args.rtt), bandwidth_bps=parse_bandwidth(args.bw),
        loss=str(args.loss),
        leak_lengths=lengths, leak_alignments=int(args.alignments), leak_codecs=LEAK_ATTACKS[attack]["codecs"],
        measure_cpu=bool(getattr(args, "cpu", False)),
    )


def _cmd(args: argparse.Namespace) -> int:
    params = params_from_args(args)
    if args.trace and args.bodies:
        raise InputError("give --trace or --bodies, not both")
    if args.bodies:
        source = body_gen.load_folder(args.bodies)
    elif args.trace:
        from ..traces import load
        source = load(args.trace)
    else:
        source = None
    result = run(source, params, progress=not args.json and sys.stderr.isatty())
    if args.responses:
        result.responses.to_csv(args.responses, index=False)
    if args.json:
        print(result.to_json())
        return 0
    src = result.source
    print(f"bodies {src['source']} ({src['bodies']} bodies, {src['raw_bytes']:,} bytes, {src['visits']} visits), "
          f"{params.transport}, RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, seed {params.seed}")
    cols = ["scheme", "codec", "scoping", "total_bytes", "ratio", "gain_vs_per_response", "repeat_ratio",
            "server_dictionary_peak_bytes", "first_visit_s", "repeat_visit_s"]
    with pd.option_context("display.width", 200, "display.max_rows", 500, "display.float_format", "{:.4f}".format):
        print(result.summary[cols].to_string(index=False))
        if not result.leak.empty:
            scope = ("the first codec each scheme can use (--leak full: every codec)"
                     if params.leak_codecs == "first" else "every codec")
            lengths = " and ".join(str(n) for n in params.leak_lengths)
            print(f"\nleak (BREACH-style size oracle; requests = attacker-induced responses observed; "
                  f"{lengths}-character secrets, {scope}):")
            print(result.leak.to_string(index=False))
        if result.cpu is not None:
            print("\nCPU (wall time of this machine, not deterministic):")
            print(result.cpu.to_string(index=False))
    for u in result.unavailable:
        print(f"unavailable: {u['scheme']} {u['codec']}: {u['reason']}")
    ref = result.reference
    if "brotli5_dict_vs_brotli8" in ref:
        print(f"\n2017 reference: Brotli-5 with dynamic dictionary vs Brotli-8 per response: "
              f"{ref['brotli5_dict_vs_brotli8']:.2f}x (published 1.30x)")
    for k, v in ref.get("delta_saving_percent_vs_plain", {}).items():
        scheme, codec = k.split(" ", 1)
        print(f"RFC 9842 delta {scheme} {codec}: saving % vs plain {codec} per response, per type "
              f"(repeat visits): {v}")
    return 0


def _cmd_bodies(args: argparse.Namespace) -> int:
    corpus = body_gen.generate(seed=int(args.seed), releases=int(args.releases))
    written = body_gen.write_folder(corpus, args.out)
    print(f"wrote {len(written)} bodies ({corpus.raw_bytes:,} bytes, {args.releases} releases) under {args.out}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", help="a trace file: its text responses get generated bodies (URLs, types, sizes)")
    p.add_argument("--bodies", metavar="DIR", help="a folder of real files (sub-folders are later releases)")
    p.add_argument("--scheme", default=",".join(SCHEMES), type=argtypes.names(SCHEMES, "scheme"),
                   help="comma-separated: " + ",".join(SCHEMES))
    p.add_argument("--codecs", default=CrossstreamParams.codecs, type=argtypes.checked(parse_codecs, "codecs"),
                   help="LIBRARY:LEVEL list, e.g. brotli:5,zstd:1-19,zlib:6 (libraries: zlib, brotli, zstd)")
    p.add_argument("--scoping", default=",".join(SCOPINGS), type=argtypes.names(SCOPINGS, "scoping"),
                   help="comma-separated: " + ",".join(SCOPINGS))
    p.add_argument("--releases", default=3, type=argtypes.count(1), help="releases (visits) of generated bodies")
    p.add_argument("--static-dict", default="32KiB", type=argtypes.size, help="static dictionary size per MIME type")
    p.add_argument("--dict-size", default="128KiB", type=argtypes.checked(check_dictionary_bytes, "size"),
                   help="dynamic dictionary size in bytes, a power of two (the draft's 2^DSize), e.g. 128KiB")
    p.add_argument("--transport", default="tcp", choices=list(TRANSPORTS),
                   help="transport model for transfer times: tcp (HTTP/2) or quic (HTTP/3)")
    p.add_argument("--rtt", default="100ms", type=argtypes.positive_duration, help="round-trip time, e.g. 100ms")
    p.add_argument("--bw", default="10mbit", type=argtypes.bandwidth, help="bottleneck bandwidth (none = unlimited)")
    p.add_argument("--loss", default="0", type=argtypes.loss, help="0.01 (Bernoulli) or ge:P,R[,h,k] (Gilbert-Elliott)")
    p.add_argument("--leak", default="quick", choices=list(LEAK_ATTACKS),
                   help="the leak's attack: quick (default: a 4-character secret against the first codec each "
                        "scheme can use, every scheme and scoping) or full (4- and 8-character secrets against "
                        "every codec, about 6x the oracle queries; the default before)")
    p.add_argument("--leak-lengths", default=None, type=argtypes.checked(_leak_lengths, "lengths"),
                   help="secret lengths for the leak, overriding --leak's (0 = no leak experiment)")
    p.add_argument("--alignments", default=8, type=argtypes.count(1),
                   help="leak: rounds (fresh pads and alignment) per character before giving up")
    p.add_argument("--seed", default=1, type=int)
    p.add_argument("--cpu", action="store_true", help="also measure CPU time (wall time of this machine)")
    p.add_argument("--responses", metavar="CSV", type=argtypes.output_file,
                   help="also write the per-response table to CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_commands(sub) -> None:
    p = sub.add_parser("crossstream", help="cross-stream compression: shared contexts, dictionaries, RFC 9842, the leak")
    add_arguments(p)
    p.set_defaults(func=_cmd)
    b = sub.add_parser("crossstream-bodies", help="write the generated body corpus (releases in rNN/ folders)")
    b.add_argument("out", metavar="DIR", type=argtypes.output_folder, help="folder to write (created)")
    b.add_argument("--seed", default=1, type=int)
    b.add_argument("--releases", default=3, type=argtypes.count(1))
    b.set_defaults(func=_cmd_bodies)
