"""How a grid file turns into a study's parameters, for the studies the batch runner knows.

The studies are those of ``simulator.studies.registry``, the same registrations the CLI
reads (``simulator.studies.base.Study``), so a grid file spells parameters exactly as
``workbench <study> --help`` does (``loss``, ``rtt``, ``scheme``, ``table``, ...), with the
same parsing and the same errors.  What the batch runner uses of a study:

* its flags (``Study.flags()``: those that name the trace or the seed, or only shape CLI
  output, are not grid parameters) and ``Study.batch_params(args)``;
* ``run(trace, params)`` (``trace`` is None for a study that makes its own input);
* ``with_seed(params, seed)`` and ``params_dict(params)``: the seed is the batch's, not the
  grid's, and the resolved parameters (units applied) identify a job and go into every row;
* ``tables(result)``: the result as named DataFrames, each stored as its own Parquet
  dataset under the results folder (``summary`` is required: its file marks a job done).
"""

from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..studies.base import Study
from ..studies.registry import STUDIES, get

__all__ = ["Study", "STUDIES", "get_study", "read_grid", "check_grid", "expand_grid", "GridPoint", "MAX_GRID_POINTS"]

# Grid points of one batch (times --seeds and traces, the jobs): each point is a parameters
# object and a manifest row before any job runs, so a million-point grid is refused up front.
MAX_GRID_POINTS = 100_000


def get_study(name: str) -> Study:
    """The study ``name`` as the batch runner runs it."""
    if name not in STUDIES:
        raise InputError(f"unknown study {name!r} (batch studies: {', '.join(sorted(STUDIES))})")
    return get(name)


# ---------------------------------------------------------------------------------------
# Grid files


def read_grid(path: str | Path | None, study: Study) -> dict[str, list]:
    """``GRID.toml`` -> ``{flag: [values...]}``, checked against the study's flags.

    Keys are the study's flag names (``loss``, ``--loss`` and ``Loss`` all work; ``_`` and
    ``-`` are the same); a value is a list of values or one value.  ``None`` (no grid
    file) is the study's defaults: one grid point.
    """
    if path is None:
        return {}
    from ..traces._io import read_input

    path = Path(path)
    try:
        if not path.exists():
            raise FileNotFoundError
        # a regular file of at most 1 MiB: a FIFO or /dev/zero is refused, not read forever
        raw = tomllib.loads(read_input(str(path), limit=1 << 20, what="grid file").decode("utf-8"))
    except FileNotFoundError:
        raise InputError("no such grid file.", path=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("the grid file is not UTF-8 text.", path=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc}).", path=str(path)) from None
    except RecursionError:
        raise InputError("the grid file is nested deeper than the TOML parser goes.", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror}).", path=str(path)) from None
    return check_grid(raw, study, source=str(path))


def check_grid(raw: dict, study: Study, *, source: str = "grid") -> dict[str, list]:
    """A grid's ``{flag: values}``, each key checked against the study's grid parameters."""
    flags = study.flags()
    grid: dict[str, list] = {}
    for key, values in raw.items():
        name = str(key).lstrip("-").lower().replace("_", "-")
        if name in ("seed", "seeds"):
            raise InputError(f"{key!r} cannot be a grid parameter: use --seeds N (seeds 1..N).", path=source)
        if name in ("trace", "traces"):
            raise InputError(f"{key!r} cannot be a grid parameter: use --traces.", path=source)
        if name not in flags:
            raise InputError(
                f"unknown parameter {key!r} for study {study.name!r} (grid parameters: {', '.join(sorted(flags))}).",
                path=source,
            )
        if isinstance(values, dict):
            raise InputError(f"{key!r} must be a list of values, not a table.", path=source)
        if not isinstance(values, list):
            values = [values]
        if not values:
            raise InputError(f"{key!r} has an empty list of values.", path=source)
        for v in values:
            if not isinstance(v, (str, int, float, bool)):
                raise InputError(f"{key!r}: value {v!r} is not a string, number or boolean.", path=source)
        if name in grid:
            raise InputError(f"{key!r} is given twice.", path=source)
        seen: set[str] = set()
        for v in values:  # a value listed twice makes the same jobs twice (10,000 times: minutes)
            if _flag_text(v) in seen:
                raise InputError(f"{key!r} lists the value {v!r} more than once.", path=source)
            seen.add(_flag_text(v))
        grid[name] = values
    points = math.prod(len(v) for v in grid.values())
    if points > MAX_GRID_POINTS:  # checked before the product is expanded
        raise InputError(
            f"the grid has {points:,} points, above the limit of {MAX_GRID_POINTS:,}; split it over several batches.",
            path=source,
        )
    return grid


def _flag_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


@dataclass(frozen=True)
class GridPoint:
    """One combination of grid values: ``flags`` as the grid spelt them (strings) and the
    study's resolved parameters object."""

    flags: dict
    params: Any


def expand_grid(grid: dict[str, list], study: Study, *, source: str = "grid") -> list[GridPoint]:
    """Every combination, in the grid file's key order (last key varies fastest), each
    parsed by the study's own flags, so a bad value fails here, before any job runs."""
    flags = study.flags()
    names = list(grid)
    points = []
    for combo in itertools.product(*(grid[n] for n in names)):
        argv: list[str] = []
        given = {}
        for name, value in zip(names, combo):
            action = flags[name]
            opt = "--" + name
            if action.nargs == 0:  # store_true / store_false
                if not isinstance(value, bool):
                    raise InputError(f"{name!r} takes true or false, got {value!r}.", path=source)
                if value == bool(action.const):
                    argv.append(opt)
            else:
                argv += [opt, _flag_text(value)]
            given[name] = _flag_text(value)
        parser = study.parser()
        if "--trace" in parser._option_string_actions:  # the job's trace, not a grid value
            argv += ["--trace", "-"]
        try:
            ns = parser.parse_args(argv)
            params = study.batch_params(ns)
        except InputError as exc:
            point = ", ".join(f"{k}={v}" for k, v in given.items()) or "defaults"
            raise InputError(
                f"grid point {point}: {exc.detail if hasattr(exc, 'detail') else exc}", path=source
            ) from None
        points.append(GridPoint(flags=given, params=params))
    return points
