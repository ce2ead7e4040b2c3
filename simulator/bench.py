"""``workbench bench NAME [--json]``: run a benchmark from the repository's ``benchmarks/``.

A benchmark is ``benchmarks/bench_<name>.py`` with ``run(quick: bool = False) -> dict``:
it measures the candidates side by side in one run, prints a human-readable table and
returns its figures (ratios included).  ``--json`` prints that dict as one JSON object
instead of the table (the table goes to stderr).  ``workbench bench all`` runs them all.
Benchmarks measure; they never assert times (see benchmarks/README.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
import time
from pathlib import Path

from .errors import InputError

BENCH_DIR = Path(__file__).resolve().parent.parent / "benchmarks"


def best_time_s(fn, repeats: int) -> float:
    """The shortest wall time of ``repeats`` calls of ``fn`` (benchmarks measure; the
    minimum is the run least disturbed by the rest of a shared machine)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def available() -> list[str]:
    return sorted(p.stem[len("bench_"):] for p in BENCH_DIR.glob("bench_*.py"))


def load(name: str):
    path = BENCH_DIR / f"bench_{name}.py"
    if not path.exists():
        raise InputError(f"no benchmark {name!r} in {BENCH_DIR} (have: {', '.join(available()) or 'none'})")
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(name: str, *, as_json: bool = False, quick: bool = False) -> dict:
    module = load(name)
    if as_json:
        with contextlib.redirect_stdout(sys.stderr):
            result = module.run(quick=quick)
        print(json.dumps(result, default=float))
    else:
        result = module.run(quick=quick)
    return result


def _cmd(args) -> int:
    names = available() if args.name == "all" else [args.name]
    for name in names:
        if not args.json and len(names) > 1:
            print(f"== bench {name}")
        run(name, as_json=args.json, quick=args.quick)
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("bench", help="run a benchmark (ratios side by side in one run)")
    p.add_argument("name", help="benchmark name, or 'all' (" + ", ".join(available()) + ")")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quick", action="store_true", help="a smaller workload (for smoke tests)")
    p.set_defaults(func=_cmd)
