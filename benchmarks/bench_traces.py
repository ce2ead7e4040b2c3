"""HAR import speed: entries per second of ``simulator.traces.load()`` on a 1,000-entry HAR,
side by side with reading the same file with ``json.load`` alone (the floor: every import
parses the JSON first), in one run.

The HAR is made here: ``synth.generate(pages=3, seed=1, requests=334)`` written with
``write_har`` (1,002 entries, about 2.5 MB; Chrome-like headers, cookies, initiators), in a
temporary folder.  Figures are CPU seconds, best of N, alternating the two candidates; the
ratio is the import's cost relative to json's (``import / json``: 1.0 would be free).
The import's memos (URLs, header names) are emptied before each file, so every file is
timed as a first read.
When ``../shared/traces/har-real`` exists beside the repository, its real HARs are timed
the same way, all of them per round.

The speed work of "Traces from the wild" took the ratio from about 5.2x to about 3.5x
(measured side by side against the tree before it: 0.17-0.19 s -> 0.125-0.135 s per load).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces" / "har-real"


def _json_all(paths):
    for p in paths:
        with open(p, "rb") as f:
            json.load(f)


def _load_all(paths):
    from simulator.traces import har, harheaders, load

    for p in paths:
        # Each file as if read first: no URL or header name memoized from an earlier load.
        for memo in (har.urlsplit, har.urljoin, har._field_name, har._field, har._header_fields):
            memo.cache_clear()
        harheaders._NATIVE_MEMO.clear()
        load(p)


def run(quick: bool = False) -> dict:
    from simulator.bench import best_cpu_times_s
    from simulator.traces import load, synth
    from simulator.traces.har import write_har

    repeats = 2 if quick else 7
    figures = {}
    with tempfile.TemporaryDirectory(prefix="bench-traces-") as tmp:
        path = Path(tmp) / "synthetic-1000.har"
        write_har(synth.generate(pages=3, seed=1, requests=334), str(path))
        with open(path, "rb") as f:
            entries = len(json.load(f)["log"]["entries"])
        exchanges = len(load(path).exchanges)  # warm-up: imports, first-use caches
        cases = {f"synthetic, {entries} entries": ([path], entries)}
        if SHARED.is_dir() and not quick:
            real = sorted(SHARED.glob("*.har"))
            n = 0
            for p in real:
                with open(p, "rb") as f:
                    n += len(json.load(f).get("log", {}).get("entries") or ())
            cases[f"shared real HARs ({len(real)} files), {n} entries"] = (real, n)
        print(f"HAR import vs json.load alone (CPU s, best of {repeats}, alternating)")
        print(f"{'file(s)':<44}{'json s':>9}{'load s':>9}{'entries/s':>11}{'load / json':>13}")
        for name, (paths, n) in cases.items():
            best = best_cpu_times_s({"json": lambda: _json_all(paths), "load": lambda: _load_all(paths)}, repeats)
            ratio = best["load"] / best["json"]
            figures[name] = {
                "entries": n,
                "json_s": best["json"],
                "load_s": best["load"],
                "json_entries_per_s": n / best["json"],
                "load_entries_per_s": n / best["load"],
                "load_vs_json": ratio,
            }
            print(f"{name:<44}{best['json']:>9.4f}{best['load']:>9.4f}{n / best['load']:>11.0f}{ratio:>12.2f}x")
    print(f"(the synthetic HAR gives {exchanges} exchanges; the ratio is the import's cost over json's)")
    return {"cases": figures}
