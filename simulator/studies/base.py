"""The study contract: one shape for every study, read alike by the CLI and the batch runner.

A study is a package ``simulator/studies/<name>/`` holding its model, its ``run()`` and its
command line apart, and offering:

- **parameters**: a frozen dataclass deriving ``StudyParams``.  Its network part is the
  fields of ``Network`` it uses (``rtt_s``, ``bandwidth_bps``, ``loss``, ``cc``, ``tls``,
  ``seed``), declared flat (so ``replace(params, rtt_s=0.05)`` works) with the study's
  own defaults, offered as flags by ``add_network_flags`` and read back by
  ``network_from_args``.  Building the parameters builds their ``network``
  (``net.conditions.Network``, the loss spelling read into a ``LossSpec``) and checks it,
  once: the model takes ``params.network`` and trusts it; ``derive`` / ``with_seed`` and the
  parameters of the layers below (``handing_over``) take the checked value over;
- **run**: ``run(trace, params, *, progress=False) -> result``, the one signature of every
  study (``tests/test_study_contract.py`` checks it).  ``trace`` is the study's input, a
  ``Trace`` (the page-load studies also take its ``PageGraph``, crossstream a body corpus); a
  study that makes its own input says so and takes ``trace=None`` (``Study.input``).  Whatever
  else a run needs (a topology, where a real stack writes its qlog, running a part in the
  background) is a field of the parameters, named in ``NOT_PARAMETERS`` when it does not
  change the result, so that it stays out of results and batch rows;
- **seeds**: ``run_seeds(run, trace, params, seeds)`` (one summary row per seed and
  compared alternative) and ``median_over_seeds`` (a command's ``--seeds N``) run any
  study over several seeds; a study writes no seed loop of its own;
- **result**: a dataclass deriving ``StudyResult``: ``tables()`` (named DataFrames,
  ``summary`` first: what the batch runner stores), ``to_dict()``, and ``to_json()``,
  the one JSON writer;
- **registration**: ``STUDY = Study(...)`` in the package's ``cli`` module, named by one
  line of ``simulator.studies.registry``: the CLI makes ``workbench <name>`` from it and
  the batch runner reads its flags as grid parameters.

A worked example (a study of one transfer; its flags are the network's)::

    @dataclass(frozen=True)
    class ToyParams(StudyParams):
        body_bytes: int = 100_000
        rtt_s: float = 0.100
        bandwidth_bps: float | None = 10e6
        loss: str = "0"
        seed: int = 1

    @dataclass
    class ToyResult(StudyResult):
        summary: pd.DataFrame
        params: dict

        def tables(self):
            return {"summary": self.summary}

        def to_dict(self):
            return {"summary": records(self.summary), "params": self.params}

    def add_arguments(p):
        p.add_argument("--trace", required=True)
        p.add_argument("--body", default="100kB", type=argtypes.size)
        add_network_flags(p, rtt="100ms", bw="10mbit", loss="0", seed=1)

    def params_from_args(args):
        return ToyParams(body_bytes=parse_size(args.body), **network_from_args(args))

    STUDY = Study(name="toy", help="one transfer", add_arguments=add_arguments,
                  params_from_args=params_from_args, run=run, command=_cmd)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from .. import argtypes
from ..errors import InputError
from ..net.conditions import CC_CHOICES, NETWORK_FIELDS, Network, adopt_network, handing_over, network_fields

if TYPE_CHECKING:
    import pandas as pd

# NumPy and pandas are imported where a table is made or read, not with the studies: the
# registry (every ``workbench`` study command) then starts without them (about 0.5 s), and
# a command whose results are plain rows (``fidelity --json``) never loads them.

__all__ = [
    "Network",
    "NETWORK_FIELDS",
    "CC_CHOICES",
    "StudyParams",
    "StudyResult",
    "Study",
    "add_network_flags",
    "network_from_args",
    "comma_list",
    "jsonable",
    "json_default",
    "rows_by_index",
    "records",
    "steps",
    "run_seeds",
    "median_over_seeds",
]


# ---------------------------------------------------------------------------------------
# Parameters


class StudyParams:
    """Base of every study's parameters dataclass: the network part checked alike, the
    seed set alike, and the flat dictionary that goes into results and batch rows."""

    # Batch runs set these fields (e.g. wall-clock measurements off) and leave them out of
    # a job's parameters; BATCH_DROPPED fields are left out too (they shape no batch result).
    BATCH_FIXED: ClassVar[dict[str, Any]] = {}
    BATCH_DROPPED: ClassVar[tuple[str, ...]] = ()
    # Fields that are inputs or side outputs of a run, not what it simulates (a topology
    # object, a qlog folder, a background worker): never in results or batch rows.
    NOT_PARAMETERS: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        # The edge: the network part is built and checked here, once, and kept; the layers
        # below take ``self.network`` and trust it (parameters derived from these, by
        # ``derive`` or ``with_seed``, take it over unless a field it is built from changed).
        adopt_network(self, self.network_fields())

    def network_fields(self) -> dict:
        """The ``Network`` fields this study declares flat (a study whose fields mean more,
        e.g. a queue default of its own, says so here)."""
        return network_fields(self)

    @property
    def network(self) -> Network:
        """The network part, checked once when these parameters were built (the fields this
        study does not declare at ``Network``'s defaults)."""
        return self.__dict__["_network"]

    def derive(self, **changes):
        """``replace(self, **changes)``, handing the checked network part over unless a field
        it is built from changes (then the new value is checked, as any new input)."""
        with handing_over(self.network):
            return replace(self, **changes)

    def with_seed(self, seed: int):
        """The same parameters with another seed (the batch runner's seeds)."""
        return self.derive(seed=int(seed))

    def to_dict(self) -> dict:
        """Every field, lists of names joined by commas (``"hpack,qpack"``)."""
        d = {}
        for f in fields(self):
            if f.name in self.NOT_PARAMETERS:
                continue
            value = getattr(self, f.name)
            d[f.name] = ",".join(str(v) for v in value) if isinstance(value, tuple) else value
            if f.name == "loss":
                d[f.name] = str(value)  # a ``LossSpec`` as its spelling
        return d

    def for_batch(self):
        """These parameters as a batch job runs them (``BATCH_FIXED`` applied)."""
        return self.derive(**self.BATCH_FIXED) if self.BATCH_FIXED else self

    def batch_dict(self) -> dict:
        """What identifies a batch job and goes into its rows: ``to_dict`` without the seed
        (the batch's own) and without the fields batch runs fix or ignore."""
        d = self.to_dict()
        for k in ("seed", *self.BATCH_FIXED, *self.BATCH_DROPPED):
            d.pop(k, None)
        return d


def comma_list(text) -> tuple[str, ...]:
    """``"hpack, qpack,"`` -> ``("hpack", "qpack")``."""
    return tuple(s.strip() for s in str(text).split(",") if s.strip())


# ---------------------------------------------------------------------------------------
# Network flags: one spelling and one check for every study


def add_network_flags(
    p: argparse.ArgumentParser,
    *,
    rtt: str | None = None,
    bw: str | None = None,
    loss: str | None = None,
    cc: str | None = None,
    tls: bool = False,
    seed: int | None = None,
) -> None:
    """Add ``--rtt``, ``--bw``, ``--loss``, ``--cc``, ``--no-tls``, ``--seed`` (those given a
    default; ``tls=True`` adds ``--no-tls``): their spellings are read by ``argtypes`` (units,
    the loss model) and their rules checked once, by ``check_network``, when the study's
    parameters are built from ``network_from_args``."""
    added = []
    if rtt is not None:
        p.add_argument("--rtt", default=rtt, type=argtypes.rtt, help=f"round-trip time, e.g. {rtt}")
        added.append("rtt")
    if bw is not None:
        p.add_argument(
            "--bw", default=bw, type=argtypes.bottleneck, help=f"bottleneck bandwidth, e.g. {bw} (none = unlimited)"
        )
        added.append("bw")
    if loss is not None:
        p.add_argument(
            "--loss", default=loss, type=argtypes.loss_model, help="0.01 (Bernoulli) or ge:P,R[,h,k] (Gilbert-Elliott)"
        )
        added.append("loss")
    if cc is not None:
        p.add_argument("--cc", default=cc, choices=list(CC_CHOICES), help="congestion control of the transport")
        added.append("cc")
    if tls:
        p.add_argument(
            "--no-tls",
            action="store_true",
            help="cleartext HTTP/2 with prior knowledge instead of TLS 1.3 (one RTT less per connection)",
        )
        added.append("no_tls")
    if seed is not None:
        p.add_argument("--seed", default=seed, type=argtypes.seed, help="seed of every random draw")
        added.append("seed")
    p.set_defaults(network_flags=tuple(added))


def network_from_args(args: argparse.Namespace) -> dict:
    """The network fields of the flags ``add_network_flags`` added (read by their ``type=``)."""
    given = getattr(args, "network_flags", ())
    field = {"rtt": "rtt_s", "bw": "bandwidth_bps", "loss": "loss", "cc": "cc", "no_tls": "tls", "seed": "seed"}
    return {field[flag]: (not getattr(args, flag)) if flag == "no_tls" else getattr(args, flag) for flag in given}


# ---------------------------------------------------------------------------------------
# Results and JSON


def jsonable(v: Any) -> Any:
    """A value made plain for JSON: NumPy scalars as Python ones, NaN as ``None``."""
    np = sys.modules.get("numpy")  # not loaded: no value is one of its scalars
    if np is None:
        if isinstance(v, float):
            return None if math.isnan(v) else float(v)
        return v
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(v) else float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def json_default(v: Any) -> Any:
    """``json.dumps``'s ``default``: NumPy scalars (NaN as ``null``); anything else is a bug."""
    np = sys.modules.get("numpy")  # not loaded: no value is one of its scalars
    if np is not None and isinstance(v, np.generic):
        return jsonable(v.item())
    raise TypeError(f"{type(v).__name__} is not JSON serializable")


def rows_by_index(summary: pd.DataFrame) -> dict:
    """``{index value: {column: value}}`` with every value JSON-ready."""
    return {name: {k: jsonable(v) for k, v in row.items()} for name, row in summary.to_dict(orient="index").items()}


def records(df: pd.DataFrame) -> list[dict]:
    """``[{column: value}]``, one per row, with every value JSON-ready."""
    return [{k: jsonable(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


class StudyResult:
    """Base of every study's result: ``tables()`` for the batch runner, ``to_dict()`` for
    JSON, and the one JSON writer (``--json`` output is valid and byte-stable)."""

    JSON_INDENT: ClassVar[int | None] = 2

    def tables(self) -> dict[str, pd.DataFrame]:
        """Named tables, ``summary`` first (one row per compared alternative)."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        """The result as plain JSON-ready values (what ``--json`` prints)."""
        raise NotImplementedError

    def to_json(self) -> str:
        """``to_dict()`` as one JSON document: NumPy scalars made plain, NaN as ``null``."""
        return json.dumps(self.to_dict(), indent=self.JSON_INDENT, default=json_default)


def steps(items, desc: str, progress: bool, *, leave: bool = False):
    """``items``, with a progress bar when ``progress``."""
    if not progress:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, leave=leave)


# ---------------------------------------------------------------------------------------
# Seeds: one loop for every study


def _seed_rows(result: StudyResult, seed: int) -> pd.DataFrame:
    summary = result.summary
    summary = summary.reset_index() if any(summary.index.names) else summary.reset_index(drop=True)
    if "seed" not in summary.columns:
        summary.insert(1, "seed", seed)
    return summary


def run_seeds(
    run: Callable[..., StudyResult], trace, params: StudyParams, seeds, *, progress: bool = False
) -> pd.DataFrame:
    """``run(trace, params)`` once per seed of ``seeds``: the summaries, one row per (seed,
    compared alternative), the seed beside the alternative's name.  Every alternative of one
    seed meets the same draws, so the per-seed differences are paired."""
    import pandas as pd

    frames = [
        _seed_rows(run(trace, params.with_seed(seed)), seed)
        for seed in steps(list(seeds), "seeds", progress, leave=True)
    ]
    return pd.concat(frames, ignore_index=True)


def median_over_seeds(
    run: Callable[..., StudyResult],
    trace,
    params: StudyParams,
    seeds: int,
    *,
    by: tuple[str, ...] | None = None,
    progress: bool = False,
) -> StudyResult:
    """A command's ``--seeds N``: the result at ``params.seed`` with each figure of its summary
    replaced by the median over seeds SEED..SEED+N-1, each column on its own (so a gain is
    the median gain, not the difference of medians); ``params`` records ``seeds`` and
    ``aggregate``.  An alternative is named by the summary's index, or by the columns ``by``
    of a summary without one.  Columns that are not numbers (and the seed) keep the first
    seed's values.  ``seeds == 1`` is the plain run."""
    import pandas as pd

    if seeds < 1:
        raise InputError(f"--seeds must be at least 1, got {seeds}")
    result = run(trace, params, progress=progress and seeds == 1)
    if seeds == 1:
        return result
    first = result.summary
    keyed = any(first.index.names)
    keys = list(first.index.names) if keyed else list(by or ())
    more = run_seeds(run, trace, params, range(params.seed + 1, params.seed + seeds), progress=progress)
    per_seed = pd.concat([_seed_rows(result, params.seed), more], ignore_index=True)
    flat = first.reset_index() if keyed else first
    figures = [
        c
        for c in flat.columns
        if c not in keys
        and c != "seed"
        and pd.api.types.is_numeric_dtype(flat[c])
        and not pd.api.types.is_bool_dtype(flat[c])
    ]
    median = per_seed.groupby(keys, sort=False)[figures].median()
    out = flat.set_index(keys)
    out[figures] = median.reindex(out.index)[figures]
    result.summary = out if keyed else out.reset_index()[list(first.columns)]
    result.params["seeds"] = seeds
    result.params["aggregate"] = "median over seeds"
    return result


# ---------------------------------------------------------------------------------------
# Registration


class _RaisingParser(argtypes.ArgParser):
    """A study's flags parsed from grid values: errors raise ``InputError`` (the flags' own
    checks run, so a grid value is read exactly as the same flag on the command line)."""

    def error(self, message: str):
        raise InputError(message)

    def exit(self, status=0, message=None):  # pragma: no cover - no --help here
        raise InputError(message or "bad grid value")


# Flags that name the input or the seeds, or only shape command-line output: never grid parameters.
NOT_GRID_FLAGS = frozenset({"trace", "seed", "seeds", "json", "help"})


@dataclass(frozen=True)
class Study:
    """One study as the CLI (``workbench <name>``) and the batch runner see it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]  # the study's flags (CLI and grid)
    params_from_args: Callable[[argparse.Namespace], StudyParams]
    run: Callable[..., StudyResult]  # run(trace, params, *, progress=False)
    command: Callable[[argparse.Namespace], int]  # ``workbench <name>``
    input: str = "trace"  # "trace": run(trace, params); "none": it makes its own (trace=None)
    optional_tables: tuple[str, ...] = ()  # stored only when asked for (--tables)
    cli_only: frozenset[str] = field(default_factory=frozenset)  # flags that only shape CLI output
    more_commands: Callable | None = None  # add_commands(sub) of helper commands
    add_inputs: Callable | None = None  # the command's inputs when not flags (paths): never grid parameters

    # -- the CLI --------------------------------------------------------------------------
    def add_commands(self, sub) -> None:
        """``workbench <name>`` (and the study's helper commands) on the CLI's sub-parsers."""
        p = sub.add_parser(self.name, help=self.help)
        if self.add_inputs is not None:
            self.add_inputs(p)
        self.add_arguments(p)
        p.set_defaults(func=self.command)
        if self.more_commands is not None:
            self.more_commands(sub)

    # -- the batch runner -------------------------------------------------------------------
    @property
    def needs_trace(self) -> bool:
        """Whether a batch job gets a trace (False: the study makes its own input)."""
        return self.input != "none"

    @property
    def reserved(self) -> frozenset[str]:
        """Flags a grid may not set."""
        return NOT_GRID_FLAGS | self.cli_only

    def parser(self) -> argparse.ArgumentParser:
        """The study's flags on a parser that raises ``InputError`` (for grid values)."""
        p = _RaisingParser(prog=f"workbench {self.name}", add_help=False)
        self.add_arguments(p)
        return p

    def flags(self) -> dict[str, argparse.Action]:
        """Grid-settable flags by their name without dashes (``rtt``, ``loss``, ...)."""
        out = {}
        for action in self.parser()._actions:
            longs = [o for o in action.option_strings if o.startswith("--")]
            if longs and longs[0][2:] not in self.reserved:
                out[longs[0][2:]] = action
        return out

    def batch_params(self, args: argparse.Namespace) -> StudyParams:
        """A grid point's parameters, as a batch job runs them."""
        return self.params_from_args(args).for_batch()

    @staticmethod
    def with_seed(params: StudyParams, seed: int) -> StudyParams:
        """``params`` with the batch's seed."""
        return params.with_seed(seed)

    @staticmethod
    def params_dict(params: StudyParams) -> dict:
        """What identifies a batch job and goes into its rows (``StudyParams.batch_dict``)."""
        return params.batch_dict()

    @staticmethod
    def tables(result: StudyResult) -> dict[str, pd.DataFrame]:
        """The result's tables, each stored as its own Parquet dataset."""
        return result.tables()
