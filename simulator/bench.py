"""``workbench bench NAME [--json]``: run a benchmark from the repository's ``benchmarks/``.

A benchmark is ``benchmarks/bench_<name>.py`` with ``run(quick: bool = False) -> dict``:
it measures the candidates side by side in one run, prints a human-readable table and
returns its figures (ratios included).  ``--json`` prints that dict as one JSON object
instead of the table (the table goes to stderr).  ``workbench bench all`` runs them all.
Benchmarks measure; they never assert times (see benchmarks/README.md).

The benchmarks belong to the source checkout, not to the installed package: they
measure on the checkout's bundled traces (``traces/``).  ``workbench bench`` finds them
beside the package (a checkout, or an editable install of one), else in ``benchmarks/``
of the current folder (an installed package run from a checkout); with neither it says
so in one line and exits with status 2.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from .errors import InputError

BENCH_DIR = Path(__file__).resolve().parent.parent / "benchmarks"  # beside the package: a checkout
PACKAGE_DIR = str(Path(__file__).resolve().parent)


def best_time_s(fn, repeats: int) -> float:
    """The shortest wall time of ``repeats`` calls of ``fn`` (benchmarks measure; the
    minimum is the run least disturbed by the rest of a shared machine)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def best_cpu_times_s(fns: dict, repeats: int) -> dict:
    """The shortest CPU time of each of ``fns`` (name -> callable) over ``repeats`` rounds,
    the candidates called in turn in every round (side by side: a busy spell of the machine
    falls on all of them alike)."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    return best


def fitted_exponent(sizes, costs) -> float:
    """``k`` of cost ~ size^k: the least-squares slope of log(cost) on log(size) (NaN with
    fewer than two sizes).  A linear algorithm fits near 1, one that does work per pair near 2."""
    import math

    points = [(math.log(n), math.log(c)) for n, c in zip(sizes, costs) if n > 0 and c > 0]
    if len(points) < 2:
        return float("nan")
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else float("nan")


@contextlib.contextmanager
def engine_implementation(name: str):
    """Every ``Simulator`` made inside the block uses this event queue (``"c"``/``"python"``)."""
    from . import engine

    if name not in engine.EVENT_QUEUES:
        raise LookupError(f"engine implementation {name!r} is not available")
    saved = engine.ENGINE_IMPLEMENTATION
    engine.ENGINE_IMPLEMENTATION = name
    try:
        yield
    finally:
        engine.ENGINE_IMPLEMENTATION = saved


def sampled_profile(
    argv: list[str],
    *,
    env: dict | None = None,
    scopes: dict[str, str | None] | None = None,
    rate_hz: int = 250,
    timeout_s: float = 600,
) -> dict:
    """Run ``python -m simulator.cli *argv`` under py-spy's sampling profiler and say which
    share of the samples fell in the workbench's own code (``simulator/``) rather than in
    the libraries it drives.

    py-spy reads the stack of the running process from outside, ``rate_hz`` times a
    second, pausing it for each read: no cost per call (cProfile's per-call cost overstates
    many small calls) and no bias toward function entries (an in-process signal sampler
    only runs at the interpreter's check points).  A sample counts for its innermost
    Python function; C code counts for the Python function that called it (the engine's C
    loop for ``Simulator.run``, aioquic's C crypto for aioquic); code a library generates
    for one of our classes (a dataclass's ``__init__``, file ``<string>``) counts for the
    function that called it.

    ``scopes``: name -> a function name whose samples to count (those whose stack passes
    through it), or ``None`` for the whole process (start-up and imports included).
    Returns ``{scope: {"samples", "own_samples", "own_share", "own_top": [(function,
    share)]}}``, or ``{"error": why}`` when py-spy is missing or may not attach here.
    """
    scopes = scopes or {"process": None}
    exe = Path(sys.executable).with_name("py-spy")
    spy = str(exe) if exe.exists() else shutil.which("py-spy")
    if spy is None:
        return {"error": "py-spy is not installed"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "profile.txt"
        proc = subprocess.run(
            [
                spy,
                "record",
                "--rate",
                str(rate_hz),
                "--format",
                "raw",
                "--output",
                str(out),
                "--",
                sys.executable,
                "-m",
                "simulator.cli",
                *argv,
            ],
            env=env,
            capture_output=True,
            timeout=timeout_s,
        )
        if proc.returncode != 0 or not out.exists():
            last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
            return {"error": f"py-spy failed (exit {proc.returncode}): {last}"}
        stacks = out.read_text().splitlines()
    return own_share_of_stacks(stacks, scopes)


def own_share_of_stacks(stacks: list[str], scopes: dict[str, str | None]) -> dict:
    """``sampled_profile``'s counting, over py-spy's raw output: one line per distinct stack,
    ``outer (file:line);...;inner (file:line) COUNT``."""
    totals: Counter = Counter()
    own: dict[str, Counter] = {scope: Counter() for scope in scopes}
    for line in stacks:
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        i = len(frames) - 1
        while i > 0 and "(<string>:" in frames[i]:  # generated for one of the caller's classes
            i -= 1
        function, _, where = frames[i].rpartition(" (")
        path = where.rsplit(":", 1)[0]
        mine = "-packages/" not in path and (path.startswith("simulator/") or "/simulator/" in path)
        for scope, within in scopes.items():
            if within is None or any(f.startswith(within + " (") or f".{within} (" in f for f in frames):
                totals[scope] += int(count)
                if mine:
                    own[scope][f"{path.rsplit('simulator/', 1)[1]}:{function}"] += int(count)
    return {
        scope: {
            "samples": totals[scope],
            "own_samples": sum(own[scope].values()),
            "own_share": sum(own[scope].values()) / totals[scope] if totals[scope] else float("nan"),
            "own_top": [(name, n / totals[scope]) for name, n in own[scope].most_common(6)],
        }
        for scope in scopes
    }


def bench_dir() -> Path | None:
    """The checkout's ``benchmarks/`` folder: beside the package, else in the current folder."""
    for folder in (BENCH_DIR, Path.cwd() / "benchmarks"):
        if any(folder.glob("bench_*.py")):
            return folder
    return None


def available() -> list[str]:
    """The benchmarks' names (none when there is no checkout to find them in)."""
    folder = bench_dir()
    return sorted(p.stem[len("bench_") :] for p in folder.glob("bench_*.py")) if folder else []


def load(name: str):
    """The module of benchmark ``name`` from the checkout's ``benchmarks/``."""
    folder = bench_dir()
    if folder is None:
        raise InputError(
            "no benchmarks here: they ship with the source checkout (benchmarks/ beside simulator/), "
            "not with the installed package; run workbench bench from a checkout"
        )
    path = folder / f"bench_{name}.py"
    if not path.exists():
        raise InputError(f"no benchmark {name!r} in {folder} (have: {', '.join(available()) or 'none'})")
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(name: str, *, as_json: bool = False, quick: bool = False) -> dict:
    """Run benchmark ``name`` and return its figures (``as_json``: print them as one object)."""
    module = load(name)
    if as_json:
        with contextlib.redirect_stdout(sys.stderr):
            result = module.run(quick=quick)
        print(json.dumps(result, default=float))
    else:
        result = module.run(quick=quick)
    return result


def _cmd(args) -> int:
    names = available() if args.name == "all" and bench_dir() else [args.name]
    for name in names:
        if not args.json and len(names) > 1:
            print(f"== bench {name}")
        run(name, as_json=args.json, quick=args.quick)
    return 0


def add_commands(sub) -> None:
    """``workbench bench``."""
    p = sub.add_parser("bench", help="run a benchmark (ratios side by side in one run)")
    p.add_argument("name", help="benchmark name, or 'all' (" + (", ".join(available()) or "found in a checkout") + ")")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quick", action="store_true", help="a smaller workload (for smoke tests)")
    p.set_defaults(func=_cmd)
