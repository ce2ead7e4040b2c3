"""The study contract (``simulator.studies.base``): every study registered once, read alike
by the CLI and the batch runner; one network part, one JSON writer; and a new study that
is one module plus one registration line (the worked example below, run through both)."""

from __future__ import annotations

import argparse
import inspect
import json
import math
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulator import argtypes, batch
from simulator.cli import build_parser, main
from simulator.errors import InputError
from simulator.studies import registry
from simulator.studies.base import (
    CC_CHOICES,
    Network,
    Study,
    StudyParams,
    StudyResult,
    add_network_flags,
    median_over_seeds,
    network_from_args,
    records,
    run_seeds,
)

ROOT = Path(__file__).resolve().parents[1]
STUDY_NAMES = sorted(registry.STUDIES)


# ---------------------------------------------------------------------------------------
# Every registered study


def test_every_study_is_a_command_and_a_batch_study():
    commands = build_parser()._subparsers._group_actions[0].choices
    assert set(STUDY_NAMES) <= set(commands)
    assert set(STUDY_NAMES) == set(batch.STUDIES)
    assert {"hol", "push", "trailers", "crossstream", "coalescing", "demux", "replay", "fidelity"} <= set(STUDY_NAMES)


@pytest.mark.parametrize("name", STUDY_NAMES)
def test_registration_names_its_study_and_its_default_flags_give_its_default_parameters(name):
    study = registry.get(name)
    assert isinstance(study, Study) and study.name == name
    parser = study.parser()
    required = {"replay": ["--stack", "h2"]}.get(name, [])
    args = parser.parse_args(required + (["--trace", "-"] if "--trace" in parser._option_string_actions else []))
    params = study.params_from_args(args)
    assert isinstance(params, StudyParams)
    # The flags' defaults are the dataclass's: the CLI, the batch and a notebook's
    # ``Params()`` run the same study.
    default = type(params)(stack="h2") if name == "replay" else type(params)()
    given, expected = params.to_dict(), default.to_dict()
    for k, v in expected.items():  # "5us" is 5 * 1e-6 on the command line: equal to the last bit or so
        assert given[k] == (pytest.approx(v, rel=1e-12) if isinstance(v, float) else v), f"{name}: {k} differs"
    assert "seed" not in study.params_dict(params)
    assert study.with_seed(params, 7).seed == 7


@pytest.mark.parametrize("name", STUDY_NAMES)
def test_every_study_runs_as_run_trace_params_progress(name):
    """One entry point for every study: ``run(trace, params, *, progress=False)`` and nothing
    else (what a run needs besides is a field of its parameters), so the CLI, the batch
    runner and a notebook call every study alike."""
    sig = inspect.signature(registry.get(name).run)
    shape = [(p.name, p.kind, p.default) for p in sig.parameters.values()]
    assert shape[:2] == [
        ("trace", inspect.Parameter.POSITIONAL_OR_KEYWORD, shape[0][2]),
        ("params", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
    ], f"{name}: {shape}"
    assert shape[2:] == [("progress", inspect.Parameter.KEYWORD_ONLY, False)], f"{name}: {shape}"
    assert shape[0][2] in (inspect.Parameter.empty, None)  # None: the study makes its own input


@pytest.mark.parametrize("name", STUDY_NAMES)
def test_network_flags_are_spelled_and_read_alike(name):
    actions = registry.get(name).parser()._option_string_actions
    if "--rtt" in actions and name != "demux":  # demux takes a list of RTTs
        assert actions["--rtt"].type is argtypes.rtt
    if "--bw" in actions:
        assert actions["--bw"].type is argtypes.bottleneck
    if "--loss" in actions:
        assert actions["--loss"].type is argtypes.loss_model
    if "--cc" in actions:
        assert tuple(actions["--cc"].choices) == CC_CHOICES
    assert "--seed" in actions and actions["--seed"].type is argtypes.seed


def test_each_study_keeps_its_own_rtt_default():
    from simulator.studies import coalescing, crossstream, hol, push, replay, trailers

    assert hol.HolParams().rtt_s == push.PushParams().rtt_s == coalescing.CoalescingParams().rtt_s == 0.100
    assert crossstream.CrossstreamParams().rtt_s == 0.100
    assert trailers.TrailersParams().rtt_s == replay.ReplayParams().rtt_s == 0.050


@pytest.mark.parametrize(
    "kw, fragment",
    [
        (dict(rtt_s=0), r"RTT \(--rtt, rtt_s\) must be positive"),
        (dict(bandwidth_bps=0), r"bandwidth \(--bw, bandwidth_bps\) must be positive"),
        (dict(loss="lots"), "loss"),
        (dict(cc="bbr"), "unknown congestion control"),
    ],
)
def test_a_bad_network_value_is_refused_by_every_study(kw, fragment):
    from simulator.studies import coalescing, hol, trailers

    for params in (Network, hol.HolParams, trailers.TrailersParams, coalescing.CoalescingParams):
        with pytest.raises(InputError, match=fragment):
            params(**kw)


@pytest.fixture
def checks(monkeypatch):
    """Every network value ``check_network`` checks, in order (the one check, counted)."""
    from simulator.net import conditions

    seen = []
    check = conditions.check_network

    def counting(net):
        seen.append(net)
        check(net)

    monkeypatch.setattr(conditions, "check_network", counting)
    return seen


# One command per study, its network given by flags (from tests/test_golden.py, small and fast).
CHECKED_ONCE = {
    "hol-quic": [
        "hol",
        "--trace",
        "traces/synthetic-page.har",
        "--transport",
        "quic",
        "--rtt",
        "100ms",
        "--loss",
        "ge:0.01,0.3",
    ],
    "hol-tcp": ["hol", "--trace", "traces/synthetic-session.har", "--transport", "tcp", "--loss", "0.01"],
    "hol-ref2017": ["hol", "--trace", "traces/qif/fb-req-hq.qif", "--transport", "ref2017", "--loss", "0.01"],
    "hol-interop": ["hol", "--trace", "traces/qpack-interop/ls-qpack/fb-req-hq.out.256.100.1", "--loss", "0.01"],
    "push": ["push", "--trace", "traces/synthetic-page.har", "--rtt", "100ms", "--loss", "0.01"],
    "push-h3": ["push", "--trace", "traces/synthetic-page.har", "--protocol", "h3", "--loss", "0.01"],
    "push-seeds": ["push", "--trace", "traces/synthetic-page.har", "--policy", "none,push", "--seeds", "2"],
    "coalescing": ["coalescing", "--trace", "traces/synthetic-many-origins.har", "--mode", "none,ip"],
    "trailers": ["trailers", "--loss", "0.01"],
    "replay-h2": ["replay", "--trace", "traces/synthetic-page.har", "--stack", "h2", "--loss", "0.01"],
    "crossstream": ["crossstream", "--releases", "2", "--loss", "0.01"],
    "priorities": [
        "priorities",
        "--trace",
        "traces/synthetic-page.har",
        "--scheduler",
        "rfc9218,fifo",
        "--loss",
        "0.01",
    ],
    "demux": ["demux", "--streams", "2", "--loss", "0.01"],
}


@pytest.mark.parametrize("name", sorted(CHECKED_ONCE))
def test_the_network_part_is_checked_once_for_every_study(name, checks, capsys, monkeypatch):
    """A network value is built and checked once, where the flags enter; the layers below
    (the page-load model's and the stacks' parameters, a ``replace``, each path and its
    loss model, another seed) take it over and never check or read its spelling again."""
    monkeypatch.chdir(ROOT)
    assert main([*CHECKED_ONCE[name], "--json"]) == 0
    capsys.readouterr()
    assert len(checks) == 1, f"{name}: the network was checked {len(checks)} times: {checks}"


def test_a_grid_point_and_its_seeds_are_checked_once(checks):
    """The batch's edge: a grid point's network is checked when its flags are read; the
    batch's fixed fields and its seeds reuse it."""
    from simulator.batch.registry import expand_grid

    for name in ("hol", "push", "trailers"):
        checks.clear()
        (point,) = expand_grid({"loss": ["ge:0.01,0.3"]}, registry.get(name))
        for seed in (1, 2, 3):
            assert str(registry.get(name).with_seed(point.params, seed).network.loss) == "ge:0.01,0.3"
        assert len(checks) == 1, (name, checks)


def test_a_loss_spelling_is_read_once_into_a_model(monkeypatch):
    """``--loss`` is read when the flag is parsed; the parameters, their network and each
    path's loss models are built from that ``LossSpec``, never from the text again."""
    from simulator.net.link import LossSpec

    p = argtypes.ArgParser()
    add_network_flags(p, rtt="100ms", loss="0", seed=1)
    args = p.parse_args(["--loss", "ge:0.01,0.3"])
    spec = args.loss
    assert isinstance(spec, LossSpec) and spec.gilbert_elliott and (spec.p, spec.r) == (0.01, 0.3)
    reads = []
    parse = LossSpec.parse.__func__
    monkeypatch.setattr(LossSpec, "parse", classmethod(lambda cls, s: reads.append(s) or parse(cls, s)))
    from simulator.studies import hol

    params = hol.HolParams(**network_from_args(args))
    assert params.loss == "ge:0.01,0.3"  # results carry the spelling as given
    assert params.network.loss is spec
    assert all(r is spec for r in reads), reads  # handed on as the value, never as text


def test_network_flags_parse_their_units():
    p = argtypes.ArgParser()
    add_network_flags(p, rtt="100ms", bw="10mbit", loss="0", cc="reno", tls=True, seed=1)
    args = p.parse_args(
        ["--rtt", "250ms", "--bw", "none", "--loss", "ge:0.01,0.3", "--cc", "cubic", "--no-tls", "--seed", "3"]
    )
    read = network_from_args(args)
    assert str(read.pop("loss")) == "ge:0.01,0.3"
    assert read == {"rtt_s": 0.25, "bandwidth_bps": None, "cc": "cubic", "tls": False, "seed": 3}
    q = argtypes.ArgParser()
    add_network_flags(q, bw="1gbit", seed=1)  # only what a study uses
    assert network_from_args(q.parse_args([])) == {"bandwidth_bps": 1e9, "seed": 1}


def test_one_json_writer_makes_numpy_plain_and_nan_null():
    @dataclass
    class R(StudyResult):
        summary: pd.DataFrame

        def to_dict(self):
            return {"rows": records(self.summary), "n": np.int64(3), "ok": np.bool_(True)}

    r = R(pd.DataFrame({"a": [1, 2], "b": [0.5, math.nan]}))
    assert json.loads(r.to_json()) == {"rows": [{"a": 1, "b": 0.5}, {"a": 2, "b": None}], "n": 3, "ok": True}
    assert r.to_json() == R(pd.DataFrame({"a": [1, 2], "b": [0.5, math.nan]})).to_json()


# ---------------------------------------------------------------------------------------
# A study in one module plus one registration line (the worked example)


@dataclass(frozen=True)
class TransferParams(StudyParams):
    """One response of ``body_bytes`` on a fresh path: it takes one RTT plus its serialisation."""

    body_bytes: int = 100_000
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    seed: int = 1


@dataclass
class TransferResult(StudyResult):
    summary: pd.DataFrame
    params: dict

    def tables(self):
        return {"summary": self.summary}

    def to_dict(self):
        return {"summary": records(self.summary), "params": self.params}


def run_transfer(trace=None, params: TransferParams | None = None, *, progress: bool = False) -> TransferResult:
    """The study makes its own input (``trace`` is None)."""
    params = params or TransferParams()
    serialisation = params.body_bytes * 8 / params.bandwidth_bps if params.bandwidth_bps else 0.0
    row = {"body_bytes": params.body_bytes, "time_s": params.rtt_s + serialisation}
    return TransferResult(summary=pd.DataFrame([row]), params=params.to_dict())


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--body", default="100000", type=argtypes.size)
    add_network_flags(p, rtt="100ms", bw="10mbit", seed=1)
    p.add_argument("--json", action="store_true")


def _params_from_args(args: argparse.Namespace) -> TransferParams:
    from simulator.units import parse_size

    return TransferParams(body_bytes=parse_size(args.body), **network_from_args(args))


def _command(args: argparse.Namespace) -> int:
    print(run_transfer(None, _params_from_args(args)).to_json())
    return 0


STUDY = Study(
    name="transfer",
    help="one response's transfer time",
    add_arguments=_add_arguments,
    params_from_args=_params_from_args,
    run=run_transfer,
    command=_command,
    input="none",
)


@dataclass(frozen=True)
class DrawParams(StudyParams):
    seed: int = 1


def run_draw(trace=None, params: DrawParams | None = None, *, progress: bool = False) -> TransferResult:
    """Two alternatives, each one seeded draw: the smallest study whose result moves with its seed."""
    params = params or DrawParams()
    rng = random.Random(params.seed)
    summary = pd.DataFrame({"x": [rng.random(), rng.random()]}, index=pd.Index(["a", "b"], name="variant"))
    return TransferResult(summary=summary, params=params.to_dict())


def test_seeds_are_run_once_by_the_contract_for_any_study():
    """``run_seeds``: one row per (seed, alternative), each the run at that seed;
    ``median_over_seeds`` (``--seeds N``): each figure the median over SEED..SEED+N-1."""
    per_seed = run_seeds(run_draw, None, DrawParams(), [3, 4, 5])
    assert list(per_seed.columns) == ["variant", "seed", "x"] and len(per_seed) == 6
    for seed in (3, 4, 5):
        alone = run_draw(None, DrawParams(seed=seed)).summary["x"].tolist()
        assert per_seed[per_seed["seed"] == seed]["x"].tolist() == alone
    result = median_over_seeds(run_draw, None, DrawParams(seed=3), 3)
    for variant in ("a", "b"):
        assert result.summary.loc[variant, "x"] == statistics.median(per_seed[per_seed["variant"] == variant]["x"])
    assert result.params == {"seed": 3, "seeds": 3, "aggregate": "median over seeds"}
    once = median_over_seeds(run_draw, None, DrawParams(seed=3), 1)
    assert once.summary.equals(run_draw(None, DrawParams(seed=3)).summary) and "seeds" not in once.params
    with pytest.raises(InputError, match="--seeds"):
        median_over_seeds(run_draw, None, DrawParams(), 0)


def test_median_over_seeds_of_a_summary_without_an_index_keeps_its_columns():
    """A summary whose alternatives are named by columns (``by``): the figures are medians,
    the other columns (a label, the seed) the first seed's, in the summary's own order."""

    def run_flat(trace=None, params=None, *, progress=False):
        drawn = run_draw(trace, params).summary.reset_index()
        drawn.insert(1, "label", "fixed")
        drawn["seed"] = params.seed
        return TransferResult(summary=drawn, params=params.to_dict())

    per_seed = run_seeds(run_flat, None, DrawParams(), [3, 4, 5])
    result = median_over_seeds(run_flat, None, DrawParams(seed=3), 3, by=("variant",))
    assert list(result.summary.columns) == ["variant", "label", "x", "seed"]
    assert result.summary["label"].tolist() == ["fixed", "fixed"] and result.summary["seed"].tolist() == [3, 3]
    for row in result.summary.itertuples():
        assert row.x == statistics.median(per_seed[per_seed["variant"] == row.variant]["x"])


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(registry.STUDIES, "transfer", __name__)  # the one registration line


def test_a_new_study_is_a_command(registered, capsys):
    """RFC-free physics: a 100 kB response over 10 Mbit/s with 100 ms RTT takes 0.1 + 0.08 s."""
    assert main(["transfer", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"][0]["time_s"] == pytest.approx(0.18)
    assert main(["transfer", "--rtt", "fast"]) == 2


def test_a_new_study_is_a_batch_study(registered, tmp_path):
    report = batch.run_batch(
        "transfer",
        None,
        {"rtt": ["10ms", "200ms"], "bw": ["1mbit", "none"]},
        seeds=2,
        out=tmp_path / "res",
        workers=0,
        progress=False,
    )
    assert (report.jobs, report.ok) == (8, 8)
    df = batch.load(tmp_path / "res")
    bandwidth = pd.to_numeric(df["bandwidth_bps"]).fillna(math.inf)
    expected = df["rtt_s"] + df["body_bytes"] * 8 / bandwidth
    assert np.allclose(df["time_s"], expected) and set(df["seed"]) == {1, 2}


# ---------------------------------------------------------------------------------------
# The CLI's boundaries


def test_a_missing_command_module_stops_the_cli(monkeypatch):
    from simulator import cli

    monkeypatch.setattr(cli, "COMMAND_MODULES", [*cli.COMMAND_MODULES, "simulator.no_such_commands"])
    with pytest.raises(ModuleNotFoundError, match="simulator.no_such_commands"):
        cli.build_parser()


def test_bench_without_a_checkout_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    """An installed package has no benchmarks beside it: one line, exit 2; run from a
    checkout (its benchmarks/ in the current folder) it finds them."""
    from simulator import bench

    monkeypatch.setattr(bench, "BENCH_DIR", tmp_path / "site-packages" / "benchmarks")  # nothing beside it
    monkeypatch.chdir(tmp_path)
    assert bench.available() == []
    assert main(["bench", "engine"]) == 2 and main(["bench", "all"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("checkout" in line for line in err)
    monkeypatch.chdir(ROOT)
    assert "engine" in bench.available()
