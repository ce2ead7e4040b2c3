"""The studies the batch runner knows, and how a grid file turns into their parameters.

A study is registered once in ``STUDIES`` with what the batch runner needs:

* ``add_arguments(parser)`` and ``params_from_args(args)``: the study's own CLI flags, so a
  grid file spells parameters exactly as ``workbench <study> --help`` does (``loss``,
  ``rtt``, ``scheme``, ``table``, ...), with the same parsing and the same errors;
* ``run(trace, params)``: the study's one entry point (the CLI and notebooks call it too);
* ``with_seed(params, seed)`` and ``params_dict(params)``: the seed is the batch's, not the
  grid's, and the resolved parameters (units applied) identify a job and go into every row;
* ``tables(result)``: the result as named DataFrames, each stored as its own Parquet
  dataset under the results folder (``summary`` is required: its file marks a job done).

Flags that name the trace or the seed, or only shape CLI output, are not grid parameters
(``reserved``).  Another study plugs in by adding an entry here.
"""

from __future__ import annotations

import argparse
import itertools
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ..argtypes import ArgParser
from ..errors import InputError

__all__ = ["Study", "STUDIES", "get_study", "read_grid", "expand_grid", "GridPoint"]


@dataclass(frozen=True)
class Study:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    params_from_args: Callable[[argparse.Namespace], Any]
    run: Callable[[Any, Any], Any]
    with_seed: Callable[[Any, int], Any]
    params_dict: Callable[[Any], dict]
    tables: Callable[[Any], dict[str, pd.DataFrame]]
    optional_tables: tuple[str, ...] = ()          # stored only when asked for (``--tables``)
    reserved: frozenset[str] = field(default_factory=frozenset)  # flags a grid may not set
    needs_trace: bool = True                       # False: the study makes its own input (no --traces)

    def flags(self) -> dict[str, argparse.Action]:
        """Grid-settable flags by their name without dashes (``rtt``, ``loss``, ...)."""
        parser = _RaisingParser(prog=f"workbench {self.name}", add_help=False)
        self.add_arguments(parser)
        out = {}
        for action in parser._actions:
            longs = [o for o in action.option_strings if o.startswith("--")]
            if not longs:
                continue
            name = longs[0][2:]
            if name in self.reserved:
                continue
            out[name] = action
        return out


class _RaisingParser(ArgParser):
    """The study's flags, parsed from grid values: errors raise ``InputError`` (the flags'
    own checks run, so a grid value is read exactly as the same flag on the command line)."""

    def error(self, message: str):
        raise InputError(message)

    def exit(self, status=0, message=None):  # pragma: no cover - no --help here
        raise InputError(message or "bad grid value")


# ---------------------------------------------------------------------------------------
# Replays over the real stacks (and, with ``model = true``, over the transport models)


@dataclass(frozen=True)
class ReplayPoint:
    """What one ``workbench replay`` run is: the stack parameters, and whether it replays
    over the stack's transport model (``--model``) instead of the real stack."""

    params: Any                 # simulator.stacks.common.StackParams
    model: bool = False


def _replay_point(args: argparse.Namespace) -> ReplayPoint:
    from ..stacks.commands import params_from_args

    return ReplayPoint(params=params_from_args(args), model=bool(args.model))


def _replay_run(trace, point: ReplayPoint):
    from ..stacks import model_replay, replay

    return (model_replay if point.model else replay).run(trace, point.params)


def _replay_params_dict(point: ReplayPoint) -> dict:
    d = point.params.to_dict()
    d.pop("seed", None)
    d["model"] = point.model
    return d


def _replay_tables(result) -> dict[str, pd.DataFrame]:
    import math

    # The row carries `stack` and `model` as parameters: the summary's own "stack" label
    # ("h3", "quic-model", ...) would only repeat them.  None (nothing completed) -> NaN,
    # so a column keeps one type across jobs.
    summary = {k: (math.nan if v is None else v) for k, v in result.summary.items() if k != "stack"}
    # The replay copies its parameters into every exchange row; the batch adds them all
    # uniformly (with the seed), so they are dropped here.
    from dataclasses import fields

    from ..stacks.common import StackParams

    params = {f.name for f in fields(StackParams)}
    exchanges = result.exchanges
    exchanges = exchanges.drop(columns=[c for c in exchanges.columns if c in params or c == "stack"])
    return {"summary": pd.DataFrame([summary]), "exchanges": exchanges.reset_index(drop=True)}


def _replay() -> Study:
    from ..stacks.commands import add_arguments

    return Study(
        name="replay",
        help="replay traces over real h2 / aioquic HTTP/3 (or their transport models) in virtual time",
        add_arguments=add_arguments,
        params_from_args=_replay_point,
        run=_replay_run,
        with_seed=lambda point, seed: replace(point, params=replace(point.params, seed=int(seed))),
        params_dict=_replay_params_dict,
        tables=_replay_tables,
        optional_tables=("exchanges",),
        reserved=frozenset({"trace", "seed", "json", "qlog", "pcap", "keylog", "help"}),
    )


# name -> factory (the study module is imported when first asked for)
STUDIES: dict[str, Callable[[], Study]] = {
}
STUDIES["replay"] = _replay
_cache: dict[str, Study] = {}


def _registered(name: str):
    from ..studies import registry

    return lambda: registry.get(name)


for _name in ("hol", "push", "trailers", "crossstream", "coalescing", "demux"):
    STUDIES[_name] = _registered(_name)


def get_study(name: str) -> Study:
    if name not in STUDIES:
        raise InputError(f"unknown study {name!r} (batch studies: {', '.join(sorted(STUDIES))})")
    if name not in _cache:
        _cache[name] = STUDIES[name]()
    return _cache[name]


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
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such grid file.", path=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("the grid file is not UTF-8 text.", path=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc}).", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror}).", path=str(path)) from None
    return check_grid(raw, study, source=str(path))


def check_grid(raw: dict, study: Study, *, source: str = "grid") -> dict[str, list]:
    flags = study.flags()
    grid: dict[str, list] = {}
    for key, values in raw.items():
        name = str(key).lstrip("-").lower().replace("_", "-")
        if name in ("seed", "seeds"):
            raise InputError(f"{key!r} cannot be a grid parameter: use --seeds N (seeds 1..N).", path=source)
        if name in ("trace", "traces"):
            raise InputError(f"{key!r} cannot be a grid parameter: use --traces.", path=source)
        if name not in flags:
            raise InputError(f"unknown parameter {key!r} for study {study.name!r} "
                             f"(grid parameters: {', '.join(sorted(flags))}).", path=source)
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
        grid[name] = values
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
            if action.nargs == 0:   # store_true / store_false
                if not isinstance(value, bool):
                    raise InputError(f"{name!r} takes true or false, got {value!r}.", path=source)
                if value == bool(action.const):
                    argv.append(opt)
            else:
                argv += [opt, _flag_text(value)]
            given[name] = _flag_text(value)
        parser = _RaisingParser(prog=f"workbench {study.name}", add_help=False)
        study.add_arguments(parser)
        if "--trace" in parser._option_string_actions:     # the job's trace, not a grid value
            argv += ["--trace", "-"]
        try:
            ns = parser.parse_args(argv)
            params = study.batch_params(ns) if hasattr(study, "batch_params") else study.params_from_args(ns)
        except InputError as exc:
            point = ", ".join(f"{k}={v}" for k, v in given.items()) or "defaults"
            raise InputError(f"grid point {point}: {exc.detail if hasattr(exc, 'detail') else exc}",
                             path=source) from None
        points.append(GridPoint(flags=given, params=params))
    return points
